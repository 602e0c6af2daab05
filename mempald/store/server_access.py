"""Reaching a Qdrant server: the modes of ``store.url``, the API key, and what a failed call means.

The API key is read from the environment variable named by ``store.api_key_env`` or from
``store.api_key_file``; errors name the variable or the file, never the key. ``is_transient`` says which
failures ``ServerStore`` retries (unreachable, slow, overloaded or restarting servers) and ``describe`` gives
the short cause its messages quote.
"""

from __future__ import annotations

import os
import stat
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import httpx
from qdrant_client import QdrantClient
from qdrant_client.common.client_exceptions import ResourceExhaustedResponse
from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse

from mempald import logs
from mempald.sources.reader import read_head
from mempald.store.base import StoreError

if TYPE_CHECKING:
    from mempald.config import StoreSettings

log = logs.get("store.server")

# qdrant-client warns when an API key goes over plain http; we log our own line instead (see open_client).
KEY_FILE_MAX = 64 * 1024  # store.api_key_file: a key, not a file to read whole
_INSECURE_KEY_WARNING = "Api key is used with an insecure connection"


# url parsing -----------------------------------------------------------------------------------------------
def parse_url(url: str) -> tuple[str, str]:
    """Split ``store.url`` into a mode and its argument: ``("remote", url)``, ``("memory", "")`` or
    ``("path", "/dir")``. Credentials inside the URL are refused (they would end up in logs)."""
    url = url.strip()
    if url == ":memory:":
        return "memory", ""
    if url.startswith("path:"):
        path = url[len("path:"):]
        if not path:
            raise StoreError("store.url: `path:` needs a folder, for example path:/var/lib/mempal/qdrant")
        return "path", str(Path(path).expanduser())
    if url.startswith(("http://", "https://")):
        parts = urlsplit(url)
        if not parts.hostname:
            raise StoreError("store.url: no host in the server URL (expected http(s)://host:6333)")
        if parts.username or parts.password:
            raise StoreError(
                "store.url: credentials in the URL are not accepted; put the API key in the environment variable "
                "named by store.api_key_env or in store.api_key_file"
            )
        if parts.query or parts.fragment:
            raise StoreError("store.url: a server URL takes no query string or fragment")
        return "remote", url.rstrip("/")
    raise StoreError("store.url: expected http(s)://host:port, path:/dir or :memory:")


def read_api_key(settings: StoreSettings, env: Mapping[str, str] | None = None) -> str | None:
    """The API key from the environment variable named by ``api_key_env`` (first) or ``api_key_file``.

    Errors name the variable or the file, never the key.
    """
    env = os.environ if env is None else env
    if settings.api_key_env:
        value = env.get(settings.api_key_env, "").strip()
        if value:
            return value
    if not settings.api_key_file:
        return None
    path = Path(settings.api_key_file).expanduser()
    try:
        value = read_head(path, KEY_FILE_MAX).decode("utf-8").strip()  # a FIFO there is refused, not waited on
        mode = path.stat().st_mode
    except OSError as exc:
        raise StoreError(f"store.api_key_file: cannot read {path}: {exc.strerror or type(exc).__name__}") from None
    except UnicodeDecodeError:
        raise StoreError(f"store.api_key_file: {path} is not a UTF-8 text file") from None
    if not value:
        raise StoreError(f"store.api_key_file: {path} is empty")
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        log.warning("store.api_key_file_open", path=str(path), hint=f"chmod 600 {path}")
    return value



# the client -------------------------------------------------------------------------------------------------
def open_client(mode: str, arg: str, *, location: str, api_key: str | None, timeout: int) -> QdrantClient:
    """A qdrant-client for a ``parse_url`` result; failures are a ``StoreError`` naming ``location``."""
    try:
        if mode == "memory":
            return QdrantClient(location=":memory:")
        if mode == "path":
            Path(arg).mkdir(parents=True, exist_ok=True)
            _check_folder_free(Path(arg), location)
            return QdrantClient(path=arg)
        host = urlsplit(arg).hostname or ""
        if api_key and arg.startswith("http://") and host not in ("localhost", "127.0.0.1", "::1"):
            log.warning("store.insecure_api_key", location=location,
                        hint="the API key is sent over plain http: use an https:// store.url")
        with warnings.catch_warnings():
            # Replaced by the log line above (which also spares loopback hosts).
            warnings.filterwarnings("ignore", message=_INSECURE_KEY_WARNING, category=UserWarning)
            # check_compatibility=False: the version probe runs in a thread and reports by warning, which
            # we could neither catch nor log; the first real call reports an unreachable server instead.
            return QdrantClient(url=arg, api_key=api_key, timeout=timeout, check_compatibility=False)
    except StoreError:
        raise
    except Exception as exc:
        raise StoreError(scrub(f"cannot open {location}: {describe(exc)}", api_key)) from None


def _check_folder_free(folder: Path, location: str) -> None:
    """Refuse a ``path:`` folder another client holds, before qdrant-client tries: on that failure it
    leaks the lock file handle (and the collections it already loaded)."""
    import portalocker  # a qdrant-client dependency; it probes writable dirs on import, so import it late

    lock = folder / ".lock"
    if not lock.exists():
        return
    with lock.open("r+") as fh:
        try:
            portalocker.lock(fh, portalocker.LockFlags.EXCLUSIVE | portalocker.LockFlags.NON_BLOCKING)
        except portalocker.exceptions.LockException:
            raise StoreError(
                f"cannot open {location}: the folder is in use by another process or store (a running "
                "daemon?). A path: store has one user at a time; use a Qdrant server to share a collection"
            ) from None
        portalocker.unlock(fh)


def scrub(text: str, secret: str | None) -> str:
    """``text`` with the API key replaced by ``***`` (for messages and log lines)."""
    return text.replace(secret, "***") if secret else text


# errors ------------------------------------------------------------------------------------------------------
def is_transient(exc: BaseException) -> bool:
    """Worth retrying: the server was unreachable, slow, overloaded or restarting."""
    if isinstance(exc, ResourceExhaustedResponse):
        return True
    if isinstance(exc, UnexpectedResponse):
        code = exc.status_code or 0
        return code == 429 or code >= 500
    if isinstance(exc, ResponseHandlingException):
        return isinstance(exc.source, (httpx.TransportError, OSError))
    return isinstance(exc, (httpx.TransportError, ConnectionError, TimeoutError))


def describe(exc: BaseException) -> str:
    """A short, readable cause: 'connection refused', 'timed out', 'HTTP 503 (Service Unavailable)'..."""
    if isinstance(exc, ResponseHandlingException):
        exc = exc.source
    if isinstance(exc, UnexpectedResponse):
        detail = ""
        try:
            body = exc.structured()
            detail = str(body.get("status", {}).get("error", "")) if isinstance(body, dict) else ""
        except Exception:
            detail = ""
        head = f"HTTP {exc.status_code} ({exc.reason_phrase})"
        return f"{head}: {detail}" if detail else head
    if isinstance(exc, httpx.TimeoutException):
        return "timed out"
    if isinstance(exc, KeyError):  # local mode's answer to an unknown point id
        return f"no point with id {exc.args[0] if exc.args else '?'}"
    if isinstance(exc, httpx.ConnectError):
        text = str(exc)
        return "connection refused" if "refused" in text.lower() else f"cannot connect ({text})"
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__

