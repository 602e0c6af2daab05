"""Line accounting (issue #17): on every real fixture of ../shared/fixtures/formats, every line or record ends
stored (in an exchange that exists), folded into one, or skipped with a named reason. The records are listed
here independently of the adapters (lines of a JSONL file, lines of a Markdown file, messages of a Gemini
chat, nodes of every ChatGPT mapping, messages of every Claude.ai conversation, messages of every Slack day
file), so a record an adapter forgets fails the test."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mempald.ingest.units import read_export
from mempald.normalize import registry
from mempald.normalize.format import Format, Input, Parsed
from mempald.normalize.ledger import FOLDED, SKIPPED, STORED, Ledger
from tests.conftest import lines_in

FORMATS = Path(__file__).resolve().parents[3].parent / "shared" / "fixtures" / "formats"
SAMPLES = Path(__file__).resolve().parents[2] / "fixtures"
DOCS = {"PROVENANCE.md", "SCHEMAS.md", "HOOKS_MCP.md", "README.md"}


def units() -> Iterator[tuple[Path, Format]]:
    roots = [r for r in (FORMATS, SAMPLES / "claude_ai") if r.is_dir()]
    for root in roots:
        for path in sorted(root.rglob("*")):
            if path.is_dir():
                fmt = registry.detect_folder(p.name for p in path.iterdir())
                if fmt is not None:
                    yield path, fmt
                continue
            if path.name in DOCS or any(p.name == "slack" for p in path.parents):
                continue
            fmt = registry.detect_file(path.read_bytes()[: registry.HEAD_BYTES], path.name)
            if fmt is None:  # JSON in no known format: reference schemas, a sub-agent's meta.json
                assert path.name.endswith(("schema.json", ".meta.json")), path
                continue
            yield path, fmt


UNITS = list(units())


def parse(path: Path, fmt: Format) -> tuple[Parsed, list[str | int]]:
    """The parse of a unit and the refs of its records, listed from the raw data."""
    if fmt.reads == "folder":
        files = read_export(path)
        parsed = fmt.parse(Input(name=str(path), files=files))
        refs: list[str | int] = []
        for rel, data in files.items():
            root = json.loads(data)
            day = rel.count("/") == 1 and rel.rsplit("/", 1)[1][:4].isdigit()
            refs += [f"{rel}#{i}" for i in range(len(root))] if day and isinstance(root, list) else [rel]
        return parsed, refs
    data = path.read_bytes()
    if fmt.reads == "lines":
        lines = lines_in(data)
        return fmt.parse(Input(name=str(path), lines=lines)), [ln.offset for ln in lines]
    parsed = fmt.parse(Input(name=str(path), data=data))
    return parsed, document_refs(fmt.name, data)


def document_refs(name: str, data: bytes) -> list[str | int]:
    text_lines = data.decode("utf-8", errors="replace").replace("\r\n", "\n").split("\n")
    if text_lines and text_lines[-1] == "":
        text_lines.pop()
    if name in ("aider", "text"):
        return [f"line {n}" for n in range(1, len(text_lines) + 1)]
    try:
        root: Any = json.loads(data)
    except ValueError:
        root = None
    if name == "gemini":
        if isinstance(root, dict):
            return [f"messages[{i}]" for i in range(len(root["messages"]))]
        if isinstance(root, list):
            return [f"[{i}]" for i in range(len(root))]
        return [f"line {n}" for n in range(1, len(text_lines) + 1)]
    convs = root if isinstance(root, list) else [root]
    if name == "chatgpt":
        return [f"{i}/{node}" for i, c in enumerate(convs) for node in c["mapping"]]
    assert name == "claude_ai"
    return [f"{i}/{m}" for i, c in enumerate(convs) for m in range(len(c["chat_messages"]))]


def accounted(ledger: Ledger) -> set[str | int]:
    out: set[str | int] = set()
    for a in ledger.entries:
        out.add(a.ref)
        if isinstance(a.ref, str) and "#" in a.ref and a.ref.startswith("line "):
            out.add(a.ref.split("#", 1)[0])  # a message inside a Gemini $set snapshot line
    return out


def test_the_fixtures_cover_every_format() -> None:
    if not FORMATS.is_dir():
        pytest.skip(f"the shared format fixtures are not at {FORMATS}")
    assert {fmt.name for _, fmt in UNITS} >= {"claude_code", "codex", "aider", "gemini", "chatgpt", "claude_ai",
                                              "slack"}
    assert len(UNITS) >= 30


@pytest.mark.parametrize(("path", "fmt"), UNITS, ids=[str(p.relative_to(p.parents[2])) for p, _ in UNITS])
def test_no_record_is_silently_unaccounted_for(path: Path, fmt: Format) -> None:
    parsed, refs = parse(path, fmt)
    done = accounted(parsed.ledger)
    missing = [r for r in refs if r not in done]
    assert not missing, f"{len(missing)} records of {path.name} unaccounted for, first {missing[:5]}"
    keys = {e.key for e in parsed.exchanges}
    stored_in: dict[str, int] = {}
    for a in parsed.ledger.entries:
        assert a.outcome in (STORED, FOLDED, SKIPPED)
        if a.outcome == SKIPPED:
            assert a.what and not a.exchange, a
        else:
            assert a.exchange in keys, a  # never into an exchange that was dropped
            stored_in[a.exchange] = stored_in.get(a.exchange, 0) + (a.outcome == STORED)
    for e in parsed.exchanges:
        assert stored_in.get(e.key, 0) >= 1 or e.key.endswith(":summary"), e.key  # every exchange has a source
