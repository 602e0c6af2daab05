"""Always / never instructions in what the user typed, each turned into a draft rule (pure).

A sentence of a user prompt is a candidate when it states a standing instruction: "never ...", "don't ever
...", "do not ever ...", "always ...", "don't/do not ... without ..." (English only). The draft's pattern is
what the sentence names that a command would contain: a `code span` first (``never run `rm -rf /` ``), else
"X, not Y" / "instead of Y" (the thing not to use: ``always use pnpm, not npm`` -> ``\\bnpm\\b``), else the
first known action it names (push, force push, commit, merge, deploy, migrations, rm -rf, reset --hard, ...)
with the branch or target that follows (``never push to main`` -> ``git\\s+push\\b.*\\bmain\\b``). A sentence
naming nothing a command would contain is not proposed: a rule without a pattern cannot hold. "never" sentences
deny; "always" and "without" sentences ask (the user can still do it, after a look).

Only the user's own turn is read: the lines a drawer quotes with ``> `` in its first piece (``Exchange.render``);
an injected context or an answer never is.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from dataclasses import dataclass

from mempald.errors import InvalidInput
from mempald.features.rule_check import check_pattern

MAX_SENTENCE = 300
_SENTENCES = re.compile(r"[^.!?\n]+[.!?]?")
# an instruction starts the sentence (after a few lead-in words): "data never before available" is not one
_LEAD = (r"^(?:[-*\u2022>]\s*)?(?:(?:please|and|but|also|so|remember(?:\s+to)?|important:?|note:?|rule:?|from\s+now"
         r"\s+on,?|going\s+forward,?|you\s+(?:should|must)|we\s+(?:should|must)|i\s+want\s+you\s+to)\s+){0,3}")
_NEVER = re.compile(_LEAD + r"(?:never|don'?t\s+ever|do\s+not\s+ever)\b", re.I)
_ALWAYS = re.compile(_LEAD + r"always\b", re.I)
_WITHOUT = re.compile(_LEAD + r"(?:don'?t|do\s+not)\b.{1,120}?\bwithout\b", re.I)
_CODE = re.compile(r"`([^`\n]{2,80})`")
_INSTEAD = re.compile(r"\b(?:instead\s+of|rather\s+than|,?\s*not)\s+(?:using\s+|with\s+)?([A-Za-z][\w.+-]{1,30})\b",
                      re.I)
_FILLER = {"the", "a", "an", "to", "it", "that", "this", "be", "do", "just", "only", "so", "yet", "sure", "ever",
           "always", "never", "me", "you", "any", "anything", "without", "before"}
# action words -> the pattern a command doing it contains
_ACTIONS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\bforce[- ]?push", re.I), r"git\s+push\b.*(--force|-f\b)"),
    (re.compile(r"\bpush(?:es|ing)?\b", re.I), r"git\s+push\b"),
    (re.compile(r"\bcommit(?:s|ting)?\b", re.I), r"git\s+commit\b"),
    (re.compile(r"\bmerg(?:e|es|ing)\b", re.I), r"git\s+merge\b"),
    (re.compile(r"\brebas(?:e|es|ing)\b", re.I), r"git\s+rebase\b"),
    (re.compile(r"\breset\s+--hard\b", re.I), r"git\s+reset\s+--hard\b"),
    (re.compile(r"\brm\s+-rf?\b", re.I), r"\brm\s+-\w*r"),
    (re.compile(r"\bmigrat(?:e|es|ion|ions|ing)\b", re.I), r"migrat"),
    (re.compile(r"\bdeploy(?:s|ing|ment)?\b", re.I), r"deploy"),
    (re.compile(r"\bdrop\s+(?:the\s+)?(?:table|database)", re.I), r"(?i)\bdrop\s+(table|database)\b"),
    (re.compile(r"\bsudo\b", re.I), r"\bsudo\b"),
    (re.compile(r"\bnpm\b", re.I), r"\bnpm\b"),
    (re.compile(r"\bpip\s+install\b", re.I), r"\bpip\s+install\b"),
)
_TARGET = re.compile(r"\b(?:to|on|into|against|in)\s+(?:the\s+)?(main|master|prod|production|staging|release)\b",
                     re.I)


@dataclass(frozen=True, slots=True)
class Draft:
    sentence: str
    tool: str
    pattern: str
    decision: str


def user_turn(drawer_text: str) -> str:
    """The user's prompt in a drawer's text: its leading ``> `` lines."""
    lines: list[str] = []
    for line in drawer_text.splitlines():
        if line.startswith("> ") or line == ">":
            lines.append(line[2:])
        elif lines or line.strip():
            break
    return "\n".join(lines)


def instructions(prompt: str) -> Iterator[tuple[str, str]]:
    """(sentence, decision) for every always / never instruction in ``prompt``."""
    for m in _SENTENCES.finditer(prompt):
        sentence = " ".join(m.group(0).split())
        if len(sentence) < 8 or len(sentence) > MAX_SENTENCE or sentence.endswith("?"):
            continue
        if _NEVER.search(sentence):
            yield sentence, "deny"
        elif _WITHOUT.search(sentence) or _ALWAYS.search(sentence):
            yield sentence, "ask"


def draft_pattern(sentence: str) -> str:
    """The draft pattern of an instruction, "" when it names nothing a command would contain."""
    code = _CODE.search(sentence)
    if code:
        words = code.group(1).strip().split()
        return r"\s+".join(re.escape(w) for w in words)
    instead = _INSTEAD.search(sentence)
    if instead and instead.group(1).lower() not in _FILLER:
        return rf"\b{re.escape(instead.group(1))}\b"
    for action, pattern in _ACTIONS:
        if action.search(sentence):
            target = _TARGET.search(sentence)
            return pattern + (rf".*\b{target.group(1).lower()}\b" if target and pattern.startswith("git") else "")
    return ""


def drafts(prompt: str) -> list[Draft]:
    out: list[Draft] = []
    for sentence, decision in instructions(prompt):
        pattern = draft_pattern(sentence)
        if not pattern:
            continue
        try:
            check_pattern(pattern)
        except InvalidInput:
            continue
        out.append(Draft(sentence, "Bash", pattern, decision))
    return out


def suggestion_id(drawer_id: str, sentence: str) -> str:
    return "s" + hashlib.sha1(f"{drawer_id}\n{sentence}".encode()).hexdigest()[:8]
