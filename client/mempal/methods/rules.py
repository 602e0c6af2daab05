"""Declarations: rules that hold (the user's always / never, checked by the PreToolUse hook before a tool runs)."""

from __future__ import annotations

from mempal.methods.spec import Cli, Method, Param

DECISIONS: tuple[str, ...] = ("ask", "deny")
SUGGESTION_STATUS: tuple[str, ...] = ("pending", "accepted", "dismissed", "all")

_MATCH_HELP = ("a regular expression searched in the call's input (the shell command; else the file, path or URL "
               "it touches); refused when invalid, catastrophic (nested quantifiers) or matching every command")

METHODS: tuple[Method, ...] = (
    Method(
        "rule_add", "Add a rule the PreToolUse hook enforces: when TOOL's input matches REGEX, the host asks you "
        "first (ask) or refuses the call (deny).",
        (
            Param("text", "text", "what the rule is for, shown when it fires (e.g. \"never push to main\")",
                  required=True, max_len=500, cli=Cli(positional=True)),
            Param("tool", "str", "the tool it watches: Bash, Edit, Write, mcp__server__tool, several joined by '|', "
                  "or '*'", default="Bash", max_len=400),
            Param("match", "str", _MATCH_HELP, required=True, max_len=500),
            Param("decision", "enum", "ask (the host asks you first) or deny (the call is refused)", default="ask",
                  choices=DECISIONS),
            Param("wing", "str", "only in this wing (project); default: every wing"),
            Param("force", "bool", "keep a pattern that matches every command"),
            Param("actor", "str", "who adds it", fill="agent", mcp=False),
        ),
        writes=True, idempotent=False, cli=("rule", "add"),
    ),
    Method(
        "rule_list", "The rules the PreToolUse hook enforces: tool, pattern, decision, wing and source.",
        (Param("wing", "str", "only the rules that hold in this wing (its own and the global ones)"),),
        cli=("rule", "list"), mcp="rules",
        help="Read only: the user's rules. A tool call the hook refused or asked about names the rule; do not try "
             "to work around a rule, ask the user instead.",
    ),
    Method(
        "rule_remove", "Remove a rule (by its id, from rule list).",
        (
            Param("rule_id", "str", "the rule's id", required=True, cli=Cli(positional=True)),
            Param("actor", "str", "who removes it", fill="agent", mcp=False),
        ),
        destructive=True, idempotent=True, cli=("rule", "remove"),
    ),
    Method(
        "rule_test", "Which rule would fire for a command, without an agent.",
        (
            Param("command", "text", "the command (or, with --tool Edit/Write/Read, the file path)", required=True,
                  max_len=100_000, cli=Cli(positional=True)),
            Param("tool", "str", "the tool that would run it", default="Bash", max_len=200),
            Param("cwd", "path", "the project directory: its wing's rules count (default: the current one)",
                  fill="cwd"),
            Param("wing", "str", "test in this wing instead of the cwd's"),
        ),
        cli=("rule", "test"),
    ),
    Method(
        "rule_check", "The PreToolUse hook's question: the decision of the rules for one tool call.",
        (
            Param("tool_name", "str", "the tool's name", required=True, max_len=200),
            Param("tool_input", "text", "the tool's input as JSON", required=True, max_len=1_000_000),
            Param("cwd", "path", "the session's working directory (its wing's rules count)"),
            Param("agent", "str", "which host asks (claude, codex)", default="claude"),
        ),
        timeout=2.0,
    ),
    Method(
        "rule_suggestions", "Rules suggested from always / never instructions in your stored prompts, each with a "
        "draft pattern and the drawer it cites; nothing is enforced until you accept one.",
        (
            Param("status", "enum", "which to list", default="pending", choices=SUGGESTION_STATUS),
            Param("scan", "bool", "look for new ones in the stored prompts first", default=True),
        ),
        writes=True, idempotent=True, cli=("rule", "suggestions"), timeout=600.0,
    ),
    Method(
        "rule_accept", "Make a suggestion a rule, with your edits (any of text, tool, match, decision, wing).",
        (
            Param("suggestion_id", "str", "the suggestion's id", required=True, cli=Cli(positional=True)),
            Param("text", "text", "the rule's text (default: the sentence)", max_len=500),
            Param("tool", "str", "the tool it watches (default: the draft's)", max_len=400),
            Param("match", "str", "the pattern (default: the draft's)", max_len=500),
            Param("decision", "enum", "ask or deny (default: the draft's)", choices=DECISIONS),
            Param("wing", "str", "its wing (default: the drawer's; '*' for every wing)"),
            Param("force", "bool", "keep a pattern that matches every command"),
            Param("actor", "str", "who accepts it", fill="agent", mcp=False),
        ),
        writes=True, idempotent=False, cli=("rule", "accept"),
    ),
    Method(
        "rule_dismiss", "Dismiss a suggestion: it is not listed as pending again.",
        (
            Param("suggestion_id", "str", "the suggestion's id", required=True, cli=Cli(positional=True)),
            Param("actor", "str", "who dismisses it", fill="agent", mcp=False),
        ),
        writes=True, idempotent=True, cli=("rule", "dismiss"),
    ),
)
