"""Running the API on uvicorn: `python -m rag_core serve [--host] [--port] [--workers] [--no-auth]`.

Workers are separate processes, each building its app from the environment (`app_factory`), so
the CLI passes the data folder and the no-auth switch through environment variables."""

from __future__ import annotations

import ipaddress
import os

NO_AUTH_ENV = "GROUNDWORK_API_NO_AUTH"


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def app_factory():
    from .app import create_app

    return create_app(no_auth=os.environ.get(NO_AUTH_ENV) == "1")


def serve(host: str = "127.0.0.1", port: int = 8000, workers: int = 1, no_auth: bool = False,
          data_dir: str | None = None, log_level: str = "info", forwarded_allow_ips: str | None = None) -> None:
    try:
        import uvicorn
    except ImportError as exc:  # pragma: no cover - depends on the install
        from ..errors import MissingDependency

        raise MissingDependency("the API needs uvicorn and fastapi: pip install -r requirements.txt") from exc
    from ..errors import InputError

    if no_auth and not is_loopback(host):
        raise InputError(f"--no-auth serves everything as the operator: only on a loopback address, not {host}")
    if data_dir:
        os.environ["RAG_DATA_DIR"] = str(data_dir)
    os.environ[NO_AUTH_ENV] = "1" if no_auth else "0"
    # Behind a reverse proxy, uvicorn trusts X-Forwarded-* from these addresses only (default
    # 127.0.0.1): client addresses in logs are then the real ones.
    uvicorn.run("rag_core.api.server:app_factory", factory=True, host=host, port=port, workers=workers,
                log_level=log_level, proxy_headers=True,
                forwarded_allow_ips=forwarded_allow_ips or os.environ.get("FORWARDED_ALLOW_IPS", "127.0.0.1"),
                timeout_graceful_shutdown=10)
