"""The sources the daemon watches: every agent's own folders where they exist (the formats' declared places,
``mempald.sources.places``) and the folders the user added (``[[sources.watch]]``).

A source never names a format: it asks the format registry. A unit is a file, a folder read as one (a format
whose unit is a folder detects it by its entry names), or a database (an editor's store, whose ``-wal`` and
``-journal`` files belong to it); ``Source.unit_of`` finds the folder or database unit a path belongs to.
"""

from __future__ import annotations

import functools
import os
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePath

from pathspec import GitIgnoreSpec

from mempald.config import Settings, SourceSpec
from mempald.normalize import registry as formats
from mempald.normalize.format import Format
from mempald.sources.exclude import ExcludeFilter
from mempald.sources.look import LOOK
from mempald.sources.places import default_roots

_DB_SIDE = ("-wal", "-journal", "-shm")  # the files SQLite keeps beside a database: changes to the database


@dataclass(frozen=True, slots=True)
class Unit:
    """A unit larger than a file (a folder, a database) and its format."""

    path: Path
    fmt: Format


@functools.cache
def _globs(globs: tuple[str, ...]) -> GitIgnoreSpec:
    return GitIgnoreSpec.from_lines(globs)


@dataclass(frozen=True, slots=True)
class Source:
    """A watched root. ``fmt`` is a fixed format's name (an agent's own folder) or "auto" (detect per unit);
    ``globs`` (from the format's place) name its units under the root."""

    key: str
    root: Path
    mode: str  # convos | projects | pack
    fmt: str
    wing: str = ""
    token_budget: int = 0
    output: str = ""
    exclude: ExcludeFilter | None = field(default=None, compare=False, repr=False)  # the user's exclusions
    globs: tuple[str, ...] = ()
    agent: str = ""  # who keeps it, for a default root ("Claude Code")

    @property
    def format(self) -> Format | None:
        """The fixed format of a conversation source (None: detected per unit)."""
        return formats.by_name(self.fmt) if self.fmt != "auto" and self.mode == "convos" else None

    def owns(self, path: Path | str) -> bool:
        """``path`` is the root or lies under it (lexically, as ``Path.relative_to`` says; a str must be a
        normalised absolute path, as the file queue holds them)."""
        base, prefix = self._prefix()
        p = os.fspath(path)
        return p == base or p.startswith(prefix)

    def count_owned(self, paths: Iterable[str]) -> int:
        """How many of ``paths`` (str, as ``owns`` takes them) this source owns: a string test, as ``status``
        counts every queued file per source (``Path.relative_to`` over 20,000 queued files took 0.2 s)."""
        base, prefix = self._prefix()
        return sum(1 for p in paths if p == base or p.startswith(prefix))

    def _prefix(self) -> tuple[str, str]:
        base = str(self.root)
        return base, base if base.endswith("/") else base + "/"

    def pack_output(self) -> Path:
        return Path(self.output).expanduser() if self.output else self.root / "packed"

    def wants(self, path: Path) -> bool:
        """Is this file (or unit folder) one the source reads? Cheap: the name, and for a folder whether a folder
        format detects it; content detection happens on read. Never one the user excluded."""
        if self.exclude is not None and self.exclude.excludes(path):
            return False
        name = path.name
        if self.mode == "pack" and (path == self.pack_output() or self.pack_output() in path.parents):
            return False
        if self.mode == "convos":
            fixed = self.format
            if fixed is None:  # the format registry knows which file names its formats read
                return formats.wanted(name) or self._folder_unit(path) is not None
            if fixed.unit == "folder":
                return self._folder_unit(path) is fixed or formats.claims(fixed, name) or (
                    not fixed.suffixes and name.endswith(".json"))
            if fixed.unit == "database":
                return formats.claims(fixed, name.removesuffix(_side(name)))
            return formats.claims(fixed, name) and self._globbed(path)
        if self.mode == "pack":
            return name.endswith((".md", ".markdown"))
        return True

    def _globbed(self, path: Path) -> bool:
        if not self.globs or path == self.root:
            return True
        try:
            rel = path.relative_to(self.root).as_posix()
        except ValueError:
            return False
        return _globs(self.globs).match_file(rel)

    def _folder_unit(self, path: Path) -> Format | None:
        """The folder format that detects ``path`` as one of its units (None for a file, or no such folder)."""
        names = LOOK.entries(PurePath(path))
        return formats.detect_folder(names) if names else None

    def unit_of(self, path: Path) -> Unit | None:
        """The folder or database unit of this source that is or holds ``path`` (None: the path is its own unit):
        the export folder of a day file, the task folder of a message file, the database of its ``-wal``."""
        if self.mode != "convos":
            return None
        fixed = self.format
        for fmt in (fixed,) if fixed is not None else formats.unit_formats():
            if fmt.unit == "file":
                continue
            found = fmt.unit_of(PurePath(path), LOOK) if fmt.unit_of is not None else self._default_unit(fmt, path)
            if found is not None and self.owns(os.fspath(found)):
                return Unit(Path(found), fmt)
        return None

    def _default_unit(self, fmt: Format, path: Path) -> PurePath | None:
        """A unit for a format that declares no ``unit_of``: the database a file (or its ``-wal``) is; the nearest
        folder at or above a path, up to the root, that the folder format detects."""
        if fmt.unit == "database":
            base = path.with_name(path.name.removesuffix(_side(path.name)))
            return base if formats.claims(fmt, base.name) else None
        folder = path if LOOK.is_dir(path) else path.parent
        while self.owns(folder):
            if formats.detect_folder(LOOK.entries(folder)) is fmt:
                return folder
            if folder == self.root:
                break
            folder = folder.parent
        return None

    def iter_files(self) -> Iterator[Path]:
        """The units to read: files, and folder units whole; none the user excluded."""
        units = self._units()
        return units if self.exclude is None else self.exclude.allowed(units)

    def _units(self) -> Iterator[Path]:
        fixed = self.format
        if self.root.is_file():
            yield self.root
            return
        if self.mode == "projects":
            from mempald.sources.ignore import RepoFilter

            yield from RepoFilter(self.root).walk()
            return
        for dirpath, dirnames, filenames in os.walk(self.root, followlinks=False):
            if self.mode == "convos":
                folder = formats.detect_folder(filenames)
                if folder is not None and (fixed is None or folder is fixed):
                    dirnames[:] = []
                    yield Path(dirpath)
                    continue
            dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") or d == ".aider")
            if fixed is not None and fixed.unit == "folder":
                continue  # only its folders are units
            for name in sorted(filenames):
                p = Path(dirpath) / name
                if self.wants(p) and not (fixed is not None and fixed.unit == "database" and _side(name)):
                    yield p


def _side(name: str) -> str:
    return next((s for s in _DB_SIDE if name.endswith(s)), "")


def resolve_sources(settings: Settings) -> list[Source]:
    """Every agent's default root that exists (``mempald.sources.places``), then the user's watched folders."""
    out: list[Source] = []
    seen: set[Path] = set()
    for found in default_roots(settings):
        if not found.root.is_dir():
            continue  # waited for (``waiting_roots``) and read as soon as it appears
        out.append(Source(f"{found.fmt.name}:{found.root}", found.root, "convos", found.fmt.name,
                          globs=found.place.globs, agent=found.place.agent))
        seen.add(found.root)
    for spec in settings.sources.watch:
        root = Path(spec.path).expanduser().resolve()
        if root in seen:
            continue
        seen.add(root)
        out.append(source_from_spec(spec, root))
    return out


def waiting_roots(settings: Settings) -> list[Path]:
    """The agents' default roots that do not exist yet: a folder an agent creates once it first runs, after the
    daemon started. They are watched for from their nearest existing parent, and read as soon as they appear (no
    restart, no SIGHUP)."""
    return [f.root for f in default_roots(settings) if not f.root.is_dir()]


def source_from_spec(spec: SourceSpec, root: Path) -> Source:
    """A watched folder: in a fixed format when it is one folder unit (a Slack export), else detected per unit."""
    folder = formats.detect_folder(LOOK.entries(root)) if spec.mode == "convos" else None
    fmt = folder.name if folder is not None else "auto"
    return Source(f"{spec.mode}:{root}", root, spec.mode, fmt, spec.wing, spec.token_budget, spec.output)


def unit_signature(unit: Unit) -> tuple[int, int, float]:
    """(files, total bytes, newest mtime) of a folder's or database's files: changes when any of them does."""
    if unit.fmt.unit == "folder":
        return folder_signature(unit.path)
    n, size, mtime = 0, 0, 0.0
    for suffix in ("", *_DB_SIDE):
        try:
            st = os.stat(f"{unit.path}{suffix}")
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode):
            n, size, mtime = n + 1, size + st.st_size, max(mtime, st.st_mtime)
    return n, size, mtime


def folder_signature(root: Path) -> tuple[int, int, float]:
    """(files, total bytes, newest mtime) of the JSON files of an export folder: changes when any does. Only
    regular files count (a FIFO or a link to a device among them is not read)."""
    n, size, mtime = 0, 0, 0.0
    for dirpath, _dirs, files in os.walk(root, followlinks=False):
        for name in files:
            if name.endswith(".json"):
                try:
                    st = (Path(dirpath) / name).stat()
                except OSError:
                    continue
                if not stat.S_ISREG(st.st_mode):
                    continue
                n += 1
                size += st.st_size
                mtime = max(mtime, st.st_mtime)
    return n, size, mtime
