"""Claude Code and Codex hook commands (``mempal-hook``): thin, fail-open clients of the mempald socket."""
