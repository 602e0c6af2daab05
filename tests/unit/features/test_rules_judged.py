"""The rule suggestions measured against a reader's judgement (tests/fixtures/rules/suggestions_judged.json):
on every user prompt of the shared real fixtures, and on prompts written in the issue's style. The detector's
proposals must be exactly the judged ones (a change of the detector means judging again)."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

from mempald.features.rule_suggest import drafts, user_turn
from mempald.normalize import registry
from mempald.normalize.format import Input
from tests.conftest import REPO, lines_in

JUDGED = REPO / "tests" / "fixtures" / "rules" / "suggestions_judged.json"
WORDS = re.compile(r"\b(never|always|don'?t ever|do not ever|without)\b", re.I)
SENTENCE = re.compile(r"(?:[^.!?\n]|[.!?](?=\S))+[.!?]*")


def judged() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(JUDGED.read_text(encoding="utf-8"))
    return data


def draft_of(prompt: str) -> list[dict[str, str]]:
    return [{"tool": d.tool, "pattern": d.pattern, "decision": d.decision} for d in drafts(prompt)]


def fixture_prompts(formats: Path) -> list[tuple[str, str]]:
    """(format, the user's turn as a drawer stores it) for every exchange of every fixture read as lines or a
    document (the Slack export, a folder, is chat between people, not prompts to an agent)."""
    out = []
    for f in sorted(formats.rglob("*")):
        if not f.is_file():
            continue
        data = f.read_bytes()
        fmt = registry.detect_file(data[: registry.HEAD_BYTES], f.name)
        if fmt is None or fmt.reads not in ("lines", "document"):
            continue
        inp = Input(name=str(f), lines=lines_in(data)) if fmt.reads == "lines" else Input(name=str(f), data=data)
        for ex in fmt.parse(inp).exchanges:
            prompt = user_turn(ex.render())
            if prompt:
                out.append((fmt.name, prompt))
    return out


def test_the_real_fixtures_suggestions_are_the_judged_ones(formats_dir: Path) -> None:
    data = judged()["fixtures"]
    prompts = fixture_prompts(formats_dir)
    assert prompts  # (138 when judged: an adapter reading more or fewer prompts changes it, not the judgement)
    seen = [(fmt, " ".join(m.group(0).split())) for fmt, p in prompts
            for m in SENTENCE.finditer(p) if WORDS.search(m.group(0))]
    assert sorted(seen) == sorted((s["format"], s["sentence"]) for s in data["sentences"])
    for s in data["sentences"]:
        assert (draft_of(s["sentence"]) or [None])[0] == s["draft"], s["sentence"]
    proposed = [d for _fmt, p in prompts for d in draft_of(p)]
    wanted = [s for s in data["sentences"] if s["reader"] in ("accept", "edit", "missed")]
    print(f"\nRULES suggestions on the real fixtures: {len(prompts)} prompts, {len(seen)} sentences with the words, "
          f"{len(proposed)} proposed, {len(wanted)} a reader would keep")
    assert proposed == [s["draft"] for s in data["sentences"] if s["draft"]]


def test_the_written_prompts_suggestions_are_the_judged_ones() -> None:
    written = judged()["written"]
    for w in written:
        assert (draft_of(w["prompt"]) or [None])[0] == w["draft"], w["prompt"]
        assert (w["draft"] is None) == (w["reader"] in ("none", "missed")), w["prompt"]
    verdicts = Counter(w["reader"] for w in written)
    proposed = sum(1 for w in written if w["draft"])
    print(f"\nRULES suggestions on {len(written)} written prompts: {proposed} proposed, {verdicts['accept']} accepted "
          f"as drafted, {verdicts['edit']} after an edit, {verdicts['reject']} rejected, {verdicts['missed']} missed")
    assert verdicts["accept"] + verdicts["edit"] >= 0.8 * proposed  # a drafted rule is mostly one the reader keeps
