"""Crash safety: ``kill -9`` the daemon at random points of a backfill, over and over; nothing is lost and
nothing is stored twice.

The backfill is 2,000 exchanges in Claude Code transcripts. Before every restart more exchanges are
appended (sometimes ending in a half-written line), so each kill lands while there is work in flight: reads,
drawer builds, upserts and cursor writes. The read budget is small so a file takes many commits. After every
restart the store must open and hold no duplicate; at the end every exchange the normalizer finds in the
files is stored exactly once (keyword stage: every exchange key once, chunk indexes 0..n-1, unique content
hashes, the prompt text in chunk 0).
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mempald.normalize.claude_code import parse_lines
from tests.conftest import Daemon
from tests.integration.test_skeleton import assistant_line, lines_of, user_line

KILLS = 20
INITIAL = 800  # exchanges written before the first start
PER_ROUND = 60  # appended before each restart: 800 + 20 x 60 = 2,000 (plus half-written lines)
FILES = 8
WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet", "kilo", "lima",
         "mike", "november", "oscar", "papa", "quebec", "romeo", "sierra", "tango", "uniform", "victor", "whiskey",
         "xray", "yankee", "zulu"]

# Speed knobs: one embedding thread (keep a core for ingest), a small read budget (many cursor commits per
# file, so kills land between upserts and cursor writes), and no periodic reconcile noise.
FAST_ENV = {
    "MEMPAL_EMBED_THREADS": "1",
    "MEMPAL_EMBED_BATCH_SIZE": "8",
    "MEMPAL_INGEST_READ_CHUNK_BYTES": str(48 * 1024),
    "MEMPAL_INGEST_DEBOUNCE_MS": "50",
}


def _text(rnd: random.Random, lo: int, hi: int) -> str:
    """Prose with sentences (real transcripts have punctuation; the chunker cuts on it)."""
    out = []
    for _ in range(rnd.randint(lo, hi)):
        out.append(" ".join(rnd.choices(WORDS, k=rnd.randint(6, 14))).capitalize() + ".")
    return " ".join(out)


class Transcripts:
    """Session files that grow by whole exchanges; a round may leave a half-written last line."""

    def __init__(self, root: Path, seed: int) -> None:
        self.rnd = random.Random(seed)
        self.root = root
        self.counts: dict[Path, int] = {}
        self.tails: dict[Path, str] = {}  # the rest of a half-written line, written next round
        for k in range(FILES):
            sid = f"{k:08x}-c0de-4000-8000-{k:012x}"
            self.counts[root / f"{sid}.jsonl"] = 0

    def _lines(self, path: Path, i: int) -> Iterator[str]:
        sid = path.stem
        ts = f"2026-05-{1 + i % 28:02d}T{i % 24:02d}:{i % 60:02d}:00.000Z"
        q = f"Question {i} of {sid[:8]}: " + _text(self.rnd, 1, 2)
        # Mostly one chunk, some several (long answers become several drawers).
        a = _text(self.rnd, 1, 4) if self.rnd.random() < 0.85 else _text(self.rnd, 20, 45)
        yield user_line(sid, "/home/u/crash", q, f"{sid[:8]}-u{i}", ts)
        yield assistant_line(sid, "/home/u/crash", a, f"{sid[:8]}-a{i}", f"{sid[:8]}-u{i}", ts)

    def add(self, n: int, partial: bool) -> None:
        self.finish()  # complete last round's half-written line first
        paths = list(self.counts)
        chosen = [self.rnd.choice(paths) for _ in range(n)]
        body: dict[Path, str] = {}
        for p in chosen:
            i = self.counts[p]
            self.counts[p] += 1
            body[p] = body.get(p, "") + "".join(line + "\n" for line in self._lines(p, i))
        for p, text in body.items():
            with p.open("a") as fh:
                fh.write(text)
        if partial:
            # Leave the next exchange's user line half-written; it is completed before the next round.
            p = self.rnd.choice(paths)
            i = self.counts[p]
            self.counts[p] += 1
            full = "".join(line + "\n" for line in self._lines(p, i))
            cut = self.rnd.randint(10, len(full.split("\n", 1)[0]) - 1)
            with p.open("a") as fh:
                fh.write(full[:cut])
            self.tails[p] = full[cut:]

    def finish(self) -> None:
        for p, rest in list(self.tails.items()):
            with p.open("a") as fh:
                fh.write(rest)
        self.tails.clear()

    def total(self) -> int:
        return sum(self.counts.values())


def points(d: Daemon) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    offset = None
    fields = ["exchange_key", "chunk_index", "chunk_count", "content_hash", "text"]
    while True:
        page = d.call("drawers", {"limit": 1000, "offset": offset, "fields": fields}, timeout=60)
        out.extend(page["drawers"])
        offset = page["next"]
        if offset is None:
            return out


def no_duplicates(pts: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    by_key: dict[str, list[dict[str, Any]]] = {}
    for p in pts:
        by_key.setdefault(p["exchange_key"], []).append(p)
    for key, chunks in by_key.items():
        idx = [c["chunk_index"] for c in chunks]
        assert len(idx) == len(set(idx)), f"exchange {key} has a chunk stored twice: {sorted(idx)}"
    hashes = [p["content_hash"] for p in pts]
    assert len(hashes) == len(set(hashes)), "the same content is stored under two drawers"
    return by_key


def keyword_idle(d: Daemon, timeout: float) -> dict[str, Any]:
    """Every file read up to its end (the dense stage may still be working: it is not checked here)."""

    def done() -> dict[str, Any] | None:
        st: dict[str, Any] = d.call("status")
        ok = st["scans"] >= 1 and st["file_backlog"] == 0 and all(
            s["backlog_bytes"] == 0 for s in st["sources"] if s["mode"] == "convos")
        return st if ok else None

    result: dict[str, Any] = d.wait_for(done, timeout, interval=0.25)
    return result


@pytest.mark.slow
@pytest.mark.timeout(420)
def test_kill_9_twenty_times_during_backfill_loses_and_duplicates_nothing(daemon: Daemon, home: Path) -> None:
    proj = home / ".claude" / "projects" / "-home-u-crash"
    proj.mkdir(parents=True)
    tx = Transcripts(proj, seed=20260501)
    tx.add(INITIAL, partial=True)
    rnd = random.Random(4242)
    survived = keyword_busy = dense_busy = 0
    stored_before = 0
    t0 = time.monotonic()
    for _round in range(KILLS):
        daemon.start(extra_env=FAST_ENV)  # the store and the state database must open after every kill
        st = daemon.call("status")
        pts = points(daemon)
        assert st["ready"] and st["drawers"] <= len(pts)  # counted first; the backfill goes on meanwhile
        no_duplicates(pts)
        assert len(pts) >= stored_before, "drawers disappeared across a crash"
        stored_before = len(pts)
        time.sleep(rnd.uniform(0.05, 2.0))  # a random point of the backfill
        st = daemon.call("status")
        keyword_busy += bool(st["file_backlog"] or any(s["backlog_bytes"] for s in st["sources"]))
        dense_busy += bool(st["dense_backlog"])
        daemon.kill()
        survived += 1
        tx.add(PER_ROUND, partial=rnd.random() < 0.5)
    tx.finish()
    assert tx.total() >= 2000
    # The kills landed in the middle of work (reading and storing, or embedding), not on an idle daemon.
    assert keyword_busy + dense_busy >= KILLS // 2, (keyword_busy, dense_busy)

    daemon.start(extra_env=FAST_ENV)
    keyword_idle(daemon, timeout=240)
    pts = points(daemon)
    by_key = no_duplicates(pts)

    expected = {ex.key: ex for f in sorted(proj.glob("*.jsonl")) for ex in parse_lines(lines_of(f))}
    assert len(expected) == tx.total()
    lost = sorted(set(expected) - set(by_key))
    extra = sorted(set(by_key) - set(expected))
    assert not lost, f"{len(lost)} exchanges lost, e.g. {lost[:5]}"
    assert not extra, f"{len(extra)} unexpected exchanges, e.g. {extra[:5]}"
    for key, chunks in by_key.items():
        chunks.sort(key=lambda c: c["chunk_index"])
        assert [c["chunk_index"] for c in chunks] == list(range(len(chunks))), key
        assert all(c["chunk_count"] == len(chunks) for c in chunks), key
        first_words = expected[key].user.split(":", 1)[0]  # "Question 17 of 0000000a"
        assert first_words in chunks[0]["text"], key
    # Every chunk's content hash is the hash of its own text (nothing half-written).
    from mempald.ingest.drawers import content_hash

    assert all(content_hash(p["text"]) == p["content_hash"] for p in pts)
    # (status's drawer count may be served from its cache while the dense stage runs: not compared here)
    figures = {"crashes_survived": survived, "kills_mid_keyword": keyword_busy, "kills_mid_dense": dense_busy,
               "exchanges": len(expected), "drawers": len(pts), "lost": len(lost),
               "duplicates": len(pts) - len({(p["exchange_key"], p["chunk_index"]) for p in pts}),
               "seconds": round(time.monotonic() - t0, 1)}
    print("RELIABILITY crash " + json.dumps(figures))
