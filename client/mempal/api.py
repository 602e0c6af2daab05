"""The Python API: ``mempal.Client``, a typed method for every socket method (stdlib only, imports fast).

    from mempal import Client

    with Client() as c:
        hits = c.search("why did the deploy fail", wing="acme", limit=5)["hits"]
        c.ingest("We pin numpy<2 because the ONNX runtime wheel needs it", memory_type="decision")
        print(c.wake_up(wing="acme")["text"])

Each method returns the record the CLI prints with ``--json``. Failures raise ``DaemonUnavailable`` (nothing
answers on the socket; its message says which socket was tried) or ``RpcError`` (the daemon refused, with a
stable ``code``).
"""

from __future__ import annotations

from mempal.api_methods import ClientMethods


class Client(ClientMethods):
    """A client of the local mempald (see the module docstring)."""
