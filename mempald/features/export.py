"""``mempal export``: every drawer, verbatim, out of the palace (the daemon writes the files: it reads the store).

- ``jsonl``: one line of header (``{"mempal_export": 1, ...}``), then one line per drawer: its id and every
  payload field as stored (text, wing, room, session, source, times, importance, hashes...). ``mempal import``
  reads it back (``mempald.features.importer``), into this palace or a fresh one. The user's rules follow, one
  ``{"mempal_rule": 1, ...}`` line each (those of the exported wing and the global ones with ``--wing``).
- ``md``: readable Markdown, one file per wing and session (``OUT/<wing>/<date> <title> <session>.md``) with
  YAML front matter (wing, session, source, agent, dates, tags) and one section per exchange, plus an
  ``index.md`` of wiki links: it opens well in an editor or as an Obsidian vault.

Output is the owner's only: files 0600, folders 0700. The path must be absolute and outside the daemon's data
and config folders; an existing file or a non-empty folder is refused unless ``force``.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import secrets
import stat
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

import anyio.to_thread

from mempald.config import config_dir, data_dir
from mempald.errors import Forbidden, InvalidInput
from mempald.features.rules import Rules
from mempald.store.base import Filters
from mempald.store.gateway import StoreGateway

FORMAT_VERSION = 1
RULE_KEY = "mempal_rule"  # a line of a rule (after the drawers), read back by ``mempal import``
RULE_VERSION = 1
PAGE = 500
_UNSAFE = re.compile(r"[^\w .,()+=@-]+")


def check_target(raw: str, *, protected: Sequence[Path] = ()) -> Path:
    """An output path a request names: absolute, and outside the daemon's data and config folders (and
    ``protected``: the store, wherever it lives)."""
    path = Path(raw).expanduser()
    if not path.is_absolute():
        raise InvalidInput(f"the output path must be absolute: {raw!r}")
    real = Path(os.path.realpath(path))
    for folder in (data_dir(), config_dir(), *protected):
        inside = Path(os.path.realpath(folder))
        if real == inside or inside in real.parents or real in inside.parents:
            raise Forbidden(f"{path} is inside (or holds) {folder}, the daemon's own files: write it elsewhere")
    return path


def owner_dir(path: Path) -> None:
    """Create ``path`` (and missing parents) for the owner only."""
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(path, 0o700)


def owner_file(path: Path) -> IO[str]:
    """A new file for the owner only (a file of that name is replaced, never followed: written beside, renamed)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    os.fchmod(fd, 0o600)
    return os.fdopen(fd, "w", encoding="utf-8", newline="\n")


def temp_beside(target: Path) -> tuple[IO[str], Path]:
    """A new temp file for the owner only in ``target``'s folder, under a name nobody could have planted
    (``mkstemp``: a random name opened ``O_EXCL``, so a link already there is never followed)."""
    fd, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.fchmod(fd, 0o600)
    return os.fdopen(fd, "w", encoding="utf-8", newline="\n"), Path(name)


def _open_folder(parent: int, name: str) -> tuple[int, bool]:
    """The folder ``name`` in the folder open as ``parent``, made if missing, opened without following a link:
    a link there (planted to lead the export elsewhere) is replaced by a real folder; returns the folder's fd
    and whether a link was replaced."""
    replaced = False
    for _ in range(3):
        with contextlib.suppress(FileExistsError):
            os.mkdir(name, 0o700, dir_fd=parent)
        try:
            return os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=parent), replaced
        except OSError as exc:
            if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
                raise
            if not stat.S_ISLNK(os.lstat(name, dir_fd=parent).st_mode):
                raise InvalidInput(f"{name!r} in the export folder is a file, not a folder: move it away") from None
            os.unlink(name, dir_fd=parent)  # the link only: what it points to is left alone
            replaced = True
    raise InvalidInput(f"{name!r} in the export folder keeps changing: try again")


def write_under(root: Path, rel: str, body: str) -> bool:
    """Write ``root/rel`` (owner only) without following any link below ``root``: every folder is opened
    ``O_NOFOLLOW`` from the one above, the note written to a fresh temp name and renamed over the old one (a
    link of that name is replaced, not followed). Returns whether a planted link was replaced."""
    *folders, name = rel.split("/")
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    replaced = False
    try:
        for folder in folders:
            inner, swapped = _open_folder(fd, folder)
            os.close(fd)
            fd, replaced = inner, replaced or swapped
            os.fchmod(fd, 0o700)
        tmp = f".{name}.{secrets.token_hex(8)}.tmp"
        out = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600, dir_fd=fd)
        try:
            with os.fdopen(out, "w", encoding="utf-8", newline="\n") as fh:
                fh.write(body)
            os.replace(tmp, name, src_dir_fd=fd, dst_dir_fd=fd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=fd)
            raise
    finally:
        os.close(fd)
    return replaced


def safe_name(text: str, limit: int = 80) -> str:
    name = " ".join(_UNSAFE.sub("-", text).split()).strip(" .-")
    return name[:limit].rstrip(" .-") or "untitled"


@dataclass(frozen=True, slots=True)
class Entry:
    """What the Markdown export knows of a drawer before it reads its session whole."""

    id: str
    wing: str
    session: str
    position: int
    chunk: int
    ts: float


ARCHIVE_NOTE = ("not included: an export holds the drawers; the byte-exact transcript archive is in a backup "
                "(mempal backup)")


class Exporter:
    def __init__(self, store: StoreGateway, rules: Rules | None = None) -> None:
        self.store = store
        self.rules = rules  # the user's rules travel as ``mempal_rule`` lines after the drawers (jsonl)

    async def export(self, output: str, *, fmt: str, wing: str | None, since: float | None, include_deleted: bool,
                     force: bool) -> dict[str, Any]:
        target = check_target(output)
        flt = Filters(wing=(wing,) if wing else (), since=since, include_deleted=include_deleted)
        what = {k: v for k, v in (("wing", wing), ("since", since), ("include_deleted", include_deleted)) if v}
        await anyio.to_thread.run_sync(_check_free, target, fmt, force)
        t0 = time.monotonic()
        if fmt == "jsonl":
            result = await self._jsonl(target, flt, what)
        else:
            result = await self._markdown(target, flt)
        return {"format": fmt, "path": str(target), **result, "filters": what,
                "seconds": round(time.monotonic() - t0, 2), "archive": ARCHIVE_NOTE}

    async def _jsonl(self, target: Path, flt: Filters, what: Mapping[str, Any]) -> dict[str, Any]:
        meta = await self.store.get_meta()
        header = {"mempal_export": FORMAT_VERSION, "exported_at": datetime.now(UTC).isoformat(),
                  "model": meta.get("model"), "dim": meta.get("dim"), "filters": dict(what)}
        await anyio.to_thread.run_sync(owner_dir, target.parent)
        fh, tmp = await anyio.to_thread.run_sync(temp_beside, target)
        n = 0
        wings: dict[str, int] = {}
        try:
            await anyio.to_thread.run_sync(fh.write, json.dumps(header, ensure_ascii=False) + "\n")
            async for page in self.store.pages(flt, PAGE):
                lines = "".join(json.dumps({"id": p.id, **p.payload}, ensure_ascii=False) + "\n" for p in page)
                await anyio.to_thread.run_sync(fh.write, lines)
                n += len(page)
                for p in page:
                    w = str(p.payload.get("wing") or "")
                    wings[w] = wings.get(w, 0) + 1
            rules = [r for r in (await self.rules.exported() if self.rules else [])
                     if not flt.wing or r["wing"] in ("", *flt.wing)]
            await anyio.to_thread.run_sync(fh.write, "".join(
                json.dumps({RULE_KEY: RULE_VERSION, **r}, ensure_ascii=False) + "\n" for r in rules))
            await anyio.to_thread.run_sync(_close_synced, fh)
            await anyio.to_thread.run_sync(os.replace, tmp, target)
        except BaseException:
            fh.close()
            tmp.unlink(missing_ok=True)
            raise
        size = (await anyio.to_thread.run_sync(target.stat)).st_size
        return {"drawers": n, "rules": len(rules), "files": 1, "wings": wings, "bytes": size}

    async def _markdown(self, target: Path, flt: Filters) -> dict[str, Any]:
        sessions: dict[tuple[str, str], list[Entry]] = {}
        async for page in self.store.pages(flt, PAGE):
            for p in page:
                e = Entry(p.id, str(p.payload.get("wing") or "general"), str(p.payload.get("session_id") or p.id),
                          int(p.payload.get("position") or 0), int(p.payload.get("chunk_index") or 0),
                          float(p.payload.get("ts") or 0.0))
                sessions.setdefault((e.wing, e.session), []).append(e)
        await anyio.to_thread.run_sync(owner_dir, target)
        index: dict[str, list[tuple[str, int]]] = {}
        used: set[str] = set()
        total = links = 0
        for (wing, session), entries in sorted(sessions.items(), key=lambda kv: (kv[0][0], min(e.ts for e in kv[1]))):
            entries.sort(key=lambda e: (e.position, e.chunk, e.ts))
            payloads: list[Mapping[str, Any]] = []
            ids = [e.id for e in entries]
            for i in range(0, len(ids), 64):
                got = {p.id: p.payload for p in await self.store.retrieve(ids[i : i + 64])}
                payloads += [{**got[x], "id": x} for x in ids[i : i + 64] if x in got]
            if not payloads:
                continue
            rel = _note_name(wing, session, payloads, used)
            body = render_session(wing, session, payloads)
            links += await anyio.to_thread.run_sync(write_under, target, f"{rel}.md", body)
            index.setdefault(wing, []).append((rel, len(payloads)))
            total += len(payloads)
        links += await anyio.to_thread.run_sync(write_under, target, "index.md", render_index(index))
        return {"drawers": total, "files": sum(len(v) for v in index.values()) + 1, "sessions": len(sessions),
                "wings": {w: sum(n for _, n in v) for w, v in index.items()}, "links_replaced": links}


def _check_free(target: Path, fmt: str, force: bool) -> None:
    if fmt == "jsonl":
        if target.is_dir():
            raise InvalidInput(f"{target} is a folder: name the .jsonl file to write")
        if target.exists() and not force:
            raise InvalidInput(f"{target} exists: pass force (--force) to replace it")
    elif target.exists():
        if not target.is_dir():
            raise InvalidInput(f"{target} is a file: the Markdown export writes a folder")
        if any(target.iterdir()) and not force:
            raise InvalidInput(f"{target} is not empty: name a new folder, or pass force (--force) to write into it")


def _close_synced(fh: IO[str]) -> None:
    fh.flush()
    os.fsync(fh.fileno())
    fh.close()


def _day(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d") if ts > 0 else "undated"


def _title(payloads: Sequence[Mapping[str, Any]]) -> str:
    for p in payloads:
        if p.get("title"):
            return str(p["title"])
    first = str(payloads[0].get("text") or "").lstrip("> ").strip().splitlines()
    return first[0] if first else "session"


def _note_name(wing: str, session: str, payloads: Sequence[Mapping[str, Any]], used: set[str]) -> str:
    ts = min((float(p.get("ts") or 0.0) for p in payloads), default=0.0)
    base = f"{safe_name(wing, 60)}/{_day(ts)} {safe_name(_title(payloads), 60)} {safe_name(session, 40)[-8:]}"
    name, n = base, 1
    while name.lower() in used:
        n += 1
        name = f"{base} ({n})"
    used.add(name.lower())
    return name


def _yaml(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)  # a JSON string is a YAML string


def render_session(wing: str, session: str, payloads: Sequence[Mapping[str, Any]]) -> str:
    """One session as a Markdown note: front matter, a title, then each exchange verbatim (chunks joined)."""
    first, last = payloads[0], payloads[-1]
    times = sorted(float(p.get("ts") or 0.0) for p in payloads if p.get("ts"))
    front = {
        "wing": wing, "session": session, "source": first.get("source_path") or "",
        "source_kind": first.get("source_kind") or "", "agent": first.get("agent") or "",
        "cwd": first.get("cwd") or "", "git_branch": first.get("git_branch") or "",
        "started": first.get("timestamp") or "", "ended": last.get("timestamp") or "",
        "drawers": len(payloads),
    }
    lines = ["---", *(f"{k}: {_yaml(v)}" for k, v in front.items() if v not in ("", None)),
             f"tags: {_yaml(['mempal', safe_name(wing, 60).replace(' ', '-')])}", "---", "",
             f"# {_title(payloads)}", ""]
    if times:
        lines += [f"*{len(payloads)} drawers, {_day(times[0])} to {_day(times[-1])}*", ""]
    exchange = None
    for p in payloads:
        key = (p.get("position"), p.get("exchange_key"))
        if key != exchange:
            exchange = key
            when = str(p.get("timestamp") or "")[:16].replace("T", " ")
            bits = [b for b in (when, str(p.get("room") or ""), str(p.get("memory_type") or "").replace("none", ""))
                    if b]
            lines += [f"## {int(p.get('position') or 0) + 1}" + (f" · {' · '.join(bits)}" if bits else ""), ""]
            if p.get("status") == "deleted":
                lines += ["> [!warning] soft-deleted" + (f": {p['delete_reason']}" if p.get("delete_reason") else ""),
                          ""]
        lines += [str(p.get("text") or ""), "", f"<!-- drawer {p['id']} -->" if p.get("id") else "", ""]
    return "\n".join(lines).rstrip() + "\n"


def render_index(index: Mapping[str, Sequence[tuple[str, int]]]) -> str:
    lines = ["---", 'tags: ["mempal"]', "---", "", "# mempal export", "",
             f"Exported {datetime.now(UTC).strftime('%Y-%m-%d %H:%M')} UTC.", ""]
    for wing in sorted(index):
        lines += [f"## {wing}", ""]
        lines += [f"- [[{rel}]] ({n} drawers)" for rel, n in index[wing]]
        lines.append("")
    return "\n".join(lines)
