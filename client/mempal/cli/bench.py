"""``mempal bench longmemeval FILE``: the LongMemEval retrieval benchmark, as mempal users know it.

The benchmark opens a throw-away store and loads the model, which only the daemon's package does: this command
runs ``mempald bench longmemeval`` (``mempald.benchmarks.longmemeval``) with the same interpreter and passes its
output and exit code through. It does not need the daemon and does not touch the palace.
"""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys


def cmd_longmemeval(args: argparse.Namespace) -> int:
    if importlib.util.find_spec("mempald") is None:
        print("mempal bench: the daemon's package (mempald) is not installed with this client", file=sys.stderr)
        return 2
    argv = [sys.executable, "-m", "mempald", "bench", "longmemeval", args.file]
    if args.limit is not None:
        argv += ["--limit", str(args.limit)]
    if args.threads:
        argv += ["--threads", str(args.threads)]
    if args.json:
        argv += ["--json", args.json]
    return subprocess.run(argv, check=False).returncode


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    bench = sub.add_parser("bench", help="retrieval benchmarks (run here, without the daemon)")
    which = bench.add_subparsers(dest="bench", required=True)
    p = which.add_parser("longmemeval", help="LongMemEval_S layout: session R@5, R@10, NDCG@10 and turn recall")
    p.add_argument("file", help="the LongMemEval JSON file (e.g. longmemeval_s_cleaned.json)")
    p.add_argument("--limit", type=int, default=None, help="only the first N questions")
    p.add_argument("--threads", type=int, default=0, help="embedding threads (0: the model's default)")
    p.add_argument("--json", default=None, help="also write every figure, per question too, to this file")
    p.set_defaults(func=cmd_longmemeval)
