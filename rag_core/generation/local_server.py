"""The built-in local LLM: a GGUF file served by llama.cpp's OpenAI-compatible HTTP server
(from the `xllamacpp` wheel, no compiler needed) in a managed child process.

`RAG_LLM_GGUF=/path/model.gguf` (+ `RAG_LLM_THREADS`, `RAG_LLM_CTX`) makes the chat-model
factory call `ensure_server()`: one server per process, on a free port on 127.0.0.1, started
on first use, health-checked, and stopped when the process exits. The same `ChatOpenAI`
path as for OpenAI, Ollama or vLLM then talks to it, so streaming, timeouts and failure
handling are one code path.

A child process rather than in-process native threads: a crash in native code cannot take
the app down with it, and the server is stopped cleanly on exit.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import importlib.util
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from ..errors import GroundworkError, MissingDependency

MODEL_ALIAS = "local-gguf"


class LocalServerError(GroundworkError):
    """The local model could not be started; the message says why (with the server's log)."""


def free_port() -> int:
    """A port that was free a moment ago. Nothing holds it afterwards, so another process may
    take it before whoever it is handed to binds it: use it only where that does not matter
    (a port for nothing to listen on). The local server binds port 0 itself instead."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# The child writes its address, once bound, to a file of its own (see _serve), which the parent
# reads: it used to read it from the shared log, where llama.cpp's native threads may write on
# the same line ("…:361790.01.030.191 I srv …" was read once).
_ADDRESS = re.compile(r"^http://[\d.]+:\d+$")


def _get_json(url: str, timeout: float = 2.0):
    with urllib.request.urlopen(url, timeout=timeout) as resp:  # noqa: S310 - loopback only
        return json.loads(resp.read().decode("utf-8"))


@dataclass
class LocalServer:
    base_url: str  # "http://127.0.0.1:PORT" (OpenAI clients want base_url + "/v1")
    model: str  # the id the server reports
    gguf: Path
    proc: subprocess.Popen
    startup_s: float
    log_path: Path

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        with contextlib.suppress(OSError):
            self.log_path.unlink()

    def __iter__(self):  # base_url, model, stop = start_server(...)
        return iter((self.base_url, self.model, self.stop))


def start_server(gguf: str | Path, *, threads: int = 2, ctx: int = 4096, n_predict: int = -1,
                 ready_timeout: float = 120.0) -> LocalServer:
    """Start a server for `gguf` and wait until /health says ok. `n_predict` caps every
    answer server-side (-1: the client's max_tokens decides)."""
    gguf = Path(gguf).expanduser()
    if importlib.util.find_spec("xllamacpp") is None:
        raise MissingDependency("RAG_LLM_GGUF needs llama.cpp's server: pip install xllamacpp")
    if not gguf.is_file():
        raise LocalServerError(f"RAG_LLM_GGUF: no model file at {gguf}")
    log = Path(tempfile.mkstemp(prefix="gw-llm-server-", suffix=".log")[1])
    ready = log.with_suffix(".address")
    # port 0: llama.cpp's server binds a free port itself and the child prints which, so no
    # port is chosen here and released for someone else to take before the server binds it
    cmd = [sys.executable, "-m", "rag_core.generation.local_server", "--model", str(gguf), "--port", "0",
           "--threads", str(threads), "--ctx", str(ctx), "--n-predict", str(n_predict), "--address-file", str(ready)]
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    t0 = time.perf_counter()
    with open(log, "wb") as fh:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=fh, stderr=subprocess.STDOUT, env=env)
    srv = LocalServer("", MODEL_ALIAS, gguf, proc, 0.0, log)  # base_url: once the child says where it listens

    def fail(why: str):
        tail = ""
        with contextlib.suppress(OSError):
            tail = "\n".join(log.read_text(errors="replace").splitlines()[-15:])
        srv.stop()
        raise LocalServerError(f"the local model {gguf.name} {why}:\n{tail}")

    deadline = time.monotonic() + ready_timeout
    while True:
        if proc.poll() is not None:
            fail(f"exited with code {proc.returncode} while starting")
        if not srv.base_url:
            with contextlib.suppress(OSError):
                addr = ready.read_text().strip()
                if _ADDRESS.match(addr):
                    srv.base_url = addr
                    ready.unlink()
        try:
            if srv.base_url and _get_json(srv.base_url + "/health").get("status") == "ok":
                break
        except (urllib.error.URLError, OSError, ValueError):
            pass
        if time.monotonic() > deadline:
            fail(f"did not answer /health within {ready_timeout:.0f} s")
        time.sleep(0.1)
    srv.startup_s = time.perf_counter() - t0
    with contextlib.suppress(Exception):
        srv.model = _get_json(srv.base_url + "/v1/models")["data"][0]["id"]
    return srv


_lock = threading.Lock()
# One server per model file: the answer model (RAG_LLM_GGUF) and, when set, the fast model for
# the small steps (RAG_LLM_FAST_GGUF) run side by side.
_servers: dict[Path, LocalServer] = {}


def ensure_server(gguf: str | Path, threads: int = 2, ctx: int = 4096) -> LocalServer:
    """The process's one server for this model, started (or restarted, if it died) on demand."""
    key = Path(gguf).expanduser()
    with _lock:
        srv = _servers.get(key)
        if srv is not None and not srv.alive:
            srv.stop()
            srv = None
        if srv is None:
            srv = _servers[key] = start_server(key, threads=threads, ctx=ctx)
        return srv


def running(gguf: str | Path) -> LocalServer | None:
    """The server this process runs for `gguf`, if any (not started here)."""
    with _lock:
        return _servers.get(Path(gguf).expanduser())


def stop_server(gguf: str | Path | None = None) -> None:
    """Stop the server for `gguf`, or every server."""
    with _lock:
        keys = [Path(gguf).expanduser()] if gguf is not None else list(_servers)
        for k in keys:
            srv = _servers.pop(k, None)
            if srv is not None:
                srv.stop()


atexit.register(stop_server)


# ---- the child process --------------------------------------------------------------------
def _serve(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description="Serve a GGUF model over llama.cpp's OpenAI-compatible HTTP API.")
    ap.add_argument("--model", required=True)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0, help="0: a free port, printed once bound")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--ctx", type=int, default=4096)
    ap.add_argument("--n-predict", type=int, default=-1)
    ap.add_argument("--alias", default=MODEL_ALIAS)
    ap.add_argument("--address-file", default=None, help="also write the address here (atomically) once bound")
    args = ap.parse_args(argv)

    import xllamacpp as xlc

    p = xlc.CommonParams()
    p.model.path = args.model
    p.model_alias = {args.alias}  # a set: a plain str would become one alias per character
    p.hostnames = [args.host]
    p.port = args.port
    p.n_ctx = args.ctx
    p.n_parallel = 1
    p.n_predict = args.n_predict
    p.cpuparams.n_threads = args.threads
    p.cpuparams_batch.n_threads = args.threads
    p.n_threads_http = 4  # health checks still answer while the one slot generates
    server = xlc.Server(p)  # loads the model and starts the HTTP server in native threads
    print(f"listening on {server.listening_address}", flush=True)
    if args.address_file:
        tmp = f"{args.address_file}.tmp"
        with open(tmp, "w") as fh:
            fh.write(str(server.listening_address))
        os.replace(tmp, args.address_file)

    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(1))
    signal.signal(signal.SIGINT, lambda *_: stopping.append(1))
    parent = os.getppid()
    while not stopping and os.getppid() == parent:  # the app died without stopping us: leave too
        time.sleep(0.2)
    sys.stdout.flush()
    os._exit(0)  # skip native destructors: the process is going away anyway


if __name__ == "__main__":
    _serve()
