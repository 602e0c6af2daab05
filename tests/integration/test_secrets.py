"""Secrets: transcripts are full of keys and tokens. Before storing, well-known shapes become typed
placeholders (on by default; ``ingest.redact_secrets = false`` keeps them verbatim); ``status`` counts
redactions per source; a ``<private>...</private>`` span is never stored, whatever the setting."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mempald.normalize.claude_code import parse_lines
from mempald.text.redact import redact, strip_private
from tests.conftest import Daemon
from tests.integration.test_crash import keyword_idle
from tests.integration.test_skeleton import assistant_line, lines_of, user_line

SID = "5ec2e7a5-0000-4000-8000-0000000000a1"
AWS = "AKIA2E0A8F3B244C9986"
GITHUB = "ghp_" + "R8tA2kq9ZxLm4VbN7cPw3yHs6JdE1fGu0iTo"
SLACK = "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"
BEARER = "eW91cl9hY2Nlc3NfdG9rZW5fMjAyNl9tZW1wYWw9"
PEM_BODY = "MIIEpAIBAAKCAQEAwJ8s1q0Xo5k3Rr7T2q9ZlM0bVx8nQ4uYw6eHc1sAaDf7gJkL"
PEM = f"-----BEGIN RSA PRIVATE KEY-----\n{PEM_BODY}\nq9ZlM0bVx8nQ4uYw6eHc1sAaDf7gJkLmNoPqRsTuVwXyZ01234==\n" \
      "-----END RSA PRIVATE KEY-----"
PRIVATE = "my home address is 12 Quillfeather Lane"
DOC_TOKEN = "ghp_" + "Q1w2E3r4T5y6U7i8O9p0AaSsDdFfGgHhJjKk"
VERBATIM = (AWS, GITHUB, SLACK, BEARER, PEM_BODY)
KINDS = ("aws_access_key", "github_token", "private_key", "slack_token", "bearer_token")


def transcript(path: Path) -> None:
    turns = [
        (f"Our CI fails. The deploy key is {AWS} and the GitHub token {GITHUB}, can you check?",
         "Rotate both. Never paste keys into chats."),
        (f"Here is the server key, why does ssh reject it?\n{PEM}", "The key has the wrong permissions."),
        (f"The Slack bot uses {SLACK}. <private>{PRIVATE}</private> Why does it post twice?",
         "Two workers share the token; keep one."),
        ("The curl call fails", f"Send the header: curl -H 'Authorization: Bearer {BEARER}' https://api.x/v1"),
    ]
    with path.open("w") as fh:
        for i, (q, a) in enumerate(turns):
            ts = f"2026-08-01T12:0{i}:00.000Z"
            fh.write(user_line(SID, "/home/u/keys", q, f"s-u{i}", ts) + "\n")
            fh.write(assistant_line(SID, "/home/u/keys", a, f"s-a{i}", f"s-u{i}", ts) + "\n")


def setup_sources(home: Path) -> tuple[Path, Path]:
    proj = home / ".claude" / "projects" / "-home-u-keys"
    proj.mkdir(parents=True)
    tx = proj / f"{SID}.jsonl"
    transcript(tx)
    notes = home / "notes"
    notes.mkdir()
    (notes / "setup.md").write_text(f"# Setup\n\nExport GH_TOKEN={DOC_TOKEN} before running the release script.\n")
    cfg = Path(home / ".config" / "mempald")
    cfg.mkdir(parents=True, exist_ok=True)
    (cfg / "config.toml").write_text(f'[[sources.watch]]\npath = "{notes}"\nmode = "convos"\n')
    return tx, notes


def payloads(d: Daemon) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    offset = None
    while True:
        page = d.call("drawers", {"limit": 1000, "offset": offset})
        out.extend(page["drawers"])
        offset = page["next"]
        if offset is None:
            return out


def expected_redactions(tx: Path) -> int:
    return sum(sum(redact(strip_private(ex.render()))[1].values()) for ex in parse_lines(lines_of(tx)))


def by_source(st: dict[str, Any]) -> dict[str, int]:
    return {s["key"].split(":", 1)[0] + ":" + Path(s["path"]).name: s["redactions"] for s in st["sources"]}


@pytest.mark.timeout(240)
def test_secrets_are_redacted_and_counted_per_source(daemon: Daemon, home: Path) -> None:
    tx, _notes = setup_sources(home)
    daemon.start()
    st = keyword_idle(daemon, 120)
    daemon.wait_for(lambda: len(payloads(daemon)) == 5, timeout=60)  # 4 exchanges + the notes file
    everything = json.dumps(payloads(daemon))
    for secret in (*VERBATIM, DOC_TOKEN, PRIVATE, "Quillfeather"):
        assert secret not in everything, f"{secret[:12]}... was stored verbatim"
    for kind in KINDS:
        assert f"[REDACTED:{kind}]" in everything, kind
    # The rest of the prompt around a <private> span is kept.
    assert "Why does it post twice?" in everything and "The Slack bot uses" in everything
    # Not findable by search either (the keyword index is built from the redacted text).
    assert all(SLACK not in json.dumps(h) for h in daemon.call("search", {"query": SLACK})["hits"])

    st = daemon.call("status")
    counts = by_source(st)
    assert counts["claude_code:projects"] == expected_redactions(tx) >= 5
    assert counts["convos:notes"] == 1


@pytest.mark.timeout(240)
def test_appending_does_not_count_a_secret_twice(daemon: Daemon, home: Path) -> None:
    tx, _notes = setup_sources(home)
    daemon.start()
    keyword_idle(daemon, 120)
    daemon.wait_for(lambda: len(payloads(daemon)) == 5, timeout=60)
    before = by_source(daemon.call("status"))["claude_code:projects"]
    with tx.open("a") as fh:  # the last exchange is re-read when the file grows
        fh.write(user_line(SID, "/home/u/keys", "Thanks, that fixed it.", "s-u9", "2026-08-01T13:00:00.000Z") + "\n")
    daemon.wait_for(lambda: len(payloads(daemon)) == 6, timeout=60)
    keyword_idle(daemon, 60)
    assert by_source(daemon.call("status"))["claude_code:projects"] == before == expected_redactions(tx)


@pytest.mark.timeout(240)
def test_redaction_off_keeps_secrets_but_never_private_spans(daemon: Daemon, home: Path) -> None:
    setup_sources(home)
    daemon.start(extra_env={"MEMPAL_INGEST_REDACT_SECRETS": "false"})
    keyword_idle(daemon, 120)
    daemon.wait_for(lambda: len(payloads(daemon)) == 5, timeout=60)
    everything = json.dumps(payloads(daemon))
    for secret in (AWS, GITHUB, SLACK, BEARER, PEM_BODY, DOC_TOKEN):
        assert secret in everything, secret[:12]
    assert "[REDACTED:" not in everything
    assert PRIVATE not in everything and "Quillfeather" not in everything
    assert all(v == 0 for v in by_source(daemon.call("status")).values())
