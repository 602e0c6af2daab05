"""One key for a compaction summary whether it comes from the transcript (Claude Code's opening and closing lines
around it) or from the PostCompact hook (the summary alone, its sections labelled or in tags), on the real
transcripts that hold one."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from mempald.normalize.claude_code import parse_lines
from mempald.normalize.compaction import compaction_key, summary_words
from tests.conftest import FORMATS, lines_in

COMPACTED = [
    "claude_code/projects_layout/-home-USER-projects-spotter-worktrees-spotter-4te/"
    "ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl",
    "claude_code/real2/projects/-Users-cedricmukolonga-00-vibe-projects-byte-bridges/"
    "f156e813-a767-437a-898c-1110895e08b2.jsonl",
]


def transcript_summary(path: Path) -> tuple[str, str]:
    """(session id, the text of the transcript's compaction summary record)."""
    for line in path.read_text().splitlines():
        rec = json.loads(line)
        if rec.get("isCompactSummary"):
            content = rec["message"]["content"]
            text = content if isinstance(content, str) else "".join(b.get("text", "") for b in content)
            return str(rec["sessionId"]), text
    raise AssertionError(f"{path} holds no compaction summary")


def hook_copies(text: str) -> tuple[str, str]:
    """What the PostCompact hook would be given for it: the summary without the transcript's opening and closing
    lines, with its sections labelled as in the transcript, and with them in the model's tags."""
    core = text.partition("\n")[2]
    core = re.split(r"\n+(?:Please continue the conversation|If you need specific details from before)", core)[0]
    tagged = re.sub(r"^Analysis:", "<analysis>", core, count=1, flags=re.M)
    tagged = re.sub(r"^Summary:", "</analysis>\n\n<summary>", tagged, count=1, flags=re.M) + "\n</summary>"
    return core.strip(), tagged


@pytest.mark.parametrize("name", COMPACTED)
def test_the_transcripts_summary_and_the_hooks_copy_get_one_key(name: str) -> None:
    path = FORMATS / name
    if not path.is_file():
        pytest.skip(f"the shared format fixtures are not at {FORMATS}")
    session, text = transcript_summary(path)
    core, tagged = hook_copies(text)
    assert "<analysis>" in tagged and not core.startswith("This session")
    key = compaction_key(session, text)
    assert key.startswith("compact:")
    assert compaction_key(session, core) == key and compaction_key(session, tagged) == key
    # the parser files the transcript's summary under that key
    (summary,) = [ex for ex in parse_lines(lines_in(path.read_bytes())) if ex.kind == "summary"]
    assert summary.key == key and summary.assistant.startswith("This session is being continued")
    # another session, or other words, is another summary
    assert compaction_key("another-session", core) != key
    assert compaction_key(session, core.replace("the", "a", 1)) != key


def test_summary_words_leave_out_only_the_frame() -> None:
    framed = ("This session is being continued from a previous conversation that ran out of context. The summary "
              "below covers the earlier portion of the conversation.\n\nAnalysis:\nWe moved the dev server to "
              "port 4010.\n\nSummary:\n1. Port 4010, because the proxy holds 4000.\n\nIf you need specific details "
              "from before compaction (like exact code snippets), read the full transcript at: /x/s.jsonl")
    assert summary_words(framed) == "wemovedthedevservertoport40101port4010becausetheproxyholds4000"
    assert summary_words("<analysis>We moved the dev server to port 4010.</analysis>\n<summary>1. Port 4010, "
                         "because the proxy holds 4000.</summary>") == summary_words(framed)
    assert compaction_key("s", "  \n") == "" and compaction_key("s", "<summary></summary>") == ""
