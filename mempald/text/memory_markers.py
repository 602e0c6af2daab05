"""The memory types and the weighted regex markers of each, the table behind ``classify.classify_memory``.

Pure data (stdlib only). Patterns are matched against lower-cased prose, code stripped first.

Also here: ``RESOLUTION``, the markers that an exchange about a problem holds its fix or its diagnosis (a problem
with a fix is a memory worth a wake-up line; a bare complaint is not), and ``BOILERPLATE``, the line openings that
are never a statement of the user's or the agent's (injected context, tool summaries, pleasantries).
"""

from __future__ import annotations

MEMORY_TYPES: tuple[str, ...] = ("decision", "preference", "milestone", "problem", "emotional")

# (pattern, weight). Patterns are matched against lower-cased prose and never start inside a word; each
# marker counts once per text, so a long exchange that says "error" twenty times is not twenty times more
# of a problem.
MARKERS: dict[str, list[tuple[str, float]]] = {
    "decision": [
        (r"\bwe(?: have|'ve)? decided\b", 3.0),
        (r"\bdecided (?:to|on|against|that)\b", 2.5),
        (r"\bthe decision (?:is|was)\b", 2.5),
        (r"\blet'?s go with\b", 2.5),
        (r"\b(?:went|going) with\b", 2.0),
        (r"\bcho(?:se|sen) \w+(?: \w+)? over\b", 3.0),
        (r"\b(?:chose|chosen)\b", 1.5),
        (r"\bopted (?:for|to|against)\b", 2.5),
        (r"\bsettled on\b", 2.5),
        (r"\bstick(?:ing)? with\b", 2.0),
        (r"\binstead of\b", 0.8),
        (r"\brather than\b", 0.8),
        (r"\bin favou?r of\b", 2.0),
        (r"\bthe plan is\b", 2.0),
        (r"\bwe(?:'ll| will) (?:use|go|keep)\b", 1.5),
        (r"\blet'?s (?:use|keep|switch|do)\b", 1.5),
        (r"\bswitch(?:ed|ing)? (?:to|from|over)\b", 1.5),
        (r"\bmigrat(?:e|ed|ing) (?:to|from|away)\b", 1.5),
        (r"\btrade-?offs?\b", 1.5),
        (r"\bpros and cons\b", 1.0),
        (r"\bagreed (?:to|on|that)\b", 2.0),
        # an agent logging a choice: "Recording **WCAG 2.1 AA** as the accessibility standard"
        (r"\brecord(?:ing|ed) \*\*|\brecord(?:ing|ed)\b[^.\n]{0,100}\b(?:as the|for the|as our)\b", 2.5),
        (r"\b(?:we|i)(?:'ll| will) (?:use|go with|keep)\b[^.\n]{0,60}\b(?:instead|from now)\b", 1.0),
        (r"\bgoing forward\b", 1.5),
        (r"\b(?:architecture )?decision record\b|\badr-?\d+\b", 2.0),
        (r"\bbecause\b", 0.5),
    ],
    "preference": [
        (r"\b(?:i|we) (?:really |strongly |generally )?prefer\b", 3.0),
        (r"\bprefer(?:red|ably|ence)?\b", 1.0),
        (r"\balways use\b", 3.0),
        (r"\bnever use\b", 3.0),
        (r"\b(?:always|never) (?:do|write|put|add|run|commit|call|name)\b", 2.0),
        (r"\b(?:i|we) (?:really )?(?:like|dislike|hate|can'?t stand)\b", 2.0),
        (r"\b(?:don'?t|do not) (?:ever )?use\b", 2.0),
        (r"\bavoid (?:using )?\w+", 1.0),
        (r"\bplease (?:always|never|don'?t|do not)\b", 2.5),
        (r"\bmy (?:preference|style|convention|rule)\b", 2.5),
        (r"\b(?:our|the) convention is\b", 2.5),
        (r"\bi want (?:you|it) to (?:always|never)\b", 2.5),
        (r"\bfrom now on\b|\bfrom this point on\b|\bgoing forward\b[^.\n]{0,40}\balways\b", 2.0),
        (r"\bstanding instruction\b", 2.0),
        (r"\bi(?:'d| would) rather\b", 2.0),
        (r"\bstyle guide\b", 1.5),
        (r"\bfavou?rite\b", 1.5),
        (r"\bmake sure (?:to|you|it)\b", 1.0),
        (r"\bby default\b", 0.5),
    ],
    "milestone": [
        (r"\bshipped\b", 3.0),
        (r"\breleased\b", 0.6),
        (r"\brelease[sd]? v?\d+\.\d+", 3.0),
        (r"\bv\d+\.\d+(?:\.\d+)?\b", 1.5),
        (r"\bfinally (?:works?|working|worked|passes|passing|green|done|fixed|running)\b", 3.0),
        (r"\b(?:it|everything) works(?: now)?\b|\bworks now\b|\bnow works\b", 2.0),
        (r"\bmerged\b", 0.4),
        (r"\bdeployed to (?:prod(?:uction)?|staging|the server)\b", 2.5),
        (r"\bdeployed\b", 0.8),
        (r"\blaunched\b", 2.5),
        (r"\bwent live\b|\bis (?:now )?live\b", 2.5),
        (r"\bbreakthrough\b", 3.0),
        (r"\bmilestone\b", 2.0),
        (r"\bcompleted\b", 0.4),
        (r"\ball (?:the )?tests (?:pass|passing|green)\b", 2.5),
        (r"\bfirst (?:working|successful)\b", 2.5),
        (r"\bgot it working\b|\bnailed it\b", 2.5),
        (r"\bup and running\b", 2.0),
        (r"\bpublished\b", 1.0),
        (r"\bcut (?:a|the) release\b", 3.0),
    ],
    "problem": [
        (r"\bbugs?\b", 1.5),
        (r"\berrors?\b", 1.5),
        (r"\bexceptions?\b", 1.0),
        (r"\bfail(?:s|ed|ing|ure|ures)?\b", 1.5),
        (r"\bcrash(?:es|ed|ing)?\b", 2.0),
        (r"\bbroken\b|\bbroke\b", 2.0),
        (r"\btraceback\b", 2.5),
        (r"\bstack ?trace\b", 2.0),
        (r"\b(?:does|did)(?:n'?t| not) work\b|\bis(?:n'?t| not) working\b|\bnot working\b", 2.5),
        (r"\bkeeps? (?:failing|crashing|breaking|timing out)\b", 3.0),
        (r"\broot cause\b", 3.0),
        (r"\bthe fix (?:was|is)\b", 3.0),
        (r"\bfixed\b", 1.5),
        (r"\bregression\b", 2.0),
        (r"\bsegfault\b|\bsegmentation fault\b", 2.5),
        (r"\bdeadlock\b|\brace condition\b|\bhangs\b", 2.0),
        (r"\bmemory leak\b", 2.5),
        (r"\btim(?:es|ed|ing) out\b|\btimeout\b", 1.0),
        (r"\bworkaround\b", 2.0),
        (r"\bproblem\b", 1.5),
        (r"\bissue\b", 1.0),
        (r"\bunexpected(?:ly)?\b", 1.0),
        (r"\b(?:type|value|key|attribute|import|runtime|index|name|os|permission|filenotfound|syntax)error\b", 2.0),
    ],
    "emotional": [
        (r"\bfrustrat(?:ed|ing|ion)\b", 3.0),
        (r"\b(?:i|we) (?:really |just )?love\b(?! to\b)|\blove (?:this|it|that|you)\b|\bloved\b", 2.5),
        (r"\bworried\b|\bworrying\b|\banxious\b", 2.5),
        (r"\bexcited\b|\bexciting\b", 2.5),
        (r"\bthank you so much\b|\bthanks so much\b|\bthank you!", 3.0),
        (r"\bgrateful\b|\bthankful\b", 3.0),
        (r"\bproud\b", 2.5),
        (r"\bscared\b|\bafraid\b|\bterrified\b", 2.5),
        (r"\bhappy\b(?! to\b)|\bdelighted\b|\bthrilled\b", 2.0),
        (r"\bsad\b|\bupset\b|\bdisappointed\b|\bheartbroken\b", 2.5),
        (r"\bangry\b|\bannoyed\b|\bfurious\b|\bfed up\b", 2.5),
        (r"\boverwhelmed\b|\bexhausted\b|\bstressed\b|\bburn(?:ed|t) out\b", 2.5),
        (r"\brelieved\b|\brelief\b", 2.0),
        (r"\bamazing\b|\bawesome\b|\bwow\b", 1.5),
        (r"\bi feel\b|\bi'?m feeling\b", 1.5),
        (r"\bugh+\b|\bargh+\b", 2.0),
        (r"\byou(?:'re| are) the best\b", 2.5),
        (r"\bhate (?:this|it)\b", 1.5),
        (r"!{2,}", 1.0),
        (r"[❤♥😀😂😊😍😭😤😡🎉🙏🥳]", 1.5),
    ],
}

# An exchange about a problem that says what fixed it (or what caused it). (pattern, weight); matched like MARKERS.
RESOLUTION: list[tuple[str, float]] = [
    (r"\bthe fix (?:is|was)\b", 3.0),
    (r"\bfixed (?:it|by|the|this|that)\b", 2.5),
    (r"\b(?:this|that|which) (?:fixes|resolves|solves)\b", 2.5),
    (r"\bresolved\b", 2.0),
    (r"\bthe solution (?:is|was)\b", 2.5),
    (r"\broot cause\b", 2.5),
    (r"\b(?:was|is|were) caused by\b", 2.5),
    (r"\b(?:error|exception|issue|problem|warning)\b[^.\n]{0,120}\b(?:means|indicates)\b", 2.5),
    (r"\bto fix (?:this|it|the)\b", 2.0),
    (r"\bworkaround\b", 2.0),
    (r"\bworks now\b|\bnow works\b|\bwith no errors\b|\bstarts without errors\b", 2.0),
    (r"\b(?:happens|occurs) (?:because|when)\b", 1.5),
    (r"\bwe need to\b|\byou need to\b", 0.5),
]
RESOLUTION_THRESHOLD = 2.0

# Openings of lines that are never a story line: context injected by the tools, summaries of tool calls and
# slash-command wrappers (matched case-insensitively at the start of a line or sentence).
BOILERPLATE: tuple[str, ...] = (
    "this session is being continued", "<ide_", "<system-reminder", "<command-", "<local-command", "<bash-",
    "caveat:", "[custom prompt", "[sub-agent", "[request interrupted", "[interrupted", "[tool:", "->", "[aider]",
    "[image", "[redacted", "analysis:", "summary:", "let me", "now let me", "i'll help", "i will help",
)
# Words an assistant opens a sentence with that say nothing ("Okay, I will add checkfirst=True" states the fix
# without its "Okay, "): cut from the front of a story line.
FILLER = r"^(?:(?:okay|ok|certainly|sure|great|perfect|excellent|alright|absolutely|yes|right|got it)[,!.]\s*)+"
