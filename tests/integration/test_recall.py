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
