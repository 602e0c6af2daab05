"""From exchanges to drawers: redact, chunk to the model's length, classify, and give each a stable id.

Drawer ids are UUIDv5 over (machine, source kind, session, exchange key, chunk index): replays overwrite,
never duplicate, and two machines sharing one server collection never collide.

An exchange makes at most ``SourceInfo.max_drawers`` drawers (``ingest.max_drawers_per_exchange``; issue 47:
one 10 MB prompt made 26,012 drawers and 16.5 minutes of embedding). A longer one keeps its first drawers,
each marked ``capped`` with the exchange's length (``text_chars``) and what its drawers hold
(``stored_chars``); the rest is not stored: the transcript it was read from (``source_path``, at
``exchange_key``) keeps the whole text on disk, and ``mempal inspect`` and the ingest summary count it.
"""

from __future__ import annotations

import hashlib
import re
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, cast

from mempal.methods.drawer import DrawerExtras, DrawerPayload, required
from mempald.normalize import registry
from mempald.normalize.model import Exchange
from mempald.normalize.wings import normal_wing, wing_from_cwd
from mempald.store.base import LIVE
from mempald.text.chunking import split_tokens
from mempald.text.classify import classify_memory, classify_room, importance
from mempald.text.redact import redact, scrub_meta, strip_private

NAMESPACE = uuid.UUID("6f1c3a52-4d0e-5b8e-9a3f-6d656d70616c")
# A lone UTF-16 surrogate (JavaScript tools cut strings inside an emoji; JSON keeps the half as "\ud83d") cannot
# be encoded as UTF-8: the BM25 encoder, the store and the socket would all fail on it. It costs that one
# character (U+FFFD), never the exchange or the file.
_SURROGATE = re.compile("[\ud800-\udfff]")


def clean_text(text: str) -> str:
    """``text`` with every lone surrogate replaced by U+FFFD."""
    return _SURROGATE.sub("\ufffd", text) if _SURROGATE.search(text) else text


def _add_extra(extras: DrawerExtras, key: str, value: str) -> None:
    """A format's extra field (``Exchange.extra``), unless the drawer already has ``key``: a field every drawer
    has, or its indexing context, is never overwritten by one. Every key a format writes is declared
    (``DrawerExtras``; a test reads them all from the fixtures), so this view as a plain dict only spares mypy a
    key it cannot see as a literal."""
    if key not in _UNEXTRA:
        cast("dict[str, object]", extras).setdefault(key, value)


@dataclass(frozen=True, slots=True)
class SourceInfo:
    """What the ingest knows about where the exchanges came from."""

    kind: str  # source kind: claude_code, codex, chatgpt, ..., project
    path: str
    source_key: str
    machine: str
    user: str
    wing: str = ""  # forced wing (from config or mempal.toml); else from the session's project (cwd)
    default_wing: str = ""  # the wing when the format knows no cwd: the file's folder (an export, a repo)
    room: str = ""  # forced room (projects mode: from the folder)
    added_by: str = "mempald"
    redact: bool = True
    extract: bool = True
    room_keywords: dict[str, list[str]] | None = None
    importance: int | None = None  # forced importance (a memory saved by hand)
    memory_type: str | None = None  # forced memory type
    max_drawers: int = 0  # the most drawers one exchange makes (0: no cap; a file's: ingest.max_drawers_per_exchange)
    copy: bool = False  # a copy of chats another reading stores (Format.copy): adds drawers, never rewrites one


@dataclass(frozen=True, slots=True)
class Drawer:
    id: str
    text: str
    payload: DrawerPayload  # declared in ``mempal.methods.drawer``


@dataclass(slots=True)
class BuildStats:
    redactions: dict[str, int] = field(default_factory=dict)

    def add(self, counts: dict[str, int]) -> None:
        for k, v in counts.items():
            self.redactions[k] = self.redactions.get(k, 0) + v


def drawer_id(machine: str, kind: str, session_id: str, key: str, chunk: int) -> str:
    return str(uuid.uuid5(NAMESPACE, f"{machine}\x1f{kind}\x1f{session_id}\x1f{key}\x1f{chunk}"))


def parse_ts(value: str | None) -> float | None:
    if not value:
        return None
    try:
        dt = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return dt.timestamp()


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


CONTEXT_CHARS = 1200
FIXED_ROOMS = {f.name: f.room for f in registry.FORMATS if f.room}  # a format's own room (the agents' memories)
# A token of the model covers at least one character and rarely more than a few: a capped exchange is split
# only as far as this many characters per allowed token, never whole (splitting 10 MB costs seconds).
CAP_CHARS_PER_TOKEN = 8


def capped_pieces(text: str, max_tokens: int, count_tokens: Callable[[str], int],
                  max_drawers: int) -> tuple[list[str], bool]:
    """The pieces of ``text`` (``split_tokens``), at most ``max_drawers`` of them (0: all), and whether some of
    the text was left out."""
    if max_drawers <= 0:
        return split_tokens(text, max_tokens, count_tokens), False
    head_chars = max_drawers * max_tokens * CAP_CHARS_PER_TOKEN
    head = text if len(text) <= head_chars else text[:head_chars]
    pieces = split_tokens(head, max_tokens, count_tokens)
    if len(pieces) > max_drawers:
        return pieces[:max_drawers], True
    return pieces, head is not text

_UNEXTRA = frozenset({*required(), "context"})  # what a format's extra never sets: the builder's own fields


def index_text(payload: Mapping[str, Any]) -> str:
    """What BM25 indexes: the drawer's context (the drawer before it in its session) and its own text."""
    ctx = payload.get("context")
    text = str(payload.get("text", ""))
    return f"{ctx}\n{text}" if isinstance(ctx, str) and ctx else text


def prose_of(text: str) -> str:
    """The words people wrote: tool-call and tool-result summary lines left out (for classification)."""
    return "\n".join(ln for ln in text.splitlines() if not ln.lstrip().startswith(("[tool:", "-> ", "-> error:")))


def build_drawers(
    exchanges: Iterable[Exchange],
    src: SourceInfo,
    count_tokens: Callable[[str], int],
    max_tokens: int,
    stats: BuildStats | None = None,
    previous: Mapping[str, str] | None = None,
) -> list[Drawer]:
    """Drawers for ``exchanges``. Each drawer carries as ``context`` the end of the drawer before it in
    the same session (indexing a turn with the one before it measurably helps retrieval: see
    ``mempald.search.fusion``); ``previous`` gives, per session, the text before the first exchange."""
    now = datetime.now(UTC).isoformat()
    out: list[Drawer] = []
    last_text: dict[str, str] = dict(previous or {})
    for ex in exchanges:
        text = clean_text(strip_private(ex.render()))
        if src.redact:
            text, counts = redact(text)
            if stats is not None:
                stats.add(counts)
        if not text.strip():
            continue
        # the folder as the store and the cursor keep it (scrubbed): the same wing whichever one it came from
        wing = normal_wing(src.wing) or wing_from_cwd(scrub_meta(ex.project or ex.cwd or ""),
                                                      default=src.default_wing or src.kind)
        prose = prose_of(text)
        room = src.room or FIXED_ROOMS.get(ex.source_kind or src.kind) or classify_room(prose, src.room_keywords)
        mtype, _conf = classify_memory(prose) if src.extract and src.memory_type is None else (src.memory_type, 0.0)
        pieces, capped = capped_pieces(text, max_tokens, count_tokens, src.max_drawers)
        ts = parse_ts(ex.timestamp)
        c = clean_text
        source_kind = c(ex.source_kind or src.kind)
        session_id = c(ex.session_id)
        exchange_key = c(ex.key)
        extras: DrawerExtras = {}
        if ex.tools:
            extras["tools"] = [c(t) for t in sorted(set(ex.tools))]
        if ex.files:
            extras["files"] = [c(f) for f in ex.files]
        if ex.parent:
            extras["parent_exchange"] = c(ex.parent)
            extras["parent_id"] = drawer_id(src.machine, source_kind, session_id, c(ex.parent), 0)
        for k, v in ex.extra:
            _add_extra(extras, k, c(v))
        if capped:  # the rest of the text is in the transcript (source_path, exchange_key), not in drawers
            extras["capped"] = True
            extras["text_chars"] = len(text)
            extras["stored_chars"] = sum(len(p) for p in pieces)
        head: DrawerPayload = {
            "wing": c(wing),
            "room": c(room),
            "memory_type": c(mtype or "none"),
            "source_kind": source_kind,
            "source_path": c(src.path),
            "source_key": c(src.source_key),
            "session_id": session_id,
            "exchange_key": exchange_key,
            "agent": c(ex.agent or ""),
            "cwd": c(ex.cwd or ""),
            "git_branch": c(ex.git_branch or ""),
            "title": c(ex.title or ""),
            "kind": c(ex.kind),
            "position": ex.position,
            "timestamp": c(ex.timestamp or ""),
            "ts": ts if ts is not None else 0.0,
            "filed_at": now,
            "importance": src.importance if src.importance is not None else importance(prose, mtype),
            "added_by": c(src.added_by),
            "machine": c(src.machine),
            "user": c(src.user),
            "deleted": False,
            "status": LIVE,
            "chunk_count": len(pieces),
            **extras,
            # each piece's own, in the order the store keeps them (a session's first piece has no context)
            "text": "",
            "context": "",
            "chunk_index": 0,
            "content_hash": "",
        }
        for i, piece in enumerate(pieces):
            prev = last_text.get(ex.session_id, "")
            last_text[ex.session_id] = piece
            payload: DrawerPayload = {**head, "text": piece, "context": prev[-CONTEXT_CHARS:], "chunk_index": i,
                                      "content_hash": content_hash(piece)}
            if not prev:
                del payload["context"]
            out.append(Drawer(drawer_id(src.machine, source_kind, session_id, exchange_key, i), piece, payload))
    return out
