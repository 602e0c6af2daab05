"""Progress bars: ``mempal status --watch`` while the daemon catches up, and ``mempal mine`` (rich, imported only
when a bar is shown)."""

from __future__ import annotations

import time
from typing import Any

from mempal.cli.render import reading_line
from mempal.connection import call


def caught_up(st: dict[str, Any]) -> bool:
    """Nothing left to read or embed: the first scan done, no file or dense backlog, no source with files behind
    (bytes may wait: a transcript's unfinished last line is read once it is complete)."""
    return (int(st.get("scans") or 0) >= 1 and not st.get("dense_backlog") and not st.get("file_backlog")
            and not any(s.get("backlog_files") or s.get("reading") for s in st.get("sources", [])))


def status_line(st: dict[str, Any]) -> str:
    """One plain line of ``status --watch`` when its output is not a terminal (a log, a pipe)."""
    behind = sum(int(s.get("backlog_files") or 0) for s in st.get("sources", []))
    rate = float(st.get("dense_rate") or 0)
    state = "caught up" if caught_up(st) else (f"embedding {st.get('dense_backlog')} drawers ({rate:.1f}/s), "
                                               f"{st.get('file_backlog')} files queued, {behind} files behind")
    reading = "".join(f"; {reading_line(r)}" for s in st.get("sources", []) for r in s.get("reading") or [])
    return f"{time.strftime('%H:%M:%S')} drawers {st.get('drawers')}: {state}{reading}"


class _Stop(Exception):
    """SIGTERM: leave the watch the way Ctrl-C does, output flushed."""


def watch_status(interval: float = 1.0, until_idle: bool = False) -> int:
    """Follow the daemon's progress until Ctrl-C or SIGTERM, or (``until_idle``) until it has caught up. In a
    terminal: live bars; otherwise one plain line per change, flushed as written, so a pipe or a log sees it."""
    import signal
    import sys

    def stop(_signum: int, _frame: Any) -> None:
        raise _Stop

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        if not sys.stdout.isatty():
            return _watch_plain(interval, until_idle)
        return _watch_live(interval, until_idle)
    except (KeyboardInterrupt, _Stop):
        return 0
    finally:
        signal.signal(signal.SIGTERM, previous)
        sys.stdout.flush()


def _watch_plain(interval: float, until_idle: bool) -> int:
    last = ""
    while True:
        st: dict[str, Any] = call("status", {}, timeout=10)
        line = status_line(st)
        if line.split(" ", 1)[1] != last:
            print(line, flush=True)
            last = line.split(" ", 1)[1]
        if until_idle and caught_up(st):
            return 0
        time.sleep(interval)


def _watch_live(interval: float, until_idle: bool) -> int:
    from rich.console import Console
    from rich.live import Live
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
    from rich.table import Table

    console = Console()
    progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                        TextColumn("{task.fields[rate]}"), TimeRemainingColumn(), console=console)
    dense_task = progress.add_task("embedding", total=1, rate="")
    peak = 0
    with Live(console=console, refresh_per_second=4) as live:
        while True:
            st: dict[str, Any] = call("status", {}, timeout=10)
            backlog = int(st["dense_backlog"])
            peak = max(peak, backlog + 1)
            rate = float(st.get("dense_rate") or 0)
            progress.update(dense_task, total=peak, completed=peak - backlog,
                            rate=f"{rate:.1f} drawers/s" if backlog else "caught up")
            table = Table.grid(padding=(0, 2))
            table.add_row(f"drawers {st['drawers']}", f"files queued {st['file_backlog']}")
            for s in st["sources"]:
                behind = s["backlog_files"] or s["backlog_bytes"]
                table.add_row(f"{s['mode']}: {s['path']}",
                              f"{s['files']} files, {s['exchanges']} exchanges"
                              + (f", behind {s['backlog_files']} files / {s['backlog_bytes']} B" if behind else
                                 ", up to date"))
                for r in s.get("reading") or []:
                    table.add_row("", reading_line(r))
            for w in st.get("warnings", []):
                table.add_row("[red]warning[/red]", w)
            outer = Table.grid()
            outer.add_row(progress)
            outer.add_row(table)
            live.update(outer)
            if until_idle and caught_up(st):
                return 0
            time.sleep(interval)


def mine_with_progress(params: dict[str, Any], plan: list[list[str]], quiet: bool) -> dict[str, Any]:
    """Mine the planned files in small batches, with a progress bar (rich) and one merged summary."""
    total: dict[str, Any] = {"files": 0, "exchanges": 0, "drawers": 0, "written": 0, "capped": 0, "skipped": {},
                             "errors": [], "dry_run": False}

    def merge(r: dict[str, Any]) -> None:
        for k in ("files", "exchanges", "drawers", "written", "capped"):
            total[k] += r.get(k, 0)
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


PACK_STAGES = {"reading": "reading files", "embedding": "embedding sections", "clustering": "clustering",
               "summarizing": "summarizing topics", "pruning": "pruning to the budget", "writing": "writing"}


def pack_with_progress(params: dict[str, Any], timeout: float, interval: float = 0.5) -> dict[str, Any]:
    """``pack`` with a progress bar on stderr: the call waits on a thread while this one asks the daemon's
    ``pack_progress`` for the run's stage, and draws it (rich). The result, or the call's error, as without."""
    import os
    import threading

    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    run_id = f"cli-{os.getpid()}-{time.monotonic_ns()}"
    outcome: dict[str, Any] = {}

    def work() -> None:
        try:
            outcome["result"] = call("pack", {**params, "run_id": run_id}, timeout=timeout)
        except BaseException as exc:  # handed to the caller's thread
            outcome["error"] = exc

    worker = threading.Thread(target=work, daemon=True)
    worker.start()
    bar = Progress(TextColumn("pack: {task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                   console=Console(stderr=True), transient=True)
    with bar:
        task = bar.add_task("starting", total=None)
        while worker.is_alive():
            worker.join(interval)
            try:
                running = call("pack_progress", {"run_id": run_id}, timeout=5).get("running", [])
            except Exception:  # a progress frame missed; the pack itself goes on
                continue
            if running:
                p = running[0]
                stage = PACK_STAGES.get(p["stage"], p["stage"])
                if p["stage"] == "summarizing" and p.get("pass", 1) > 1:
                    stage += f" (pass {p['pass']}, shortening)"
                bar.update(task, description=stage, total=p["total"] or None, completed=p["done"])
    if "error" in outcome:
        raise outcome["error"]
    result: dict[str, Any] = outcome["result"]
    return result
