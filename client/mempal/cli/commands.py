"""The ``mempal`` commands: one per socket method that declares a command line (its parser is derived from the
declaration), plus the few commands that run here without the daemon (config, logs, doctor, install-*, mcp).

A socket command only adds what the declaration cannot say: how its result reads (``present``), client-side
options such as ``status --watch`` (``options``), a tweak of the parameters (``prepare``), or a whole
different way to run (``run``, for ``mine`` with its progress bar and ``taxonomy edit``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mempal import disclosure_text as dtext
from mempal.cli import archive, sync_present
from mempal.cli import present as show
from mempal.cli import rule_present as rules
from mempal.connection import DaemonUnavailable, call
from mempal.methods import METHODS

Present = Callable[[argparse.Namespace, Any], str]
Options = Callable[[argparse.ArgumentParser], None]
Prepare = Callable[[argparse.Namespace, dict[str, Any]], dict[str, Any]]
Run = Callable[[argparse.Namespace, dict[str, Any]], int]


class Command:
    __slots__ = ("exit_code", "method", "offline", "options", "prepare", "present", "run")

    def __init__(self, method: str, present: Present = show.as_json, *, options: Options | None = None,
                 prepare: Prepare | None = None, run: Run | None = None,
                 exit_code: Callable[[Any], int] | None = None, offline: str = "") -> None:
        self.method = METHODS[method]
        self.offline = offline  # the ``mempald`` command that does the same without a daemon
        self.present = present
        self.options = options
        self.prepare = prepare
        self.run = run
        self.exit_code = exit_code  # the command's exit code from its result (default 0)


def call_method(name: str, params: dict[str, Any], args: argparse.Namespace) -> Any:
    """Call the daemon, waiting as long as the method declares (or ``mempal --timeout`` says)."""
    return call(name, params, timeout=getattr(args, "timeout", None) or METHODS[name].timeout)


# commands with something of their own ------------------------------------------------------------------------
def _status_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--watch", action="store_true", help="follow the daemon catching up: live bars in a terminal, "
                   "one line per change otherwise; until Ctrl-C or SIGTERM")
    p.add_argument("--until-idle", action="store_true", help="with --watch: stop (exit 0) once nothing is left "
                   "to read or embed")
    p.add_argument("--interval", type=float, default=1.0, help="seconds between updates with --watch")


def _status_run(args: argparse.Namespace, params: dict[str, Any]) -> int:
    if args.watch:
        from mempal.cli.progress import watch_status

        return watch_status(args.interval, args.until_idle)
    return _default(COMMANDS["status"], args, params)


def _status_present(args: argparse.Namespace, r: Any) -> str:
    figures = dtext.token_figures(r.get("tokens"))
    return show.status(args, r) + (f"\n{figures}" if figures else "")


def _search_present(args: argparse.Namespace, r: Any) -> str:
    return dtext.index(r) if r.get("format") == "index" else show.search(args, r)


def unknown_wings(wanted: Any, known: Any) -> list[str]:
    """A line for each wing asked for that does not exist, naming the closest that does."""
    import difflib

    names = sorted(str(w) for w in (known or {}))
    out = []
    for wing in [wanted] if isinstance(wanted, str) else list(wanted or ()):
        if wing in names:
            continue
        close = difflib.get_close_matches(wing, names, n=1, cutoff=0.5)
        hint = f"; the closest is {close[0]!r}" if close else (f"; the wings are {', '.join(names[:12])}" if names
                                                                else "; nothing is stored yet")
        out.append(f"there is no wing {wing!r}{hint}")
    return out


def _search_run(args: argparse.Namespace, params: dict[str, Any]) -> int:
    """A search; when it finds nothing and names a wing that does not exist, it says so (a misspelt wing is not
    an empty answer)."""
    result = call_method("search", params, args)
    if not result.get("hits") and params.get("wing"):
        wrong = unknown_wings(params["wing"], call_method("list_wings", {}, args).get("wings"))
        if wrong:
            if getattr(args, "json", False):
                result["unknown_wings"] = wrong
            else:
                print("\n".join(f"mempal: {w}" for w in wrong), file=sys.stderr)
                return 1
    print(show.as_json(args, result) if getattr(args, "json", False) else _search_present(args, result))
    return 0


def _note(text: str) -> None:
    print(f"mempal: {text}", file=sys.stderr)


# spellings of the seed tools (MemPal, mempal, memorypack): hidden options with their meaning here -----------
def _fact_check_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--wing", dest="scope_wing", help=argparse.SUPPRESS)
    p.add_argument("--room", dest="scope_room", help=argparse.SUPPRESS)


def _fact_check_prepare(args: argparse.Namespace, params: dict[str, Any]) -> dict[str, Any]:
    if args.scope_wing or args.scope_room:
        _note("fact-check reads the whole knowledge graph (it is not divided into wings): --wing/--room change "
              "nothing here")
    today = params.get("today")
    if isinstance(today, str) and len(today) > 10 and today[4:5] == "-" and today[10:11] in ("T", " "):
        params["today"] = today[:10]  # `--now 2026-03-01T12:00:00Z` (an RFC 3339 instant): its date
    return params


def _compress_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", dest="entities", metavar="ENTITIES_JSON", help=argparse.SUPPRESS)


def _watch_add_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--interval", type=float, help=argparse.SUPPRESS)


def _watch_add_prepare(args: argparse.Namespace, params: dict[str, Any]) -> dict[str, Any]:
    if args.interval is not None:
        _note("mempald watches folders continuously (file events and a periodic scan): --interval is not needed")
    return params


def _save_prepare(_args: argparse.Namespace, params: dict[str, Any]) -> dict[str, Any]:
    if params.get("text") == "-":
        params["text"] = sys.stdin.read()
    return params


def _compress_prepare(args: argparse.Namespace, params: dict[str, Any]) -> dict[str, Any]:
    if not params.get("text") and not params.get("wing"):
        raise UsageError("give TEXT or --wing W")
    if getattr(args, "entities", None):
        _note(entities_note(args.entities))
    return params


def entities_note(path: str) -> str:
    """What ``compress --config entities.json`` (MemPal's entity codes) means here: the codes live in config."""
    try:
        with open(os.path.expanduser(path), encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError) as exc:
        raise UsageError(f"--config {path}: cannot read it as JSON ({exc})") from None
    table = data.get("people", data) if isinstance(data, dict) else {}
    names = sorted(str(k) for k, v in table.items() if isinstance(v, str)) if isinstance(table, dict) else []
    hint = "; ".join(f"`mempal config set people.{n} {table[n]}`" for n in names[:3])
    return ("entity codes are read from the [people] table of config.toml, not from --config"
            + (f": to use the {len(names)} in {path}, add them there ({hint}{'; ...' if len(names) > 3 else ''})"
               if names else ""))


def _kg_prepare(_args: argparse.Namespace, params: dict[str, Any]) -> dict[str, Any]:
    if params.get("op") == "timeline" and not params.get("entity") and params.get("subject"):
        params["entity"] = params.pop("subject")  # `mempal kg timeline ENTITY`
    return params


def _taxonomy_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("action", choices=["list", "edit"], nargs="?", default="list")


def _taxonomy_run(args: argparse.Namespace, params: dict[str, Any]) -> int:
    if args.action != "edit":
        return _default(COMMANDS["taxonomy"], args, params)
    r = call_method("taxonomy", {}, args)
    path = Path(r["path"])
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(r["taxonomy"], indent=2, sort_keys=True))
    subprocess.call([os.environ.get("EDITOR", "vi"), str(path)])
    print(f"saved {path}; `systemctl --user reload mempald` (or SIGHUP) applies it to new drawers")
    return 0


def _mine_run(args: argparse.Namespace, params: dict[str, Any]) -> int:
    from mempal.cli.progress import mine_with_progress

    if params.get("dry_run"):  # the ingest's own reading of every file, nothing stored (as `mempal inspect`)
        r = call_method("mine", params, args)
    else:
        plan = call_method("mine", {**params, "plan_only": True}, args)
        r = mine_with_progress(params, plan.get("plan", []), quiet=args.json)
    r.pop("plan", None)
    print(show.as_json(args, r) if args.json else show.mine(args, r))
    return 0


def _mine_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--extract", choices=["general"], default="general", help=argparse.SUPPRESS)  # always on


def _pack_run(args: argparse.Namespace, params: dict[str, Any]) -> int:
    """``pack`` with a progress bar on stderr when that is a terminal (and the answer is not --json)."""
    if args.json or not sys.stderr.isatty():
        return _default(COMMANDS["pack"], args, params)
    from mempal.cli.progress import pack_with_progress

    r = pack_with_progress(params, getattr(args, "timeout", None) or METHODS["pack"].timeout)
    print(show.pack(args, r))
    return 0


def _migrate_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--from", dest="source", help=argparse.SUPPRESS)


def _migrate_prepare(args: argparse.Namespace, params: dict[str, Any]) -> dict[str, Any]:
    if args.source:
        raise UsageError(f"copying from another store does not go through the daemon: run "
                         f"`mempald migrate --from {args.source} --to {params.get('to')}`")
    return params


def _forget_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--yes", "-y", action="store_true", help="forget without asking (the counts are still printed)")


def _forget_run(args: argparse.Namespace, params: dict[str, Any]) -> int:
    """Counts first (a dry run); then, unless --dry-run, ask (or take --yes) and forget."""
    preview = call_method("forget", {**params, "dry_run": True}, args)
    if params.get("dry_run") or not (preview.get("drawers") or params.get("reingest")):
        print(show.as_json(args, preview) if args.json else show.forget(args, preview))
        return 0
    if not args.yes:
        print(show.forget_preview(preview), file=sys.stderr)
        if not sys.stdin.isatty():
            _note("nothing changed: add --yes to forget them")
            return 1
        if input("forget them? [y/N] ").strip().lower() not in ("y", "yes"):
            _note("nothing changed")
            return 1
    r = call_method("forget", params, args)
    print(show.as_json(args, r) if args.json else show.forget(args, r))
    return 0


class UsageError(Exception):
    """The command line is wrong in a way argparse cannot tell (exit 2, with the message)."""


COMMANDS: dict[str, Command] = {c.method.name: c for c in (
    Command("status", _status_present, options=_status_options, run=_status_run),
    Command("search", _search_present, run=_search_run),
    Command("get", lambda _a, r: dtext.drawers(r)),
    Command("timeline", lambda _a, r: dtext.timeline(r)),
    Command("file_context", lambda _a, r: dtext.file_context(r)),
    Command("ingest", show.save, prepare=_save_prepare),
    Command("delete", show.delete),
    Command("restore", show.restore),
    Command("purge", show.purge),
    Command("reindex", show.reindex),
    Command("compress", show.compress, options=_compress_options, prepare=_compress_prepare),
    Command("wake_up", show.wake_up),
    Command("recall_room", show.recall_room),
    Command("list_wings", show.counts("wings")),
    Command("list_rooms", show.counts("rooms")),
    Command("tunnels", show.tunnels),
    Command("taxonomy", show.taxonomy, options=_taxonomy_options, run=_taxonomy_run),
    Command("kg", show.kg, prepare=_kg_prepare),
    Command("fact_check", show.fact_check, options=_fact_check_options, prepare=_fact_check_prepare,
            exit_code=lambda r: 1 if r["issues"] else 0),
    Command("watch_add", show.watch_add, options=_watch_add_options, prepare=_watch_add_prepare),
    Command("watch_remove", show.watch_remove),
    Command("watch_list", show.watch_list),
    Command("mine", show.mine, options=_mine_options, run=_mine_run),
    Command("init", show.init),
    Command("migrate", show.migrate, options=_migrate_options, prepare=_migrate_prepare,
            exit_code=lambda r: 0 if r.get("ok") else 1, offline="mempald migrate"),
    Command("pack", show.pack, run=_pack_run, offline="mempald pack"),
    Command("pack_prune", show.pack_prune, offline="mempald pack-prune"),
    Command("cowork_push", show.cowork_push),
    Command("cowork_drain", show.cowork_drain),
    Command("cowork_status", show.cowork_status),
    Command("peek_partner", show.peek_partner),
    Command("inspect", show.inspect),
    Command("reread", show.reread),
    Command("forget", show.forget, options=_forget_options, run=_forget_run),
    Command("exclude_add", show.exclude_add),
    Command("exclude_list", show.exclude_list),
    Command("exclude_remove", show.exclude_remove),
    Command("export", show.export),
    Command("import_drawers", show.import_drawers),
    Command("backup", show.backup),
    Command("audit", show.audit),
    Command("rule_add", rules.rule_add),
    Command("rule_list", rules.rule_list),
    Command("rule_remove", rules.rule_remove),
    Command("rule_test", rules.rule_test),
    Command("rule_suggestions", rules.rule_suggestions),
    Command("rule_accept", rules.rule_accept),
    Command("rule_dismiss", rules.rule_dismiss),
    Command("sync_init", sync_present.sync_joined),
    Command("sync_join", sync_present.sync_joined),
    Command("sync_status", sync_present.sync_status),
    Command("sync_leave", sync_present.sync_leave),
    Command("machines", sync_present.machines),
    Command("archive_status", archive.status),
    Command("archive_list", archive.listing),
    Command("restore_session", archive.restore_session),
)}


def _default(cmd: Command, args: argparse.Namespace, params: dict[str, Any]) -> int:
    result = call_method(cmd.method.name, params, args)
    print(show.as_json(args, result) if getattr(args, "json", False) else cmd.present(args, result))
    return cmd.exit_code(result) if cmd.exit_code else 0


def run_command(cmd: Command, args: argparse.Namespace, params: dict[str, Any]) -> int:
    if cmd.prepare is not None:
        params = cmd.prepare(args, params)
    try:
        if cmd.run is not None:
            return cmd.run(args, params)
        return _default(cmd, args, params)
    except DaemonUnavailable as exc:
        if cmd.offline:  # this client never opens the store or loads the model: the daemon's package can
            raise DaemonUnavailable(f"{exc}; or, without the daemon, run `{cmd.offline} ...` "
                                    f"(`{cmd.offline} --help`)") from None
        raise
