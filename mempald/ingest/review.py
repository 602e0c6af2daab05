"""Looking at a source before and after the ingest: ``inspect`` a file, ``mine --dry-run`` a set of paths
(both through ``inspect.inspect_unit``: the ingest's own reading, nothing stored), and ``reread`` a source
with the current adapters.

Re-reading brings a palace filled by older adapters up to date: every unit of the source is read again from
its first byte; a drawer whose exchange is the same keeps its id (ids are derived from the exchange's key) and
gets the new text and metadata; the drawers of that file that the new reading does not produce (a prompt that
was never a prompt, a Warmup sidechain...) are removed. Transcripts that no longer exist are not touched:
their drawers outlive them, as always.

``mine`` without ``--mode`` reads a folder as a code project when it is one (a VCS root, or more source files
than conversation files), else as conversations.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread

from mempald.config import SettingsRef
from mempald.embed.embedder import Embedder
from mempald.errors import Forbidden, InvalidInput, NotFound
from mempald.ingest.ingestor import Ingestor
from mempald.ingest.inspect import Reading, inspect_unit
from mempald.ingest.queues import FRESH
from mempald.sources.catalog import SourceSet
from mempald.sources.paths import checked_path
from mempald.sources.reader import Refused
from mempald.sources.roots import Source
from mempald.state.gateway import StateGateway
from mempald.store.base import Filters
from mempald.store.gateway import StoreGateway

VCS = (".git", ".hg", ".svn", ".jj")
CODE_SUFFIXES = frozenset({
    ".py", ".js", ".ts", ".tsx", ".jsx", ".go", ".rs", ".java", ".kt", ".c", ".h", ".cc", ".cpp", ".hpp", ".cs",
    ".rb", ".php", ".swift", ".scala", ".sh", ".ex", ".exs", ".erl", ".hs", ".ml", ".lua", ".r", ".sql", ".vue",
    ".svelte", ".dart", ".zig", ".toml", ".yaml", ".yml", ".gradle", ".cmake",
})
CONVO_SUFFIXES = (".jsonl", ".json")
_LOOK_AT = 2000  # files looked at to tell a project from a folder of conversations


def looks_like_project(root: Path) -> bool:
    """A VCS root, or a folder with more source files than transcript/export files (blocking)."""
    if not root.is_dir():
        return False
    if any((root / marker).exists() for marker in VCS):
        return True
    code = convos = seen = 0
    for _dir, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if not d.startswith(".") and d not in ("node_modules", "venv")]
        for name in filenames:
            seen += 1
            low = name.lower()
            code += os.path.splitext(low)[1] in CODE_SUFFIXES
            convos += low.endswith(CONVO_SUFFIXES) or low == ".aider.chat.history.md"
        if seen >= _LOOK_AT:
            break
    return code > 0 and code > convos


class SourceReview:
    def __init__(self, settings: SettingsRef, sources: SourceSet, ingestor: Ingestor, state: StateGateway,
                 store: StoreGateway, embedder: Embedder, machine: str, user: str,
                 room_keywords: Callable[[], dict[str, list[str]] | None]) -> None:
        self.settings = settings
        self.sources = sources
        self.ingestor = ingestor
        self.state = state
        self.store = store
        self.embedder = embedder
        self.machine = machine
        self.user = user
        self.room_keywords = room_keywords

    def reading(self) -> Reading:
        ingest = self.settings.current.ingest
        return Reading(self.embedder.count_tokens, self.settings.current.embed.max_tokens, self.machine, self.user,
                       redact=ingest.redact_secrets, extract=ingest.extract_general,
                       max_line=ingest.max_line_bytes, room_keywords=self.room_keywords(),
                       max_drawers=ingest.max_drawers_per_exchange, max_file=ingest.max_file_bytes,
                       live=self.ingestor.reader.live)

    async def mode_of(self, path: Path, mode: str) -> str:
        """``mode``, or for ``auto`` what ``path`` is: a code project (a source file) or conversations."""
        if mode != "auto":
            return mode
        source = self.sources.source_for(path)
        if source is not None and source.mode != "pack":
            return source.mode  # a watched source is read as it is watched
        if path.suffix.lower() in CODE_SUFFIXES and await anyio.to_thread.run_sync(path.is_file):
            return "projects"
        return "projects" if await anyio.to_thread.run_sync(looks_like_project, path) else "convos"

    def source_of(self, base: Path, mode: str, wing: str | None) -> Source:
        return self.sources.source_for(base) or Source(f"{mode}:{base}", base, mode, "auto", wing or "")

    async def inspect(self, raw: str, mode: str, counts_only: bool) -> dict[str, Any]:
        """What reading ``raw`` (a file, or a folder or database unit) would store; nothing is stored."""
        path = checked_path(raw)
        if not await anyio.to_thread.run_sync(path.exists):
            raise NotFound(f"{path} does not exist")
        base = path if path.is_dir() else path.parent
        source = self.sources.source_for(path) or self.source_of(base, await self.mode_of(base, mode), None)
        if path.is_dir() and source.unit_of(path) is None:
            raise InvalidInput(f"{path} is a folder: inspect one file (or a folder read as one: a Slack export); "
                               "`mempal mine --dry-run` sums a folder")
        how = self.reading()
        try:
            result = await anyio.to_thread.run_sync(lambda: inspect_unit(path, source, how, rows=not counts_only))
        except Refused as exc:  # binary content (a SQLite database), a FIFO...: never read as text
            raise InvalidInput(str(exc)) from None
        result["mode"] = source.mode
        return result

    async def dry_run(self, base: Path, files: list[Path], source: Source) -> dict[str, Any]:
        """``mine --dry-run``: what reading ``files`` would store, summed (the same path as ``inspect``)."""
        how = self.reading()
        out: dict[str, Any] = {"files": 0, "exchanges": 0, "drawers": 0, "written": 0, "prompts": 0,
                               "skipped": {}, "accounted": {}, "errors": [], "plan": []}
        seen: set[str] = set()
        for f in files:
            found = source.unit_of(f)
            unit = found.path if found is not None else f
            out["plan"].append([str(base), str(f)])
            out["files"] += 1
            if str(unit) in seen:
                continue
            seen.add(str(unit))
            try:
                r = await anyio.to_thread.run_sync(functools.partial(inspect_unit, unit, source, how, rows=False))
            except Refused as exc:  # binary content (a SQLite database): not read, as the ingest would not
                out["skipped"][exc.reason] = out["skipped"].get(exc.reason, 0) + 1
                out["accounted"][f"skipped: {exc.detail}"] = out["accounted"].get(f"skipped: {exc.detail}", 0) + 1
                continue
            except (OSError, UnicodeError) as exc:
                out["errors"].append(f"{f}: {type(exc).__name__}: {exc}")
                continue
            out["exchanges"] += len(r["exchanges"])
            out["drawers"] += r["drawers"]
            out["prompts"] += sum(1 for e in r["exchanges"] if e["kind"] == "exchange" and e["prompt_chars"])
            for k, v in r["accounted"].items():
                out["accounted"][k] = out["accounted"].get(k, 0) + v
                if k == "skipped: unknown_format":
                    out["skipped"]["unknown_format"] = out["skipped"].get("unknown_format", 0) + v
        return out

    async def reread(self, raw: str) -> dict[str, Any]:
        """Read a watched source (or one file of it) again from the start with the current adapters."""
        path = checked_path(raw)
        source = self.sources.source_for(path)
        if source is None:
            raise Forbidden(f"{path} is not inside a watched source (see `mempal watch list`)")
        if source.mode == "pack":
            raise InvalidInput(f"{source.root} is a pack source: it is re-packed, not read into drawers")
        units = [path] if path != source.root and path.is_file() else await anyio.to_thread.run_sync(
            lambda: [p for p in source.iter_files() if p == path or path in p.parents])
        out: dict[str, Any] = {"source": source.key, "files": 0, "exchanges": 0, "drawers": 0, "written": 0,
                               "removed": 0, "errors": []}
        for unit in units:
            await self.reread_unit(unit, source, out)
        return out

    async def reread_unit(self, unit: Path, source: Source, out: dict[str, Any]) -> None:
        found = await anyio.to_thread.run_sync(source.unit_of, unit)
        unit = found.path if found is not None else unit
        before: set[str] = set()
        async for page in self.store.pages(Filters(source_path=(str(unit),))):
            before.update(p.id for p in page)
        await self.state.drop_cursor(str(unit))
        made: set[str] = set()
        exchanges = written = 0
        while True:
            res = await self.ingestor.ingest_path(unit, source, FRESH)
            made.update(res.ids)
            exchanges += res.exchanges
            written += res.written
            if res.error or not res.more:
                break
        if res.error:
            out["errors"].append(f"{unit}: {res.error}")
            return  # not read to the end: nothing is known to be stale
        out["files"] += 1
        out["exchanges"] += exchanges
        out["drawers"] += len(made)
        out["written"] += written
        stale = sorted(before - made)
        for i in range(0, len(stale), 256):
            await self.store.delete(Filters(ids=tuple(stale[i : i + 256])))
        out["removed"] += len(stale)
