"""Declarations: the Claude Code <-> Codex cowork inbox, peeking at the partner, and what the hooks ask for."""

from __future__ import annotations

from mempal.methods.spec import Cli, Method, Param
from mempal.methods.vocab import AGENTS, HOOK_AGENTS, SENDERS

_CWD = "the project directory (default: the current one)"

METHODS: tuple[Method, ...] = (
    Method(
        "cowork_push", "Send the partner agent a short handoff for this project, delivered at its next prompt.",
        (
            Param("text", "text", "the message: what you did, what you need, where to look", required=True,
                  cli=Cli(positional=True)),
            Param("to", "enum", "recipient (default: the other agent; never yourself)", choices=AGENTS,
                  fill="partner"),
            Param("from", "enum", "who sends it (default: the agent running the command, else user)",
                  choices=SENDERS, fill="agent", mcp=False, cli=Cli(flags=("--from",))),
            Param("cwd", "path", _CWD, fill="cwd"),
        ),
        writes=True, idempotent=False, cli=("cowork", "push"), mcp="cowork_push",
        help="Delivered at the partner's next prompt, not in real time. At most 8 KB; an inbox holds 16 messages.",
    ),
    Method(
        "cowork_drain", "Take (and remove) the messages waiting for an agent in this project.",
        (
            Param("target", "enum", "whose inbox (default: your own)", choices=AGENTS, fill="agent", mcp=False),
            Param("cwd", "path", _CWD, fill="cwd"),
            Param("max_chars", "int", "stop once this many characters are taken", lo=1, hi=10_000_000, mcp=False),
        ),
        destructive=True, idempotent=False, cli=("cowork", "drain"), mcp="cowork_drain",
        help="Hooks usually deliver them with your next prompt; use this when they did not.",
    ),
    Method("cowork_status", "Both inboxes of a project, without draining them.",
           (Param("cwd", "path", _CWD, fill="cwd"),), cli=("cowork", "status")),
    Method(
        "peek_partner", "The partner agent's live session in this project (read-only): its last exchanges.",
        (
            Param("partner", "enum", "whose session (default: the other agent)", choices=AGENTS, fill="partner"),
            Param("n", "int", "how many recent exchanges", default=5, lo=1, hi=50),
            Param("cwd", "path", _CWD, fill="cwd"),
        ),
        cli=("cowork", "peek"), mcp="peek_partner",
        help="For what the partner is doing now; use search for what was settled earlier.",
    ),
    Method(
        "prompt_context", "What the UserPromptSubmit hook injects: this agent's inbox and the memories relevant "
        "to the prompt.",
        (
            Param("prompt", "text", "the user's prompt", default=""),
            Param("cwd", "path", "the session's working directory"),
            Param("agent", "enum", "whose inbox is delivered (gemini, antigravity and cline have none: memories only)",
                  default="claude", choices=HOOK_AGENTS),
            Param("session_id", "str", "the current session (its own exchanges are not recalled)"),
            Param("max_chars", "int", "characters of context at most", default=9000, lo=500, hi=100_000),
            Param("threshold", "float", "relevance floor: the calibrated relevance (0..1, an estimated probability "
                  "that a memory bears on the prompt) a memory needs (default: hooks.recall_threshold)", lo=0.0,
                  hi=1.0),
            Param("max_tokens", "int", "model tokens of memories at most (default: hooks.recall_max_tokens)", lo=0,
                  hi=100_000),
            Param("budget_ms", "int", "stop searching after this long and still deliver the inbox", default=1500,
                  lo=50, hi=60_000),
            Param("wing", "str", "recall from this wing only (default: the cwd's project, or every wing when that "
                  "project has no memories)"),
        ),
        writes=True, idempotent=False,  # it drains the inbox
    ),
    Method("hook_config", "The [hooks] settings, so hooks never parse TOML."),
    Method(
        "compact_summary", "Store the host's summary of a compacted session with that session (the PostCompact "
        "hook's compact_summary): a drawer of kind summary in the session's wing.",
        (
            Param("summary", "text", "the summary the host wrote when it compacted the conversation", required=True),
            Param("session_id", "str", "the compacted session", required=True),
            Param("agent", "enum", "whose session", default="claude", choices=AGENTS),
            Param("cwd", "path", "the session's working directory (its wing when the session has no drawers yet)"),
            Param("transcript_path", "path", "the session's transcript (the drawer's source)"),
            Param("trigger", "enum", "what compacted it", choices=("manual", "auto")),
        ),
        writes=True,
    ),
)
