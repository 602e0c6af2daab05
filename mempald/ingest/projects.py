"""Code and notes of a project folder (``watch add DIR --mode projects``): its settings and its chunks."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from mempald.normalize.model import Exchange
from mempald.normalize.wings import normal_wing
from mempald.sources.reader import open_regular, read_capped

SETTINGS_MAX = 1024 * 1024  # a project's mempal.toml (larger: not one mempal init wrote)


@dataclass(frozen=True, slots=True)
class ProjectSettings:
    wing: str = ""
    rooms: dict[str, str] = field(default_factory=dict)


def project_settings(root: Path) -> ProjectSettings:
    """The project's ``mempal.toml`` (written by ``mempal init``): its wing and folder -> room map."""
    import tomllib

    try:
        # a FIFO or a device by that name is refused, never waited on
        raw = tomllib.loads(read_capped(root / "mempal.toml", SETTINGS_MAX).decode("utf-8"))
    except (OSError, ValueError):
        return ProjectSettings()
    wing = raw.get("wing") if isinstance(raw.get("wing"), str) else ""
    rooms = raw.get("rooms")
    if not isinstance(rooms, dict):
        rooms = {}
    return ProjectSettings(normal_wing(str(wing)), {str(k): str(v) for k, v in rooms.items() if isinstance(v, str)})


def project_exchanges(path: Path, root: Path, size: int) -> tuple[list[Exchange], str]:
    """Chunks of a code or notes file (about 800 characters, 100 overlap), or the reason it is skipped."""
    from mempald.text.codechunk import chunk_text, is_probably_binary

    if size > 1_000_000:
        return [], "too-large"
    with open_regular(path) as fh:  # a FIFO or a device named by a watch event is refused, never waited on
        data = fh.read()
    if is_probably_binary(data[:8192]):
        return [], "binary"
    text = data.decode("utf-8", errors="replace")
    rel = path.relative_to(root).as_posix() if path != root else path.name
    out = []
    for chunk in chunk_text(text):
        out.append(Exchange(
            source_kind="project", session_id=rel, key=f"{chunk.start_line}-{chunk.end_line}:{chunk.index}",
            user="", assistant=chunk.text, position=chunk.index, kind="code", title=rel,
            extra=(("lines", f"{chunk.start_line}-{chunk.end_line}"),),
        ))
    return out, ""
