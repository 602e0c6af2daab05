"""``mempal import FILE.jsonl``: an export (``mempald.features.export``) read back, into this palace or a fresh one.

Each drawer keeps its id and its payload exactly as exported; its BM25 vector is computed here (keyword-
searchable at once) and its dense vector by the embedding queue, from the same text and context as the first
time, with the same model (so the vectors come out as they were). A drawer already stored with the same payload
is left as it is: importing the same file twice changes nothing. One whose payload differs is replaced.

Every line is accounted for: the header, drawers added / replaced / unchanged, blank lines, and bad lines
(not JSON, no valid id, no text, too long), each bad one listed with its line number (the first
``LISTED``) and none of them stopping the rest.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import IO, Any

import anyio.to_thread

from mempald.config import SettingsRef
from mempald.embed.sparse import Bm25Encoder
from mempald.errors import InvalidInput
from mempald.features.export import FORMAT_VERSION, RULE_KEY, RULE_VERSION
from mempald.features.rules import Rules
from mempald.ingest.drawers import index_text
from mempald.ingest.queues import BACKFILL, DenseQueue
from mempald.normalize.wings import normal_wing
from mempald.sources.paths import checked_path
from mempald.sources.reader import open_regular
from mempald.state.gateway import StateGateway
from mempald.store.base import PointData
from mempald.store.gateway import StoreGateway

BATCH = 64
LISTED = 50


def _lines(fh: IO[bytes], cap: int) -> Iterator[tuple[int, bytes | None]]:
    """(line number, the line) for every line; None for a line longer than ``cap`` (read past, not kept)."""
    n = 0
    while True:
        raw = fh.readline(cap + 1)
        if not raw:
            return
        n += 1
        if len(raw) > cap and not raw.endswith(b"\n"):
            while raw and not raw.endswith(b"\n"):
                raw = fh.readline(cap + 1)
            yield n, None
            continue
        yield n, raw


def parse_record(raw: bytes) -> tuple[str, dict[str, Any]] | str:
    """(id, payload) of one drawer line, or why it is not one."""
    try:
        rec = json.loads(raw)
    except json.JSONDecodeError as exc:
        return f"not JSON ({exc.msg})"
    except ValueError:
        return "not JSON (not UTF-8)"
    if not isinstance(rec, dict):
        return "not a JSON object"
    raw_id = rec.pop("id", None)
    try:
        pid = str(uuid.UUID(str(raw_id)))
    except ValueError:
        return f"no drawer id (a UUID) but {raw_id!r}"
    if not isinstance(rec.get("text"), str) or not rec["text"].strip():
        return "no text"
    if isinstance(rec.get("wing"), str):
        rec["wing"] = normal_wing(rec["wing"]) or "general"  # (an export of an older palace: its one form)
    return pid, rec


class Importer:
    def __init__(self, settings: SettingsRef, store: StoreGateway, state: StateGateway, bm25: Bm25Encoder,
                 dense: DenseQueue, rules: Rules | None = None) -> None:
        self.settings = settings
        self.rules = rules
        self.store = store
        self.state = state
        self.bm25 = bm25
        self.dense = dense
        self.running = 0  # imports in progress (the embedding waits for them, as it does for fresh ingests)

    async def import_file(self, raw: str, *, actor: str, dry_run: bool) -> dict[str, Any]:
        path = checked_path(raw)
        if not await anyio.to_thread.run_sync(path.is_file):
            raise InvalidInput(f"{path} is not a file: name the .jsonl an export wrote")
        out: dict[str, Any] = {"path": str(path), "lines": 0, "header": None, "added": 0, "replaced": 0,
                               "unchanged": 0, "blank": 0, "bad": 0, "bad_lines": [], "dry_run": dry_run,
                               "rules": {"added": 0, "replaced": 0, "unchanged": 0}}
        cap = self.settings.current.ingest.max_line_bytes
        fh = await anyio.to_thread.run_sync(open_regular, path)  # a FIFO swapped in is refused, not waited on
        self.running += 1
        try:
            lines = _lines(fh, cap)
            while True:
                chunk = await anyio.to_thread.run_sync(lambda: [x for _, x in zip(range(BATCH), lines, strict=False)])
                if not chunk:
                    break
                await self._batch(chunk, out, cap, dry_run)
        finally:
            self.running -= 1
            await anyio.to_thread.run_sync(fh.close)
        held = out["added"] or out["replaced"] or out["unchanged"] or any(out["rules"].values())
        if out["lines"] and out["header"] is None and not held:
            raise InvalidInput(f"{path} holds no drawers of a mempal export ({out['bad']} bad lines; the first: "
                               f"{out['bad_lines'][:1]})")
        if not dry_run:
            await self.state.audit(actor, "import", str(path), "", added=out["added"], replaced=out["replaced"],
                                   bad=out["bad"])
        return out

    async def _rule(self, raw: bytes, out: dict[str, Any], dry_run: bool) -> str:
        """Import one rule line (checked as when it was added); why it is bad, "" when it is not."""
        try:
            rec = json.loads(raw)
        except ValueError:
            return "a rule line that is not JSON"
        if not isinstance(rec, dict) or rec.pop(RULE_KEY, None) != RULE_VERSION or self.rules is None:
            return "a rule line of another version"
        try:
            outcome = await self.rules.import_rule(rec, dry_run=dry_run)
        except InvalidInput as exc:
            return f"rule {rec.get('id')!r}: {exc.message}"
        out["rules"][outcome] += 1
        return ""

    def _bad(self, out: dict[str, Any], n: int, why: str) -> None:
        out["bad"] += 1
        if len(out["bad_lines"]) < LISTED:
            out["bad_lines"].append(f"line {n}: {why}")

    async def _batch(self, chunk: list[tuple[int, bytes | None]], out: dict[str, Any], cap: int,
                     dry_run: bool) -> None:
        records: dict[str, dict[str, Any]] = {}
        for n, raw in chunk:
            out["lines"] += 1
            if raw is None:
                self._bad(out, n, f"longer than ingest.max_line_bytes ({cap:,} bytes)")
                continue
            if not raw.strip():
                out["blank"] += 1
                continue
            if n == 1 and raw.lstrip().startswith(b'{"mempal_export"'):
                out["header"] = json.loads(raw)
                version = out["header"].get("mempal_export")
                if version != FORMAT_VERSION:
                    raise InvalidInput(f"export format {version!r}; this daemon reads version {FORMAT_VERSION}")
                continue
            if raw.lstrip().startswith(b'{"' + RULE_KEY.encode() + b'"'):
                why = await self._rule(raw, out, dry_run)
                if why:
                    self._bad(out, n, why)
                continue
            parsed = parse_record(raw)
            if isinstance(parsed, str):
                self._bad(out, n, parsed)
                continue
            records[parsed[0]] = parsed[1]  # a drawer listed twice: the later line wins (as a second import)
        if not records:
            return
        existing = {p.id: p.payload for p in await self.store.retrieve(list(records))}
        changed = {pid: payload for pid, payload in records.items() if existing.get(pid) != payload}
        out["unchanged"] += len(records) - len(changed)
        out["added"] += sum(1 for pid in changed if pid not in existing)
        out["replaced"] += sum(1 for pid in changed if pid in existing)
        if dry_run or not changed:
            return
        points = await anyio.to_thread.run_sync(
            lambda: [PointData(pid, p, self.bm25.document(index_text(p))) for pid, p in changed.items()])
        for i in range(0, len(points), 32):  # small store calls, as the ingest makes them
            await self.store.upsert(points[i : i + 32])
        for pid, payload in changed.items():
            self.dense.put(pid, float(payload.get("ts") or 0.0), BACKFILL)

