"""Rules travel with sync: two real daemons in two homes share an encrypted folder (the test plays the sync tool,
as tests/integration/test_sync.py does). A rule added on A is listed on B and its PreToolUse decision fires there
through the real hook process; removed on B, it is gone on A; a segment holding a rule ``rule add`` would refuse
is reported, not applied."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from mempald.sync.seal import Sealer, read_key
from mempald.sync.segment import encode
from tests.conftest import mempal_cli
from tests.integration.test_rules import PUSH, decision, pre_tool
from tests.integration.test_sync import CWD, Machine, lag_of, pair, relay, segment_bytes

__all__ = ["pair"]  # (the two machines' fixture, shared with test_sync)

MIGRATE = r"\bmigrate\b.*--env[= ]prod"


def ids(m: Machine) -> set[str]:
    return {r["id"] for r in m.daemon.call("rule_list")["rules"]}


def written(m: Machine, folder: Path) -> bool:
    """Nothing waits in the machine's outbox and its folder holds a segment."""
    return bool(m.daemon.call("sync_status")["outbox"] == 0 and list(folder.glob("seg-*.mps")))


@pytest.mark.timeout(300)
def test_a_rule_added_on_a_fires_on_b_and_removed_on_b_is_gone_on_a(pair: tuple[Machine, Machine],
                                                                     tmp_path: Path) -> None:
    a, b = pair
    a.daemon.start()
    b.daemon.start()
    # a rule kept before the machine joins travels too
    before = a.daemon.call("rule_add", {"text": "never run migrations against production", "tool": "Bash",
                                        "match": MIGRATE, "decision": "ask", "wing": "orbit"})["rule"]
    dir_a, dir_b = tmp_path / "sync-a", tmp_path / "sync-b"
    init = mempal_cli(a.env, "sync", "init", str(dir_a), "--encrypt", "--json")
    assert init.returncode == 0, init.stderr
    key_file = Path(json.loads(init.stdout)["key_file"])
    dir_b.mkdir()
    shutil.copy(dir_a / "mempal-sync.json", dir_b / "mempal-sync.json")
    assert b.daemon.call("sync_join", {"dir": str(dir_b), "key_file": str(key_file)})["encrypted"] is True
    added = mempal_cli(a.env, "rule", "add", "never push to main", "--tool", "Bash", "--match", PUSH, "--decision",
                       "deny", "--json")
    assert added.returncode == 0, added.stderr
    push = json.loads(added.stdout)["rule"]
    a.daemon.wait_for(lambda: written(a, dir_a / "laptop"))
    assert b"never push" not in segment_bytes(dir_a)  # sealed: the rules' text is not readable in the folder
    call = {"tool_name": "Bash", "tool_input": json.dumps({"command": "git push origin main"}), "cwd": CWD}
    assert a.daemon.call("rule_check", call).get("decision") == "deny"

    # the folder reaches B: both rules are listed there and the hook answers with A's rule
    assert relay(dir_a, dir_b, "laptop") >= 1
    b.daemon.wait_for(lambda: ids(b) == {before["id"], push["id"]}, timeout=30)
    assert {r["id"]: r for r in b.daemon.call("rule_list")["rules"]} == {before["id"]: before, push["id"]: push}
    out = decision(b.env, pre_tool("Bash", {"command": "git push origin main"}, cwd=CWD))
    assert out is not None and out["permissionDecision"] == "deny" and push["id"] in out["permissionDecisionReason"]
    asked = decision(b.env, pre_tool("Bash", {"command": "./manage.py migrate --env=prod"}, cwd=CWD))
    assert asked is not None and asked["permissionDecision"] == "ask"
    assert decision(b.env, pre_tool("Bash", {"command": "git status"}, cwd=CWD)) is None
    st = b.daemon.call("sync_status")
    assert st["rules_imported"] == 2 and st["rules_refused"] == [] and st["problems"] == []

    # removed on B: the removal reaches A, where the rule is gone and the hook is silent
    gone = mempal_cli(b.env, "rule", "remove", push["id"])
    assert gone.returncode == 0, gone.stderr
    b.daemon.wait_for(lambda: written(b, dir_b / "desktop"))
    relay(dir_b, dir_a, "desktop")
    a.daemon.wait_for(lambda: ids(a) == {before["id"]}, timeout=30)
    assert decision(a.env, pre_tool("Bash", {"command": "git push origin main"}, cwd=CWD)) is None
    assert a.daemon.call("sync_status")["rules_imported"] == 0  # B sent its removal, not A's rules back

    # A's segments read again on B (a conflicted copy of the first): the removed rule does not come back
    first = sorted((dir_b / "laptop").glob("seg-*.mps"))[0]
    shutil.copy(first, first.with_name(first.stem + " (conflicted copy 2026-12-05).mps"))
    b.daemon.wait_for(lambda: lag_of(b.daemon, "laptop") == 0)
    assert ids(b) == {before["id"]}

    # a segment (sealed with the folder's key) holding a rule `rule add` refuses: reported, the good one applied
    bad: dict[str, Any] = {**before, "id": "rbad00001", "pattern": "(a+)+$"}
    good: dict[str, Any] = {**before, "id": "rgood0001", "text": "never drop the orbit database",
                            "pattern": r"\bdropdb\s+orbit\b"}
    (dir_b / "attic").mkdir()
    records = [{"t": "rule", "id": r["id"], "rule": r} for r in (bad, good)]
    (dir_b / "attic" / "seg-0000000001.mps").write_bytes(encode("attic", 1, records, Sealer(read_key(key_file))))
    b.daemon.wait_for(lambda: b.daemon.call("sync_status")["rules_refused"], timeout=30)
    refused = b.daemon.call("sync_status")["rules_refused"]
    assert [(r["machine"], r["rule_id"]) for r in refused] == [("attic", "rbad00001")]
    assert "catastrophic" in refused[0]["error"]
    assert ids(b) == {before["id"], "rgood0001"}
    assert b.daemon.call("sync_status")["problems"] == []  # the segment was read: one record refused, not it
    shown = mempal_cli(b.env, "sync", "status")
    assert shown.returncode == 0 and "rule rbad00001 of attic (segment 1) not applied" in shown.stdout
