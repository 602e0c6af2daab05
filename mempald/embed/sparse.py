"""BM25 sparse vectors, computed offline by Qdrant Edge's own encoder (English stopwords, Snowball stemmer).

The store applies IDF (sparse vectors use the IDF modifier), so documents carry term frequencies only.
The same indices are used for the server backend, so a palace can move between stores.

Tokenizers (measured in README "Keyword search beyond English", ``bench/tokenizers.py``):

- ``english``: Qdrant's default (word tokenizer). Stores made before the tokenizer was recorded used it.
- ``multilingual`` / ``code``: Qdrant's own. Multilingual segments Chinese and Japanese but drops every number
  ("2023", "8080"); Code splits ``parseConfigFile`` but leaves a CJK sentence one token.
- ``mixed`` (the default): the English encoder on a pre-tokenized text: each run of CJK characters is spelled
  out as its overlapping character bigrams (a keyword of two or more characters inside a sentence matches its
  own bigrams), and each camelCase identifier gets its parts added next to it (``parseConfigFile`` is found by
  ``parse config``). snake_case and paths are split by the word tokenizer already. English text without such
  identifiers encodes exactly as ``english`` does.
"""

from __future__ import annotations

import re
import threading

import qdrant_edge as qe

from mempald.store.base import SparseVec

ENGLISH = "english"
MIXED = "mixed"
TOKENIZERS = (ENGLISH, "multilingual", "code", MIXED)
DEFAULT_TOKENIZER = MIXED
LEGACY_TOKENIZER = ENGLISH  # what a store without a tokenizer record was encoded with
META_KEY = "tokenizer"  # the store metadata field that records it (beside "model" and "dim")

# Han (with extension A and compatibility), kana (with half-width katakana), Hangul syllables.
_CJK = re.compile(r"[\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af\uff66-\uff9f]+")
_CAMEL = re.compile(r"[a-z0-9][A-Z]|[A-Z][A-Z][a-z]")
_PART = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")


def _bigrams(run: re.Match[str]) -> str:
    s = run.group(0)
    if len(s) < 2:
        return f" {s} "
    return " " + " ".join(s[i : i + 2] for i in range(len(s) - 1)) + " "


_RUN = re.compile(r"[A-Za-z0-9]*")
_ALNUM = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")


# Each byte of a text's UTF-8 as its class: "a" a lower-case ASCII letter, "0" a digit, "A" a capital, " "
# anything else (every byte of a non-ASCII character is >= 0x80). A camelCase transition is then "aA", "0A" or
# "AAa" in the classes.
_CLASSES = bytes(
    ord("a") if 97 <= b <= 122 else ord("0") if 48 <= b <= 57 else ord("A") if 65 <= b <= 90 else ord(" ")
    for b in range(256)
)


def has_camel(text: str) -> bool:
    """Does ``text`` hold a camelCase transition (what ``_CAMEL`` looks for)? Two byte-string operations in C:
    about a tenth of the regex's time on a text that holds none, which is most texts."""
    classes = text.encode("utf-8", "surrogatepass").translate(_CLASSES)
    return b"aA" in classes or b"0A" in classes or b"AAa" in classes


def identifier_parts(text: str) -> list[str]:
    """The parts of each camelCase word of ``text``, in order (``getHTTPServer`` -> ``"get HTTP Server"``). A
    word is a run of ASCII letters and digits without its leading digits; it is camelCase when ``_CAMEL``
    finds a transition in it. The words are found from the transitions (one C scan of the text) rather than
    by testing every word in Python."""
    out: list[str] = []
    if not has_camel(text):
        return out
    done = -1  # the end of the last run looked at: its other transitions are the same word
    for t in _CAMEL.finditer(text):
        at = t.start()
        if at < done:
            continue
        start = at
        while start > 0 and text[start - 1] in _ALNUM:
            start -= 1
        run = _RUN.match(text, at)
        end = run.end() if run is not None else at
        done = end
        word = text[start:end].lstrip("0123456789")
        if word and _CAMEL.search(word):
            out.append(" ".join(_PART.findall(word)))
    return out


def pretokenize(text: str) -> str:
    """The text the ``mixed`` tokenizer hands to the English encoder (see the module docstring)."""
    parts = identifier_parts(text)
    out = text if text.isascii() or not _CJK.search(text) else _CJK.sub(_bigrams, text)
    return f"{out}\n{' '.join(parts)}" if parts else out


def _model(tokenizer: str) -> qe.Bm25:
    if tokenizer == "multilingual":
        return qe.Bm25(qe.Bm25Config(tokenizer=qe.TokenizerType.Multilingual))
    if tokenizer == "code":
        return qe.Bm25(qe.Bm25Config(tokenizer=qe.TokenizerType.Code))
    if tokenizer in (ENGLISH, MIXED):
        return qe.Bm25()
    raise ValueError(f"unknown keyword tokenizer {tokenizer!r} (have: {', '.join(TOKENIZERS)})")


class Bm25Encoder:
    def __init__(self, tokenizer: str = DEFAULT_TOKENIZER) -> None:
        self.tokenizer = tokenizer
        self._bm25 = _model(tokenizer)
        self._prepare = pretokenize if tokenizer == MIXED else None
        self._lock = threading.Lock()

    def document(self, text: str) -> SparseVec:
        if self._prepare is not None:
            text = self._prepare(text)
        with self._lock:
            v = self._bm25.embed_document(text)
        return SparseVec(tuple(v.indices), tuple(v.values))

    def query(self, text: str) -> SparseVec:
        if self._prepare is not None:
            text = self._prepare(text)
        with self._lock:
            v = self._bm25.embed_query(text)
        return SparseVec(tuple(v.indices), tuple(v.values))
