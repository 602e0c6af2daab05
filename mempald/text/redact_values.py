"""What is and is not a secret value, for the rules of ``mempald.text.redact_rules`` (pure: stdlib only).

A value is a **placeholder**, never redacted, when it is a template or reference (``${VAR}``, ``<your-key>``,
``{{ secrets.X }}``, ``$TOKEN``), filler (``xxxx``, ``****``, ``...``), a type or keyword, or a value with no
digit that says it is one (``your-key-goes-here``, ``local-demo``, ``changeme``, ``REPLACE_ME``). Each rule's
validator says whether what its pattern found is a real value of its kind: a fixed-prefix token that is not the
docs' filler, a password with a digit and a letter, a Discord token whose first part decodes to the bot's id,
base64 that decodes to a PEM private key or to ``user:secret``.
"""

from __future__ import annotations

import base64
import binascii
import re

PLACEHOLDER_VALUES = re.compile(
    r"""^(?:
        \$\{?[A-Za-z_][A-Za-z0-9_]*\}?      # $VAR, ${VAR}
      | \$\{\{.*\}\}? | \{\{.*\}\} | \{[A-Za-z_][\w.]*\}   # ${{ secrets.X }}, {{ template }}, {name}
      | <[^<>]*>? | <%.*%> | %\(?\w+\)?s?  # <password>, <%= ERB %>, %(name)s
      | (?:x+|\*+|\.+|-+|_+|\#+)           # xxxx, ****, ....
      | (?i:your[_-]?\w+|changeme|redacted|placeholder|example|password|secret|token|none|null|nil|true|false
          |undefined|string|str|bytes|int|number|bool|boolean|optional|any|required|env)
    )$""",
    re.X,
)
# Words that mark a made-up value even when it has digits ("thisIsAWrongApiKey123", "sua_chave_aqui_sem_0x").
_MADE_UP = re.compile(r"(?i)example|sample|dummy|fake|wrong|incorrect|invalid|placeholder|change[_-]?me|replace[_-]?"
                      r"(?:me|with)|your[_\-]|[_\-]here\b|goes[_\-]?here|aqui|\bsua[_\-]|\bseu[_\-]")
_FILLER_WORDS = re.compile(
    r"(?i)your|here|example|placeholder|change[_-]?me|replace|dummy|fake|sample|demo|local|insert|todo|redacted"
    r"|xxx|foo|bar|test|secret|token|passw|api[_-]?key|my[_-]?key|goes")


def has_digit(value: str) -> bool:
    return any(c.isdigit() for c in value)


def is_placeholder(value: str) -> bool:
    """A template, a reference, filler, or a digit-less value that says it is not a real one."""
    v = value.strip().strip("'\"")
    if not v or PLACEHOLDER_VALUES.match(v) or v.startswith(("$", "<", "{", "[")) or _MADE_UP.search(v):
        return True
    core = [c for c in v.lower() if c.isalnum()]
    if len(set(core)) <= 3:  # xxxxxxxx-xxxx, aaaaaaaa, 0000000
        return True
    return not has_digit(v) and _FILLER_WORDS.search(v) is not None


def not_placeholder(value: str) -> bool:
    return not is_placeholder(value)


def token_ok(value: str) -> bool:
    """A fixed-prefix token that is not the docs' filler: a body that is not all ``x`` (``ghp_xxxx...``) nor a
    placeholder word (``sk-ant-your-key-here``)."""
    body = re.split(r"[_\-.]", value, maxsplit=1)[-1]
    if set(body.lower()) <= set("x*.-_"):
        return False
    return has_digit(body) or not _FILLER_WORDS.search(body)


def slack_ok(value: str) -> bool:
    return has_digit(value) and token_ok(value)  # real Slack tokens always carry their numeric ids


def openai_ok(value: str) -> bool:
    # Legacy keys are sk- plus 48 alphanumerics; project/service keys carry a prefix and mixed case. Require
    # a digit so a long kebab-case identifier ("sk-this-is-not-a-key-at-all") is not taken for a key.
    return has_digit(value) and sum(c.isalnum() for c in value) >= 20


def bearer_ok(value: str) -> bool:
    return has_digit(value) and not_placeholder(value)


def password_ok(value: str) -> bool:
    """A password named in prose or a command line: a digit and a letter, not a placeholder."""
    if value.startswith(("/", "~/", "./", "../")):
        return False  # "$ pwd" and its output: a path
    return has_digit(value) and any(c.isalpha() for c in value) and not_placeholder(value)


def env_ok(value: str) -> bool:
    """The value of an environment variable named like a secret."""
    if is_placeholder(value) or value.isdigit() or len(value) < 6:
        return False
    if value.startswith(("/", "~/", "./", "../", "pk_", "ssh-", "http://localhost", "https://localhost")):
        return False  # paths, Stripe publishable keys, public keys
    return has_digit(value) or not IDENT.match(value)


_KEY_ID = re.compile(r"^0x[0-9A-Fa-f]{8,16}$")
_NAME_WORDS = re.compile(r"[_.\-]")
_WORD_TAIL = re.compile(r"^[A-Za-z]+\d{1,2}$")


def _looks_like_name(value: str) -> bool:
    """snake_case or SCREAMING_SNAKE words, digits only at a word's tail (``profile_v2``, ``BUCKET_KEY_V2``)."""
    words = [w for w in _NAME_WORDS.split(value) if w]
    return len(words) >= 2 and all(w.isalpha() or (w[:1].isalpha() and _WORD_TAIL.match(w) is not None) for w in words)


def env_key_ok(value: str) -> bool:
    """The value of a variable named only ``*_KEY`` (``CACHE_KEY``, ``SORT_KEY``, ``GPG_KEY``): as ``env_ok``, and
    not a name (``user_profile_v2``, ``S3_BUCKET_KEY_V2``) nor a short key id (``0x1A2B3C4D``)."""
    return env_ok(value) and not _looks_like_name(value) and not _KEY_ID.match(value)


def age_ok(value: str) -> bool:
    return len(set(value.rsplit("-1", 1)[-1])) > 4  # not AGE-SECRET-KEY-1XXXX...


def _b64(value: str, limit: int) -> bytes:
    """The bytes the first ``limit`` characters of a base64 (or base64url) text decode to; b"" if they do not."""
    head = value[:limit].rstrip("=")
    head = head[: len(head) // 4 * 4]
    try:
        return base64.b64decode(head, altchars=b"-_" if "-" in head or "_" in head else None, validate=True)
    except (binascii.Error, ValueError):
        return b""


def discord_ok(value: str) -> bool:
    """A Discord bot token: its first part is the bot's numeric id in base64."""
    first = value.split(".", 1)[0]
    decoded = _b64(first + "=" * (-len(first) % 4), 64) or _b64(first + "A" * (-len(first) % 4), 64)
    digits = decoded.rstrip(b"\x00")[: len(first) * 3 // 4]
    return digits[:15].isdigit() and token_ok(value)


def b64_private_key_ok(value: str) -> bool:
    """Base64 of a PEM private key (a kubeconfig's ``client-key-data``, a Kubernetes secret's ``tls.key``)."""
    return b"PRIVATE KEY" in _b64(value, 80)


def basic_pair_ok(value: str) -> bool:
    """Base64 of ``user:secret`` (a Docker config's ``auth``, npm's ``_auth``)."""
    decoded = _b64(value + "=" * (-len(value.rstrip("=")) % 4), 400)
    return b":" in decoded and not_placeholder(decoded.split(b":", 1)[1].decode("latin-1"))


def flag_ok(value: str) -> bool:
    """A value given to ``--token`` / ``--password`` / ``-w``: a password-like value or a long random one."""
    if is_placeholder(value) or value.startswith(("-", "/", "~/", "./", "../", "@")):
        return False
    return password_ok(value) or (len(value) >= 16 and not IDENT.match(value))


def stdin_ok(value: str) -> bool:
    """A value echoed into a login command: not a reference (``$TOKEN``, ``$(cat f)``) nor filler."""
    v = value.strip()
    return len(v) >= 4 and not_placeholder(v) and "$" not in v and "`" not in v


def pgpass_ok(value: str) -> bool:
    return len(value) >= 6 and not_placeholder(value) and (has_digit(value) or not value.isalpha())


_GENERIC_TYPE = re.compile(r"^[A-Za-z_][\w.]*\[.*\]\)?$")
_TYPE_START = re.compile(r"^[A-Z][\w.]*\[")
IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*(?:\(\)?)?$")


def assignment_ok(value: str, quoted: bool, key: str, sep: str = "=") -> bool:
    if is_placeholder(value) or value.isdigit():
        return False
    if not quoted and ":" in sep and value.isalpha():
        return False  # "Password: Minimum 12 characters" is prose, not a value
    low = value.lower()
    if key.lower().rstrip("_-") in low and not has_digit(value):
        return False  # password=password, token=self.token, api_key=new_api_key
    if "(" in value or value.startswith(("os.", "process.env", "env.", "self.", "this.", "settings.", "config.")):
        return False  # a call or a reference, not a literal
    if _GENERIC_TYPE.match(value) or _TYPE_START.match(value):
        return False  # token: Optional[str], api_key: Annotated[str | None, ...]
    if value.startswith(("/", "~/", "./", "../", "pk_")):
        return False  # PWD=/home/me in an environment dump is a path; pk_ keys are public
    # Unquoted snake_case or dotted names without digits are variables: connect(password=db_password).
    return quoted or not (IDENT.match(value) and ("_" in value or "." in value) and not has_digit(value))
