"""``mempal pack`` end to end with a deterministic fake embedder: pipeline, output files, prune."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from mempald.features.pack import (
    ClusterInput,
    PackError,
    PackResult,
    TopicDigest,
    load_pack,
    pack_directory,
    prune_pack,
    render_single,
    write_pack,
    write_pack_file,
)
from mempald.features.pack.chunking import LIST_ITEM

CORPUS = Path(__file__).resolve().parents[2] / "fixtures" / "pack_corpus" / "notes"
DIM = 384
_STOP_WORDS = (
    "a an the and or but if of to in on at for by with from as is are was were be been it its this "
    "that these those i my me we our you your he she they them their not no do does did so than "
    "then there here what when where which who how all any each every some more most very can will "
    "would should must may might has have had about into over after before up down out off again "
    "once only own same"
)
STOP = frozenset(_STOP_WORDS.split())


def fake_embed(texts: Sequence[str]) -> np.ndarray:
    """Hashed bag of words: texts sharing words get similar unit vectors. Deterministic across runs."""
    out = np.zeros((len(texts), DIM), dtype=np.float32)
    for i, text in enumerate(texts):
        for w in re.findall(r"[a-z0-9]+", text.lower()):
            if w in STOP:
                continue
            h = int.from_bytes(hashlib.blake2b(w.encode(), digest_size=4).digest(), "little")
            out[i, h % (DIM - 1)] += 1.0
        out[i, DIM - 1] = 0.1
    out /= np.linalg.norm(out, axis=1, keepdims=True)
    return out


def count(text: str) -> int:
    return len(re.findall(r"\w+|[^\w\s]", text))


@pytest.fixture(scope="module")
def packed() -> PackResult:
    return pack_directory(CORPUS, embed=fake_embed, count_tokens=count)


def source_span(root: Path, file: str, line: int, end_line: int) -> tuple[str, str]:
    """(first line, the span's lines joined) with list markers and quote marks removed, as sentences are."""
    lines = (root / file).read_text(encoding="utf-8").split("\n")
    cleaned = []
    for raw in lines[line - 1 : end_line]:
        s = re.sub(r"^\s*(?:>\s?)+", "", raw)
        m = LIST_ITEM.match(s)
        cleaned.append((s[m.end() :] if m else s).strip())
    return lines[line - 1], " ".join(cleaned)


def assert_facts_traceable(result: PackResult, root: Path) -> None:
    n = 0
    for topic in result.topics:
        for fact in topic.facts:
            first, span = source_span(root, fact.file, fact.line, fact.end_line)
            assert fact.text in span, (fact, span)
            assert fact.text.split()[0] in first
            if fact.line == fact.end_line:
                assert fact.text in first
            assert fact.file in topic.sources
            n += 1
    assert n > 0


# --- pack ------------------------------------------------------------------------------------------------


def test_pack_header_counts_are_honest(packed: PackResult, tmp_path: Path) -> None:
    files = sorted(p for p in CORPUS.rglob("*.md"))
    assert packed.header.files == len(files) == 40
    assert packed.header.tokens_in == sum(count(p.read_text(encoding="utf-8")) for p in files)
    md, js = write_pack(packed, tmp_path)
    text = md.read_text(encoding="utf-8")
    assert count(text) == packed.header.tokens_out
    h = packed.header
    assert f"| 40 files | {h.tokens_in:,} -> {h.tokens_out:,} tokens (" in text.splitlines()[1]
    data = json.loads(js.read_text(encoding="utf-8"))
    assert data["header"]["tokens_out"] == h.tokens_out
    assert data["header"]["ratio"] == round(h.tokens_in / h.tokens_out, 2)


def test_pack_layout_and_target(packed: PackResult, tmp_path: Path) -> None:
    text = render_single(packed)
    assert text.startswith(f"# Knowledge Base: {CORPUS.name}\n> Packed by mempal | ")
    for section in ("## Overview", "## Topics", "## Facts"):
        assert f"\n{section}\n" in text
    assert 2 <= len(packed.topics) <= 10
    assert packed.header.target_met, packed.header.shortfall
    assert packed.header.tokens_in / packed.header.tokens_out >= 6.0
    for t in packed.topics:
        assert f"\n### {t.label}\n" in text
        assert len(t.facts) <= 10
        assert 0.0 <= t.importance <= 1.0
        assert t.sources and all((CORPUS / s).is_file() for s in t.sources)
        assert len(t.centroid) == DIM


def test_every_fact_points_at_its_source_line(packed: PackResult) -> None:
    assert_facts_traceable(packed, CORPUS)
    text = render_single(packed)
    for t in packed.topics:
        for f in t.facts:
            assert f"- {f.text} ({f.file}:{f.line})" in text


def test_rerun_gives_identical_files(packed: PackResult, tmp_path: Path) -> None:
    again = pack_directory(CORPUS, embed=fake_embed, count_tokens=count)
    a = write_pack(packed, tmp_path / "a")
    b = write_pack(again, tmp_path / "b")
    for pa, pb in zip(a, b, strict=True):
        assert pa.read_bytes() == pb.read_bytes()
    # Writing again over an existing output changes nothing either.
    write_pack(again, tmp_path / "a")
    assert [p.read_bytes() for p in a] == [p.read_bytes() for p in b]


def test_unreachable_target_reports_the_shortfall(tmp_path: Path) -> None:
    r = pack_directory(CORPUS, embed=fake_embed, count_tokens=count, compression_target=500.0)
    assert not r.header.target_met
    assert r.stats["reduction_step"] > 0
    md, js = write_pack(r, tmp_path)
    text = md.read_text(encoding="utf-8")
    assert count(text) == r.header.tokens_out
    assert "> Compression target 500:1 not met: output is" in text
    data = json.loads(js.read_text(encoding="utf-8"))
    assert data["header"]["target_met"] is False
    assert "500:1 needs at most" in data["header"]["shortfall"]
    assert any("shortened" in n for n in data["notes"])


def test_target_is_met_by_shortening_when_possible() -> None:
    natural = pack_directory(CORPUS, embed=fake_embed, count_tokens=count, compression_target=1.0)
    assert natural.stats["reduction_step"] == 0
    target = natural.header.ratio * 1.5
    shorter = pack_directory(CORPUS, embed=fake_embed, count_tokens=count, compression_target=target)
    assert shorter.header.target_met
    assert shorter.header.tokens_out < natural.header.tokens_out
    assert shorter.stats["reduction_step"] > 0


def test_topic_name_and_chunk_size(tmp_path: Path) -> None:
    r = pack_directory(CORPUS, embed=fake_embed, count_tokens=count, topic="My Life", chunk_size=96)
    assert render_single(r).startswith("# Knowledge Base: My Life\n")
    assert r.stats["chunks"] > 40
    with pytest.raises(PackError, match="chunk-size"):
        pack_directory(CORPUS, embed=fake_embed, count_tokens=count, chunk_size=4)


def test_duplicates_are_dropped_and_recorded(tmp_path: Path) -> None:
    root = tmp_path / "kb"
    shutil.copytree(CORPUS / "finance", root / "finance")
    shutil.copytree(CORPUS / "travel", root / "travel")
    shutil.copy(CORPUS / "finance" / "budget.md", root / "travel" / "budget-copy.md")
    r = pack_directory(root, embed=fake_embed, count_tokens=count)
    assert r.stats["unique_chunks"] == r.stats["chunks"] - 1
    (dup,) = r.duplicates
    assert {dup.kept[0], dup.dropped[0][0]} == {"finance/budget.md", "travel/budget-copy.md"}
    owner = next(t for t in r.topics if "finance/budget.md" in t.sources)
    assert "travel/budget-copy.md" in owner.sources


def test_tiny_and_empty_inputs(tmp_path: Path) -> None:
    with pytest.raises(PackError, match="no markdown files"):
        pack_directory(tmp_path, embed=fake_embed, count_tokens=count)
    (tmp_path / "empty.md").write_text("\n\n", encoding="utf-8")
    with pytest.raises(PackError, match="contain no text"):
        pack_directory(tmp_path, embed=fake_embed, count_tokens=count)
    (tmp_path / "one.md").write_text(
        "# Bike\n\nThe bike is a 2019 Genesis with disc brakes and a 1x11 drivetrain.\n\n"
        "- Always lube the chain after rain.\n- Tyres at 45 psi on Mondays.\n- Carry a spare tube to work.\n",
        encoding="utf-8",
    )
    r = pack_directory(tmp_path, embed=fake_embed, count_tokens=count, compression_target=1.0)
    assert r.header.files == 2
    assert len(r.topics) == 1 and r.stats["silhouette"] is None
    assert r.topics[0].label == "Bike"
    assert_facts_traceable(r, tmp_path)
    with pytest.raises(PackError, match="not a directory"):
        pack_directory(tmp_path / "one.md", embed=fake_embed, count_tokens=count)


def test_own_output_inside_the_folder_is_not_packed(packed: PackResult, tmp_path: Path) -> None:
    root = tmp_path / "kb"
    shutil.copytree(CORPUS, root)
    write_pack(packed, root / "compressed")
    write_pack(packed, root / "multi", "multi")
    again = pack_directory(root, embed=fake_embed, count_tokens=count)
    assert again.header.files == 40


def test_multi_format(packed: PackResult, tmp_path: Path) -> None:
    paths = write_pack(packed, tmp_path, "multi")
    names = [p.name for p in paths]
    assert names[0] == "index.md" and names[-1] == "knowledge_base.json"
    assert len(names) == len(packed.topics) + 2
    index = (tmp_path / "index.md").read_text(encoding="utf-8")
    assert index.splitlines()[:2] == render_single(packed).splitlines()[:2]
    for name, t in zip(names[1:-1], packed.topics, strict=True):
        assert f"]({name})" in index
        body = (tmp_path / name).read_text(encoding="utf-8")
        assert body.startswith(f"# {t.label}\n")
        assert t.summary in body
        for f in t.facts:
            assert f"- {f.text} ({f.file}:{f.line})" in body
    # A rerun with fewer topics removes the stale topic files.
    fewer, _ = prune_pack(packed, count_tokens=count, max_tokens=None, min_importance=1.0)
    write_pack(fewer, tmp_path, "multi")
    assert len(list(tmp_path.glob("[0-9][0-9]-*.md"))) == 1
    with pytest.raises(PackError, match="unknown format"):
        write_pack(packed, tmp_path, "html")  # type: ignore[arg-type]


class LabelSummarizer:
    """A stand-in for an LLM summarizer."""

    name = "test-llm"

    def summarize_cluster(self, cluster: ClusterInput, max_tokens: int) -> str:
        return f"About {cluster.label}: {len(cluster.chunks)} chunks."

    def summarize_overview(self, topics: Sequence[TopicDigest], max_tokens: int) -> str:
        return f"{len(topics)} topics."


def test_summarizer_is_pluggable() -> None:
    r = pack_directory(CORPUS, embed=fake_embed, count_tokens=count, summarizer=LabelSummarizer())
    assert r.stats["summarizer"] == "test-llm"
    assert r.overview == f"{len(r.topics)} topics."
    assert all(t.summary.startswith(f"About {t.label}:") for t in r.topics)


def test_json_round_trip(packed: PackResult, tmp_path: Path) -> None:
    md, js = write_pack(packed, tmp_path)
    assert load_pack(js) == packed
    assert load_pack(md) == packed
    assert load_pack(tmp_path) == packed
    write_pack(packed, tmp_path / "m", "multi")
    assert load_pack(tmp_path / "m" / "index.md") == packed
    with pytest.raises(PackError, match="not found"):
        load_pack(tmp_path / "nope.md")
    (tmp_path / "bad.json").write_text('{"format": "other"}', encoding="utf-8")
    with pytest.raises(PackError, match="not a mempal pack"):
        load_pack(tmp_path / "bad.json")


# --- prune ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("fraction", [0.9, 0.6, 0.35, 0.15, 0.05])
def test_prune_never_exceeds_the_budget(packed: PackResult, fraction: float) -> None:
    budget = max(60, int(packed.header.tokens_out * fraction))
    pruned, plan = prune_pack(packed.to_json(), count_tokens=count, max_tokens=budget, min_importance=None)
    text = render_single(pruned)
    assert count(text) == pruned.header.tokens_out == plan.tokens_after <= budget
    assert plan.budget_met and plan.tokens_before == packed.header.tokens_out
    assert pruned.header.tokens_in == packed.header.tokens_in
    assert_facts_traceable_or_empty(pruned)
    assert "budget" in plan.describe()


def assert_facts_traceable_or_empty(r: PackResult) -> None:
    if any(t.facts for t in r.topics):
        assert_facts_traceable(r, CORPUS)


def test_prune_budget_drops_least_important_first_then_trims_facts(packed: PackResult) -> None:
    budget = int(packed.header.tokens_out * 0.6)
    pruned, plan = prune_pack(packed, count_tokens=count, max_tokens=budget, min_importance=None, merge=False)
    kept = {t.label for t in pruned.topics}
    dropped = [d for d in plan.dropped if d.reason == "budget"]
    if dropped:
        assert max(d.importance for d in dropped) <= min(t.importance for t in pruned.topics)
    assert kept and len(kept) + len(dropped) == len(packed.topics)


def test_prune_tiny_budget_keeps_the_header_and_says_so(packed: PackResult) -> None:
    header_only = count(render_single(packed).split("\n## Overview")[0])
    pruned, plan = prune_pack(packed, count_tokens=count, max_tokens=header_only + 12, min_importance=None)
    assert pruned.header.tokens_out <= header_only + 12
    assert not pruned.topics
    assert any("overview" in t for t in plan.trimmed)
    with pytest.raises(PackError, match="below the smallest possible pack"):
        prune_pack(packed, count_tokens=count, max_tokens=5, min_importance=None)


def test_prune_min_importance(packed: PackResult) -> None:
    scores = sorted(t.importance for t in packed.topics)
    cut = scores[len(scores) // 2]
    pruned, plan = prune_pack(packed, count_tokens=count, max_tokens=None, min_importance=cut, merge=False)
    assert all(t.importance >= cut for t in pruned.topics)
    assert {d.label for d in plan.dropped} == {t.label for t in packed.topics if t.importance < cut}
    assert all(d.reason == "min-importance" for d in plan.dropped)
    assert count(render_single(pruned)) == pruned.header.tokens_out
    # Sentences the overview took from dropped topics go with them.
    for d in plan.dropped:
        gone = next(t for t in packed.topics if t.label == d.label)
        for s in re.split(r"(?<=[.!?])\s+", gone.summary):
            if s and s in packed.overview and not any(s in t.summary for t in pruned.topics):
                assert s not in pruned.overview
    # Nothing reaches the bar: the most important topic stays, and the plan says so.
    data = packed.to_json()
    for t in data["topics"]:
        t["importance"] = min(t["importance"], 0.5)
    top, plan = prune_pack(data, count_tokens=count, max_tokens=None, min_importance=0.9, merge=False)
    assert len(top.topics) == 1
    assert any("every topic is below --min-importance 0.9" in t for t in plan.trimmed)


def test_prune_merges_near_duplicate_topics(packed: PackResult) -> None:
    pruned, plan = prune_pack(
        packed, count_tokens=count, max_tokens=None, min_importance=None, similarity_threshold=0.01
    )
    assert len(pruned.topics) == 1
    (m,) = plan.merged
    assert set(m.labels) == {t.label for t in packed.topics}
    (t,) = pruned.topics
    assert t.label == m.into
    assert len(t.facts) <= 10
    assert set(t.sources) == {s for x in packed.topics for s in x.sources}
    assert t.chunks == sum(x.chunks for x in packed.topics)
    assert_facts_traceable(pruned, CORPUS)
    unmerged, plan = prune_pack(
        packed, count_tokens=count, max_tokens=None, min_importance=None, similarity_threshold=0.01, merge=False
    )
    assert not plan.merged and unmerged.topics == packed.topics
    assert plan.describe().endswith("nothing to prune")


def test_prune_without_centroids_uses_the_embedder_or_says_it_cannot(packed: PackResult) -> None:
    data = packed.to_json()
    for t in data["topics"]:
        t["centroid"] = []
    _, plan = prune_pack(data, count_tokens=count, max_tokens=None, min_importance=None)
    assert any("merge skipped" in t for t in plan.trimmed)
    merged, plan = prune_pack(
        data, count_tokens=count, max_tokens=None, min_importance=None, similarity_threshold=0.01, embed=fake_embed
    )
    assert len(merged.topics) == 1 and plan.merged


def test_prune_writes_a_file_and_its_twin(packed: PackResult, tmp_path: Path) -> None:
    md, _ = write_pack(packed, tmp_path)
    pruned, _ = prune_pack(
        load_pack(md), count_tokens=count, max_tokens=packed.header.tokens_out // 2, min_importance=None, merge=False
    )
    out = write_pack_file(pruned, tmp_path / "pruned.md")
    assert [p.name for p in out] == ["pruned.md", "pruned.json"]
    assert count(out[0].read_text(encoding="utf-8")) == pruned.header.tokens_out
    assert load_pack(out[0]) == pruned
    assert pruned.notes and any("budget" in n for n in pruned.notes)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"max_tokens": -1}, "max-tokens"),
        ({"min_importance": 1.5}, "min-importance"),
        ({"similarity_threshold": 0.0}, "similarity-threshold"),
    ],
)
def test_prune_rejects_bad_arguments(packed: PackResult, kwargs: dict[str, float], match: str) -> None:
    args: dict[str, object] = {"max_tokens": None, "min_importance": None, **kwargs}
    with pytest.raises(PackError, match=match):
        prune_pack(packed, count_tokens=count, **args)  # type: ignore[arg-type]


def test_prune_without_limits_changes_nothing(packed: PackResult) -> None:
    same, plan = prune_pack(packed, count_tokens=count, max_tokens=0, min_importance=None, merge=False)
    assert same == packed
    assert plan.describe().endswith("nothing to prune") or plan.kept
    assert plan.to_json()["budget_met"] is True


def test_odd_files_code_only_crlf_and_bad_bytes(tmp_path: Path) -> None:
    (tmp_path / "code.md").write_text("# Snippets\n\n```sh\nmake dev\nmake run\n```\n", encoding="utf-8")
    (tmp_path / "crlf.md").write_bytes(b"# Windows\r\n\r\nAlways use CRLF on Windows 11 machines.\r\n")
    (tmp_path / "latin1.md").write_bytes("# Caf\xe9\n\nThe caf\xe9 opens at 08:00 on Mondays.\n".encode("latin-1"))
    r = pack_directory(tmp_path, embed=fake_embed, count_tokens=count, compression_target=1.0)
    assert r.header.files == 3
    text = render_single(r)
    assert count(text) == r.header.tokens_out
    facts = [f for t in r.topics for f in t.facts]
    assert any(f.file == "crlf.md" and f.line == 3 for f in facts) or any("CRLF" in t.summary for t in r.topics)
    code_topic = next(t for t in r.topics if "code.md" in t.sources)
    if not code_topic.summary:
        assert "No prose to summarise; sources: " in text


def test_progress_follows_every_stage_in_order() -> None:
    from mempald.features.pack.progress import PackProgress, PackRuns

    runs = PackRuns()
    progress = runs.start(str(CORPUS), "a-run")
    stages: list[tuple[str, int, int]] = []
    begin = progress.begin

    def record(stage: str, total: int) -> None:
        if stages:  # the stage before ended complete
            assert progress.done == progress.total, (progress.stage, progress.done, progress.total)
        begin(stage, total)
        stages.append((stage, total, progress.passes))

    progress.begin = record  # type: ignore[method-assign]
    embedded = 0

    def embed(texts: Sequence[str]) -> np.ndarray:
        nonlocal embedded
        embedded += len(texts)
        progress.embedded(len(texts))  # as run_pack's embed reports each model batch
        return fake_embed(texts)

    r = pack_directory(CORPUS, embed=embed, count_tokens=count, progress=progress)
    names = [s for s, _, _ in stages]
    assert names[:3] == ["reading", "embedding", "clustering"] and set(names[3:]) == {"summarizing"}
    assert stages[0][1] == r.header.files and stages[1][1] >= r.stats["chunks"]  # windows: a chunk has one or more
    assert [p for s, _, p in stages if s == "summarizing"] == list(range(1, names.count("summarizing") + 1))
    assert progress.texts == embedded  # every text the model saw, summaries' sentences included
    assert [x["run_id"] for x in runs.running()] == ["a-run"] and runs.running("other") == []
    runs.finish(progress)
    assert runs.running() == [] and isinstance(progress, PackProgress)
