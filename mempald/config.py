"""Settings: loaded once into frozen dataclasses, validated, overridable from the environment.

``config.toml`` lives in the platformdirs config dir (``MEMPAL_CONFIG_DIR`` overrides it). Every key is
validated: an unknown key or a wrong type is an error that names the key. Any value can be overridden by
an environment variable ``MEMPAL_<SECTION>_<KEY>`` (for example ``MEMPAL_STORE_URL``); ``origins`` records
where each value came from, for ``mempal config show``.
"""

from __future__ import annotations

import dataclasses
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, get_type_hints

import platformdirs
import tomli_w

from mempald.config_values import coerce

APP = "mempald"


class ConfigError(Exception):
    """The configuration is invalid; the message names the key."""


def config_dir() -> Path:
    env = os.environ.get("MEMPAL_CONFIG_DIR")
    return Path(env).expanduser() if env else Path(platformdirs.user_config_dir(APP))


def data_dir() -> Path:
    env = os.environ.get("MEMPAL_DATA_DIR")
    return Path(env).expanduser() if env else Path(platformdirs.user_data_dir(APP))


def config_path() -> Path:
    return config_dir() / "config.toml"


@dataclass(frozen=True, slots=True)
class SourceSpec:
    """A watched folder: ``mode`` is ``convos`` (transcripts and exports), ``projects`` (code and notes)
    or ``pack`` (a markdown folder re-packed on change)."""

    path: str
    mode: str = "convos"
    wing: str = ""
    token_budget: int = 0
    output: str = ""


@dataclass(frozen=True, slots=True)
class DaemonSettings:
    max_line_bytes: int = 1024 * 1024
    idle_timeout_s: float = 60.0
    request_timeout_s: float = 120.0
    shutdown_timeout_s: float = 10.0
    max_clients: int = 512


@dataclass(frozen=True, slots=True)
class StoreSettings:
    path: str = ""  # default: <data dir>/store
    url: str = ""  # http(s)://host:6333 for a Qdrant server; ":memory:" or "path:/dir" for qdrant-client local
    api_key_env: str = "MEMPAL_QDRANT_API_KEY"
    api_key_file: str = ""
    collection: str = "mempal"
    machine: str = ""  # default: the host name
    timeout_s: float = 10.0
    shard_number: int = 0  # 0: let the server decide
    replication_factor: int = 0
    # Embedded store only: keep the shard in a child process, so no Qdrant Edge call holds the daemon's GIL.
    process: bool = True
    index_after: int = 20_000  # embedded: vectors unindexed before an idle build (store.maintenance); 0: never
    index_quiet_s: float = 30.0  # ... and nothing has been queued for this long
    index_during_backfill: int = 8_000  # ... or each time so many drawers were written while busy (0: never)
    # Embedded store only: writes pause (ingest waits, search goes on) while the disk holding the store has less
    # than this many MB free, counting what its preallocated files may still take (mempald.store.space).
    min_free_mb: int = 256


@dataclass(frozen=True, slots=True)
class EmbedSettings:
    model: str = "default"  # "default" = all-MiniLM-L6-v2 int8 from PyPI; or any fastembed model name
    threads: int = 0  # 0 = all cores
    # Full-length texts' worth of tokens per model call (mempald.ingest.dense). The model's fused graph is fastest
    # at 2-4 (bench/PERF_RESULTS.md), and onnxruntime keeps memory for its largest batch: 8 -> ~540 MB RSS.
    batch_size: int = 2
    max_tokens: int = 250  # MiniLM reads 256 tokens including [CLS] and [SEP]


@dataclass(frozen=True, slots=True)
class IngestSettings:
    redact_secrets: bool = True
    extract_general: bool = True
    debounce_ms: int = 150
    reconcile_interval_s: float = 300.0
    lock_timeout_s: float = 30.0
    max_line_bytes: int = 16 * 1024 * 1024
    # A file (or Slack export) larger than this is not read, but counted and logged: documents are read whole.
    max_file_bytes: int = 512 * 1024 * 1024
    read_chunk_bytes: int = 2 * 1024 * 1024
    # Filesystem events are hints (the reconcile scan is the truth): off, only the scans find changes.
    watch_events: bool = True
    event_buffer: int = 8192  # events queued between the watcher thread and the loop; more sets a reconcile
    # Worker processes that build the backfill's drawers and keyword vectors (mempald.ingest.build_pool), started
    # while a backfill is read and stopped when idle; 0: built in the daemon's own process.
    build_workers: int = 1
    # What is never read: gitignore-style globs over file paths and session cwds (mempald.sources.exclude).
    exclude: tuple[str, ...] = ()
    # Drawers one exchange of a file makes at most (0: no cap); the rest stays in the file (mempald.ingest.drawers).
    max_drawers_per_exchange: int = 128


@dataclass(frozen=True, slots=True)
class SourcesSettings:
    # Every agent's own folders (its format's declared places) are watched where they exist or appear later;
    # these two move or turn off (""): Claude Code's and Codex's; ``skip`` turns off others by format name.
    claude_projects: str = "~/.claude/projects"
    codex_sessions: str = "~/.codex/sessions"
    skip: tuple[str, ...] = ()
    watch: tuple[SourceSpec, ...] = ()


@dataclass(frozen=True, slots=True)
class SearchSettings:
    limit: int = 10
    dense_weight: float = 0.3  # chosen by bench/locomo.py (see mempald.search.fusion)
    candidates: int = 100
    # The relevance floor (mempald.search.fusion.relevance: the estimated probability that a hit is what the query
    # asks for): hits below it are not returned, so a query that matches nothing answers "no memories match".
    # Low on purpose: it removes no hit LoCoMo finds in the first ten (bench/locomo.py).
    min_score: float = 0.02


@dataclass(frozen=True, slots=True)
class HooksSettings:
    recall: bool = True
    # The relevance a memory needs to be injected (see search.min_score): the floor with the best gain on every
    # half of bench/recall.py's coding and LoCoMo sets (answerable prompts answered minus unrelated ones injected).
    recall_threshold: float = 0.13
    # ... and a memory of another project (bench/recall.py's cross-project sets; above 1: never beyond the project)
    recall_beyond_threshold: float = 0.35
    recall_max_tokens: int = 600
    stop_every: int = 15
    stop_mode: str = "silent"  # silent | ask
    timeout_s: float = 2.0


@dataclass(frozen=True, slots=True)
class WakeupSettings:
    identity_path: str = ""  # default: <config dir>/identity.md
    l1_budget: int = 800


@dataclass(frozen=True, slots=True)
class McpSettings:
    read_only: bool = False  # `mempal mcp` offers only the tools that change nothing (as `mempal mcp --read-only`)


@dataclass(frozen=True, slots=True)
class SyncSettings:  # one memory across machines through a folder the user already syncs (docs/SYNC.md)
    dir: str = ""  # the shared folder ("" : not syncing); each machine writes only <dir>/<machine id>/
    encrypt: bool = False  # segments sealed with the key kept 0600 in the config dir (sync.key)
    interval_s: float = 2.0  # how often the folder is looked at and the outbox written
    dense_wait_s: float = 60.0  # a drawer waits this long for its dense vector before it is written without one


@dataclass(frozen=True, slots=True)
class ArchiveSettings:  # the byte-exact transcript archive (mempald.archive), for the formats that declare it
    enabled: bool = True
    on: tuple[str, ...] = ()  # source keys or root folders archived though their format is not
    off: tuple[str, ...] = ()  # ... not archived though it is
    reserve_mb: int = 256  # archiving stops (ingest goes on) under store.min_free_mb + this much free space


@dataclass(frozen=True, slots=True)
class Settings:
    daemon: DaemonSettings = field(default_factory=DaemonSettings)
    store: StoreSettings = field(default_factory=StoreSettings)
    embed: EmbedSettings = field(default_factory=EmbedSettings)
    ingest: IngestSettings = field(default_factory=IngestSettings)
    sources: SourcesSettings = field(default_factory=SourcesSettings)
    search: SearchSettings = field(default_factory=SearchSettings)
    hooks: HooksSettings = field(default_factory=HooksSettings)
    wakeup: WakeupSettings = field(default_factory=WakeupSettings)
    mcp: McpSettings = field(default_factory=McpSettings)
    sync: SyncSettings = field(default_factory=SyncSettings)
    archive: ArchiveSettings = field(default_factory=ArchiveSettings)
    people: tuple[tuple[str, str], ...] = ()
    origins: tuple[tuple[str, str], ...] = ()  # "section.key" -> "default" | "file" | "env:NAME"

    def origin(self, key: str) -> str:
        return dict(self.origins).get(key, "default")

    def store_path(self) -> Path:
        return Path(self.store.path).expanduser() if self.store.path else data_dir() / "store"

    def identity_path(self) -> Path:
        p = self.wakeup.identity_path
        return Path(p).expanduser() if p else config_dir() / "identity.md"


_SECTIONS: dict[str, type[Any]] = {
    "daemon": DaemonSettings,
    "store": StoreSettings,
    "embed": EmbedSettings,
    "ingest": IngestSettings,
    "sources": SourcesSettings,
    "search": SearchSettings,
    "hooks": HooksSettings,
    "wakeup": WakeupSettings,
    "mcp": McpSettings,
    "sync": SyncSettings,
    "archive": ArchiveSettings,
}
_CHOICES = {
    "hooks.stop_mode": ("silent", "ask"),
}
_MODES = ("convos", "projects", "pack")


def _coerce(key: str, value: Any, typ: Any) -> Any:
    try:
        return coerce(key, value, typ)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


def _source_spec(key: str, raw: Any) -> SourceSpec:
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{key}: each watched source must be a table with a path")
    hints = get_type_hints(SourceSpec)
    values: dict[str, Any] = {}
    for k, v in raw.items():
        if k not in hints:
            raise ConfigError(f"{key}.{k}: unknown key (known: {', '.join(hints)})")
        values[k] = _coerce(f"{key}.{k}", v, hints[k])
    if not values.get("path"):
        raise ConfigError(f"{key}.path: required")
    if values.get("mode", "convos") not in _MODES:
        raise ConfigError(f"{key}.mode: must be one of {', '.join(_MODES)}, got {values['mode']!r}")
    return SourceSpec(**values)


def _section(name: str, raw: Mapping[str, Any], env: Mapping[str, str], origins: dict[str, str]) -> Any:
    cls = _SECTIONS[name]
    hints = get_type_hints(cls)
    values: dict[str, Any] = {}
    for k, v in raw.items():
        key = f"{name}.{k}"
        if k not in hints:
            raise ConfigError(f"{key}: unknown key (known: {', '.join(hints)})")
        if name == "sources" and k == "watch":
            if not isinstance(v, list):
                raise ConfigError(f"{key}: expected a list of tables ([[sources.watch]])")
            values[k] = tuple(_source_spec(f"{key}[{i}]", item) for i, item in enumerate(v))
        else:
            values[k] = _coerce(key, v, hints[k])
        origins[key] = "file"
    for k, typ in hints.items():
        env_name = f"MEMPAL_{name.upper()}_{k.upper()}"
        if env_name in env and not (name == "sources" and k == "watch"):
            values[k] = _coerce(f"{name}.{k} (from {env_name})", env[env_name], typ)
            origins[f"{name}.{k}"] = f"env:{env_name}"
    for key, choices in _CHOICES.items():
        sec, _, k = key.partition(".")
        if sec == name and k in values and values[k] not in choices:
            raise ConfigError(f"{key}: must be one of {', '.join(choices)}, got {values[k]!r}")
    return cls(**values)


def parse_settings(raw: Mapping[str, Any], env: Mapping[str, str] | None = None) -> Settings:
    env = os.environ if env is None else env
    origins: dict[str, str] = {}
    sections: dict[str, Any] = {}
    people: tuple[tuple[str, str], ...] = ()
    for name, body in raw.items():
        if name == "people":
            if not isinstance(body, Mapping) or not all(isinstance(v, str) for v in body.values()):
                raise ConfigError("people: expected a table of name = \"CODE\"")
            people = tuple(sorted((str(k), str(v)) for k, v in body.items()))
            continue
        if name not in _SECTIONS:
            raise ConfigError(f"{name}: unknown section (known: {', '.join([*_SECTIONS, 'people'])})")
        if not isinstance(body, Mapping):
            raise ConfigError(f"{name}: expected a table")
    for name in _SECTIONS:
        body = raw.get(name, {})
        sections[name] = _section(name, body, env, origins)
    settings = Settings(**sections, people=people, origins=tuple(sorted(origins.items())))
    _cross_check(settings)
    return settings


def _cross_check(s: Settings) -> None:
    if s.embed.max_tokens < 16 or s.embed.max_tokens > 8192:
        raise ConfigError("embed.max_tokens: must be between 16 and 8192")
    if s.embed.batch_size < 1:
        raise ConfigError("embed.batch_size: must be at least 1")
    if s.ingest.event_buffer < 1:
        raise ConfigError("ingest.event_buffer: must be at least 1")
    if not 0 <= s.ingest.build_workers <= 64:
        raise ConfigError("ingest.build_workers: must be between 0 (build in the daemon) and 64")
    if s.ingest.reconcile_interval_s <= 0:
        raise ConfigError("ingest.reconcile_interval_s: must be positive")
    for key, value, what in (("index_after", s.store.index_after, "0 (never) or a number of vectors"),
                             ("index_during_backfill", s.store.index_during_backfill,
                              "0 (only when idle) or a number of drawers"),
                             ("index_quiet_s", s.store.index_quiet_s, "0 or more seconds"),
                             ("min_free_mb", s.store.min_free_mb, "0 (no check) or a number of MB")):
        if value < 0:
            raise ConfigError(f"store.{key}: must be {what}")
    if s.daemon.max_line_bytes < 1024:
        raise ConfigError("daemon.max_line_bytes: must be at least 1024")
    if s.ingest.max_file_bytes < 1024:
        raise ConfigError("ingest.max_file_bytes: must be at least 1024")
    if s.sync.interval_s <= 0 or s.sync.dense_wait_s < 0:
        raise ConfigError("sync.interval_s: must be positive (and sync.dense_wait_s 0 or more)")
    for key, value, top in (("search.min_score", s.search.min_score, 1.0), ("hooks.recall_threshold",
                            s.hooks.recall_threshold, 1.0), ("hooks.recall_beyond_threshold",
                            s.hooks.recall_beyond_threshold, 2.0)):  # above 1: never beyond the project
        if not 0.0 <= value <= top:
            raise ConfigError(f"{key}: a relevance between 0 and {top:g}, got {value}")
    url = s.store.url
    if url and not (url.startswith(("http://", "https://", "path:")) or url == ":memory:"):
        raise ConfigError("store.url: expected http(s)://..., path:/dir or :memory:")
    paths = [w.path for w in s.sources.watch]
    if len(set(paths)) != len(paths):
        raise ConfigError("sources.watch: the same path is listed twice")


def read_raw(path: Path | None = None) -> dict[str, Any]:
    path = path or config_path()
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except FileNotFoundError:
        return {}
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from exc


def load_settings(path: Path | None = None, env: Mapping[str, str] | None = None) -> Settings:
    return parse_settings(read_raw(path), env)


def write_raw(raw: Mapping[str, Any], path: Path | None = None) -> None:
    """Validate and write ``raw`` atomically (tomli-w), keeping whatever else the user had in it. The file is the
    owner's only (0600 in a 0700 folder): it lists what is watched."""
    parse_settings(raw, env={})
    path = path or config_path()
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    owner_only(path.parent, 0o700)
    tmp = path.with_suffix(".toml.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as fh:
        os.fchmod(fh.fileno(), 0o600)  # an old tmp file keeps its mode on O_CREAT
        fh.write(tomli_w.dumps(dict(raw)).encode("utf-8"))
    os.replace(tmp, path)


def owner_only(path: Path, mode: int) -> None:
    """Take group and other permissions off ``path`` (a file 0600, a folder 0700) when it is ours and open."""
    try:
        st = path.stat()
    except OSError:
        return
    if st.st_uid == os.getuid() and st.st_mode & 0o077:
        os.chmod(path, mode)


# Settings read when the daemon starts (the socket, the store, the model, the queues between threads): a reload
# reports a change to them and it takes effect at the next start. Every other setting is read where it is used,
# from the current snapshot, so a reload applies it at once.
RESTART_SECTIONS = ("daemon", "store", "embed")
RESTART_KEYS = ("ingest.watch_events", "ingest.event_buffer", "ingest.max_line_bytes", "ingest.build_workers")


def restart_needed(old: Settings, new: Settings) -> list[str]:
    """The changed settings that take effect only after a restart (``section.key``), sorted."""
    a, b = as_dict(old), as_dict(new)
    changed: list[str] = []
    for section in RESTART_SECTIONS:
        changed += [f"{section}.{k}" for k in b[section] if a[section].get(k) != b[section][k]]
    for key in RESTART_KEYS:
        section, _, k = key.partition(".")
        if a[section].get(k) != b[section].get(k):
            changed.append(key)
    return sorted(changed)


class SettingsRef:
    """The daemon's settings: one immutable snapshot that every component reads when it needs a value, swapped
    whole by a reload (SIGHUP, or a command that edits the config)."""

    def __init__(self, settings: Settings) -> None:
        self._current = settings

    @property
    def current(self) -> Settings:
        return self._current

    def swap(self, new: Settings) -> list[str]:
        """Install ``new``; returns the changed settings that still need a restart (``restart_needed``)."""
        pending = restart_needed(self._current, new)
        self._current = new
        return pending


def as_dict(settings: Settings) -> dict[str, Any]:
    out = dataclasses.asdict(settings)
    out.pop("origins", None)
    out["people"] = dict(settings.people)
    return out
