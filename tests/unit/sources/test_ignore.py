from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from mempald.sources.ignore import SKIP_DIRS, RepoFilter


def write(root: Path, rel: str, text: str = "some text content\n") -> Path:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)
    return p


def walked(f: RepoFilter) -> list[str]:
    return [p.relative_to(f.root).as_posix() for p in f.walk()]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    for rel in ["README.md", "src/app.py", "src/util/helpers.py", "docs/guide.md"]:
        write(root, rel)
    return root


def test_walk_yields_text_files_in_order(repo: Path) -> None:
    assert walked(RepoFilter(repo)) == ["README.md", "docs/guide.md", "src/app.py", "src/util/helpers.py"]


def test_skip_dirs(repo: Path) -> None:
    for d in ["node_modules/lib", ".git/objects", "__pycache__", ".venv/lib", "dist", "src/pkg.egg-info",
              "vendor/x", ".mypy_cache", "target/debug", "coverage"]:
        write(repo, f"{d}/file.txt")
    assert walked(RepoFilter(repo)) == ["README.md", "docs/guide.md", "src/app.py", "src/util/helpers.py"]
    assert {".git", "node_modules", "__pycache__", ".venv", "venv", "dist", "build", ".next"} <= SKIP_DIRS


def test_root_gitignore(repo: Path) -> None:
    write(repo, ".gitignore", "# comment\n*.log\n!keep.log\nsecrets/\n/top-only.md\n")
    write(repo, "debug.log")
    write(repo, "keep.log")
    write(repo, "src/trace.log")
    write(repo, "secrets/a.md")
    write(repo, "top-only.md")
    write(repo, "src/top-only.md")
    f = RepoFilter(repo)
    files = walked(f)
    assert "debug.log" not in files and "src/trace.log" not in files
    assert "keep.log" in files
    assert "secrets/a.md" not in files
    assert "top-only.md" not in files and "src/top-only.md" in files
    assert ".gitignore" in files
    assert f.skipped["gitignored"] == 4  # debug.log, src/trace.log, secrets/, top-only.md


def test_nested_gitignore_rules_apply_below_their_folder(repo: Path) -> None:
    write(repo, ".gitignore", "*.log\n")
    write(repo, "src/.gitignore", "*.generated.py\n!important.log\n/local.md\n")
    write(repo, "gen.generated.py")  # not under src: the nested rule does not apply
    write(repo, "src/x.generated.py")
    write(repo, "src/util/y.generated.py")
    write(repo, "src/important.log")  # re-included by the deeper file
    write(repo, "important.log")  # still ignored at the root
    write(repo, "src/local.md")  # anchored to src/
    write(repo, "src/util/local.md")
    files = walked(RepoFilter(repo))
    assert "gen.generated.py" in files
    assert "src/x.generated.py" not in files and "src/util/y.generated.py" not in files
    assert "src/important.log" in files and "important.log" not in files
    assert "src/local.md" not in files and "src/util/local.md" in files


def test_ignored_folder_cannot_be_reincluded_from_inside(repo: Path) -> None:
    write(repo, ".gitignore", "private/\n")
    write(repo, "private/.gitignore", "!*\n")
    write(repo, "private/notes.md")
    f = RepoFilter(repo)
    assert "private/notes.md" not in walked(f)
    assert f.file_allowed(repo / "private" / "notes.md", 10) == "gitignored"
    assert not f.dir_allowed(repo / "private")


def test_git_info_exclude(repo: Path) -> None:
    write(repo, ".git/info/exclude", "scratch.md\n")
    write(repo, "scratch.md")
    assert "scratch.md" not in walked(RepoFilter(repo))


def test_gitignore_changes_are_seen_on_the_next_walk(repo: Path) -> None:
    f = RepoFilter(repo)
    assert "README.md" in walked(f)
    write(repo, ".gitignore", "README.md\n")
    assert "README.md" not in walked(f)


def test_file_reasons(repo: Path) -> None:
    f = RepoFilter(repo, max_bytes=100)
    write(repo, ".gitignore", "*.log\n")
    cases = {
        "a.log": "gitignored",
        "logo.png": "binary-extension",
        "archive.tar.gz": "binary-extension",
        "mod.pyc": "binary-extension",
        "lib.so": "binary-extension",
        "font.woff2": "binary-extension",
        "package-lock.json": "lock-file",
        "uv.lock": "lock-file",
        "app.min.js": "minified",
        ".env": "secret-file",
        ".env.production": "secret-file",
        "server.pem": "secret-file",
        "id_ed25519": "secret-file",
        ".DS_Store": "skip-file",
        "node_modules/x/index.js": "skip-dir",
    }
    for rel, reason in cases.items():
        assert f.file_allowed(repo / rel, 10) == reason, rel
    assert f.file_allowed(repo / ".env.example", 10) is None
    assert f.file_allowed(repo / "big.md", 101) == "too-large"
    assert f.file_allowed(repo / "ok.md", 100) is None
    assert f.file_allowed(repo.parent / "elsewhere.md", 10) == "outside-root"
    assert f.file_allowed(repo, 10) == "outside-root"


def test_lock_files_can_be_kept(repo: Path) -> None:
    assert RepoFilter(repo, skip_lock_files=False).file_allowed(repo / "uv.lock", 10) is None


def test_walk_counts_skips_by_reason(repo: Path) -> None:
    write(repo, "big.md", "x" * 500)
    write(repo, "pic.png", "not really a png")
    write(repo, "node_modules/a.js")
    f = RepoFilter(repo, max_bytes=100)
    files = walked(f)
    assert "big.md" not in files and "pic.png" not in files
    assert f.skipped["too-large"] == 1
    assert f.skipped["binary-extension"] == 1
    assert f.skipped["skip-dir"] == 1


def test_dir_allowed(repo: Path) -> None:
    write(repo, ".gitignore", "out-of-scope/\n")
    f = RepoFilter(repo)
    assert f.dir_allowed(repo)
    assert f.dir_allowed(repo / "src" / "util")
    assert not f.dir_allowed(repo / "node_modules")
    assert not f.dir_allowed(repo / "src" / "node_modules" / "deep")
    assert not f.dir_allowed(repo / "out-of-scope")
    assert not f.dir_allowed(repo.parent)


def test_symlinks_are_not_followed_and_loops_end(tmp_path: Path, repo: Path) -> None:
    outside = tmp_path / "outside"
    write(outside, "leak.md", "must not be read")
    (repo / "src" / "loop").symlink_to(repo, target_is_directory=True)
    (repo / "src" / "self").symlink_to(repo / "src", target_is_directory=True)
    (repo / "escape").symlink_to(outside, target_is_directory=True)
    (repo / "leak.md").symlink_to(outside / "leak.md")
    (repo / "dangling.md").symlink_to(repo / "nothing-here.md")
    f = RepoFilter(repo)
    files = walked(f)
    assert files == ["README.md", "docs/guide.md", "src/app.py", "src/util/helpers.py"]
    assert f.skipped["symlink"] == 5
    assert f.file_allowed(repo / "leak.md", 10) == "symlink"
    assert f.file_allowed(repo / "escape" / "leak.md", 10) == "symlink"


def test_root_given_through_a_symlink_is_walked(tmp_path: Path, repo: Path) -> None:
    link = tmp_path / "link-to-repo"
    link.symlink_to(repo, target_is_directory=True)
    f = RepoFilter(link)
    assert len(walked(f)) == 4
    assert f.file_allowed(link / "README.md", 10) is None


def test_permission_denied_folder_is_skipped(monkeypatch: pytest.MonkeyPatch, repo: Path) -> None:
    blocked = repo / "src" / "util"
    real_scandir = os.scandir

    def scandir(path: str | os.PathLike[str] | int) -> Iterator[os.DirEntry[str]]:
        # (an int is a folder's descriptor: the tmp_path clean-up's rmtree, which may run while this is patched)
        if not isinstance(path, int) and Path(path) == blocked:
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    f = RepoFilter(repo)
    assert walked(f) == ["README.md", "docs/guide.md", "src/app.py"]
    assert f.skipped["unreadable"] == 1


@pytest.mark.skipif(sys.platform == "win32" or os.geteuid() == 0, reason="root ignores directory permissions")
def test_permission_denied_folder_for_real(repo: Path) -> None:
    blocked = repo / "src" / "util"
    blocked.chmod(0)
    try:
        f = RepoFilter(repo)
        assert walked(f) == ["README.md", "docs/guide.md", "src/app.py"]
        assert f.skipped["unreadable"] == 1
    finally:
        blocked.chmod(0o755)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no fifos here")
def test_special_files_are_skipped(repo: Path) -> None:
    os.mkfifo(repo / "pipe.md")
    f = RepoFilter(repo)
    assert "pipe.md" not in walked(f)  # reading a fifo would block forever
    assert f.skipped["special"] == 1


def test_missing_root_walks_nothing(tmp_path: Path) -> None:
    f = RepoFilter(tmp_path / "nope")
    assert walked(f) == []
    assert f.skipped["unreadable"] == 1


def test_unreadable_gitignore_is_ignored(repo: Path) -> None:
    (repo / ".gitignore").mkdir()  # a folder named .gitignore: not a rules file
    assert "README.md" in walked(RepoFilter(repo))


def test_repr_is_readable(repo: Path) -> None:
    write(repo, ".gitignore", "*.log\n")
    f = RepoFilter(repo, max_bytes=5000)
    walked(f)
    text = repr(f)
    assert text.startswith("RepoFilter(root=")
    assert str(repo) in text and "max_bytes=5000" in text and "gitignores_loaded=1" in text
