"""Freshness for Gemini CLI and Antigravity CLI: how long after the CLI writes a prompt ``search`` finds it.

    python bench/freshness_gemini.py --agent gemini|antigravity [--n 50] [--smoke] [--json PATH] [--keep]

The daemon runs on a home laid out as the CLI lays it out, found by the format's declared places (no watch
added): Gemini CLI's ``~/.gemini/tmp/<project>/chats/session-*.json`` rewritten whole with one more exchange per
probe (as the CLI saves it), or Antigravity CLI's ``brain/<id>/.system_generated/logs/transcript_full.jsonl``
with the steps of one more exchange appended. The client searches every 25 ms: "keyword" is the first time a
search for the prompt's unique word returns it, "semantic" the first time a search for the whole prompt returns
it with a dense score. Target (issue 42): keyword within 2 s.
"""

from __future__ import annotations

import json
import random
import time
import uuid
from pathlib import Path
from typing import Any

from _harness import Daemon, bench_env, loadavg, paragraph, parser, report, size, summary, wait_idle

POLL_S = 0.025
GIVE_UP_S = 60.0
PROJECT = "/home/u/projects/live"
SID = "5b1c2d3e-9f8a-4b7c-8d6e-0123456789ab"


class Gemini:
    def __init__(self, home: Path) -> None:
        gem = home / ".gemini"
        (gem / "tmp" / "live" / "chats").mkdir(parents=True)
        (gem / "projects.json").write_text(json.dumps({"projects": {PROJECT: "live"}}))
        self.path = gem / "tmp" / "live" / "chats" / f"session-2026-03-02T10-00-{SID[:8]}.json"
        self.messages: list[dict[str, Any]] = []

    def add(self, i: int, prompt: str, answer: str) -> str:
        key = f"{SID[:8]}-{i:04d}-user"
        self.messages += [{"id": key, "timestamp": "2026-03-02T10:00:00.000Z", "type": "user", "content": prompt},
                          {"id": f"{SID[:8]}-{i:04d}-model", "timestamp": "2026-03-02T10:00:05.000Z",
                           "type": "gemini", "content": answer, "model": "gemini-3-pro-preview"}]
        doc = {"sessionId": SID, "projectHash": "live", "startTime": "2026-03-02T10:00:00.000Z",
               "lastUpdated": f"2026-03-02T10:{i % 60:02d}:05.000Z", "messages": self.messages}
        tmp = self.path.with_name(".session.tmp")
        tmp.write_text(json.dumps(doc, indent=2))
        tmp.replace(self.path)  # the CLI rewrites its session file whole
        return key


class Antigravity:
    def __init__(self, home: Path) -> None:
        root = home / ".gemini" / "antigravity-cli"
        logs = root / "brain" / SID / ".system_generated" / "logs"
        logs.mkdir(parents=True)
        (root / "history.jsonl").write_text(json.dumps({"display": "x", "timestamp": 0, "workspace": PROJECT,
                                                        "conversationId": SID}) + "\n")
        self.path = logs / "transcript_full.jsonl"
        self.path.touch()
        self.step = 0

    def add(self, i: int, prompt: str, answer: str) -> str:
        key = f"step:{self.step}"
        lines = [{"step_index": self.step, "source": "USER_EXPLICIT", "type": "USER_INPUT", "status": "DONE",
                  "created_at": "2026-07-08T10:00:00Z", "content": f"<USER_REQUEST>\n{prompt}\n</USER_REQUEST>"},
                 {"step_index": self.step + 1, "source": "MODEL", "type": "PLANNER_RESPONSE", "status": "DONE",
                  "created_at": "2026-07-08T10:00:05Z", "content": answer}]
        self.step += 2
        with self.path.open("a") as fh:
            fh.write("".join(json.dumps(x) + "\n" for x in lines))
        return key


def probe(d: Daemon, writer: Gemini | Antigravity, i: int, rnd: random.Random) -> dict[str, Any]:
    word = f"zq{uuid.uuid4().hex[:10]}"
    prompt = f"Why does the {word} migration lock the orders table during the nightly deploy run {i}?"
    key = writer.add(i, prompt, f"The {word} migration takes an exclusive lock; " + paragraph(rnd, 60))
    t0 = time.monotonic()
    keyword: float | None = None
    semantic: float | None = None
    while time.monotonic() - t0 < GIVE_UP_S:
        if keyword is None:
            hits = d.call("search", {"query": word, "limit": 10})["hits"]
            if any(h.get("exchange_key") == key for h in hits):
                keyword = time.monotonic() - t0
        hits = d.call("search", {"query": prompt, "limit": 50})["hits"]
        mine = [h for h in hits if h.get("exchange_key") == key]
        if mine and mine[0]["scores"]["dense"] is not None:
            semantic = time.monotonic() - t0
            keyword = keyword if keyword is not None else semantic
            break
        time.sleep(POLL_S)
    return {"keyword_s": keyword, "semantic_s": semantic}


def main() -> None:
    ap = parser(__doc__ or "", 50, 3)
    ap.add_argument("--agent", choices=["gemini", "antigravity"], required=True)
    args = ap.parse_args()
    n = size(args)
    rnd = random.Random(5)
    load_start = loadavg()
    with bench_env(keep=args.keep) as be:
        writer: Gemini | Antigravity = Gemini(be.home) if args.agent == "gemini" else Antigravity(be.home)
        writer.add(0, "Where is the first deploy documented?", "In docs/deploy.md.")
        with Daemon(be).start() as d:
            wait_idle(d, 120)
            samples = []
            for i in range(1, n + 1):
                samples.append(probe(d, writer, i, rnd))
                time.sleep(0.2)
    kw = [s["keyword_s"] * 1000 for s in samples if s["keyword_s"] is not None]
    se = [s["semantic_s"] * 1000 for s in samples if s["semantic_s"] is not None]
    res: dict[str, Any] = {"agent": args.agent, "n": n, "keyword_ms": summary(kw), "semantic_ms": summary(se),
                           "missed_keyword": n - len(kw), "missed_semantic": n - len(se), "samples": samples,
                           "loadavg_start": load_start}
    report(f"freshness ({args.agent})", [
        ("prompts written", n),
        ("keyword p50 / p95 (ms)", f"{res['keyword_ms']['p50']} / {res['keyword_ms']['p95']}  (target < 2000)"),
        ("semantic p50 / p95 (ms)", f"{res['semantic_ms']['p50']} / {res['semantic_ms']['p95']}"),
        ("missed (keyword / semantic)", f"{res['missed_keyword']} / {res['missed_semantic']}"),
        ("load at start", " ".join(f"{x:.2f}" for x in load_start)),
    ], res, args.json)


if __name__ == "__main__":
    main()
