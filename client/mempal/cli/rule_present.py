"""How ``mempal rule ...`` answers read (``--json`` gives the daemon's answer as it is)."""

from __future__ import annotations

import argparse
from typing import Any


def _scope(rule: dict[str, Any]) -> str:
    return f"wing {rule['wing']}" if rule.get("wing") else "every wing"


def _source(rule: dict[str, Any]) -> str:
    if rule.get("drawer_id"):
        return f"from drawer {str(rule['drawer_id'])[:8]}"
    return str(rule.get("source") or "user")


def line(rule: dict[str, Any]) -> str:
    forced = " (forced)" if rule.get("forced") else ""
    return (f"{rule['id']}  {rule['decision']:<4}  {rule['tool']}  /{rule['pattern']}/{forced}  {_scope(rule)}, "
            f"{_source(rule)}\n    {rule['text']}")


def rule_add(_args: argparse.Namespace, r: Any) -> str:
    return "added rule\n" + line(r["rule"])


def rule_list(_args: argparse.Namespace, r: Any) -> str:
    rules = r.get("rules") or []
    if not rules:
        return "no rules (add one: mempal rule add TEXT --tool Bash --match REGEX [--decision ask|deny])"
    return "\n".join(line(x) for x in rules)


def rule_remove(_args: argparse.Namespace, r: Any) -> str:
    return f"removed rule {r['removed']}"


def rule_test(_args: argparse.Namespace, r: Any) -> str:
    late = f"\n(ran out of time, not counted: {', '.join(r['timed_out'])})" if r.get("timed_out") else ""
    if not r.get("fires"):
        return f"no rule fires for this {r['tool']} call in wing {r.get('wing') or '(none)'}{late}"
    return f"{r['decision']}: {r['reason']}\n{line(r['rule'])}{late}"


def rule_suggestions(_args: argparse.Namespace, r: Any) -> str:
    items = r.get("suggestions") or []
    head = f"{len(items)} suggestion(s); {r.get('new', 0)} new from {r.get('scanned', 0)} prompt(s) read"
    rows = [f"{s['id']}  {s['status']:<9} {s['decision']:<4}  {s['tool']}  /{s['pattern']}/  wing {s['wing'] or '-'}, "
            f"drawer {str(s['drawer_id'])[:8]}\n    \"{s['sentence']}\"" for s in items]
    tail = "accept one (editable): mempal rule accept ID [--match REGEX] [--decision ask|deny] [--text ...]"
    return "\n".join([head, *rows, tail] if items else [head])


def rule_accept(_args: argparse.Namespace, r: Any) -> str:
    return f"accepted suggestion {r['suggestion']} as rule\n" + line(r["rule"])


def rule_dismiss(_args: argparse.Namespace, r: Any) -> str:
    return f"dismissed suggestion {r['dismissed']}"
