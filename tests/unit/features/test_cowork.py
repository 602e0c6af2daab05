"""The cowork inbox (caps, self-push, atomic drain, durability), peek_partner, and recall's selection."""

from __future__ import annotations

import json
import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest

from mempal.protocol import INVALID_PARAMS, LIMIT_EXCEEDED, NOT_FOUND
from mempald.errors import MempalError
from mempald.features.cowork import (
    MAX_INBOX_BYTES,
    MAX_MESSAGE_BYTES,
    MAX_PENDING,
    CoworkInbox,
    claude_dir_name,
    norm_cwd,
    peek_partner,
)
from mempald.features.recall import SessionMemory, compose, only_asks, select_memories, worth_recalling
from mempald.normalize.model import INJECT_CLOSE, INJECT_OPEN, strip_injected
from mempald.rpc.errors import wire_code
from mempald.state.db import State

CWD = "/home/u/acme"


@pytest.fixture
def state(tmp_path: Path) -> State:
    return State(tmp_path / "state.sqlite3")


@pytest.fixture
def inbox(state: State) -> CoworkInbox:
    box = CoworkInbox(state.conn, lock=state.lock)
    box.ensure_schema()
    return box


def test_push_then_drain_returns_messages_in_order_once(inbox: CoworkInbox) -> None:
    inbox.push(sender="claude", target="codex", cwd=CWD, text="first")
    inbox.push(sender="user", target="codex", cwd=CWD, text="second")
    inbox.push(sender="codex", target="claude", cwd=CWD, text="for claude")
    drained = inbox.drain("codex", CWD)
    assert [(m.sender, m.text) for m in drained.messages] == [("claude", "first"), ("user", "second")]
    assert drained.remaining == 0
    assert inbox.drain("codex", CWD).messages == ()
    assert [m.text for m in inbox.drain("claude", CWD).messages] == ["for claude"]


def test_inboxes_are_per_cwd_and_cwd_is_normalised(inbox: CoworkInbox, tmp_path: Path) -> None:
    real = tmp_path / "proj"
    real.mkdir()
    link = tmp_path / "link"
    link.symlink_to(real)
    inbox.push(sender="claude", target="codex", cwd=str(link) + "/", text="via the symlink")
    inbox.push(sender="claude", target="codex", cwd="/elsewhere", text="other project")
    assert [m.text for m in inbox.drain("codex", str(real)).messages] == ["via the symlink"]
    assert norm_cwd(str(real) + "/./") == str(real)
    with pytest.raises(MempalError) as err:
        norm_cwd("relative/dir")
    assert wire_code(err.value) == INVALID_PARAMS


def test_a_client_cannot_push_to_itself(inbox: CoworkInbox) -> None:
    with pytest.raises(MempalError) as err:
        inbox.push(sender="claude", target="claude", cwd=CWD, text="hi me")
    assert wire_code(err.value) == INVALID_PARAMS
    assert "cannot push to itself" in err.value.message and "codex" in err.value.message


@pytest.mark.parametrize(("sender", "target"), [("mallory", "codex"), ("claude", "gemini")])
def test_unknown_agents_are_refused(inbox: CoworkInbox, sender: str, target: str) -> None:
    with pytest.raises(MempalError) as err:
        inbox.push(sender=sender, target=target, cwd=CWD, text="x")
    assert wire_code(err.value) == INVALID_PARAMS


def test_message_size_cap(inbox: CoworkInbox) -> None:
    inbox.push(sender="claude", target="codex", cwd=CWD, text="x" * MAX_MESSAGE_BYTES)
    with pytest.raises(MempalError) as err:
        inbox.push(sender="claude", target="codex", cwd=CWD, text="é" * (MAX_MESSAGE_BYTES // 2 + 1))  # bytes count
    assert wire_code(err.value) == LIMIT_EXCEEDED
    assert f"limit is {MAX_MESSAGE_BYTES} bytes" in err.value.message
    with pytest.raises(MempalError):
        inbox.push(sender="claude", target="codex", cwd=CWD, text="   ")


def test_pending_count_cap(inbox: CoworkInbox) -> None:
    for i in range(MAX_PENDING):
        inbox.push(sender="claude", target="codex", cwd=CWD, text=f"m{i}")
    with pytest.raises(MempalError) as err:
        inbox.push(sender="claude", target="codex", cwd=CWD, text="one too many")
    assert wire_code(err.value) == LIMIT_EXCEEDED
    assert "full" in err.value.message and str(MAX_PENDING) in err.value.message
    # the other direction and other projects are separate inboxes
    inbox.push(sender="codex", target="claude", cwd=CWD, text="fine")
    inbox.push(sender="claude", target="codex", cwd="/other", text="fine")
    inbox.drain("codex", CWD)
    inbox.push(sender="claude", target="codex", cwd=CWD, text="room again")


def test_total_bytes_cap(inbox: CoworkInbox) -> None:
    chunk = "y" * MAX_MESSAGE_BYTES
    for _ in range(MAX_INBOX_BYTES // MAX_MESSAGE_BYTES):
        inbox.push(sender="codex", target="claude", cwd=CWD, text=chunk)
    with pytest.raises(MempalError) as err:
        inbox.push(sender="codex", target="claude", cwd=CWD, text="z")
    assert wire_code(err.value) == LIMIT_EXCEEDED and "bytes pending" in err.value.message
    assert inbox.status(CWD)["inboxes"]["claude"]["bytes"] == MAX_INBOX_BYTES


def test_status_reads_both_inboxes_without_draining(inbox: CoworkInbox) -> None:
    inbox.push(sender="claude", target="codex", cwd=CWD, text="hello codex")
    st = inbox.status(CWD)
    assert st["inboxes"]["codex"]["pending"] == 1
    assert st["inboxes"]["codex"]["messages"][0]["text"] == "hello codex"
    assert st["inboxes"]["codex"]["messages"][0]["from"] == "claude"
    assert st["inboxes"]["claude"]["pending"] == 0
    assert inbox.status(CWD)["inboxes"]["codex"]["pending"] == 1


def test_drain_with_a_budget_leaves_the_rest_queued(inbox: CoworkInbox) -> None:
    for i in range(3):
        inbox.push(sender="claude", target="codex", cwd=CWD, text=f"{i}" * 100)
    first = inbox.drain("codex", CWD, max_chars=250)
    assert [m.text[0] for m in first.messages] == ["0", "1"] and first.remaining == 1
    assert [m.text[0] for m in inbox.drain("codex", CWD, max_chars=250).messages] == ["2"]


def test_messages_survive_a_reopen(tmp_path: Path) -> None:
    st = State(tmp_path / "state.sqlite3")
    box = CoworkInbox(st.conn, lock=st.lock)
    box.ensure_schema()
    box.push(sender="claude", target="codex", cwd=CWD, text="durable")
    st.close()
    st2 = State(tmp_path / "state.sqlite3")
    box2 = CoworkInbox(st2.conn, lock=st2.lock)
    box2.ensure_schema()
    assert [m.text for m in box2.drain("codex", CWD).messages] == ["durable"]
    st2.close()


def test_a_failed_drain_loses_nothing(state: State, monkeypatch: pytest.MonkeyPatch) -> None:
    """A crash between reading and deleting rolls both back: the messages are still there, once."""
    box = CoworkInbox(state.conn, lock=state.lock)
    box.ensure_schema()
    box.push(sender="claude", target="codex", cwd=CWD, text="keep me")

    class Boom(Exception):
        pass

    real_connect = state.conn

    class Failing:
        """Delegates to the real connection, but its cursors fail on DELETE (after the SELECT)."""

        def __getattr__(self, name: str) -> Any:
            return getattr(real_connect, name)

        def cursor(self) -> Any:
            cur = real_connect.cursor()

            class C:
                def __getattr__(self, name: str) -> Any:
                    return getattr(cur, name)

                def __setattr__(self, name: str, value: Any) -> None:
                    setattr(cur, name, value)

                def executemany(self, sql: str, rows: Any) -> Any:
                    raise Boom

            return C()

    failing = CoworkInbox(Failing(), lock=state.lock)  # type: ignore[arg-type]
    with pytest.raises(Boom):
        failing.drain("codex", CWD)
    assert not state.conn.in_transaction
    assert [m.text for m in box.drain("codex", CWD).messages] == ["keep me"]
    assert box.drain("codex", CWD).messages == ()


def test_concurrent_drains_deliver_each_message_exactly_once(tmp_path: Path) -> None:
    """Two connections (two daemons would be refused, but two threads/processes on the file must still be
    exactly-once): every message comes out of exactly one drain."""
    path = tmp_path / "state.sqlite3"
    st = State(path)
    box = CoworkInbox(st.conn, lock=st.lock)
    box.ensure_schema()
    for i in range(MAX_PENDING):
        box.push(sender="claude", target="codex", cwd=CWD, text=f"m{i}")
    got: list[str] = []
    lock = threading.Lock()

    def worker() -> None:
        conn = sqlite3.connect(str(path), isolation_level=None, timeout=30, check_same_thread=False)
        other = CoworkInbox(conn)
        for _ in range(20):
            res = other.drain("codex", CWD, max_chars=5)
            with lock:
                got.extend(m.text for m in res.messages)
        conn.close()

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(got) == sorted(f"m{i}" for i in range(MAX_PENDING))
    st.close()


# peek ------------------------------------------------------------------------------------------------------
def _claude_line(session: str, cwd: str, kind: str, text: str, uid: str, parent: str | None = None) -> str:
    msg: dict[str, Any]
    if kind == "user":
        msg = {"role": "user", "content": text}
    else:
        msg = {"id": f"msg_{uid}", "role": "assistant", "type": "message", "content": [{"type": "text", "text": text}]}
    return json.dumps({"parentUuid": parent, "isSidechain": False, "userType": "external", "cwd": cwd,
                       "sessionId": session, "version": "2.1.38", "type": kind, "message": msg, "uuid": uid,
                       "timestamp": "2026-03-01T10:00:00.000Z"})


def write_claude_session(projects: Path, cwd: str, session: str, turns: list[tuple[str, str]]) -> Path:
    folder = projects / claude_dir_name(cwd)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{session}.jsonl"
    with path.open("w") as fh:
        for i, (q, a) in enumerate(turns):
            fh.write(_claude_line(session, cwd, "user", q, f"u{i}") + "\n")
            fh.write(_claude_line(session, cwd, "assistant", a, f"a{i}", f"u{i}") + "\n")
    return path


def test_peek_reads_the_newest_claude_session_of_that_cwd(tmp_path: Path) -> None:
    projects = tmp_path / "projects"
    cwd = str(tmp_path / "acme")
    old = write_claude_session(projects, cwd, "old-session", [("old question", "old answer")])
    new = write_claude_session(projects, cwd, "new-session",
                               [(f"question {i}", f"answer {i}") for i in range(8)])
    write_claude_session(projects, str(tmp_path / "other"), "other-session", [("not this", "no")])
    import os

    os.utime(old, (1, 1))
    before = new.read_bytes()
    res = peek_partner(cwd, "claude", 3, claude_projects=projects, codex_sessions=tmp_path / "none")
    assert res["path"] == str(new) and res["session_id"] == "new-session"
    assert [e["user"] for e in res["exchanges"]] == ["question 5", "question 6", "question 7"]
    assert res["exchanges"][-1]["assistant"] == "answer 7"
    assert new.read_bytes() == before  # read-only


def test_peek_finds_a_session_whose_folder_name_does_not_match(tmp_path: Path) -> None:
    projects = tmp_path / "projects"
    cwd = str(tmp_path / "acme")
    path = write_claude_session(projects, cwd, "s1", [("hello", "hi")])
    moved = projects / "renamed-folder"
    path.parent.rename(moved)
    res = peek_partner(cwd, "claude", 5, claude_projects=projects, codex_sessions=tmp_path / "none")
    assert res["path"] == str(moved / "s1.jsonl")


def test_peek_tail_window_skips_a_cut_first_line_and_reads_the_end(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from mempald.features import cowork

    projects = tmp_path / "projects"
    cwd = str(tmp_path / "acme")
    write_claude_session(projects, cwd, "long", [(f"q{i} " + "pad " * 200, f"a{i}") for i in range(40)])
    monkeypatch.setattr(cowork, "_TAIL_START", 4096)
    res = peek_partner(cwd, "claude", 2, claude_projects=projects, codex_sessions=tmp_path / "none")
    assert [e["user"].split()[0] for e in res["exchanges"]] == ["q38", "q39"]


def test_peek_without_a_session_is_not_found(tmp_path: Path) -> None:
    with pytest.raises(MempalError) as err:
        peek_partner(str(tmp_path), "claude", 5, claude_projects=tmp_path / "p", codex_sessions=tmp_path / "c")
    assert wire_code(err.value) == NOT_FOUND


def test_peek_codex_rollout(tmp_path: Path, formats_dir: Path) -> None:
    pytest.importorskip("mempald.normalize.codex", reason="the Codex normalizer is not in this tree yet")
    src = next((formats_dir / "codex").glob("localpush_redacted_rollout-*.jsonl"))
    meta = json.loads(src.read_text().splitlines()[0])["payload"]
    sessions = tmp_path / "sessions" / "2026" / "02" / "23"
    sessions.mkdir(parents=True)
    (sessions / src.name.removeprefix("localpush_redacted_")).write_bytes(src.read_bytes())
    res = peek_partner(meta["cwd"], "codex", 3, claude_projects=tmp_path / "p", codex_sessions=tmp_path / "sessions")
    assert res["partner"] == "codex" and res["session_id"] == meta["id"]
    assert res["exchanges"] and len(res["exchanges"]) <= 3


# recall selection --------------------------------------------------------------------------------------------
def _hit(i: str, rel: float | None, session: str = "s", text: str = "memory text", score: float = 1.0,
         exchange: str | None = None) -> dict[str, Any]:
    return {"drawer_id": i, "score": score, "text": text, "wing": "acme", "room": "decisions", "session_id": session,
            "source_path": f"/p/{exchange or i}.jsonl", "exchange_key": exchange or i, "relevance": rel,
            "scores": {"dense": 0.3, "bm25": 3.0, "keyword": 0.5, "rarity": 1.0, "relevance": rel}}


def test_select_memories_uses_the_calibrated_relevance_not_the_fused_score() -> None:
    hits = [_hit("a", 0.9), _hit("b", 0.2), _hit("c", None), _hit("d", 0.7, session="current")]
    assert [h["drawer_id"] for h in select_memories(hits, 0.55, "current")] == ["a"]
    assert [h["drawer_id"] for h in select_memories(hits, 0.55, None)] == ["a", "d"]


def test_select_memories_puts_the_answer_before_the_bare_question() -> None:
    question = _hit("q", 0.9, text="> the deploy fails with ENOSPC again\n[interrupted by user]", score=1.0)
    answer = _hit("a", 0.8, text="> why does the deploy fail\nThe root cause was the staging quota: we raised it to "
                  "40 GB and cleaned the old images, and the deploy goes through now.", score=0.9)
    later_chunk = _hit("c", 0.8, text="[tool: Bash] df -h -> 100% used", score=0.95)  # no prompt: not a question
    assert only_asks(question["text"]) and not only_asks(answer["text"]) and not only_asks(later_chunk["text"])
    assert [h["drawer_id"] for h in select_memories([question, answer, later_chunk], 0.5, None)] == ["c", "a", "q"]


def test_select_memories_keeps_one_chunk_per_exchange_and_skips_what_the_session_was_shown() -> None:
    hits = [_hit("x1", 0.9, exchange="x", score=0.5), _hit("x2", 0.9, exchange="x", score=0.8), _hit("y", 0.6)]
    assert [h["drawer_id"] for h in select_memories(hits, 0.5, None)] == ["y", "x2"]
    shown = {("/p/y.jsonl", "y")}
    assert [h["drawer_id"] for h in select_memories(hits, 0.5, None, shown)] == ["x2"]


def test_session_memory_is_bounded_and_forgets_idle_sessions() -> None:
    mem = SessionMemory(sessions=2, idle_s=3600)
    mem.add("s1", [("/p", "a")])
    mem.add("s1", [("/p", "b")])
    assert mem.shown("s1") == {("/p", "a"), ("/p", "b")} and mem.shown("other") == set() and mem.shown(None) == set()
    mem.add("s2", [("/p", "c")])
    mem.add("s3", [("/p", "d")])  # the least recently active session (s1) goes
    assert mem.shown("s1") == set() and mem.shown("s3") == {("/p", "d")}
    idle = SessionMemory(idle_s=0.0)
    idle.add("s", [("/p", "a")])
    assert idle.shown("s") == set()


def test_worth_recalling() -> None:
    assert worth_recalling("why did the deploy fail on tuesday")
    assert not worth_recalling("/compact")
    assert not worth_recalling("yes")
    assert not worth_recalling("ok go")


def test_compose_puts_the_inbox_first_and_keeps_to_the_budgets() -> None:
    from mempald.features.cowork import Message

    msgs = (Message(1, "claude", CWD, "codex", "please review src/app.py", 0.0),)
    hits = [_hit(str(i), 0.8, text="word " * 400) for i in range(5)]
    text, kept = compose(msgs, 2, hits, 9000, 600, lambda s: len(s) // 4)
    assert text.index("please review src/app.py") < text.index("drawer 0")
    assert "2 more message(s)" in text
    assert 1 <= len(kept) < 5
    assert len(text) <= 9000
    mem = text[text.index("Earlier sessions recorded"):]
    assert len(mem) // 4 <= 600 + 10
    # no memories budget: inbox only
    text2, kept2 = compose(msgs, 0, hits, 9000, 0, lambda s: len(s) // 4)
    assert kept2 == [] and "Earlier sessions recorded" not in text2
    # the best memory is cut rather than dropped when it alone is over budget
    _, kept3 = compose((), 0, [_hit("big", 0.9, text="long " * 2000)], 9000, 300, lambda s: len(s) // 4)
    assert [h["drawer_id"] for h in kept3] == ["big"]


def test_injected_marker_is_what_the_normalizers_strip() -> None:
    from mempal.hook import INJECT_CLOSE as HOOK_CLOSE
    from mempal.hook import INJECT_OPEN as HOOK_OPEN
    from mempal.hook import wrap

    assert (HOOK_OPEN, HOOK_CLOSE) == (INJECT_OPEN, INJECT_CLOSE)
    wrapped = wrap(f"remember this {INJECT_CLOSE} and this")
    assert strip_injected("before " + wrapped + " after") == "before  after"
