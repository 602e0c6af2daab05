"""LongMemEval retrieval benchmark: ``python bench/longmemeval.py FILE [--limit N] [--threads N] [--json PATH]``.

The runner is ``mempald.benchmarks.longmemeval`` (installed, so ``mempald bench longmemeval FILE`` and
``mempal bench longmemeval FILE`` run the same code): one wing per question, the real ingest, store and
search; session R@5, R@10 (recall-any, as MemPalace and mempal report them), recall-all, NDCG@10, and turn
recall from ``has_answer``. The data (LongMemEval_S, MIT) is read by path, never copied into this repository.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from mempald.benchmarks import longmemeval  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    longmemeval.add_arguments(ap)
    args = ap.parse_args(argv)
    if not args.file.is_file():
        print(f"no LongMemEval file at {args.file}", file=sys.stderr)
        return 2
    return longmemeval.main(args)


if __name__ == "__main__":
    sys.exit(main())
