"""``mempal status --watch``: live progress while the daemon catches up (rich, imported only here)."""

from __future__ import annotations

import time
from typing import Any

from client.connection import call


def watch_status(interval: float = 1.0) -> int:
    from rich.console import Console
    from rich.live import Live
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
    from rich.table import Table

    console = Console()
    progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                        TextColumn("{task.fields[rate]}"), TimeRemainingColumn(), console=console)
    dense_task = progress.add_task("embedding", total=1, rate="")
    peak = 0
    try:
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
                for w in st.get("warnings", []):
                    table.add_row("[red]warning[/red]", w)
                outer = Table.grid()
                outer.add_row(progress)
                outer.add_row(table)
                live.update(outer)
                time.sleep(interval)
    except KeyboardInterrupt:
        return 0
