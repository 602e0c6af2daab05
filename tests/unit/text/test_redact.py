from __future__ import annotations

import random
import re

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from mempald.text.redact import redact, strip_private
from mempald.text.redact_rules import (
    ASSIGN,
    ASSIGN_GATE,
    ASSIGN_NEEDLES,
    CONTEXT_RULES,
    TOKEN_RULES,
    URL_NEEDLES,
    URL_PASSWORD,
)

# Fake credentials of the right shapes (none is real).
AWS_ID = "AKIAIOSFODNN7EXAMPLE"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
GCP = "AIzaSyD-1234567890abcdefghijklmnopqrstu"
OPENAI_LEGACY = "sk-" + "Ab3dEfGh1jKlMnOpQrStUvWxYz0123456789abcdEFGHijkl"
OPENAI_PROJ = "sk-proj-Ab3dEfGhIjKlMnOpQrStUvWxYz0123456789_abcDEF-ghiJKL"
ANTHROPIC = "sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789-ABCDEFGH_ijklmnOP"
GH = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
JWT = ("eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0."
       "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U")
PEM = ("-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA0Z3VS5JJcds3xfn/ygWyF8PbnGy0AHB7MaEXAMPLE\n"
       "qRfqPR1nTDWYhxvPXk0NEXAMPLEabcdefghij==\n-----END RSA PRIVATE KEY-----")


SHAPES: list[tuple[str, str, str]] = [
    (f"export AWS_ACCESS_KEY_ID={AWS_ID}", "aws_access_key", "export AWS_ACCESS_KEY_ID="),
    (f"aws_secret_access_key = {AWS_SECRET}", "aws_secret_key", "aws_secret_access_key = "),
    (f'{{"SecretAccessKey": "{AWS_SECRET}"}}', "aws_secret_key", '{"SecretAccessKey": "'),
    (f"maps key {GCP} in the page", "gcp_api_key", "maps key "),
    (f"OPENAI_API_KEY={OPENAI_PROJ}", "openai_key", "OPENAI_API_KEY="),
    (f"key: {OPENAI_LEGACY}", "openai_key", "key: "),
    (f"ANTHROPIC_API_KEY={ANTHROPIC}", "anthropic_key", "ANTHROPIC_API_KEY="),
    (f"git remote set-url origin https://{GH}@github.com/o/r", "github_token", "https://"),
    ("gho_" + "a" * 36, "github_token", ""),
    ("ghu_" + "B" * 36, "github_token", ""),
    ("ghs_" + "c1" * 18, "github_token", ""),
    ("ghr_" + "D2" * 18, "github_token", ""),
    ("github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJ", "github_token", ""),
    ("SLACK_BOT_TOKEN=xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx", "slack_token",
     "SLACK_BOT_TOKEN="),
    ("xoxp-1234567890-abcdefghijk", "slack_token", ""),
    ("https://files.slack.com/files-pri/T0-F0/download/a.png?t=xoxe-1-abcdefghijklmnop1234", "slack_download_token",
     "download/a.png?t="),
    ("stripe.api_key = 'sk_live_4eC39HqLyjWDarjtT1zdp7dc'", "stripe_key", "stripe.api_key = '"),
    ("rk_live_4eC39HqLyjWDarjtT1zdp7dc", "stripe_key", ""),
    (PEM + "\nafter", "private_key", ""),
    ("curl -H 'Authorization: Bearer abcdef1234567890abcdef' https://x", "bearer_token",
     "curl -H 'Authorization: Bearer "),
    (f"token is {JWT} ok", "jwt", "token is "),
    ("postgres://admin:s3cr3tP4ss@db.example.com:5432/app", "url_password", "postgres://admin:"),
    ("password=hunter22", "password", "password="),
    ('{"db_password": "correct-horse-9"}', "password", '{"db_password": "'),
    ("API_KEY: abcd1234efgh5678", "api_key", "API_KEY: "),
    ("client_secret='qwertyuiop123'", "secret", "client_secret='"),
    ("https://example.com/cb?access_token=abcdefgh12345678&x=1", "token", "https://example.com/cb?access_token="),
    ("Authorization: Basic dXNlcjpwYXNzd29yZA==", "basic_auth", "Authorization: Basic "),
]


@pytest.mark.parametrize(("text", "kind", "kept"), SHAPES)
def test_each_secret_shape(text: str, kind: str, kept: str) -> None:
    out, counts = redact(text)
    assert counts == {kind: 1}, (out, counts)
    assert f"[REDACTED:{kind}]" in out
    assert kept in out


def test_url_password_keeps_user_and_host() -> None:
    out, _ = redact("DATABASE_URL=postgres://admin:s3cr3tP4ss@db.example.com:5432/app")
    assert out == "DATABASE_URL=postgres://admin:[REDACTED:url_password]@db.example.com:5432/app"


def test_private_key_block_goes_whole() -> None:
    out, counts = redact(f"before\n{PEM}\nafter")
    assert out == "before\n[REDACTED:private_key]\nafter"
    assert counts == {"private_key": 1}


def test_truncated_private_key_is_redacted_to_the_end_of_its_armour() -> None:
    text = ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmU\nAAAAAAAABAAAAMwAAAAtzc2gtZW==\n"
            "\nThat was cut.")
    out, counts = redact(text)
    assert out == "[REDACTED:private_key]\n\nThat was cut."
    assert counts == {"private_key": 1}


def test_json_escaped_private_key() -> None:
    text = ('{"private_key": "-----BEGIN PRIVATE KEY-----\\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\\n'
            '-----END PRIVATE KEY-----\\n"}')
    out, counts = redact(text)
    assert out == '{"private_key": "[REDACTED:private_key]\\n"}'
    assert counts == {"private_key": 1}


def test_quoted_passphrase_goes_whole() -> None:
    out, counts = redact('db_password = "correct horse battery staple"  # rotate monthly')
    assert out == 'db_password = "[REDACTED:password]"  # rotate monthly'
    assert counts == {"password": 1}


def test_counts_add_up_by_type() -> None:
    text = f"{AWS_ID} and {AWS_ID.replace('EXAMPLE', 'EXAMPL2')}; {GH}; password=hunter22"
    out, counts = redact(text)
    assert counts == {"aws_access_key": 2, "github_token": 1, "password": 1}
    assert AWS_ID not in out and GH not in out and "hunter22" not in out


def test_specific_shape_wins_over_generic_assignment() -> None:
    out, counts = redact(f'"api_key": "{OPENAI_PROJ}", "token": "{GH}"')
    assert counts == {"openai_key": 1, "github_token": 1}
    assert out == '"api_key": "[REDACTED:openai_key]", "token": "[REDACTED:github_token]"'


@pytest.mark.parametrize(
    "text",
    [
        "We decided to use Postgres instead of MySQL because of JSONB.",
        "The request id is 550e8400-e29b-41d4-a716-446655440000.",
        "Fixed in commit 3f786850e387550fdab836ed7e6dc881de23001b (sha256 "
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855).",
        "Bearer tokens are short-lived; rotate the secret every 90 days.",
        "Set max_tokens=4096000 and input_tokens: 123456789 for the run.",
        "connect(user=user, password=password) and password=db_password and token = self.token",
        "password: string; token: Optional[str]; api_key: str | None",
        "password = get_password() and secret=os.environ['SECRET']",
        "DATABASE_URL=postgres://user:${DB_PASSWORD}@localhost/db",
        "PWD=/home/me/project OLDPWD=/home/me",
        "the api_key: <your-api-key>; token=xxxxxxxxxxxx; password=********",
        "Use scikit-learn (sk-learn) and the task-runner; ask-the-team-about-it-later-please-ok.",
        "sk-this-is-definitely-not-an-api-key-just-words",
        "email me at dev@example.com or visit https://example.com:8080/path",
        "![img](data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAKIAIOSFODNN7EXAMPLE+ghp_AAAAAAAAAAAAAAAAAAAAAAAAAAAA==)",
        "",
    ],
)
def test_no_false_positives(text: str) -> None:
    assert redact(text) == (text, {})


def test_redact_is_idempotent_on_known_secrets() -> None:
    text = "\n".join([f"AWS_ACCESS_KEY_ID={AWS_ID}", f"aws_secret_access_key={AWS_SECRET}", GCP, OPENAI_PROJ,
                      ANTHROPIC, GH, JWT, PEM, "Authorization: Bearer abcdef1234567890abcdef",
                      "postgres://a:b1234567@h/db", "password=hunter22", "token: 'abcdefgh12345678'"])
    once, counts = redact(text)
    assert sum(counts.values()) == 12
    assert redact(once) == (once, {})


SECRET_PARTS = st.sampled_from([AWS_ID, f"secret_key={AWS_SECRET}", GCP, OPENAI_PROJ, OPENAI_LEGACY, ANTHROPIC, GH,
                                JWT, PEM, "Bearer abcdef1234567890abcdef", "https://u:p4ssw0rd@h/x",
                                "password=hunter22", "?t=xoxe-1-abcdefghijklmnop", "<private>",
                                "data:image/png;base64,"])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.text(max_size=40), SECRET_PARTS), max_size=12).map("".join))
@example("password=[REDACTED:password]x")
@example("token=aaaaaaaa\n-----BEGIN PRIVATE KEY-----")
def test_redact_never_raises_and_is_idempotent(text: str) -> None:
    once, counts = redact(text)
    assert all(v > 0 for v in counts.values())
    twice, _ = redact(once)
    assert twice == once


@given(st.text(max_size=2000))
def test_redact_arbitrary_text(text: str) -> None:
    once, _ = redact(text)
    assert redact(once)[0] == once


def _rules() -> list[tuple[str, re.Pattern[str], tuple[str, ...], bool]]:
    rules = [(r.kind, r.rx, r.needles, r.fold) for r in (*TOKEN_RULES, *CONTEXT_RULES)]
    return [*rules, ("url_password", URL_PASSWORD, URL_NEEDLES, False), ("assignment", ASSIGN, ASSIGN_NEEDLES, True)]


def _texts() -> list[str]:
    from tests.unit.text.test_redact_precision import FAMILY_LOOKALIKES, FAMILY_SECRETS, LOOKALIKES, SECRETS

    more = ["xapp-1-A0123456789-0123456789012-abcdef0123", "shpat_" + "a1" * 16, "dop_v1_" + "0f" * 32,
            "hvs.CAESIJ0aBcDeFgHiJkLmNoPqRsTuVw", "https://u:pw@h/x", "1234567890:AA" + "b1" * 17]
    families = [t for _, t, _ in FAMILY_SECRETS] + [t for _, t in FAMILY_LOOKALIKES]
    return [t for t, _ in SECRETS] + list(LOOKALIKES) + [t for t, _, _ in SHAPES] + more + families


@pytest.mark.parametrize("kind,rx,needles,fold", _rules(), ids=lambda v: v if isinstance(v, str) else "")
def test_every_match_of_a_rule_holds_one_of_its_needles(kind: str, rx: re.Pattern[str], needles: tuple[str, ...],
                                                        fold: bool) -> None:
    """A text without a rule's needles is not scanned for it: sound only if no match can lack them. Checked on
    every labelled text, upper- and lower-cased, and on random mixtures of secret shapes."""
    assert needles, f"{kind} has no needles: it would scan every text"
    rnd = random.Random(7)
    texts = _texts()
    texts += [t.upper() for t in texts] + [t.lower() for t in texts]
    texts += [" ".join(rnd.choice(texts) for _ in range(3)) for _ in range(300)]
    matched = 0
    for text in texts:
        for m in rx.finditer(text):
            whole = m.group(0).casefold() if fold else m.group(0)
            assert any(n in whole for n in needles), (kind, m.group(0))
            matched += 1
    assert matched, f"no text here matches {kind}: add one"


def test_needles_of_rules_that_ignore_case_hold_no_i() -> None:
    """A pattern that ignores case matches "AUTHORİZATION" and "authorızation", whose casefolded forms hold no
    "authorization": a needle with an "i" would let such a text pass unscanned."""
    assert re.search("(?i)authorization", "AUTHORİZATION") and "authorization" not in "AUTHORİZATION".casefold()
    folded = [n for r in (*TOKEN_RULES, *CONTEXT_RULES) if r.fold for n in r.needles]
    folded += [*ASSIGN_NEEDLES, *ASSIGN_GATE.pattern.split("[")[0].strip("(?:)").split("|")]
    assert folded and not [n for n in folded if "i" in n]
    assert redact("AUTHORİZATION: Basic dXNlcjpwYXNzd29yZA==")[1] == {"basic_auth": 1}


def test_every_assignment_holds_its_gate() -> None:
    """A text in which the gate finds no key's last word before a separator is not scanned for assignments:
    sound only if every assignment the pattern finds (upper-, lower- or mixed-case) holds that pair."""
    rnd = random.Random(11)
    texts = _texts()
    texts += [t.upper() for t in texts] + [t.lower() for t in texts]
    texts += ["".join(c.upper() if rnd.random() < 0.5 else c for c in t) for t in texts]
    texts += ['"client_secret" :  "abc"', "PRIVATE-KEY=>xyz", "passphrase := 'a b c d'", "X_PWD\t= q",
              "auth_token: 'zzzzzzzz'", "db.passwd:hunter22"]
    matched = 0
    for text in texts:
        for m in ASSIGN.finditer(text):
            assert ASSIGN_GATE.search(m.group(0).casefold()), m.group(0)
            matched += 1
    assert matched > 20


# --- <private> ----------------------------------------------------------------------------------------------


def test_strip_private_spans() -> None:
    assert strip_private("keep <private>my ssn is 123</private> this") == "keep  this"
    assert strip_private("a <PRIVATE>x</Private> b") == "a  b"
    assert strip_private("multi <private>line\none\ntwo</private>\nend") == "multi \nend"
    assert strip_private("unclosed <private> everything after is gone") == "unclosed "
    assert strip_private("nested <private>a<private>b</private>c</private> d") == "nested  d"
    assert strip_private("stray </private> closer") == "stray  closer"
    assert strip_private("no tags < here >") == "no tags < here >"
    assert strip_private("") == ""


@given(st.lists(st.one_of(st.text(max_size=20), st.sampled_from(["<private>", "</private>", "SECRET"])),
                max_size=12).map("".join))
def test_strip_private_never_leaks_inside(text: str) -> None:
    out = strip_private(text)
    assert "<private>" not in out.lower() or "<private>" not in text.lower()
    assert strip_private(out) == out
