"""``mempal.ui.peer``: the uid at the other end of a real loopback connection, by netlink and by the socket table
(the two agree), and nothing for a peer the kernel does not know. Another user's uid is checked for real in
``tests/integration/test_viewer_loopback.py``."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator

import pytest

from mempal.ui import peer

if not peer.TABLES_PRESENT:
    pytest.skip("the peer check reads Linux's socket tables", allow_module_level=True)


@pytest.fixture(params=[(socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")], ids=["ipv4", "ipv6"])
def connection(request: pytest.FixtureRequest) -> Iterator[tuple[tuple[str, int], tuple[str, int]]]:
    family, host = request.param
    with socket.socket(family) as srv:
        try:
            srv.bind((host, 0))
        except OSError as exc:
            pytest.skip(f"no {host} here: {exc}")
        srv.listen()
        server = srv.getsockname()[:2]
        with socket.create_connection(server) as _client:
            accepted, addr = srv.accept()
            with accepted:
                yield (addr[0], addr[1]), (server[0], server[1])


def test_the_owner_of_the_other_end_is_found_both_ways(
        connection: tuple[tuple[str, int], tuple[str, int]]) -> None:
    client, server = connection
    assert peer.peer_uid(client, server) == os.getuid()
    assert peer._diag(client, server) == peer._table(client, server) == os.getuid()


def test_an_unknown_peer_has_no_owner(connection: tuple[tuple[str, int], tuple[str, int]]) -> None:
    client, server = connection
    gone = (client[0], client[1] ^ 1)
    assert peer.peer_uid(gone, server) is None and peer._table(gone, server) is None
    assert peer.peer_uid(("not an address", 1), server) is None
