"""Slack workspace exports (official export and slackdump), SCHEMAS.md section 5.

``parse_export`` takes the export's files as ``{relative path: bytes}`` (``users.json``, ``channels.json``,
``general/2015-10-17.json``...). Units:

- a thread (parent and replies, grouped by ``(channel, thread_ts)`` across day files, since replies sit in the
  file of their own day) is one exchange of kind ``thread``, key ``<channel id>:thread:<thread_ts>``;
- the other messages of one channel-day are one exchange of kind ``channel-day``, key
  ``<channel id>:day:<YYYY-MM-DD>``; a "thread" whose only message is its parent counts as one of these.

The ``user`` field holds the unit's text as ``name: text`` lines (``assistant`` is empty); session_id is the
channel name, agent ``slack``, timestamp the first message's ``ts`` in ISO-8601 UTC.

Rendering: user ids become names from users.json (``display_name``, else ``real_name``, else ``name``; the
message's own ``user_profile`` as a fallback), in mentions too (``<@U..|x>`` and ``<@U..>`` -> ``@Name``);
``<#C..|name>`` -> ``#name``, ``<url|label>`` -> ``label (url)``, ``<!here>`` -> ``@here``; ``&amp;`` etc.
unescaped. Bots are named from ``username``/``bot_profile``. Files and link attachments become short
``[file: ...]`` / ``[link: ...]`` lines; Block Kit text is used when ``text`` is empty. Channel joins, leaves,
topic/purpose/name changes, archives, pins, bot integrations, edits/deletions and tombstones (deleted
parents: their replies are kept) are skipped. ``?t=xox...`` download tokens are cut from every URL.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import PurePosixPath
from typing import Any

from mempald.normalize.common import as_str as _s
from mempald.normalize.common import one_line as _one_line
from mempald.normalize.format import Format, Input, Parsed, Probe
from mempald.normalize.ledger import Ledger
from mempald.normalize.model import CursorContext, Exchange, NormalizeError, strip_injected

SOURCE_KIND = "slack"
AGENT = "slack"

SKIP_SUBTYPES = frozenset({
    "channel_join", "channel_leave", "channel_purpose", "channel_topic", "channel_name", "channel_archive",
    "channel_unarchive", "channel_convert_to_private", "channel_convert_to_public", "group_join", "group_leave",
    "group_purpose", "group_topic", "group_name", "group_archive", "group_unarchive", "pinned_item",
    "unpinned_item", "bot_add", "bot_remove", "bot_enable", "bot_disable", "reminder_add", "reminder_delete",
    "message_changed", "message_deleted", "message_replied", "tombstone", "huddle_thread", "sh_room_created",
    "channel_canvas_updated", "joiner_notification", "slackbot_response",
})
_DAY_FILE = re.compile(r"(?:^|/)([^/]+)/(\d{4}-\d{2}-\d{2})\.json$")
_LINK = re.compile(r"<([^<>]*)>")
_LABELLED_MENTION = re.compile(r"<@([A-Z0-9]+)\|([^<>|]+)>")
_TOKEN = re.compile(r"([?&])t=xox[a-zA-Z]*-[^\s&<>|\"')\]]*(&?)")
_MAX_ATTACH = 300
_META_FILES = frozenset({"users.json", "channels.json", "groups.json", "dms.json", "mpims.json",
                         "integration_logs.json", "canvases.json", "org_users.json"})
_MAX_DEPTH = 12


def strip_tokens(text: str) -> str:
    """Remove ``t=xox...`` download-token parameters from every URL in ``text``."""
    return _TOKEN.sub(lambda m: m.group(1) if m.group(2) else "", text)


def _iso(ts: str) -> str | None:
    try:
        return datetime.fromtimestamp(float(ts), UTC).isoformat()
    except (OverflowError, OSError, ValueError):
        return None


def _ts_key(ts: str) -> tuple[float, str]:
    try:
        value = float(ts)
    except ValueError:
        value = float("inf")
    if math.isnan(value):
        value = float("inf")
    return value, ts


def _load(data: bytes) -> Any:
    try:
        return json.loads(data)
    except (ValueError, RecursionError):
        return None


def _user_label(user: dict[str, Any]) -> str:
    raw = user.get("profile")
    profile: dict[str, Any] = raw if isinstance(raw, dict) else {}
    for val in (profile.get("display_name"), profile.get("real_name"), user.get("real_name"), user.get("name")):
        if isinstance(val, str) and val.strip():
            return val.strip()
    return _s(user.get("id"))


@dataclass
class _Directory:
    users: dict[str, str]
    channels: dict[str, str]  # id -> name
    channel_ids: dict[str, str]  # name -> id

    def user(self, uid: str) -> str:
        return self.users.get(uid, uid)


def _directory(files: Mapping[str, bytes]) -> _Directory:
    users: dict[str, str] = {}
    channels: dict[str, str] = {}
    for path, data in files.items():
        base = PurePosixPath(path).name
        if base == "users.json":
            root = _load(data)
            for u in root if isinstance(root, list) else []:
                if isinstance(u, dict) and isinstance(u.get("id"), str):
                    users[u["id"]] = _user_label(u)
        elif base in ("channels.json", "groups.json", "mpims.json", "dms.json"):
            root = _load(data)
            for c in root if isinstance(root, list) else []:
                if isinstance(c, dict) and isinstance(c.get("id"), str):
                    channels[c["id"]] = _s(c.get("name")) or c["id"]
    return _Directory(users, channels, {name: cid for cid, name in channels.items()})


def render_mrkdwn(text: str, d: _Directory) -> str:
    """Slack mrkdwn to plain text: mentions, channel and URL links resolved, entities unescaped."""

    def link(m: re.Match[str]) -> str:
        inner = m.group(1)
        target, _, label = inner.partition("|")
        if target.startswith("@"):
            uid = target[1:]
            return "@" + (d.users.get(uid) or label or uid)
        if target.startswith("#"):
            cid = target[1:]
            return "#" + (label or d.channels.get(cid) or cid)
        if target.startswith("!"):
            if label:
                return label
            word = target[1:].split("^", 1)[0]
            return "@" + word if word in ("here", "channel", "everyone") else word
        if label and label != target:
            return f"{label} ({target})"
        return target

    text = _LINK.sub(link, text)
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def _block_text(node: Any, depth: int = 0) -> list[str]:
    """Text of Block Kit blocks (rich_text, section, context...), depth-limited."""
    if depth > _MAX_DEPTH:
        return []
    out: list[str] = []
    if isinstance(node, list):
        for item in node:
            out.extend(_block_text(item, depth + 1))
        return out
    if not isinstance(node, dict):
        return out
    ntype = node.get("type")
    if ntype in ("text", "mrkdwn", "plain_text") and isinstance(node.get("text"), str):
        out.append(node["text"])
    elif ntype == "link" and isinstance(node.get("url"), str):
        out.append(_s(node.get("text")) or node["url"])
    elif ntype == "user" and isinstance(node.get("user_id"), str):
        out.append(f"<@{node['user_id']}>")
    elif ntype == "emoji" and isinstance(node.get("name"), str):
        out.append(f":{node['name']}:")
    for key in ("text", "elements", "fields"):
        child = node.get(key)
        if isinstance(child, list | dict):
            out.extend(_block_text(child, depth + 1))
            if key == "fields":
                out.append("\n")
    return out


def _speaker(msg: dict[str, Any], d: _Directory) -> str:
    uid = msg.get("user")
    if msg.get("subtype") == "file_comment" and isinstance(msg.get("comment"), dict):
        uid = msg["comment"].get("user", uid)
    if isinstance(uid, str) and uid in d.users:
        return d.users[uid]
    for key in ("username",):
        val = msg.get(key)
        if isinstance(val, str) and val.strip() and not val.startswith("<@"):
            return val.strip()
    bot = msg.get("bot_profile")
    if isinstance(bot, dict) and isinstance(bot.get("name"), str) and bot["name"].strip():
        return str(bot["name"]).strip()
    prof = msg.get("user_profile")
    if isinstance(prof, dict):
        for key in ("display_name", "real_name", "name"):
            val = prof.get(key)
            if isinstance(val, str) and val.strip():
                return val.strip()
    if isinstance(uid, str) and uid:
        return uid
    bot_id = msg.get("bot_id")
    return bot_id if isinstance(bot_id, str) and bot_id else "unknown"


def render_message(msg: dict[str, Any], d: _Directory) -> str:
    """One message as ``name: text`` (continuation lines follow), with files and link attachments."""
    text = _s(msg.get("text"))
    if not text.strip():
        blocks = msg.get("blocks")
        parts = ["".join(_block_text(b)).strip() for b in (blocks if isinstance(blocks, list) else [])]
        text = "\n".join(p for p in parts if p)
    # injected spans may arrive raw or, as Slack stores text, with < and > escaped: strip both
    body = strip_injected(render_mrkdwn(strip_injected(text), d)).strip()
    extras: list[str] = []
    files = msg.get("files")
    file_list = files if isinstance(files, list) else [msg["file"]] if isinstance(msg.get("file"), dict) else []
    for f in file_list:
        if not isinstance(f, dict):
            continue
        label = _s(f.get("title")) or _s(f.get("name")) or _s(f.get("id")) or "file"
        url = _s(f.get("permalink")) or _s(f.get("url_private"))
        if url and url in text:
            continue
        extras.append(f"[file: {_one_line(label, 120)}]" + (f" {url}" if url.startswith("http") else ""))
    atts = msg.get("attachments")
    for a in atts if isinstance(atts, list) else []:
        if not isinstance(a, dict):
            continue
        title = _s(a.get("title"))
        desc = _s(a.get("text")) or (_s(a.get("fallback")) if not title else "")
        url = _s(a.get("title_link")) or _s(a.get("from_url")) or _s(a.get("original_url"))
        if not (title or desc):
            continue
        line = "[link: " + _one_line(render_mrkdwn(" - ".join(x for x in (title, desc) if x), d), _MAX_ATTACH) + "]"
        extras.append(line + (f" {url}" if url and url not in text else ""))
    full = "\n".join(x for x in [body, *extras] if x)
    if not full:
        return ""
    return strip_tokens(strip_injected(f"{_speaker(msg, d)}: {full}"))


def _skipped(msg: dict[str, Any]) -> bool:
    subtype = msg.get("subtype")
    if isinstance(subtype, str) and subtype in SKIP_SUBTYPES:
        return True
    return msg.get("hidden") is True


@dataclass
class _Unit:
    channel: str
    chan_key: str
    kind: str
    ident: str
    messages: list[dict[str, Any]]


def parse_export(files: Mapping[str, bytes]) -> list[Exchange]:
    """Threads and channel-days of a Slack export. NormalizeError if ``files`` is not a Slack export at all."""
    return parse(Input(files=files, context=CursorContext(format=SOURCE_KIND))).exchanges


def _skip_reason(msg: dict[str, Any]) -> str:
    subtype = msg.get("subtype")
    return f"slack event: {subtype}" if isinstance(subtype, str) and subtype in SKIP_SUBTYPES else "hidden message"


def parse(inp: Input) -> Parsed:
    """Threads and channel-days of a Slack export folder (``inp.files``); every message of every day file
    accounted for as ``<path>#<index>``, the other files as ``<path>``."""
    files = inp.files
    ledger = Ledger()
    day_files = []
    for path in files:
        m = _DAY_FILE.search(path.replace("\\", "/"))
        if m:
            day_files.append((m.group(1), m.group(2), path))
        else:
            known = PurePosixPath(path.replace("\\", "/")).name in _META_FILES
            ledger.skipped(path, "export directory" if known else "not a day file")
    names = {PurePosixPath(p.replace("\\", "/")).name for p in files}
    if not day_files and not names & {"users.json", "channels.json"}:
        raise NormalizeError("not a Slack export: no users.json, channels.json or <channel>/YYYY-MM-DD.json")
    d = _directory(files)
    loaded = {path: _load(files[path]) for _, _, path in day_files}
    for root in loaded.values():
        for msg in root if isinstance(root, list) else []:
            # users missing from users.json: old exports label their mentions (<@U061A1R2R|micahstubbs>)
            text = msg.get("text") if isinstance(msg, dict) else None
            for uid, label in _LABELLED_MENTION.findall(text if isinstance(text, str) else ""):
                d.users.setdefault(uid, label)

    seen: set[tuple[str, str]] = set()
    threads: dict[tuple[str, str], list[dict[str, Any]]] = {}
    days: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for folder, day, path in sorted(day_files):
        channel = d.channels.get(folder, folder)
        root = loaded[path]
        if not isinstance(root, list):
            ledger.skipped(path, "not a message list")
            continue
        for i, msg in enumerate(root):
            ref = f"{path}#{i}"
            if not isinstance(msg, dict):
                ledger.skipped(ref, "not an object")
                continue
            ts = msg.get("ts")
            if not isinstance(ts, str) or (channel, ts) in seen:
                ledger.skipped(ref, "duplicate" if isinstance(ts, str) else "no ts")
                continue
            seen.add((channel, ts))
            thread_ts = msg.get("thread_ts")
            if isinstance(thread_ts, str) and thread_ts:
                threads.setdefault((channel, thread_ts), []).append({**msg, "_day": day, "_ref": ref})
            else:
                days.setdefault((channel, day), []).append({**msg, "_ref": ref})
    for (channel, thread_ts), msgs in list(threads.items()):
        if len(msgs) == 1 and msgs[0].get("ts") == thread_ts:  # a "thread" without replies
            del threads[(channel, thread_ts)]
            days.setdefault((channel, msgs[0]["_day"]), []).append(msgs[0])

    units: list[_Unit] = []
    for (channel, thread_ts), msgs in threads.items():
        units.append(_Unit(channel, d.channel_ids.get(channel, channel), "thread", thread_ts, msgs))
    for (channel, day), msgs in days.items():
        units.append(_Unit(channel, d.channel_ids.get(channel, channel), "channel-day", day, msgs))
    for unit in units:
        unit.messages.sort(key=lambda m: _ts_key(m["ts"]))
    units.sort(key=lambda u: (u.channel, _ts_key(u.messages[0]["ts"]), u.kind))

    out: list[Exchange] = []
    position: dict[str, int] = {}
    for unit in units:
        if unit.kind == "thread":
            key = f"{unit.chan_key}:thread:{unit.ident}"
            extra: tuple[tuple[str, str], ...] = (("channel", unit.channel), ("thread_ts", unit.ident))
            title = f"#{unit.channel} thread"
        else:
            key = f"{unit.chan_key}:day:{unit.ident}"
            extra = (("channel", unit.channel), ("day", unit.ident))
            title = f"#{unit.channel} {unit.ident}"
        lines = []
        kept = []
        for msg in unit.messages:
            line = "" if _skipped(msg) else render_message(msg, d)
            if line:
                lines.append(line)
                kept.append(msg["_ref"])
            else:
                ledger.skipped(msg["_ref"], _skip_reason(msg) if _skipped(msg) else "empty message")
        if not lines:
            continue
        for ref in kept:
            ledger.stored(ref, key, "message")
        pos = position.get(unit.channel, 0)
        position[unit.channel] = pos + 1
        first_ts = unit.messages[0]["ts"]
        out.append(Exchange(
            source_kind=SOURCE_KIND, session_id=unit.channel, key=key, user="\n".join(lines), assistant="",
            timestamp=_iso(first_ts), agent=AGENT, title=title, position=pos, kind=unit.kind, extra=extra,
        ))
    return Parsed(out, ledger, replace(inp.context, format=SOURCE_KIND, files=len(files)))


def detect(probe: Probe) -> bool:
    """A folder holding ``users.json`` beside ``channels.json`` (or ``groups``/``dms``/``mpims.json``)."""
    base = probe.entry_names
    return "users.json" in base and bool(base & {"channels.json", "groups.json", "dms.json", "mpims.json"})


FORMAT = Format(SOURCE_KIND, "folder", detect, parse, summary="Slack workspace exports (official, slackdump)")
