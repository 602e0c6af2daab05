"""What ``mine`` reads a folder as when no mode is given: a code project (a VCS root, or more source files than
transcripts) or conversations (a folder of real transcripts from ../shared)."""

from __future__ import annotations

import shutil
from pathlib import Path

from mempald.ingest.review import looks_like_project


def test_a_vcs_root_is_a_project(tmp_path: Path) -> None:
    (tmp_path / "repo" / ".git").mkdir(parents=True)
    (tmp_path / "repo" / "notes.md").write_text("# notes\n")
    assert looks_like_project(tmp_path / "repo")
    (tmp_path / "hg" / ".hg").mkdir(parents=True)
    assert looks_like_project(tmp_path / "hg")


def test_source_files_make_a_project_and_transcripts_do_not(tmp_path: Path, formats_dir: Path) -> None:
    code = tmp_path / "code"
    (code / "src").mkdir(parents=True)
    for name in ("app.py", "util.ts", "main.go"):
        (code / "src" / name).write_text("x = 1\n")
    (code / "README.md").write_text("# code\n")
    assert looks_like_project(code)
    talks = tmp_path / "talks"
    shutil.copytree(formats_dir / "codex" / "real2", talks / "codex")
    shutil.copytree(formats_dir / "aider" / "real2", talks / "aider")
    shutil.copy(formats_dir / "chatgpt" / "conversations.subset.json", talks / "conversations.json")
    assert not looks_like_project(talks)
    assert not looks_like_project(tmp_path / "missing")
    assert not looks_like_project(code / "README.md")  # a file is not a project folder
