"""Issue 47 ("Break-it, round two"): reading users' files unsafely. Each test does what the attack did, against
the real daemon: a sparse 1.5 GB ``huge.md`` and a FIFO ``x.md`` given to ``pack`` (and dropped in a watched
pack folder), FIFOs named ``.mempalignore`` / ``.gitignore`` in a watched project, FIFOs among the transcripts
``peek_partner`` looks through, called many times at once. Nothing is waited on, memory stays bounded, every
file not read is named with its reason, and the daemon goes on answering."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Daemon, mempal_cli
from tests.integration.test_crash import keyword_idle
from tests.integration.test_skeleton import assistant_line, user_line
from tests.integration.test_special_files import ENV, healthy, timed_status, vm_kb

NOTES = {
    "a.md": "# Deploys\n\nThe deploy runs on kumquat servers every Tuesday.\n\n## Rollback\n\n"
            "A rollback restores the previous image within five minutes.\n",
    "b.md": "# Staging\n\nZebras guard the staging cluster at night.\n\n## Access\n\n"
            "Staging access needs a ticket approved by the platform team.\n",
}


def _hostile_notes(root: Path) -> Path:
    root.mkdir()
    for name, text in NOTES.items():
        (root / name).write_text(text)
    with (root / "huge.md").open("wb") as fh:
        fh.truncate(1536 * 1024 * 1024)  # the finding's sparse 1.5 GB markdown: nothing on disk
    os.mkfifo(root / "x.md")
    (root / "zero.md").symlink_to("/dev/zero")
    return root


def _found(d: Daemon, query: str, path: Path) -> bool:
    return any(h["source_path"] == str(path) for h in d.call("search", {"query": query})["hits"])


def _skipped(result: dict[str, Any]) -> dict[str, str]:
    return {s["file"]: s["reason"] for s in result["skipped"]}


@pytest.mark.timeout(300)
def test_pack_skips_a_sparse_huge_md_a_fifo_and_a_device_and_names_them(daemon: Daemon, tmp_path: Path) -> None:
    notes = _hostile_notes(tmp_path / "notes")
    daemon.start(extra_env=ENV)
    assert daemon.proc is not None
    before = vm_kb(daemon.proc.pid, "VmHWM")
    t0 = time.monotonic()
    res = daemon.call("pack", {"dir": str(notes), "output": str(tmp_path / "packed")}, timeout=240)
    took = time.monotonic() - t0
    assert _skipped(res) == {"huge.md": "too_large", "x.md": "fifo", "zero.md": "device"}, res["skipped"]
    huge = next(s for s in res["skipped"] if s["file"] == "huge.md")
    assert "1,610,612,736 bytes" in huge["detail"], huge
    assert res["header"]["files"] == 2, res["header"]
    text = (tmp_path / "packed" / "knowledge_base.md").read_text()
    assert "kumquat" in text or "Deploys" in text, text[:2000]
    kb = json.loads((tmp_path / "packed" / "knowledge_base.json").read_text())
    assert {s["file"] for s in kb["skipped"]} == {"huge.md", "x.md", "zero.md"}
    grown_mb = (vm_kb(daemon.proc.pid, "VmHWM") - before) / 1024
    print(f"RELIABILITY issue47 pack_hostile took_s={took:.1f} peak_rss_growth_mb={grown_mb:.0f}")
    assert grown_mb < 300, f"peak memory grew by {grown_mb:.0f} MB"

    # Many packs of the folder at once: none waits on the FIFO, so no worker thread is left stuck.
    results: list[Any] = []

    def pack_again(i: int) -> None:
        try:
            results.append(daemon.call("pack", {"dir": str(notes), "output": str(tmp_path / f"packed-{i}")},
                                       timeout=240))
        except Exception as exc:
            results.append(exc)

    threads = [threading.Thread(target=pack_again, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(240)
    assert len(results) == 6 and all(isinstance(r, dict) and "x.md" in _skipped(r) for r in results), results
    assert max(timed_status(daemon) for _ in range(3)) < 2.0
    healthy(daemon)


@pytest.mark.timeout(300)
def test_a_watched_pack_folder_repacks_past_a_dropped_huge_md_and_fifo(daemon: Daemon, tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    for name, text in NOTES.items():
        (notes / name).write_text(text)
    out = tmp_path / "watched-pack"
    daemon.start(extra_env=ENV)
    assert daemon.proc is not None
    daemon.call("watch_add", {"path": str(notes), "mode": "pack", "wing": "kb", "output": str(out)})
    kb_json = out / "knowledge_base.json"
    daemon.wait_for(kb_json.is_file, timeout=240, interval=0.5)
    before = vm_kb(daemon.proc.pid, "VmHWM")
    # the attack: drop the files in the watched folder; any change there re-packs it
    with (notes / "huge.md").open("wb") as fh:
        fh.truncate(1536 * 1024 * 1024)
    os.mkfifo(notes / "x.md")
    (notes / "c.md").write_text("# Failover\n\nThe amber failover drill runs monthly.\n")

    def repacked() -> dict[str, Any] | None:
        try:
            kb: dict[str, Any] = json.loads(kb_json.read_text())
        except (OSError, ValueError):
            return None
        return kb if "c.md" in kb["files"] else None

    kb = daemon.wait_for(repacked, timeout=240, interval=0.5)
    assert {s["file"]: s["reason"] for s in kb["skipped"]} == {"huge.md": "too_large", "x.md": "fifo"}, kb["skipped"]
    keyword_idle(daemon, 120)
    grown_mb = (vm_kb(daemon.proc.pid, "VmHWM") - before) / 1024
    print(f"RELIABILITY issue47 pack_watch peak_rss_growth_mb={grown_mb:.0f}")
    assert grown_mb < 300, f"peak memory grew by {grown_mb:.0f} MB"
    assert daemon.call("search", {"query": "amber failover drill", "wing": "kb"})["hits"]
    assert "pack_failed" not in daemon.logs()
    assert max(timed_status(daemon) for _ in range(3)) < 2.0
    healthy(daemon)
    assert daemon.stop() == 0


@pytest.mark.timeout(300)
def test_fifos_named_gitignore_and_mempalignore_in_a_watched_project_stall_nothing(daemon: Daemon,
                                                                                  tmp_path: Path) -> None:
    """H1: ignore files were opened with a plain ``open``. A FIFO ``.gitignore`` now holds no rules; a FIFO
    ``.mempalignore`` is an ignore file that cannot be read: the cautious reading, its folder stays out (as an
    unreadable one always did), and a warning names it."""
    repo = tmp_path / "repo"
    (repo / "src").mkdir(parents=True)
    (repo / "docs").mkdir()
    (repo / "src" / "app.py").write_text("def pelican():\n    return 'the pelican module is public'\n")
    (repo / "docs" / "plan.md").write_text("The flamingo acquisition plan is confidential.\n")
    os.mkfifo(repo / ".gitignore")
    os.mkfifo(repo / "src" / ".gitignore")
    os.mkfifo(repo / "docs" / ".mempalignore")
    daemon.start(extra_env=ENV)
    t0 = time.monotonic()
    daemon.call("watch_add", {"path": str(repo), "mode": "projects"}, timeout=30)
    assert time.monotonic() - t0 < 10
    daemon.wait_for(lambda: _found(daemon, "pelican module is public", repo / "src" / "app.py"), timeout=120)
    st = keyword_idle(daemon, 120)
    assert str(repo / "docs" / ".mempalignore") in st["excluded"]["files"], st["excluded"]
    hits = daemon.call("search", {"query": "flamingo acquisition plan"})["hits"]
    assert not any("flamingo" in h["text"] for h in hits)
    # the ignore files are read again by each walk of the project: mining it, many times at once, returns
    (repo / "src" / "more.py").write_text("def heron(name):\n    return f'the heron helper greets {name}'\n" * 3)
    results: list[Any] = []

    def mine() -> None:
        try:
            results.append(daemon.call("mine", {"paths": [str(repo)], "mode": "projects"}, timeout=60))
        except Exception as exc:
            results.append(exc)

    threads = [threading.Thread(target=mine) for _ in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(90)
    assert len(results) == 12 and all(isinstance(r, dict) for r in results), results[:3]
    daemon.wait_for(lambda: _found(daemon, "the heron helper", repo / "src" / "more.py"), timeout=60)
    assert max(timed_status(daemon) for _ in range(5)) < 2.0
    warned = [ln for ln in daemon.logs().splitlines() if '"ignore_file_unreadable"' in ln]
    assert warned and all('"fifo"' in ln and ".mempalignore" in ln for ln in warned), warned
    healthy(daemon)
    t0 = time.monotonic()
    assert daemon.stop() == 0
    assert time.monotonic() - t0 < 15


@pytest.mark.timeout(300)
def test_peek_partner_past_fifo_transcripts_called_many_times_at_once_stalls_nothing(daemon: Daemon,
                                                                                    home: Path) -> None:
    """H2: ``peek_partner`` opened up to 400 transcripts with a plain ``open``; a FIFO hung each call and ~40
    calls used up the worker threads. FIFOs named like transcripts, in the project's folder, in others and
    among Codex rollouts, then 60 peeks at once: each answers, and status, ingest and search go on."""
    cwd = "/home/u/peeked"
    projects = home / ".claude" / "projects"
    proj = projects / "-home-u-peeked"
    proj.mkdir(parents=True)
    tx = proj / "5ec2e7a5-0000-4000-8000-0000000000c7.jsonl"
    tx.write_text(user_line(tx.stem, cwd, "how do we rotate the kestrel keys?", "p-u0", "2026-08-02T10:00:00.000Z")
                  + "\n" + assistant_line(tx.stem, cwd, "With the rotate task, weekly.", "p-a0", "p-u0",
                                          "2026-08-02T10:00:01.000Z") + "\n")
    for i in range(5):
        os.mkfifo(proj / f"fifo-{i}.jsonl")  # newer than the transcript: looked at first
    for i in range(30):
        other = projects / f"-home-u-other{i}"
        other.mkdir()
        os.mkfifo(other / "trap.jsonl")
    (projects / "-home-u-zero").mkdir()
    (projects / "-home-u-zero" / "zero.jsonl").symlink_to("/dev/zero")
    rollouts = home / ".codex" / "sessions" / "2026" / "08" / "02"
    rollouts.mkdir(parents=True)
    for i in range(5):
        os.mkfifo(rollouts / f"rollout-2026-08-02T10-00-0{i}-trap.jsonl")
    daemon.start(extra_env=ENV)
    keyword_idle(daemon, 120)
    results: list[Any] = []

    def peek(partner: str) -> None:
        try:
            results.append(daemon.call("peek_partner", {"cwd": cwd, "partner": partner, "n": 3}, timeout=60))
        except Exception as exc:
            results.append(exc)

    t0 = time.monotonic()
    threads = [threading.Thread(target=peek, args=("claude" if i % 4 else "codex",)) for i in range(60)]
    for t in threads:
        t.start()
    slowest_status = max(timed_status(daemon) for _ in range(3))
    for t in threads:
        t.join(90)
    took = time.monotonic() - t0
    print(f"RELIABILITY issue47 peek_fifos calls=60 took_s={took:.1f} status_s={slowest_status:.2f}")
    assert len(results) == 60, len(results)
    claude = [r for r in results if isinstance(r, dict)]
    assert len(claude) == 45 and all(r["path"] == str(tx) for r in claude), results[:3]
    assert all("kestrel" in r["exchanges"][-1]["user"] for r in claude)
    codex = [r for r in results if not isinstance(r, dict)]
    assert len(codex) == 15 and all("no Codex session found" in str(e) for e in codex), codex[:3]
    assert slowest_status < 2.0 and max(timed_status(daemon) for _ in range(3)) < 2.0
    # the ingest goes on: a new exchange is read and found
    with tx.open("a") as fh:
        fh.write(user_line(tx.stem, cwd, "and the osprey certificates?", "p-u1", "2026-08-02T10:01:00.000Z") + "\n")
        fh.write(assistant_line(tx.stem, cwd, "Those renew by themselves.", "p-a1", "p-u1",
                                "2026-08-02T10:01:01.000Z") + "\n")
    daemon.wait_for(lambda: daemon.call("search", {"query": "osprey certificates"})["hits"], timeout=60)
    healthy(daemon)
    t0 = time.monotonic()
    assert daemon.stop() == 0
    assert time.monotonic() - t0 < 15


def _giant_prompt(size: int) -> str:
    """A pasted log of about ``size`` characters: numbered lines, no two alike."""
    out: list[str] = ["Please look at this whole build log and tell me why the linker fails:"]
    n, total = 0, 0
    while total < size:
        line = f"[{n:07d}] step {n % 97} compiled module_{n % 1013}.o from src/unit_{n % 389}.c in {n % 61} ms"
        out.append(line)
        total += len(line) + 1
        n += 1
    out.append("END OF THE LOG: the last line says ld returned 1 exit status")
    return "\n".join(out)


@pytest.mark.timeout(600)
def test_a_10_mb_prompt_makes_at_most_the_capped_drawers_and_says_so(daemon: Daemon, home: Path,
                                                                     tmp_path: Path) -> None:
    """M2: one 10 MB prompt became 26,012 drawers and 16.5 minutes of embedding. Its exchange now makes at most
    ``ingest.max_drawers_per_exchange`` drawers (128 by default), each marked capped with the whole length; the
    transcript keeps the whole text, and inspect and the ingest summary say it was capped."""
    cwd = "/home/u/giant"
    proj = home / ".claude" / "projects" / "-home-u-giant"
    proj.mkdir(parents=True)
    tx = proj / "5ec2e7a5-0000-4000-8000-0000000000d9.jsonl"
    prompt = _giant_prompt(10 * 1024 * 1024)
    tx.write_text(
        user_line(tx.stem, cwd, prompt, "g-u0", "2026-08-02T10:00:00.000Z") + "\n"
        + assistant_line(tx.stem, cwd, "The linker fails on a missing symbol.", "g-a0", "g-u0",
                         "2026-08-02T10:00:01.000Z") + "\n"
        + user_line(tx.stem, cwd, "and the small question about the wombat cache?", "g-u1",
                    "2026-08-02T10:01:00.000Z") + "\n"
        + assistant_line(tx.stem, cwd, "The wombat cache expires hourly.", "g-a1", "g-u1",
                         "2026-08-02T10:01:01.000Z") + "\n")
    t0 = time.monotonic()
    daemon.start(extra_env=ENV)
    st = daemon.idle(timeout=480)
    took = time.monotonic() - t0
    drawers = daemon.call("drawers", {"limit": 1000, "fields": ["text", "capped", "text_chars", "stored_chars",
                                                                 "exchange_key", "chunk_index", "chunk_count"]})
    big = [d for d in drawers["drawers"] if d.get("capped")]
    print(f"RELIABILITY issue47 giant_prompt chars={len(prompt)} drawers={len(big)} to_idle_s={took:.1f}")
    assert len(big) == 128, len(big)
    assert {d["exchange_key"] for d in big} == {big[0]["exchange_key"]}
    assert all(d["text_chars"] >= len(prompt) and d["stored_chars"] < d["text_chars"] for d in big), big[0]
    assert all(d["chunk_count"] == 128 for d in big)
    first = min(big, key=lambda d: d["chunk_index"])
    assert first["text"].startswith("> Please look at this whole build log")  # (the prompt, quoted)
    assert all(d["text"].split("\n")[-1].removeprefix("> ") in prompt for d in big)
    assert st["drawers"] == 128 + 1, st["drawers"]  # and the small exchange after it, whole
    assert daemon.call("search", {"query": "wombat cache expires"})["hits"]
    # the whole text is still in the transcript the drawers cite
    assert "ld returned 1 exit status" in tx.read_text()
    shown = mempal_cli(daemon.env, "inspect", str(tx)).stdout
    assert f"capped: {first['text_chars']:,} chars, more than ingest.max_drawers_per_exchange" in shown, shown[-800:]
    copy = tmp_path / "exported" / tx.name  # the same session mined from elsewhere: the summary says so
    copy.parent.mkdir()
    copy.write_bytes(tx.read_bytes())
    out = subprocess.run([sys.executable, "-m", "mempal.cli.main", "mine", str(copy), "--json"], env=daemon.env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["capped"] == 1, out.stdout
    assert "exchange_capped" in daemon.logs()
    healthy(daemon)


@pytest.mark.timeout(300)
def test_fifos_as_a_projects_mempal_toml_and_the_identity_file_are_not_waited_on(daemon: Daemon,
                                                                                tmp_path: Path) -> None:
    """The other reads of a user's files go through the same helper: a FIFO as a watched project's
    ``mempal.toml`` (read for its wing and rooms) or as ``wakeup.identity_path`` holds nothing and stalls
    nothing."""
    repo = tmp_path / "repo"
    (repo / "src").mkdir(parents=True)
    (repo / "src" / "app.py").write_text("def pelican(name):\n    return f'the pelican module greets {name}'\n" * 3)
    os.mkfifo(repo / "mempal.toml")
    identity = tmp_path / "identity.md"
    os.mkfifo(identity)
    daemon.start(extra_env={**ENV, "MEMPAL_WAKEUP_IDENTITY_PATH": str(identity)})
    daemon.call("watch_add", {"path": str(repo), "mode": "projects"}, timeout=30)
    daemon.wait_for(lambda: _found(daemon, "pelican module greets", repo / "src" / "app.py"), timeout=120)
    wake = daemon.call("wake_up", {}, timeout=30)
    assert isinstance(wake["text"], str)
    assert max(timed_status(daemon) for _ in range(3)) < 2.0
    healthy(daemon)
    t0 = time.monotonic()
    assert daemon.stop() == 0
    assert time.monotonic() - t0 < 15
