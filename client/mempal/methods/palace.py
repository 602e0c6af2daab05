"""Declarations: the palace's layers and layout, the taxonomy, the knowledge graph and fact-checking."""

from __future__ import annotations

from mempal.methods.spec import Cli, Method, Param

KG_OPS = ("add", "query", "invalidate", "timeline", "stats")
KG_READ_OPS = ("query", "timeline", "stats")  # what kg_query may do: it writes nothing

METHODS: tuple[Method, ...] = (
    Method(
        "wake_up", "The wake-up text: who the user is (L0) and the essential story of a project (L1), with its "
        "token count.",
        (
            Param("wing", "str", "the project (default: derived from the working directory)"),
            Param("cwd", "path", "the working directory the wing is derived from", fill="cwd"),
            Param("budget", "int", "token budget for the story (default: wakeup.l1_budget in config)", lo=50,
                  hi=20_000),
            Param("format", "enum", "text, or the lossy AAAK dialect", default="text", choices=("text", "aaak")),
        ),
        cli=("wake-up",), mcp="wake_up",
        help="A few hundred tokens. Use at the start of work when no hook injected it.",
    ),
    Method(
        "recall_room", "L2: the drawers of one room of a wing, most important and newest first.",
        (
            Param("wing", "str", "the wing", required=True),
            Param("room", "str", "the room", required=True),
            Param("limit", "int", "how many drawers", default=20, lo=1, hi=500),
        ),
        cli=("recall",),
    ),
    Method("list_wings", "Every wing (project or source) with its drawer count.", cli=("wings",), mcp="list_wings"),
    Method("list_rooms", "The rooms (aspects) of one wing, or of all wings, with drawer counts.",
           (Param("wing", "str", "the wing (default: all)"),), cli=("rooms",), mcp="list_rooms"),
    Method("tunnels", "Rooms shared by several wings: where projects touch the same topic.", cli=("tunnels",),
           mcp="tunnels"),
    Method(
        "taxonomy", "The routing keywords that file drawers into rooms; with room and keywords, set that room's "
        "keywords (an empty list removes the room).",
        (
            Param("room", "str", "the room to edit", cli=Cli(show=False)),
            Param("keywords", "strs", "keywords that send a drawer to this room", cli=Cli(show=False)),
        ),
        destructive=True, idempotent=True, cli=("taxonomy",), mcp="taxonomy",  # it replaces or removes a room
    ),
    Method(
        "kg", "Knowledge graph of subject-predicate-object facts with validity dates: add, query, invalidate, "
        "timeline (of an entity) or stats.",
        (
            Param("op", "enum", "what to do", required=True, choices=KG_OPS, cli=Cli(positional=True)),
            Param("subject", "str", "e.g. Kai", cli=Cli(positional=True, nargs="?", aliases=("--subject",))),
            Param("predicate", "str", "e.g. recommends",
                  cli=Cli(positional=True, nargs="?", aliases=("--predicate",))),
            Param("object", "str", "e.g. Clerk", cli=Cli(positional=True, nargs="?", aliases=("--object",))),
            Param("valid_from", "str", "ISO date the fact became true (add)"),
            Param("ended", "str", "ISO date the fact stopped being true (invalidate)"),
            Param("as_of", "str", "ISO date to query at (query)"),
            Param("entity", "str", "the entity (timeline)"),
            Param("source_drawer", "str", "drawer id the fact comes from (add)"),
            Param("confidence", "float", "how sure, 0..1 (add)", default=1.0, lo=0.0, hi=1.0),
            Param("include_expired", "bool", "include facts no longer valid (query)"),
            Param("id", "int", "triple id (invalidate)", lo=0, hi=2**31 - 1),
        ),
        writes=True, cli=("kg",), mcp="kg",
    ),
    Method(
        "kg_query", "Read the knowledge graph (writes nothing): the facts about a subject, predicate or object "
        "(as of a date, or with expired ones), an entity's timeline, or stats.",
        (
            Param("op", "enum", "what to read", default="query", choices=KG_READ_OPS),
            Param("subject", "str", "e.g. Kai"),
            Param("predicate", "str", "e.g. recommends"),
            Param("object", "str", "e.g. Clerk"),
            Param("as_of", "str", "ISO date to query at (query)"),
            Param("include_expired", "bool", "include facts no longer valid (query)"),
            Param("entity", "str", "the entity (timeline)"),
        ),
        mcp="kg_query",
        help="The reading half of `kg`, offered in read-only mode too.",
    ),
    Method(
        "fact_check", "Check a text offline against the knowledge graph: similar-name typos, relations that "
        "contradict known facts, facts that expired.",
        (
            Param("text", "text", "the text to check (on the CLI: a file, or - / nothing for stdin)", required=True,
                  cli=Cli(positional=True, nargs="?", read_file=True, metavar="PATH")),
            Param("today", "str", "ISO date to check against (default: today)", cli=Cli(aliases=("--now",))),
        ),
        cli=("fact-check",), mcp="fact_check",
        help="Use before saving a decision that asserts relationships between people, projects or tools.",
    ),
)
