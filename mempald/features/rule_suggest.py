"""Always / never instructions in what the user typed, each turned into a draft rule (pure).

A sentence of a user prompt is a candidate when it states a standing instruction: "never ...", "don't ever
...", "do not ever ...", "always ...", "don't/do not ... without ..." (English only). The draft's pattern is
what the sentence names that a command would contain: a `code span` first (``never run `rm -rf /` ``), else
"X, not Y" / "instead of Y" (the thing not to use: ``always use pnpm, not npm`` -> ``\\bnpm\\b``), else the
first known action it names (push, force push, commit, merge, deploy, migrations, rm -rf, reset --hard, ...)
with the branch or target that follows (``never push to main`` -> ``git\\s+push\\b.*\\bmain\\b``). A sentence
naming nothing a command would contain is not proposed: a rule without a pattern cannot hold. "never" sentences
deny; "always" sentences and conditions ("never ... without / unless / before ...") ask (the user can still do
it, after a look).

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
_SENTENCES = re.compile(r"(?:[^.!?\n]|[.!?](?=\S))+[.!?]*")  # a stop inside a word (.env, a.py) does not end one
# an instruction starts the sentence (after a few lead-in words): "data never before available" is not one
_LEAD = (r"^(?:[-*\u2022>]\s*)?(?:[\w ,']{1,30}:\s*)?"  # a list mark, a lead-in ("One more thing:")
         r"(?:(?:please|and|but|also|so|remember(?:\s+to)?|important:?|note:?|rule:?|from\s+now"
         r"\s+on,?|going\s+forward,?|you\s+(?:should|must)|we\s+(?:should|must)|i\s+want\s+you\s+to)\s+){0,3}")
_NEVER = re.compile(_LEAD + r"(?:never|don'?t\s+ever|do\s+not\s+ever)\b", re.I)
_ALWAYS = re.compile(_LEAD + r"always\b", re.I)
_WITHOUT = re.compile(_LEAD + r"(?:don'?t|do\s+not)\b.{1,120}?\bwithout\b", re.I)
_CODE = re.compile(r"`([^`\n]{2,80})`")
_INSTEAD = re.compile(r"(?:\binstead\s+of|\brather\s+than|,\s*(?:and\s+)?not)\s+(?:using\s+|with\s+)?`?"
                      r"([A-Za-z][\w.+-]{1,30}(?:\s+(?:install|add|run|i)\b)?)", re.I)
_PATH = re.compile(r"(?<![\w`])((?:[\w.-]+/)+[\w.-]*|[\w-]*\.(?:env|py|ts|js|json|toml|ya?ml|lock|sql|cfg|ini)\b)")
_FILE_VERBS = re.compile(r"\b(?:edit|touch|modify|change|write|overwrite)\w*\b", re.I)
_DELETE = re.compile(r"\b(?:delete|remove)\w*\b", re.I)
_BEFORE = re.compile(r"\b(?:before|when)\s+(?:you\s+|we\s+)?(\w+(?:\s+\w+)?)", re.I)
_USE = re.compile(r"\b(?:use|run|call)\s+(?:the\s+)?`?([A-Za-z][\w+-]{1,30})\b", re.I)
FILE_TOOLS = "Edit|Write|MultiEdit|NotebookEdit"
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
    (re.compile(r"\bdrop\s+(?:the\s+)?(?:table|database)", re.I), r"(?i)\bdrop\s+(table|database)\b"),
    (re.compile(r"\bmigrat(?:e|es|ion|ions|ing)\b", re.I), r"migrat"),
    (re.compile(r"\bdeploy(?:s|ing|ment)?\b", re.I), r"deploy"),
    (re.compile(r"\bsudo\b", re.I), r"\bsudo\b"),
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
        if _NEVER.search(sentence):  # "never X without Y": X is allowed once Y is done, so the host asks
            yield sentence, "ask" if re.search(r"\b(?:without|unless|before)\b", sentence, re.I) else "deny"
        elif _WITHOUT.search(sentence) or _ALWAYS.search(sentence):
            yield sentence, "ask"


def _action(text: str) -> str:
    for action, pattern in _ACTIONS:
        if action.search(text):
            target = _TARGET.search(text)
            return pattern + (rf".*\b{target.group(1).lower()}\b" if target and pattern.startswith("git") else "")
    return ""


def _literal(text: str) -> str:
    words = text.strip().split()
    body = r"\s+".join(re.escape(w) for w in words)
    return body + (r"\b" if words and re.match(r"\w", words[-1][-1]) else "")


def draft(sentence: str, always: bool) -> tuple[str, str] | None:
    """(tool, pattern) of an instruction's draft, None when it names nothing a tool call would contain. What not
    to use ("X, not Y", "instead of Y") fires at the start of a command; "always X before Y" asks at Y; a "never"
    names what fires: a `code span`, a file or folder it must not edit (the file tools) or delete, an action."""
    instead = _INSTEAD.search(sentence)
    if instead and instead.group(1).split()[0].lower() not in _FILLER:
        return "Bash", r"(?:^|[;&|(]\s*)" + _literal(instead.group(1).rstrip(".+-"))
    if always:
        before = _BEFORE.search(sentence)
        pattern = _action(before.group(1)) if before else _action(_CODE.sub("", sentence))
        return ("Bash", pattern) if pattern else None
    code = _CODE.search(sentence)
    if code:
        return "Bash", _literal(code.group(1))
    path = _PATH.search(sentence)
    if path and _FILE_VERBS.search(sentence):
        return FILE_TOOLS, re.escape(path.group(1))
    if path and _DELETE.search(sentence):
        return "Bash", r"\brm\b.*" + re.escape(path.group(1))
    pattern = _action(sentence)
    if pattern:
        return "Bash", pattern
    use = _USE.search(sentence)
    if use and use.group(1).lower() not in _FILLER:
        return "Bash", r"(?:^|[;&|(]\s*)" + _literal(use.group(1))
    return None


def drafts(prompt: str) -> list[Draft]:
    out: list[Draft] = []
    for sentence, decision in instructions(prompt):
        made = draft(sentence, always=not _NEVER.search(sentence))
        if made is None:
            continue
        try:
            check_pattern(made[1])
        except InvalidInput:
            continue
        out.append(Draft(sentence, made[0], made[1], decision))
    return out


def suggestion_id(drawer_id: str, sentence: str) -> str:
    return "s" + hashlib.sha1(f"{drawer_id}\n{sentence}".encode()).hexdigest()[:8]
