"""The words both sides share: memory types, agents, source modes. Defined here once (stdlib only); the daemon's
classifier, the cowork inbox, the CLI choices and the MCP enums all read them from here."""

from __future__ import annotations

MEMORY_TYPES: tuple[str, ...] = ("decision", "preference", "milestone", "problem", "emotional")
MEMORY_TYPE_CHOICES: tuple[str, ...] = (*MEMORY_TYPES, "none")  # "none": no type (filters and forced types)

AGENTS: tuple[str, ...] = ("claude", "codex")  # the agents of the cowork inbox
SENDERS: tuple[str, ...] = (*AGENTS, "user")  # "user": pushed by a human from the CLI
HOOK_AGENTS: tuple[str, ...] = (*AGENTS, "gemini", "antigravity", "cline")  # the agents whose hooks ask for recall

MODES: tuple[str, ...] = ("convos", "projects", "pack")  # how a watched folder is read
