"""The MCP tools, derived from the method table (``mempal.methods``): every method that declares a tool name is
a tool, with its JSON schema and annotations from the declaration, and the memory protocol the server sends as
its ``instructions``. Schemas keep to what every host's validator takes (Claude Code's included): each is an
object schema with ``type: object``, every property a plain ``type`` (flags are ``boolean``; the server also
takes the strings ``"true"`` / ``"false"`` older prompts send), no boolean subschemas and no ``$ref``.
A read-only server offers only the tools whose method writes nothing."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mempal.mcp_render import RENDERERS, Render, dump
from mempal.methods import METHODS
from mempal.methods.spec import Method, Param

MEMORY_PROTOCOL = """\
mempal is this machine's memory of past coding sessions (Claude Code, Codex, exports, notes), kept word for \
word by the local mempald daemon. Use it like this:

0. FIRST TIME: call `status` once to learn which wings (projects) and rooms (aspects) exist before you filter \
by them.
1. WAKE UP: `wake_up` returns who the user is and the essential story of this project. Text inside \
<mempal-context> tags was injected by mempal's hooks; it is memory, not the user speaking.
2. VERIFY BEFORE ASSERTING: before you state a project fact (why something is as it is, what was decided, \
what failed before), `search` for it.
3. QUERY WHEN UNCERTAIN, INDEX FIRST: "why did we...", "last time we...", "what did we decide about..." -> \
`search` with format "index": one line a hit (drawer id, title, wing/room, date, relevance, and how many tokens \
the full drawer holds), about 60 tokens each. Then `get` only the drawer ids worth their tokens, and \
`timeline` one of them for what came before and after it in its session (with an outline of the session). \
Every answer starts with how many tokens it holds. Write queries in English, with the specific names involved.
3a. SEARCH IN ENGLISH: the semantic side of search understands English only. Translate a question asked in \
another language into English before you search, and keep names, identifiers, error strings and quoted words \
as they were written: keyword search finds Chinese and Japanese words and the parts of code identifiers.
4. FILES: before you change a file, `file_context` shows what earlier sessions did to it (the PreToolUse hook \
may already have put this in your context the first time you opened it).
5. SAVE DECISIONS WITH THEIR REASONS: after a firm decision, `ingest` what was decided and why (alternatives \
rejected, file paths), memory_type "decision", importance 3-5. Not for tentative ideas or what the code \
already says. `dry_run` true shows near-duplicates without saving.
6. CITE EVERYTHING: when a memory informs your answer, cite its drawer id and its source path.
7. MEMORIES AGE: check a memory against the current code before relying on it; `delete` a wrong one with a \
reason.
8. PARTNER AWARENESS: Claude Code and Codex may work on the same repo. `peek_partner` reads the partner's \
live session (read-only): use it for what the partner is doing now, `search` for what was settled earlier.
9. COWORK PUSH: `cowork_push` sends the partner a short handoff, delivered at its next prompt (not real \
time). Read with peek, send with push, persist decisions with ingest (mention partner input that shaped \
them). `cowork_drain` reads messages pushed to you when no hook delivered them.
10. FACTS: `kg` keeps subject-predicate-object facts with validity dates (`kg_query` reads them); run \
`fact_check` on a text that asserts relationships between people, projects or tools before you save it.
11. DIARY: keep your own observations (what worked, what the user corrected, what to try next) with \
`ingest` in wing "agent-diary", room = your agent name (claude, codex, ...); read them back with `search` \
filtered to that wing at the start of a session.
"""

READ_ONLY_NOTE = """\
This server is READ-ONLY: the tools that change memory (ingest, delete, forget, cowork_push, cowork_drain, \
kg, taxonomy) are not offered (`kg_query` reads the knowledge graph); ignore the steps above that use them.

"""

_FLAG = {"type": "boolean"}


def param_schema(p: Param) -> dict[str, Any]:
    """The JSON schema of one parameter as MCP clients see it."""
    schema: dict[str, Any]
    if p.kind == "bool":
        schema = dict(_FLAG)
    elif p.kind in ("int", "float"):
        schema = {"type": "integer" if p.kind == "int" else "number"}
        if p.lo is not None:
            schema["minimum"] = p.lo
        if p.hi is not None:
            schema["maximum"] = p.hi
    elif p.kind == "enum":
        schema = {"type": "string", "enum": list(p.choices)}
    elif p.kind in ("strs", "paths", "ids"):  # one value or a list of them
        one: dict[str, Any] = {"type": "string", "enum": list(p.choices)} if p.choices else {"type": "string"}
        schema = {"anyOf": [one, {"type": "array", "items": dict(one)}]}
    else:
        schema = {"type": "string"}
    help_text = p.help
    if p.fill == "cwd":
        help_text = f"{p.help} (default: the directory the MCP server runs in)"
    elif p.default is not None and p.kind != "bool":
        help_text = f"{p.help} (default {p.default})"
    return {**schema, "description": help_text}


def input_schema(m: Method) -> dict[str, Any]:
    props = {p.name: param_schema(p) for p in m.params if p.mcp}
    schema: dict[str, Any] = {"type": "object", "properties": props, "additionalProperties": False}
    required = [p.name for p in m.params if p.mcp and p.required and not p.fill]
    if required:
        schema["required"] = required
    return schema


@dataclass(frozen=True)
class ToolSpec:
    """One MCP tool: a method of the table that declares a tool name."""

    name: str
    method: Method
    render: Render = dump

    @property
    def description(self) -> str:
        return f"{self.method.summary} {self.method.help}".strip()

    @property
    def schema(self) -> dict[str, Any]:
        return input_schema(self.method)

    @property
    def read_only(self) -> bool:
        return not self.method.writes

    def annotations(self) -> dict[str, bool]:
        return {"readOnlyHint": self.read_only, "destructiveHint": self.method.destructive,
                "idempotentHint": self.method.idempotent, "openWorldHint": False}


TOOLS: tuple[ToolSpec, ...] = tuple(ToolSpec(m.mcp, m, RENDERERS.get(m.name, dump))
                                    for m in METHODS.values() if m.mcp is not None)
TOOLS_BY_NAME = {t.name: t for t in TOOLS}


def offered(read_only: bool) -> tuple[ToolSpec, ...]:
    """The tools a server offers: all of them, or in read-only mode those that write nothing."""
    return tuple(t for t in TOOLS if t.read_only or not read_only)


def instructions(read_only: bool) -> str:
    return (READ_ONLY_NOTE + MEMORY_PROTOCOL) if read_only else MEMORY_PROTOCOL
