"""``mempald`` commands that work on the data without a running daemon: ``migrate``, ``restore``, ``pack``,
``pack-prune`` (``bench longmemeval``, run the same way, is ``mempald.benchmarks.longmemeval``: a throw-away store,
not the palace).

Only the daemon's package opens a store or loads the model; the ``mempal`` CLI goes through the socket and,
when the daemon is down, says which of these to run. Each takes the instance lock of the data directory for
what it opens there, so it never runs beside a daemon on the same palace.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mempald.config import ConfigError, data_dir, load_settings

if TYPE_CHECKING:
    from mempal.cli.doctor import Check


def daemon_stopped() -> bool:
    """No daemon runs on this data dir: nobody holds its instance lock (a daemon that holds it but does not
    answer is hung, not stopped)."""
    from mempald.lock import instance_lock

    if not data_dir().is_dir():
        return True
    lock = instance_lock(data_dir())
    if not lock.acquire():
        return False
    lock.release()
    return True


def stopped_is_not_a_fault(checks: list[Check]) -> list[Check]:
    """``mempald doctor`` with the daemon stopped is an offline health check: the daemon and its socket are
    reported (a warning: exit 0 when everything checked offline is healthy), not failed. A daemon that holds
    the data dir's lock but does not answer still fails the check."""
    if not daemon_stopped():
        return checks
    return [dataclasses.replace(c, ok=False, warning=True, detail=f"stopped ({c.detail}); the checks below were "
                                "made offline", fix="run `mempald` to start it")
            if c.name in ("daemon", "socket") and not c.ok else c for c in checks]


def _print(result: dict[str, Any], as_json: bool, text: str) -> None:
    print(json.dumps(result, indent=2, default=str) if as_json else text)


def _embedder() -> Any:
    from mempald.embed.embedder import Embedder

    s = load_settings()
    return Embedder(s.embed.model, models_dir=data_dir() / "models", threads=s.embed.threads)


def cmd_migrate(args: argparse.Namespace) -> int:
    from mempald.embed.embedder import DEFAULT_DIM
    from mempald.errors import InvalidInput
    from mempald.lock import instance_lock
    from mempald.ops.migrate import migrate, open_target, target_spec
    from mempald.store.locate import open_location

    settings = load_settings()
    own = str(settings.store_path())
    source_spec = args.source or own
    try:
        target = target_spec(args.to)
    except InvalidInput as exc:
        print(f"mempald migrate: {exc.message}", file=sys.stderr)
        return 2
    lock = instance_lock(data_dir())
    touches_own = own in (source_spec, target, target.removeprefix("edge:"))
    if touches_own and not lock.acquire():
        print(f"mempald migrate: a daemon (pid {lock.holder()}) runs on {data_dir()}: use `mempal migrate --to "
              f"{args.to}` (it copies through the daemon), or stop the daemon first", file=sys.stderr)
        return 4

    def progress(done: int, total: int) -> None:
        if not args.json:
            print(f"\rmigrating: {done}/{total} points", end="", file=sys.stderr, flush=True)

    try:
        src = open_location(source_spec, settings, args.dim or DEFAULT_DIM)
        dst = open_target(target, settings, args.dim or DEFAULT_DIM)
        try:
            report = migrate(src, dst, progress=progress, checkpoint=data_dir() / "migrate-checkpoint.json")
        finally:
            src.close()
            dst.close()
            if not args.json:
                print(file=sys.stderr)
    finally:
        if touches_own:
            lock.release()
    result = dataclasses.asdict(report) | {"ok": report.ok}
    _print(result, args.json, f"copied {report.copied} points ({report.source_count} in the source, "
                              f"{report.target_count} in the target); sampled {report.sampled}, mismatched "
                              f"{report.mismatched}, missing {report.missing}")
    return 0 if report.ok else 1


def cmd_restore(args: argparse.Namespace) -> int:
    """A backup (``mempal backup``) back into this empty data dir (``mempald.features.restore``)."""
    from mempald.errors import Busy, MempalError
    from mempald.features.restore import RestoreFailed, restore

    def progress(message: str) -> None:
        if not args.json:
            print(f"restore: {message}", file=sys.stderr, flush=True)

    try:
        r = restore(Path(args.path), progress)
    except MempalError as exc:
        print(f"mempald restore: {exc.message}", file=sys.stderr)
        return 4 if isinstance(exc, Busy) else 1 if isinstance(exc, RestoreFailed) else 2
    kept = [f"{name}: {what}" for name, what in r["config"].items() if what != "restored"]
    _print(r, args.json, f"restored {r['drawers']} drawers (backup of {r['created_at']}) into {r['data_dir']}; "
                         "start the daemon" + "".join(f"\n  {k}" for k in kept))
    return 0


def cmd_pack(args: argparse.Namespace) -> int:
    from mempald.features.pack.run import run_pack

    root = Path(args.dir).expanduser().resolve()
    out = Path(args.output).expanduser().resolve() if args.output else root / "packed"
    r = run_pack(_embedder(), root, out, fmt=args.format, chunk_size=args.chunk_size,
                 compression_target=args.compression_target, topic=args.topic, token_budget=args.token_budget)
    h = r["header"]
    skipped = "".join(f"; not read: {x['file']} ({x['reason']})" for x in r["skipped"])
    _print(r, args.json, f"packed {h.get('files')} files: {h.get('tokens_in')} -> {h.get('tokens_out')} tokens; "
                         f"wrote {', '.join(r['paths'])}{skipped}")
    return 0


def cmd_pack_prune(args: argparse.Namespace) -> int:
    from mempald.features.pack.run import run_prune

    r = run_prune(_embedder(), Path(args.file).expanduser().resolve(), max_tokens=args.max_tokens,
                  min_importance=args.min_importance, similarity_threshold=args.similarity_threshold,
                  merge=not args.no_merge, dry_run=args.dry_run, output=Path(args.output) if args.output else None)
    _print(r, args.json, "\n".join([r["plan"], *(f"wrote {p}" for p in r.get("paths", []))]))
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("migrate", help="copy a palace between stores without the daemon (resumable, verified)")
    p.add_argument("--to", required=True, help="http(s)://host:6333, path:/dir, or an embedded store folder")
    p.add_argument("--from", dest="source", help="the source (default: this data dir's store)")
    p.add_argument("--dim", type=int, default=0, help="vector size (default: the default model's 384)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_migrate)

    p = sub.add_parser("restore", help="bring a backup (`mempal backup PATH`) back into an empty data dir (the "
                       "daemon must be stopped); every file is checked against the backup's manifest")
    p.add_argument("path", help="the backup folder")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_restore)

    p = sub.add_parser("pack", help="pack a markdown folder without the daemon (loads the model here)")
    p.add_argument("dir")
    p.add_argument("-o", "--output")
    p.add_argument("--format", choices=["single", "multi"], default="single")
    p.add_argument("--chunk-size", type=int, default=512)
    p.add_argument("--compression-target", type=float, default=6.0)
    p.add_argument("--topic")
    p.add_argument("--token-budget", type=int, default=0)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_pack)

    p = sub.add_parser("pack-prune", help="prune a pack without the daemon (loads the model here)")
    p.add_argument("file")
    p.add_argument("--max-tokens", type=int)
    p.add_argument("--min-importance", type=float)
    p.add_argument("--similarity-threshold", type=float, default=0.80)
    p.add_argument("--no-merge", action="store_true")
    p.add_argument("--dry-run", action="store_true")
    p.add_argument("-o", "--output")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_pack_prune)


def run(args: argparse.Namespace) -> int:
    try:
        code: int = args.func(args)
    except ConfigError as exc:
        print(f"mempald: {exc}", file=sys.stderr)
        return 2
    return code
