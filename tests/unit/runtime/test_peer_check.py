"""Only the owner gets in: the daemon checks the connecting process's uid (SO_PEERCRED) on a real socket.

Two ways: an injected credential check (``Server(uid_of=...)``), which runs everywhere; and, where the test
runs as root and ``useradd`` works, a real second user connecting from its own process. That user is first
stopped by the socket's permissions (0600 in a 0700 folder); with the permissions deliberately opened, the
daemon's own uid check still refuses it.
"""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import secrets
import shutil
import socket
import subprocess
import tempfile
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest

from mempal.methods import METHODS
from mempal.protocol import FORBIDDEN
from mempald.rpc.dispatch import Args, Dispatcher
from mempald.runtime.server import Server, ServerConfig

PING = b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{}}\n'


def _talk(path: Path) -> dict[str, Any]:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(20)
        s.connect(str(path))
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            s.sendall(PING)  # refused at once: the error line is already waiting to be read
        buf = b""
        while not buf.endswith(b"\n"):
            chunk = s.recv(4096)
            if not chunk:
                break
            buf += chunk
        # After a refusal the daemon closes the connection.
        reply: dict[str, Any] = json.loads(buf)
        return reply


@pytest.fixture
def runtime() -> Iterator[Path]:
    d = Path(tempfile.mkdtemp(prefix="mp-peer-"))  # short: Unix socket paths are limited to ~107 bytes
    yield d / "run" / "mempald.sock"
    shutil.rmtree(d, ignore_errors=True)


async def _ping(_args: Args) -> Any:
    return {"pong": True}


async def _unreachable(_args: Args) -> Any:
    raise AssertionError("not called in these tests")


async def _serving(path: Path, uid_of: Callable[[socket.socket], int | None] | None = None) -> AsyncIterator[Server]:
    kwargs: dict[str, Any] = {} if uid_of is None else {"uid_of": uid_of}
    # The real dispatcher over a handler table that answers ping (nothing else is reached here).
    handlers = {name: _unreachable for name in METHODS} | {"ping": _ping}
    config = ServerConfig(path, max_line=4096, idle_timeout=5, max_clients=8)
    server = Server(config, Dispatcher(handlers, request_timeout=5), **kwargs)
    async with anyio.create_task_group() as tg:
        await tg.start(server.serve)
        yield server
        tg.cancel_scope.cancel()


@pytest.mark.anyio
async def test_owner_is_served_on_a_real_socket(runtime: Path) -> None:
    async for _server in _serving(runtime):
        reply = await anyio.to_thread.run_sync(_talk, runtime)
        assert reply["result"] == {"pong": True}
        assert (await anyio.Path(runtime).stat()).st_mode & 0o777 == 0o600
        assert (await anyio.Path(runtime.parent).stat()).st_mode & 0o777 == 0o700


@pytest.mark.anyio
@pytest.mark.parametrize("uid_of", [
    lambda _s: os.getuid() + 1,  # another user
    lambda _s: None,  # a platform that cannot tell
    lambda _s: (_ for _ in ()).throw(OSError("getsockopt failed")),  # the check itself fails
], ids=["other-uid", "unknown", "check-fails"])
async def test_injected_credential_check_refuses_others(
    runtime: Path, uid_of: Callable[[socket.socket], int | None]
) -> None:
    async for server in _serving(runtime, uid_of):
        reply = await anyio.to_thread.run_sync(_talk, runtime)
        assert reply["error"]["code"] == FORBIDDEN
        assert "another user" in reply["error"]["message"]
        assert server.requests == 0  # refused before any request was read


_CLIENT = r"""
import json, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(20)
try:
    s.connect(sys.argv[1])
except PermissionError:
    print("EACCES"); sys.exit(0)
try:
    s.sendall(b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{}}\n')
except (BrokenPipeError, ConnectionResetError):
    pass
buf = b""
while not buf.endswith(b"\n"):
    c = s.recv(4096)
    if not c:
        break
    buf += c
print(buf.decode().strip())
"""


@pytest.fixture
def second_user() -> Iterator[pwd.struct_passwd]:
    python = shutil.which("python3", path="/usr/bin:/bin:/usr/local/bin")
    if os.geteuid() != 0 or not shutil.which("useradd") or python is None:
        pytest.skip("a real second user needs root, useradd and a system python3")
    name = f"mp{secrets.token_hex(4)}"
    made = subprocess.run(["useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", name],
                          capture_output=True, text=True, timeout=60)
    if made.returncode != 0:
        pytest.skip(f"useradd failed: {made.stderr.strip()}")
    try:
        yield pwd.getpwnam(name)
    finally:
        subprocess.run(["userdel", name], capture_output=True, timeout=60)


def _as_user(user: pwd.struct_passwd, path: Path) -> str:
    out = subprocess.run(["/usr/bin/python3", "-I", "-S", "-c", _CLIENT, str(path)], user=user.pw_uid,
                         group=user.pw_gid, extra_groups=[], capture_output=True, text=True, timeout=60, cwd="/")
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


@pytest.mark.anyio
@pytest.mark.timeout(120)
async def test_a_real_second_user_is_refused(runtime: Path, second_user: pwd.struct_passwd) -> None:
    async for server in _serving(runtime):
        # As installed: the folder is 0700, so the other user cannot even reach the socket.
        await anyio.Path(runtime.parent.parent).chmod(0o755)
        assert await anyio.to_thread.run_sync(_as_user, second_user, runtime) == "EACCES"
        # Permissions opened by mistake: the kernel lets the connection through, the uid check does not.
        await anyio.Path(runtime.parent).chmod(0o755)
        await anyio.Path(runtime).chmod(0o777)
        line = await anyio.to_thread.run_sync(_as_user, second_user, runtime)
        reply = json.loads(line)
        assert reply["error"]["code"] == FORBIDDEN
        assert server.requests == 0
        # The owner is still served.
        assert (await anyio.to_thread.run_sync(_talk, runtime))["result"] == {"pong": True}
