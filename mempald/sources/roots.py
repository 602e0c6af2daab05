"""The sources the daemon watches, resolved from settings (default Claude Code and Codex folders)."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from mempald.config import Settings, SourceSpec
from mempald.normalize import registry as formats
from mempald.sources.exclude import ExcludeFilter


@dataclass(frozen=True, slots=True)
class Source:
    """A watched root. ``fmt`` is a fixed format (claude_code, codex) or "auto" (detect per file)."""

    key: str
    root: Path
    mode: str  # convos | projects | pack
    fmt: str
    wing: str = ""
    token_budget: int = 0
    output: str = ""
    exclude: ExcludeFilter | None = field(default=None, compare=False, repr=False)  # the user's exclusions

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
        """Is this file (or export folder) one the source reads? Cheap: the name, and for a folder or a file
        of a source that reads any format, whether it is or lies in a Slack export; content detection happens
        on read. Never one the user excluded."""
        if self.exclude is not None and self.exclude.excludes(path):
            return False
        name = path.name
        if self.mode == "pack" and (path == self.pack_output() or self.pack_output() in path.parents):
            return False
        if self.fmt in ("claude_code", "codex"):
            return name.endswith(".jsonl")
        if self.fmt == "slack":
            return path == self.root or name.endswith(".json")
        if self.mode == "convos":
            # the format registry knows which file names its formats read (suffixes, exact names)
            return formats.wanted(name) or (self.fmt == "auto" and is_slack_export(path))
        if self.mode == "pack":
            return name.endswith((".md", ".markdown"))
        return True

    def export_folder(self, path: Path) -> Path | None:
        """The Slack export folder that is or holds ``path``: the root of a Slack source, or, in a folder of
        conversations in any format, the nearest folder at or above ``path`` that looks like an export (a
        Slack export is read as one unit: its threads span day files and its names come from users.json)."""
        if self.fmt == "slack":
            return self.root
        if self.mode != "convos" or self.fmt != "auto":
            return None
        folder = path if path.is_dir() else path.parent
        while folder == self.root or self.root in folder.parents:
            if is_slack_export(folder):
                return folder
            folder = folder.parent
        return None

    def iter_files(self) -> Iterator[Path]:
        """The units to read: files, and Slack export folders as one unit each; none the user excluded."""
        units = self._units()
        return units if self.exclude is None else self.exclude.allowed(units)

    def _units(self) -> Iterator[Path]:
        if self.fmt == "slack":
            yield self.root
            return
        if self.root.is_file():
            yield self.root
            return
        if self.mode == "projects":
            from mempald.sources.ignore import RepoFilter

            yield from RepoFilter(self.root).walk()
            return
        from mempald.normalize.detect import detect_dir

        for dirpath, dirnames, filenames in os.walk(self.root, followlinks=False):
            if self.mode == "convos" and detect_dir(filenames) == "slack":
                dirnames[:] = []
                yield Path(dirpath)
                continue
            dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") or d == ".aider")
            for name in sorted(filenames):
                p = Path(dirpath) / name
                if self.wants(p):
                    yield p


def is_slack_export(folder: Path) -> bool:
    """Does ``folder`` hold a Slack export (the registry's folder format: users.json beside
    channels/groups/dms/mpims.json)?"""
    if not (folder / "users.json").is_file():
        return False
    try:
        found = formats.detect_folder(p.name for p in folder.iterdir())
    except OSError:
        return False
    return found is not None and found.name == "slack"


def resolve_sources(settings: Settings) -> list[Source]:
    out: list[Source] = []
    seen: set[Path] = set()
    defaults = (
        (settings.sources.claude_projects, "claude_code"),
        (settings.sources.codex_sessions, "codex"),
    )
    for raw, fmt in defaults:
        if not raw:
            continue
        root = Path(raw).expanduser()
        if fmt == "codex" and not root.is_dir():
            continue
        if root.is_dir():  # as watched folders are: a ~/.claude linked elsewhere owns the paths hooks send
            root = root.resolve()
        out.append(Source(f"{fmt}:{root}", root, "convos", fmt))
        seen.add(root)
    for spec in settings.sources.watch:
        root = Path(spec.path).expanduser().resolve()
        if root in seen:
            continue
        seen.add(root)
        out.append(source_from_spec(spec, root))
    return out


def waiting_roots(settings: Settings) -> list[Path]:
    """The default roots (Claude Code's projects, Codex's sessions) the settings name that do not exist yet: a
    folder an agent creates once it first runs, after the daemon started. They are watched for from their
    nearest existing parent, and read as soon as they appear (no restart, no SIGHUP)."""
    out: list[Path] = []
    for raw in (settings.sources.claude_projects, settings.sources.codex_sessions):
        if raw:
            root = Path(raw).expanduser()
            if not root.is_dir():
                out.append(root)
    return out


def source_from_spec(spec: SourceSpec, root: Path) -> Source:
    fmt = "slack" if spec.mode == "convos" and is_slack_export(root) else "auto"
    return Source(f"{spec.mode}:{root}", root, spec.mode, fmt, spec.wing, spec.token_budget, spec.output)


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
