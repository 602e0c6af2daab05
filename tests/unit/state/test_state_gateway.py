"""StateGateway: the state database's one async door (issue #40, point 4). Its calls answer what ``State`` answers,
run off the event loop one at a time, and no daemon code wraps a state call in a thread by hand any more."""

from __future__ import annotations

import ast
import threading
from pathlib import Path

import anyio
import pytest

from mempald.features.cowork import CoworkInbox
from mempald.features.kg import KnowledgeGraph
from mempald.features.viewer import kg_graph
from mempald.normalize.model import CursorContext
from mempald.state.db import Cursor, SourceFigures, State
from mempald.state.gateway import StateGateway

REPO = Path(__file__).resolve().parents[3]
pytestmark = pytest.mark.anyio


@pytest.fixture
def gateway(tmp_path: Path) -> StateGateway:
    return StateGateway(State(tmp_path / "state.sqlite3"))


async def test_cursors_counters_and_the_audit_go_through_the_gateway(gateway: StateGateway) -> None:
    cursor = Cursor("/t/a.jsonl", "claude_code", 7, 500, 1.5, 400, "h", CursorContext(format="claude_code"), 3)
    assert await gateway.get_cursor(cursor.path) is None
    await gateway.put_cursor(cursor)
    assert await gateway.get_cursor(cursor.path) == cursor
    assert gateway.db.get_cursor(cursor.path) == cursor  # the same database the blocking callers read

    await gateway.bump("claude_code", "redactions", 2)
    await gateway.bump("claude_code", "redactions", 0)  # nothing to count: nothing written
    await gateway.bump("claude_code", "redactions", 3)
    assert await gateway.counters() == {"claude_code": {"redactions": 5}}
    figures, counters = await gateway.figures()
    assert figures == {"claude_code": SourceFigures(files=1, exchanges=3, backlog_bytes=100)}
    assert counters == {"claude_code": {"redactions": 5}}

    await gateway.audit("user", "delete", "drawer-1", "wrong", wing="w")
    await gateway.audit("user", "restore", "drawer-1")
    log = await gateway.audit_log(10)
    assert [(e["action"], e["target"]) for e in log] == [("restore", "drawer-1"), ("delete", "drawer-1")]
    assert log[1]["reason"] == "wrong" and log[1]["detail"] == {"wing": "w"}
    assert [e["action"] for e in await gateway.audit_log(10, actions=("delete",))] == ["delete"]

    await gateway.drop_cursor(cursor.path)
    assert await gateway.get_cursor(cursor.path) is None
    assert gateway.path == gateway.db.path and gateway.damaged == ""


async def test_calls_run_off_the_loop_one_at_a_time(gateway: StateGateway) -> None:
    loop_thread = threading.get_ident()
    running = peak = 0
    threads: set[int] = set()
    guard = threading.Lock()

    def job() -> None:
        nonlocal running, peak
        with guard:
            running += 1
            peak = max(peak, running)
        threads.add(threading.get_ident())
        gateway.db.bump("t", "n")  # a real call, long enough for a second job to overlap if it could
        threading.Event().wait(0.005)
        with guard:
            running -= 1

    async with anyio.create_task_group() as tg:
        for _ in range(20):
            tg.start_soon(gateway.run, job)
    assert peak == 1
    assert loop_thread not in threads
    assert (await gateway.counters())["t"]["n"] == 20


async def test_the_graph_and_the_inbox_share_its_connection_and_thread(gateway: StateGateway) -> None:
    db = gateway.db
    graph = KnowledgeGraph(db.conn, lock=db.lock)
    graph.ensure_schema()
    inbox = CoworkInbox(db.conn, lock=db.lock)
    inbox.ensure_schema()
    await gateway.run(lambda: graph.add("mempal", "uses", "sqlite"))
    assert [t.object for t in await gateway.run(lambda: graph.query("mempal"))] == ["sqlite"]
    shown = await kg_graph(graph, gateway, None, None, False, 10)  # the viewer's graph page
    assert {n["name"] for n in shown["nodes"]} == {"mempal", "sqlite"} and shown["triples"] == 1
    await gateway.run(lambda: inbox.push(sender="user", target="claude", cwd="/tmp", text="hello"))
    drained = await gateway.run(lambda: inbox.drain("claude", "/tmp", 1000))
    assert [m.text for m in drained.messages] == ["hello"]


HAND_WRAPPED = ("state", "inbox", "graph", "kg", "forgotten", "conn")


def _hand_wrapped(path: Path) -> list[str]:
    """``anyio.to_thread.run_sync`` calls whose job reaches the state database (by the names that hold it)."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "run_sync"):
            continue
        names = {n.attr for arg in node.args for n in ast.walk(arg) if isinstance(n, ast.Attribute)}
        names |= {n.id for arg in node.args for n in ast.walk(arg) if isinstance(n, ast.Name)}
        if names & set(HAND_WRAPPED):
            out.append(f"{path.relative_to(REPO)}:{node.lineno}")
    return out


def test_no_state_call_is_wrapped_in_a_thread_by_hand() -> None:
    found = [hit for f in sorted((REPO / "mempald").rglob("*.py")) if f != REPO / "mempald/state/gateway.py"
             for hit in _hand_wrapped(f)]
    assert not found, "reach the state database through mempald.state.gateway.StateGateway:\n" + "\n".join(found)
