"""Write a pack to disk (markdown plus its JSON twin) and read it back.

Writes are atomic (temporary file, then rename) and byte-for-byte reproducible: no timestamps, keys in a
fixed order, so an unchanged input gives an unchanged output.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Literal

from mempald.features.pack.render import INDEX_NAME, KB_NAME, render_multi, render_single, topic_filenames
from mempald.features.pack.result import PackError, PackResult
from mempald.sources.reader import read_capped, read_head

MAX_PACK_JSON_BYTES = 256 * 1024 * 1024  # a pack's JSON read back for pruning (larger: not a pack we wrote)


def _atomic_write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def _is_ours(path: Path) -> bool:
    """A topic file an earlier pack wrote (its header says so); a FIFO or a device by that name is left alone."""
    try:
        return b"packed by mempal" in read_head(path, 4096)
    except OSError:
        return False


def dumps(result: PackResult) -> str:
    return json.dumps(result.to_json(), indent=2, ensure_ascii=False) + "\n"


def write_pack(result: PackResult, out: Path, fmt: Literal["single", "multi"] = "single") -> list[Path]:
    """Write into directory ``out``: ``knowledge_base.md`` (single) or ``index.md`` plus one file per topic
    (multi), and ``knowledge_base.json`` in both cases. Topic files left by an earlier multi run whose
    topics no longer exist are removed. Returns the paths written."""
    if fmt not in ("single", "multi"):
        raise PackError(f"unknown format {fmt!r}: use single or multi")
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    if fmt == "single":
        written += write_pack_file(result, out / f"{KB_NAME}.md")
        return written
    files = render_multi(result)
    keep = set(topic_filenames(result))
    for stale in sorted(out.glob("[0-9][0-9]-*.md")):
        if stale.name not in keep and _is_ours(stale):
            stale.unlink()
    for name, text in files.items():
        _atomic_write(out / name, text)
        written.append(out / name)
    json_path = out / f"{KB_NAME}.json"
    _atomic_write(json_path, dumps(result))
    written.append(json_path)
    return written


def write_pack_file(result: PackResult, path: Path) -> list[Path]:
    """Write the single-file markdown at ``path`` and its JSON twin beside it (same stem).
    ``path`` may name either one: ``pruned.md`` or ``pruned.json``."""
    md = path.with_suffix(".md") if path.suffix == ".json" else path
    js = md.with_suffix(".json")
    _atomic_write(md, render_single(result))
    _atomic_write(js, dumps(result))
    return [md, js]


def twin_json(path: Path) -> Path:
    """The JSON for a pack path: itself, ``x.json`` beside ``x.md``, or ``knowledge_base.json`` beside
    a multi-format ``index.md``; a directory means its ``knowledge_base.json``."""
    if path.is_dir():
        return path / f"{KB_NAME}.json"
    if path.suffix == ".json":
        return path
    twin = path.with_suffix(".json")
    if twin.exists() or path.name != INDEX_NAME:
        return twin
    return path.parent / f"{KB_NAME}.json"


def load_pack(json_path: Path) -> PackResult:
    """Read a pack from its JSON (or from the markdown next to it)."""
    path = twin_json(json_path)
    try:
        data: Any = json.loads(read_capped(path, MAX_PACK_JSON_BYTES, limit="the largest pack JSON read"))
    except FileNotFoundError as exc:
        raise PackError(
            f"{path} not found: prune reads the JSON twin that `mempal pack` writes next to the markdown"
        ) from exc
    except (OSError, ValueError) as exc:
        raise PackError(f"cannot read {path}: {exc}") from exc
    return PackResult.from_json(data)
