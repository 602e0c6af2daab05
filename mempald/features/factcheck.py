"""Offline fact-checking of a text against the knowledge graph. Deterministic, no model calls.

Three kinds of issue:

- ``name``: a capitalised word of 4+ letters within Levenshtein distance 2 of a known entity but not equal
  to it ("Alcie" when the graph knows "Alice"): probably a typo, possibly a different person.
- ``contradiction``: a relation the text asserts clashes with a triple valid today between the same two
  entities (the text says Alice is Bob's manager; the graph says Alice reports to Bob), or with a
  single-valued relation (the text says Alice works at Initech; the graph says she works at Acme:
  a conflict).
- ``stale``: the text asserts a triple the graph has, but only with an interval that has ended.

Relations are read from the text with three narrow patterns only; any other sentence shape is ignored,
so the checker under-reports rather than raising false alarms:

- "X is Y's ROLE"             -> (X, "ROLE_of", Y)     "Alice is Bob's manager" -> (Alice, manager_of, Bob)
- "X works at / for Y"        -> (X, "works_at", Y)
- "X is the / a / an ROLE of Y" -> (X, "ROLE_of", Y)   (an article is required unless ROLE is an acronym)
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from rapidfuzz import process
from rapidfuzz.distance import OSA, Levenshtein

from mempald.features.aaak import STOPWORDS
from mempald.features.kg import KnowledgeGraph, Triple, normalize_date, normalize_predicate

__all__ = [
    "INCOMPATIBLE_ROLES",
    "PREDICATE_ALIASES",
    "SINGLE_VALUED",
    "Claim",
    "Issue",
    "IssueKind",
    "extract_claims",
    "extract_triples",
    "fact_check",
]

IssueKind = Literal["name", "contradiction", "stale"]

MAX_NAME_DISTANCE = 2
MIN_NAME_LENGTH = 4

#: Predicates that mean the same thing, mapped to one spelling before comparing.
PREDICATE_ALIASES: dict[str, str] = {
    "works_for": "works_at",
    "report_of": "reports_to",
    "direct_report_of": "reports_to",
    "subordinate_of": "reports_to",
    "boss_of": "manager_of",
    "supervisor_of": "manager_of",
}

#: Predicates that hold for one object at a time (per subject): a different object is a conflict.
SINGLE_VALUED: frozenset[str] = frozenset({"works_at", "reports_to"})

#: Predicate -> (family, role of the subject, gender or None). Two relations between the same two people
#: contradict when they are in the same family and give the subject different roles (or genders).
INCOMPATIBLE_ROLES: dict[str, tuple[str, str, str | None]] = {
    "manager_of": ("hierarchy", "superior", None),
    "reports_to": ("hierarchy", "subordinate", None),
    "parent_of": ("kin", "parent", None),
    "mother_of": ("kin", "parent", "f"),
    "father_of": ("kin", "parent", "m"),
    "child_of": ("kin", "child", None),
    "son_of": ("kin", "child", "m"),
    "daughter_of": ("kin", "child", "f"),
    "sibling_of": ("kin", "sibling", None),
    "brother_of": ("kin", "sibling", "m"),
    "sister_of": ("kin", "sibling", "f"),
    "spouse_of": ("kin", "spouse", None),
    "husband_of": ("kin", "spouse", "m"),
    "wife_of": ("kin", "spouse", "f"),
}
_INVERSE_ROLE = {
    "superior": "subordinate",
    "subordinate": "superior",
    "parent": "child",
    "child": "parent",
    "sibling": "sibling",
    "spouse": "spouse",
}


@dataclass(frozen=True, slots=True)
class Issue:
    """One problem found in the text. ``span`` is the text it is about; ``triple_id`` the KG row involved."""

    kind: IssueKind
    message: str
    span: str
    triple_id: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class Claim:
    """A relation read from the text, with the matched text and where it starts."""

    subject: str
    predicate: str
    object: str
    span: str
    start: int


# ------------------------------------------------------------------------------------------- extraction

_WORD = r"[A-Z][^\W_]*(?:-[^\W_]+)*"
_NAME = rf"{_WORD}(?:[ \t]+{_WORD}){{0,3}}"
_ROLE = r"[a-z][a-z-]*"
_ACRONYM = r"[A-Z]{2,5}"
_END = r"(?=[ \t]*(?:[.,;:!?)\n]|$)|[ \t]+(?:and|but|at|in|on|since|until|from|for|now|again|too)\b)"
_LEFT = r"(?<![\w'’])"

_POSSESSIVE_RE = re.compile(
    rf"{_LEFT}(?P<x>{_NAME})\s+is\s+(?P<y>{_NAME})(?:'s|’s|'|’)\s+(?P<role>{_ROLE}){_END}"
)
_ROLE_OF_RE = re.compile(
    rf"{_LEFT}(?P<x>{_NAME})\s+is\s+(?:(?:the|a|an)\s+(?P<role>{_ROLE}|{_ACRONYM})|(?P<acr>{_ACRONYM}))"
    rf"\s+of\s+(?:the\s+)?(?P<y>{_NAME})"
)
_WORKS_RE = re.compile(rf"{_LEFT}(?P<x>{_NAME})\s+works\s+(?:at|for)\s+(?:the\s+)?(?P<y>{_NAME})")


def _clean_name(raw: str) -> str | None:
    """Drop leading sentence words ("Yesterday Alice" -> "Alice"); None if nothing name-like is left."""
    words = raw.split()
    while words and words[0].lower() in STOPWORDS:
        words.pop(0)
    if not words or all(w.lower() in STOPWORDS for w in words):
        return None
    return " ".join(words)


def extract_claims(text: str) -> list[Claim]:
    """Relations asserted by ``text`` in one of the three supported shapes, in text order, deduplicated."""
    found: list[Claim] = []
    for pattern in (_POSSESSIVE_RE, _ROLE_OF_RE, _WORKS_RE):
        for m in pattern.finditer(text):
            subject, obj = _clean_name(m.group("x")), _clean_name(m.group("y"))
            if subject is None or obj is None or subject.casefold() == obj.casefold():
                continue
            if pattern is _WORKS_RE:
                predicate = "works_at"
            else:
                role = m.group("role") or m.group("acr")
                predicate = normalize_predicate(role) + "_of"
            start = m.start("x") + m.group("x").find(subject.split()[0])
            found.append(Claim(subject, predicate, obj, text[start : m.end()], start))
    found.sort(key=lambda c: c.start)
    seen: set[tuple[str, str, str]] = set()
    out: list[Claim] = []
    for claim in found:
        key = (claim.subject.casefold(), claim.predicate, claim.object.casefold())
        if key not in seen:
            seen.add(key)
            out.append(claim)
    return out


def extract_triples(text: str) -> list[tuple[str, str, str]]:
    """(subject, predicate, object) triples asserted by ``text``; see the module docstring for the shapes."""
    return [(c.subject, c.predicate, c.object) for c in extract_claims(text)]


# ------------------------------------------------------------------------------------------- checking


def _canon(predicate: str) -> str:
    p = normalize_predicate(predicate)
    return PREDICATE_ALIASES.get(p, p)


def _same(a: str, b: str) -> bool:
    return a.casefold() == b.casefold()


def _describe(t: Triple) -> str:
    since = f" since {t.valid_from}" if t.valid_from else ""
    until = f" until {t.valid_to}" if t.valid_to else ""
    return f"{t.subject} {t.predicate} {t.object} (triple {t.id}{since}{until})"


def _relation_clash(claim: Claim, known: Triple) -> bool:
    """Does ``known`` (between the claim's two entities, either direction) contradict the claim?"""
    mine = INCOMPATIBLE_ROLES.get(_canon(claim.predicate))
    theirs = INCOMPATIBLE_ROLES.get(_canon(known.predicate))
    if mine is None or theirs is None:
        return False
    family, role, gender = theirs
    if not _same(known.subject, claim.subject):  # known runs object -> subject: see it from our subject
        role, gender = _INVERSE_ROLE[role], None
    if family != mine[0]:
        return False
    return role != mine[1] or (gender is not None and mine[2] is not None and gender != mine[2])


def _name_issues(text: str, known: Iterable[str]) -> list[tuple[int, Issue]]:
    candidates: dict[str, str] = {}  # casefolded -> as known
    for entity in known:
        for form in (entity, *entity.split()):
            if len(form) >= MIN_NAME_LENGTH:
                candidates.setdefault(form.casefold(), form)
    if not candidates:
        return []
    keys = list(candidates)
    out: list[tuple[int, Issue]] = []
    done: set[str] = set()
    for m in re.finditer(r"(?<![\w'’])[^\W\d_]{4,}(?![\w])", text):
        token = m.group(0)
        folded = token.casefold()
        if not token[0].isupper() or folded in done or folded in candidates or folded in STOPWORDS:
            continue
        done.add(folded)
        matches = process.extract(
            folded, keys, scorer=Levenshtein.distance, score_cutoff=MAX_NAME_DISTANCE, limit=None
        )
        # Ties on Levenshtein distance go to the candidate with fewer edits when a swap of two neighbouring
        # letters counts as one ("Alcie" is nearer "Alice" than "Acme").
        close = sorted((int(score), OSA.distance(folded, key), key) for key, score, _ in matches if score > 0)
        if not close:
            continue
        distance, _, key = close[0]
        out.append(
            (
                m.start(),
                Issue(
                    "name",
                    f"'{token}' is not a known entity but is {distance} edit(s) from '{candidates[key]}'",
                    token,
                ),
            )
        )
    return out


def fact_check(
    text: str,
    kg: KnowledgeGraph,
    *,
    today: str | None = None,
    known_entities: Iterable[str] = (),
) -> list[Issue]:
    """Issues in ``text`` against ``kg`` (read only), in text order.

    ``today`` (ISO date or datetime, default now in UTC) decides which triples are current and which have
    ended. ``known_entities`` adds names (e.g. from the people map) to the ones the graph knows.
    """
    now = normalize_date(today) if today is not None else normalize_date(datetime.now(UTC))
    found = _name_issues(text, [*kg.entities(), *known_entities])

    for claim in extract_claims(text):
        canon = _canon(claim.predicate)
        said = f"{claim.subject} {claim.predicate} {claim.object}"
        history = [
            t
            for t in kg.query(subject=claim.subject, object=claim.object, include_expired=True)
            if _canon(t.predicate) == canon
        ]
        if history and not any(t.is_valid_at(now) for t in history):
            ended = [t for t in history if t.valid_to is not None and t.valid_to <= now]
            if ended:
                last = max(ended, key=lambda t: (t.valid_to or "", t.id))
                found.append(
                    (
                        claim.start,
                        Issue(
                            "stale",
                            f"'{claim.span}' states {said}, but that ended on {last.valid_to}: "
                            + _describe(last),
                            claim.span,
                            last.id,
                        ),
                    )
                )

        between = kg.query(subject=claim.subject, object=claim.object, as_of=now)
        between += kg.query(subject=claim.object, object=claim.subject, as_of=now)
        for t in sorted(between, key=lambda t: t.id):
            if _relation_clash(claim, t):
                found.append(
                    (
                        claim.start,
                        Issue(
                            "contradiction",
                            f"'{claim.span}' says {said}, but the knowledge graph has {_describe(t)}",
                            claim.span,
                            t.id,
                        ),
                    )
                )

        if canon in SINGLE_VALUED:
            for t in kg.query(subject=claim.subject, as_of=now):
                if _canon(t.predicate) == canon and not _same(t.object, claim.object):
                    found.append(
                        (
                            claim.start,
                            Issue(
                                "contradiction",
                                f"conflict: '{claim.span}' says {said}, but the knowledge graph has "
                                f"{_describe(t)} and {canon} holds one value at a time",
                                claim.span,
                                t.id,
                            ),
                        )
                    )

    found.sort(key=lambda pair: pair[0])
    return [issue for _, issue in found]
