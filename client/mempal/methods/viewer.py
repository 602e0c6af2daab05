"""Declarations: what the web viewer (``mempal ui``) reads that no other method gives cheaply.

A wing's sessions by day, a session's drawers in order, the knowledge graph as nodes and edges, and the outputs
of pack-mode sources. Read-only, for programs (the Python API); the viewer is a client of the socket like the CLI.
Drawers by id and the exchanges around one drawer for agents are issue #19's ``get`` and ``timeline``.
"""

from __future__ import annotations

from mempal.methods.spec import Method, Param

METHODS: tuple[Method, ...] = (
    Method(
        "wing_sessions", "The sessions of one wing, newest first: each with its start time, first exchange, agent, "
        "source and drawer count; and the wing's rooms (the viewer's timeline).",
        (
            Param("wing", "str", "the wing", required=True),
            Param("since", "time", "only sessions started at or after this: ISO date, epoch seconds or an age (7d)"),
            Param("until", "time", "only sessions started at or before this (the next page: the oldest start seen)"),
            Param("limit", "int", "how many sessions", default=200, lo=1, hi=5000),
        ),
    ),
    Method(
        "session_drawers", "A session's drawers in order (by position): the exchanges around a drawer, or from a "
        "position of a session; soft-deleted ones included on request.",
        (
            Param("drawer_id", "id", "the drawer in the middle (its session is shown)"),
            Param("session_id", "str", "the session, when no drawer is given"),
            Param("start", "int", "with session_id: the first position shown", default=0, lo=0, hi=10**9),
            Param("before", "int", "exchanges before the drawer", default=5, lo=0, hi=200),
            Param("after", "int", "exchanges after the drawer (or after start)", default=5, lo=0, hi=200),
            Param("include_deleted", "bool", "also soft-deleted drawers (marked as such)"),
        ),
    ),
    Method(
        "kg_graph", "The knowledge graph as a picture's data: the most connected entities (or one entity and its "
        "neighbours) and the facts between them, each with its validity interval.",
        (
            Param("entity", "str", "centre on this entity and its neighbours"),
            Param("as_of", "str", "ISO date: the facts valid then (default: now)"),
            Param("include_expired", "bool", "also facts no longer valid"),
            Param("limit", "int", "entities at most", default=60, lo=1, hi=500),
        ),
    ),
    Method(
        "pack_outputs", "What pack-mode sources (or one pack folder) produced: where, the header figures, the "
        "overview and the topics with their facts.",
        (Param("dir", "path", "a pack's output folder (default: every pack-mode source's)"),),
    ),
)
