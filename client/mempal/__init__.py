"""mempal: the client of the mempald memory daemon (stdlib only).

``from mempal import Client`` gives the Python API (``mempal.api``); ``mempal.protocol`` is the wire format,
``mempal.methods`` the declaration of every socket method. Importing ``mempal`` itself loads nothing else, so
the hooks and the CLI, which import its submodules, stay fast.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not typing's: importing typing costs a hook process ~20 ms at start
if TYPE_CHECKING:
    from typing import Any

    from mempal.api import Client
    from mempal.connection import DaemonUnavailable
    from mempal.protocol import RpcError

__all__ = ["Client", "DaemonUnavailable", "RpcError"]


def __getattr__(name: str) -> Any:
    if name == "Client":
        from mempal.api import Client

        return Client
    if name == "DaemonUnavailable":
        from mempal.connection import DaemonUnavailable

        return DaemonUnavailable
    if name == "RpcError":
        from mempal.protocol import RpcError

        return RpcError
    raise AttributeError(f"module 'mempal' has no attribute {name!r}")
