"""The composition root: every component of the daemon, built from the settings and wired here, once.

Each component gets the narrow services it needs (never the whole daemon) and owns its loops; handlers are
small classes over those services (``mempald.rpc``). ``Daemon.open`` does the blocking part (model, store,
state database); ``app`` runs ``loops()`` in its task group and serves ``dispatcher`` on the socket.
"""

from __future__ import annotations

import contextlib
import getpass
import socket
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import anyio.to_thread

from mempald import logs
from mempald.archive.keeper import Archive
from mempald.config import Settings, SettingsRef, data_dir, load_settings
from mempald.embed.embedder import Embedder
from mempald.embed.sparse import META_KEY, Bm25Encoder
from mempald.errors import ModelMismatch
from mempald.features.backup import Backup
from mempald.features.compress import Compressor
from mempald.features.cowork import CoworkInbox
from mempald.features.disclosure import Disclosure
from mempald.features.exclusions import Exclusions
from mempald.features.export import Exporter
from mempald.features.filegate import FileGate
from mempald.features.forget import Forgetter
from mempald.features.importer import Importer
from mempald.features.keyword_reindex import KeywordReindex
from mempald.features.kg import KnowledgeGraph
from mempald.features.layout import Layout
from mempald.features.memories import Memories
from mempald.features.pack.progress import PackRuns
from mempald.features.pack.watch import PackWatcher
from mempald.features.recall import PromptContext
from mempald.features.rules import Rules
from mempald.features.status import StatusReport
from mempald.features.taxonomy import Taxonomy
from mempald.features.token_ledger import TokenLedger
from mempald.features.viewer import SessionBrowser
from mempald.features.wakeup import WakeUp
from mempald.ingest.build_pool import BuildPool, BuildSpec
from mempald.ingest.dense import DenseWorker
from mempald.ingest.forget_list import Admission, ForgetList
from mempald.ingest.ingestor import Ingestor
from mempald.ingest.live_copies import LiveCopies
from mempald.ingest.queues import BACKFILL, DenseQueue, FileQueue
from mempald.ingest.review import SourceReview
from mempald.ingest.store_outbox import StoreOutbox
from mempald.intake.admin import SourceAdmin
from mempald.intake.events import EventRouter
from mempald.intake.loop import IngestLoops
from mempald.intake.scan import Scanner
from mempald.rpc.agents import AgentMethods
from mempald.rpc.archive import ArchiveMethods
from mempald.rpc.core import CoreMethods
from mempald.rpc.data import DataMethods
from mempald.rpc.disclosure import DisclosureMethods
from mempald.rpc.dispatch import Dispatcher, Handler
from mempald.rpc.memory import MemoryMethods
from mempald.rpc.palace import PalaceMethods
from mempald.rpc.rules import RuleMethods
from mempald.rpc.sources import SourceMethods
from mempald.rpc.sync import SyncMethods
from mempald.rpc.viewer import ViewerMethods
from mempald.search import ranking
from mempald.search.searcher import Searcher
from mempald.sources.catalog import SourceSet
from mempald.sources.exclude import ExcludeFilter
from mempald.state.db import State, StateDamaged, state_missing
from mempald.state.gateway import StateGateway
from mempald.store import faults
from mempald.store.base import DAMAGE_REPORT, INDEX_REBUILD, LATE_OPEN, SCHEMA_VERSION, Filters, Store, StoreError
from mempald.store.gateway import StoreGateway
from mempald.store.locate import open_store
from mempald.store.maintenance import IndexMaintainer
from mempald.store.space import SpaceGuard, guard_store
from mempald.sync.exporter import Exporter as SegmentWriter
from mempald.sync.importer import Importer as SegmentReader
from mempald.sync.journal import Journal
from mempald.sync.service import Sync

log = logs.get("app")

Loop = Callable[[], Coroutine[Any, Any, None]]


class Backends:
    """What ``Daemon.open`` opens: the model, the store (``backend``: the same store under the wrappers it is
    called through, the disk guard and fault injection; the daemon asks it for its capabilities; None: ``store``
    is the backend itself), the state database."""

    def __init__(self, embedder: Embedder, store: Store, backend: Store | None, state: State,
                 space: SpaceGuard | None = None) -> None:
        self.embedder = embedder
        self.store = store
        self.backend = backend or store
        self.state = state
        self.space = space  # the disk-space guard of an embedded store's writes


def open_backends(settings: Settings) -> Backends:
    """Blocking: load the model, open the store (checking it was filled by this model) and the state database.

    A Qdrant server that does not answer at start is not waited for: the daemon starts, what it reads waits in the
    local outbox, and these checks run when the server first answers (``ServerStore.on_connect``)."""
    ddir = data_dir()
    embedder = Embedder(settings.embed.model, models_dir=ddir / "models", threads=settings.embed.threads)
    opened = open_store(settings, embedder.dim, daemon=True, ranker=ranking.rank)
    space = None if settings.store.url else SpaceGuard(settings.store_path(), ddir, settings.store.min_free_mb)
    store = faults.wrap_store(guard_store(opened, space))  # faults: inert unless MEMPAL_FAULTS is set
    path = ddir / "state.sqlite3"
    late = LATE_OPEN.of(opened)
    away = late is not None and not late.connected
    missing = state_missing(path)  # (read before the database is made by opening it)
    try:
        if not away:
            check_model(store, embedder)
            refuse_lost_state(path, store, counted(settings), missing)
        state = State(path)
    except BaseException:
        store.close()
        raise

    def checks() -> None:
        check_model(store, embedder)
        if missing:
            refuse_lost_state(path, store, counted(settings), missing)
        refuse_lost_points(state, store, counted(settings))

    if late is not None and away:
        late.on_connect = checks
        return Backends(embedder, store, opened, state, space)
    try:
        refuse_lost_points(state, store, counted(settings))
    except BaseException:
        store.close()
        state.close()
        raise
    return Backends(embedder, store, opened, state, space)


def check_model(store: Store, embedder: Embedder) -> None:
    """The store was filled by this model (or is new, and is marked as this model's)."""
    meta = store.get_meta()
    if meta.get("model") and meta["model"] != embedder.info.model_id:
        raise ModelMismatch(
            f"the store was filled by model {meta['model']!r} but config says {embedder.info.model_id!r}: "
            "run `mempal reindex` to re-embed it, or set embed.model back"
        )
    if not meta:
        store.set_meta({"model": embedder.info.model_id, "dim": embedder.dim, "schema": SCHEMA_VERSION,
                        "created_at": time.time(), META_KEY: Bm25Encoder().tokenizer})


def refuse_lost_state(path: Path, store: Store, scope: Filters | None = None, missing: str = "") -> None:
    """A store that holds drawers beside a missing or empty state database: the knowledge graph, the inbox, the
    audit log and the forget rules are gone, and starting would read forgotten sessions back from their
    transcripts. Not started: ``mempald repair`` restores the forget rules kept in the store first. ``missing``:
    what ``state_missing`` said before the database was opened (read now when not given)."""
    missing = missing or state_missing(path)
    if not missing:
        return
    held = store.count(scope or Filters(include_deleted=True))  # (a shared store: this machine's drawers)
    if held:
        raise StateDamaged(f"the state database {path} is {missing} but the store at {store.location} holds {held} "
                           "drawers: the knowledge graph, the inbox, the audit log and the forget rules would be "
                           "lost, and forgotten sessions read again from their transcripts; stop and run `mempald "
                           "repair` (it restores the forget rules kept in the store and has every transcript read "
                           "again)")


def machine_of(settings: Settings) -> str:
    return settings.store.machine or socket.gethostname()


def counted(settings: Settings) -> Filters:
    """The points whose number is recorded at a clean stop: all of them, or this machine's in a store other
    machines' daemons write too (a Qdrant server: they add and purge theirs while this one is stopped)."""
    return Filters(include_deleted=True, machine=(machine_of(settings),) if settings.store.url else ())


def refuse_lost_points(state: State, store: Store, scope: Filters | None = None) -> None:
    """The store holds fewer points than when the daemon last stopped cleanly: it lost drawers while nothing ran
    (damaged or deleted files). Not started, so nothing is served as if whole: ``mempald repair``."""
    recorded = state.store_points()
    if recorded is None:
        return
    held = store.count(scope or Filters(include_deleted=True))
    if held < recorded:
        raise StoreError(f"the store at {store.location} holds {held} drawers but held {recorded} when mempald last "
                         "stopped: its files lost drawers while it was stopped; stop and run `mempald repair` (it "
                         "recovers what the store's files still hold and has the transcripts read again)")
    state.forget_store_points()


class Daemon:
    """Every component of one running daemon."""

    def __init__(self, settings: Settings, backends: Backends) -> None:
        self.settings = SettingsRef(settings)
        self.embedder = embedder = backends.embedder
        db = backends.state  # (the blocking database: what runs inside a worker thread's job holds it)
        self.state = state = StateGateway(db)
        machine = machine_of(settings)
        user = getpass.getuser()
        self.store = StoreGateway(backends.store, shared=bool(settings.store.url))
        bm25 = Bm25Encoder()
        self.keywords = KeywordReindex(self.store, bm25)  # keyword vectors of another tokenizer re-encoded
        self.files = FileQueue()
        self.dense = DenseQueue()
        self.taxonomy = Taxonomy()
        self.taxonomy.load()
        self.exclude = ExcludeFilter(lambda: self.settings.current.ingest.exclude)  # what the user keeps out
        self.forgotten = ForgetList(db)
        # the byte-exact transcripts, beside the state database (in the data dir; a benchmark palace keeps its own)
        self.archive = Archive(db.path.parent / "archive", self.settings)
        self.archive.forgotten = self.forgotten.covers_file
        counter = embedder.counter_file
        self.builders = BuildPool(BuildSpec(str(counter), bm25.tokenizer, settings.embed.max_tokens),
                                  settings.ingest.build_workers if counter is not None else 0)
        self.ingestor = Ingestor(settings=self.settings, state=state, store=self.store, embedder=embedder, bm25=bm25,
                                 dense=self.dense, machine=machine, user=user, room_keywords=self.taxonomy.current,
                                 admit=Admission(self.exclude, self.forgotten), pool=self.builders,
                                 archive=self.archive)
        if settings.store.url:  # a store other machines share: drawers wait in a local outbox while it is away
            self.ingestor.writer.outbox = StoreOutbox(db)
        self.densifier = DenseWorker(self.dense, self.store, embedder, settings.embed.batch_size,
                                     settings.embed.max_tokens)
        self.searcher = Searcher(self.store, embedder, bm25)
        self.sources = SourceSet(settings, self.exclude)
        # a SpecStory copy of a session whose own file a watched source holds is not stored twice
        self.ingestor.reader.live = LiveCopies(lambda fmt: [s.root for s in self.sources
                                                            if s.fmt == fmt and s.mode == "convos"])
        self.scanner = Scanner(self.settings, self.sources, db, self.files, self.ingestor)
        self.events = EventRouter(self.settings, self.sources, self.scanner, self.files, state, self.ingestor)
        self.pack_runs = PackRuns()
        self.packs = PackWatcher(self.sources, self.files, embedder, self.densifier.limiter, self.pack_runs)
        self.ingest_loops = IngestLoops(self.files, self.sources, self.ingestor, on_ingested=self.packs.changed)
        self.index = IndexMaintainer(self.settings, self.store, INDEX_REBUILD.of(backends.backend), self._idle)
        self.status = StatusReport(store=self.store, state=state, embedder=embedder, sources=self.sources,
                                   scanner=self.scanner, files=self.files, dense=self.dense, densifier=self.densifier,
                                   ingestor=self.ingestor, index=self.index, machine=machine,
                                   space=backends.space, damage=DAMAGE_REPORT.of(backends.backend),
                                   keywords=self.keywords)
        self.kg = KnowledgeGraph(db.conn, lock=db.lock)
        self.kg.ensure_schema()
        self.inbox = CoworkInbox(db.conn, lock=db.lock)
        self.inbox.ensure_schema()
        journal = Journal(db)  # one memory across machines: the outbox and what was read of the sync folder
        model = embedder.info.model_id
        self.rules = Rules(state, self.store)
        self.sync = Sync(self.settings, self.store, state, journal,
                         SegmentWriter(self.store, state, journal, self.kg, model, self.rules.book),
                         SegmentReader(self.store, state, journal, self.kg, bm25,
                                       lambda pid, ts: self.dense.put(pid, ts, BACKFILL), model, embedder.dim,
                                       self.forgotten, self.rules),
                         machine)
        self.rules.changes = self.sync  # (rules added, accepted or removed travel to the other machines)
        self.ingestor.writer.changes = self.sync
        layout = Layout(self.store)
        sessions = SessionBrowser(self.store)
        wakeup = WakeUp(self.settings, self.store, embedder, self.sources, sessions)
        memories = Memories(self.settings, self.store, state, embedder, self.ingestor, self.dense, machine, user,
                            self.taxonomy.current, self.keywords)
        memories.changes = self.sync
        self.admin = SourceAdmin(self.settings, self.sources, self.events, self.scanner, self.ingestor)
        ledger = TokenLedger(state)
        disclosure = Disclosure(self.store, embedder, sessions, ledger)
        handlers: dict[str, Handler] = {}
        for group in (
            CoreMethods(self.settings, self.status, self.searcher, layout, self.store, self.admin, disclosure),
            MemoryMethods(memories, Compressor(self.settings, embedder, wakeup, self.ingestor, machine, user)),
            PalaceMethods(wakeup, layout, self.taxonomy, self.kg, state),
            SourceMethods(self.settings, self.admin, self.store, embedder,
                          SourceReview(self.settings, self.sources, self.ingestor, state, self.store, embedder,
                                       machine, user, self.taxonomy.current), self.pack_runs),
            AgentMethods(self.settings, self.inbox, PromptContext(self.settings, self.searcher, self.inbox, state,
                                                                  embedder, self.store), memories, state),
            ViewerMethods(SessionBrowser(self.store), self.kg, self.sources, state),
            DisclosureMethods(disclosure, FileGate(self.store, embedder, sessions), ledger),
            self._data_methods(backends, bm25),
            RuleMethods(self.rules),
            SyncMethods(self.sync),
            ArchiveMethods(self.archive, state),
        ):
            handlers.update(group.handlers())
        self.dispatcher = Dispatcher(handlers, settings.daemon.request_timeout_s)

    def _data_methods(self, backends: Backends, bm25: Bm25Encoder) -> DataMethods:
        forgetter = Forgetter(self.store, self.state, self.forgotten, self.sources, self.ingestor, bm25, self.dense)
        self.forgetter = forgetter
        forgetter.changes = self.sync
        importer = Importer(self.settings, self.store, self.state, bm25, self.dense, self.rules)
        # the dense pass waits while fresh exchanges or an import are being stored: they get the cores first
        self.densifier.hold = lambda: self.ingest_loops.fresh_ingests > 0 or importer.running > 0
        self.densifier.reading = lambda: len(self.files) > 0 or self.files.active > self.ingest_loops.fresh_ingests
        return DataMethods(forgetter, Exclusions(self.settings, self.exclude, self.admin, forgetter),
                           Exporter(self.store, self.rules), importer,
                           Backup(self.settings, self.store, self.state.db, backends.backend, self.archive),
                           self.state)

    @classmethod
    def open(cls, settings: Settings) -> Daemon:
        """Blocking: open the backends and build the components."""
        backends = open_backends(settings)
        try:
            return cls(settings, backends)
        except BaseException:
            backends.store.close()
            backends.state.close()
            raise

    def _idle(self) -> bool:
        return self.status.idle()

    def loops(self) -> list[Loop]:
        """The long-running tasks, each owned by its component (started after the socket is bound)."""
        # While a worker builds the backfill's drawers, three loops read it: one file builds in the worker, one
        # is parsed and one written here (measured at 30k exchanges: 46-49 s with two loops, 40 s with three;
        # a second worker changed nothing on two cores: bench/PERF_RESULTS.md).
        backfill = [self.ingest_loops.run] * (3 if self.builders.enabled else 1)
        return [self.events.run, *backfill, self.ingest_loops.run_fresh, self.densifier.run, self.builders.run,
                self.catch_up, self.scanner.run, self.packs.run, self.index.run, self.keywords.run, self.status.run,
                self.sync.run, self.ingestor.writer.run_outbox]

    async def catch_up(self) -> None:
        """At start: drawers still without a dense vector, and files changed while the daemon was down. A server
        away at start: the files are read first (their drawers wait in the outbox), the rest once it answers."""
        queued = None
        if not await self.store.reached(wait=False):
            queued = await self.scanner.reconcile(BACKFILL)
            if not await self.store.reached():
                return
        try:
            await Layout(self.store).normalize_stored()  # wings stored under a form not normalised
        except StoreError as exc:  # (the store unavailable: tried again at the next start)
            log.warning("wing_rename_failed", error=str(exc))
        except Exception:
            log.exception("wing_rename_failed")
        missing = await self.densifier.requeue_missing()
        if queued is None:
            queued = await self.scanner.reconcile(BACKFILL)
        log.info("catch_up", files=queued, dense_missing=missing)
        damaged = await self.densifier.drop_damaged()  # (queued again, after what was queued above)
        try:  # (a store written by a release that kept no copy of the forget rules)
            await self.forgetter.mirror_rules()
        except StoreError as exc:
            log.warning("forget_rules_not_mirrored", error=str(exc))
        log.info("dense_checked", damaged=damaged)

    async def reload(self) -> None:
        """Re-read the config (SIGHUP): one new settings snapshot for every component; sources added or removed
        are watched at once; settings read only at start are reported as waiting for a restart."""
        try:
            await anyio.to_thread.run_sync(load_settings)
        except Exception as exc:  # a bad edit keeps the settings in force
            log.error("reload_failed", error=str(exc))
            return
        pending = await self.admin.apply_settings(BACKFILL)
        if pending:
            log.warning("restart_needed", settings=pending,
                        message="these settings take effect when the daemon restarts")
        log.info("reloaded", sources=self.sources.keys())

    def close(self) -> None:
        try:
            self.builders.close()
            with contextlib.suppress(Exception):  # a store that cannot count now records nothing
                self.state.db.record_store_points(self.store.store.count(counted(self.settings.current)))
        finally:
            try:
                self.store.store.close()
            finally:
                self.state.db.close()
                self.archive.close()
