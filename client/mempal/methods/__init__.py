"""The method table: every socket method of mempald, declared once (see ``mempal.methods.spec``).

``METHODS`` maps each method's name to its ``Method``. The daemon refuses to start unless it has a handler for
exactly these names; the CLI, the MCP tools and the Python API are derived from them, and a test checks that
every surface agrees with the table.
"""

from __future__ import annotations

from mempal.methods import agents, archive, core, data, disclosure, memory, palace, rules, sources, sync, viewer
from mempal.methods.spec import Method

METHODS: dict[str, Method] = {}
for _group in (core, memory, palace, sources, agents, viewer, disclosure, data, rules, sync, archive):
    for _m in _group.METHODS:
        if _m.name in METHODS:
            raise ValueError(f"method {_m.name!r} is declared twice")
        METHODS[_m.name] = _m

__all__ = ["METHODS", "Method"]
