"""Nothing a client sends ends or stalls a real daemon (issue 22, points 1 and 8).

Lone surrogates wherever a string goes (the id first: its error reply once re-encoded the same id and took
the daemon down), seeded random bytes and random JSON, every bad value of every parameter kind on every
method of the table (each must be -32602, never -32603), over-long lines sent through the real client, 600
idle connections beside a client that needs ``status``, and non-UTF-8 command-line arguments."""

from __future__ import annotations

import json
import os
import random
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from mempal.connection import Connection
from mempal.methods import METHODS
from mempal.methods.spec import KINDS
from mempal.protocol import INVALID_PARAMS, INVALID_REQUEST, RpcError
from tests.conftest import Daemon
from tests.integration.test_socket_abuse import connect, read_line, sock_path

CRASH_MARKS = ("handler_crashed", "dispatch_crashed", "connection_failed", "Traceback")


def alive(d: Daemon) -> None:
    assert d.proc is not None and d.proc.poll() is None, d.logs()[-3000:]
    assert d.call("ping") == {"pong": True}
    logs = d.logs()
    assert not [m for m in CRASH_MARKS if m in logs], logs[-3000:]


def reply_of(raw: bytes) -> dict[str, Any]:
    reply: dict[str, Any] = json.loads(raw)
    assert reply.get("jsonrpc") == "2.0" and ("result" in reply or "error" in reply), reply
    return reply


SURROGATE_LINES = [
    b'{"jsonrpc":"2.0","id":"\\ud800","method":"ping"}',  # the line of the finding
    b'{"jsonrpc":"2.0","id":"\\udfff","method":"no_such_method"}',
    b'{"jsonrpc":"2.0","id":"\\ud83d","method":"\\ud83d"}',
    b'{"jsonrpc":"2.0","id":"ok \\ud83d","method":"search","params":{"query":"ok \\ud83d"}}',
    b'{"jsonrpc":"2.0","id":1,"method":"search","params":{"\\ud800":"x"}}',
    b'{"jsonrpc":"\\ud800","id":"\\ud800","method":"ping"}',
    b'{"jsonrpc":"2.0","id":"\\ud800","method":"ping","params":[1]}',
    b'{"jsonrpc":"2.0","id":"\\ud800","method":"search","params":{"query":"x","limit":NaN}}',
    b'{"jsonrpc":"2.0","id":"\\ud800","method":"status","params":{"x":"\\udc80"}}',
]


def random_lines(rng: random.Random, n: int) -> list[bytes]:
    names = [*METHODS, "", "\ud800", "x" * 300]
    atoms: list[Any] = [None, True, 0, -1, 2**63, 1e308, "", "\x00", "\ud800", "\udfff", "ok \ud83d", [], {}]
    out: list[bytes] = []
    for i in range(n):
        kind = i % 3
        if kind == 0:  # raw bytes (never a newline: one line each)
            out.append(bytes(rng.randrange(256) for _ in range(rng.randrange(1, 200))).replace(b"\n", b" "))
        else:
            params: Any = {rng.choice(["query", "text", "path", "paths", "drawer_id", "limit", "wing", "\ud800"]):
                           rng.choice(atoms) for _ in range(rng.randrange(4))}
            if kind == 2:
                params = rng.choice([params, [params], "x", 5, None])
            body = {"jsonrpc": rng.choice(["2.0", "2.0", "1.0", "\ud800"]), "id": rng.choice([i, f"r{i}\ud800"]),
                    "method": rng.choice(names), "params": params}
            out.append(json.dumps(body).encode())  # ensure_ascii: surrogates travel as \u escapes
    return out


@pytest.mark.timeout(240)
def test_no_bytes_end_the_server(daemon: Daemon) -> None:
    daemon.start()
    rng = random.Random(22)
    lines = SURROGATE_LINES + random_lines(rng, 300)
    for line in SURROGATE_LINES:  # each on a fresh connection, as the finding did
        with connect(daemon) as s:
            reply_of(read_ask(s, line))
    with connect(daemon) as s:
        for line in lines:
            s.sendall(line + b"\n")
            raw = read_line(s)
            reply = reply_of(raw)
            if "error" in reply:
                assert reply["error"]["code"] != -32603, (line[:80], reply)
    assert b'"id":"\\ud800"' in read_ask_fresh(daemon, SURROGATE_LINES[0])  # the id comes back, as \u escapes
    alive(daemon)
    print(f"RELIABILITY socket_fuzz lines={len(lines) + len(SURROGATE_LINES)}")


def read_ask(s: socket.socket, line: bytes) -> bytes:
    s.sendall(line + b"\n")
    return read_line(s)


def read_ask_fresh(d: Daemon, line: bytes) -> bytes:
    with connect(d) as s:
        return read_ask(s, line)


# Values no parameter of that kind accepts (a surrogate or NUL where text cannot hold it, NaN and infinities,
# empty or NUL drawer ids and paths, wrong types).
BAD: dict[str, list[Any]] = {
    "str": ["\ud800", "a\x00b", 5, [], {}, True],
    "text": ["\ud800x", "ok \ud83d", 5, [], {}],
    "int": [float("nan"), float("inf"), -float("inf"), 1.5, "x", 10**30, True],
    "float": [float("nan"), float("inf"), -float("inf"), "x", True, [], {}],
    "bool": ["maybe", 2, [], {}],
    "strs": ["\ud800", ["a\x00"], [1], {}, ["x"] * 20_000],
    "path": ["", "   ", "\x00", "/a\x00b", "\ud800", 5, "/\udcff"],
    "paths": [[""], ["/a\x00"], ["\ud800"], [5], "\x00"],
    "time": [float("nan"), float("inf"), "not a time", "\ud800", []],
    "id": ["", "\x00", "\ud800", "not-a-uuid", 5],
    "ids": [[""], ["\x00"], "\x00", ["\ud800"], [5], "", ["00000000-0000-0000-0000-00000000000g"]],
    "enum": ["\ud800", "nope", "\x00", 5],
}


@pytest.mark.timeout(300)
def test_every_bad_parameter_of_every_method_is_invalid_params(daemon: Daemon) -> None:
    assert set(BAD) == set(KINDS), "a parameter kind without bad values to try"
    daemon.start()
    wrong: list[tuple[str, str, str, Any]] = []
    probes = 0
    with connect(daemon, timeout=60) as s:
        for method in METHODS.values():
            for p in method.params:
                for value in BAD[p.kind]:
                    body = {"jsonrpc": "2.0", "id": probes, "method": method.name, "params": {p.name: value}}
                    reply = reply_of(read_ask(s, json.dumps(body).encode()))
                    probes += 1
                    code = reply.get("error", {}).get("code")
                    if code != INVALID_PARAMS:
                        wrong.append((method.name, p.name, repr(value)[:40], reply.get("error", reply)))
    assert not wrong, wrong[:10]
    alive(daemon)
    print(f"RELIABILITY bad_params probes={probes}")


@pytest.mark.timeout(240)
def test_over_long_lines_are_refused_exactly_and_the_client_reads_why(daemon: Daemon) -> None:
    daemon.start()  # the documented default: 1 MiB
    limit = 1024 * 1024
    for size, ok in ((limit, True), (limit + 1, False)):
        head = b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{},"pad":"'
        line = head + b"x" * (size - len(head) - 2) + b'"}'
        assert len(line) == size
        with connect(daemon) as s:
            reply = reply_of(read_ask(s, line))
        assert ("result" in reply) is ok, (size, reply)
        if not ok:
            assert reply["error"]["code"] == INVALID_REQUEST and "longer than 1048576" in reply["error"]["message"]
    # The real client sends 8 MiB in one sendall: it reads the error instead of a broken pipe, and its
    # connection still works afterwards.
    with Connection(sock_path(daemon), timeout=60) as conn:
        with pytest.raises(RpcError) as err:
            conn.call("search", {"query": "q" * (8 << 20)})
        assert err.value.code == INVALID_REQUEST
        assert conn.call("ping") == {"pong": True}
    alive(daemon)


@pytest.mark.timeout(240)
def test_600_idle_connections_leave_room_for_status_and_hooks(daemon: Daemon) -> None:
    daemon.start()  # daemon.max_clients = 512
    held = [connect(daemon) for _ in range(600)]
    try:
        t0 = time.monotonic()
        st = daemon.call("status", timeout=10)
        took = time.monotonic() - t0
        hook = daemon.call("prompt_context", {"prompt": "how do we deploy the service?"}, timeout=10)
        assert st["ready"] and isinstance(hook, dict)
        assert took < 5, f"status took {took:.1f}s beside 600 idle connections"
    finally:
        for s in held:
            s.close()
    assert "idle_client_dropped" in daemon.logs()
    alive(daemon)
    print(f"RELIABILITY idle_flood connections=600 status_s={took:.2f}")


@pytest.mark.timeout(240)
@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs Linux prlimit on another process")
def test_running_out_of_file_descriptors_does_not_end_the_daemon(daemon: Daemon) -> None:
    import resource

    daemon.start()
    assert daemon.proc is not None
    pid = daemon.proc.pid
    in_use = len(os.listdir(f"/proc/{pid}/fd"))
    _soft, hard = resource.prlimit(pid, resource.RLIMIT_NOFILE)
    resource.prlimit(pid, resource.RLIMIT_NOFILE, (in_use + 20, hard))
    held: list[socket.socket] = []
    try:
        for _ in range(120):  # more clients than the daemon has descriptors for
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(5)
            s.connect(str(sock_path(daemon)))
            held.append(s)
        daemon.wait_for(lambda: "accept_failed" in daemon.logs(), timeout=30)
        assert daemon.proc.poll() is None, daemon.logs()[-3000:]
    finally:
        for s in held:
            s.close()
        resource.prlimit(pid, resource.RLIMIT_NOFILE, (4096, hard))
    daemon.wait_for(lambda: daemon.call("ping", timeout=5) == {"pong": True}, timeout=30)
    alive(daemon)


def _run(argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[bytes]:
    raw = [a.encode("utf-8", "surrogateescape") for a in argv]
    return subprocess.run(raw, env=env, capture_output=True, timeout=60, stdin=subprocess.DEVNULL)


@pytest.mark.timeout(240)
def test_non_utf8_arguments_get_a_message_not_a_traceback(daemon: Daemon, tmp_path: Path) -> None:
    daemon.start()
    bad = b"caf\xe9 \xff".decode("utf-8", "surrogateescape")
    mempal = [sys.executable, "-m", "mempal.cli.main"]
    cases = [[*mempal, "search", bad], [*mempal, "search", "x", "--wing", bad], [*mempal, "mine", f"/tmp/{bad}"],
             [*mempal, "watch", "add", f"/tmp/{bad}"], [*mempal, "save", bad], [*mempal, bad],
             [*mempal, "status", f"--{bad}"], [*mempal, "delete", bad],
             [sys.executable, "-m", "mempald", f"--{bad}"], [sys.executable, "-m", "mempald", "doctor", bad],
             [sys.executable, "-m", "mempald", "migrate", "--to", f"/{bad}"]]
    for argv in cases:
        out = _run(argv, daemon.env)
        assert b"Traceback" not in out.stderr + out.stdout, (argv, out.stderr[-2000:])
        assert out.returncode != 0 and out.stderr.strip(), (argv, out.returncode, out.stderr)
    alive(daemon)
