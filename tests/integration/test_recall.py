"""Recall and the search floor through a real daemon: an exact error string already stored is recalled in its
project, nothing is injected when nothing fits, no exchange twice in one session, and search answers "no
memories match" below its relevance floor (``min_score`` / ``--min-score`` lowers it)."""

from __future__ import annotations

import subprocess
import sys
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
