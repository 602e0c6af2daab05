"""AAAK: a compact, line-oriented shorthand for memories that people and LLMs can read.

This package is pure: standard library only, no I/O, nothing imported from the rest of mempald. Its modules:
``model`` (the document model, its vocabularies and checks), ``codec`` (the text format: ``encode`` /
``parse``), ``detect`` (emotions, flags, entity codes) and ``compressor`` (``compress`` / ``compress_many``).
This ``__init__`` is the dialect's API: it re-exports the public names.

What it is, honestly
--------------------
AAAK is a *lossy* summary format. ``compress`` keeps, per passage, the people involved (as 3-letter codes),
a few topic keywords, one verbatim key quote, a 1-10 weight, emotion codes and importance flags, plus
links ("tunnels") between passages that share a person or topic. Everything else in the source text is
dropped and cannot be recovered from the AAAK form. MemPal's own authors measured retrieval falling from
96.6% to 84.2% R@5 when searching AAAK instead of the raw text, so mempald stores the verbatim drawers and
uses AAAK only as an optional, compact view. How much smaller the AAAK form is depends on the text; measure
it with the tokenizer of the model that will read it (this package does not count tokens).

What *is* exact is the text format itself: ``parse(encode(doc)) == doc`` for every valid ``Document``.
The grammar is written down in ``docs/AAAK.md``. In short::

    H:<wing>|<room>|<date>|<title>
    E:ALC=Alice,BOB=Bob
    Z1:ALC,BOB|auth,postgres|"switched to Postgres: sessions weren't ACID"|W8|trust,relief|DECISION|@d1
    T:Z1<->Z2|ALC+postgres
    ARC:doubt->determ->relief

Free-text fields escape ``\\``, ``|``, newline and carriage return with a backslash (``\\\\``, ``\\|``,
``\\n``, ``\\r``); items of comma-separated lists also escape ``,`` as ``\\,``.
"""

from __future__ import annotations

from mempald.features.aaak.codec import encode, parse
from mempald.features.aaak.compressor import (
    EMOTIONS_PER_ZETTEL,
    QUOTE_MAX,
    SENTENCES_PER_ZETTEL,
    TOPICS_PER_ZETTEL,
    compress,
    compress_many,
)
from mempald.features.aaak.detect import (
    EMOTION_TRIGGERS,
    FLAG_MARKERS,
    STOPWORDS,
    detect_emotions,
    detect_flags,
    entity_code,
)
from mempald.features.aaak.model import (
    EMOTION_CODES,
    EMOTIONS,
    FLAGS,
    AAAKError,
    Document,
    Header,
    Tunnel,
    Zettel,
    is_entity_code,
)

__all__ = [
    "EMOTIONS",
    "EMOTIONS_PER_ZETTEL",
    "EMOTION_CODES",
    "EMOTION_TRIGGERS",
    "FLAGS",
    "FLAG_MARKERS",
    "QUOTE_MAX",
    "SENTENCES_PER_ZETTEL",
    "STOPWORDS",
    "TOPICS_PER_ZETTEL",
    "AAAKError",
    "Document",
    "Header",
    "Tunnel",
    "Zettel",
    "compress",
    "compress_many",
    "detect_emotions",
    "detect_flags",
    "encode",
    "entity_code",
    "is_entity_code",
    "parse",
]


