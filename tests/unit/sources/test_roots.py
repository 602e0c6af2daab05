"""Which units a watched source reads: files, and Slack export folders as one unit wherever they sit."""

from __future__ import annotations

from pathlib import Path

from mempald.config import SourceSpec
from mempald.normalize import registry
from mempald.sources.roots import Source, source_from_spec


def is_slack_export(folder: Path) -> bool:
    found = registry.detect_folder(p.name for p in folder.iterdir())
    return found is registry.by_name("slack")


def unit_path(src: Source, path: Path) -> Path | None:
    unit = src.unit_of(path)
    return unit.path if unit is not None else None


def slack_export(folder: Path) -> None:
    (folder / "general").mkdir(parents=True)
    (folder / "users.json").write_text("[]")
    (folder / "channels.json").write_text("[]")
    (folder / "general" / "2024-01-02.json").write_text("[]")


def test_a_slack_export_inside_a_folder_of_exports_is_one_unit(tmp_path: Path) -> None:
    root = tmp_path / "exports"
    slack_export(root / "work" / "team")
    (root / "chat.json").write_text("{}")
    (root / "work" / "notes.md").write_text("# notes")
    (root / "work" / "team" / "notes.txt").write_text("inside the export: part of the Slack unit")
    src = Source("convos:x", root, "convos", "auto")
    units = list(src.iter_files())
    assert units == [root / "chat.json", root / "work" / "notes.md", root / "work" / "team"]
    day = root / "work" / "team" / "general" / "2024-01-02.json"
    assert unit_path(src, day) == root / "work" / "team"  # a day file's unit is its export folder
    assert src.wants(root / "work" / "team") and src.wants(day)
    assert unit_path(src, root / "chat.json") is None  # a file outside an export is its own unit
    assert not src.wants(root / "work")  # a plain folder is not a unit
    assert unit_path(src, tmp_path / "elsewhere" / "users.json") is None  # outside the root


def test_a_watched_slack_export_is_a_slack_source(tmp_path: Path) -> None:
    slack_export(tmp_path / "team")
    assert is_slack_export(tmp_path / "team") and not is_slack_export(tmp_path / "team" / "general")
    src = source_from_spec(SourceSpec(path=str(tmp_path / "team"), mode="convos"), tmp_path / "team")
    assert src.fmt == "slack" and list(src.iter_files()) == [tmp_path / "team"]
    assert unit_path(src, tmp_path / "team" / "general" / "2024-01-02.json") == tmp_path / "team"
    projects = Source("projects:x", tmp_path, "projects", "auto")
    assert unit_path(projects, tmp_path / "team" / "users.json") is None  # code repos read files


def test_ownership_is_what_path_relative_to_says_for_paths_and_strings() -> None:
    src = Source("convos:x", Path("/home/u/.claude/projects"), "convos", "auto")
    cases = ["/home/u/.claude/projects", "/home/u/.claude/projects/a/b.jsonl", "/home/u/.claude/projects2/x.jsonl",
             "/home/u/.claude", "relative/projects/x.jsonl", "/home/u/.claude/projects/../x"]
    for case in cases:
        try:
            Path(case).relative_to(src.root)
            expected = True
        except ValueError:
            expected = False
        assert src.owns(Path(case)) is expected and src.owns(case) is expected, case
    assert src.count_owned(cases) == 3
    assert Source("all", Path("/"), "convos", "auto").count_owned(cases) == 5
