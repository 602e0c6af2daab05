"""The pure parts of ``mempal pack``: markdown parsing, chunking, sentences, facts, labels, render."""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest

from mempald.features.pack.chunking import SourceFile, chunk_file, is_own_output, parse_blocks
from mempald.features.pack.cluster import choose_k_range, cluster, cosine_silhouette, dedup, embed_chunks
from mempald.features.pack.facts import candidates, fact_score, is_vague, select_facts
from mempald.features.pack.importance import importance_scores
from mempald.features.pack.labels import label_clusters
from mempald.features.pack.render import render_single, settle_tokens
from mempald.features.pack.result import Fact, PackHeader, PackResult, Topic
from mempald.features.pack.sentences import Sentence, file_sentences, split_plain


def count(text: str) -> int:
    return len(re.findall(r"\w+|[^\w\s]", text))


def src(text: str, path: str = "notes/a.md", index: int = 0) -> SourceFile:
    return SourceFile(index, path, text, tuple(text.split("\n")))


def sent(text: str, line: int = 1, kind: str = "text") -> Sentence:
    return Sentence(text, "a.md", line, line, kind, (0, line, 0))


# --- markdown -------------------------------------------------------------------------------------------


def test_parse_blocks_knows_code_setext_front_matter_tables_and_comments() -> None:
    text = "\n".join(
        [
            "---",
            "title: My *Notes*",
            "tags: [x]",
            "---",
            "Intro line one",
            "still intro.",
            "",
            "Section",
            "-------",
            "```python",
            "# not a heading",
            "```",
            "| a | b |",
            "| - | - |",
            "<!-- hidden",
            "# also hidden -->",
            "- item one",
            "  continued",
            "- item two",
            "",
            "#hashtag is text",
        ]
    )
    blocks, title = parse_blocks(text.split("\n"))
    assert title == "My Notes"
    kinds = [(b.kind, b.start) for b in blocks]
    assert kinds == [("text", 5), ("heading", 8), ("code", 10), ("table", 13), ("list", 17), ("text", 21)]
    assert blocks[1].level == 2
    assert not any(b.kind == "heading" and "not a heading" in b.text for b in blocks)


def test_chunks_keep_lines_break_at_h1_and_respect_the_size() -> None:
    para = " ".join(f"word{i}" for i in range(30)) + "."
    lines = ["# One", "", para, "", "## Sub", "", para, "", "# Two", "", para]
    chunks = chunk_file(src("\n".join(lines)), count, 512)
    assert [(c.start_line, c.end_line) for c in chunks] == [(1, 7), (9, 11)]
    assert chunks[0].headings == ((1, "One"), (2, "Sub"))
    small = chunk_file(src("\n".join(lines)), count, 40)
    assert all(c.tokens <= 40 for c in small)
    # A heading is never the last block of a chunk.
    assert all(c.blocks[-1].kind != "heading" for c in small)


def test_oversized_line_is_split_but_keeps_its_line_number() -> None:
    long_line = " ".join(f"Sentence number {i} is here." for i in range(40))
    chunks = chunk_file(src(f"# T\n\n{long_line}"), count, 64)
    assert len(chunks) > 3
    assert all(c.start_line == 3 for c in chunks[1:])
    assert all(c.tokens <= 64 + count("# T") for c in chunks)


def test_file_without_headings_is_named_after_the_file() -> None:
    (chunk,) = chunk_file(src("Just text.", path="health/knee-rehab.md"), count, 512)
    assert chunk.headings == ((0, "Knee rehab"),)


def test_own_output_is_recognised() -> None:
    assert is_own_output("# Knowledge Base: x\n> Packed by mempal | 3 files | 1 -> 1 tokens (1.0:1)\n")
    assert is_own_output("# T\n> Topic 1 of 2 in Knowledge Base: x | packed by mempal | [index](index.md)\n")
    assert not is_own_output("# Notes\nI packed by mempal once.\n")


# --- sentences ------------------------------------------------------------------------------------------


def test_sentences_map_to_their_lines() -> None:
    lines = [
        "# Title",
        "",
        "First sentence here. Second one wraps",
        "onto the next line. Dr. Patel said e.g. this stays whole.",
        "",
        "- Always run tests. Then push.",
        "- a list item without a full stop",
        "",
        "> Quoted line one",
        "> quoted line two.",
    ]
    blocks, _ = parse_blocks(lines)
    got = [(s.text, s.line, s.end_line, s.kind) for s in file_sentences(blocks, "a.md", 0)]
    assert got == [
        ("First sentence here.", 3, 3, "text"),
        ("Second one wraps onto the next line.", 3, 4, "text"),
        ("Dr. Patel said e.g. this stays whole.", 4, 4, "text"),
        ("Always run tests.", 6, 6, "list"),
        ("Then push.", 6, 6, "list"),
        ("a list item without a full stop", 7, 7, "list"),
        ("Quoted line one quoted line two.", 9, 10, "quote"),
    ]
    for s in got:
        if s[1] == s[2]:
            assert s[0] in lines[s[1] - 1]


def test_split_plain() -> None:
    assert split_plain("One. Two! Three? four") == ["One.", "Two!", "Three? four"]
    assert split_plain("Use e.g. pytest. Then ruff.") == ["Use e.g. pytest.", "Then ruff."]
    assert split_plain("") == []


# --- facts ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "However, this is what we wanted all along.",
        "It should be noted that the values changed.",
        "This means the 3 jobs run later.",
        "As mentioned above, Tidewater runs on a Pi.",
        "What time does the race start on Sunday?",
        "The plan for March:",
        "Too short.",
    ],
)
def test_vague_or_unfit_sentences_are_not_facts(text: str) -> None:
    assert fact_score(sent(text)) == 0.0


@pytest.mark.parametrize(
    "text",
    [
        "Always warm up for ten minutes before intervals.",
        "The dentist appointment is on 3 March 2025 at 08:40.",
        "Dr Patel wants a repeat ferritin test in May.",
        "She prefers written proposals over hallway conversations.",
        "Run `pytest -q` before pushing to main.",
    ],
)
def test_specific_sentences_are_facts(text: str) -> None:
    assert fact_score(sent(text)) >= 1.0


def test_is_vague() -> None:
    assert is_vague("Moreover, it works.")
    assert not is_vague("Mornings are for writing.")


def test_select_facts_caps_dedups_excludes_and_keeps_document_order() -> None:
    sents = [sent(f"Always book the dentist on {d} March 2025 at 08:40.", line=d) for d in range(1, 20)]
    sents.append(sent("Always book the dentist on 1 March 2025 at 08:40 please.", line=30))
    ranked = candidates(sents)
    facts = select_facts(ranked, max_facts=10)
    assert len(facts) <= 10
    assert [f.line for f in facts] == sorted(f.line for f in facts)
    assert not any(f.line == 30 for f in facts)  # a near-repeat of line 1
    excluded = select_facts(ranked, max_facts=10, exclude=sents[0].text + " " + sents[1].text)
    assert {1, 2}.isdisjoint(f.line for f in excluded)


# --- clustering, labels, importance ---------------------------------------------------------------------


def test_each_chunk_is_read_by_the_model_once_and_headings_lean_its_context_vector() -> None:
    chunks = chunk_file(src("# Bikes\n\nThe bike has disc brakes.\n\n## Tyres\n\nTyres at 45 psi.\n\n"
                            "# Bikes\n\nThe bike has disc brakes."), count, 8)
    asked: list[str] = []

    def embed(texts: list[str]) -> np.ndarray:
        asked.extend(texts)
        # section texts point along x and y, heading paths (no full stop) along z
        return np.asarray([[1.0 + t.count("disc"), 1.0 + t.count("psi"), 0.0] if "." in t else [0.0, 0.0, 1.0]
                           for t in texts])

    body, ctx = embed_chunks(chunks, embed, count)
    assert sorted(asked) == sorted(set(asked))  # every distinct text once: the copied section too
    assert set(asked) == {c.text for c in chunks} | {" > ".join(c.context) for c in chunks}
    assert np.allclose(np.linalg.norm(body, axis=1), 1) and np.allclose(np.linalg.norm(ctx, axis=1), 1)
    assert np.allclose(body[0], body[2])  # the same text under the same heading: one vector
    assert all(c.context for c in chunks) and not body[:, 2].any()
    assert (ctx[:, 2] > 0.05).all() and (ctx[:, 2] < 0.7).all()  # the heading path leans each context vector
    assert dedup(body, chunks, 0.999).groups == ((0, (2,)),)


def test_dedup_is_transitive_and_keeps_the_longest() -> None:
    chunks = chunk_file(src("# A\n\nshort.\n\n# B\n\na much longer text here.\n\n# C\n\nother."), count, 512)
    v = np.asarray([[1, 0, 0], [0.96, 0.28, 0], [0, 0, 1]], dtype=np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    result = dedup(v, chunks, 0.92)
    assert result.keep == (1, 2)
    assert result.groups == ((1, (0,)),)


def test_k_range_and_tiny_inputs() -> None:
    assert list(choose_k_range(40, 40)) == list(range(2, 11))
    assert list(choose_k_range(5, 5)) == [2]
    assert list(choose_k_range(3, 3)) == []
    one = cluster(np.eye(3, dtype=np.float32), [(0, 1), (0, 2), (0, 3)])
    assert one.k == 1 and one.labels == (0, 0, 0)


def test_cluster_finds_planted_groups_deterministically() -> None:
    rng = np.random.default_rng(7)
    centers = np.eye(8, dtype=np.float32)[:3]
    pts = np.concatenate([c + 0.05 * rng.standard_normal((6, 8)).astype(np.float32) for c in centers])
    pts /= np.linalg.norm(pts, axis=1, keepdims=True)
    order = [(0, i) for i in range(len(pts))]
    a, b = cluster(pts, order), cluster(pts, order)
    assert a == b
    assert a.k == 3
    assert a.labels[:6] == (a.labels[0],) * 6


def test_labels_use_folders_and_headings_and_are_unique() -> None:
    texts = {
        "health/run.md": "# Running plan\n\nRun.",
        "health/sleep.md": "# Sleep\n\nSleep.",
        "money/budget.md": "# Budget\n\nSpend.",
        "money/tax.md": "# Budget\n\nTax.",
    }
    chunks = [c for i, (p, t) in enumerate(texts.items()) for c in chunk_file(src(t, p, i), count, 512)]
    vecs = np.eye(4, dtype=np.float32)
    labels = label_clusters(chunks, [0, 0, 1, 1], 2, vecs)
    assert labels[0] == "Health"
    assert labels[1] in ("Budget", "Money", "Budget & Money", "Money & Budget")
    same = label_clusters(chunks[2:], [0, 1], 2, vecs[2:])
    assert len(set(same)) == 2


def test_importance_is_between_zero_and_one() -> None:
    scores = importance_scores([100, 50, 10], [10, 1, 5], [(1.0, 0.0), (0.9, 0.1), (0.0, 1.0)])
    assert all(0.0 <= s <= 1.0 for s in scores)
    # The small topic that is full of facts and unlike the others outranks the echo of the big one.
    assert scores[2] > scores[1]
    assert importance_scores([10], [0], [()]) == [0.7]


# --- rendering and honest token counts ------------------------------------------------------------------


def _result(overview: str) -> PackResult:
    facts = (Fact("Always run tests before 5 pm.", "a.md", 3, 3, 2.5),)
    topic = Topic("Testing", "Tests run fast.", facts, ("a.md",), 1, 50, 1, 1.0, ())
    return PackResult(PackHeader("kb", 1, 5000, 0, 6.0), overview, (topic,), ("a.md",))


def test_settle_tokens_states_the_true_count() -> None:
    r = settle_tokens(_result("An overview."), count)
    md = render_single(r)
    assert count(md) == r.header.tokens_out
    assert "> Packed by mempal | 1 file | 5,000 ->" in md
    assert "- Always run tests before 5 pm. (a.md:3)" in md


def test_settle_tokens_switches_number_format_when_no_count_is_true() -> None:
    # A counter for which no comma-formatted count is a fixed point: an even stated number costs one
    # more token, so n -> n + 1 -> n. Plain numbers are free of that quirk.
    def quirky(text: str) -> int:
        m = re.search(r"-> (\d{1,3}(?:,\d{3})+) tokens", text)
        extra = 1 if m and int(m.group(1).replace(",", "")) % 2 == 0 else 0
        return 1000 + len(text.split()) + extra

    outcomes = set()
    for overview in ("An overview.", "An overview, longer."):
        r = settle_tokens(_result(overview), quirky)
        assert quirky(render_single(r)) == r.header.tokens_out
        outcomes.add(r.header.plain_numbers)
    assert outcomes == {False, True}


def test_shortfall_is_stated_in_the_header() -> None:
    r = settle_tokens(dataclasses.replace(_result("x."), header=PackHeader("kb", 1, 60, 0, 6.0)), count)
    assert not r.header.target_met
    assert r.header.shortfall is not None
    assert "> Compression target 6:1 not met" in render_single(r)
    assert r.to_json()["header"]["target_met"] is False


def test_cosine_silhouette_is_its_definition() -> None:
    rng = np.random.default_rng(3)
    x = rng.standard_normal((23, 6))
    labels = np.array([i % 4 for i in range(22)] + [4])  # cluster 4 has one point: it scores 0
    unit = x / np.linalg.norm(x, axis=1, keepdims=True)
    scores = []
    for i in range(len(x)):
        d = [1.0 - float(unit[i] @ unit[j]) for j in range(len(x))]
        own = [d[j] for j in range(len(x)) if labels[j] == labels[i] and j != i]
        if not own:
            scores.append(0.0)
            continue
        a = sum(own) / len(own)
        b = min(sum(d[j] for j in range(len(x)) if labels[j] == c) / int(np.sum(labels == c))
                for c in set(labels.tolist()) if c != labels[i])
        scores.append((b - a) / max(a, b))
    assert abs(cosine_silhouette(x, labels) - sum(scores) / len(scores)) < 1e-12
