"""The daemon methods behind the viewer, through a real daemon holding a real Codex session (13 prompts, from the
shared fixtures): a wing's sessions by start, a session's window around a drawer and from a position, deleted
drawers on request, the listing refreshed by a write, and pack outputs."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from mempal.protocol import NOT_FOUND, RpcError
from tests.conftest import Daemon

ROLLOUT = "rollout-2026-03-09T16-29-31-019cd4b8-43b8-78a3-9985-04f6307807de.jsonl"


@pytest.mark.timeout(300)
def test_sessions_and_windows(daemon: Daemon, home: Path, formats_dir: Path) -> None:
    sessions_dir = home / ".codex" / "sessions" / "2026" / "03" / "09"
    sessions_dir.mkdir(parents=True)
    shutil.copy(formats_dir / "codex" / "real2" / ROLLOUT, sessions_dir / ROLLOUT)
    daemon.start()
    st = daemon.idle(timeout=240)
    (wing,) = st["wings"]
    listing = daemon.call("wing_sessions", {"wing": wing})
    assert listing["total"] == 1 and not listing["more"] and listing["undated"] == 0
    assert listing["rooms"] == daemon.call("list_rooms", {"wing": wing})["rooms"]
    (session,) = listing["sessions"]
    assert session["drawers"] == st["drawers"] and session["agent"] == "codex" and session["dated"]
    assert session["session_id"] == "019cd4b8-43b8-78a3-9985-04f6307807de"
    assert session["source_path"] == str(sessions_dir / ROLLOUT) and session["timestamp"].startswith("2026-03-")
    first = daemon.call("session_drawers", {"drawer_id": session["first_drawer"], "before": 0, "after": 0})
    assert {d["position"] for d in first["drawers"]} == {0} and first["anchor"]["chunk_index"] == 0
    assert daemon.call("wing_sessions", {"wing": wing, "until": session["ts"] - 1})["sessions"] == []
    assert daemon.call("wing_sessions", {"wing": wing, "since": session["ts"]})["total"] == 1

    whole = daemon.call("session_drawers", {"session_id": session["session_id"], "after": 200})
    assert len(whole["drawers"]) == whole["total"] == st["drawers"] and not whole["earlier"] and not whole["later"]
    order = [(d["position"], d["chunk_index"]) for d in whole["drawers"]]
    assert order == sorted(order)
    positions = sorted({p for p, _ in order})
    assert len(positions) >= 7 and "context" not in whole["drawers"][0]
    mid = next(d for d in whole["drawers"] if d["position"] == positions[len(positions) // 2])
    around = daemon.call("session_drawers", {"drawer_id": mid["drawer_id"], "before": 2, "after": 2})
    assert around["anchor"]["drawer_id"] == mid["drawer_id"] and around["earlier"] and around["later"]
    assert {d["position"] for d in around["drawers"]} == {p for p in positions if abs(p - mid["position"]) <= 2}
    page = daemon.call("session_drawers", {"session_id": session["session_id"], "start": positions[-1], "after": 5})
    assert {d["position"] for d in page["drawers"]} == {positions[-1]} and page["earlier"] and not page["later"]

    daemon.call("delete", {"drawer_id": [mid["drawer_id"]], "reason": "test"})
    hidden = daemon.call("session_drawers", {"session_id": session["session_id"], "start": mid["position"],
                                             "after": 0})
    assert mid["drawer_id"] not in {d["drawer_id"] for d in hidden["drawers"]}
    shown = daemon.call("session_drawers", {"session_id": session["session_id"], "start": mid["position"],
                                            "after": 0, "include_deleted": True})
    assert any(d["drawer_id"] == mid["drawer_id"] and d["status"] == "deleted" for d in shown["drawers"])
    alone = daemon.call("session_drawers", {"drawer_id": mid["drawer_id"], "before": 0, "after": 0})
    assert alone["anchor"]["deleted_by"] == "user"  # a deleted drawer asked for by id is shown, to be restored

    before = daemon.call("wing_sessions", {"wing": wing})
    assert before["sessions"][0]["drawers"] == session["drawers"] - 1  # the deleted drawer is not counted
    daemon.call("ingest", {"text": "The ferry to the island leaves at nine.", "wing": "elsewhere"})
    assert daemon.call("wing_sessions", {"wing": wing}) == before  # a write elsewhere changes nothing here
    saved = daemon.call("ingest", {"text": "We keep the checklist in specs/016 next to the plan.", "wing": wing})
    fresh = daemon.call("wing_sessions", {"wing": wing})  # a write refreshes the cached listing
    assert fresh["total"] == 2 and fresh["sessions"][0]["first_drawer"] == saved["drawer_ids"][0]
    # a drawer back in a known session: the counts are read again, the session starts re-used (the same number)
    daemon.call("restore", {"drawer_id": [mid["drawer_id"]]})
    again = daemon.call("wing_sessions", {"wing": wing})
    codex = next(s for s in again["sessions"] if s["session_id"] == session["session_id"])
    assert again["total"] == 2 and codex["drawers"] == session["drawers"]
    assert {**codex, "drawers": 0} == {**session, "drawers": 0}
    with pytest.raises(RpcError) as err:
        daemon.call("session_drawers", {"drawer_id": "00000000-0000-4000-8000-000000000000"})
    assert err.value.code == NOT_FOUND


@pytest.mark.timeout(120)
def test_pack_outputs_of_a_folder_and_of_none(daemon: Daemon, tmp_path: Path) -> None:
    daemon.start()
    assert daemon.call("pack_outputs", {}) == {"packs": []}
    empty = tmp_path / "not-packed"
    empty.mkdir()
    res = daemon.call("pack_outputs", {"dir": str(empty)})["packs"][0]
    assert res["written"] is False and res["output"] == str(empty)
    with pytest.raises(RpcError) as err:
        daemon.call("pack_outputs", {"dir": str(tmp_path / "nowhere")})
    assert err.value.code == NOT_FOUND
