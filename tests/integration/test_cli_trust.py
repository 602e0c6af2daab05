"""The command line tells the truth (issue #41, section 8), against a real daemon through the real ``mempal``:
search shows calibrated relevance (an unrelated query reads as weak), paths are not broken at hyphens, a
misspelt wing is named with the closest one, the short ids ``recall`` prints work with ``get`` and ``timeline``
(an ambiguous start lists its candidates), ``forget`` echoes dates as dates and counts in the singular, ``kg``
speaks text, ``pack -o X.md`` writes that file, ``status --watch`` writes lines to a pipe, ends on SIGTERM and
with ``--until-idle``, and the local commands take ``--json``."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import Daemon, mempal_cli

LONG_PATH = "/home/u/projects/heron-exporter/src/partition-writer-with-a-rather-long-name.py"
MEMORIES = [
    f"Decision: the heron exporter writes parquet instead of csv because csv lost the column types; see {LONG_PATH}.",
    "Decision: the heron exporter caps the partition writer's buffer at 64 MB and streams row groups.",
    "Problem: the nightly heron job failed with MemoryError in the partition writer; fixed by the buffer cap.",
]
TWINS = ("abcd1234-0000-4000-8000-000000000001", "abcd1234-0000-4000-8000-000000000002")


def cli(daemon: Daemon, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return mempal_cli({**daemon.env, **env}, *args)


def wait_lines(proc: subprocess.Popen[str], timeout: float) -> str:
    """The first line ``proc`` writes to its stdout pipe, waiting at most ``timeout`` seconds."""
    import selectors

    sel = selectors.DefaultSelector()
    assert proc.stdout is not None
    sel.register(proc.stdout, selectors.EVENT_READ)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if sel.select(timeout=0.2):
            return proc.stdout.readline()
    raise AssertionError("status --watch wrote nothing to the pipe")


@pytest.mark.timeout(600)
def test_the_command_line_tells_the_truth(daemon: Daemon, home: Path, tmp_path: Path) -> None:
    daemon.start()
    for text in MEMORIES:
        daemon.call("ingest", {"text": text, "wing": "heron", "room": "decisions", "agent": "user",
                               "memory_type": "decision"})
    daemon.wait_for(lambda: len(daemon.call("search", {"query": "heron exporter partition writer", "min_score": 0,
                                                       "limit": 10})["hits"]) >= 3, 120)

    # relevance, not the fusion score; a query nothing stored is about reads as weak
    for query in ("heron exporter parquet partition writer", "why did the deploy fail"):
        shown = cli(daemon, "search", query, "--min-score", "0", COLUMNS="60")
        raw = json.loads(cli(daemon, "search", query, "--min-score", "0", "--json").stdout)
        assert shown.returncode == 0 and raw["hits"], shown.stderr
        assert "score " not in shown.stdout
        for i, hit in enumerate(raw["hits"], 1):
            assert f"[{i}] relevance {hit['relevance']:.2f}" in shown.stdout
        best = max(h["relevance"] for h in raw["hits"])
        if query.startswith("why"):
            assert best < 0.3 and "(weak)" in shown.stdout and "No hit is likely to bear on the query" in shown.stdout
        else:
            assert best >= 0.3 and LONG_PATH in shown.stdout  # a 60-column terminal did not break it at a hyphen

    # a misspelt wing is not an empty answer
    wrong = cli(daemon, "search", "parquet", "--wing", "heorn")
    assert wrong.returncode == 1 and "there is no wing 'heorn'; the closest is 'heron'" in wrong.stderr

    # the 8 characters recall prints are taken by get and timeline
    recall = cli(daemon, "recall", "--wing", "heron", "--room", "decisions")
    short = re.findall(r"\[([0-9a-f]{8})\]", recall.stdout)
    assert len(short) == 3, recall.stdout
    got = cli(daemon, "get", short[0])
    assert got.returncode == 0 and f"[drawer {short[0]}" in got.stdout and "missing" not in got.stdout, got.stderr
    timeline = cli(daemon, "timeline", short[1])
    assert timeline.returncode == 0 and f"[drawer {short[1]}" in timeline.stdout, timeline.stderr
    bad = cli(daemon, "get", "zz12")  # not the start of an id at all
    assert bad.returncode != 0 and "is not a drawer id" in bad.stderr

    # an ambiguous start is refused with its candidates
    export = tmp_path / "twins.jsonl"
    export.write_text("\n".join([json.dumps({"mempal_export": 1})] + [json.dumps(
        {"id": i, "text": f"Twin note {n}: the osprey cache keeps entries ten minutes.", "wing": "osprey",
         "room": "notes", "kind": "note", "session_id": "osprey-twins", "source_path": "/t/osprey.jsonl",
         "timestamp": "2026-01-05T10:00:00+00:00", "ts": 1767607200.0}) for n, i in enumerate(TWINS)]) + "\n")
    assert cli(daemon, "import", str(export)).returncode == 0
    both = cli(daemon, "get", "abcd1234")
    assert both.returncode == 1 and "ambiguous" in both.stderr and all(t in both.stderr for t in TWINS)
    one = cli(daemon, "get", TWINS[1])
    assert one.returncode == 0 and "Twin note 1" in one.stdout
    kept = cli(daemon, "delete", "abcd1234")  # what changes data takes whole ids only, and says so
    assert kept.returncode == 1 and "finds its drawer with get; this takes whole ids" in kept.stderr

    # forget echoes the date as typed and counts in the singular
    preview = cli(daemon, "forget", "--wing", "osprey", "--before", "2099-01-01", "--dry-run")
    assert preview.returncode == 0, preview.stderr
    assert "before 2099-01-01" in preview.stdout and "2 drawers in 1 session from 1 source" in preview.stdout
    assert not re.search(r"before \d{9,}", preview.stdout)

    # kg speaks text
    assert cli(daemon, "kg", "add", "heron", "writes", "parquet").returncode == 0
    stats = cli(daemon, "kg", "stats")
    assert stats.returncode == 0 and "{" not in stats.stdout and re.search(r"\w+: \d+", stats.stdout)
    ended = cli(daemon, "kg", "invalidate", "heron", "writes", "parquet")
    assert ended.returncode == 0 and ended.stdout.strip() == "invalidated 1 fact (kept, no longer valid)"

    # pack -o X.md writes the file X.md
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "exporter.md").write_text("# Exporter\n\nThe heron exporter writes parquet files.\n\n"
                                       "It caps the partition writer's buffer at 64 MB.\n")
    target = tmp_path / "out" / "heron.md"
    packed = cli(daemon, "pack", str(notes), "-o", str(target))
    assert packed.returncode == 0, packed.stderr
    assert target.is_file() and "parquet" in target.read_text()

    # status --watch: lines to a pipe; --until-idle ends once caught up; SIGTERM ends it with its output
    idle = cli(daemon, "status", "--watch", "--until-idle", "--interval", "0.2")
    assert idle.returncode == 0 and "caught up" in idle.stdout.splitlines()[-1]
    code = "import sys\nfrom mempal.cli.main import main\nsys.exit(main(sys.argv[1:]))\n"
    with subprocess.Popen([sys.executable, "-c", code, "status", "--watch", "--interval", "0.2"], text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=dict(daemon.env)) as watch:
        try:
            assert "drawers " in wait_lines(watch, 60)
            watch.send_signal(signal.SIGTERM)
            assert watch.wait(timeout=30) == 0
        finally:
            watch.kill()

    # the local commands take --json
    for args in (("install-hooks", "--dry-run"), ("install-mcp", "--dry-run"), ("logs", "-n", "5")):
        out = cli(daemon, *args, "--json")
        body = json.loads(out.stdout)
        assert body["command"] == args[0] and body["exit_code"] == out.returncode, out.stderr
        assert body["output"] or body["messages"]
    assert cli(daemon, "logs", "--follow", "--json").returncode == 2
    assert "--json" in cli(daemon, "install-mcp", "--help").stdout
