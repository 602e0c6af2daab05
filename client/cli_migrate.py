"""``mempal migrate --to URL [--from PATH]``: copy a palace between the embedded store and a Qdrant server,
either way. Through the daemon when it runs and owns the source store; in-process (with a progress bar)
otherwise."""

from __future__ import annotations

import argparse
import dataclasses
import json
from typing import Any

from client.connection import DaemonUnavailable, call


def cmd_migrate(args: argparse.Namespace) -> int:
    if args.source is None:
        try:
            report = call("migrate", {"to": args.to}, timeout=24 * 3600)
        except DaemonUnavailable:
            report = _local(args)
    else:
        report = _local(args)
    if args.json:
        print(json.dumps(report, indent=2, default=str))
    else:
        print(f"copied {report['copied']} points ({report['source_count']} in the source, "
              f"{report['target_count']} in the target); sampled {report['sampled']}, "
              f"mismatched {report['mismatched']}, missing {report['missing']}")
        for problem in report.get("problems", []):
            print(f"  problem: {problem}")
    return 0 if report.get("ok") else 1


def _local(args: argparse.Namespace) -> dict[str, Any]:
    from rich.progress import Progress

    from mempald.config import data_dir, load_settings
    from mempald.embed import DEFAULT_DIM
    from mempald.migrate import migrate
    from mempald.store.locate import open_location

    settings = load_settings()
    source_spec = args.source or str(settings.store_path())
    src = open_location(source_spec, settings, args.dim or DEFAULT_DIM)
    dst = open_location(args.to, settings, args.dim or DEFAULT_DIM)
    try:
        with Progress() as bar:
            task = bar.add_task("migrating", total=None)

            def progress(done: int, total: int) -> None:
                bar.update(task, completed=done, total=total)

            report = migrate(src, dst, progress=progress, checkpoint=data_dir() / "migrate-checkpoint.json")
    finally:
        src.close()
        dst.close()
    return dataclasses.asdict(report) | {"ok": report.ok}


def register(sub: Any) -> None:
    p = sub.add_parser("migrate", help="copy the palace to a Qdrant server (or back), resumable and verified")
    p.add_argument("--to", required=True, help="http(s)://host:6333, path:/dir, or an embedded store folder")
    p.add_argument("--from", dest="source", help="the source (default: this daemon's store)")
    p.add_argument("--dim", type=int, default=0, help="vector size (default: the default model's 384)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_migrate)

