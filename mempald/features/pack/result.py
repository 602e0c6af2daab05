"""What a pack is: frozen dataclasses, their JSON form, and the small protocols the pipeline takes.

The pipeline never imports the embedder: it takes ``embed`` and ``count_tokens`` as plain callables, so the
daemon can pass its loaded model, the CLI an in-process one, and tests a deterministic fake.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

FORMAT = "mempal-pack"
VERSION = 1

Vectors = npt.NDArray[np.float32]
TokenCounter = Callable[[str], int]


class EmbedFn(Protocol):
    """Texts to an ``(n, dim)`` float32 array of L2-normalised rows."""

    def __call__(self, texts: Sequence[str]) -> Vectors: ...


class PackError(Exception):
    """A pack cannot be built, read or pruned as asked; the message says why and what to do."""


@dataclass(frozen=True, slots=True)
class Fact:
    """A sentence copied verbatim from a source file; ``line``..``end_line`` are 1-based and inclusive."""

    text: str
    file: str
    line: int
    end_line: int
    score: float

    def to_json(self) -> dict[str, Any]:
        return {"text": self.text, "file": self.file, "line": self.line, "end_line": self.end_line, "score": self.score}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Fact:
        return cls(
            str(d["text"]),
            str(d["file"]),
            int(d["line"]),
            int(d.get("end_line", d["line"])),
            float(d.get("score", 0.0)),
        )


@dataclass(frozen=True, slots=True)
class Topic:
    label: str
    summary: str
    facts: tuple[Fact, ...]
    sources: tuple[str, ...]  # relative paths of the files its chunks came from, sorted
    chunks: int
    source_tokens: int  # tokens of its chunks in the sources
    fact_candidates: int  # sentences that qualified as facts before the cap of 10
    importance: float  # 0..1, see importance.py
    centroid: tuple[float, ...] = ()  # unit vector, rounded; empty when unknown

    def to_json(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "summary": self.summary,
            "importance": self.importance,
            "chunks": self.chunks,
            "source_tokens": self.source_tokens,
            "fact_candidates": self.fact_candidates,
            "sources": list(self.sources),
            "facts": [f.to_json() for f in self.facts],
            "centroid": list(self.centroid),
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Topic:
        return cls(
            label=str(d["label"]),
            summary=str(d.get("summary", "")),
            facts=tuple(Fact.from_json(f) for f in d.get("facts", [])),
            sources=tuple(str(s) for s in d.get("sources", [])),
            chunks=int(d.get("chunks", 0)),
            source_tokens=int(d.get("source_tokens", 0)),
            fact_candidates=int(d.get("fact_candidates", len(d.get("facts", [])))),
            importance=float(d.get("importance", 0.0)),
            centroid=tuple(float(x) for x in d.get("centroid", [])),
        )


def floor1(x: float) -> float:
    """Round down to one decimal: a displayed ratio never claims more compression than achieved."""
    return math.floor(x * 10 + 1e-9) / 10


@dataclass(frozen=True, slots=True)
class PackHeader:
    """The header numbers. ``tokens_out`` is the model's count of the whole single-file markdown.

    ``plain_numbers`` prints token counts without thousands separators. It exists because the header
    states its own file's length: for a rare length no number is true of the text it appears in with
    one format (1,504 makes the file 1,505 tokens and 1,505 makes it 1,504), and the other format then
    gives a true one.
    """

    topic: str
    files: int
    tokens_in: int
    tokens_out: int
    target: float
    plain_numbers: bool = False

    def num(self, n: int) -> str:
        return str(n) if self.plain_numbers else f"{n:,}"

    @property
    def ratio(self) -> float:
        return self.tokens_in / self.tokens_out if self.tokens_out else 0.0

    @property
    def target_met(self) -> bool:
        return self.tokens_out > 0 and self.tokens_in >= self.target * self.tokens_out

    @property
    def budget(self) -> int:
        """The most tokens the output may have for the compression target to hold."""
        return math.floor(self.tokens_in / self.target) if self.target > 0 else self.tokens_in

    @property
    def shortfall(self) -> str | None:
        if self.target_met:
            return None
        return (
            f"compression target {self.target:g}:1 not met: output is {self.num(self.tokens_out)} tokens "
            f"({floor1(self.ratio):.1f}:1); {self.target:g}:1 needs at most {self.num(self.budget)}"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            "files": self.files,
            "tokens_in": self.tokens_in,
            "tokens_out": self.tokens_out,
            "ratio": round(self.ratio, 2),
            "target": self.target,
            "target_met": self.target_met,
            "shortfall": self.shortfall,
            "plain_numbers": self.plain_numbers,
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> PackHeader:
        return cls(
            str(d["topic"]),
            int(d["files"]),
            int(d["tokens_in"]),
            int(d["tokens_out"]),
            float(d["target"]),
            bool(d.get("plain_numbers", False)),
        )


@dataclass(frozen=True, slots=True)
class Duplicate:
    """A chunk kept for a group of near-identical ones (cosine >= the dedup threshold)."""

    kept: tuple[str, int]  # (file, line)
    dropped: tuple[tuple[str, int], ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "kept": {"file": self.kept[0], "line": self.kept[1]},
            "dropped": [{"file": f, "line": n} for f, n in self.dropped],
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Duplicate:
        return cls(
            (str(d["kept"]["file"]), int(d["kept"]["line"])),
            tuple((str(x["file"]), int(x["line"])) for x in d.get("dropped", [])),
        )


@dataclass(frozen=True, slots=True)
class Skipped:
    """A markdown file that was not read: ``reason`` is the ingest's refusal (``fifo``, ``device``,
    ``too_large``...: ``mempald.sources.reader``) or ``unreadable``; ``detail`` says why in words."""

    file: str  # relative to the root
    reason: str
    detail: str

    def to_json(self) -> dict[str, Any]:
        return {"file": self.file, "reason": self.reason, "detail": self.detail}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Skipped:
        return cls(str(d["file"]), str(d.get("reason", "")), str(d.get("detail", "")))


@dataclass(frozen=True, slots=True)
class PackResult:
    header: PackHeader
    overview: str
    topics: tuple[Topic, ...]
    files: tuple[str, ...]  # every markdown file read, relative to root, sorted
    root: str = ""
    duplicates: tuple[Duplicate, ...] = ()
    stats: dict[str, Any] = field(default_factory=dict)  # chunking/clustering figures, JSON scalars only
    notes: tuple[str, ...] = ()  # what was shortened or pruned, in order
    skipped: tuple[Skipped, ...] = ()  # markdown files not read, with their reason

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "version": VERSION,
            "header": self.header.to_json(),
            "root": self.root,
            "overview": self.overview,
            "topics": [t.to_json() for t in self.topics],
            "files": list(self.files),
            "duplicates": [d.to_json() for d in self.duplicates],
            "stats": dict(self.stats),
            "notes": list(self.notes),
            "skipped": [s.to_json() for s in self.skipped],
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> PackResult:
        if not isinstance(d, dict) or d.get("format") != FORMAT:
            raise PackError('not a mempal pack (the JSON has no "format": "mempal-pack")')
        if int(d.get("version", 0)) > VERSION:
            raise PackError(f"pack format version {d.get('version')} is newer than this mempal ({VERSION})")
        try:
            return cls(
                header=PackHeader.from_json(d["header"]),
                overview=str(d.get("overview", "")),
                topics=tuple(Topic.from_json(t) for t in d.get("topics", [])),
                files=tuple(str(f) for f in d.get("files", [])),
                root=str(d.get("root", "")),
                duplicates=tuple(Duplicate.from_json(x) for x in d.get("duplicates", [])),
                stats=dict(d.get("stats", {})),
                notes=tuple(str(n) for n in d.get("notes", [])),
                skipped=tuple(Skipped.from_json(x) for x in d.get("skipped", [])),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise PackError(f"malformed pack JSON: {exc!r}") from exc
