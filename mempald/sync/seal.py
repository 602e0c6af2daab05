"""The key of an encrypted sync folder: made once by ``sync init --encrypt``, kept 0600 in the config dir, never
logged; segments sealed with AES-GCM (``cryptography``), so a wrong key or a changed byte is an error, not text."""

from __future__ import annotations

import base64
import os
from pathlib import Path

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from mempald.config import config_dir
from mempald.errors import InvalidInput

KEY_FILE = "sync.key"
NONCE = 12
CHECK = b"mempal-sync key check"


class WrongKey(InvalidInput):
    """The key in the config dir does not open this folder's segments."""


def key_path() -> Path:
    return config_dir() / KEY_FILE


def new_key() -> bytes:
    return AESGCM.generate_key(bit_length=256)


def write_key(key: bytes, path: Path | None = None) -> Path:
    """Keep ``key`` (base64, one line) owner-only, written whole or not at all."""
    path = path or key_path()
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as fh:
        os.fchmod(fh.fileno(), 0o600)
        fh.write(base64.b64encode(key) + b"\n")
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    return path


def read_key(path: Path | None = None) -> bytes:
    """The key kept at ``path`` (default: the config dir's); a clear error when missing or not a key."""
    path = path or key_path()
    try:
        raw = path.read_bytes().strip()
    except FileNotFoundError:
        raise WrongKey(f"the sync folder is encrypted but there is no key at {path}: join it with "
                       "`mempal sync join DIR --key-file FILE` (the file sync init wrote on the first machine)"
                       ) from None
    try:
        key = base64.b64decode(raw, validate=True)
    except ValueError:
        key = b""
    if len(key) != 32:
        raise WrongKey(f"{path} does not hold a sync key (base64 of 32 bytes)")
    return key


class Sealer:
    """Seals and opens segment bodies with one key; ``aad`` binds a body to its machine and sequence number."""

    def __init__(self, key: bytes) -> None:
        self._aead = AESGCM(key)

    def __repr__(self) -> str:  # never the key
        return "Sealer(<key>)"

    def seal(self, data: bytes, aad: bytes) -> bytes:
        nonce = os.urandom(NONCE)
        return nonce + self._aead.encrypt(nonce, data, aad)

    def open(self, data: bytes, aad: bytes) -> bytes:
        try:
            return self._aead.decrypt(data[:NONCE], data[NONCE:], aad)
        except InvalidTag:
            raise WrongKey("the sync key does not open this segment (another folder's key, or the segment was "
                           "changed)") from None

    def check_token(self) -> str:
        """What the folder's manifest keeps to tell a wrong key at join time."""
        return base64.b64encode(self.seal(CHECK, b"check")).decode()

    def verify(self, token: str) -> None:
        if self.open(base64.b64decode(token), b"check") != CHECK:
            raise WrongKey("the sync key does not open this folder")
