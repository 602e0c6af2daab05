"""Declarations: the daemon itself, search, and reading drawers."""

from __future__ import annotations

from mempal.methods.spec import Cli, Method, Param
from mempal.methods.vocab import MEMORY_TYPE_CHOICES

FILTERS: tuple[Param, ...] = (
    Param("wing", "strs", "only this wing (project or source); the names come from status",
          cli=Cli(flags=("--wing",))),
    Param("room", "strs", "only this room (aspect), e.g. decisions, problems, architecture"),
    Param("memory_type", "strs", "only this kind of memory", choices=MEMORY_TYPE_CHOICES),
    Param("source_kind", "strs", "only this source: claude_code, codex, chatgpt, slack, project, ..."),
    Param("agent", "strs", "only memories from this agent, e.g. claude or codex"),
    Param("session_id", "strs", "only this session", mcp=False),
    Param("machine", "strs", "only drawers from this machine (shared server stores)", mcp=False),
    Param("since", "time", "only newer than this: ISO date, epoch seconds or an age like 7d, 12h"),
    Param("until", "time", "only older than this: ISO date, epoch seconds or an age like 1d"),
)

METHODS: tuple[Method, ...] = (
    Method("ping", "Is the daemon there? Answers {pong: true}; with identify, also whose daemon it is.",
           (Param("identify", "bool", "also answer pid, uid, user and data_dir (clients check they reached "
                  "their own daemon)"),)),
    Method("status", "What the daemon holds and how far behind it is: drawers by wing and room, sources and their "
           "backlog, each agent's own folder (found or not, watched or not), the index state.", cli=("status",),
           mcp="status",
           help="Call it first to learn the wing and room names, and to check the daemon is healthy."),
    Method(
        "search", "Hybrid (keyword + semantic) search over every memory; every hit cites its drawer and source.",
        (
            Param("query", "text", "what to look for, in English, with the specific names involved", required=True,
                  max_len=10_000, cli=Cli(positional=True)),
            *FILTERS,
            Param("limit", "int", "how many results (default: search.limit in config, 10)", lo=1, hi=200,
                  cli=Cli(flags=("--limit", "-n"), aliases=("--results", "--top-k"))),
            Param("format", "enum", "full: verbatim excerpts; index: one line a hit (id, title, wing/room, date, "
                  "relevance, the full drawer's token count), at most about 60 tokens each: fetch the ones you "
                  "want with get", default="full", choices=("full", "index")),
            Param("dense_weight", "float", "weight of the semantic list in the fusion, 0..1 (default from config)",
                  lo=0.0, hi=1.0, mcp=False, cli=Cli(show=False)),
            Param("min_score", "float", "relevance floor, 0..1: hits whose calibrated relevance (an estimated "
                  "probability that the hit bears on the query) is lower are not returned; 0 returns every hit "
                  "(default: search.min_score in config)", lo=0.0, hi=1.0),
        ),
        cli=("search",), mcp="search", returns="SearchResult",
        help="Returns verbatim excerpts with drawer ids and source paths to cite. Use before asserting project "
             "facts and for any 'why did we / last time we' question. format \"index\" returns a compact index "
             "first (then get the drawers worth reading, timeline for their context). Every answer says how "
             "many tokens it holds.",
    ),
    Method(
        "drawers", "Page through stored drawers with their metadata (for exports, audits and scripts).",
        (
            *FILTERS,
            Param("limit", "int", "drawers per page", default=100, lo=1, hi=1000),
            Param("offset", "str", "where the previous page ended (its 'next')"),
            Param("fields", "strs", "only these payload fields (default: all)"),
        ),
    ),
    Method(
        "ingest_file", "Read a watched file now and wait until what is new in it is stored (hooks call this).",
        (Param("path", "path", "the file, inside a watched source", required=True, cli=Cli(positional=True)),),
        writes=True, idempotent=True, timeout=120.0,
    ),
)
