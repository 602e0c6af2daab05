"""How the CLI shows each method's result to a person (``--json`` prints the result itself instead)."""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from mempal.cli import render


def as_json(_args: argparse.Namespace, result: Any) -> str:
    return json.dumps(result, indent=2, ensure_ascii=False, default=str)


def status(_args: argparse.Namespace, r: Any) -> str:
    return render.status(r) + excluded(r)


def search(_args: argparse.Namespace, r: Any) -> str:
    return render.search_results(r)


def save(_args: argparse.Namespace, r: Any) -> str:
    lines = []
    if r.get("warning"):
        lines.append(f"warning: {r['warning']}")
        lines += [f"  similar: {s['drawer_id']} ({s['score']}) {s['text'][:100]!r}" for s in r["similar"]]
    lines.append("dry run: nothing saved" if r.get("dry_run") else
                 f"saved to {r['wing']}: {', '.join(r.get('drawer_ids', []))}")
    return "\n".join(lines)


def delete(_args: argparse.Namespace, r: Any) -> str:
    return (f"deleted {len(r['deleted'])} (soft; `mempal purge` removes them for good)"
            + (f"; not found: {', '.join(r['missing'])}" if r["missing"] else ""))


def restore(_args: argparse.Namespace, r: Any) -> str:
    return f"restored {len(r['restored'])}" + (f"; not found: {', '.join(r['missing'])}" if r.get("missing") else "")


def purge(_args: argparse.Namespace, r: Any) -> str:
    return f"{'would purge' if r['dry_run'] else 'purged'} {r['purged']} soft-deleted drawers"


def reindex(_args: argparse.Namespace, r: Any) -> str:
    dense = f"re-embedding {r['queued']} drawers with {r['model']}; `mempal status --watch` shows progress"
    if r.get("keywords_queued"):
        keywords = (f"re-encoding the keyword vectors of {r['keywords_queued']} drawers with the {r['tokenizer']} "
                    "tokenizer in the background (resumed if the daemon restarts)")
        return keywords if not r["queued"] else f"{dense}\n{keywords}"
    return dense


def wake_up(_args: argparse.Namespace, r: Any) -> str:
    return f"{r['text']}\n\n({r['tokens']} tokens, wing {r['wing']})"


def recall_room(_args: argparse.Namespace, r: Any) -> str:
    lines = [f"{r['wing']}/{r['room']}:"]
    for d in r["drawers"]:
        lines.append(f"- [{d['drawer_id'][:8]}] {str(d.get('timestamp') or '')[:10]} "
                     f"{' '.join(str(d['text']).split())[:200]}")
    return "\n".join(lines)


def counts(key: str) -> Any:
    def show(_args: argparse.Namespace, r: Any) -> str:
        return "\n".join(f"{name}\t{n}" for name, n in sorted(r[key].items()))
    return show


def tunnels(_args: argparse.Namespace, r: Any) -> str:
    return ("\n".join(f"{room}: {', '.join(ws)}" for room, ws in r["tunnels"].items())
            or "no room is shared by two wings yet")


def taxonomy(_args: argparse.Namespace, r: Any) -> str:
    return "\n".join(f"{room}: {', '.join(words)}" for room, words in sorted(r["taxonomy"].items()))


def plural(n: Any, word: str) -> str:
    """``1 session``, ``2 sessions``."""
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def kg(_args: argparse.Namespace, r: Any) -> str:
    if "triples" in r:
        return "\n".join(
            f"#{t['id']} {t['subject']} {t['predicate']} {t['object']} [{t.get('valid_from') or '?'} .. "
            f"{t.get('valid_to') or 'now'}]" for t in r["triples"]) or "no triples"
    if "triple" in r:
        t = r["triple"]
        return f"#{t['id']} {t['subject']} {t['predicate']} {t['object']}"
    if "invalidated" in r:
        n = r["invalidated"]
        return (f"invalidated {plural(n, 'fact')} (kept, no longer valid)" if n
                else "no valid fact matched: nothing changed")
    if isinstance(r.get("stats"), dict):
        return "\n".join(f"{name.replace('_', ' ')}: {value}" for name, value in r["stats"].items()) or "empty"
    return json.dumps(r, indent=2)


def fact_check(_args: argparse.Namespace, r: Any) -> str:
    return "\n".join(f"{i['kind']}: {i['message']}" for i in r["issues"]) or "no issues found"


def compress(_args: argparse.Namespace, r: Any) -> str:
    return f"{r['aaak']}\n\n{r['tokens_before']} -> {r['tokens_after']} tokens ({r['ratio']}:1, lossy)"


def watch_add(_args: argparse.Namespace, r: Any) -> str:
    return f"watching {r['added']['path']} ({r['added']['mode']}); `mempal status` shows it catching up"


def watch_remove(_args: argparse.Namespace, r: Any) -> str:
    return f"stopped watching {r['removed']} ({r['note']})"


def watch_list(_args: argparse.Namespace, r: Any) -> str:
    lines = []
    for s in r["sources"]:
        missing = "" if s["exists"] else "  (missing)"
        wing = f" wing={s['wing']}" if s.get("wing") else ""
        lines.append(f"{s['mode']:<9} {s['path']}{wing}{missing}")
    return "\n".join(lines)


def mine(_args: argparse.Namespace, r: Any) -> str:
    if r["dry_run"]:
        lines = [f"would read {r['files']} files: {r['exchanges']} exchanges ({r.get('prompts', 0)} prompts), "
                 f"{r['drawers']} drawers; nothing stored"]
        lines += [f"  {n:>7}  {what}" for what, n in sorted(r.get("accounted", {}).items())]
    else:
        lines = [f"read {r['files']} files: {r['exchanges']} exchanges, {r['drawers']} drawers "
                 f"({r['written']} new or changed)"]
    if r.get("capped"):
        lines.append(f"  capped {r['capped']} exchanges at ingest.max_drawers_per_exchange drawers (their first "
                     "drawers stored; the whole text stays in the file)")
    lines += [f"  skipped {n}: {reason}" for reason, n in sorted(r["skipped"].items())]
    lines += [f"  error: {err}" for err in r["errors"][:20]]
    return "\n".join(lines)


def _where(row: dict[str, Any]) -> str:
    if row["from"] is None:
        return str(row["ref"])
    return f"line {row['from']}" if row["from"] == row["to"] else f"lines {row['from']}-{row['to']}"


def inspect(_args: argparse.Namespace, r: Any) -> str:
    """The line accounting of one file and the exchanges it would store (nothing was stored)."""
    lines = [f"{r['path']}: {r['format']} ({r['mode']}), {r['records']} records -> {len(r['exchanges'])} exchanges "
             f"({r['prompts']} prompts, {r['answers']} with an answer), {r['drawers']} drawers; nothing stored"]
    lines += [f"  {n:>7}  {what}" for what, n in sorted(r["accounted"].items())]
    if r["rows"]:
        lines.append("")
        for row in r["rows"]:
            into = f" #{row['exchange']}" if row["exchange"] is not None else ""
            what = f" ({row['what']})" if row["what"] else ""
            lines.append(f"  {_where(row):<18} {row['outcome']}{into}{what}")
    if r["exchanges"]:
        lines.append("")
    for e in r["exchanges"]:
        head = f"#{e['position']} {e['kind']}"
        head += f" by {e['agent']}" if e["agent"] else ""
        head += f", parent {e['parent'][:12]}" if e["parent"] else ""
        prompt = " ".join(e["prompt"].split())[:100] or "(no prompt)"
        lines.append(f"  {head}: {prompt}  [{e['answer_chars']} chars of answer, {e['tools']} tool calls, "
                     f"{e['drawers']} drawers, wing {e['wing']}]")
        if e.get("capped"):
            lines.append(f"    capped: {e['text_chars']:,} chars, more than ingest.max_drawers_per_exchange drawers "
                         "hold; they store its start, the file keeps the whole text")
    return "\n".join(lines)


def reread(_args: argparse.Namespace, r: Any) -> str:
    lines = [f"re-read {r['files']} files of {r['source']}: {r['exchanges']} exchanges, {r['drawers']} drawers "
             f"({r['written']} new or changed), {r['removed']} no longer produced removed"]
    lines += [f"  error: {err}" for err in r["errors"][:20]]
    return "\n".join(lines)


def init(args: argparse.Namespace, r: Any) -> str:
    return (f"wrote {r['path']} (wing {r['wing']}, {len(r['rooms'])} rooms); edit it, then "
            f"`mempal watch add {args.path} --mode projects`")


def migrate(_args: argparse.Namespace, r: Any) -> str:
    lines = [f"copied {r['copied']} points ({r['source_count']} in the source, {r['target_count']} in the target); "
             f"sampled {r['sampled']}, mismatched {r['mismatched']}, missing {r['missing']}"]
    lines += [f"  problem: {problem}" for problem in r.get("problems", [])]
    return "\n".join(lines)


def pack(_args: argparse.Namespace, r: Any) -> str:
    h = r["header"]
    lines = [f"packed {h.get('files')} files: {h.get('tokens_in')} -> {h.get('tokens_out')} tokens "
             f"({h.get('ratio')}:1, target {h.get('target')}{'' if h.get('target_met') else ' NOT met'})"]
    lines += [f"  note: {note}" for note in r.get("notes", [])]
    lines += [f"  not read: {s['file']} ({s['reason']}: {s['detail']})" for s in r.get("skipped", [])]
    lines += [f"  wrote {p}" for p in r["paths"]]
    return "\n".join(lines)


def pack_prune(_args: argparse.Namespace, r: Any) -> str:
    return "\n".join([r["plan"], *(f"wrote {p}" for p in r.get("paths", []))])


def _when(ts: Any) -> str:
    try:
        return time.strftime("%Y-%m-%d %H:%M", time.localtime(float(ts)))
    except (TypeError, ValueError):
        return "?"


def messages(items: list[dict[str, Any]]) -> str:
    out = []
    for m in items:
        out.append(f"[{m.get('id')}] from {m.get('from')} at {_when(m.get('created_at'))}:")
        out.extend("    " + line for line in str(m.get("text", "")).splitlines() or [""])
    return "\n".join(out)


def cowork_push(_args: argparse.Namespace, r: Any) -> str:
    return (f"queued for {r['message']['to']} in {r['message']['cwd']} ({r['pending']} pending); "
            f"delivered {r.get('delivery', 'at its next prompt')}")


def cowork_drain(args: argparse.Namespace, r: Any) -> str:
    return messages(r["messages"]) if r["messages"] else f"{args.target or 'your'}'s inbox is empty"


def cowork_status(_args: argparse.Namespace, r: Any) -> str:
    lines = [f"cowork inboxes for {r['cwd']}"]
    for agent, box in sorted(r["inboxes"].items()):
        lines.append(f"  {agent}: {box.get('pending', 0)} pending ({box.get('bytes', 0)} bytes)")
        if box.get("messages"):
            lines += ["    " + line for line in messages(box["messages"]).splitlines()]
    return "\n".join(lines)


def peek_partner(_args: argparse.Namespace, r: Any) -> str:
    parts = [f"{r.get('partner')}'s latest session in {r.get('cwd')} (session {r.get('session_id')}, "
             f"{r.get('path')}):"]
    for ex in r.get("exchanges", []):
        parts.append(f"--- {ex.get('timestamp') or ''}\nUSER: {ex.get('user', '')}\n"
                     f"ASSISTANT: {ex.get('assistant', '')}")
    return "\n\n".join(parts)


# your data: forget, exclude, export, import, backup -----------------------------------------------------------
def _counted(r: dict[str, Any]) -> str:
    wings = ", ".join(f"{w or '?'} ({n})" for w, n in list(r.get("wings", {}).items())[:8])
    rooms = ", ".join(f"{k or '?'} ({n})" for k, n in list(r.get("rooms", {}).items())[:8])
    return (f"{plural(r.get('drawers', 0), 'drawer')} in {plural(r.get('sessions', 0), 'session')} from "
            f"{plural(r.get('sources', 0), 'source')}" + (f"\n  wings: {wings}" if wings else "")
            + (f"\n  rooms: {rooms}" if rooms else ""))


TIME_KEYS = ("before", "since", "until", "after")


def _selected(key: str, value: Any) -> str:
    """One criterion of a selection as typed: times (sent as epoch seconds) as local dates."""
    if key in TIME_KEYS and isinstance(value, (int, float)) and not isinstance(value, bool):
        stamp = time.localtime(float(value))
        fmt = "%Y-%m-%d" if (stamp.tm_hour, stamp.tm_min, stamp.tm_sec) == (0, 0, 0) else "%Y-%m-%d %H:%M"
        return f"{key} {time.strftime(fmt, stamp)}"
    return f"{key} {value}"


def forget_preview(r: dict[str, Any]) -> str:
    what = " ".join(_selected(k, v) for k, v in r.get("selection", {}).items())
    lines = [f"{what}: {_counted(r)}"]
    lines += [f"  {p}" for p in r.get("source_paths", [])[:10]]
    if r.get("reingest"):
        lines.append(f"  {r.get('on_disk', 0)} of these transcripts are on disk and will be read again; the drawers "
                     "of the others are forgotten")
    return "\n".join(lines)


def forget(_args: argparse.Namespace, r: Any) -> str:
    if r.get("dry_run"):
        return forget_preview(r) + "\n(dry run: nothing forgotten)"
    if not r.get("drawers") and not r.get("reread"):
        return "nothing matches: nothing forgotten"
    lines = [forget_preview(r)]
    if "forgotten" in r:
        lines.append(f"forgot {r['forgotten']} drawers (soft; `mempal purge` removes them for good); they are not "
                     "stored again from their transcripts")
    gone, again = r.get("gone"), r.get("reread")
    if gone:
        lines.append(f"forgot {gone['forgotten']} drawers whose transcript is gone")
    if again:
        lines.append(f"removed {again['removed']} drawers and read {again['files']} transcripts again: "
                     f"{again['exchanges']} exchanges, {again['drawers']} drawers ({again['lifted']} forgets lifted)")
        lines += [f"  error: {e}" for e in again.get("errors", [])[:20]]
    return "\n".join(lines)


def exclude_add(_args: argparse.Namespace, r: Any) -> str:
    lines = [f"excluding {r['added']} from now on ({len(r['rules'])} rules in ingest.exclude)"]
    stored = r.get("stored", {})
    if "forgotten" in stored:
        lines.append(f"forgot the {stored['forgotten']} drawers already stored that it covers")
    elif r.get("hint"):
        lines.append(r["hint"])
    else:
        lines.append("nothing stored is covered by it")
    return "\n".join(lines)


def exclude_remove(_args: argparse.Namespace, r: Any) -> str:
    return f"no longer excluding {r['removed']} ({r['note']})"


def exclude_list(_args: argparse.Namespace, r: Any) -> str:
    files, sessions = r.get("files", {}), r.get("sessions", {})
    stored = r.get("stored", {}).get("by_rule", {})
    lines = []
    for rule in r.get("rules", []):
        extra = f", {stored[rule]} drawers stored before it" if rule in stored else ""
        lines.append(f"{rule}  (config) kept out {files.get(rule, 0)} files, {sessions.get(rule, 0)} sessions{extra}")
    for path in r.get("ignore_files", []):
        lines.append(f"{path}  kept out {files.get(path, 0)} files, {sessions.get(path, 0)} sessions")
    for rule, why in r.get("invalid", {}).items():
        lines.append(f"{rule}  (config, NOT applied: {why})")
    if "stored" in r:
        lines.append(f"{r['stored']['total']} stored drawers are covered by a rule: `mempal forget --excluded` "
                     "forgets them")
    return "\n".join(lines) or "nothing is excluded (`mempal exclude add PATH`, or a .mempalignore in a project)"


def excluded(st: dict[str, Any]) -> str:
    """The status lines about exclusions (empty when nothing is excluded)."""
    ex = st.get("excluded") or {}
    if not (ex.get("rules") or ex.get("ignore_files") or ex.get("files_total") or ex.get("sessions_total")):
        return ""
    by_rule = ", ".join(f"{k} ({n})" for k, n in sorted({**ex.get("files", {})}.items()))
    return (f"\n  excluded: {ex.get('files_total', 0)} files, {ex.get('sessions_total', 0)} sessions"
            + (f" - {by_rule}" if by_rule else ""))


def export(_args: argparse.Namespace, r: Any) -> str:
    return (f"exported {r['drawers']} drawers to {r['path']} ({r['format']}, {r['files']} files, "
            f"{len(r.get('wings', {}))} wings) in {r['seconds']} s")


def import_drawers(_args: argparse.Namespace, r: Any) -> str:
    head = "would import" if r["dry_run"] else "imported"
    lines = [f"{head} {r['path']}: {r['added']} added, {r['replaced']} replaced, {r['unchanged']} unchanged, "
             f"{r['bad']} bad lines, {r['blank']} blank ({r['lines']} lines)"]
    lines += [f"  {b}" for b in r.get("bad_lines", [])[:20]]
    if not r["dry_run"] and (r["added"] or r["replaced"]):
        lines.append("  their dense vectors are being computed: `mempal status --watch` shows the backlog")
    return "\n".join(lines)


def backup(_args: argparse.Namespace, r: Any) -> str:
    return (f"backed up {r['drawers']} drawers to {r['path']} ({r['files']} files, {r['bytes'] / 1048576:.1f} MB, "
            f"store held {r['store_held_s']} s); restore with `mempald restore {r['path']}` into an empty data dir")


def audit(_args: argparse.Namespace, r: Any) -> str:
    """One line an entry, newest first: when, who, what, to what, and why."""
    entries = r["entries"]
    if not entries:
        scope = " since then" if r.get("since") else ""
        return f"nothing in the audit log{scope}" + (f" for {r['action']}" if r.get("action") else "")
    lines = []
    for e in entries:
        detail = e.get("detail") if isinstance(e.get("detail"), dict) else {}
        extra = ", ".join(f"{k} {v}" for k, v in detail.items() if isinstance(v, (str, int, float)) and v != "")
        line = (f"{time.strftime('%Y-%m-%d %H:%M', time.localtime(float(e['at'])))}  {e['actor']:<8} "
                f"{e['action']:<15} {e['target']}" + (f" ({extra})" if extra else ""))
        if e.get("reason"):
            line += f"\n{'':<18}why: {e['reason']}"
        lines.append(line)
    more = f"\n(the newest {r['limit']}; --limit N shows more)" if len(entries) >= r["limit"] else ""
    return "\n".join(lines) + more
