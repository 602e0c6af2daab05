"""Token counts without the Rust tokenizer's per-call cost, exactly as it counts, for the BERT tokenizer.

Chunking counts tokens for every piece of every exchange it reads (bench/backfill.py's keyword pass: about 7
calls an exchange), and ``tokenizers``' ``encode`` costs about 0.6 ms of CPU per 1,200 characters, most of it
normalizing with alignments and building the encoding, not WordPiece itself. For the BERT tokenizer
(BertNormalizer lowercasing, BertPreTokenizer, WordPiece) a text's count is the sum over its pieces between
ASCII whitespace, which the normalizer keeps and the pre-tokenizer splits on. A piece of printable ASCII with
no special token in it is words (runs of letters and digits) and single punctuation marks, each worth its
WordPiece pieces, worked out once and kept; any other piece (non-ASCII, control characters, "[CLS]"...) is
counted by the tokenizer itself, and kept too. ``tests/unit/embed/test_wordpiece.py`` checks the counts against
the tokenizer on real transcripts and on generated text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

_WORDS = re.compile(r"[a-z0-9]+|[!-/:-@\[-`{-~]")  # after lowercasing; the 32 ASCII punctuation marks alone
_OUTSIDE = re.compile(r"[^!-~]")  # anything but printable ASCII (a piece has no ASCII whitespace)
_SPACE = re.compile(r"[ \t\n\r]+")
_ODD_ASCII_SPACE = ("\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x1f")  # what str.split also splits on, in ASCII
_CACHE_MAX = 200_000


class WordPieceCounter:
    def __init__(self, vocab: dict[str, int], prefix: str, max_chars: int, specials: list[str],
                 fallback: Callable[[str], int]) -> None:
        self.fallback = fallback  # the tokenizer's own count, for pieces that are not plain ASCII words
        self.vocab = vocab
        self.prefix = prefix
        self.max_chars = max_chars
        self.specials = specials
        self.cache: dict[str, int] = {}

    @classmethod
    def from_file(cls, path: Path, fallback: Callable[[str], int]) -> WordPieceCounter | None:
        """The counter for a ``tokenizer.json`` of the BERT kind; None for any other tokenizer."""
        try:
            spec: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        model, norm, pre = spec.get("model") or {}, spec.get("normalizer") or {}, spec.get("pre_tokenizer") or {}
        if (model.get("type") != "WordPiece" or pre.get("type") != "BertPreTokenizer"
                or norm.get("type") != "BertNormalizer" or not norm.get("lowercase")
                or not norm.get("clean_text", True)):
            return None
        specials = [str(t["content"]) for t in spec.get("added_tokens") or ()]
        return cls(dict(model["vocab"]), str(model.get("continuing_subword_prefix", "##")),
                   int(model.get("max_input_chars_per_word", 100)), specials, fallback)

    def count(self, text: str) -> int:
        """Tokens of ``text`` without [CLS]/[SEP]. Only the pieces not yet known are worked out in Python; the
        lookups and the sum run in C (a backfill counts every piece of every drawer about three times)."""
        cache = self.cache
        # str.split (C, no regex) splits on any whitespace: the same pieces as _SPACE when the text holds no
        # whitespace but ASCII's four (empty pieces aside, which count 0). Checked for ASCII text only: six
        # single-character scans.
        plain = text.isascii() and not any(c in text for c in _ODD_ASCII_SPACE)
        pieces = text.split() if plain else _SPACE.split(text)
        missing = set(pieces).difference(cache)
        if missing:
            if len(cache) + len(missing) > _CACHE_MAX:
                cache.clear()
                missing = set(pieces)
            for piece in missing:
                cache[piece] = self._piece(piece)
        return sum(map(cache.__getitem__, pieces))

    def _piece(self, piece: str) -> int:
        if not piece:
            return 0
        if _OUTSIDE.search(piece) or ("[" in piece and any(s in piece for s in self.specials)):
            return self.fallback(piece)
        return sum(self._pieces(w) for w in _WORDS.findall(piece.lower()))

    def _pieces(self, word: str) -> int:
        """WordPiece's greedy longest match first; a word it cannot cover, or a too long one, is one [UNK]."""
        if len(word) > self.max_chars:
            return 1
        pieces, start = 0, 0
        while start < len(word):
            end = len(word)
            while end > start:
                sub = word[start:end] if start == 0 else self.prefix + word[start:end]
                if sub in self.vocab:
                    break
                end -= 1
            if end == start:
                return 1
            pieces += 1
            start = end
        return pieces
