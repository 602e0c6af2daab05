from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mempald.text import classify, room_keywords
from mempald.text.classify import (
    CONVO_ROOMS,
    DEFAULT_ROOM_KEYWORDS,
    FOLDER_ROOMS,
    MEMORY_TYPES,
    classify_memory,
    classify_room,
    importance,
    room_for_path,
    strip_code,
)

# --- the general extractor ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("We decided to use Postgres instead of MySQL because we need JSONB and row-level locks.", "decision"),
        ("Let's go with SQLite for the state file; we chose SQLite over LevelDB.", "decision"),
        ("I prefer small functions. Always use type hints and never use bare except.", "preference"),
        ("From now on please never commit directly to main, I'd rather open a PR.", "preference"),
        ("It finally works! We shipped v1.0 and the package is released on PyPI.", "milestone"),
        ("Merged the branch and deployed to production, all tests passing.", "milestone"),
        ("The upload keeps failing with a traceback; it crashes when the file is empty.", "problem"),
        ("Found the root cause of the bug: the fix was to close the socket before retrying.", "problem"),
        ("Thank you so much, I was so frustrated with this and I'm really relieved now.", "emotional"),
        ("I'm worried about the launch and honestly a bit overwhelmed.", "emotional"),
    ],
)
def test_memory_types(text: str, expected: str) -> None:
    mtype, conf = classify_memory(text)
    assert mtype == expected
    assert 0.3 <= conf <= 1.0


def test_code_is_stripped_before_scoring() -> None:
    fenced = "```python\nif error:\n    raise Error('crash: bug, broken, failed')\n```"
    assert classify_memory(fenced) == (None, 0.0)
    indented = "Here it is:\n\n    if error:\n        raise RuntimeError('traceback')\n"
    assert classify_memory(indented) == (None, 0.0)
    inline = "Rename `handle_error` to `on_failure_crash`."
    assert classify_memory(inline) == (None, 0.0)
    unclosed = "```\nexcept Exception: log.error('broken')\n"
    assert classify_memory(unclosed) == (None, 0.0)


def test_prose_around_code_still_counts() -> None:
    text = "We decided to go with retries instead of failing fast.\n\n```python\nraise Error()\n```"
    assert classify_memory(text)[0] == "decision"


def test_strip_code_keeps_list_continuations() -> None:
    text = "- item one\n    continues here about the bug\n\n    code_line()\nafter"
    stripped = strip_code(text)
    assert "continues here about the bug" in stripped
    assert "code_line" not in stripped
    assert "after" in stripped


def test_plain_and_empty_text_is_unlabelled() -> None:
    assert classify_memory("") == (None, 0.0)
    assert classify_memory("Here is the file you asked for.") == (None, 0.0)
    # Assistant politeness is not an emotional moment.
    assert classify_memory("Sure, I'd be happy to help. Let me read the file.")[0] is None


def test_weak_single_marker_is_below_threshold() -> None:
    mtype, conf = classify_memory("It is slow because the cache is cold.")
    assert mtype is None and 0 < conf < 0.3


def test_threshold_controls_the_label() -> None:
    text = "It is slow because the cache is cold."
    _, conf = classify_memory(text)
    assert classify_memory(text, threshold=conf)[0] == "decision"
    assert classify_memory("We decided on Rust.", threshold=1.01)[0] is None


def test_ambiguity_lowers_confidence() -> None:
    _, clear = classify_memory("The upload crashes with a traceback.")
    _, mixed = classify_memory("The upload crashes with a traceback. We decided to rewrite it.")
    assert mixed < clear


def test_confidence_is_deterministic_and_bounded() -> None:
    text = "We decided to use Postgres instead of MySQL because of JSONB. " * 50
    assert classify_memory(text) == classify_memory(text)
    assert 0.0 <= classify_memory(text)[1] <= 1.0


@given(st.text(max_size=3000))
def test_classify_never_raises(text: str) -> None:
    mtype, conf = classify_memory(text)
    assert mtype is None or mtype in MEMORY_TYPES
    assert 0.0 <= conf <= 1.0
    assert 0 <= importance(text, mtype) <= 5
    assert classify_room(text) in CONVO_ROOMS


# --- importance ---------------------------------------------------------------------------------------------


def test_importance_orders_sensibly() -> None:
    decision = "We decided to keep every transcript verbatim because summaries lose the reasoning behind it."
    assert importance(decision, "decision") == 3
    assert importance("Important: always remember that " + decision, "decision") == 5
    assert importance("ok thanks", None) == 0
    assert importance("", "decision") == 0
    assert importance("   ", None) == 0
    chatter = "The output of the command was a list of files in the folder and nothing else of note."
    assert importance(chatter, None) == 1
    assert importance(chatter, "problem") == 2


def test_importance_long_text_bonus_and_clamp() -> None:
    long = " ".join(["word"] * 200)
    assert importance(long, None) == 2
    assert importance("Important! Remember: never do this, it is critical. " + long, "decision") == 5


# --- conversation rooms -------------------------------------------------------------------------------------


def test_default_taxonomy_is_plain_and_complete() -> None:
    assert isinstance(DEFAULT_ROOM_KEYWORDS, dict)
    assert set(DEFAULT_ROOM_KEYWORDS) == set(CONVO_ROOMS)
    assert all(isinstance(v, list) and all(isinstance(k, str) for k in v) for v in DEFAULT_ROOM_KEYWORDS.values())


@pytest.mark.parametrize(
    ("text", "room"),
    [
        ("We decided to go with Postgres; the trade-off is operations, and we chose it instead of Mongo.",
         "decisions"),
        ("The roadmap for the next sprint: milestone one by the deadline, then the backlog.", "planning"),
        ("The architecture has three layers; the schema and the module boundary follow the design pattern.",
         "architecture"),
        ("Still broken. The issue is a regression; the workaround is stuck too, we need a fix.", "problems"),
        ("Install the package, then run the python script against the api endpoint.", "technical"),
        ("Good morning! How was the weekend?", "general"),
        ("", "general"),
    ],
)
def test_classify_room(text: str, room: str) -> None:
    assert classify_room(text) == room


def test_room_keywords_in_code_do_not_count_but_code_is_technical() -> None:
    text = "```python\ntry:\n    fix_bug()\nexcept Error:\n    raise Problem('broken issue')\n```"
    assert classify_room(text) == "technical"


def test_custom_taxonomy_replaces_the_default() -> None:
    table = {"cooking": ["recipe", "oven"], "garden": ["tomato", "soil"]}
    assert classify_room("Put the tomato recipe in the oven for 20 minutes.", table) == "cooking"
    assert classify_room("The soil is dry and the tomato plants droop.", table) == "garden"
    assert classify_room("We decided to use Postgres.", table) == "general"


def _room_scores_by_pattern(prose: str, keywords: dict[str, list[str]]) -> dict[str, int]:
    """The reference: every keyword's own pattern searched in the lower-cased prose."""
    table = room_keywords.compile_table(room_keywords.table_key(keywords))
    return {room: sum(room_keywords.count_hits(rx, prose, 3) for rx in ps) for room, ps in table.patterns}


_WORDY = st.text(st.sampled_from(list("tesdingbuTESé_1-' \n.Ü")), max_size=80)
_TABLE = {"a": ["test", "bug", "tested", "on call", "c++", "k8s", "é", "Über"], "b": ["test", "ding", "  "],
          "c": ["s", "e"]}


@given(_WORDY)
def test_room_words_count_as_their_patterns_do(text: str) -> None:
    """Single-word keywords are counted from the text's words, not by their patterns: the same hits, on
    inflections, repeats past the cap, words inside words, underscores, digits, non-ASCII letters and a
    keyword listed twice or in two rooms."""
    prose = text.lower()
    assert room_keywords.compile_table(room_keywords.table_key(_TABLE)).scores(prose, 3) == \
        _room_scores_by_pattern(prose, _TABLE)


def test_room_words_count_as_their_patterns_do_on_real_text() -> None:
    from tests.unit.text.test_literals import TEXTS

    keywords = {room: list(kws) for room, kws in classify.DEFAULT_ROOM_KEYWORDS.items()}
    table = room_keywords.compile_table(room_keywords.table_key(keywords))
    scored = 0
    for text in TEXTS:
        prose = text.lower()
        got = table.scores(prose, 3)
        assert got == _room_scores_by_pattern(prose, keywords)
        scored += any(got.values())
    assert scored > 100


def test_keyword_inflections_and_phrases() -> None:
    table = {"testing": ["test"], "ops": ["on call"]}
    assert classify_room("I tested it and the tests pass", table) == "testing"
    assert classify_room("Who is on   call tonight?", table) == "ops"
    assert classify_room("The contest ended", table) == "general"  # whole words only


# --- folder rooms -------------------------------------------------------------------------------------------


def test_folder_table_is_big_enough() -> None:
    assert len(FOLDER_ROOMS) >= 70
    rooms = set(FOLDER_ROOMS.values())
    for r in ("frontend", "backend", "documentation", "testing", "planning", "configuration", "scripts",
              "design", "meetings", "costs", "infrastructure", "data", "research"):
        assert r in rooms


@pytest.mark.parametrize(
    ("path", "room"),
    [
        ("src/components/Button.tsx", "frontend"),
        ("ui/app.js", "frontend"),
        ("api/routes.py", "backend"),
        ("server/main.go", "backend"),
        ("docs/intro.md", "documentation"),
        ("tests/test_x.py", "testing"),
        ("spec/models_spec.rb", "testing"),
        ("web/src/__tests__/App.test.tsx", "testing"),
        ("roadmap/2025.md", "planning"),
        ("config/settings.yaml", "configuration"),
        (".github/workflows/ci.yml", "configuration"),
        ("scripts/release.sh", "scripts"),
        ("bin/run", "scripts"),
        ("design/figma/export.md", "design"),
        ("meetings/2024-05-01.md", "meetings"),
        ("minutes/board.md", "meetings"),
        ("finance/budget/q3.csv", "costs"),
        ("invoices/acme.txt", "costs"),
        ("infra/terraform/main.tf", "infrastructure"),
        ("notebooks/explore.ipynb", "research"),
        ("Docs/Guide.MD", "documentation"),
        ("src\\components\\Nav.vue", "frontend"),
    ],
)
def test_room_for_path(path: str, room: str) -> None:
    assert room_for_path(path) == room


def test_deepest_folder_wins() -> None:
    assert room_for_path("docs/api/reference.md") == "backend"
    assert room_for_path("api/docs/reference.md") == "documentation"
    assert room_for_path("server/tests/test_a.py") == "testing"


def test_name_parts_match_after_exact_names() -> None:
    assert room_for_path("web-ui/index.js") == "frontend"
    assert room_for_path("api_server/app.py") == "backend"


def test_file_name_is_not_a_folder_and_unknown_is_general() -> None:
    assert room_for_path("docs") == "general"
    assert room_for_path("README.md") == "general"
    assert room_for_path("src/lib/thing.py") == "general"
    assert room_for_path("") == "general"


def test_custom_folder_table() -> None:
    table = {"recipes": "cooking", "garden/beds": "garden"}
    assert room_for_path("recipes/soup.md", table) == "cooking"
    assert room_for_path("garden/beds/north.md", table) == "garden"
    assert room_for_path("docs/x.md", table) == "general"


# --- purity -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("module", ["classify", "memory_markers", "room_tables", "redact", "codechunk"])
def test_module_is_pure(module: str) -> None:
    """Standard library only (no I/O), besides the other pure modules of ``mempald.text``."""
    path = Path(classify.__file__).with_name(f"{module}.py")
    tree = ast.parse(path.read_text(encoding="utf-8"))
    roots: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            assert node.level == 0
            if node.module.startswith("mempald.text."):
                continue
            roots.add(node.module.split(".")[0])
    assert roots <= set(sys.stdlib_module_names)
    assert not roots & {"os", "io", "pathlib", "shutil", "subprocess", "socket"}


# --- memory types from the whole exchange, fixes and story sentences ------------------------------------------


def test_a_routine_push_is_not_a_milestone() -> None:
    push = "> now push to gitlab\nDone: pushed main to gitlab and merged the branch; the CI job completed."
    assert classify_memory(push)[0] != "milestone"
    shipped = "> did the release go out?\nYes: we shipped v2.0 to all customers and all tests pass."
    assert classify_memory(shipped)[0] == "milestone"


def test_an_agent_recording_a_choice_is_a_decision() -> None:
    text = "> B\nExcellent! Recording **WCAG 2.1 Level AA** as the accessibility standard. Let me update the spec."
    assert classify_memory(text)[0] == "decision"
    assert classify_memory("> from this point on use the recommended option and do not ask me")[0] == "preference"


def test_has_fix_tells_a_fixed_problem_from_a_complaint() -> None:
    assert not classify.has_fix("> the server crashes on start\nLet me look at the logs.")
    assert classify.has_fix("> the server crashes on start\nThe error means the tables already exist: to fix this, "
                            "add checkfirst=True to create_all.")
    assert not classify.has_fix("```\nroot cause: the fix was here\n```")  # code is not prose


def test_key_sentence_states_the_fix_not_the_complaint_nor_the_boilerplate() -> None:
    text = ("> i get DuplicateTableError when I run the server\n"
            "Okay, I understand. The error `DuplicateTableError` means that `create_tables()` runs on every reload. "
            "To fix this, we must add `checkfirst=True` to the `create_all` call.\n[tool: Edit] backend/db.py -> ok")
    line = classify.key_sentence(text, "problem")
    assert line is not None and line.startswith(("The error", "To fix this")) and "`create_tables()`" in line
    assert classify.key_sentence("This session is being continued from a previous conversation: we decided "
                                 "to use Redis.", "decision") is None
    decided = classify.key_sentence("> ok\nPerfect! Recording **Google Analytics** as the analytics tool.", "decision")
    assert decided == "Recording Google Analytics as the analytics tool."
    assert classify.key_sentence("> hello there, how are you today?", "decision") is None
    assert classify.key_sentence("anything at all", None) is None
