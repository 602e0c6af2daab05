"""What the user keeps out of memory: one filter, the only authority on what is excluded.

Two kinds of rule, each a small object with a readable repr (in the manner of watchfiles' filters):

- ``ingest.exclude`` in config (``mempal exclude add|list|remove`` edits it): gitignore-style globs over
  absolute paths (``pathspec``). ``/home/me/clients/acme`` or ``~/clients/acme`` excludes that folder and all
  in it; ``*-private`` any file or folder so named; ``**/secret/**`` what lies in any folder named secret. A
  glob is matched against a file's path (and so the folders it lies in) and against a session's working
  directory.
- ``.mempalignore`` in a project folder (gitignore syntax, relative to its folder): empty (or only comments),
  the whole project is excluded: its files and every session run in it or below. Otherwise the paths it names
  within the project: files, and sessions whose working directory it names (``experiments/``). Every
  ``.mempalignore`` at or above a path has its say.

Excluded files are never read (``Source.wants`` / ``iter_files`` ask ``excludes``; the ingest refuses them
too); exchanges of a session whose cwd is excluded are never stored (``cwd_rule``, asked where drawers are
written). Rules are read where they are used, so a change applies at once: a config edit at the next file (the
settings snapshot), a ``.mempalignore`` edit or removal at the next file, a new one within ``IGNORE_TTL_S``.
What each rule kept out is counted (distinct files, distinct sessions) for ``status``.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pathspec import GitIgnoreSpec

from mempald import logs
from mempald.sources.reader import read_head

IGNORE_FILE = ".mempalignore"
IGNORE_TTL_S = 2.0  # how long a folder's "has no .mempalignore" answer is trusted
IGNORE_MAX_BYTES = 1_000_000
COUNTED_MAX = 100_000  # distinct paths remembered per rule (the figure is a floor past it)
log = logs.get("exclude")


class ExcludeError(ValueError):
    """A glob that cannot be an exclusion rule; the message says why and what to write instead."""


def check_glob(raw: str) -> str:
    """``raw`` as it will be kept in config (stripped), or ``ExcludeError``."""
    glob = raw.strip()
    if not glob or glob.startswith("#"):
        raise ExcludeError("an exclusion needs a path or a glob")
    if glob.startswith("!"):
        raise ExcludeError(f"{glob!r}: a negation cannot exclude anything (remove the rule it would undo with "
                           "`mempal exclude remove`)")
    if "\x00" in glob or "\n" in glob:
        raise ExcludeError("an exclusion is one line of text")
    anchored = glob.startswith(("/", "~", "**/"))
    if not anchored and "/" in glob.rstrip("/"):
        raise ExcludeError(f"{glob!r} is relative: give an absolute path (/..., ~/...), a name or glob without a "
                           "folder (*-private), or one that starts with **/ (**/secret/**)")
    return glob


@dataclass(frozen=True, slots=True)
class Glob:
    """One ``ingest.exclude`` rule: a gitignore-style glob over absolute paths."""

    text: str  # as the user wrote it (the rule's name in status)
    spec: GitIgnoreSpec

    @classmethod
    def parse(cls, raw: str) -> Glob:
        text = check_glob(raw)
        pattern = os.path.expanduser(text) if text.startswith("~") else text
        return cls(text, GitIgnoreSpec.from_lines([pattern]))

    def matches_path(self, path: str) -> bool:
        return bool(path) and self.spec.match_file(path.lstrip("/"))

    def matches_dir(self, path: str) -> bool:
        return bool(path) and self.spec.match_file(path.rstrip("/").lstrip("/") + "/")

    def __repr__(self) -> str:
        return f"Glob({self.text!r})"


@dataclass(frozen=True, slots=True)
class IgnoreFile:
    """A ``.mempalignore``: ``spec`` None means the whole project (the file names no pattern)."""

    path: Path
    spec: GitIgnoreSpec | None
    stamp: tuple[int, int]  # (mtime_ns, size) it was read at

    @property
    def root(self) -> Path:
        return self.path.parent

    def matches(self, path: Path, is_dir: bool) -> bool:
        if self.spec is None:
            return True
        try:
            rel = path.relative_to(self.root).as_posix()
        except ValueError:
            return False
        if rel in ("", "."):
            return False  # the project itself: only an empty file excludes it whole
        return self.spec.match_file(rel + ("/" if is_dir else ""))

    def __repr__(self) -> str:
        return f"IgnoreFile({str(self.path)!r}, {'whole project' if self.spec is None else 'patterns'})"


def _read_ignore(path: Path, stamp: tuple[int, int]) -> IgnoreFile:
    try:
        raw = read_head(path, IGNORE_MAX_BYTES)  # a FIFO or a device by that name is refused, never waited on
    except OSError as exc:
        # unreadable: the cautious reading (an ignore file that says nothing excludes the project)
        log.warning("ignore_file_unreadable", path=str(path), reason=getattr(exc, "reason", "unreadable"),
                    error=str(exc), excludes="the whole project")
        raw = b""
    lines = [ln for ln in raw.decode("utf-8", "replace").splitlines() if ln.strip() and not ln.startswith("#")]
    return IgnoreFile(path, GitIgnoreSpec.from_lines(lines) if lines else None, stamp)


class _Hits:
    """Distinct paths (or sessions) each rule kept out, for status."""

    def __init__(self) -> None:
        self.seen: dict[str, set[str]] = {}
        self.more: dict[str, int] = {}

    def add(self, rule: str, item: str) -> None:
        seen = self.seen.setdefault(rule, set())
        if item in seen:
            return
        if len(seen) < COUNTED_MAX:
            seen.add(item)
        else:
            self.more[rule] = self.more.get(rule, 0) + 1

    def counts(self) -> dict[str, int]:
        return {rule: len(s) + self.more.get(rule, 0) for rule, s in sorted(self.seen.items())}

    def drop(self, keep: Callable[[str], bool]) -> None:
        for rule in [r for r in self.seen if not keep(r)]:
            self.seen.pop(rule, None)
            self.more.pop(rule, None)


class ExcludeFilter:
    """The user's exclusions. ``globs`` gives the ``ingest.exclude`` list in force (read at every use).
    Thread-safe: the reconcile scan asks from worker threads, the ingest from the event loop."""

    def __init__(self, globs: Callable[[], Sequence[str]] = tuple, *, ttl_s: float = IGNORE_TTL_S) -> None:
        self._globs_of = globs
        self._ttl = ttl_s
        self._compiled: tuple[tuple[str, ...], tuple[Glob, ...]] = ((), ())
        self._dirs: dict[Path, tuple[float, IgnoreFile | None]] = {}
        self._lock = threading.Lock()
        self.files = _Hits()
        self.sessions = _Hits()
        self.invalid: dict[str, str] = {}  # ingest.exclude entries that are no rule, and why

    # the rules ----------------------------------------------------------------------------------------
    def globs(self) -> tuple[Glob, ...]:
        """The ``ingest.exclude`` globs in force (compiled again only when the setting changed)."""
        raw = tuple(self._globs_of())
        known, compiled = self._compiled
        if raw != known:
            out, self.invalid = [], {}
            for text in raw:
                try:
                    out.append(Glob.parse(text))
                except ExcludeError as exc:  # (``mempal exclude add`` refuses these; a hand edit may not)
                    self.invalid[text] = str(exc)
                    log.warning("exclude_rule_invalid", rule=text, error=str(exc))
            compiled = tuple(out)
            self._compiled = (raw, compiled)
            with self._lock:
                labels = {g.text for g in compiled}
                for hits in (self.files, self.sessions):
                    hits.drop(lambda r: r in labels or r.endswith(IGNORE_FILE))
        return compiled

    def _ignore_at(self, folder: Path, now: float) -> IgnoreFile | None:
        """The ``.mempalignore`` of ``folder``: a file known to exist is checked at every use (an edit or a removal
        applies at once); a folder known to have none is looked at again after ``ttl_s``."""
        cached = self._dirs.get(folder)
        if cached is not None and cached[1] is None and now - cached[0] < self._ttl:
            return None
        path = folder / IGNORE_FILE
        try:
            st = path.stat()
        except OSError:
            found = None
        else:
            stamp = (st.st_mtime_ns, st.st_size)
            old = cached[1] if cached is not None else None
            found = old if old is not None and old.stamp == stamp else _read_ignore(path, stamp)
        if len(self._dirs) > 50_000:
            self._dirs.clear()
        self._dirs[folder] = (now, found)
        return found

    def ignore_files(self, start: Path) -> list[IgnoreFile]:
        """Every ``.mempalignore`` in ``start`` and the folders above it, nearest first."""
        now = time.monotonic()
        out = []
        for folder in (start, *start.parents):
            found = self._ignore_at(folder, now)
            if found is not None:
                out.append(found)
        return out

    def known_ignore_files(self) -> list[str]:
        """The ``.mempalignore`` files seen lately (those the ingest has consulted)."""
        return sorted({str(f.path) for _, f in list(self._dirs.values()) if f is not None})

    # verdicts ------------------------------------------------------------------------------------------
    def path_rule(self, path: Path) -> str | None:
        """The rule that keeps the file (or export folder) ``path`` out, or None when it may be read."""
        path = Path(os.path.abspath(path))
        if path.name == IGNORE_FILE:
            return str(path)  # the rules themselves are never read as memory
        text = str(path)
        for g in self.globs():
            if g.matches_path(text):
                return g.text
        for ign in self.ignore_files(path.parent):
            if ign.matches(path, is_dir=False):
                return str(ign.path)
        return None

    def excludes(self, path: Path) -> bool:
        """Is ``path`` kept out? (Counted under its rule when it is.)"""
        rule = self.path_rule(path)
        if rule is not None and path.name != IGNORE_FILE:  # (the rule files themselves are not counted)
            with self._lock:
                self.files.add(rule, str(path))
        return rule is not None

    def allowed(self, paths: Iterable[Path]) -> Iterator[Path]:
        """``paths`` without the excluded ones."""
        return (p for p in paths if not self.excludes(p))

    def cwd_rule(self, cwd: str) -> str | None:
        """The rule that keeps sessions run in ``cwd`` out, or None."""
        if not cwd or not os.path.isabs(cwd):
            return None
        folder = Path(os.path.normpath(cwd))
        for g in self.globs():
            if g.matches_dir(str(folder)):
                return g.text
        for ign in self.ignore_files(folder):
            if ign.matches(folder, is_dir=True):
                return str(ign.path)
        return None

    def excludes_session(self, cwd: str, session: str) -> bool:
        rule = self.cwd_rule(cwd)
        if rule is not None:
            with self._lock:
                self.sessions.add(rule, session or cwd)
        return rule is not None

    def report(self) -> dict[str, Any]:
        """For ``status``: the rules and what each kept out since the daemon started."""
        with self._lock:
            files, sessions = self.files.counts(), self.sessions.counts()
        return {"rules": [g.text for g in self.globs()], "invalid": dict(self.invalid),
                "ignore_files": self.known_ignore_files(),
                "files": files, "sessions": sessions, "files_total": sum(files.values()),
                "sessions_total": sum(sessions.values())}

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(globs={[g.text for g in self.globs()]!r}, "
                f"ignore_files={self.known_ignore_files()!r}, excluded_files={sum(self.files.counts().values())})")
