"""The drawer, declared once: every payload field with its type and what it is for. Both sides read it (stdlib
only): the daemon builds drawers as ``DrawerPayload`` (``mempald.ingest.drawers.build_drawers``) and derives
from it which fields the store indexes, which a hit returns, which the ranking reads, which a re-read may
correct and which are never sent; clients get the answers' types (``SearchHit``, ``DrawerRecord``...).

Each field of ``DrawerPayload`` is ``Annotated`` with its traits: ``KEYWORD`` / ``FLOAT`` / ``BOOL`` (indexed
with that index type in the store, for filters and facets), ``HIT`` (returned in search hits, in this order),
``RANK`` (read by the ranking of every candidate), ``RECORD`` (returned by ``get``), ``REFRESHED`` (a re-read
may correct it in place, without re-embedding), ``HIDDEN`` (never sent to a client). ``Required`` fields are on
every drawer ``build_drawers`` writes; the others only when there is something to say (a format's extras, a
delete's who/when/why).
"""

from functools import cache
from typing import Annotated, Any, Literal, Required, TypedDict, get_args, get_origin, get_type_hints

IndexType = Literal["keyword", "float", "bool"]


class Trait:
    """A mark on a field of ``DrawerPayload`` (``Annotated`` metadata)."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name.upper()


class Index(Trait):
    """The field is indexed in the store with this index type (as ``mempald.store.field_index`` places it)."""

    __slots__ = ("kind",)

    def __init__(self, kind: IndexType) -> None:
        super().__init__(kind)
        self.kind: IndexType = kind


KEYWORD = Index("keyword")
FLOAT = Index("float")
BOOL = Index("bool")
HIT = Trait("hit")
RANK = Trait("rank")
RECORD = Trait("record")
REFRESHED = Trait("refreshed")
HIDDEN = Trait("hidden")


class DrawerExtras(TypedDict, total=False):
    """The fields a drawer has only when there is something to say: its context, what its exchange called and
    touched, a format's extras, a delete's who, when and why."""

    context: Annotated[str, HIDDEN]  # the end of the drawer before it, indexed with it (it repeats that drawer)
    tools: Annotated[list[str], REFRESHED]  # tools the exchange called
    files: Annotated[list[str], KEYWORD, RECORD, REFRESHED]  # files its tool calls touched (a filter matches any)
    parent_exchange: Annotated[str, REFRESHED]  # the exchange that started a subagent
    parent_id: Annotated[str, REFRESHED]  # that exchange's first drawer
    subagent_type: Annotated[str, REFRESHED]
    model: Annotated[str, REFRESHED]  # chatgpt, gemini
    quotes: str  # digests of the lines its file tools wrote, per file (claude_code, codex; normalize.quotes)
    lines: str  # a project chunk's line range "start-end"
    attachments: str  # cursor, copilot: what a prompt attached (@file, selections, images), one a line
    channel: str  # slack
    thread_ts: str  # slack: a thread's unit
    day: str  # slack: a day's unit
    deleted_at: float  # a delete: when (epoch seconds), who, why
    deleted_by: str
    delete_reason: str
    forgotten: bool  # deleted by ``forget`` (its rules keep it from coming back)
    capped: bool  # its exchange made more than ingest.max_drawers_per_exchange drawers
    text_chars: int  # ... the exchange's whole length (the rest is in the transcript cited)
    stored_chars: int  # ... and what its drawers hold


class DrawerPayload(DrawerExtras, total=False):
    """What the store holds of a drawer (its id aside): ``DrawerExtras`` and the fields every drawer has,
    declared in the order a hit returns them."""

    wing: Required[Annotated[str, KEYWORD, HIT, RECORD, REFRESHED]]  # the project (or source) it belongs to
    room: Required[Annotated[str, KEYWORD, HIT, RECORD, REFRESHED]]  # its aspect: decisions, problems, ...
    memory_type: Required[Annotated[str, KEYWORD, HIT, RECORD, REFRESHED]]  # vocab.MEMORY_TYPE_CHOICES
    source_kind: Required[Annotated[str, KEYWORD, HIT, RANK, RECORD, REFRESHED]]  # claude_code, codex, project...
    source_path: Required[Annotated[str, KEYWORD, HIT, RECORD]]  # the file it was read from
    session_id: Required[Annotated[str, KEYWORD, HIT, RANK, RECORD, REFRESHED]]
    agent: Required[Annotated[str, KEYWORD, HIT, RECORD, REFRESHED]]
    timestamp: Required[Annotated[str, HIT, RECORD, REFRESHED]]  # ISO, as the transcript wrote it ("" unknown)
    position: Required[Annotated[int, FLOAT, HIT, RANK, RECORD, REFRESHED]]  # the exchange's place in its session
    exchange_key: Required[Annotated[str, KEYWORD, HIT]]  # the exchange's stable key in its session
    chunk_index: Required[Annotated[int, HIT, RANK, RECORD]]  # which piece of a long exchange
    importance: Required[Annotated[int, FLOAT, HIT, RECORD, REFRESHED]]  # 0..5
    title: Required[Annotated[str, HIT, RECORD, REFRESHED]]  # the session's title
    cwd: Required[Annotated[str, HIT, RECORD, REFRESHED]]
    git_branch: Required[Annotated[str, HIT, RECORD, REFRESHED]]
    machine: Required[Annotated[str, KEYWORD, HIT]]
    kind: Required[Annotated[str, KEYWORD, HIT, REFRESHED]]  # exchange, compaction, subagent, ..., code
    ts: Required[Annotated[float, FLOAT, RANK, REFRESHED]]  # the timestamp as epoch seconds (0.0 unknown)
    text: Required[Annotated[str, RANK]]  # the drawer's own text (a hit carries it first, not among its fields)
    source_key: Required[str]  # the watched source it came from
    user: Required[Annotated[str, KEYWORD]]
    status: Required[Annotated[str, KEYWORD]]  # "live" | "deleted" (the filter: booleans do not match reliably)
    deleted: Required[bool]  # the same for people
    filed_at: Required[str]  # ISO, when it was written
    added_by: Required[str]  # mempald, or who saved it by hand
    chunk_count: Required[Annotated[int, RECORD, REFRESHED]]  # pieces of its exchange
    content_hash: Required[str]  # of the text: an unchanged re-read writes nothing


class Field:
    """One declared field: its name, Python type, whether every drawer has it, and its traits."""

    __slots__ = ("index", "name", "required", "traits", "type")

    def __init__(self, name: str, type_: Any, required: bool, traits: tuple[Trait, ...]) -> None:
        self.name = name
        self.type = type_
        self.required = required
        self.traits = traits
        self.index: IndexType | None = next((t.kind for t in traits if isinstance(t, Index)), None)

    def has(self, trait: Trait) -> bool:
        return trait in self.traits

    def __repr__(self) -> str:
        return f"Field({self.name!r})"


@cache
def fields() -> tuple[Field, ...]:
    """Every declared field, in declaration order (``DrawerExtras``' first). Read from the annotations on first
    use, not at import: a client that only needs the answers' types does not pay for it."""
    out = []
    for name, declared in get_type_hints(DrawerPayload, include_extras=True).items():
        required = get_origin(declared) is Required
        hint = get_args(declared)[0] if required else declared
        traits: tuple[Trait, ...] = ()
        if get_origin(hint) is Annotated:
            hint, *meta = get_args(hint)
            traits = tuple(m for m in meta if isinstance(m, Trait))
        out.append(Field(name, hint, required, traits))
    return tuple(out)


def by_name() -> dict[str, Field]:
    return {f.name: f for f in fields()}


def required() -> tuple[str, ...]:
    """The fields every drawer has."""
    return tuple(f.name for f in fields() if f.required)


def having(trait: Trait) -> tuple[str, ...]:
    """The names of the fields with ``trait``, in declaration order."""
    return tuple(f.name for f in fields() if f.has(trait))


def indexed(kind: IndexType) -> tuple[str, ...]:
    """The names of the fields the store indexes with an index of ``kind``."""
    return tuple(f.name for f in fields() if f.index == kind)


class HitScores(TypedDict):
    """A hit's evidence: raw dense cosine, raw BM25, keyword coverage and rarity, the calibrated relevance."""

    dense: float | None
    bm25: float | None
    keyword: float
    rarity: float
    relevance: float


class SearchHit(TypedDict, total=False):
    """A search hit: the drawer's ``HIT`` fields it has, its text and scores. A ``format: "index"`` answer's hits
    carry ``drawer_id``, ``title``, ``wing``, ``room``, ``date``, ``score``, ``tokens``, ``line`` and
    ``line_tokens`` instead."""

    drawer_id: Required[str]
    score: Required[float]  # orders the list (fused, relative to this query)
    text: str
    wing: str
    room: str
    memory_type: str
    source_kind: str
    source_path: str
    session_id: str
    agent: str
    timestamp: str
    position: int
    exchange_key: str
    chunk_index: int
    importance: int
    title: str
    cwd: str
    git_branch: str
    machine: str
    kind: str
    relevance: float  # the calibrated probability that it bears on the query
    scores: HitScores
    tokens: int  # model tokens of its full text
    date: str  # format "index"
    line: str  # format "index": the hit in one line
    line_tokens: int  # format "index"


class SearchResult(TypedDict, total=False):
    """What ``search`` answers."""

    query: Required[str]
    hits: Required[list[SearchHit]]
    note: str  # why there are no hits
    tunnels: list[dict[str, Any]]  # wings the hits' rooms also appear in
    format: str  # "index" when the hits are index lines
    tokens: int  # model tokens the answer holds
    tokens_full: int  # format "index": what the full hits would have held


class DrawerRecord(TypedDict, total=False):
    """A drawer as ``get`` returns it: its ``RECORD`` fields, its (possibly cut) text and its model tokens."""

    drawer_id: Required[str]
    wing: str
    room: str
    memory_type: str
    importance: int
    timestamp: str
    agent: str
    session_id: str
    source_kind: str
    source_path: str
    position: int
    chunk_index: int
    chunk_count: int
    git_branch: str
    cwd: str
    files: list[str]
    title: str
    text: Required[str]
    tokens: Required[int]


class GetResult(TypedDict):
    """What ``get`` answers."""

    drawers: list[DrawerRecord]
    missing: list[str]  # ids with no live drawer
    tokens: int
