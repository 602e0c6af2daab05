"""What ``sync status``, ``machines`` and ``doctor`` say: each machine, its segments and how far this one has
read them (its lag), and every segment that could not be read, with what to do about it."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import anyio.to_thread

from mempald.store.base import Filters
from mempald.sync.folder import SyncFolder
from mempald.sync.journal import Seen
from mempald.sync.seal import Sealer

if TYPE_CHECKING:
    from mempald.sync.service import Sync

DAMAGED = ("it is read again as soon as it changes (a sync tool still copying it completes it); if it stays so, "
           "run `mempal sync leave` and `mempal sync join DIR` on {machine}: it writes its drawers again")
LOCKED = ("this machine's sync key does not open it: `mempal sync join DIR --key-file FILE` with the key file "
          "of the machine that ran `sync init --encrypt`")


def _iso(mtime_ns: int) -> str:
    """When a segment arrived here (its file's time), UTC ISO; "" for none."""
    if not mtime_ns:
        return ""
    return datetime.fromtimestamp(mtime_ns / 1e9, UTC).isoformat(timespec="seconds")


def what_to_do(s: Seen) -> str:
    return LOCKED if s.status == "locked" else DAMAGED.format(machine=s.machine)


def folder_view(folder: SyncFolder, seen: dict[tuple[str, str], Seen]) -> tuple[list[dict[str, Any]],
                                                                                 list[dict[str, Any]]]:
    """Per machine: its segments, the last sequence number, the last one read here, how many wait (blocking)."""
    machines: list[dict[str, Any]] = []
    problems: list[dict[str, Any]] = []
    for m in folder.machines():
        listed = folder.segments(m)
        own = m == folder.own.name
        waiting = 0
        read_seq = 0
        for s in listed:
            mark = seen.get((m, s.name))
            if own:
                continue
            if mark is None or (mark.size, mark.mtime_ns) != (s.size, s.mtime_ns):
                waiting += 1
            elif mark.status == "read":
                read_seq = max(read_seq, s.seq)
            else:
                problems.append({"machine": m, "segment": str(s.path), "status": mark.status, "error": mark.error,
                                 "what_to_do": what_to_do(mark)})
        last = listed[-1].seq if listed else 0
        newest = max((s.mtime_ns for s in listed), default=0)
        machines.append({"machine": m, "this_machine": own, "segments": len(listed), "last_seq": last,
                         "last_written": _iso(newest),
                         "read_seq": last if own else read_seq, "lag": 0 if own else waiting + sum(
                             1 for p in problems if p["machine"] == m)})
    return machines, problems


async def status_report(sync: Sync, opened: tuple[SyncFolder, Sealer | None] | None) -> dict[str, Any]:
    outbox = await sync.state.run(sync.journal.outbox_size)
    if opened is None:
        return {"syncing": False, "machine": sync.machine, "outbox": outbox,
                "hint": "not syncing: `mempal sync init DIR` (first machine) or `mempal sync join DIR`"}
    folder, sealer = opened
    seen = await sync.state.run(sync.journal.seen)
    refused = await sync.state.run(sync.journal.refused)
    machines, problems = await anyio.to_thread.run_sync(folder_view, folder, seen)
    return {"syncing": True, "dir": str(folder.root), "machine": sync.machine, "folder": folder.own.name,
            "encrypted": sealer is not None, "outbox": outbox, "machines": machines, "problems": problems,
            "imported": sync.importer.imported, "embedded_here": sync.importer.embedded_here,
            "segments_written": sync.exporter.written, "error": sync.error,
            "rules_imported": sync.importer.rules_imported, "rules_refused": refused}


async def machines_report(sync: Sync, opened: tuple[SyncFolder, Sealer | None] | None) -> dict[str, Any]:
    counts = await sync.store.facet("machine", Filters())
    seen = await sync.state.run(sync.journal.seen)
    listed: dict[str, dict[str, Any]] = {}
    if opened is not None:
        machines, _ = await anyio.to_thread.run_sync(folder_view, opened[0], seen)
        listed = {m["machine"]: m for m in machines}
    names = sorted(set(counts) | set(listed) | {sync.machine})
    out = []
    for name in names:
        m = listed.get(name, {})
        out.append({"machine": name, "this_machine": name == sync.machine, "drawers": counts.get(name, 0),
                    "last_segment": m.get("last_seq", 0), "last_written": m.get("last_written", ""),
                    "read_segment": m.get("read_seq", 0),
                    "lag": m.get("lag", 0)})
    return {"machines": out, "syncing": opened is not None}
