"""Secret redaction and ``<private>`` stripping before anything is stored (pure: stdlib only, no I/O).

``redact`` replaces well-known credential shapes with typed placeholders such as
``[REDACTED:github_token]`` and counts them by type. The rules (``redact_rules``) aim at shapes that are secrets
with near certainty (fixed prefixes, the places only a secret goes, key=value context, PEM armour) so ordinary
prose, UUIDs, git SHAs, hashes, public keys and placeholders survive untouched: measured on a labelled set in
tests/unit/text/test_redact_precision.py (every secret caught, no look-alike redacted). Base64 ``data:`` URIs
(pasted images) are left alone: they are not credentials and a random run inside them could otherwise look
like one.

Redaction is idempotent: no rule matches a placeholder, and the rules are re-applied until nothing changes,
so ``redact(redact(t)[0])`` changes nothing and counts nothing. All patterns are compiled once at import.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Container, Mapping
from typing import Any

from mempald.text.redact_rules import (
    ASSIGN,
    ASSIGN_GATE,
    ASSIGN_KEYS,
    ASSIGN_MIN,
    ASSIGN_NEEDLES,
    CONTEXT_RULES,
    TOKEN_RULES,
    URL_NEEDLES,
    URL_PASSWORD,
    Rule,
)
from mempald.text.redact_values import assignment_ok, is_placeholder

PLACEHOLDER = "[REDACTED:{}]"
_SURROGATE = re.compile("[\ud800-\udfff]")  # a lone UTF-16 half (cut emoji): not encodable, replaced


def _ph(kind: str) -> str:
    return PLACEHOLDER.format(kind)


# ---------------------------------------------------------------------------------------------------------
# Private key blocks (handled in code: the END line may be missing in a truncated paste)
# ---------------------------------------------------------------------------------------------------------

_PEM_BEGIN = re.compile(r"-----BEGIN ((?:[A-Z0-9]+ ){0,3})PRIVATE KEY(?: BLOCK)?-----")
_PEM_END = re.compile(r"-----END (?:[A-Z0-9]+ ){0,3}PRIVATE KEY(?: BLOCK)?-----")
# A truncated block (no END line): take the armour lines that follow (base64 lines of 16+ characters or a
# padded last line, PEM headers), after real or JSON-escaped newlines; stop at anything else. A short
# unpadded last line is left: a few trailing bytes of a key are not the key.
_PEM_BODY = re.compile(
    r"(?:(?:\r?\n|(?:\\r)?\\n)[ \t]*"
    r"(?:[A-Za-z0-9+/]{16,}={0,2}|[A-Za-z0-9+/]*={1,2}|(?:Proc-Type|DEK-Info|Comment):[^\n\\]*"
    r"|(?=\r?\n[A-Za-z0-9+/]{16,})))*"  # the blank line between PEM headers and the body
)
_PEM_MAX = 32_768  # a 16k-bit RSA key is ~12 KiB of armour; never scan further for END


def _redact_pem(text: str, counts: dict[str, int]) -> str:
    if "PRIVATE KEY" not in text:
        return text
    out: list[str] = []
    pos = 0
    while True:
        m = _PEM_BEGIN.search(text, pos)
        if m is None:
            break
        end_m = _PEM_END.search(text, m.end(), min(len(text), m.end() + _PEM_MAX))
        if end_m is not None:
            stop = end_m.end()
        else:
            body = _PEM_BODY.match(text, m.end())
            stop = body.end() if body is not None else m.end()
        out.append(text[pos : m.start()])
        out.append(_ph("private_key"))
        counts["private_key"] = counts.get("private_key", 0) + 1
        pos = stop
    out.append(text[pos:])
    return "".join(out)


_DATA_URI = re.compile(r"data:[\w.+\-]+/[\w.+\-]+(?:;[\w.+\-]+=[\w.+\-]+)*;base64,[A-Za-z0-9+/=]+")


def _bump(counts: dict[str, int], kind: str) -> None:
    counts[kind] = counts.get(kind, 0) + 1


def _holds(text: str, needles: tuple[str, ...]) -> bool:
    for n in needles:  # a loop, not any() over a generator: twice as fast, and ~70 rules test their needles
        if n in text:
            return True
    return not needles


def _apply_rules(text: str, rules: list[Rule], counts: dict[str, int]) -> str:
    """``text`` after each of ``rules`` in turn; the casefolded text the ``fold`` rules test their needles on is
    made once, and again only after a rule has run."""
    folded: str | None = None
    for rule in rules:
        if rule.fold:
            if folded is None:
                folded = text.casefold()
            hay = folded
        else:
            hay = text
        if _holds(hay, rule.needles):
            text = _substitute(text, rule, counts)
            folded = None
    return text


def _substitute(text: str, rule: Rule, counts: dict[str, int]) -> str:
    kind, rx, group, ok = rule.kind, rule.rx, rule.group, rule.ok

    def sub(m: re.Match[str]) -> str:
        secret = m.group(group)
        if ok is not None and not ok(secret):
            return m.group(0)
        _bump(counts, kind)
        whole = m.group(0)
        start, end = m.start(group) - m.start(), m.end(group) - m.start()
        return whole[:start] + _ph(kind) + whole[end:]

    return rx.sub(sub, text)


def _redact_url(m: re.Match[str], counts: dict[str, int]) -> str:
    password = m.group(2)
    if is_placeholder(password):
        return m.group(0)
    _bump(counts, "url_password")
    return m.group(1) + _ph("url_password") + m.group(3)


def _redact_assignment(m: re.Match[str], counts: dict[str, int]) -> str:
    kind = next(k for k in ASSIGN_KEYS if m.group(k) is not None)
    group = next(g for g in ("dq", "sq", "v") if m.group(g) is not None)
    value = m.group(group)
    quoted = group != "v" or bool(m.group("q"))
    if len(value.strip()) < ASSIGN_MIN[kind] or not assignment_ok(value, quoted, m.group(2), m.group("sep")):
        return m.group(0)
    _bump(counts, kind)
    whole = m.group(0)
    return whole[: m.start(group) - m.start()] + _ph(kind) + whole[m.end(group) - m.start() :]


def _redact_pass(text: str, counts: dict[str, int]) -> str:
    text = _redact_pem(text, counts)
    text = _apply_rules(text, TOKEN_RULES, counts)
    if _holds(text, URL_NEEDLES):
        text = URL_PASSWORD.sub(lambda m: _redact_url(m, counts), text)
    text = _apply_rules(text, CONTEXT_RULES, counts)
    folded = text.casefold()
    if not _holds(folded, ASSIGN_NEEDLES) or ASSIGN_GATE.search(folded) is None:
        return text
    return ASSIGN.sub(lambda m: _redact_assignment(m, counts), text)


_MAX_PASSES = 4


def _redact_segment(text: str, counts: dict[str, int]) -> str:
    # A replacement changes what follows or precedes it, which can complete a match for a rule that ran
    # earlier ("Bearer abc/PASSWORD=[REDACTED:password]"). Repeating until nothing changes makes the result
    # a fixed point, so redact() is idempotent; real text settles in one pass plus the confirming one.
    for _ in range(_MAX_PASSES):
        before = sum(counts.values())
        text = _redact_pass(text, counts)
        if sum(counts.values()) == before:
            break
    return text


def redact(text: str) -> tuple[str, dict[str, int]]:
    """``text`` with secrets replaced by ``[REDACTED:<type>]``, and the number of redactions per type."""
    counts: dict[str, int] = {}
    if "data:" not in text:
        return _redact_segment(text, counts), counts
    out: list[str] = []
    pos = 0
    for m in _DATA_URI.finditer(text):
        out.append(_redact_segment(text[pos : m.start()], counts))
        out.append(m.group(0))
        pos = m.end()
    out.append(_redact_segment(text[pos:], counts))
    return "".join(out), counts


# ---------------------------------------------------------------------------------------------------------
# <private> spans
# ---------------------------------------------------------------------------------------------------------

_PRIVATE_TAG = re.compile(r"<(/?)private\s*>", re.I)


def strip_private(text: str) -> str:
    """``text`` without ``<private>...</private>`` spans. Spans nest; an unclosed ``<private>`` hides
    everything after it; a stray ``</private>`` is dropped (and hides nothing)."""
    if "<" not in text or not _PRIVATE_TAG.search(text):
        return text
    out: list[str] = []
    depth = 0
    pos = 0
    for m in _PRIVATE_TAG.finditer(text):
        if depth == 0:
            out.append(text[pos : m.start()])
        if m.group(1):
            depth = max(0, depth - 1)
        else:
            depth += 1
        pos = m.end()
    if depth == 0:
        out.append(text[pos:])
    return "".join(out)


def scrub(text: str) -> str:
    """``text`` as it may leave or enter the palace outside the ingest (a cowork message, a partner's transcript
    shown to the other agent, a knowledge-graph fact): ``<private>`` spans removed, secrets redacted, and a lone
    surrogate (half an emoji, cut by a JavaScript tool) replaced by U+FFFD so the text can be encoded."""
    return _SURROGATE.sub("\ufffd", redact(strip_private(text))[0])


_META_CACHED = 1024  # texts up to this length are cached (a session's title, branch and folder repeat per drawer)


@functools.lru_cache(maxsize=8192)
def _scrub_cached(text: str) -> str:
    return scrub(text)


def scrub_meta(value: str) -> str:
    """A text said about a drawer or kept in the state database (a session title, a git branch, a working
    directory, a delete or forget reason, an audit target) as it may be stored: ``scrub``bed, whatever
    ``ingest.redact_secrets`` says."""
    return _scrub_cached(value) if len(value) <= _META_CACHED else scrub(value)


def scrub_fields(fields: Mapping[str, Any], keep: Container[str] = ()) -> dict[str, Any]:
    """``fields`` with every text in them (in lists and nested objects too) scrubbed, but those named in ``keep``."""
    return {k: v if k in keep else _scrub_value(v) for k, v in fields.items()}


def _scrub_value(value: Any) -> Any:
    if isinstance(value, str):
        return scrub_meta(value)
    if isinstance(value, list):
        return [_scrub_value(v) for v in value]
    if isinstance(value, tuple):
        return tuple(_scrub_value(v) for v in value)
    if isinstance(value, dict):
        return {k: _scrub_value(v) for k, v in value.items()}
    return value
