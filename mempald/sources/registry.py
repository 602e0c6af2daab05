"""The sources the daemon watches, resolved from settings (default Claude Code and Codex folders)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from mempald.config import Settings, SourceSpec

CONVO_SUFFIXES = (".jsonl", ".json", ".md", ".txt", ".markdown")


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

    def owns(self, path: Path) -> bool:
        try:
            path.relative_to(self.root)
        except ValueError:
            return path == self.root
        return True

    def pack_output(self) -> Path:
        return Path(self.output).expanduser() if self.output else self.root / "packed"

    def wants(self, path: Path) -> bool:
        """Is this file one the source reads? (Cheap: name only; content detection happens on read.)"""
        name = path.name
        if self.mode == "pack" and (path == self.pack_output() or self.pack_output() in path.parents):
            return False
        if self.fmt in ("claude_code", "codex"):
            return name.endswith(".jsonl")
        if self.fmt == "slack":
            return path == self.root or name.endswith(".json")
        if self.mode == "convos":
            return (name.endswith(CONVO_SUFFIXES) and not name.startswith(".")) or name == ".aider.chat.history.md"
        if self.mode == "pack":
            return name.endswith((".md", ".markdown"))
        return True

    def unit_for(self, path: Path) -> Path:
        """What to re-read when ``path`` changes: the file itself, or the whole Slack export folder."""
        return self.root if self.fmt == "slack" else path

    def iter_files(self) -> Iterator[Path]:
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
        for dirpath, dirnames, filenames in os.walk(self.root, followlinks=False):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") or d == ".aider")
            for name in sorted(filenames):
                p = Path(dirpath) / name
                if self.wants(p):
                    yield p


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
        out.append(Source(f"{fmt}:{root}", root, "convos", fmt))
        seen.add(root)
    for spec in settings.sources.watch:
        root = Path(spec.path).expanduser().resolve()
        if root in seen:
            continue
        seen.add(root)
        out.append(source_from_spec(spec, root))
    return out


def source_from_spec(spec: SourceSpec, root: Path) -> Source:
    fmt = "auto"
    if spec.mode == "convos" and root.is_dir():
        from mempald.normalize.detect import detect_dir

        try:
            names = [p.name for p in root.iterdir()]
        except OSError:
            names = []
        if detect_dir(names) == "slack":
            fmt = "slack"
    return Source(f"{spec.mode}:{root}", root, spec.mode, fmt, spec.wing, spec.token_budget, spec.output)


def folder_signature(root: Path) -> tuple[int, int, float]:
    """(files, total bytes, newest mtime) of the JSON files of an export folder: changes when any does."""
    n, size, mtime = 0, 0, 0.0
    for dirpath, _dirs, files in os.walk(root, followlinks=False):
        for name in files:
            if name.endswith(".json"):
                try:
                    st = (Path(dirpath) / name).stat()
                except OSError:
                    continue
                n += 1
                size += st.st_size
                mtime = max(mtime, st.st_mtime)
    return n, size, mtime
