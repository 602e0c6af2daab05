"""What a text says about itself: the emotions it triggers, the importance flags it carries, entity codes.

Pure: standard library only. Triggers and markers are matched case-insensitively as whole words.
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from collections.abc import Iterator, Sequence

from mempald.features.aaak.model import FLAGS, AAAKError

#: Emotion code -> words and phrases that trigger it (matched case-insensitively as whole words).
EMOTION_TRIGGERS: dict[str, tuple[str, ...]] = {
    "joy": ("joy", "joyful", "happy", "happiness", "delighted", "glad", "cheerful"),
    "fear": ("fear", "feared", "afraid", "scared", "terrified", "frightened"),
    "trust": ("trust", "trusted", "trusting", "trustworthy", "rely on", "relied on", "count on"),
    "grief": ("grief", "grieve", "grieving", "mourn", "mourning", "mourned", "heartbroken"),
    "wonder": ("wonder", "wondered", "marvel", "marvelous", "magical"),
    "rage": ("rage", "furious", "angry", "anger", "livid", "outraged"),
    "love": ("love", "loved", "loving", "adore", "adored"),
    "hope": ("hope", "hoped", "hoping", "hopeful", "hopefully"),
    "desp": ("despair", "hopeless", "desperate", "gave up", "giving up"),
    "peace": ("peace", "peaceful", "calm", "serene", "at ease"),
    "humor": ("funny", "hilarious", "joke", "joked", "joking", "laughed", "lol", "haha"),
    "tens": ("tension", "tense", "strained", "friction", "argued", "argument", "heated"),
    "vul": ("vulnerable", "vulnerability", "opened up", "confessed", "admitted"),
    "pride": ("proud", "pride"),
    "shame": ("ashamed", "shame", "embarrassed", "embarrassing", "humiliated"),
    "relief": ("relief", "relieved", "phew"),
    "anx": ("anxious", "anxiety", "worried", "worry", "worrying", "nervous", "stressed"),
    "curious": ("curious", "curiosity", "intrigued", "wondering"),
    "grat": ("grateful", "gratitude", "thankful", "thanks", "thank you", "appreciate", "appreciated"),
    "frust": ("frustrated", "frustrating", "frustration", "annoyed", "annoying", "irritated", "fed up"),
    "determ": ("determined", "determination", "persevere", "persisted", "no matter what", "won't give up"),
    "confus": ("confused", "confusing", "confusion", "puzzled", "baffled"),
    "excite": ("excited", "exciting", "excitement", "thrilled", "can't wait"),
    "nostal": ("nostalgia", "nostalgic", "remember when", "back then", "old days"),
    "lonely": ("lonely", "loneliness", "alone", "isolated"),
    "awe": ("awe", "awestruck", "breathtaking", "stunning", "mind-blowing"),
    "doubt": ("doubt", "doubted", "doubtful", "unsure", "uncertain", "skeptical", "hesitant"),
    "satis": ("satisfied", "satisfying", "satisfaction", "pleased", "gratifying"),
    "surpr": ("surprised", "surprising", "surprise", "unexpected", "unexpectedly", "shocked", "wow"),
}

#: Flag -> marker words and phrases (whole words, case-insensitive). TECHNICAL also fires on code-ish text.
FLAG_MARKERS: dict[str, tuple[str, ...]] = {
    "DECISION": ("decided", "decide", "decides", "deciding", "decision", "decisions", "chose", "chosen",
                 "went with", "going with", "settled on", "agreed to", "agreed on", "opted for"),
    "ORIGIN": ("started", "founded", "founding", "began", "kicked off", "inception", "from scratch"),
    "CORE": ("always", "core", "fundamental", "principle", "principles", "non-negotiable", "essential"),
    "PIVOT": ("pivot", "pivoted", "pivoting", "changed direction", "change of direction", "changed course",
              "switched to", "switching to"),
    "TECHNICAL": ("api", "schema", "endpoint", "refactor", "refactored", "regex", "compiler", "traceback",
                  "stack trace", "sql", "json", "http", "cli", "function", "database"),
    "MILESTONE": ("shipped", "released", "launched", "deployed", "went live", "merged", "milestone",
                  "completed"),
    "PROBLEM": ("bug", "bugs", "error", "errors", "crash", "crashed", "crashes", "failed", "failing",
                "failure", "broken", "broke", "exception", "regression", "incident", "incidents",
                "corrupted", "leak", "doesn't work", "does not work"),
}

#: English function words and chat filler that are never topics or names.
_STOPWORDS_TEXT = """
    a about above after again against all also am an and any are aren as at be because been before being
    below between both but by can cannot could couldn did didn do does doesn doing don down during each
    few for from further had hadn has hasn have haven having he her here hers herself him himself his how
    i if in into is isn it its itself just let ll me more most much my myself no nor not now of off on
    once only or other ought our ours ourselves out over own re same shan she should shouldn so some such
    than that the their theirs them themselves then there these they this those through to too under
    until up ve very was wasn we were weren what when where which while who whom why will with won would
    wouldn you your yours yourself yourselves yes yeah okay ok sure well really actually basically maybe
    thing things stuff lot lots get got gets getting make made makes making like just one two three
    first second also still even ever every via per etc new use used using want wanted need needed know
    think thought going go goes went said say says see seen look looks way ways time times day days
    today tomorrow yesterday tonight however though although since already yet again back right left
    please thanks hello hey hi let's here's there's it's that's what's i'm you're we're they're
    monday tuesday wednesday thursday friday saturday sunday january february march april may june july
    august september october november december would could should might must shall can't won't don't
honestly literally ultimately afterward afterwards probably definitely certainly totally pretty quite
long kept keep keeps stayed stay tried try tries pushing pointing wrote write writes written told tell
whole entire tough big small good bad great nice lots kind sort able done doing says take took taken
come came comes gave give gives put puts let's hmm ah oh
"""
STOPWORDS: frozenset[str] = frozenset(_STOPWORDS_TEXT.split())

_EMOTION_TRIGGER_RE: dict[str, re.Pattern[str]] = {}
_FLAG_RE: dict[str, re.Pattern[str]] = {}


def phrase_re(phrases: Sequence[str]) -> re.Pattern[str]:
    """One pattern matching any of ``phrases`` as whole words (longest first), case-insensitively."""
    ordered = sorted(phrases, key=len, reverse=True)
    alternatives = "|".join(re.escape(p).replace(r"\ ", r"\s+") for p in ordered)
    return re.compile(rf"(?<![\w'])(?:{alternatives})(?![\w'])", re.IGNORECASE)


for _code, _triggers in EMOTION_TRIGGERS.items():
    _EMOTION_TRIGGER_RE[_code] = phrase_re(_triggers)
for _flag, _markers in FLAG_MARKERS.items():
    _FLAG_RE[_flag] = phrase_re(_markers)

_CODEISH_RE = re.compile(
    r"`"
    r"|\b\w+\.(?:py|pyi|rs|ts|tsx|js|jsx|go|java|kt|c|h|cc|cpp|hpp|rb|php|cs|swift|toml|json|yaml|yml|sql|sh|ini|cfg)\b"
    r"|\b[a-z][a-z0-9]*_[a-z0-9_]+\b"
    r"|\b[a-z]+[A-Z]\w*\("
    r"|\w\(\)"
    r"|::|=>|\{\}|\[\]"
    r"|\b(?:def|fn|struct|impl|async def|SELECT|INSERT|UPDATE|CREATE TABLE)\s"
)



def norm_quotes(text: str) -> str:
    """``text`` with typographic single quotes made ASCII, so "don\u2019t" matches "don't"."""
    return text.replace("\u2019", "'").replace("\u2018", "'")


def detect_emotions(text: str, *, limit: int = 3) -> tuple[str, ...]:
    """Emotion codes triggered in ``text``, in order of first occurrence (at most ``limit``)."""
    text = norm_quotes(text)
    found: list[tuple[int, int, str]] = []
    for order, (code, pattern) in enumerate(_EMOTION_TRIGGER_RE.items()):
        m = pattern.search(text)
        if m is not None:
            found.append((m.start(), order, code))
    found.sort()
    return tuple(code for _, _, code in found[:limit])


def detect_flags(text: str) -> tuple[str, ...]:
    """Importance flags whose markers occur in ``text``, in ``FLAGS`` order."""
    text = norm_quotes(text)
    out: list[str] = []
    for flag in FLAGS:
        hit = _FLAG_RE[flag].search(text) is not None
        if flag == "TECHNICAL" and not hit:
            hit = _CODEISH_RE.search(text) is not None
        if hit:
            out.append(flag)
    return tuple(out)


def _ascii_letters(name: str) -> str:
    decomposed = unicodedata.normalize("NFKD", name)
    return "".join(ch for ch in decomposed.upper() if "A" <= ch <= "Z")


def entity_code(name: str, taken: set[str] | frozenset[str] = frozenset()) -> str:
    """A 3-character uppercase code for ``name`` that is not in ``taken``.

    First choice: the first three letters (Alice -> ALI). On a clash: the first letter with two later
    letters in order (ALC, ALE, ...), then the first two letters and a digit, then the first letter and two
    digits. Accents are folded (Zoë -> ZOE); names with fewer than three letters are padded with X.
    """
    letters = _ascii_letters(name) or "X"
    letters = letters.ljust(3, "X")
    candidates: Iterator[str] = itertools.chain(
        (letters[:3],),
        (letters[0] + a + b for a, b in itertools.combinations(letters[1:], 2)),
        (letters[:2] + str(d) for d in range(2, 10)),
        (f"{letters[0]}{n:02d}" for n in range(100)),
        (f"{a}{n:02d}" for a in "ABCDEFGHIJKLMNOPQRSTUVWXYZ" for n in range(100)),
    )
    for cand in candidates:
        if cand not in taken:
            return cand
    raise AAAKError("no free entity code left")

