"""One key for one compaction summary, whichever way it reached mempald.

Claude Code writes a compacted session's summary into its transcript (a user record with ``isCompactSummary``,
the summary between a line saying the session is continued and a closing line telling the model to go on or where
the full transcript is), and hands the same summary to the PostCompact hook (``compact_summary``; its sections may
still be in ``<analysis>``/``<summary>`` tags, or written ``Analysis:``/``Summary:``). Both are stored under the key
this module derives from the summary's own words, so they are one drawer, not two near-identical ones: the
transcript's copy (which goes on with the answers given after it) replaces the hook's, and the hook does not
replace the transcript's (``Memories.save_summary``). A summary whose words differ in any other way gets a key of
its own: two drawers, nothing lost.
"""

from __future__ import annotations

import hashlib
import re

PREAMBLE = "This session is being continued from a previous conversation"
# The closing lines Claude Code writes after the summary in the transcript (never part of the hook's copy).
CLOSINGS = ("Please continue the conversation from where we left", "If you need specific details from before "
            "compaction", "Recent messages are preserved verbatim")
_TAGS = re.compile(r"</?(?:analysis|summary)>|^(?:Analysis|Summary):", re.IGNORECASE | re.MULTILINE)
_NOT_WORD = re.compile(r"[\W_]+")


def summary_words(text: str) -> str:
    """The summary's own words: the transcript's opening and closing lines, section tags or labels, case,
    spacing and punctuation left out."""
    text = text.strip()
    if text.startswith(PREAMBLE):
        text = text.partition("\n")[2]
    paragraphs = text.rstrip().split("\n")
    while paragraphs and (not paragraphs[-1].strip() or paragraphs[-1].lstrip().startswith(CLOSINGS)):
        paragraphs.pop()
    return _NOT_WORD.sub("", _TAGS.sub(" ", "\n".join(paragraphs)).lower())


def compaction_key(session_id: str, summary: str) -> str:
    """The exchange key of a compaction summary in a session ("" when it holds no words)."""
    words = summary_words(summary)
    if not words:
        return ""
    return "compact:" + hashlib.sha256(f"{session_id}\x1f{words}".encode()).hexdigest()[:24]
