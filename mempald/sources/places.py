"""Where the agents keep their sessions on this machine: every registered format's declared ``places``,
resolved for this platform (blocking only for ``found``).

A place's paths are templates (``~``, ``$XDG_DATA_HOME``, ``$XDG_CONFIG_HOME``, ``%APPDATA%``, ``%LOCALAPPDATA%``,
``%USERPROFILE%``), each with its usual default when the variable is unset, and ``${NAME:-fallback}`` for an
agent's own override (``${AGENT_HOME:-~}/.agent``; fallbacks nest), as the daemon's environment has it. A place
with a ``setting`` is moved or turned off ("") by that ``[sources]`` key; ``sources.skip`` turns off any format's
places by name.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from mempald.config import Settings
from mempald.normalize import registry
from mempald.normalize.format import Format, Place

_VAR = re.compile(r"\$\{?([A-Z_]+)\}?|%([A-Z_]+)%")
_FALLBACK = re.compile(r"\$\{([A-Z_]+):-([^{}]*)\}")  # the innermost ``${NAME:-fallback}``


@dataclass(frozen=True, slots=True)
class Found:
    """One default root of one format on this machine (it may not exist yet)."""

    fmt: Format
    place: Place
    root: Path


def _defaults(home: Path) -> dict[str, Path]:
    return {"XDG_DATA_HOME": home / ".local/share", "XDG_CONFIG_HOME": home / ".config",
            "APPDATA": home / "AppData/Roaming", "LOCALAPPDATA": home / "AppData/Local", "USERPROFILE": home,
            "HOME": home}


def expand(template: str, env: Mapping[str, str] | None = None, home: Path | None = None) -> Path:
    """A place's path template on this machine."""
    env = os.environ if env is None else env
    home = Path(env.get("HOME") or Path.home()) if home is None else home
    defaults = _defaults(home)

    def var(m: re.Match[str]) -> str:
        name = m.group(1) or m.group(2)
        return env.get(name) or str(defaults.get(name, m.group(0)))

    text = template
    for _ in range(8):  # innermost first: a fallback may hold another
        text, n = _FALLBACK.subn(lambda m: env.get(m.group(1)) or m.group(2), text)
        if not n:
            break
    text = _VAR.sub(var, text)
    if text == "~" or text.startswith(("~/", "~\\")):
        text = str(home) + text[1:]
    return Path(text)


def templates(place: Place, platform: str = sys.platform) -> tuple[str, ...]:
    if platform == "darwin":
        return place.macos
    if platform.startswith(("win", "cygwin")):
        return place.windows
    return place.linux


def default_roots(settings: Settings, platform: str = sys.platform,
                  env: Mapping[str, str] | None = None) -> list[Found]:
    """Every format's default roots on this platform, in registry order, once each (a root two places share
    goes to the first)."""
    out: list[Found] = []
    seen: set[Path] = set()
    skip = set(settings.sources.skip)
    for fmt in registry.FORMATS:
        if fmt.name in skip:
            continue
        for place in fmt.places:
            paths = templates(place, platform)
            chosen = getattr(settings.sources, place.setting, None) if place.setting else None
            if isinstance(chosen, str):  # a [sources] key moves the place, or turns it off ("")
                paths = (chosen,) if chosen else ()
            for raw in paths:
                root = expand(raw, env)
                if root.is_dir():  # as watched folders are: a ~/.claude linked elsewhere owns the paths hooks send
                    root = root.resolve()
                if root not in seen:
                    seen.add(root)
                    out.append(Found(fmt, place, root))
    return out
