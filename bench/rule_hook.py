"""Rule hook: wall time of the PreToolUse ``rule`` hook process, interpreter start included, in turn with baselines.

    python bench/rule_hook.py [--n 60] [--rules 50] [--smoke] [--json PATH]

Runs the hook command ``mempal install-hooks`` writes (this Python, ``-P -S -c`` the hook's entry,
``mempal.install.hook_argv``) as ``... rule``, with Claude Code's PreToolUse JSON on stdin, against a real daemon
holding ``--rules`` rules (global and of the session's wing, ask and deny); half the calls match a deny rule (the
hook prints the decision), half match nothing (it prints nothing). In turn with each hook run, two baselines on the
same command line: the bare interpreter (``-c pass``) and the existing hook's no-op path (the file gate handed a
Bash call: it answers nothing without asking the daemon). The hook runs with bytecode caching on, as an installed
package has it; the first runs are warm-ups. Target: p95 under 50 ms including the process start.
"""

from __future__ import annotations

import json
import subprocess
import time
from typing import Any

from _harness import REPO, Daemon, bench_env, loadavg, parser, report, size, summary, wait_idle

from mempal.install import hook_argv

CWD = "/home/u/projects/app1"
WARMUP = 3


def run_once(cmd: list[str], stdin: bytes, env: dict[str, str]) -> tuple[float, subprocess.CompletedProcess[bytes]]:
    t0 = time.perf_counter()
    out = subprocess.run(cmd, input=stdin, env=env, capture_output=True, cwd=str(REPO), timeout=30)
    return (time.perf_counter() - t0) * 1000.0, out


def payload(tool: str, tool_input: dict[str, Any]) -> bytes:
    return json.dumps({"session_id": "bench", "transcript_path": "/nonexistent/x.jsonl", "cwd": CWD,
                       "permission_mode": "default", "hook_event_name": "PreToolUse", "tool_name": tool,
                       "tool_input": tool_input, "tool_use_id": "toolu_1"}).encode()


def add_rules(d: Daemon, n: int) -> None:
    d.call("rule_add", {"text": "never push to main", "match": r"git\s+push\b.*\bmain\b", "decision": "deny"})
    for i in range(n - 1):
        d.call("rule_add", {"text": f"rule {i}", "match": rf"\btool{i}\b.*--dangerous-{i}\b",
                            "decision": "deny" if i % 2 else "ask", "wing": "app1" if i % 3 == 0 else None,
                            "tool": "Bash" if i % 4 else "Bash|Edit|Write"})


def main() -> None:
    ap = parser(__doc__ or "", 60, 4)
    ap.add_argument("--rules", type=int, default=None, help="rules held (default 50; smoke 5)")
    args = ap.parse_args()
    n = size(args)
    n_rules = args.rules if args.rules is not None else (5 if args.smoke else 50)
    argv = hook_argv()
    cmd = [*argv, "rule"]
    bare_cmd = [a.replace("exec(", "pass #exec(") if a.startswith("import sys") else a for a in argv]
    noop_cmd = [*argv, "file"]
    match = payload("Bash", {"command": "git push origin main", "description": "push"})
    miss = payload("Bash", {"command": "pytest -q tests/unit", "description": "tests"})
    load_start = loadavg()
    with bench_env(keep=args.keep) as be:
        env = {k: v for k, v in be.env.items() if k != "PYTHONDONTWRITEBYTECODE"}
        with Daemon(be).start() as d:
            wait_idle(d, 300)
            add_rules(d, n_rules)
            hook_ms: list[float] = []
            deny_ms: list[float] = []
            bare_ms: list[float] = []
            noop_ms: list[float] = []
            decided = silent = 0
            for i in range(n + WARMUP):
                stdin = match if i % 2 == 0 else miss
                ms, out = run_once(cmd, stdin, env)
                if out.returncode != 0:
                    raise SystemExit(f"hook exited {out.returncode}: {out.stderr.decode(errors='replace')}")
                b_ms, b_out = run_once(bare_cmd, b"", env)
                o_ms, o_out = run_once(noop_cmd, miss, env)
                if b_out.returncode or o_out.returncode or o_out.stdout.strip():
                    raise SystemExit(f"a baseline failed: {b_out.stderr!r} {o_out.stderr!r} {o_out.stdout!r}")
                if i < WARMUP:
                    continue
                printed = out.stdout.strip()
                if stdin is match:
                    decision = json.loads(printed)["hookSpecificOutput"]["permissionDecision"] if printed else None
                    if decision != "deny":
                        raise SystemExit(f"the matching call was not denied: {printed!r}")
                    decided += 1
                    deny_ms.append(ms)
                elif printed:
                    raise SystemExit(f"a call matching no rule printed {printed!r}")
                else:
                    silent += 1
                hook_ms.append(ms)
                bare_ms.append(b_ms)
                noop_ms.append(o_ms)
    res: dict[str, Any] = {"command": " ".join(cmd), "rules": n_rules, "hook_ms": summary(hook_ms),
                           "deny_ms": summary(deny_ms), "python_bare_ms": summary(bare_ms),
                           "noop_hook_ms": summary(noop_ms), "denied": decided, "silent": silent,
                           "loadavg_start": load_start}
    report("rule_hook", [
        ("rules held", n_rules),
        ("rule hook p50 / p95 (ms)", f"{res['hook_ms']['p50']} / {res['hook_ms']['p95']}"),
        ("  of which deny answers p50 / p95 (ms)", f"{res['deny_ms']['p50']} / {res['deny_ms']['p95']}"),
        ("bare interpreter p50 / p95 (ms)", f"{res['python_bare_ms']['p50']} / {res['python_bare_ms']['p95']}"),
        ("existing hook's no-op path p50 / p95 (ms)", f"{res['noop_hook_ms']['p50']} / {res['noop_hook_ms']['p95']}"),
        ("denied / silent", f"{decided} / {silent}"),
        ("load at start", " ".join(f"{x:.2f}" for x in load_start)),
    ], res, args.json)


if __name__ == "__main__":
    main()
