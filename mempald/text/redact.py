"""Secret redaction and ``<private>`` stripping before anything is stored (pure: stdlib only, no I/O).

``redact`` replaces well-known credential shapes with typed placeholders such as
``[REDACTED:github_token]`` and counts them by type. The rules aim at shapes that are secrets with near
certainty (fixed prefixes, key=value context, PEM armour) so ordinary prose, UUIDs, git SHAs and hashes
survive untouched. Base64 ``data:`` URIs (pasted images) are left alone: they are not credentials and a
random run inside them could otherwise look like one.

Redaction is idempotent: no rule matches a placeholder, and the rules are re-applied until nothing changes,
so ``redact(redact(t)[0])`` changes nothing and counts nothing. All patterns are compiled once at import.
"""

from __future__ import annotations

import re
from collections.abc import Callable

PLACEHOLDER = "[REDACTED:{}]"
_PH = r"(?!\[REDACTED:)"  # never re-redact a placeholder

# Characters that may sit right before/after a token without being part of it.
_B = r"(?<![A-Za-z0-9_\-])"
_E = r"(?![A-Za-z0-9_\-])"


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


# ---------------------------------------------------------------------------------------------------------
# Token rules: (kind, pattern, group holding the secret, validator or None)
# ---------------------------------------------------------------------------------------------------------

_PLACEHOLDER_VALUES = re.compile(
    r"""^(?:
        \$\{?[A-Za-z_][A-Za-z0-9_]*\}?      # $VAR, ${VAR}
      | \{\{.*\}\} | \{[A-Za-z_][\w.]*\}   # {{ template }}, {name}
      | <[^<>]*> | %\(?\w+\)?s?            # <password>, %(name)s
      | (?:x+|\*+|\.+|-+|_+|\#+)           # xxxx, ****, ....
      | (?i:your[_-]?\w+|changeme|redacted|placeholder|example|password|secret|token|none|null|nil|true|false
          |undefined|string|str|bytes|int|number|bool|boolean|optional|any|required|env)
    )$""",
    re.X,
)


def _not_placeholder(value: str) -> bool:
    return not _PLACEHOLDER_VALUES.match(value)


def _has_digit(value: str) -> bool:
    return any(c.isdigit() for c in value)


def _openai_ok(value: str) -> bool:
    # Legacy keys are sk- plus 48 alphanumerics; project/service keys carry a prefix and mixed case. Require
    # a digit so a long kebab-case identifier ("sk-this-is-not-a-key-at-all") is not taken for a key.
    return _has_digit(value) and sum(c.isalnum() for c in value) >= 20


def _bearer_ok(value: str) -> bool:
    return _has_digit(value) and _not_placeholder(value)


_GENERIC_TYPE = re.compile(r"^[A-Za-z_][\w.]*\[.*\]\)?$")
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*(?:\(\)?)?$")


def _assignment_ok(value: str, quoted: bool, key: str) -> bool:
    if not _not_placeholder(value) or value.isdigit():
        return False
    low = value.lower()
    if key.lower().rstrip("_-") in low and not _has_digit(value):
        return False  # password=password, token=self.token, api_key=new_api_key
    if "(" in value or value.startswith(("os.", "process.env", "env.", "self.", "this.", "settings.", "config.")):
        return False  # a call or a reference, not a literal
    if _GENERIC_TYPE.match(value):
        return False  # token: Optional[str]
    if value.startswith(("/", "~/", "./", "../")):
        return False  # PWD=/home/me in an environment dump is a path
    # Unquoted snake_case or dotted names without digits are variables: connect(password=db_password).
    return quoted or not (_IDENT.match(value) and ("_" in value or "." in value) and not _has_digit(value))


Rule = tuple[str, re.Pattern[str], int, Callable[[str], bool] | None]

_RULES: list[Rule] = [
    # Slack file-download URLs carry a token in the query string: keep the parameter, drop the token.
    ("slack_download_token", re.compile(r"([?&]t=)" + _PH + r"(xox[a-z]-[A-Za-z0-9%\-]{10,})"), 2, None),
    ("anthropic_key", re.compile(_B + r"(sk-ant-[A-Za-z0-9_\-]{20,})" + _E), 1, None),
    ("openai_key", re.compile(_B + r"(sk-(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_\-]{20,})" + _E), 1, _openai_ok),
    ("github_token", re.compile(r"(?<![A-Za-z0-9_])(gh[pousr]_[A-Za-z0-9]{36,255})(?![A-Za-z0-9_])"), 1, None),
    ("github_token", re.compile(r"(?<![A-Za-z0-9_])(github_pat_[A-Za-z0-9_]{22,255})(?![A-Za-z0-9_])"), 1, None),
    ("slack_token", re.compile(_B + r"(xox[abposre]-[A-Za-z0-9\-]{10,})" + _E), 1, None),
    ("slack_token", re.compile(_B + r"(xapp-\d-[A-Za-z0-9\-]{10,})" + _E), 1, None),
    ("stripe_key", re.compile(r"(?<![A-Za-z0-9_])((?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,})(?![A-Za-z0-9_])"), 1,
     None),
    ("stripe_key", re.compile(r"(?<![A-Za-z0-9_])(whsec_[A-Za-z0-9]{24,})(?![A-Za-z0-9_])"), 1, None),
    ("gcp_api_key", re.compile(_B + r"(AIza[0-9A-Za-z_\-]{35})" + _E), 1, None),
    ("aws_access_key", re.compile(
        r"(?<![A-Za-z0-9])((?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|APKA)[A-Z0-9]{16})(?![A-Za-z0-9])"),
     1, None),
    ("aws_secret_key", re.compile(
        r"((?:aws_?)?secret_?(?:access_?)?key[\"']?\s*[:=]>?\s*[\"']?)" + _PH
        + r"([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])", re.I), 2, None),
    ("jwt", re.compile(_B + r"(eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,})" + _E), 1, None),
    ("bearer_token", re.compile(r"(\b(?i:bearer)\s+)" + _PH + r"([A-Za-z0-9\-._~+/]{16,}=*)(?![A-Za-z0-9\-._~+/=])"), 2,
     _bearer_ok),
    ("basic_auth", re.compile(r"(\bAuthorization\s*[:=]\s*[\"']?\s*Basic\s+)" + _PH
                              + r"([A-Za-z0-9+/]{8,}={0,2})(?![A-Za-z0-9+/=])", re.I), 2, None),
]

# scheme://user:password@host: keep the scheme, the user and the host.
_URL_PASSWORD = re.compile(r"\b([a-zA-Z][a-zA-Z0-9+.\-]{1,30}://[^\s:/@?#\[\]\"'<>]+:)" + _PH
                           + r"([^\s/@?#\"'<>]+)(@)")

# Generic assignments: password=..., "api_key": "...", SECRET: ..., token = '...'.
_ASSIGN_KEYS = {
    "password": r"pass(?:word|wd|phrase)|pwd",
    "secret": r"(?:client_?)?secret(?:_?key)?",
    "api_key": r"api[_\-]?key|apikey|access[_\-]?key|private[_\-]?key",
    "token": r"(?:access|auth|refresh|session|bearer|api)?[_\-]?token",
}
_ASSIGN = re.compile(
    r"(?<![A-Za-z0-9])((?:[A-Za-z0-9]{1,40}[_\-.]){0,6}(" + "|".join(f"(?P<{k}>{v})" for k, v in _ASSIGN_KEYS.items())
    + r"))([\"']?\s*(?::=|=>|[:=])\s*)"
    # A quoted value runs to its closing quote (a passphrase may hold spaces); else up to a delimiter.
    + r"(?:\"" + _PH + r"(?P<dq>[^\"\n]{6,256})\"|'" + _PH + r"(?P<sq>[^'\n]{6,256})'"
    + r"|(?P<q>[\"']?)" + _PH + r"(?P<v>[^\s\"'`,;]{6,}))",
    re.I,
)
_ASSIGN_MIN = {"password": 6, "secret": 8, "api_key": 8, "token": 8}

_DATA_URI = re.compile(r"data:[\w.+\-]+/[\w.+\-]+(?:;[\w.+\-]+=[\w.+\-]+)*;base64,[A-Za-z0-9+/=]+")


def _bump(counts: dict[str, int], kind: str) -> None:
    counts[kind] = counts.get(kind, 0) + 1


def _apply_rule(text: str, rule: Rule, counts: dict[str, int]) -> str:
    kind, rx, group, ok = rule

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
    if not _not_placeholder(password):
        return m.group(0)
    _bump(counts, "url_password")
    return m.group(1) + _ph("url_password") + m.group(3)


def _redact_assignment(m: re.Match[str], counts: dict[str, int]) -> str:
    kind = next(k for k in _ASSIGN_KEYS if m.group(k) is not None)
    group = next(g for g in ("dq", "sq", "v") if m.group(g) is not None)
    value = m.group(group)
    quoted = group != "v" or bool(m.group("q"))
    if len(value.strip()) < _ASSIGN_MIN[kind] or not _assignment_ok(value, quoted, m.group(2)):
        return m.group(0)
    _bump(counts, kind)
    whole = m.group(0)
    return whole[: m.start(group) - m.start()] + _ph(kind) + whole[m.end(group) - m.start() :]


def _redact_pass(text: str, counts: dict[str, int]) -> str:
    text = _redact_pem(text, counts)
    for rule in _RULES:
        text = _apply_rule(text, rule, counts)
    text = _URL_PASSWORD.sub(lambda m: _redact_url(m, counts), text)
    return _ASSIGN.sub(lambda m: _redact_assignment(m, counts), text)


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
