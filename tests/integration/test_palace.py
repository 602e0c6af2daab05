"""The palace's memory features through a real daemon: saves, duplicates, soft delete and purge, wake-up,
the knowledge graph, fact-check, AAAK, tunnels and the drawer lifecycle."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mempal.protocol import RpcError
from tests.conftest import Daemon

DECISION = "We decided to use Postgres instead of MySQL because we need JSONB and row-level security."


def cli(d: Daemon, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mempal.cli.main", *args], capture_output=True, text=True, env=d.env,
                          input=stdin, timeout=60)


@pytest.mark.timeout(180)
def test_save_duplicates_delete_purge(daemon: Daemon) -> None:
    daemon.start()
    first = daemon.call("ingest", {"text": DECISION, "wing": "acme", "importance": 5, "agent": "claude"})
    assert first["wing"] == "acme" and len(first["drawer_ids"]) == 1 and not first["similar"]
    did = first["drawer_ids"][0]
    again = daemon.call("ingest", {"text": DECISION.replace("row-level", "row level"), "wing": "acme",
                                   "dry_run": True})
    assert again["dry_run"] and again["similar"][0]["drawer_id"] == did and "warning" in again
    hits = daemon.call("search", {"query": "which database did we choose", "wing": "acme"})["hits"]
    assert hits[0]["drawer_id"] == did
    assert hits[0]["importance"] == 5 and hits[0]["memory_type"] == "decision" and hits[0]["room"] == "decisions"

    gone = daemon.call("delete", {"drawer_id": did, "reason": "superseded", "actor": "test"})
    assert gone["deleted"] == [did]
    assert daemon.call("search", {"query": "which database did we choose", "wing": "acme"})["hits"] == []
    assert daemon.call("purge", {"dry_run": True})["purged"] == 1
    assert daemon.call("purge", {})["purged"] == 1
    assert daemon.call("drawers", {"wing": "acme"})["drawers"] == []
    with pytest.raises(RpcError) as err:
        daemon.call("delete", {"drawer_id": did})
    assert err.value.code == -32001


@pytest.mark.timeout(180)
def test_wake_up_kg_factcheck_compress_tunnels(daemon: Daemon, home: Path) -> None:
    ident = home / ".config" / "mempald" / "identity.md"
    ident.parent.mkdir(parents=True, exist_ok=True)
    ident.write_text("I am Dana, I build payment systems and prefer small PRs.")
    daemon.start()
    for text, wing, room in (
        (DECISION, "acme", "decisions"),
        ("The deploy failed because the staging quota ran out; we raised it to 40 GB.", "acme", "problems"),
        ("We shipped v2.0 of the billing API to all customers today.", "acme", "planning"),
        ("We decided to keep the cron job in the monolith for now.", "zeta", "decisions"),
        ("Lunch was good, the new cafe has oat milk.", "acme", "general"),
        ("Monday standup moved to ten; the cron job review is on Friday.", "zeta", "general"),
    ):
        daemon.call("ingest", {"text": text, "wing": wing, "room": room})
    wake: dict[str, Any] = daemon.call("wake_up", {"wing": "acme", "budget": 200})
    assert wake["text"].startswith("## L0: identity\nI am Dana")
    assert "Postgres" in wake["text"] and "drawer " in wake["text"] and wake["tokens"] <= 200 + 40
    out = cli(daemon, "wake-up", "--wing", "acme", "--budget", "200")
    assert out.returncode == 0 and "tokens, wing acme)" in out.stdout

    daemon.call("kg", {"op": "add", "subject": "Alice", "predicate": "manager_of", "object": "Bob",
                       "valid_from": "2025-01-01"})
    assert daemon.call("kg", {"op": "query", "subject": "Alice"})["triples"][0]["object"] == "Bob"
    issues = daemon.call("fact_check", {"text": "Alcie is the manager of Bob."})["issues"]
    assert any(i["kind"] == "name" for i in issues)
    assert daemon.call("kg", {"op": "invalidate", "subject": "Alice", "predicate": "manager_of",
                              "object": "Bob", "ended": "2025-06-01"})["invalidated"] == 1
    stale = daemon.call("fact_check", {"text": "Alice is Bob's manager."})["issues"]
    assert any(i["kind"] == "stale" for i in stale)
    assert daemon.call("kg", {"op": "timeline", "entity": "Bob"})["triples"][0]["valid_to"]

    comp = daemon.call("compress", {"wing": "acme", "dry_run": True})
    assert comp["lossy"] is True and comp["tokens_before"] > 0 and comp["aaak"].startswith("H:")
    # the catch-all room is in every wing, so it links nothing: not a tunnel
    assert daemon.call("tunnels", {})["tunnels"] == {"decisions": ["acme", "zeta"]}
    res = daemon.call("search", {"query": "cron job monolith", "wing": "zeta"})
    assert {h["room"] for h in res["hits"]} == {"decisions", "general"}
    assert res["tunnels"] == {"decisions": ["acme"]}


@pytest.mark.timeout(120)
def test_bad_requests_get_clear_errors(daemon: Daemon) -> None:
    daemon.start()
    for method, params, code in (
        ("search", {}, -32602),
        ("search", {"query": 3}, -32602),
        ("search", {"query": "x", "since": "last tuesday-ish"}, -32602),
        ("nope", {}, -32601),
        ("ingest", {"text": "x", "importance": 9}, -32602),
        ("kg", {"op": "explode"}, -32602),
        ("watch_add", {"path": "/definitely/not/here"}, -32001),
        ("watch_add", {"path": "relative/path"}, -32602),
    ):
        with pytest.raises(RpcError) as err:
            daemon.call(method, params)
        assert err.value.code == code, (method, params, err.value.message)
    assert daemon.call("ping") == {"pong": True}


@pytest.mark.timeout(180)
def test_migrate_to_a_server_collection_and_back(daemon: Daemon, tmp_path: Path) -> None:
    daemon.start()
    for i in range(5):
        daemon.call("ingest", {"text": f"Fact number {i}: the ferry leaves at {i + 7} o'clock.", "wing": "travel"})
    target = f"path:{tmp_path / 'qdrant'}"
    out = cli(daemon, "migrate", "--to", target, "--json")
    assert out.returncode == 0, out.stderr + out.stdout
    assert '"copied": 5' in out.stdout and '"ok": true' in out.stdout
    assert daemon.stop() == 0
    back = tmp_path / "edge-copy"
    # From another store, with no daemon: the daemon's package does it (the client never opens a store).
    refused = cli(daemon, "migrate", "--from", target, "--to", str(back), "--json")
    assert refused.returncode == 2 and "mempald migrate --from" in refused.stderr
    out = subprocess.run([sys.executable, "-m", "mempald", "migrate", "--from", target, "--to", str(back), "--json"],
                         capture_output=True, text=True, env=daemon.env, timeout=120)
    assert out.returncode == 0, out.stderr + out.stdout
    assert '"copied": 5' in out.stdout
