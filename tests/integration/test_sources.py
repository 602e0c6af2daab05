"""Every source a user has, through a real daemon: Codex sessions (watched by default), a ChatGPT export
and a Slack export added with `mempal watch add`, and a code repo in projects mode."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Daemon, copy_tree

ROLLOUT = "rollout-2025-11-22T21-45-35-019aad50-a7e6-7422-b7a8-0b384290624f.jsonl"


def hits(d: Daemon, query: str, **kw: Any) -> list[dict[str, Any]]:
    result: list[dict[str, Any]] = d.call("search", {"query": query, **kw})["hits"]
    return result


def mempal(d: Daemon, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mempal.cli.main", *args], capture_output=True, text=True, env=d.env,
                          timeout=120)


@pytest.mark.timeout(300)
def test_every_source_is_searchable(daemon: Daemon, home: Path, formats_dir: Path, tmp_path: Path) -> None:
    sessions = home / ".codex" / "sessions" / "2025" / "11" / "22"
    sessions.mkdir(parents=True)
    shutil.copy(formats_dir / "codex" / "rtchess_turn_aborted_excerpt.jsonl", sessions / ROLLOUT)
    chatgpt = tmp_path / "exports" / "chatgpt"
    chatgpt.mkdir(parents=True)
    shutil.copy(formats_dir / "chatgpt" / "conversations.subset.json", chatgpt / "conversations.json")
    slack = tmp_path / "exports" / "slack"
    copy_tree(formats_dir / "slack" / "official_export_2016_houstondatavis", slack)
    repo = tmp_path / "repo"
    (repo / "docs").mkdir(parents=True)
    (repo / "src").mkdir()
    (repo / "docs" / "deploy.md").write_text(
        "# Deploying\n\nThe flamingo service deploys with `make ship`; it needs the VAULT_ADDR variable.\n\n"
        "Rollbacks use the previous image tag from the release notes.\n")
    (repo / "src" / "app.py").write_text("def greet(name):\n    return f'hello {name} from the pelican module'\n" * 3)
    (repo / ".gitignore").write_text("secret/\n")
    (repo / "secret").mkdir()
    (repo / "secret" / "keys.md").write_text("this file is gitignored and must never be stored, pangolin\n")

    daemon.start()
    for path, mode in ((chatgpt, "convos"), (slack, "convos"), (repo, "projects")):
        out = mempal(daemon, "watch", "add", str(path), "--mode", mode)
        assert out.returncode == 0, out.stderr
    listed = mempal(daemon, "watch", "list").stdout
    assert str(chatgpt) in listed and str(repo) in listed
    st = daemon.idle(timeout=240)
    assert {s["mode"] for s in st["sources"]} >= {"convos", "projects"}

    codex = hits(daemon, "chess variant where pieces have a cooldown instead of turns", source_kind="codex")
    assert codex and codex[0]["agent"] == "codex"
    gpt = hits(daemon, "summarize introduction to multivariate statistics", source_kind="chatgpt")
    assert gpt and gpt[0]["title"] == "Intro to Multivariate Stats."
    sl = hits(daemon, "OpenVis Conf collaborative community notes", source_kind="slack")
    assert sl and "OpenVis" in sl[0]["text"]
    code = hits(daemon, "how does the flamingo service deploy", wing="repo")
    assert code[0]["source_path"] == str(repo / "docs" / "deploy.md") and code[0]["room"] == "documentation"
    assert hits(daemon, "pangolin", wing="repo") == [] or all("pangolin" not in h["text"] for h in
                                                              hits(daemon, "pangolin"))

    # Editing a code file replaces its drawers; deleting it removes them.
    (repo / "docs" / "deploy.md").write_text("# Deploying\n\nThe heron service now deploys with `make launch` "
                                              "and a signed manifest from the release bucket.\n")
    daemon.wait_for(lambda: hits(daemon, "heron service deploys", wing="repo"), timeout=30)
    daemon.wait_for(lambda: not any("flamingo" in h["text"] for h in hits(daemon, "flamingo service", wing="repo")),
                    timeout=30)
    (repo / "src" / "app.py").unlink()
    daemon.wait_for(lambda: not any("pelican" in h["text"] for h in hits(daemon, "pelican module", wing="repo")),
                    timeout=30)

    # Deleting a transcript keeps its memories.
    (sessions / ROLLOUT).unlink()
    daemon.call("status")
    assert hits(daemon, "chess variant where pieces have a cooldown", source_kind="codex")

    # Removing a watch stops watching but keeps drawers.
    assert mempal(daemon, "watch", "remove", str(slack)).returncode == 0
    assert hits(daemon, "OpenVis Conf collaborative community notes", source_kind="slack")


@pytest.mark.timeout(180)
def test_mine_dry_run_and_summary(daemon: Daemon, formats_dir: Path, tmp_path: Path) -> None:
    gem = tmp_path / "gemini"
    gem.mkdir()
    for f in (formats_dir / "gemini_cli").glob("*.json"):
        shutil.copy(f, gem / f.name)
    daemon.start()
    dry = mempal(daemon, "mine", str(gem), "--dry-run")
    assert dry.returncode == 0 and "would read 2 files" in dry.stdout
    out = mempal(daemon, "mine", str(gem), "--json")
    assert out.returncode == 0, out.stderr
    assert '"files": 2' in out.stdout and '"errors": []' in out.stdout
    assert mempal(daemon, "mine", str(tmp_path / "nope")).returncode == 1


@pytest.mark.timeout(240)
def test_exports_folder_with_a_slack_export_inside(daemon: Daemon, formats_dir: Path, tmp_path: Path) -> None:
    """A folder of exports in any format: a Slack export inside it is read as one unit (not as JSON text), a
    JSON file in no known format is skipped and counted, plain notes are text, and a new day file is found."""
    exports = tmp_path / "exports"
    team = exports / "team-slack"
    copy_tree(formats_dir / "slack" / "official_export_2016_houstondatavis", team)
    (exports / "chatgpt").mkdir()
    shutil.copy(formats_dir / "chatgpt" / "conversations.subset.json", exports / "chatgpt" / "conversations.json")
    (exports / "package.json").write_text('{"name": "kestrel-tools", "version": "1.0.0"}\n')
    (exports / "notes.txt").write_text("The kingfisher rollout waits for the new load balancer.\n")

    daemon.start()
    assert mempal(daemon, "watch", "add", str(exports)).returncode == 0
    st = daemon.idle(timeout=200)
    src = next(s for s in st["sources"] if s["path"] == str(exports))
    assert src["format"] == "auto" and src["skipped"] == {"unknown_format": 1} and src["errors"] == 0

    sl = hits(daemon, "OpenVis Conf collaborative community notes", source_kind="slack")
    assert sl and sl[0]["wing"] == "team-slack" and sl[0]["source_path"] == str(team)
    assert "amandashih" in str(hits(daemon, "meetup notes typed during the presentation", source_kind="slack"))
    text = hits(daemon, "kingfisher rollout load balancer", source_kind="text")
    assert [h["source_path"] for h in text] == [str(exports / "notes.txt")]  # no Slack file stored as text
    assert not [h for h in hits(daemon, "kestrel-tools version") if "kestrel" in h["text"]]

    day = [{"type": "message", "user": "U064SRKPD", "ts": "1454328000.000100",
            "text": "The heron migration of the meetup site is scheduled for Tuesday night."}]
    (team / "general" / "2016-02-01.json").write_text(json.dumps(day))

    def heron() -> list[dict[str, Any]]:
        return [h for h in hits(daemon, "heron migration meetup site", source_kind="slack") if "heron" in h["text"]]

    daemon.wait_for(heron, timeout=30)
    found = heron()[0]
    assert found["wing"] == "team-slack" and "Amanda Shih: The heron" in found["text"]  # names from users.json


@pytest.mark.timeout(300)
def test_a_lone_surrogate_costs_one_character_not_the_session(daemon: Daemon, home: Path) -> None:
    """Issue #22 point 2: one assistant line with ``"text":"ok \\ud83d"`` (half an emoji, JSON-escaped, as
    Node writes a string cut inside a surrogate pair) used to make the BM25 encoder raise: the batch failed,
    the cursor never advanced, and nothing of the file was stored, then or later."""
    proj = home / ".claude" / "projects" / "-home-u-emoji"
    proj.mkdir(parents=True)
    tx = proj / "5ec2e7a5-0000-4000-8000-00000000e001.jsonl"
    sid = tx.stem

    def turn(i: int, prompt: str, answer_json: str) -> str:
        user = json.dumps({"type": "user", "sessionId": sid, "cwd": "/home/u/emoji", "uuid": f"e-u{i}",
                           "parentUuid": None, "isSidechain": False, "timestamp": f"2026-08-03T10:0{i}:00.000Z",
                           "message": {"role": "user", "content": prompt}})
        # written by hand: json.dumps would refuse to write a lone surrogate the way Node does
        answer = (f'{{"type":"assistant","sessionId":"{sid}","cwd":"/home/u/emoji","uuid":"e-a{i}",'
                  f'"parentUuid":"e-u{i}","isSidechain":false,"timestamp":"2026-08-03T10:0{i}:30.000Z",'
                  f'"message":{{"id":"msg_e{i}","role":"assistant","content":[{{"type":"text",'
                  f'"text":"{answer_json}"}}]}}}}')
        return user + "\n" + answer + "\n"

    with tx.open("w") as fh:
        fh.write(turn(0, "does the osprey build pass?", "yes, the osprey build passes"))
        fh.write(turn(1, "and the albatross deploy?", "ok \\ud83d"))  # the lone high surrogate
        fh.write(turn(2, "what about the cormorant tests?", "all cormorant tests green \\ud83d\\ude00"))
    daemon.start()
    daemon.idle()
    assert hits(daemon, "osprey build") and hits(daemon, "cormorant tests")
    albatross = [h for h in hits(daemon, "albatross deploy") if "albatross" in h["text"]]
    assert albatross and albatross[0]["text"].endswith("ok \ufffd")  # that one character, nothing else
    with tx.open("a") as fh:  # later appends are read too: the cursor moved on
        fh.write(turn(3, "is the pelican release out?", "pelican shipped \\udc00 at noon"))
        fh.write(turn(4, "and the heron docs?", "heron docs are up"))
    daemon.wait_for(lambda: hits(daemon, "heron docs"), timeout=60)
    st = daemon.idle()
    src = next(s for s in st["sources"] if s["key"].startswith("claude_code:"))
    assert src["exchanges"] == 5 and src["errors"] == 0
    pelican = [h for h in hits(daemon, "pelican release") if "pelican" in h["text"]]
    assert pelican and "pelican shipped \ufffd at noon" in pelican[0]["text"]
    assert "😀" in next(h for h in hits(daemon, "cormorant tests") if "cormorant" in h["text"])["text"]
    inspected = daemon.call("inspect", {"path": str(tx)})  # the inspection answers too (its text is encodable)
    assert inspected["prompts"] == 5


@pytest.mark.timeout(240)
def test_a_default_root_created_after_the_start_is_watched_without_a_reload(daemon: Daemon, home: Path,
                                                                           formats_dir: Path) -> None:
    """Codex run for the first time after the daemon started: ``~/.codex/sessions`` did not exist at start (and
    ``~/.codex`` neither); it is read as soon as it appears, with no SIGHUP and no restart. (The reconcile scan
    runs once an hour here, so only the watch can find it.)"""
    assert not (home / ".codex").exists()
    daemon.start(extra_env={"MEMPAL_INGEST_RECONCILE_INTERVAL_S": "3600"})
    daemon.idle()
    assert not any(s["key"].startswith("codex:") for s in daemon.call("status")["sources"])
    sessions = home / ".codex" / "sessions" / "2025" / "11" / "22"
    sessions.mkdir(parents=True)
    shutil.copy(formats_dir / "codex" / "rtchess_turn_aborted_excerpt.jsonl", sessions / ROLLOUT)
    query = "chess variant where pieces have a cooldown instead of turns"
    codex = daemon.wait_for(lambda: hits(daemon, query, source_kind="codex"), timeout=60)
    assert codex[0]["agent"] == "codex"
    assert any(s["key"].startswith("codex:") for s in daemon.call("status")["sources"])
    # and a session written later into the watched root is read by its event
    later = home / ".codex" / "sessions" / "2025" / "11" / "23"
    later.mkdir(parents=True)
    text = (formats_dir / "codex" / "rtchess_turn_aborted_excerpt.jsonl").read_text()
    (later / ROLLOUT.replace("019aad50", "019aad51")).write_text(text)

    def codex_files() -> int:
        return sum(int(s.get("files") or 0) for s in daemon.call("status")["sources"] if s["key"].startswith("codex:"))

    daemon.wait_for(lambda: codex_files() >= 2, timeout=60)
