"""Recall and the search floor through a real daemon: an exact error string already stored is recalled in its
project, nothing is injected when nothing fits, no exchange twice in one session, and search answers "no
memories match" below its relevance floor (``min_score`` / ``--min-score`` lowers it); another project's memory
only on strong evidence; a memory whose written lines are gone from its file says so."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mempald.config import parse_settings
from tests.conftest import Daemon

DEFAULTS = parse_settings({}, env={})
FLOOR = DEFAULTS.search.min_score

FIX = ("> the chart animation throws TypeError: d3.easeElastic.out is not a function\n"
       "The error means d3 v7 renamed the easing factories: d3.easeElastic.out no longer exists. The fix was to "
       "call d3.easeElasticOut (and d3.easeBackOut for the bars) in src/charts/bounce.js.")
ASK = "> d3.easeElastic.out is not a function again in the chart\n[interrupted by user]"
OTHER = ("> how do we deploy the docs site?\nWe decided to publish the docs with mkdocs gh-deploy from the main "
         "branch; the workflow lives in .github/workflows/docs.yml.")
CWD = "/home/dana/projects/chartkit"


def cli(d: Daemon, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mempal.cli.main", *args], capture_output=True, text=True, env=d.env,
                          timeout=60)


def recall(d: Daemon, prompt: str, session: str, **kw: Any) -> dict[str, Any]:
    res: dict[str, Any] = d.call("prompt_context", {"prompt": prompt, "cwd": CWD, "session_id": session, **kw},
                                 timeout=30)
    return res


@pytest.mark.timeout(240)
def test_recall_is_hybrid_scoped_and_never_repeats_and_search_has_a_floor(daemon: Daemon) -> None:
    daemon.start()
    ids = {}
    for name, text in (("fix", FIX), ("ask", ASK), ("other", OTHER)):
        ids[name] = daemon.call("ingest", {"text": text, "wing": "chartkit"})["drawer_ids"][0]
    daemon.call("ingest", {"text": FIX, "wing": "elsewhere"})
    daemon.idle()

    # the exact error text finds the exchange with the fix, before the one that only repeats the question
    got = recall(daemon, "d3.easeElastic.out is not a function", "s1")
    assert got["wing"] == "chartkit" and got["memories"], got
    assert got["memories"][0]["drawer_id"] == ids["fix"]
    assert all(0.0 <= m["relevance"] <= 1.0 for m in got["memories"])
    assert "d3.easeElasticOut" in got["text"] and "relevance " in got["text"]
    # never the same drawer twice in one session; another session gets it again
    again = recall(daemon, "d3.easeElastic.out is not a function", "s1")
    assert ids["fix"] not in {m["drawer_id"] for m in again["memories"]}
    assert recall(daemon, "d3.easeElastic.out is not a function", "s2")["memories"][0]["drawer_id"] == ids["fix"]
    # nothing fits: nothing injected
    for prompt in ("what is the capital of France?", "write a haiku about autumn leaves"):
        assert recall(daemon, prompt, "s3")["text"] == "", prompt

    # search: a query that matches nothing answers nothing, and says why; min_score 0 shows every hit
    empty = daemon.call("search", {"query": "kubernetes ingress annotations for websockets", "wing": "chartkit"})
    assert empty["hits"] == [] and "no memories match" in empty["note"]
    weak = daemon.call("search", {"query": "kubernetes ingress annotations for websockets", "wing": "chartkit",
                                  "min_score": 0.0})
    assert weak["hits"] and all(h["relevance"] < FLOOR for h in weak["hits"])
    hits = daemon.call("search", {"query": "easeElasticOut bounce.js", "wing": "chartkit"})["hits"]
    assert hits and hits[0]["drawer_id"] == ids["fix"] and hits[0]["relevance"] >= DEFAULTS.hooks.recall_threshold
    out = cli(daemon, "search", "kubernetes ingress annotations for websockets", "--wing", "chartkit")
    assert out.returncode == 0 and "No memories match" in out.stdout
    out = cli(daemon, "search", "kubernetes ingress annotations for websockets", "--wing", "chartkit",
              "--min-score", "0")
    assert out.returncode == 0 and "drawer " in out.stdout


@pytest.mark.timeout(240)
def test_recall_looks_beyond_the_project_only_for_strong_evidence(daemon: Daemon) -> None:
    """An exact error met in another project is recalled from a folder with no memory and from a project that
    has memory of its own (after that project's memories); the same vocabulary with nothing that answers is not."""
    daemon.start()
    fix = daemon.call("ingest", {"text": FIX, "wing": "chartkit"})["drawer_ids"][0]
    daemon.call("ingest", {"text": OTHER, "wing": "chartkit"})
    own = daemon.call("ingest", {"text": "> the docs build warns about a missing nav entry for the changelog\nWe added "
                                         "changelog.md to the nav section of mkdocs.yml and the warning is gone.",
                                 "wing": "docsite"})["drawer_ids"][0]
    daemon.idle()
    ask = "TypeError: d3.easeElastic.out is not a function"

    def at(cwd: str, prompt: str, session: str) -> dict[str, Any]:
        res: dict[str, Any] = daemon.call("prompt_context", {"prompt": prompt, "cwd": cwd, "session_id": session},
                                          timeout=30)
        return res

    fresh = at("/home/dana/projects/brand-new", ask, "f1")
    assert fresh["wing"] is None and [m["drawer_id"] for m in fresh["memories"]] == [fix], fresh
    assert all(m["relevance"] >= DEFAULTS.hooks.recall_beyond_threshold for m in fresh["memories"])
    assert "d3.easeElasticOut" in fresh["text"] and "chartkit" in fresh["text"]

    # from a project with memory: its own first, then the other project's exact match
    mixed = at("/home/dana/projects/docsite", f"{ask} (and the mkdocs nav warning about the changelog)", "d1")
    assert mixed["wing"] == "docsite" and [m["drawer_id"] for m in mixed["memories"]][:2] == [own, fix], mixed

    # near misses: the same libraries and words, nothing that answers
    for prompt in ("draw a d3 force-directed graph of the package dependencies in svelte",
                   "publish the storybook to chromatic on every pull request"):
        assert at("/home/dana/projects/brand-new", prompt, "f2")["text"] == "", prompt
        assert at("/home/dana/projects/docsite", prompt, "d2")["memories"] == [], prompt


THANOS = "claude_code/real2/projects/-Users-jeremy-Projects-Thanos/d4983b3a-ddde-4a22-9bff-98a04c19bfe7.jsonl"


@pytest.mark.timeout(240)
def test_a_memory_whose_written_lines_are_gone_says_so_and_ranks_below(daemon: Daemon, home: Path,
                                                                      formats_dir: Path) -> None:
    """A real Claude Code session (its paths moved into this test's home) wrote a SessionStart hook script and
    settings.json; recall and the file gate show its memory as it is while the files hold what it wrote, then say
    "may be out of date" once the script is rewritten (the order, current before stale: test_staleness.py)."""
    src = formats_dir / THANOS
    if not src.is_file():
        pytest.skip(f"{src} is not in the shared fixtures")
    data = src.read_bytes().replace(b"/Users/jeremy", str(home).encode())
    written = {}
    for line in data.splitlines():
        rec = json.loads(line)
        content = (rec.get("message") or {}).get("content")
        for b in content if isinstance(content, list) else ():
            if isinstance(b, dict) and b.get("type") == "tool_use" and b.get("name") == "Write":
                written[b["input"]["file_path"]] = b["input"]["content"]
    assert len(written) == 2
    for path, content in written.items():
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(content)
    (home / "Projects" / "Thanos").mkdir(parents=True)
    folder = home / ".claude" / "projects" / f"-{str(home).strip('/').replace('/', '-')}-Projects-Thanos"
    folder.mkdir(parents=True)
    (folder / src.name).write_bytes(data)
    daemon.start()
    daemon.idle()
    script = str(home / ".claude" / "hooks" / "life-os-status.sh")
    cwd = str(home / "Projects" / "Thanos")
    prompt = "what does life-os-status.sh print at session start, does it check the inbox for new items?"

    def ask(session: str) -> dict[str, Any]:
        res: dict[str, Any] = daemon.call("prompt_context", {"prompt": prompt, "cwd": cwd, "session_id": session,
                                                             "max_tokens": 3000}, timeout=30)
        return res

    before = ask("s1")
    wrote = [m for m in before["memories"] if m["exchange_key"].startswith("209397c4")]  # the Write's exchange
    assert wrote and not any(m["stale"] for m in before["memories"]), before
    assert "may be out of date" not in before["text"]
    gate = daemon.call("file_context", {"path": script, "cwd": cwd})
    assert gate["drawers"] and not gate["stale"] and "may be out of date" not in gate["text"]

    # the script is rewritten by hand: the lines the session wrote are gone
    Path(script).write_text("#!/bin/sh\nprintf 'status: %s\\n' \"$(date)\"\n")
    after = ask("s2")
    stale = [m for m in after["memories"] if m["stale"]]
    assert [m["exchange_key"] for m in stale] == [wrote[0]["exchange_key"]], after
    assert after["memories"][-1]["stale"] and not after["memories"][0]["stale"]  # below the current ones
    assert stale[0]["stale"] == f"may be out of date: {script} changed since 2026-01-06", stale
    assert "may be out of date: " in after["text"]
    gate = daemon.call("file_context", {"path": script, "cwd": cwd})
    assert gate["stale"] and "may be out of date" in gate["text"]
