"""Web viewer page times at 100k drawers: every page of `mempal ui`, over HTTP, in front of a real daemon.

    python bench/viewer.py [--n 100000] [--requests 40] [--smoke] [--json PATH]

The store is pre-filled through mempald's own code (``bench/_prefill.py``, indexed as the daemon keeps a store
of that size), a real daemon serves it, a real ``mempal ui`` process serves the pages, and each page is fetched
``--requests`` times on a kept-open connection (as a browser does), under the key in the printed URL's path:
wall time from the request to the last byte of the HTML. Search pages use a new query each time; drawer
and session pages a different drawer each time. The wing timeline is timed three ways: later views (the
daemon's listing of the wing's sessions is cached), the first view after a write to another wing (two counts
show the wing did not change), after an exchange appended to a session of this wing (the usual write: the
counts are read again) and after a new session in it (a new listing). The graph
holds ``--facts`` knowledge-graph facts. Target: every page under 200 ms.
"""

from __future__ import annotations

import http.client
import random
import re
import select
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import quote, urlsplit

from _harness import (
    REPO,
    Daemon,
    bench_env,
    exchange_lines,
    loadavg,
    parser,
    report,
    sentence,
    size,
    summary,
    wait_idle,
    write_config,
)
from _prefill import prefilled

TARGET_MS = 200.0
INDEX_AFTER = 20_000


class Pages:
    """A ``mempal ui`` process and one kept-open HTTP connection to it, under its key."""

    def __init__(self, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "mempal.cli.main", "ui"], env=env, cwd=str(REPO),
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], 60)
        found = re.search(r"http://\S+", self.proc.stdout.readline() if ready else "")
        if found is None:
            self.proc.kill()
            raise RuntimeError("mempal ui printed no URL")
        url = urlsplit(found.group(0))
        self.netloc = url.netloc
        self.conn = http.client.HTTPConnection(url.hostname or "127.0.0.1", url.port or 80, timeout=60)
        self.base = url.path.rstrip("/")

    def get(self, path: str) -> tuple[int, float, Any]:
        t0 = time.perf_counter()
        self.conn.request("GET", self.base + path, headers={"Host": self.netloc})
        resp = self.conn.getresponse()
        body = resp.read()
        ms = (time.perf_counter() - t0) * 1000.0
        if resp.status not in (200, 303):
            raise RuntimeError(f"{path} answered {resp.status}: {body[:300]!r}")
        return resp.status, ms, resp.headers

    def close(self) -> None:
        self.conn.close()
        self.proc.terminate()
        self.proc.wait(30)


def fill_graph(d: Daemon, facts: int, rnd: random.Random) -> str:
    """``facts`` triples among a few hundred entities (some expired); returns a well-connected entity."""
    people = [f"Person {i}" for i in range(max(4, facts // 6))]
    things = [f"Tool {i}" for i in range(max(4, facts // 10))]
    verbs = ("uses", "maintains", "recommends", "works on", "replaced")
    for i in range(facts):
        s, o = rnd.choice(people), rnd.choice(things + people)
        d.call("kg", {"op": "add", "subject": s, "predicate": rnd.choice(verbs), "object": o,
                      "valid_from": f"2025-{1 + i % 12:02d}-01"})
        if i % 7 == 0:
            d.call("kg", {"op": "invalidate", "subject": s, "object": o, "ended": "2026-01-01"})
    return people[0]


def measure(pages: Pages, n: int, path: Callable[[int], str]) -> dict[str, float]:
    for i in range(3):  # warm up the connection and the caches this page uses
        pages.get(path(-1 - i))
    return summary([pages.get(path(i))[1] for i in range(n)])


def main() -> None:
    ap = parser(__doc__ or "", 100_000, 300)
    ap.add_argument("--requests", type=int, default=None, help="requests per page (default 40; smoke 5)")
    ap.add_argument("--facts", type=int, default=None, help="knowledge-graph facts (default 600; smoke 30)")
    args = ap.parse_args()
    n = size(args)
    reqs = args.requests or (5 if args.smoke else 40)
    n_facts = args.facts or (30 if args.smoke else 600)
    rnd = random.Random(20)
    queries = [sentence(rnd, 3, 10) for _ in range(reqs + 10)]
    with bench_env(keep=args.keep) as be:
        info = prefilled(be.data_dir, n, indexed=n >= INDEX_AFTER)
        write_config(be, "[store]\nindex_after = 0\n")  # no index build while measuring
        with Daemon(be).start() as d:
            st = wait_idle(d, 300)
            wing = sorted(st["wings"], key=lambda w: -st["wings"][w])[0]
            centre = fill_graph(d, n_facts, rnd)
            d.call("cowork_push", {"text": "The bench left this note.", "to": "codex", "from": "claude",
                                   "cwd": str(REPO)})
            ids = [x["drawer_id"] for x in d.call("drawers", {"wing": wing, "limit": 500, "fields": ["wing"]})[
                "drawers"]]
            sessions = [s["session_id"] for s in d.call("wing_sessions", {"wing": wing, "limit": 500})["sessions"]]
            pages = Pages(be.env)
            try:
                load = loadavg()
                cold: dict[str, list[float]] = {"bench-notes": [], wing: [], "append": []}
                # a live session of this wing, in a transcript the daemon watches: its first exchange makes a new
                # session, each later one is appended to it (the usual write)
                sid = str(uuid.UUID(int=rnd.getrandbits(128)))
                live = be.projects / f"-home-u-projects-{wing}" / f"{sid}.jsonl"
                live.parent.mkdir(parents=True, exist_ok=True)
                rounds = max(3, reqs // 8)
                for i in range(3 * rounds + 1):
                    kind = "append" if i % 3 == 0 else ("bench-notes" if i % 3 == 1 else wing)
                    if kind == "append":  # an exchange appended to a session of this wing (the first: a new one)
                        had = sum(int(x["exchanges"]) for x in d.call("status")["sources"])
                        with live.open("a") as fh:
                            for line in exchange_lines(rnd, sid, f"/home/u/projects/{wing}",
                                                       str(uuid.UUID(int=rnd.getrandbits(128))),
                                                       datetime(2026, 3, 1, tzinfo=UTC) + timedelta(minutes=i)):
                                fh.write(line + "\n")
                        deadline = time.monotonic() + 60  # stored (the watcher saw it), then embedded below
                        while sum(int(x["exchanges"]) for x in d.call("status")["sources"]) <= had:
                            if time.monotonic() > deadline:
                                raise SystemExit("the appended exchange was not stored within 60 s")
                            time.sleep(0.05)
                    else:  # a saved note: elsewhere (two counts), or here (a new session: a new listing)
                        d.call("ingest", {"text": f"bench note {rnd.random()}", "wing": kind})
                    wait_idle(d, 60, interval=0.05)  # its embedding done: time the listing, not the model
                    ms = pages.get(f"/timeline?wing={quote(wing)}")[1]
                    if i:  # the live session's first exchange started it: not an append
                        cold[kind].append(ms)
                figs = {
                    "overview": measure(pages, reqs, lambda i: "/"),
                    "search": measure(pages, reqs, lambda i: "/search?q=" + quote(queries[i % len(queries)])),
                    "search, wing + since + type": measure(pages, reqs, lambda i: (
                        f"/search?q={quote(queries[i % len(queries)])}&wing={quote(wing)}&since=2025-02-01"
                        "&memory_type=none&memory_type=decision")),
                    "drawer in its session": measure(pages, reqs, lambda i: f"/drawer/{ids[i % len(ids)]}"),
                    "session page": measure(pages, reqs, lambda i: f"/session?id={sessions[i % len(sessions)]}"),
                    "wing timeline": measure(pages, reqs, lambda i: f"/timeline?wing={quote(wing)}"),
                    "wing timeline, first view after a write to another wing": summary(cold["bench-notes"]),
                    "wing timeline, first view after a new session in this wing": summary(cold[wing]),
                    "wing timeline, first view after an exchange appended to one of its sessions":
                        summary(cold["append"]),
                    "knowledge graph": measure(pages, reqs, lambda i: "/graph?expired=1"),
                    "graph of an entity + its timeline": measure(pages, reqs, lambda i: (
                        f"/graph?entity={quote(centre)}")),
                    "cowork inbox": measure(pages, reqs, lambda i: "/cowork?cwd=" + quote(str(REPO))),
                    "packs": measure(pages, reqs, lambda i: "/packs"),
                }
                # the daemon's own part of the search pages, measured the same way beside them
                socket_search = summary([d.timed("search", {"query": queries[i % len(queries)], "limit": 10})[0]
                                         for i in range(reqs)])
            finally:
                pages.close()
    worst = max(f["max"] for f in figs.values())
    results = {"drawers": st["drawers"], "wing": wing, "sessions_in_wing": len(sessions), "facts": n_facts,
               "requests": reqs, "prefill": info, "pages_ms": figs, "max_ms": worst, "target_ms": TARGET_MS,
               "first_views_ms": {k: [round(x, 1) for x in v] for k, v in cold.items()}, "met": worst < TARGET_MS,
               "loadavg_start": load, "search_over_socket_ms": socket_search}
    rows: list[tuple[str, Any]] = [
        (name, f"p50 {f['p50']:.1f}  p95 {f['p95']:.1f}  max {f['max']:.1f} ms  (n={f['n']})")
        for name, f in figs.items()]
    rows.append(("(reference) search over the socket alone",
                 f"p50 {socket_search['p50']:.1f}  p95 {socket_search['p95']:.1f}  max {socket_search['max']:.1f} ms"))
    verdict = "met" if worst < TARGET_MS else "NOT met"
    rows.append(("worst page time", f"{worst:.1f} ms (target < {TARGET_MS:.0f} ms: {verdict})"))
    report("viewer", rows, results, args.json,
           title=f"web viewer page times at {st['drawers']:,} drawers ({len(sessions)} sessions in wing {wing})")


if __name__ == "__main__":
    main()
