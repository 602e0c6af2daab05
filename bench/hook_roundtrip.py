"""Hook round trip: wall time of the UserPromptSubmit hook process, interpreter start included.

    python bench/hook_roundtrip.py [--n 50] [--drawers 10000] [--smoke] [--json PATH]

Runs the hook command ``mempal install-hooks`` writes (this Python, ``-P -S -c`` the hook's entry,
``mempal.install.hook_argv``) as ``... prompt``, with Claude Code's hook JSON on stdin, against a real daemon
whose store is pre-filled with ``--drawers`` drawers (``bench/_prefill.py``); the hook asks the daemon for
``recall`` (inbox + relevant memories, a search). Also times a bare ``python -c pass`` for the interpreter's own
share. The hook runs with bytecode caching on, as an installed package has it (pip compiles a wheel's modules when
it installs them): a ``PYTHONDONTWRITEBYTECODE`` in this environment is dropped for the hook's process, and
the warm-up runs write the client's ``.pyc`` files.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import time
from typing import Any

from _harness import REPO, Daemon, bench_env, loadavg, parser, report, sentence, size, summary, wait_idle
from _prefill import prefilled

from mempal.install import hook_argv


def run_once(cmd: list[str], stdin: bytes, env: dict[str, str]) -> tuple[float, subprocess.CompletedProcess[bytes]]:
    t0 = time.perf_counter()
    out = subprocess.run(cmd, input=stdin, env=env, capture_output=True, cwd=str(REPO), timeout=30)
    return (time.perf_counter() - t0) * 1000.0, out


def main() -> None:
    ap = parser(__doc__ or "", 50, 3)
    ap.add_argument("--drawers", type=int, default=None, help="drawers in the store (default 10000; smoke 300)")
    args = ap.parse_args()
    n = size(args)
    n_drawers = args.drawers if args.drawers is not None else (300 if args.smoke else 10_000)
    cmd = [*hook_argv(), "prompt"]
    rnd = random.Random(4)
    load_start = loadavg()
    with bench_env(keep=args.keep) as be:
        prefilled(be.data_dir, n_drawers)
        hook_env = {k: v for k, v in be.env.items() if k != "PYTHONDONTWRITEBYTECODE"}
        with Daemon(be).start() as d:
            wait_idle(d, 300)
            bare = [run_once([sys.executable, "-c", "pass"], b"", hook_env)[0] for _ in range(max(3, n // 5))]
            times = []
            outputs = 0
            for i in range(n + 2):
                payload = {"session_id": "bench-session", "transcript_path": str(be.projects / "x.jsonl"),
                           "cwd": "/home/u/projects/app1", "hook_event_name": "UserPromptSubmit",
                           "prompt": f"How did we fix the {sentence(rnd, 5, 12)}"}
                ms, out = run_once(cmd, json.dumps(payload).encode(), hook_env)
                if out.returncode != 0:
                    raise SystemExit(f"hook exited {out.returncode}: {out.stderr.decode(errors='replace')}")
                if i >= 2:  # two warm-ups (page cache)
                    times.append(ms)
                    outputs += bool(out.stdout.strip())
    res: dict[str, Any] = {"command": " ".join(cmd), "drawers": n_drawers,
           "hook_ms": summary(times), "python_bare_ms": summary(bare), "answers_with_context": outputs,
           "loadavg_start": load_start}
    report("hook_roundtrip", [
        ("command", res["command"]),
        ("store drawers (pre-filled)", n_drawers),
        ("hook p50 / p95 (ms)", f"{res['hook_ms']['p50']} / {res['hook_ms']['p95']}"),
        ("bare interpreter p50 (ms)", res["python_bare_ms"]["p50"]),
        ("runs that injected context", f"{outputs} / {len(times)}"),
        ("load at start", " ".join(f"{x:.2f}" for x in load_start)),
    ], res, args.json)


if __name__ == "__main__":
    main()
