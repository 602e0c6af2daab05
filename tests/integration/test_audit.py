"""``mempal audit``: the audit log read back, through a real daemon and the real CLI: what was saved, deleted,
restored, forgotten and purged, by whom, when and why, newest first; filtered by time and action; as JSON."""

from __future__ import annotations

import json
import time

import pytest

from tests.conftest import Daemon, mempal_cli


@pytest.mark.timeout(240)
def test_audit_tells_who_did_what_when_and_why(daemon: Daemon) -> None:
    daemon.start()
    saved = daemon.call("ingest", {"text": "We pin numpy<2 because the onnxruntime wheel needs it.",
                                   "wing": "acme"})["drawer_ids"][0]
    other = daemon.call("ingest", {"text": "The staging deploy needs the VPN up first.", "wing": "zeta"})
    daemon.idle()
    daemon.call("delete", {"drawer_id": [saved], "reason": "outdated: numpy 2 works now"})
    daemon.call("restore", {"drawer_id": [saved]})
    daemon.call("forget", {"wing": "zeta", "reason": "left the client"})
    daemon.call("purge", {})

    out = mempal_cli(daemon.env, "audit")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    actions = [ln.split()[3] for ln in lines if ln[:2] == "20"]
    assert actions == ["purge", "forget", "restore", "delete", "ingest", "ingest"], out.stdout
    assert "why: outdated: numpy 2 works now" in out.stdout and "why: left the client" in out.stdout
    assert f"restore         {saved}" in out.stdout and "wing zeta" in out.stdout

    got = json.loads(mempal_cli(daemon.env, "audit", "--action", "delete", "--json").stdout)
    assert [(e["action"], e["target"], e["reason"], e["actor"]) for e in got["entries"]] == [
        ("delete", saved, "outdated: numpy 2 works now", "user")]
    assert other["drawer_ids"]

    later = time.strftime("%Y-%m-%d", time.gmtime(time.time() + 2 * 86400))
    none = mempal_cli(daemon.env, "audit", "--since", later)
    assert none.returncode == 0 and none.stdout.strip() == "nothing in the audit log since then"
    few = json.loads(mempal_cli(daemon.env, "audit", "--limit", "2", "--json").stdout)
    assert [e["action"] for e in few["entries"]] == ["purge", "forget"]
    bad = mempal_cli(daemon.env, "audit", "--action", "explode")
    assert bad.returncode == 2 and "explode" in bad.stderr
