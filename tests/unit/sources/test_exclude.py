"""The exclusion filter (``mempald.sources.exclude``): config globs over paths and session cwds,
``.mempalignore`` files (whole project or paths within it), changes applied at once, counts by rule."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mempald.sources.exclude import IGNORE_FILE, ExcludeError, ExcludeFilter, Glob, check_glob
from mempald.sources.roots import Source


def test_globs_match_paths_and_the_folders_they_lie_in(tmp_path: Path) -> None:
    rules = ["/home/u/clients/acme", "*-private", "**/secret/**", "~/notes/diary.md"]
    flt = ExcludeFilter(lambda: rules)
    assert flt.path_rule(Path("/home/u/clients/acme/x/session.jsonl")) == "/home/u/clients/acme"
    assert flt.path_rule(Path("/home/u/clients/acmeish/session.jsonl")) is None
    assert flt.path_rule(Path("/data/team-private/notes.md")) == "*-private"
    assert flt.path_rule(Path("/data/proj/secret/keys.md")) == "**/secret/**"
    assert flt.path_rule(Path(os.path.expanduser("~/notes/diary.md"))) == "~/notes/diary.md"
    assert flt.path_rule(Path("/data/proj/readme.md")) is None
    assert flt.cwd_rule("/home/u/clients/acme") == "/home/u/clients/acme"
    assert flt.cwd_rule("/home/u/clients/acme/sub") == "/home/u/clients/acme"
    assert flt.cwd_rule("/work/x-private") == "*-private"
    assert flt.cwd_rule("/work/x") is None and flt.cwd_rule("") is None and flt.cwd_rule("relative/dir") is None


def test_a_config_change_applies_at_the_next_question() -> None:
    rules: list[str] = []
    flt = ExcludeFilter(lambda: rules)
    p = Path("/home/u/a/b.jsonl")
    assert not flt.excludes(p)
    rules.append("/home/u/a")
    assert flt.excludes(p)
    assert flt.report()["files"] == {"/home/u/a": 1}
    rules.clear()
    assert not flt.excludes(p)
    assert flt.report()["files"] == {}, "a removed rule's counts go with it"


@pytest.mark.parametrize(("raw", "needle"), [("", "needs"), ("!foo", "negation"), ("work/acme", "relative"),
                                             ("a\nb", "one line")])
def test_bad_globs_are_refused_with_the_reason(raw: str, needle: str) -> None:
    with pytest.raises(ExcludeError, match=needle):
        check_glob(raw)
    with pytest.raises(ExcludeError):
        Glob.parse(raw)


def test_a_bad_glob_in_config_is_reported_not_applied() -> None:
    flt = ExcludeFilter(lambda: ["work/acme", "*-private"])
    assert [g.text for g in flt.globs()] == ["*-private"]
    assert "work/acme" in flt.report()["invalid"]


def test_an_empty_mempalignore_excludes_the_whole_project(tmp_path: Path) -> None:
    proj = tmp_path / "proj"
    (proj / "src").mkdir(parents=True)
    (proj / IGNORE_FILE).write_text("# nothing but a comment: the whole project\n")
    flt = ExcludeFilter(ttl_s=0)
    assert flt.path_rule(proj / "src" / "app.py") == str(proj / IGNORE_FILE)
    assert flt.cwd_rule(str(proj)) == str(proj / IGNORE_FILE)
    assert flt.cwd_rule(str(proj / "src")) == str(proj / IGNORE_FILE)
    assert flt.cwd_rule(str(tmp_path)) is None
    assert flt.path_rule(tmp_path / "other.md") is None


def test_a_mempalignore_with_patterns_excludes_paths_within_the_project(tmp_path: Path) -> None:
    proj = tmp_path / "proj"
    for d in ("src", "experiments/run1", "notes"):
        (proj / d).mkdir(parents=True)
    (proj / IGNORE_FILE).write_text("experiments/\n*.secret.md\n!keep.secret.md\n")
    flt = ExcludeFilter(ttl_s=0)
    assert flt.path_rule(proj / "src" / "app.py") is None
    assert flt.path_rule(proj / "experiments" / "run1" / "log.md") == str(proj / IGNORE_FILE)
    assert flt.path_rule(proj / "notes" / "a.secret.md") == str(proj / IGNORE_FILE)
    assert flt.path_rule(proj / "notes" / "keep.secret.md") is None
    assert flt.path_rule(proj / IGNORE_FILE) is not None, "the rules themselves are never read as memory"
    assert flt.cwd_rule(str(proj)) is None, "only an empty file excludes the project itself"
    assert flt.cwd_rule(str(proj / "experiments" / "run1")) == str(proj / IGNORE_FILE)
    assert str(proj / IGNORE_FILE) in flt.known_ignore_files()


def test_editing_a_mempalignore_takes_effect_without_a_restart(tmp_path: Path) -> None:
    proj = tmp_path / "proj"
    proj.mkdir()
    flt = ExcludeFilter(ttl_s=0)
    f = proj / "plan.md"
    assert not flt.excludes(f)
    (proj / IGNORE_FILE).write_text("plan.md\n")
    assert flt.excludes(f)
    (proj / IGNORE_FILE).write_text("other.md\n")
    assert not flt.excludes(f)
    (proj / IGNORE_FILE).unlink()
    assert not flt.excludes(f)


def test_sources_never_list_or_want_what_is_excluded(tmp_path: Path) -> None:
    root = tmp_path / "convos"
    (root / "keep").mkdir(parents=True)
    (root / "drop-private").mkdir()
    (root / "keep" / "a.jsonl").write_text("{}\n")
    (root / "drop-private" / "b.jsonl").write_text("{}\n")
    flt = ExcludeFilter(lambda: ["*-private"])
    src = Source(f"convos:{root}", root, "convos", "claude_code", exclude=flt)
    assert [p.name for p in src.iter_files()] == ["a.jsonl"]
    assert not src.wants(root / "drop-private" / "b.jsonl") and src.wants(root / "keep" / "a.jsonl")
    repo = tmp_path / "repo"
    (repo / "src").mkdir(parents=True)
    (repo / "src" / "app.py").write_text("x = 1\n")
    (repo / "src" / "draft.py").write_text("y = 2\n")
    (repo / IGNORE_FILE).write_text("src/draft.py\n")
    proj = Source(f"projects:{repo}", repo, "projects", "auto", exclude=ExcludeFilter(ttl_s=0))
    assert sorted(p.name for p in proj.iter_files()) == ["app.py"]
    assert proj.exclude is not None
    assert proj.exclude.report()["files_total"] == 1  # draft.py (the rules file is left out, uncounted)
    assert "ExcludeFilter(globs=[]" in repr(proj.exclude)
