"""AAAK compression of a text or of a wing's drawers (stored as one drawer in room ``aaak`` unless dry_run).

The dialect is lossy: the ratio reported is measured with the model's own tokenizer.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from typing import Any

import anyio.to_thread

from mempald.config import SettingsRef
from mempald.embed.embedder import Embedder
from mempald.errors import InvalidInput
from mempald.features import aaak
from mempald.features.wakeup import WakeUp
from mempald.ingest.drawers import SourceInfo
from mempald.ingest.ingestor import Ingestor
from mempald.ingest.queues import BACKFILL
from mempald.normalize.model import Exchange


class Compressor:
    def __init__(self, settings: SettingsRef, embedder: Embedder, wakeup: WakeUp, ingestor: Ingestor, machine: str,
                 user: str) -> None:
        self.settings = settings
        self.embedder = embedder
        self.wakeup = wakeup
        self.ingestor = ingestor
        self.machine = machine
        self.user = user

    async def compress(self, text: str | None, wing: str | None, dry_run: bool) -> dict[str, Any]:
        people = dict(self.settings.current.people)
        if text:
            doc = aaak.compress(text, people=people)
            source = text
        elif wing:
            drawers = await self.wakeup.wing_drawers(wing)
            pairs = [(str(d.get("text", "")), did) for did, d in drawers]
            doc = aaak.compress_many(pairs, wing=wing, people=people)
            source = "\n\n".join(t for t, _ in pairs)
        else:
            raise InvalidInput("give text or wing")
        encoded = aaak.encode(doc)
        before = await anyio.to_thread.run_sync(self.embedder.count_tokens, source)
        after = await anyio.to_thread.run_sync(self.embedder.count_tokens, encoded)
        out: dict[str, Any] = {"aaak": encoded, "tokens_before": before, "tokens_after": after,
                               "ratio": round(before / after, 2) if after else None, "zettels": len(doc.zettels),
                               "lossy": True}
        if wing and not text and not dry_run:
            key = "aaak:" + hashlib.sha256(encoded.encode()).hexdigest()[:24]
            ex = Exchange(source_kind="aaak", session_id=f"aaak:{wing}", key=key, user="", assistant=encoded,
                          timestamp=datetime.now(UTC).isoformat(), kind="aaak")
            info = SourceInfo(kind="aaak", path=f"mempal:aaak:{wing}", source_key=f"aaak:{wing}",
                              machine=self.machine, user=self.user, wing=wing, room="aaak", redact=False,
                              extract=False, importance=1)
            await self.ingestor.write_exchanges([ex], info, BACKFILL)
            out["stored"] = True
        return out
