"""Thin, stdlib-only clients of the mempald socket: wire protocol, socket client, CLI, hooks and MCP shim.

Nothing in this package may import fastembed, qdrant, numpy or watchdog: clients must start fast.
"""
