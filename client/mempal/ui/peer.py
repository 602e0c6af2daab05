"""Who is at the other end of a loopback TCP connection: the uid owning the peer's socket (Linux).

A loopback connection has both ends in this network namespace, so the kernel knows the client's socket too (its
local address is the connection's peer address) and its owner's uid. It is asked with one exact ``sock_diag``
netlink lookup (about 0.1 ms); where that is refused, the socket table ``/proc/net/tcp`` is read instead (a few
ms: the kernel walks its whole hash table). The viewer serves only its own user's processes this way
(``mempal.ui.guard``); where there is neither (macOS), ``TABLES_PRESENT`` is false and the check is not made.
"""

from __future__ import annotations

import errno
import ipaddress
import os
import socket
import struct
import sys

TABLES = ("/proc/net/tcp", "/proc/net/tcp6")
TABLES_PRESENT = os.path.exists(TABLES[0])


def _hex(host: str, port: int) -> str:
    """An address as the socket table writes it: the address in host-order 32-bit words, then the port."""
    packed = ipaddress.ip_address(host).packed
    words = (int.from_bytes(packed[i:i + 4], sys.byteorder) for i in range(0, len(packed), 4))
    return "".join(f"{w:08X}" for w in words) + f":{port:04X}"


NETLINK_SOCK_DIAG = 4
SOCK_DIAG_BY_FAMILY = 20
NLM_F_REQUEST = 1
NLMSG_ERROR = 2
NO_COOKIE = 0xFFFFFFFF
UID_AT = 16 + 4 + 48 + 12  # nlmsghdr, inet_diag_msg's four bytes, its sockid, expires/rqueue/wqueue


def peer_uid(client: tuple[str, int], server: tuple[str, int]) -> int | None:
    """The uid owning the socket at ``client`` connected to ``server``; None when the kernel does not know it
    (a peer already gone, another machine)."""
    try:
        return _diag(client, server)
    except (OSError, ValueError, struct.error):
        return _table(client, server)


def _diag(client: tuple[str, int], server: tuple[str, int]) -> int | None:
    """One exact ``SOCK_DIAG_BY_FAMILY`` lookup of the client's socket."""
    src, dst = ipaddress.ip_address(client[0]), ipaddress.ip_address(server[0])
    if src.version != dst.version:
        raise ValueError("mixed address families")
    family = socket.AF_INET if src.version == 4 else socket.AF_INET6
    sockid = (struct.pack(">HH", client[1], server[1]) + src.packed.ljust(16, b"\0") + dst.packed.ljust(16, b"\0")
              + struct.pack("=III", 0, NO_COOKIE, NO_COOKIE))
    req = struct.pack("=BBBBI", family, socket.IPPROTO_TCP, 0, 0, 0xFFFFFFFF) + sockid
    msg = struct.pack("=IHHII", 16 + len(req), SOCK_DIAG_BY_FAMILY, NLM_F_REQUEST, 1, 0) + req
    with socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, NETLINK_SOCK_DIAG) as nl:
        nl.settimeout(1.0)
        nl.sendto(msg, (0, 0))
        answer = nl.recv(8192)
    _, kind = struct.unpack_from("=IH", answer)
    if kind == NLMSG_ERROR:
        (code,) = struct.unpack_from("=i", answer, 16)
        if code in (0, -errno.ENOENT):  # no such socket
            return None
        raise OSError(-code, os.strerror(-code))
    if kind != SOCK_DIAG_BY_FAMILY:
        return None
    (uid,) = struct.unpack_from("=I", answer, UID_AT)
    return int(uid)


def _table(client: tuple[str, int], server: tuple[str, int]) -> int | None:
    """The same from the socket table."""
    try:
        local, remote = _hex(*client), _hex(*server)
    except ValueError:
        return None
    table = TABLES[0] if ipaddress.ip_address(client[0]).version == 4 else TABLES[1]
    try:
        with open(table, encoding="ascii") as f:
            next(f, None)  # the header
            for line in f:
                cols = line.split()
                if len(cols) > 7 and cols[1] == local and cols[2] == remote:
                    return int(cols[7])
    except OSError:
        return None
    return None
