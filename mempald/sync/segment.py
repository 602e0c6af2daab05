"""A segment: one file of records a machine wrote, whole or not at all (temporary name, then rename).

Layout: a magic line, a JSON header line (machine, sequence number, record count, sealed or not, the body's
length and SHA-256), then the body: the records as JSON lines, or those lines sealed (``seal.Sealer``). The length
and digest tell a truncated or changed segment from a whole one before anything in it is used.

Names: ``seg-<sequence, 10 digits>.mps``. A sync tool's conflicted copy of one (``seg-... (conflicted copy
...).mps``, ``seg-....sync-conflict-....mps``) is read too; anything else (a temporary ``.seg-...tmp``) is not.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mempald.sync.seal import Sealer, WrongKey

MAGIC = b"MPSEG 1\n"
NAME = re.compile(r"^seg-(\d{10})(.*)\.mps$")
Record = dict[str, Any]


class SegmentDamaged(Exception):
    """A segment that cannot be read whole: truncated, changed, or not a segment."""


@dataclass(frozen=True, slots=True)
class Segment:
    machine: str
    seq: int
    records: list[Record]


def name_of(seq: int) -> str:
    return f"seg-{seq:010d}.mps"


def seq_of(name: str) -> int | None:
    """The sequence number a segment's file name holds (a conflicted copy's too), else None (not a segment)."""
    m = NAME.match(name)
    if m is None or (m.group(2) and "conflict" not in m.group(2)):
        return None
    return int(m.group(1))


def _aad(machine: str, seq: int) -> bytes:
    return f"mempal-sync:{machine}:{seq}".encode()


def encode(machine: str, seq: int, records: Iterable[Mapping[str, Any]], sealer: Sealer | None) -> bytes:
    lines = [json.dumps(r, ensure_ascii=False, separators=(",", ":")) for r in records]
    body = "".join(line + "\n" for line in lines).encode("utf-8")
    if sealer is not None:
        body = sealer.seal(body, _aad(machine, seq))
    header = {"machine": machine, "seq": seq, "records": len(lines), "sealed": sealer is not None,
              "length": len(body), "sha256": hashlib.sha256(body).hexdigest()}
    return MAGIC + json.dumps(header, separators=(",", ":")).encode() + b"\n" + body


def decode(data: bytes, sealer: Sealer | None) -> Segment:
    """The records of a whole segment; ``SegmentDamaged`` when it is not whole, ``WrongKey`` when sealed with
    another key (or sealed and no key is kept here)."""
    if not data.startswith(MAGIC):
        raise SegmentDamaged("not a mempal segment (no header)" if data else "empty file")
    end = data.find(b"\n", len(MAGIC))
    if end < 0:
        raise SegmentDamaged("truncated in its header")
    try:
        header = json.loads(data[len(MAGIC):end])
        machine, seq, count, sealed = str(header["machine"]), int(header["seq"]), int(header["records"]), \
            bool(header["sealed"])
        length, digest = int(header["length"]), str(header["sha256"])
    except (ValueError, KeyError, TypeError):
        raise SegmentDamaged("its header is not readable") from None
    body = data[end + 1:]
    if len(body) != length:
        raise SegmentDamaged(f"truncated: {len(body)} of {length} bytes")
    if hashlib.sha256(body).hexdigest() != digest:
        raise SegmentDamaged("changed after it was written (its checksum does not match)")
    if sealed:
        if sealer is None:
            raise WrongKey("this segment is encrypted and no sync key is kept here: `mempal sync join DIR "
                           "--key-file FILE`")
        body = sealer.open(body, _aad(machine, seq))
    elif sealer is not None:
        raise SegmentDamaged("not encrypted in an encrypted folder (ignored)")
    try:
        records = [json.loads(line) for line in body.decode("utf-8").splitlines() if line]
    except (UnicodeDecodeError, ValueError):
        raise SegmentDamaged("a record is not readable") from None
    if len(records) != count or not all(isinstance(r, dict) for r in records):
        raise SegmentDamaged(f"holds {len(records)} records, its header says {count}")
    return Segment(machine, seq, records)


def write_whole(folder: Path, name: str, data: bytes, *, replace: bool = True) -> Path:
    """Write ``data`` to ``folder/name`` whole: a temporary name, synced, then renamed (a reader never sees it
    half written) and the folder synced. Without ``replace`` a file already there is never overwritten
    (``FileExistsError``): a segment, once written, is not changed."""
    folder.mkdir(exist_ok=True)  # (not its parents: a sync folder that is gone is not made again here)
    final = folder / name
    tmp = folder / f".{name}.tmp-{os.getpid()}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        if replace:
            os.replace(tmp, final)
        else:
            try:
                os.link(tmp, final)  # (fails if the name is taken: no overwrite, even between two writers)
            except FileExistsError:
                raise
            except OSError:  # a file system without hard links: checked, then renamed
                if final.exists():
                    raise FileExistsError(str(final)) from None
                os.replace(tmp, final)
            tmp.unlink(missing_ok=True)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    dfd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)
    return final


def drop_unfinished(folder: Path) -> int:
    """Remove this machine's temporary files left by a write that did not finish (a crash)."""
    n = 0
    for p in folder.glob(".seg-*.tmp-*") if folder.is_dir() else ():
        p.unlink(missing_ok=True)
        n += 1
    return n
