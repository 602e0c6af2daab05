"""The socket server's limits on a real Unix socket (``Server`` with the real dispatcher; handlers stand in for
the daemon's): the line cap is exact, a client still sending an over-long line reads its error, idle clients
make room for new ones, a newcomer is refused only when every client is mid-request, and running out of file
descriptors pauses the listener instead of ending it."""

from __future__ import annotations

import contextlib
import json
import os
import resource
import shutil
import socket
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest

from mempal.methods import METHODS
from mempal.protocol import INVALID_REQUEST, LIMIT_EXCEEDED
from mempald.rpc.dispatch import Args, Dispatcher
from mempald.runtime.server import Server, ServerConfig

MAX_LINE = 4096


def request(method: str, rid: int = 1, pad: int = 0) -> bytes:
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method, "params": {}}
    line = json.dumps(body).encode()
    if pad:  # make the line exactly ``pad`` bytes long (without its newline)
        head = line[:-1] + b',"pad":"'
        line = head + b"x" * (pad - len(head) - 2) + b'"}'
        assert len(line) == pad
    return line + b"\n"


class Client:
    def __init__(self, path: Path, timeout: float = 10) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        self.sock.connect(str(path))
        self.buf = b""

    def line(self) -> dict[str, Any]:
        while b"\n" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise EOFError("closed")
            self.buf += chunk
        line, _, self.buf = self.buf.partition(b"\n")
        reply: dict[str, Any] = json.loads(line)
        return reply

    def ask(self, data: bytes) -> dict[str, Any]:
        self.sock.sendall(data)
        return self.line()

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def sock_path() -> Iterator[Path]:
    d = Path(tempfile.mkdtemp(prefix="mp-lim-"))
    yield d / "run" / "mempald.sock"
    shutil.rmtree(d, ignore_errors=True)


class Slow:
    """A ``status`` that waits until released (a client mid-request)."""

    def __init__(self) -> None:
        self.release = anyio.Event()
        self.waiting = 0

    async def status(self, _args: Args) -> Any:
        self.waiting += 1
        await self.release.wait()
        return {"ok": True}


async def _ping(_args: Args) -> Any:
    return {"pong": True}


async def _unreachable(_args: Args) -> Any:
    raise AssertionError("not called in these tests")


async def serving(path: Path, max_clients: int = 8, slow: Slow | None = None) -> AsyncIterator[Server]:
    handlers = {name: _unreachable for name in METHODS} | {"ping": _ping}
    if slow is not None:
        handlers["status"] = slow.status
    server = Server(ServerConfig(path, max_line=MAX_LINE, idle_timeout=5, max_clients=max_clients),
                    Dispatcher(handlers, request_timeout=30))
    async with anyio.create_task_group() as tg:
        await tg.start(server.serve)
        yield server
        tg.cancel_scope.cancel()


def run(fn: Any, *args: Any) -> Any:
    return anyio.to_thread.run_sync(fn, *args)


async def until(condition: Any, limit_s: float) -> None:
    """Wait (polling the server's own counters) for ``condition()``, failing after ``limit_s``."""
    for _ in range(int(limit_s / 0.02)):
        if condition():
            return
        await anyio.sleep(0.02)
    raise AssertionError(f"not within {limit_s}s")


@pytest.mark.anyio
async def test_the_line_cap_is_exact_and_the_conversation_goes_on(sock_path: Path) -> None:
    async for _server in serving(sock_path):
        def talk() -> list[dict[str, Any]]:
            c = Client(sock_path)
            try:
                return [c.ask(request("ping", 1, pad=MAX_LINE)), c.ask(request("ping", 2, pad=MAX_LINE + 1)),
                        c.ask(request("ping", 3))]
            finally:
                c.close()

        at_cap, over, after = await run(talk)
        assert at_cap["result"] == {"pong": True}
        assert over["error"]["code"] == INVALID_REQUEST and "longer than 4096" in over["error"]["message"]
        assert after["result"] == {"pong": True} and after["id"] == 3


@pytest.mark.anyio
async def test_a_client_still_sending_an_over_long_line_reads_the_error(sock_path: Path) -> None:
    async for _server in serving(sock_path):
        def talk() -> tuple[dict[str, Any], dict[str, Any]]:
            c = Client(sock_path)
            try:
                # 4 MB in one sendall: far more than the socket buffers hold, so the daemon answers while this
                # client is still sending. A daemon that closed at once would reset it (BrokenPipe) here.
                c.sock.sendall(b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"q":"' + b"y" * 4_000_000
                               + b'"}}\n')
                return c.line(), c.ask(request("ping", 2))
            finally:
                c.close()

        refused, after = await run(talk)
        assert refused["error"]["code"] == INVALID_REQUEST
        assert after["result"] == {"pong": True}


@pytest.mark.anyio
async def test_idle_clients_make_room_and_busy_ones_do_not(sock_path: Path) -> None:
    slow = Slow()
    async for server in serving(sock_path, max_clients=3, slow=slow):
        idle = [await run(Client, sock_path) for _ in range(3)]
        for i, c in enumerate(idle):
            assert (await run(c.ask, request("ping", i)))["result"] == {"pong": True}
        # Full of idle clients: a newcomer is served, and the longest idle is told why it is dropped.
        newcomer = await run(Client, sock_path)
        assert (await run(newcomer.ask, request("ping", 9)))["result"] == {"pong": True}
        dropped = await run(idle[0].line)
        assert dropped["error"]["code"] == LIMIT_EXCEEDED and "longest idle" in dropped["error"]["message"]
        assert server.evicted == 1
        for c in (*idle, newcomer):
            c.close()

        # Every slot mid-request: nobody can be dropped, so the newcomer is refused.
        busy = [await run(Client, sock_path) for _ in range(3)]
        for c in busy:
            await run(c.sock.sendall, request("status"))
        await until(lambda: slow.waiting == 3, 10)
        late = await run(Client, sock_path)
        assert (await run(late.line))["error"]["code"] == LIMIT_EXCEEDED
        assert server.refused == 1
        slow.release.set()
        for c in busy:
            assert (await run(c.line))["result"] == {"ok": True}
            c.close()
        late.close()


@pytest.mark.anyio
@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="counts open descriptors in /proc/self/fd")
async def test_running_out_of_file_descriptors_pauses_the_listener(sock_path: Path) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    async for server in serving(sock_path, max_clients=1000):
        # 80 client sockets made first; then this process (the server) is left 10 spare descriptors, so
        # accept() runs out of them while the clients connect.
        held = [socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) for _ in range(80)]
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (len(os.listdir("/proc/self/fd")) + 10, hard))

            def flood(clients: list[socket.socket]) -> None:
                for s in clients:
                    s.settimeout(5)
                    with contextlib.suppress(OSError):
                        s.connect(str(sock_path))

            await run(flood, held)
            await until(lambda srv=server: srv.accept_failures > 0, 20)
        finally:
            for s in held:
                s.close()
            resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
        # Descriptors are back: the listener serves again.
        c = await run(Client, sock_path)
        with anyio.fail_after(20):
            reply = await run(c.ask, request("ping", 5))
        assert reply["result"] == {"pong": True}
        c.close()
