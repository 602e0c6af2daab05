"""The shared folder's layout: ``mempal-sync.json`` (written once by ``sync init``: encrypted or not, and a token
that tells a wrong key), and one folder per machine, ``<machine id>/``, holding only that machine's segments."""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mempald.errors import InvalidInput
from mempald.sync.seal import Sealer
from mempald.sync.segment import seq_of, write_whole

MANIFEST = "mempal-sync.json"


def folder_name(machine: str) -> str:
    """A machine's folder: its id with anything a file system or a sync tool may refuse replaced."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", machine).strip(".") or "machine"


@dataclass(frozen=True, slots=True)
class Listed:
    """One segment file of a machine's folder as the folder shows it now."""

    machine: str  # the folder's name
    name: str
    seq: int
    size: int
    mtime_ns: int
    path: Path


class SyncFolder:
    def __init__(self, root: Path, machine: str) -> None:
        self.root = root
        self.machine = machine
        self.own = root / folder_name(machine)

    def manifest(self) -> dict[str, Any]:
        try:
            data = json.loads((self.root / MANIFEST).read_text())
        except FileNotFoundError:
            raise InvalidInput(f"{self.root} is not a mempal sync folder (no {MANIFEST}): `mempal sync init DIR` "
                               "makes one") from None
        except (OSError, ValueError) as exc:
            raise InvalidInput(f"{self.root / MANIFEST} is not readable: {exc}") from None
        if not isinstance(data, dict) or data.get("format") != "mempal-sync":
            raise InvalidInput(f"{self.root / MANIFEST} is not a mempal sync manifest")
        return data

    def create(self, sealer: Sealer | None) -> None:
        if (self.root / MANIFEST).exists():
            raise InvalidInput(f"{self.root} is already a sync folder: `mempal sync join {self.root}`")
        manifest: dict[str, Any] = {"format": "mempal-sync", "version": 1, "encrypted": sealer is not None}
        if sealer is not None:
            manifest["check"] = sealer.check_token()
        write_whole(self.root, MANIFEST, json.dumps(manifest, indent=1).encode(), replace=False)

    def machines(self) -> list[str]:
        """The folder names of every machine that wrote here (this one's included)."""
        try:
            return sorted(e.name for e in os.scandir(self.root) if e.is_dir() and not e.name.startswith("."))
        except FileNotFoundError:
            return []

    def segments(self, machine: str) -> list[Listed]:
        """A machine's segments (conflicted copies included), by sequence number; unfinished ones left out."""
        out: list[Listed] = []
        try:
            entries = list(os.scandir(self.root / machine))
        except (FileNotFoundError, NotADirectoryError):
            return []
        for e in entries:
            seq = seq_of(e.name)
            if seq is None:
                continue
            try:
                st = e.stat()
            except FileNotFoundError:
                continue
            out.append(Listed(machine, e.name, seq, st.st_size, st.st_mtime_ns, Path(e.path)))
        return sorted(out, key=lambda s: (s.seq, s.name))

    def last_seq(self) -> int:
        own = self.segments(self.own.name)
        return own[-1].seq if own else 0
