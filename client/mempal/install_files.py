"""The files ``install-hooks`` / ``install-mcp`` touch: reading them, writing them safely, saying what changed.

Merge, never clobber; idempotent (an unchanged result writes nothing); a backup ``<file>.bak-<timestamp>`` before
a file is changed; atomic writes; ``--dry-run`` prints what a file would become. Also where Codex keeps its files
and whether its hooks feature is on. Stdlib only.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

Json = dict[str, Any]


class InstallError(Exception):
    """A file cannot be merged safely (not JSON, wrong shape); nothing was written."""


def script(name: str) -> str | None:
    """An installed console script: the one beside this interpreter first (same install), else on PATH."""
    beside = Path(sys.executable).parent / name
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which(name)


def codex_home() -> Path:
    env = os.environ.get("CODEX_HOME")
    return Path(env).expanduser() if env else Path.home() / ".codex"


# files -------------------------------------------------------------------------------------------------------
def read_json(path: Path) -> Json:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise InstallError(f"{path} is not valid JSON ({exc}); fix it or move it away, nothing was changed") from None
    if not isinstance(data, dict):
        raise InstallError(f"{path} does not hold a JSON object; nothing was changed")
    return data


def backup(path: Path) -> Path | None:
    if not path.exists():
        return None
    stamp = time.strftime("%Y%m%d-%H%M%S")
    target = path.with_name(f"{path.name}.bak-{stamp}")
    n = 1
    while target.exists():
        n += 1
        target = path.with_name(f"{path.name}.bak-{stamp}-{n}")
    shutil.copy2(path, target)
    return target


def write_text_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = path.stat().st_mode & 0o777 if path.exists() else 0o644
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def dumps(data: Json) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


@dataclass(frozen=True, slots=True)
class Change:
    path: Path
    changed: bool
    text: str
    backup: Path | None = None


def apply(path: Path, before: Json, after: Json, *, dry_run: bool) -> Change:
    text = dumps(after)
    if after == before and path.exists():
        return Change(path, False, text)
    if dry_run:
        return Change(path, True, text)
    saved = backup(path)
    write_text_atomic(path, text)
    return Change(path, True, text, saved)


def _say(msg: str) -> None:
    print(msg, file=sys.stderr)


def report(change: Change, what: str, *, dry_run: bool) -> None:
    if dry_run:
        _say(f"# {change.path} would {'become' if change.changed else 'stay'}:")
        sys.stdout.write(change.text)
        return
    if not change.changed:
        _say(f"{what}: already up to date in {change.path}; nothing changed")
        return
    extra = f" (backup: {change.backup})" if change.backup else ""
    _say(f"{what}: wrote {change.path}{extra}")



# codex feature flag ------------------------------------------------------------------------------------------
def codex_hooks_flag(config: Path) -> str:
    """``on``, ``off`` (explicitly disabled), ``absent`` (not set: on, the default) or ``unreadable``; ``alias``
    when only the deprecated ``codex_hooks`` turns them on."""
    try:
        with config.open("rb") as fh:
            data = tomllib.load(fh)
    except FileNotFoundError:
        return "absent"
    except (OSError, tomllib.TOMLDecodeError):
        return "unreadable"
    features = data.get("features")
    if not isinstance(features, dict):
        return "absent"
    values = [features.get(k) for k in ("hooks", "codex_hooks") if k in features]
    if any(v is False for v in values):
        return "off"
    if features.get("hooks") is True:
        return "on"
    if features.get("codex_hooks") is True:
        return "alias"
    return "absent"


CODEX_REVIEW = ("Codex runs new or changed hooks only once you have reviewed them: open `/hooks` in Codex and "
                "trust mempal's.")


def codex_advice(config: Path) -> list[str]:
    """What to tell the user after Codex's hooks.json was written. Hooks are on by default in current Codex;
    ``[features] codex_hooks`` is a deprecated alias of ``[features] hooks``; new hooks wait for the user's
    review in ``/hooks``."""
    flag = codex_hooks_flag(config)
    out = [CODEX_REVIEW]
    if flag == "off":
        out.insert(0, f"warning: Codex hooks are turned off in {config} (`[features]` `hooks = false`); remove that "
                      "line or set `hooks = true`, then restart Codex")
    elif flag == "alias":
        out.append(f"note: {config} turns hooks on with `codex_hooks`, a deprecated alias; hooks are on by default "
                   "now (`[features] hooks = true` if you want it said)")
    elif flag == "unreadable":
        out.append(f"warning: cannot read {config} to check whether Codex hooks are turned off")
    return out
