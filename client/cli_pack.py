"""``mempal pack DIR`` and ``mempal pack prune FILE``: through the daemon when it runs (its model embeds),
in-process otherwise (loading the model here, once)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from client.connection import DaemonUnavailable, call


def _local_embedder() -> Any:
    from mempald.config import data_dir, load_settings
    from mempald.embed import Embedder

    s = load_settings()
    return Embedder(s.embed.model, models_dir=data_dir() / "models", threads=s.embed.threads)


def cmd_pack(args: argparse.Namespace) -> int:
    if args.dir == "prune":
        print("usage: mempal pack prune FILE [--max-tokens N] ...", file=sys.stderr)
        return 2
    root = os.path.abspath(os.path.expanduser(args.dir))
    out = os.path.abspath(os.path.expanduser(args.output)) if args.output else os.path.join(root, "packed")
    params: dict[str, Any] = {"dir": root, "output": out, "format": args.format, "chunk_size": args.chunk_size,
                              "compression_target": args.compression_target}
    if args.topic:
        params["topic"] = args.topic
    try:
        r = call("pack", params, timeout=3600)
    except DaemonUnavailable:
        from mempald.packing import run_pack

        r = run_pack(_local_embedder(), Path(root), Path(out), fmt=args.format, chunk_size=args.chunk_size,
                     compression_target=args.compression_target, topic=args.topic)
    if args.json:
        print(json.dumps(r, indent=2))
        return 0
    h = r["header"]
    print(f"packed {h.get('files')} files: {h.get('tokens_in')} -> {h.get('tokens_out')} tokens "
          f"({h.get('ratio')}:1, target {h.get('target')}{'' if h.get('target_met') else ' NOT met'})")
    for note in r.get("notes", []):
        print(f"  note: {note}")
    for p in r["paths"]:
        print(f"  wrote {p}")
    return 0


def cmd_prune(args: argparse.Namespace) -> int:
    file = os.path.abspath(os.path.expanduser(args.file))
    params: dict[str, Any] = {"file": file, "similarity_threshold": args.similarity_threshold,
                              "no_merge": args.no_merge, "dry_run": args.dry_run}
    if args.max_tokens is not None:
        params["max_tokens"] = args.max_tokens
    if args.min_importance is not None:
        params["min_importance"] = args.min_importance
    if args.output:
        params["output"] = os.path.abspath(args.output)
    try:
        r = call("pack_prune", params, timeout=3600)
    except DaemonUnavailable:
        from mempald.packing import run_prune

        r = run_prune(_local_embedder(), Path(file), max_tokens=args.max_tokens, min_importance=args.min_importance,
                      similarity_threshold=args.similarity_threshold, merge=not args.no_merge, dry_run=args.dry_run,
                      output=Path(args.output) if args.output else None)
    print(json.dumps(r, indent=2) if args.json else r["plan"])
    for p in r.get("paths", []):
        print(f"wrote {p}")
    return 0


def register(sub: Any) -> None:
    p = sub.add_parser("pack", help="compress a markdown folder into a tiered summary (or: pack prune FILE)")
    p.add_argument("dir")
    p.add_argument("-o", "--output")
    p.add_argument("--format", choices=["single", "multi"], default="single")
    p.add_argument("--chunk-size", type=int, default=512)
    p.add_argument("--compression-target", type=float, default=6.0)
    p.add_argument("--topic")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_pack)


def maybe_prune(argv: list[str]) -> int | None:
    """``mempal pack prune ...`` has its own options: parse it here, before the main parser."""
    if len(argv) < 2 or argv[0] != "pack" or argv[1] != "prune":
        return None
    ap = argparse.ArgumentParser(prog="mempal pack prune")
    ap.add_argument("file")
    ap.add_argument("--max-tokens", type=int)
    ap.add_argument("--min-importance", type=float)
    ap.add_argument("--similarity-threshold", type=float, default=0.80)
    ap.add_argument("--no-merge", action="store_true")
    ap.add_argument("--dry-run", action="store_true")
    ap.add_argument("-o", "--output")
    ap.add_argument("--json", action="store_true")
    return cmd_prune(ap.parse_args(argv[2:]))
