"""``mempal`` commands for the palace's memory features (thin: each is one socket call)."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from client.connection import call


def _out(args: argparse.Namespace, result: Any, text: str) -> int:
    if getattr(args, "json", False):
        print(json.dumps(result, indent=2, ensure_ascii=False))
    else:
        print(text)
    return 0


def cmd_save(args: argparse.Namespace) -> int:
    text = sys.stdin.read() if args.text == "-" else args.text
    params: dict[str, Any] = {"text": text, "importance": args.importance, "dry_run": args.dry_run,
                              "agent": args.agent, "cwd": os.getcwd()}
    for k in ("wing", "room", "memory_type"):
        if getattr(args, k):
            params[k] = getattr(args, k)
    r = call("ingest", params)
    lines = []
    if r.get("warning"):
        lines.append(f"warning: {r['warning']}")
        lines += [f"  similar: {s['drawer_id']} ({s['score']}) {s['text'][:100]!r}" for s in r["similar"]]
    lines.append("dry run: nothing saved" if r.get("dry_run") else
                 f"saved to {r['wing']}: {', '.join(r.get('drawer_ids', []))}")
    return _out(args, r, "\n".join(lines))


def cmd_delete(args: argparse.Namespace) -> int:
    r = call("delete", {"drawer_id": args.drawer_ids, "reason": args.reason, "actor": args.actor})
    return _out(args, r, f"deleted {len(r['deleted'])} (soft; `mempal purge` removes them for good)"
                + (f"; not found: {', '.join(r['missing'])}" if r["missing"] else ""))


def cmd_purge(args: argparse.Namespace) -> int:
    params: dict[str, Any] = {"dry_run": args.dry_run}
    if args.before:
        params["before"] = args.before
    r = call("purge", params)
    return _out(args, r, f"{'would purge' if r['dry_run'] else 'purged'} {r['purged']} soft-deleted drawers")


def cmd_reindex(args: argparse.Namespace) -> int:
    r = call("reindex", {}, timeout=600)
    return _out(args, r, f"re-embedding {r['queued']} drawers with {r['model']}; "
                         "`mempal status --watch` shows progress")


def cmd_wake_up(args: argparse.Namespace) -> int:
    params: dict[str, Any] = {"format": args.format, "cwd": os.getcwd()}
    if args.wing:
        params["wing"] = args.wing
    if args.budget:
        params["budget"] = args.budget
    r = call("wake_up", params)
    return _out(args, r, f"{r['text']}\n\n({r['tokens']} tokens, wing {r['wing']})")


def cmd_recall(args: argparse.Namespace) -> int:
    r = call("recall_room", {"wing": args.wing, "room": args.room, "limit": args.limit})
    lines = [f"{r['wing']}/{r['room']}:"]
    for d in r["drawers"]:
        lines.append(f"- [{d['drawer_id'][:8]}] {str(d.get('timestamp') or '')[:10]} "
                     f"{' '.join(str(d['text']).split())[:200]}")
    return _out(args, r, "\n".join(lines))


def cmd_wings(args: argparse.Namespace) -> int:
    r = call("list_wings", {})
    return _out(args, r, "\n".join(f"{w}\t{n}" for w, n in sorted(r["wings"].items())))


def cmd_rooms(args: argparse.Namespace) -> int:
    r = call("list_rooms", {"wing": args.wing} if args.wing else {})
    return _out(args, r, "\n".join(f"{w}\t{n}" for w, n in sorted(r["rooms"].items())))


def cmd_tunnels(args: argparse.Namespace) -> int:
    r = call("tunnels", {})
    return _out(args, r, "\n".join(f"{room}: {', '.join(ws)}" for room, ws in r["tunnels"].items())
                or "no room is shared by two wings yet")


def cmd_taxonomy(args: argparse.Namespace) -> int:
    if args.action == "edit":
        r = call("taxonomy", {})
        path = Path(r["path"])
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(r["taxonomy"], indent=2, sort_keys=True))
        subprocess.call([os.environ.get("EDITOR", "vi"), str(path)])
        print(f"saved {path}; `systemctl --user reload mempald` (or SIGHUP) applies it to new drawers")
        return 0
    r = call("taxonomy", {})
    return _out(args, r, "\n".join(f"{room}: {', '.join(words)}" for room, words in sorted(r["taxonomy"].items())))


def cmd_identity(args: argparse.Namespace) -> int:
    from mempald.config import load_settings  # light (platformdirs, tomllib): the same path the daemon reads

    path = load_settings().identity_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists():
        path.write_text("# Who I am\n\nWrite a few lines about yourself and how you like to work. "
                        "mempal puts this at the top of every wake-up (L0).\n")
    return subprocess.call([os.environ.get("EDITOR", "vi"), str(path)])


def cmd_kg(args: argparse.Namespace) -> int:
    params: dict[str, Any] = {"op": args.op}
    for k in ("subject", "predicate", "object", "valid_from", "as_of", "entity", "ended"):
        v = getattr(args, k, None)
        if v:
            params[k] = v
    if args.op == "invalidate" and args.id:
        params["id"] = args.id
    r = call("kg", params)
    if "triples" in r:
        text = "\n".join(
            f"#{t['id']} {t['subject']} {t['predicate']} {t['object']} [{t.get('valid_from') or '?'} .. "
            f"{t.get('valid_to') or 'now'}]" for t in r["triples"]) or "no triples"
    elif "triple" in r:
        t = r["triple"]
        text = f"#{t['id']} {t['subject']} {t['predicate']} {t['object']}"
    else:
        text = json.dumps(r, indent=2)
    return _out(args, r, text)


def cmd_fact_check(args: argparse.Namespace) -> int:
    text = sys.stdin.read() if args.path in (None, "-") else Path(args.path).read_text()
    r = call("fact_check", {"text": text})
    lines = [f"{i['kind']}: {i['message']}" for i in r["issues"]] or ["no issues found"]
    _out(args, r, "\n".join(lines))
    return 1 if r["issues"] else 0


def cmd_compress(args: argparse.Namespace) -> int:
    params: dict[str, Any] = {"dry_run": args.dry_run}
    if args.wing:
        params["wing"] = args.wing
    elif args.text:
        params["text"] = args.text
    else:
        print("mempal compress: give TEXT or --wing W", file=sys.stderr)
        return 2
    r = call("compress", params, timeout=300)
    return _out(args, r, f"{r['aaak']}\n\n{r['tokens_before']} -> {r['tokens_after']} tokens "
                         f"({r['ratio']}:1, lossy)")


def register(sub: Any) -> None:
    p = sub.add_parser("save", help="save a memory by hand (warns about near-duplicates)")
    p.add_argument("text", help="the memory, or - to read stdin")
    p.add_argument("--wing")
    p.add_argument("--room")
    p.add_argument("--importance", type=int, default=3, choices=range(6))
    p.add_argument("--memory-type", dest="memory_type",
                   choices=["decision", "preference", "milestone", "problem", "emotional", "none"])
    p.add_argument("--agent", default="user")
    p.add_argument("--dry-run", action="store_true")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_save)

    p = sub.add_parser("delete", help="soft-delete drawers (audited; purge removes them)")
    p.add_argument("drawer_ids", nargs="+")
    p.add_argument("--reason", default="")
    p.add_argument("--actor", default="user")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_delete)

    p = sub.add_parser("purge", help="remove soft-deleted drawers for good")
    p.add_argument("--before", help="only those deleted before this date or age (7d)")
    p.add_argument("--dry-run", action="store_true")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_purge)

    p = sub.add_parser("reindex", help="re-embed every drawer with the configured model (resumable)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_reindex)

    p = sub.add_parser("wake-up", help="L0 identity + L1 essential story of a wing, with its token count")
    p.add_argument("--wing")
    p.add_argument("--format", choices=["text", "aaak"], default="text")
    p.add_argument("--budget", type=int)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_wake_up)

    p = sub.add_parser("recall", help="L2: the drawers of one room")
    p.add_argument("--wing", required=True)
    p.add_argument("--room", required=True)
    p.add_argument("--limit", type=int, default=20)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_recall)

    for name, fn in (("wings", cmd_wings), ("tunnels", cmd_tunnels)):
        p = sub.add_parser(name, help=f"list {name}")
        p.add_argument("--json", action="store_true")
        p.set_defaults(func=fn)
    p = sub.add_parser("rooms", help="list rooms (of one wing)")
    p.add_argument("--wing")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_rooms)

    p = sub.add_parser("taxonomy", help="the room keywords: list or edit")
    p.add_argument("action", choices=["list", "edit"], nargs="?", default="list")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_taxonomy)

    p = sub.add_parser("identity", help="edit the L0 identity file")
    p.add_argument("action", choices=["edit"])
    p.set_defaults(func=cmd_identity)

    p = sub.add_parser("kg", help="temporal knowledge graph")
    p.add_argument("op", choices=["add", "query", "invalidate", "timeline", "stats"])
    p.add_argument("subject", nargs="?")
    p.add_argument("predicate", nargs="?")
    p.add_argument("object", nargs="?")
    p.add_argument("--valid-from", dest="valid_from")
    p.add_argument("--as-of", dest="as_of")
    p.add_argument("--ended")
    p.add_argument("--entity")
    p.add_argument("--id", type=int)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_kg)

    p = sub.add_parser("fact-check", help="check a text against the knowledge graph (exit 1 on issues)")
    p.add_argument("path", nargs="?", help="a file, or - / nothing for stdin")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_fact_check)

    p = sub.add_parser("compress", help="AAAK-compress a text or a wing (lossy; reports the real ratio)")
    p.add_argument("text", nargs="?")
    p.add_argument("--wing")
    p.add_argument("--dry-run", action="store_true")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_compress)
