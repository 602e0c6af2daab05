"""Secrets: transcripts are full of keys and tokens. Before storing, well-known shapes become typed
placeholders (on by default; ``ingest.redact_secrets = false`` keeps them verbatim); ``status`` counts
redactions per source; a ``<private>...</private>`` span is never stored, whatever the setting."""

from __future__ import annotations

import json
import sqlite3
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
    keyword_idle(daemon, 120)
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

    # status serves figures up to a second old while embedding: wait for the counters, then check them
    want = expected_redactions(tx)
    counts = daemon.wait_for(lambda: (c := by_source(daemon.call("status")))["claude_code:projects"] == want and
                             c["convos:notes"] == 1 and c, timeout=30)
    assert counts["claude_code:projects"] == expected_redactions(tx) >= 5
    assert counts["convos:notes"] == 1


@pytest.mark.timeout(240)
def test_appending_does_not_count_a_secret_twice(daemon: Daemon, home: Path) -> None:
    tx, _notes = setup_sources(home)
    daemon.start()
    keyword_idle(daemon, 120)
    daemon.wait_for(lambda: len(payloads(daemon)) == 5, timeout=60)
    daemon.idle()  # nothing left to embed: status figures are fresh (while busy they may be a second old)
    before = by_source(daemon.call("status"))["claude_code:projects"]
    with tx.open("a") as fh:  # the last exchange is re-read when the file grows
        fh.write(user_line(SID, "/home/u/keys", "Thanks, that fixed it.", "s-u9", "2026-08-01T13:00:00.000Z") + "\n")
    daemon.wait_for(lambda: len(payloads(daemon)) == 6, timeout=60)
    daemon.idle()
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


# --- issue #22 point 4: what got through, and every path by which text enters or leaves -------------------

BREAK_IT = {
    "curl_user": ("curl -u admin:Adm1nPass https://ci.internal/api", "Adm1nPass"),
    "curl_long": ("curl --user deploy:d3pl0yT0ken-77 -X POST https://ci.internal/hooks", "d3pl0yT0ken-77"),
    "db_pass": ("DB_PASS=Qz7rT2wLp9", "Qz7rT2wLp9"),
    "pgpassword": ("PGPASSWORD=PgS3cret2026 psql -h db -U app", "PgS3cret2026"),
    "mailgun": ("MAILGUN_KEY=key-7b2f9c1e4a8d3f6b0e5c9a2d7f4b1e8c", "key-7b2f9c1e4a8d3f6b0e5c9a2d7f4b1e8c"),
    "redis": ("REDIS_URL=redis://:R3d1sPw0rd@cache.internal:6379/0", "R3d1sPw0rd"),
    "mysql": ("mysql -u root -pMyS3cretDb shop < dump.sql", "MyS3cretDb"),
    "docker": ("docker login -u acme -p dckr_pat_9c4e1b7a2f8d5c3e6b0a9f4d2c7e1b8a reg.example.com",
               "dckr_pat_9c4e1b7a2f8d5c3e6b0a9f4d2c7e1b8a"),
    "hf": ("HF_TOKEN=hf_Qw3eRt5yUi7oPa9sDf1gHj3kLz5xCv7bNm", "hf_Qw3eRt5yUi7oPa9sDf1gHj3kLz5xCv7bNm"),
}
PARTNER_PRIVATE = "the alarm code is 4-4-1-9"
LOOKS_SECRET_BUT_IS_NOT = "export OPENAI_API_KEY=your-key-goes-here"


def raw_bytes_under(root: Path) -> bytes:
    out = b""
    for p in root.rglob("*"):
        if p.is_file():
            out += p.read_bytes()
    return out


@pytest.mark.timeout(300)
def test_secrets_never_stored_nor_passed_on(daemon: Daemon, home: Path) -> None:
    cwd = "/home/u/breakit"
    proj = home / ".claude" / "projects" / "-home-u-breakit"
    proj.mkdir(parents=True)
    tx = proj / "5ec2e7a5-0000-4000-8000-0000000000b2.jsonl"
    with tx.open("w") as fh:
        for i, (cmd, _secret) in enumerate(BREAK_IT.values()):
            ts = f"2026-08-02T10:{i:02d}:00.000Z"
            fh.write(user_line(tx.stem, cwd, f"why does this fail?\n{cmd}", f"b-u{i}", ts) + "\n")
            fh.write(assistant_line(tx.stem, cwd, f"Run it again with -v: {cmd}", f"b-a{i}", f"b-u{i}", ts) + "\n")
        fh.write(user_line(tx.stem, cwd, f"<private>{PARTNER_PRIVATE}</private> and {LOOKS_SECRET_BUT_IS_NOT}",
                           "b-u99", "2026-08-02T11:00:00.000Z") + "\n")
    daemon.start()
    keyword_idle(daemon, 120)
    daemon.wait_for(lambda: len(payloads(daemon)) == len(BREAK_IT) + 1, timeout=60)
    stored = json.dumps(payloads(daemon))
    assert LOOKS_SECRET_BUT_IS_NOT in stored  # a placeholder is not a secret
    # the partner agent peeks at Claude's session: redacted, and nothing of a <private> span
    peek = json.dumps(daemon.call("peek_partner", {"cwd": cwd, "partner": "claude", "n": 20}))
    assert "why does this fail?" in peek
    # a cowork message and a knowledge-graph fact carrying secrets
    pushed = daemon.call("cowork_push", {"text": f"deploy with {BREAK_IT['docker'][0]} <private>{PARTNER_PRIVATE}"
                                                 "</private> then ping me", "to": "codex", "from": "claude",
                                         "cwd": cwd})
    assert "[REDACTED:" in json.dumps(pushed)
    fact = daemon.call("kg", {"op": "add", "subject": "ci", "predicate": "logs in with",
                              "object": f"password is {BREAK_IT['curl_user'][1]}"})
    assert BREAK_IT["curl_user"][1] not in json.dumps(fact)
    drained = json.dumps(daemon.call("cowork_drain", {"target": "codex", "cwd": cwd}))
    assert "then ping me" in drained
    for _cmd, secret in BREAK_IT.values():  # not keyword-searchable either
        assert all(secret not in json.dumps(h) for h in daemon.call("search", {"query": secret})["hits"])
    daemon.stop()  # flushed: the WALs hold whatever was written
    on_disk = raw_bytes_under(Path(daemon.env["MEMPAL_DATA_DIR"]))
    for name, (_cmd, secret) in BREAK_IT.items():
        for where, text in (("drawers", stored), ("peek_partner", peek), ("cowork", drained)):
            assert secret not in text, f"{name} in {where}"
        assert secret.encode() not in on_disk, f"{name} on disk"
    assert PARTNER_PRIVATE not in peek and PARTNER_PRIVATE not in drained
    assert PARTNER_PRIVATE.encode() not in on_disk


# --- issue #47 H5: metadata (titles, branch, cwd, reasons) was never redacted --------------------------------

TITLE_TOKEN = "ghp_" + "T1tL3xK9mP2vL7qR4tY8wZ3nB5c6D0eF1gH2jK"  # in a custom-title, as in the attack
AI_TITLE_PASSWORD = "Ai7itlePassw0rd"  # an ai-title: "password is ..."
PROMPT_KEY = "AKIA" + "Q7XK2M9PL4RT8VWZ"  # a last-prompt (the only title of its session)
BRANCH_TOKEN = "glpat-" + "Br4nchXq7Lm2Np9Rt4Vw"  # a git branch named after the token it rotates
CWD_TOKEN = "hf_" + "CwdQm3Xk9Lm2Np7Qr4St8Uv1Wx6Yz3Ab5Cd"  # a working directory holding a token
DELETE_KEY = "sk_live_" + "51DeLeTe9xK2mP7vL4qR8tY3wZ"  # in a delete reason
FORGET_TOKEN = "xoxb-" + "2718281828-3141592653589-ForgetReasonAbCdEfGh"  # in a forget reason
H5_SECRETS = (TITLE_TOKEN, AI_TITLE_PASSWORD, PROMPT_KEY, BRANCH_TOKEN, CWD_TOKEN, DELETE_KEY, FORGET_TOKEN)
H5_SESSIONS = ("5ec2e7a5-0000-4000-8000-0000000000c1", "5ec2e7a5-0000-4000-8000-0000000000c2",
               "5ec2e7a5-0000-4000-8000-0000000000c3")


def titled_transcripts(home: Path) -> Path:
    """Three sessions titled by a custom-title, an ai-title and a last-prompt, each holding a secret; the first
    runs in a folder and on a branch whose names hold tokens. The exchanges themselves hold none."""
    cwd = f"/home/u/{CWD_TOKEN}/app"
    proj = home / ".claude" / "projects" / "-home-u-meta"
    proj.mkdir(parents=True)
    titles = [{"type": "custom-title", "customTitle": f"prod token {TITLE_TOKEN}"},
              {"type": "ai-title", "aiTitle": f"Deploy fails: password is {AI_TITLE_PASSWORD}"},
              {"type": "last-prompt", "lastPrompt": f"why is {PROMPT_KEY} rejected by the bucket policy?"}]
    for n, (sid, title) in enumerate(zip(H5_SESSIONS, titles, strict=True)):
        with (proj / f"{sid}.jsonl").open("w") as fh:
            for i in range(2):
                ts = f"2026-11-01T09:{n}{i}:00.000Z"
                u = json.loads(user_line(sid, cwd, f"Step {i}: the release pipeline stalls at upload ({n})",
                                         f"m{n}-u{i}", ts))
                a = json.loads(assistant_line(sid, cwd, f"Retry the upload stage with a longer timeout ({n}.{i}).",
                                              f"m{n}-a{i}", f"m{n}-u{i}", ts))
                for rec in (u, a):
                    rec["gitBranch"] = f"rotate/{BRANCH_TOKEN}"
                    fh.write(json.dumps(rec) + "\n")
            fh.write(json.dumps({**title, "sessionId": sid}) + "\n")
    return proj


def leaks(text: str) -> list[str]:
    return [s[:10] for s in H5_SECRETS if s in text]


@pytest.mark.anyio
@pytest.mark.timeout(300)
async def test_metadata_is_redacted_wherever_it_goes(daemon: Daemon, home: Path, tmp_path: Path) -> None:
    """The attack: secrets in session titles (custom-title, ai-title, last-prompt), the git branch, the working
    directory, a delete reason (given over MCP) and a forget reason; then look for them in search (over the socket
    and MCP), the viewer's methods, exports (Markdown file names included), the audit table, the forget list and
    every byte under the data dir."""
    from tests.integration.test_mcp import shim, text_of

    titled_transcripts(home)
    daemon.start()
    keyword_idle(daemon, 120)
    daemon.wait_for(lambda: len(payloads(daemon)) == 6, timeout=60)
    daemon.wait_for(lambda: all(p.get("title") for p in payloads(daemon)), timeout=30)
    stored = payloads(daemon)
    assert not leaks(json.dumps(stored))
    titles = {p["session_id"]: p["title"] for p in stored}
    assert titles[H5_SESSIONS[0]] == "prod token [REDACTED:github_token]"  # the rest of the title is kept
    assert "[REDACTED:password]" in titles[H5_SESSIONS[1]] and "[REDACTED:aws_access_key]" in titles[H5_SESSIONS[2]]
    assert {p["git_branch"] for p in stored} == {"rotate/[REDACTED:gitlab_token]"}
    assert {p["cwd"] for p in stored} == {"/home/u/[REDACTED:huggingface_token]/app"}

    hits = daemon.call("search", {"query": "release pipeline stalls at upload", "min_score": 0})["hits"]
    assert hits and not leaks(json.dumps(hits))
    for secret in H5_SECRETS:  # not keyword-findable either
        assert not leaks(json.dumps(daemon.call("search", {"query": secret})["hits"]))
    wings = [w["wing"] if isinstance(w, dict) else w for w in daemon.call("list_wings")["wings"]]
    timeline = [daemon.call("wing_sessions", {"wing": w}) for w in wings]
    assert timeline and not leaks(json.dumps(timeline))

    victim = next(p for p in stored if p["session_id"] == H5_SESSIONS[0])
    async with shim(daemon.env, home, "claude-code") as (session, _init):
        found = await session.call_tool("search", {"query": "release pipeline stalls at upload"})
        assert not found.isError and "upload" in text_of(found) and not leaks(text_of(found)), text_of(found)
        gone = await session.call_tool("delete", {"drawer_id": victim["drawer_id"],
                                                  "reason": f"it shows the key {DELETE_KEY}"})
        assert not gone.isError and not leaks(text_of(gone)), text_of(gone)
    daemon.call("forget", {"session": H5_SESSIONS[2], "reason": f"pasted {FORGET_TOKEN} by mistake",
                           "actor": "user"})
    shown = daemon.call("session_drawers", {"session_id": H5_SESSIONS[0], "include_deleted": True})
    assert "[REDACTED:stripe_key]" in json.dumps(shown) and not leaks(json.dumps(shown))

    notes = tmp_path / "notes"
    md = daemon.call("export", {"output": str(notes), "format": "md"})
    assert md["drawers"] >= 3
    exported = tmp_path / "palace.jsonl"
    daemon.call("export", {"output": str(exported), "include_deleted": True})
    names = [p.relative_to(notes).as_posix() for p in notes.rglob("*")]
    assert any("prod token" in n for n in names), names  # the title names the note, without the token
    assert not leaks("\n".join(names))
    assert not leaks("".join(p.read_text() for p in notes.rglob("*.md")) + exported.read_text())

    daemon.stop()  # flushed: the WALs hold whatever was written
    state = sqlite3.connect(f"file:{Path(daemon.env['MEMPAL_DATA_DIR']) / 'state.sqlite3'}?mode=ro", uri=True)
    audit = state.execute("SELECT target, reason, detail FROM audit").fetchall()
    rules = state.execute("SELECT reason FROM forgotten").fetchall()
    cursors = state.execute("SELECT context FROM cursors").fetchall()
    state.close()
    assert any("[REDACTED:stripe_key]" in r[1] for r in audit) and any("[REDACTED:slack_token]" in r[1] for r in audit)
    assert rules and all("[REDACTED:slack_token]" in r[0] for r in rules)
    assert not leaks(json.dumps([audit, rules, cursors]))
    on_disk = raw_bytes_under(Path(daemon.env["MEMPAL_DATA_DIR"]))
    assert not [s[:10] for s in H5_SECRETS if s.encode() in on_disk]
