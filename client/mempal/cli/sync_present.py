"""How ``mempal sync ...`` and ``mempal machines`` read to a person (``--json`` prints the answer itself)."""

from __future__ import annotations

import argparse
from typing import Any


def sync_status(_args: argparse.Namespace, r: Any) -> str:
    if not r.get("syncing"):
        return str(r.get("hint") or "not syncing")
    lines = [f"syncing through {r['dir']} as {r['machine']}" + (" (encrypted)" if r.get("encrypted") else ""),
             f"  {r['outbox']} waiting to be written; {r['imported']} drawers imported since the daemon started "
             f"({r['embedded_here']} embedded here)"]
    if r.get("error"):
        lines.append(f"  error: {r['error']}")
    lines.append("")
    lines.append(f"  {'machine':<24} {'segments':>8} {'last':>6} {'read':>6} {'lag':>5}  last written")
    for m in r.get("machines") or []:
        name = m["machine"] + (" (this one)" if m.get("this_machine") else "")
        lines.append(f"  {name:<24} {m['segments']:>8} {m['last_seq']:>6} {m['read_seq']:>6} {m['lag']:>5}  "
                     f"{m.get('last_written') or '-'}")
    for p in r.get("problems") or []:
        lines += ["", f"  could not read {p['segment']} ({p['status']}): {p['error']}", f"    {p['what_to_do']}"]
    for x in r.get("rules_refused") or []:
        lines += ["", f"  rule {x['rule_id']} of {x['machine']} (segment {x['segment']}) not applied: {x['error']}"]
    return "\n".join(lines)


def machines(_args: argparse.Namespace, r: Any) -> str:
    lines = [f"  {'machine':<24} {'drawers':>8} {'last segment':>13} {'read here':>10} {'lag':>5}"]
    for m in r.get("machines") or []:
        name = m["machine"] + (" (this one)" if m.get("this_machine") else "")
        lines.append(f"  {name:<24} {m['drawers']:>8} {m['last_segment']:>13} {m['read_segment']:>10} {m['lag']:>5}")
    if not r.get("syncing"):
        lines.append("  (not syncing through a folder: `mempal sync init DIR` or `mempal sync join DIR`)")
    return "\n".join(lines)


def sync_joined(_args: argparse.Namespace, r: Any) -> str:
    out = f"syncing {r['dir']} as {r['machine']}" + (" (encrypted)" if r.get("encrypted") else "")
    out += f"; {r['queued']} drawers of this machine queued to be written"
    return out + (f"\n{r['hint']}" if r.get("hint") else "")


def sync_leave(_args: argparse.Namespace, r: Any) -> str:
    return f"stopped syncing {r['left']}: {r['kept']}"
