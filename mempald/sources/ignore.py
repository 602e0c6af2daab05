"""Which files of a code or notes repository are worth reading ("projects" mode).

``RepoFilter`` is a small filter object in the manner of watchfiles' ``DefaultFilter``: built once per
root, it answers "may I descend into this folder?" and "may I read this file, and if not, why?", and walks
the tree yielding the files it allows. It honours every ``.gitignore`` in the tree (root and nested, with
git's precedence: the deepest file that has an opinion wins, and within a file the last matching pattern),
plus ``.git/info/exclude``; skips vendored, generated and tool folders (``SKIP_DIRS``); skips binary,
lock and minified files by name; and skips files over ``max_bytes``.

Symlinks are never followed, to files or folders: a link out of the root would read files the user did not
point at, a link inside the root only duplicates what the walk reaches anyway, and a link loop cannot trap
a walk that does not follow links. Folders that cannot be listed (permissions, races with deletion) are
skipped and counted, never fatal.

This module reads ``.gitignore`` files (I/O); it depends only on the standard library and pathspec.
"""

from __future__ import annotations

import os
import stat
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from pathspec import GitIgnoreSpec

from mempald.sources.reader import read_head

SKIP_DIRS: frozenset[str] = frozenset({
    # version control
    ".git", ".hg", ".svn", ".bzr", "_darcs", ".jj",
    # dependencies and virtual environments
    "node_modules", "bower_components", "jspm_packages", "vendor", "third_party", "Pods", ".bundle",
    ".venv", "venv", "env", ".env", "virtualenv", "site-packages", ".yarn", ".pnpm-store",
    # caches
    "__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".hypothesis", ".tox", ".nox", ".cache",
    ".parcel-cache", ".turbo", ".gradle", ".eslintcache", ".sass-cache", ".dart_tool", ".stack-work",
    ".zig-cache", "zig-cache", "zig-out", ".direnv", ".terraform", ".serverless", ".eggs",
    # build output
    "dist", "build", "target", "out", "_build", ".next", ".nuxt", ".svelte-kit", ".angular", ".expo",
    ".output", "DerivedData", "bin-release", "obj",
    # coverage and reports
    "coverage", "htmlcov", ".nyc_output",
    # editors and OS
    ".idea", ".vscode", ".vs", ".fleet", ".Trash", "$RECYCLE.BIN",
    # mempal's own data
    ".mempal", ".mempald",
})

# Folder names that end with these are build metadata (foo.egg-info, Foo.xcodeproj/xcuserdata).
_SKIP_DIR_SUFFIXES = (".egg-info", ".dist-info", ".xcassets")

BINARY_EXTENSIONS: frozenset[str] = frozenset({
    # images
    ".png", ".jpg", ".jpeg", ".gif", ".bmp", ".ico", ".icns", ".webp", ".tif", ".tiff", ".psd", ".heic",
    ".heif", ".avif", ".raw", ".cr2", ".nef", ".xcf", ".ai", ".eps", ".sketch", ".fig",
    # audio and video
    ".mp3", ".wav", ".flac", ".ogg", ".oga", ".m4a", ".aac", ".opus", ".mid", ".midi", ".mp4", ".m4v",
    ".mov", ".avi", ".mkv", ".webm", ".wmv", ".flv", ".mpg", ".mpeg",
    # archives and packages
    ".zip", ".tar", ".gz", ".tgz", ".bz2", ".tbz2", ".xz", ".txz", ".7z", ".rar", ".zst", ".lz", ".lz4",
    ".lzma", ".cab", ".jar", ".war", ".ear", ".whl", ".egg", ".deb", ".rpm", ".apk", ".ipa", ".dmg", ".iso",
    ".img", ".msi", ".pkg", ".snap", ".nupkg", ".gem", ".crx", ".xpi",
    # fonts
    ".ttf", ".otf", ".woff", ".woff2", ".eot", ".pfb", ".pfm",
    # compiled code and objects
    ".o", ".obj", ".a", ".lib", ".so", ".dylib", ".dll", ".exe", ".bin", ".class", ".pyc", ".pyo", ".pyd",
    ".wasm", ".elc", ".beam", ".dex", ".ko", ".out", ".pdb", ".idb", ".ilk", ".nib", ".rlib", ".rmeta",
    # databases and data blobs
    ".db", ".sqlite", ".sqlite3", ".db-wal", ".db-shm", ".mdb", ".accdb", ".dat", ".npy", ".npz", ".pkl",
    ".pickle", ".parquet", ".feather", ".arrow", ".avro", ".orc", ".h5", ".hdf5", ".nc", ".mat", ".sav",
    # model weights
    ".onnx", ".pt", ".pth", ".ckpt", ".safetensors", ".tflite", ".pb", ".gguf", ".ggml", ".mlmodel",
    # office documents and PDFs (not text; convert first)
    ".pdf", ".doc", ".docx", ".xls", ".xlsx", ".ppt", ".pptx", ".odt", ".ods", ".odp", ".numbers",
    ".pages", ".rtf",
    # misc
    ".swp", ".swo", ".bak", ".tmp", ".lockb", ".der",
})

# Files that exist to hold credentials: never read, whatever redaction would catch.
SECRET_FILES: frozenset[str] = frozenset({
    ".env", ".envrc", ".netrc", ".pgpass", ".pypirc", ".npmrc", ".git-credentials", ".htpasswd",
    "id_rsa", "id_dsa", "id_ecdsa", "id_ed25519", "credentials", "credentials.json", "secrets.json",
    "secrets.yaml", "secrets.yml", "service-account.json", "terraform.tfstate", "terraform.tfstate.backup",
})
_SECRET_SUFFIXES = (".pem", ".key", ".p12", ".pfx", ".keystore", ".jks", ".tfvars", ".ovpn", ".kdbx")
# .env.local, .env.production: secrets; .env.example and friends are documentation and are read.
_ENV_TEMPLATES = (".example", ".sample", ".template", ".dist", ".defaults")

# OS litter and worktree pointers.
SKIP_FILES: frozenset[str] = frozenset({".DS_Store", "Thumbs.db", "desktop.ini", ".git", "Icon\r"})

# Generated files that are text but only noise for recall.
LOCK_FILES: frozenset[str] = frozenset({
    "package-lock.json", "npm-shrinkwrap.json", "yarn.lock", "pnpm-lock.yaml", "bun.lockb", "poetry.lock",
    "Pipfile.lock", "pdm.lock", "uv.lock", "Cargo.lock", "Gemfile.lock", "composer.lock", "go.sum",
    "mix.lock", "pubspec.lock", "Podfile.lock", "flake.lock", "packages.lock.json", "gradle.lockfile",
    "conda-lock.yml", "deno.lock",
})
_MINIFIED_SUFFIXES = (".min.js", ".min.css", ".min.mjs", ".js.map", ".css.map", ".mjs.map", ".bundle.js")

_GITIGNORE_MAX = 1_000_000  # a .gitignore larger than this is not a .gitignore


def _load_spec(path: Path) -> GitIgnoreSpec | None:
    try:
        raw = read_head(path, _GITIGNORE_MAX)  # a FIFO or a device by that name is refused, never waited on
    except OSError:
        return None
    lines = raw.decode("utf-8", "replace").splitlines()
    return GitIgnoreSpec.from_lines(lines) if any(ln.strip() and not ln.startswith("#") for ln in lines) else None


class RepoFilter:
    """Ignore rules for one repository root. ``skipped`` counts, by reason, what the last ``walk`` left out."""

    def __init__(self, root: Path, max_bytes: int = 1_000_000, skip_lock_files: bool = True) -> None:
        self.root = Path(os.path.abspath(root))
        self._real_root = os.path.realpath(self.root)
        self.max_bytes = max_bytes
        self.skip_lock_files = skip_lock_files
        self.skipped: Counter[str] = Counter()
        # directory (relative parts) -> its .gitignore spec, or None when it has none; loaded lazily.
        self._specs: dict[tuple[str, ...], GitIgnoreSpec | None] = {}
        self._exclude = _load_spec(self.root / ".git" / "info" / "exclude")

    def __repr__(self) -> str:
        loaded = sum(1 for s in self._specs.values() if s is not None)
        return (f"{type(self).__name__}(root={str(self.root)!r}, max_bytes={self.max_bytes}, "
                f"skip_lock_files={self.skip_lock_files}, skip_dirs={len(SKIP_DIRS)}, "
                f"binary_extensions={len(BINARY_EXTENSIONS)}, gitignores_loaded={loaded})")

    def refresh(self) -> None:
        """Forget cached ``.gitignore`` rules (they are re-read on next use)."""
        self._specs.clear()
        self._exclude = _load_spec(self.root / ".git" / "info" / "exclude")

    # -- rules ---------------------------------------------------------------------------------------------

    def _rel(self, path: Path) -> tuple[str, ...] | None:
        try:
            rel = Path(os.path.abspath(path)).relative_to(self.root)
        except ValueError:
            return None
        return rel.parts

    def _spec(self, parts: tuple[str, ...]) -> GitIgnoreSpec | None:
        if parts not in self._specs:
            self._specs[parts] = _load_spec(self.root.joinpath(*parts, ".gitignore"))
        return self._specs[parts]

    def _ignored(self, parts: tuple[str, ...], is_dir: bool) -> bool:
        """Git's verdict for one path, given that its parent folders are not ignored."""
        suffix = "/" if is_dir else ""
        for depth in range(len(parts) - 1, -1, -1):  # deepest .gitignore first
            spec = self._spec(parts[:depth])
            if spec is None:
                continue
            verdict = spec.check_file("/".join(parts[depth:]) + suffix).include
            if verdict is not None:
                return verdict
        if self._exclude is not None:
            verdict = self._exclude.check_file("/".join(parts) + suffix).include
            if verdict is not None:
                return verdict
        return False

    @staticmethod
    def _skip_dir_name(name: str) -> bool:
        return name in SKIP_DIRS or name.endswith(_SKIP_DIR_SUFFIXES)

    def _dir_reason(self, parts: tuple[str, ...]) -> str | None:
        if not parts:
            return None
        if self._skip_dir_name(parts[-1]):
            return "skip-dir"
        if self._ignored(parts, is_dir=True):
            return "gitignored"
        return None

    def _ancestors_reason(self, parts: tuple[str, ...]) -> str | None:
        for depth in range(1, len(parts)):
            reason = self._dir_reason(parts[:depth])
            if reason is not None:
                return reason
        return None

    @staticmethod
    def _secret_name(name: str, lower: str) -> bool:
        if name in SECRET_FILES or lower.endswith(_SECRET_SUFFIXES):
            return True
        return lower.startswith(".env.") and not lower.endswith(_ENV_TEMPLATES)

    def _file_reason(self, parts: tuple[str, ...], size: int) -> str | None:
        name = parts[-1]
        if name in SKIP_FILES:
            return "skip-file"
        if self._ignored(parts, is_dir=False):
            return "gitignored"
        lower = name.lower()
        if self._secret_name(name, lower):
            return "secret-file"
        if self.skip_lock_files and name in LOCK_FILES:
            return "lock-file"
        if lower.endswith(_MINIFIED_SUFFIXES):
            return "minified"
        if os.path.splitext(lower)[1] in BINARY_EXTENSIONS:
            return "binary-extension"
        if size > self.max_bytes:
            return "too-large"
        return None

    def dir_allowed(self, path: Path) -> bool:
        """May the walk descend into ``path``? (False outside the root, for skipped and ignored folders
        and for folders inside them.)"""
        parts = self._rel(path)
        if parts is None:
            return False
        return self._ancestors_reason(parts) is None and self._dir_reason(parts) is None

    def file_allowed(self, path: Path, size: int) -> str | None:
        """None when the file at ``path`` (of ``size`` bytes) should be read, else why not: "outside-root",
        "symlink", "skip-dir", "skip-file", "gitignored", "secret-file", "lock-file", "minified",
        "binary-extension" or "too-large". For a path from a watcher event: the walk checks links itself."""
        parts = self._rel(path)
        if parts is None or not parts:
            return "outside-root"
        if os.path.realpath(path) != os.path.join(self._real_root, *parts):
            return "symlink"  # the file or one of its folders is a link
        return self._ancestors_reason(parts) or self._file_reason(parts, size)

    # -- walking -------------------------------------------------------------------------------------------

    def walk(self) -> Iterator[Path]:
        """The allowed regular files under the root: each folder's files in name order, then its subfolders,
        depth-first. ``.gitignore`` files are re-read at the start of each walk; ``skipped`` is reset and
        counts what was left out, by reason (the ``file_allowed`` reasons, plus "unreadable" and "special")."""
        self.refresh()
        self.skipped = Counter()
        try:
            st = os.stat(self.root)
        except OSError:
            self.skipped["unreadable"] += 1
            return
        if not stat.S_ISDIR(st.st_mode):
            return
        seen: set[tuple[int, int]] = {(st.st_dev, st.st_ino)}
        stack: list[tuple[str, ...]] = [()]
        while stack:
            parts = stack.pop()
            directory = self.root.joinpath(*parts)
            try:
                with os.scandir(directory) as it:
                    entries = sorted(it, key=lambda e: e.name)
            except OSError:
                self.skipped["unreadable"] += 1
                continue
            subdirs: list[tuple[str, ...]] = []
            for entry in entries:
                child = (*parts, entry.name)
                try:
                    est = entry.stat(follow_symlinks=False)
                except OSError:
                    self.skipped["unreadable"] += 1
                    continue
                mode = est.st_mode
                if stat.S_ISLNK(mode):
                    self.skipped["symlink"] += 1
                elif stat.S_ISDIR(mode):
                    key = (est.st_dev, est.st_ino)
                    reason = self._dir_reason(child)
                    if reason is not None:
                        self.skipped[reason] += 1
                    elif key not in seen:  # a bind mount back up the tree would otherwise loop
                        seen.add(key)
                        subdirs.append(child)
                elif stat.S_ISREG(mode):
                    reason = self._file_reason(child, est.st_size)
                    if reason is not None:
                        self.skipped[reason] += 1
                    else:
                        yield directory / entry.name
                else:
                    self.skipped["special"] += 1  # fifos, sockets, devices: reading one could block
            stack.extend(reversed(subdirs))
