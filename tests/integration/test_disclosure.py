"""Progressive disclosure against a real daemon: the compact index (at most about 60 tokens a hit, counted here
again with the estimate of an LLM's tokens that every answer states, ``mempal.tokens``), whole drawers by id, a
drawer's timeline in its session, the file gate's matching, and the token figures in status; through the socket
and the real ``mempal`` command line."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from mempal.tokens import estimate
from tests.conftest import FORMATS, Daemon, mempal_cli
from tests.integration.test_skeleton import assistant_line, user_line

REAL = FORMATS / "claude_code" / "real2" / "projects" / "-Users-agents-conductor-acp-python--conductor-pompeii"
REAL_SESSION = "b6a167ee-d73d-4170-a2ae-1de13be39207"
REAL_CWD = "/Users/agents/conductor/acp-python/.conductor/pompeii"
SESSION = "7a1b2c3d-0000-4000-8000-00000000abcd"
CWD = "/home/u/projects/heron"
PROMPTS = [
    "Why does the heron exporter write parquet instead of csv?",
    "Switch the heron exporter's partitioning to daily partitions",
    "The nightly heron job failed with MemoryError in the partition writer",
    "Cap the partition writer's buffer at 64 MB and stream row groups",
    "Document the heron exporter's new memory cap in the README",
    "Run the heron exporter benchmark again after the buffer cap",
]


def tokenizer(_daemon: Daemon) -> None:
    return None  # answers count estimated LLM tokens, not the model's word pieces


def count(_tok: Any, text: str) -> int:
    return estimate(text)


def write_session(home: Path) -> None:
    folder = home / ".claude" / "projects" / "-home-u-projects-heron"
    folder.mkdir(parents=True)
    lines = []
    for i, prompt in enumerate(PROMPTS):
        ts = f"2026-03-0{i + 1}T10:00:00.000Z"
        lines.append(user_line(SESSION, CWD, prompt, f"hu-{i}", ts))
        answer = (f"Done for step {i}: {prompt.lower()}. I read heron/export/writer.py and "
                  "heron/export/partitions.py first: the writer keeps one pyarrow table per partition in memory "
                  "until the job ends, which is why the nightly run grows with the number of days exported. The "
                  "change keeps the public API of PartitionWriter as it is, adds a test in "
                  "tests/test_partitions.py with three days of synthetic rows, and updates the docstring. "
                  "Left for later: the retry policy of the S3 upload, which has its own ticket.")
        lines.append(assistant_line(SESSION, CWD, answer, f"ha-{i}", f"hu-{i}", f"2026-03-0{i + 1}T10:00:09.000Z"))
    (folder / f"{SESSION}.jsonl").write_text("\n".join(lines) + "\n")


@pytest.fixture
def palace(daemon: Daemon, home: Path) -> Daemon:
    if not REAL.is_dir():
        pytest.skip(f"the shared real Claude Code files are not at {REAL}")
    write_session(home)
    target = home / ".claude" / "projects" / REAL.name
    target.mkdir()
    shutil.copy(REAL / f"{REAL_SESSION}.jsonl", target / f"{REAL_SESSION}.jsonl")
    daemon.start()
    daemon.idle()
    return daemon


@pytest.mark.timeout(300)
def test_index_then_get_then_timeline(palace: Daemon) -> None:
    tok = tokenizer(palace)
    idx = palace.call("search", {"query": "heron exporter partition writer memory", "limit": 6, "format": "index"})
    assert idx["format"] == "index" and len(idx["hits"]) >= 4
    for hit in idx["hits"]:
        assert set(hit) >= {"drawer_id", "title", "wing", "room", "date", "score", "tokens", "line"}
        assert "text" not in hit
        assert count(tok, hit["line"]) == hit["line_tokens"] <= 60, hit["line"]
        assert hit["line"].startswith(f"{hit['drawer_id']} | {hit['date']} | {hit['wing']}/{hit['room']} | ")
    assert idx["tokens"] == sum(count(tok, h["line"]) for h in idx["hits"])
    assert idx["tokens_full"] > idx["tokens"]

    full = palace.call("search", {"query": "heron exporter partition writer memory", "limit": 6})
    assert full["tokens"] == sum(count(tok, h["text"]) for h in full["hits"])
    assert all(h["tokens"] == count(tok, h["text"]) for h in full["hits"])

    ids = [h["drawer_id"] for h in idx["hits"][:2]]
    got = palace.call("get", {"drawer_id": [*ids, "00000000-0000-4000-8000-000000000000"]})
    assert [d["drawer_id"] for d in got["drawers"]] == ids
    assert got["missing"] == ["00000000-0000-4000-8000-000000000000"]
    by_id = {h["drawer_id"]: h for h in idx["hits"]}
    for d in got["drawers"]:
        assert d["tokens"] == count(tok, d["text"]) == by_id[d["drawer_id"]]["tokens"]  # the index told the truth
    assert got["tokens"] == sum(d["tokens"] for d in got["drawers"])
    # the timeline of the third exchange: two before, two after, and the outline of the whole session
    session = palace.call("drawers", {"session_id": SESSION, "limit": 100})["drawers"]
    third = next(d for d in session if d["position"] == 2)
    tl = palace.call("timeline", {"drawer_id": third["drawer_id"], "before": 2, "after": 2})
    assert [e["position"] for e in tl["exchanges"]] == [0, 1, 2, 3, 4]
    assert [e["current"] for e in tl["exchanges"]] == [False, False, True, False, False]
    assert PROMPTS[2] in tl["exchanges"][2]["text"]
    assert [o["title"] for o in tl["outline"]] == PROMPTS
    assert tl["later"] is False and tl["session_id"] == SESSION
    assert tl["tokens"] == sum(count(tok, e["text"]) for e in tl["exchanges"]) + sum(
        count(tok, f"{o['position']} {o['date']} {o['title']}") for o in tl["outline"])
    tight = palace.call("timeline", {"drawer_id": third["drawer_id"], "before": 1, "after": 1, "max_tokens": 100,
                                     "outline": 0})
    assert len(tight["exchanges"]) == 3 and tight["outline"] == []
    assert sum(e["tokens"] for e in tight["exchanges"]) <= 100
    assert [e["text"].splitlines()[0].rstrip("…") for e in tight["exchanges"]] == [f"> {p}" for p in PROMPTS[1:4]]

    short = palace.call("get", {"drawer_id": ids[0], "max_tokens": 20})["drawers"][0]
    assert short["tokens"] == count(tok, short["text"]) <= 20 and short["text"].endswith("…")
    # a memory saved by hand is a session of its own: its timeline is itself
    note = palace.call("ingest", {"text": "Decision: heron exports are kept for 90 days, then deleted.",
                                  "wing": "heron", "agent": "user"})["drawer_ids"][0]
    alone = palace.call("timeline", {"drawer_id": note})
    assert [(e["drawer_id"], e["current"]) for e in alone["exchanges"]] == [(note, True)]
    assert [o["drawer_id"] for o in alone["outline"]] == [note] and not alone["earlier"] and not alone["later"]

    palace.call("delete", {"drawer_id": ids[1], "reason": "test", "actor": "user"})
    assert palace.call("get", {"drawer_id": ids})["missing"] == [ids[1]]

    # the savings of the index searches above are in status
    tokens = palace.call("status")["tokens"]
    day = tokens["days"][tokens["today"]]
    assert day["index"] >= idx["tokens"] and day["saved"] >= idx["tokens_full"] - idx["tokens"]
    assert day["get"] >= got["tokens"]


@pytest.mark.timeout(300)
def test_file_context_matches_the_exact_path_then_the_project_relative_one(palace: Daemon, tmp_path: Path) -> None:
    readme = f"{REAL_CWD}/README.md"
    exact = palace.call("file_context", {"path": readme, "cwd": REAL_CWD})
    assert exact["matched"] == 1 and len(exact["drawers"]) == 1
    assert exact["text"].startswith("mempal: what memory holds about README.md")
    assert "[drawer " in exact["text"] and exact["tokens"] <= 400
    got = palace.call("get", {"drawer_id": exact["drawers"]})["drawers"][0]
    assert readme in got["files"]
    # the same project checked out elsewhere: matched through the path relative to the project
    moved_root = tmp_path / "conductor" / "acp-python" / ".conductor" / "pompeii"
    moved = palace.call("file_context", {"path": str(moved_root / "README.md"), "cwd": str(moved_root)})
    assert moved["drawers"] == exact["drawers"]
    # ... but never in another project, and never from the session asking
    other = tmp_path / "another-project"
    assert palace.call("file_context", {"path": str(other / "README.md"), "cwd": str(other)})["text"] == ""
    assert palace.call("file_context", {"path": readme, "cwd": REAL_CWD, "session_id": REAL_SESSION})["text"] == ""
    written = palace.call("file_context", {"path": f"{REAL_CWD}/GUIA_INTEGRACAO_ACP.md", "cwd": REAL_CWD,
                                           "max_tokens": 60})
    assert written["matched"] == 1 and written["tokens"] <= 60


@pytest.mark.timeout(300)
def test_the_command_line_shows_each_answer_with_its_token_count(palace: Daemon) -> None:
    env = palace.env
    out = mempal_cli(env, "search", "heron partition writer", "--format", "index", "--limit", "3")
    assert out.returncode == 0, out.stderr
    first, *lines = out.stdout.strip().splitlines()
    assert "tokens" in first and len(lines) == 3
    drawer = lines[0].split(" | ")[0]
    shown = mempal_cli(env, "get", drawer)
    assert shown.returncode == 0 and f"[drawer {drawer}]" in shown.stdout and "tokens" in shown.stdout
    tl = mempal_cli(env, "timeline", drawer, "--json")
    assert tl.returncode == 0 and json.loads(tl.stdout)["drawer_id"] == drawer
    fc = mempal_cli(env, "file-context", f"{REAL_CWD}/README.md", "--cwd", REAL_CWD)
    assert fc.returncode == 0 and fc.stdout.startswith(f"{REAL_CWD}/README.md · ")
    status = mempal_cli(env, "status")
    assert "tokens saved by index-first searches today:" in status.stdout
    assert "tokens injected by hooks today:" in status.stdout
    assert mempal_cli(env, "timeline", "not-a-uuid").returncode == 1

    # a client of this environment knows its daemon by the pointer's pid: no identity round trip needed
    from mempal.connection import Connection, peer_ids

    assert os.environ.get("MEMPAL_DATA_DIR") == env["MEMPAL_DATA_DIR"]
    with Connection() as conn:
        assert conn.located is not None and conn.located.pointer is not None and palace.proc is not None
        assert conn.located.pointer.pid == palace.proc.pid
        assert conn._sock is not None and peer_ids(conn._sock) == (os.getuid(), palace.proc.pid)
        assert conn.call("ping") == {"pong": True}
