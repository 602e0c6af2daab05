"""How ``mempal archive status``, ``mempal archive list`` and ``mempal restore-session`` read."""

from __future__ import annotations

import argparse
import time
from typing import Any

MB = 1048576


def _when(ts: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(ts)) if ts else "-"


def status(_args: argparse.Namespace, r: Any) -> str:
    if not r.get("enabled", True):
        head = "the transcript archive is off (config archive.enabled)"
    else:
        head = (f"archive: {r['sessions']} sessions, {r['files']} files ({r['versions']} versions), "
                f"{r['bytes'] / MB:.1f} MB kept in {r['bytes_on_disk'] / MB:.1f} MB on disk"
                + (f" ({r['ratio']}x smaller)" if r.get("ratio") else ""))
    lines = [head, f"  in {r['folder']}"]
    if r.get("paused"):
        lines.append(f"  paused: {r['paused_reason']}")
    return "\n".join(lines)


def listing(_args: argparse.Namespace, r: Any) -> str:
    if not r["sessions"]:
        return "no archived sessions match"
    lines = []
    for s in r["sessions"]:
        gone = "  [deleted upstream: `mempal restore-session` brings it back]" if s["deleted_upstream"] else ""
        lines.append(f"{s['session']}  {s['wing']}  {s['format']}  {len(s['files'])} files, "
                     f"{s['bytes'] / 1024:.0f} KiB, last {_when(s['updated_at'])}{gone}")
        for f in s["files"]:
            lines.append(f"    {f['path']}{'' if f['present'] else '  (gone)'}")
    return "\n".join(lines)


def restore_session(_args: argparse.Namespace, r: Any) -> str:
    head = "would restore" if r["dry_run"] else "restored"
    words = {"write": "would write", "replace": "would replace", "same": "already there, identical",
             "written": "written", "replaced": "replaced"}
    lines = [f"{head} session {r['session']}: {len(r['files'])} files"]
    lines += [f"  {words.get(f['action'], f['action'])}: {f['path']} ({f['bytes']} bytes, sha256 {f['sha256'][:12]})"
              for f in r["files"]]
    if r["dry_run"] and r.get("conflicts"):
        lines.append("  files exist with other bytes: give --force to replace them, or --to another folder")
    if not r["dry_run"]:
        lines.append(f"  `claude --resume {r['session']}` (or Codex's resume) finds it again")
    return "\n".join(lines)
