"""``mempal`` commands for sources: watch add/list/remove, mine, init."""

from __future__ import annotations

import argparse
import json
import os
from typing import Any

from client.connection import call


def _abs(path: str) -> str:
    return os.path.abspath(os.path.expanduser(path))


def cmd_watch(args: argparse.Namespace) -> int:
    if args.action == "list":
        r = call("watch_list", {})
        if args.json:
            print(json.dumps(r, indent=2))
        else:
            for s in r["sources"]:
                missing = "" if s["exists"] else "  (missing)"
                wing = f" wing={s['wing']}" if s.get("wing") else ""
                print(f"{s['mode']:<9} {s['path']}{wing}{missing}")
        return 0
    if not args.path:
        print("mempal watch: give a PATH", flush=True)
        return 2
    if args.action == "add":
        params: dict[str, Any] = {"path": _abs(args.path), "mode": args.mode}
        if args.wing:
            params["wing"] = args.wing
        if args.token_budget:
            params["token_budget"] = args.token_budget
        if args.output:
            params["output"] = _abs(args.output)
        r = call("watch_add", params)
        print(json.dumps(r, indent=2) if args.json else
              f"watching {r['added']['path']} ({r['added']['mode']}); `mempal status` shows it catching up")
        return 0
    r = call("watch_remove", {"path": _abs(args.path)})
    print(json.dumps(r, indent=2) if args.json else f"stopped watching {r['removed']} ({r['note']})")
    return 0


def cmd_mine(args: argparse.Namespace) -> int:
    params: dict[str, Any] = {"paths": [_abs(p) for p in args.paths], "mode": args.mode, "dry_run": True,
                              "limit": args.limit or 0}
    if args.wing:
        params["wing"] = args.wing
    plan = call("mine", params, timeout=3600)
    r = plan if args.dry_run else _mine_with_progress(params, plan.get("plan", []), quiet=args.json)
    r.pop("plan", None)
    if args.json:
        print(json.dumps(r, indent=2))
        return 0
    verb = "would read" if r["dry_run"] else "read"
    print(f"{verb} {r['files']} files: {r['exchanges']} exchanges, {r['drawers']} drawers "
          f"({r['written']} new or changed)")
    for reason, n in sorted(r["skipped"].items()):
        print(f"  skipped {n}: {reason}")
    for err in r["errors"][:20]:
        print(f"  error: {err}")
    return 0


def _mine_with_progress(params: dict[str, Any], plan: list[list[str]], quiet: bool) -> dict[str, Any]:
    """Mine the planned files in small batches, with a progress bar (rich) and one merged summary."""
    total: dict[str, Any] = {"files": 0, "exchanges": 0, "drawers": 0, "written": 0, "skipped": {}, "errors": [],
                             "dry_run": False}

    def merge(r: dict[str, Any]) -> None:
        for k in ("files", "exchanges", "drawers", "written"):
            total[k] += r[k]
        for k, v in r["skipped"].items():
            total["skipped"][k] = max(total["skipped"].get(k, 0), v)
        total["errors"] += r["errors"]

    batches: list[tuple[str, list[str]]] = []
    for root, path in plan:
        if not batches or batches[-1][0] != root or len(batches[-1][1]) >= 10:
            batches.append((root, []))
        batches[-1][1].append(path)

    def run(root: str, batch: list[str]) -> None:
        merge(call("mine", {**params, "root": root, "paths": batch, "dry_run": False, "limit": 0},
                   timeout=24 * 3600))

    if quiet or not batches:
        for root, batch in batches:
            run(root, batch)
        return total
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    with Progress(TextColumn("mining"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn()) as bar:
        task = bar.add_task("mine", total=len(plan))
        for root, batch in batches:
            run(root, batch)
            bar.update(task, advance=len(batch))
    return total


def cmd_init(args: argparse.Namespace) -> int:
    params: dict[str, Any] = {"path": _abs(args.dir), "force": args.force}
    if args.wing:
        params["wing"] = args.wing
    r = call("init", params)
    print(json.dumps(r, indent=2) if args.json else
          f"wrote {r['path']} (wing {r['wing']}, {len(r['rooms'])} rooms); edit it, then "
          f"`mempal watch add {args.dir} --mode projects`")
    return 0


def register(sub: Any) -> None:
    p = sub.add_parser("watch", help="watched sources: add, list, remove")
    p.add_argument("action", choices=["add", "list", "remove"])
    p.add_argument("path", nargs="?")
    p.add_argument("--mode", choices=["convos", "projects", "pack"], default="convos")
    p.add_argument("--wing")
    p.add_argument("--token-budget", dest="token_budget", type=int, default=0)
    p.add_argument("-o", "--output")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_watch)

    p = sub.add_parser("mine", help="one-off ingest of files or folders, with a summary")
    p.add_argument("paths", nargs="+")
    p.add_argument("--mode", choices=["convos", "projects"], default="convos")
    p.add_argument("--wing")
    p.add_argument("--limit", type=int)
    p.add_argument("--dry-run", action="store_true")
    p.add_argument("--extract", choices=["general"], default="general", help="memory types (always on)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_mine)

    p = sub.add_parser("init", help="write DIR/mempal.toml with the project's wing and rooms")
    p.add_argument("dir")
    p.add_argument("--wing")
    p.add_argument("--force", action="store_true")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_init)
