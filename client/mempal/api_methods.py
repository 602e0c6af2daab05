"""The typed methods of ``mempal.Client``, one per socket method. GENERATED from the method table by
``python -m mempal.methods.codegen``: do not edit; change ``mempal/methods/`` and regenerate."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, cast

from mempal.api_base import ClientBase
from mempal.methods.drawer import GetResult, SearchResult


class ClientMethods(ClientBase):
    def ping(self, *, identify: bool | None = None) -> dict[str, Any]:
        """Is the daemon there? Answers {pong: true}; with identify, also whose daemon it is.

        identify: also answer pid, uid, user and data_dir (clients check they reached their own daemon)
        """
        return self._invoke("ping", {"identify": identify})

    def status(self) -> dict[str, Any]:
        """What the daemon holds and how far behind it is: drawers by wing and room, sources and their backlog, each
        agent's own folder (found or not, watched or not), the index state. Call it first to learn the wing and room
        names, and to check the daemon is healthy.
        """
        return self._invoke("status", {})

    def search(
            self,
            query: str,
            *,
            wing: str | Sequence[str] | None = None,
            room: str | Sequence[str] | None = None,
            memory_type: str | Sequence[str] | None = None,
            source_kind: str | Sequence[str] | None = None,
            agent: str | Sequence[str] | None = None,
            session_id: str | Sequence[str] | None = None,
            machine: str | Sequence[str] | None = None,
            since: str | float | None = None,
            until: str | float | None = None,
            limit: int | None = None,
            format: Literal['full', 'index'] | None = None,
            dense_weight: float | None = None,
            min_score: float | None = None,
    ) -> SearchResult:
        """Hybrid (keyword + semantic) search over every memory; every hit cites its drawer and source. Returns
        verbatim excerpts with drawer ids and source paths to cite. Use before asserting project facts and for any
        'why did we / last time we' question. format "index" returns a compact index first (then get the drawers
        worth reading, timeline for their context). Every answer says how many tokens it holds.

        query: what to look for, in English, with the specific names involved
        wing: only this wing (project or source); the names come from status
        room: only this room (aspect), e.g. decisions, problems, architecture
        memory_type: only this kind of memory
        source_kind: only this source: claude_code, codex, chatgpt, slack, project, ...
        agent: only memories from this agent, e.g. claude or codex
        session_id: only this session
        machine: only drawers from this machine (`mempal machines` lists them)
        since: only newer than this: ISO date, epoch seconds or an age like 7d, 12h
        until: only older than this: ISO date, epoch seconds or an age like 1d
        limit: how many results (default: search.limit in config, 10)
        format: full: verbatim excerpts; index: one line a hit (id, title, wing/room, date, relevance, the full
            drawer's token count), at most about 60 tokens each: fetch the ones you want with get
        dense_weight: weight of the semantic list in the fusion, 0..1 (default from config)
        min_score: relevance floor, 0..1: hits whose calibrated relevance (an estimated probability that the hit
            bears on the query) is lower are not returned; 0 returns every hit (default: search.min_score in config)
        """
        return cast("SearchResult", self._invoke("search", {
            "query": query,
            "wing": wing,
            "room": room,
            "memory_type": memory_type,
            "source_kind": source_kind,
            "agent": agent,
            "session_id": session_id,
            "machine": machine,
            "since": since,
            "until": until,
            "limit": limit,
            "format": format,
            "dense_weight": dense_weight,
            "min_score": min_score,
        }))

    def drawers(
            self,
            *,
            wing: str | Sequence[str] | None = None,
            room: str | Sequence[str] | None = None,
            memory_type: str | Sequence[str] | None = None,
            source_kind: str | Sequence[str] | None = None,
            agent: str | Sequence[str] | None = None,
            session_id: str | Sequence[str] | None = None,
            machine: str | Sequence[str] | None = None,
            since: str | float | None = None,
            until: str | float | None = None,
            limit: int | None = None,
            offset: str | None = None,
            fields: str | Sequence[str] | None = None,
    ) -> dict[str, Any]:
        """Page through stored drawers with their metadata (for exports, audits and scripts).

        wing: only this wing (project or source); the names come from status
        room: only this room (aspect), e.g. decisions, problems, architecture
        memory_type: only this kind of memory
        source_kind: only this source: claude_code, codex, chatgpt, slack, project, ...
        agent: only memories from this agent, e.g. claude or codex
        session_id: only this session
        machine: only drawers from this machine (`mempal machines` lists them)
        since: only newer than this: ISO date, epoch seconds or an age like 7d, 12h
        until: only older than this: ISO date, epoch seconds or an age like 1d
        limit: drawers per page
        offset: where the previous page ended (its 'next')
        fields: only these payload fields (default: all)
        """
        return self._invoke("drawers", {
            "wing": wing,
            "room": room,
            "memory_type": memory_type,
            "source_kind": source_kind,
            "agent": agent,
            "session_id": session_id,
            "machine": machine,
            "since": since,
            "until": until,
            "limit": limit,
            "offset": offset,
            "fields": fields,
        })

    def ingest_file(self, path: str) -> dict[str, Any]:
        """Read a watched file now and wait until what is new in it is stored (hooks call this).

        path: the file, inside a watched source
        """
        return self._invoke("ingest_file", {"path": path})

    def ingest(
            self,
            text: str,
            *,
            wing: str | None = None,
            room: str | None = None,
            memory_type: Literal['decision', 'preference', 'milestone', 'problem', 'emotional', 'none'] | None = None,
            importance: int | None = None,
            dry_run: bool | None = None,
            duplicate_threshold: float | None = None,
            agent: str | None = None,
            cwd: str | None = None,
    ) -> dict[str, Any]:
        """Save a memory: a decision and its reasons, a preference, a milestone, a problem and its fix. Write it so it
        stands alone (what, why, file paths). Warns about near-duplicates; dry_run shows them without saving. Not
        for tentative ideas or what the code already says.

        text: the memory, self-contained (what, why, file paths); - reads stdin on the CLI
        wing: project it belongs to (default: derived from the working directory)
        room: aspect, e.g. decisions, architecture, problems (default: classified)
        memory_type: kind of memory (default: classified)
        importance: 0 (trivia) to 5 (critical)
        dry_run: only report near-duplicates, save nothing
        duplicate_threshold: cosine at which a stored memory counts as a near-duplicate
        agent: who saves it (default: user on the CLI, the agent over MCP)
        cwd: the working directory the wing is derived from
        """
        return self._invoke("ingest", {
            "text": text,
            "wing": wing,
            "room": room,
            "memory_type": memory_type,
            "importance": importance,
            "dry_run": dry_run,
            "duplicate_threshold": duplicate_threshold,
            "agent": agent,
            "cwd": cwd,
        })

    def delete(
            self,
            drawer_id: str | Sequence[str],
            *,
            reason: str | None = None,
            actor: str | None = None,
    ) -> dict[str, Any]:
        """Soft-delete drawers by id: hidden from search, kept until purged, audited (who, when, why).

        drawer_id: the drawer id(s) to delete
        reason: why it is wrong or obsolete
        actor: who deletes (default: user on the CLI, the agent over MCP)
        """
        return self._invoke("delete", {"drawer_id": drawer_id, "reason": reason, "actor": actor})

    def restore(self, drawer_id: str | Sequence[str], *, actor: str | None = None) -> dict[str, Any]:
        """Bring soft-deleted drawers back (before they are purged).

        drawer_id: the drawer id(s) to restore
        actor: who restores
        """
        return self._invoke("restore", {"drawer_id": drawer_id, "actor": actor})

    def purge(
            self,
            *,
            before: str | float | None = None,
            dry_run: bool | None = None,
            all_machines: bool | None = None,
            actor: str | None = None,
    ) -> dict[str, Any]:
        """Remove soft-deleted drawers for good.

        before: only those deleted before this date or age (7d)
        dry_run: count them, remove nothing
        all_machines: a store other machines' daemons share: theirs too (default: this machine's drawers only)
        actor: who purges
        """
        return self._invoke("purge", {
            "before": before,
            "dry_run": dry_run,
            "all_machines": all_machines,
            "actor": actor,
        })

    def reindex(self) -> dict[str, Any]:
        """Re-embed every drawer with the configured model (resumable; status shows the backlog).
        """
        return self._invoke("reindex", {})

    def compress(
            self,
            *,
            text: str | None = None,
            wing: str | None = None,
            dry_run: bool | None = None,
    ) -> dict[str, Any]:
        """AAAK-compress a text, or a wing's drawers (stored in room aaak unless dry_run). Lossy: the ratio is measured
        with the model's tokenizer.

        text: the text to compress
        wing: compress this wing's drawers instead
        dry_run: print the result, store nothing
        """
        return self._invoke("compress", {"text": text, "wing": wing, "dry_run": dry_run})

    def wake_up(
            self,
            *,
            wing: str | None = None,
            cwd: str | None = None,
            budget: int | None = None,
            format: Literal['text', 'aaak'] | None = None,
    ) -> dict[str, Any]:
        """The wake-up text: who the user is (L0) and the essential story of a project (L1), with its token count. A
        few hundred tokens. Use at the start of work when no hook injected it.

        wing: the project (default: derived from the working directory)
        cwd: the working directory the wing is derived from
        budget: token budget for the story (default: wakeup.l1_budget in config)
        format: text, or the lossy AAAK dialect
        """
        return self._invoke("wake_up", {"wing": wing, "cwd": cwd, "budget": budget, "format": format})

    def recall_room(self, wing: str, room: str, *, limit: int | None = None) -> dict[str, Any]:
        """L2: the drawers of one room of a wing, most important and newest first.

        wing: the wing
        room: the room
        limit: how many drawers
        """
        return self._invoke("recall_room", {"wing": wing, "room": room, "limit": limit})

    def list_wings(self) -> dict[str, Any]:
        """Every wing (project or source) with its drawer count.
        """
        return self._invoke("list_wings", {})

    def list_rooms(self, *, wing: str | None = None) -> dict[str, Any]:
        """The rooms (aspects) of one wing, or of all wings, with drawer counts.

        wing: the wing (default: all)
        """
        return self._invoke("list_rooms", {"wing": wing})

    def tunnels(self) -> dict[str, Any]:
        """Rooms shared by several wings: where projects touch the same topic.
        """
        return self._invoke("tunnels", {})

    def taxonomy(self, *, room: str | None = None, keywords: str | Sequence[str] | None = None) -> dict[str, Any]:
        """The routing keywords that file drawers into rooms; with room and keywords, set that room's keywords (an
        empty list removes the room).

        room: the room to edit
        keywords: keywords that send a drawer to this room
        """
        return self._invoke("taxonomy", {"room": room, "keywords": keywords})

    def kg(
            self,
            op: Literal['add', 'query', 'invalidate', 'timeline', 'stats'],
            *,
            subject: str | None = None,
            predicate: str | None = None,
            object: str | None = None,
            valid_from: str | None = None,
            ended: str | None = None,
            as_of: str | None = None,
            entity: str | None = None,
            source_drawer: str | None = None,
            confidence: float | None = None,
            include_expired: bool | None = None,
            id: int | None = None,
    ) -> dict[str, Any]:
        """Knowledge graph of subject-predicate-object facts with validity dates: add, query, invalidate, timeline (of
        an entity) or stats.

        op: what to do
        subject: e.g. Kai
        predicate: e.g. recommends
        object: e.g. Clerk
        valid_from: ISO date the fact became true (add)
        ended: ISO date the fact stopped being true (invalidate)
        as_of: ISO date to query at (query)
        entity: the entity (timeline)
        source_drawer: drawer id the fact comes from (add)
        confidence: how sure, 0..1 (add)
        include_expired: include facts no longer valid (query)
        id: triple id (invalidate)
        """
        return self._invoke("kg", {
            "op": op,
            "subject": subject,
            "predicate": predicate,
            "object": object,
            "valid_from": valid_from,
            "ended": ended,
            "as_of": as_of,
            "entity": entity,
            "source_drawer": source_drawer,
            "confidence": confidence,
            "include_expired": include_expired,
            "id": id,
        })

    def kg_query(
            self,
            *,
            op: Literal['query', 'timeline', 'stats'] | None = None,
            subject: str | None = None,
            predicate: str | None = None,
            object: str | None = None,
            as_of: str | None = None,
            include_expired: bool | None = None,
            entity: str | None = None,
    ) -> dict[str, Any]:
        """Read the knowledge graph (writes nothing): the facts about a subject, predicate or object (as of a date, or
        with expired ones), an entity's timeline, or stats. The reading half of `kg`, offered in read-only mode too.

        op: what to read
        subject: e.g. Kai
        predicate: e.g. recommends
        object: e.g. Clerk
        as_of: ISO date to query at (query)
        include_expired: include facts no longer valid (query)
        entity: the entity (timeline)
        """
        return self._invoke("kg_query", {
            "op": op,
            "subject": subject,
            "predicate": predicate,
            "object": object,
            "as_of": as_of,
            "include_expired": include_expired,
            "entity": entity,
        })

    def fact_check(self, text: str, *, today: str | None = None) -> dict[str, Any]:
        """Check a text offline against the knowledge graph: similar-name typos, relations that contradict known facts,
        facts that expired. Use before saving a decision that asserts relationships between people, projects or
        tools.

        text: the text to check (on the CLI: a file, or - / nothing for stdin)
        today: ISO date to check against (default: today)
        """
        return self._invoke("fact_check", {"text": text, "today": today})

    def watch_add(
            self,
            path: str,
            *,
            mode: Literal['convos', 'projects', 'pack'] | None = None,
            wing: str | None = None,
            token_budget: int | None = None,
            output: str | None = None,
    ) -> dict[str, Any]:
        """Watch a folder (persisted in config, watched at once).

        path: the folder (or file) to watch
        mode: convos: transcripts and exports; projects: code and notes; pack: a markdown folder re-packed on change
        wing: the wing its drawers file under (default: from each file)
        token_budget: pack mode: prune the pack to this many tokens (0: no limit)
        output: pack mode: where the pack goes (default DIR/packed)
        """
        return self._invoke("watch_add", {
            "path": path,
            "mode": mode,
            "wing": wing,
            "token_budget": token_budget,
            "output": output,
        })

    def watch_remove(self, path: str) -> dict[str, Any]:
        """Stop watching a folder (its drawers are kept).

        path: the watched folder
        """
        return self._invoke("watch_remove", {"path": path})

    def watch_list(self) -> dict[str, Any]:
        """The watched sources, with their mode and wing.
        """
        return self._invoke("watch_list", {})

    def mine(
            self,
            paths: str | Sequence[str],
            *,
            mode: Literal['auto', 'convos', 'projects'] | None = None,
            wing: str | None = None,
            limit: int | None = None,
            dry_run: bool | None = None,
            plan_only: bool | None = None,
            root: str | None = None,
    ) -> dict[str, Any]:
        """One-off ingest of files or folders, with a summary (files, exchanges, drawers, skipped with reasons).

        paths: files or folders
        mode: how to read them (auto: a code project when the folder is a VCS root or holds more source files than
            transcripts, else conversations)
        wing: the wing their drawers file under (default: from each file)
        limit: read at most this many files (0: all)
        dry_run: read everything as the ingest would and report it, store nothing (the same reading as `mempal
            inspect`)
        plan_only: only list the files that would be read
        root: the folder the given paths lie in (for batches of a planned mine)
        """
        return self._invoke("mine", {
            "paths": paths,
            "mode": mode,
            "wing": wing,
            "limit": limit,
            "dry_run": dry_run,
            "plan_only": plan_only,
            "root": root,
        })

    def inspect(
            self,
            path: str,
            *,
            mode: Literal['auto', 'convos', 'projects'] | None = None,
            counts_only: bool | None = None,
    ) -> dict[str, Any]:
        """What reading FILE would store, nothing stored: every line or record accounted for (stored in which exchange,
        folded into one, or skipped and why) and the exchanges it would store.

        path: the file (or a Slack export folder)
        mode: how to read it (auto: as its source does, else as mine would)
        counts_only: only the counts, not the table of lines
        """
        return self._invoke("inspect", {"path": path, "mode": mode, "counts_only": counts_only})

    def reread(self, path: str) -> dict[str, Any]:
        """Read a watched source (or a file or folder of it) again with the current adapters: its drawers are replaced
        (same ids where the exchange is the same) and the ones no longer produced removed.

        path: the watched source, or a file or folder inside it
        """
        return self._invoke("reread", {"path": path})

    def init(self, path: str, *, wing: str | None = None, force: bool | None = None) -> dict[str, Any]:
        """Write DIR/mempal.toml with the project's wing and the room of each folder (edit it after).

        path: the project folder
        wing: the wing (default: the folder's name)
        force: overwrite an existing mempal.toml
        """
        return self._invoke("init", {"path": path, "wing": wing, "force": force})

    def migrate(self, to: str) -> dict[str, Any]:
        """Copy the daemon's palace to another store (a Qdrant server URL, path:/dir or an embedded store folder);
        resumable and verified.

        to: http(s)://host:6333, path:/dir, or an embedded store folder
        """
        return self._invoke("migrate", {"to": to})

    def pack(
            self,
            dir: str,
            *,
            output: str | None = None,
            format: Literal['single', 'multi'] | None = None,
            chunk_size: int | None = None,
            compression_target: float | None = None,
            topic: str | None = None,
            token_budget: int | None = None,
            run_id: str | None = None,
    ) -> dict[str, Any]:
        """Compress a markdown folder into a tiered summary (overview, topics, facts).

        dir: the markdown folder
        output: where to write (default DIR/packed)
        format: one file, or one per tier
        chunk_size: tokens per chunk
        compression_target: aimed ratio of input to output tokens
        topic: the pack's topic (default: from the folder)
        token_budget: prune the result to this many tokens (0: no limit)
        run_id: a name for this run, to follow it with pack_progress
        """
        return self._invoke("pack", {
            "dir": dir,
            "output": output,
            "format": format,
            "chunk_size": chunk_size,
            "compression_target": compression_target,
            "topic": topic,
            "token_budget": token_budget,
            "run_id": run_id,
        })

    def pack_progress(self, *, run_id: str | None = None) -> dict[str, Any]:
        """The packs running now (calls and pack-mode watches): stage, done of total, time so far.

        run_id: only this run (the run_id given to pack)
        """
        return self._invoke("pack_progress", {"run_id": run_id})

    def pack_prune(
            self,
            file: str,
            *,
            max_tokens: int | None = None,
            min_importance: float | None = None,
            similarity_threshold: float | None = None,
            no_merge: bool | None = None,
            dry_run: bool | None = None,
            output: str | None = None,
    ) -> dict[str, Any]:
        """Prune a pack to a token budget or an importance floor, merging near-duplicate facts.

        file: the pack (knowledge_base.md or its JSON twin)
        max_tokens: keep at most this many tokens
        min_importance: drop facts less important than this
        similarity_threshold: cosine at which two facts are merged
        no_merge: do not merge near-duplicates
        dry_run: print the plan, write nothing
        output: where to write (default: in place)
        """
        return self._invoke("pack_prune", {
            "file": file,
            "max_tokens": max_tokens,
            "min_importance": min_importance,
            "similarity_threshold": similarity_threshold,
            "no_merge": no_merge,
            "dry_run": dry_run,
            "output": output,
        })

    def cowork_push(
            self,
            text: str,
            *,
            to: Literal['claude', 'codex'] | None = None,
            from_: Literal['claude', 'codex', 'user'] | None = None,
            cwd: str | None = None,
    ) -> dict[str, Any]:
        """Send the partner agent a short handoff for this project, delivered at its next prompt. Delivered at the
        partner's next prompt, not in real time. At most 8 KB; an inbox holds 16 messages.

        text: the message: what you did, what you need, where to look
        to: recipient (default: the other agent; never yourself)
        from_: who sends it (default: the agent running the command, else user)
        cwd: the project directory (default: the current one)
        """
        return self._invoke("cowork_push", {"text": text, "to": to, "from": from_, "cwd": cwd})

    def cowork_drain(
            self,
            *,
            target: Literal['claude', 'codex'] | None = None,
            cwd: str | None = None,
            max_chars: int | None = None,
    ) -> dict[str, Any]:
        """Take (and remove) the messages waiting for an agent in this project. Hooks usually deliver them with your
        next prompt; use this when they did not.

        target: whose inbox (default: your own)
        cwd: the project directory (default: the current one)
        max_chars: stop once this many characters are taken
        """
        return self._invoke("cowork_drain", {"target": target, "cwd": cwd, "max_chars": max_chars})

    def cowork_status(self, *, cwd: str | None = None) -> dict[str, Any]:
        """Both inboxes of a project, without draining them.

        cwd: the project directory (default: the current one)
        """
        return self._invoke("cowork_status", {"cwd": cwd})

    def peek_partner(
            self,
            *,
            partner: Literal['claude', 'codex'] | None = None,
            n: int | None = None,
            cwd: str | None = None,
    ) -> dict[str, Any]:
        """The partner agent's live session in this project (read-only): its last exchanges. For what the partner is
        doing now; use search for what was settled earlier.

        partner: whose session (default: the other agent)
        n: how many recent exchanges
        cwd: the project directory (default: the current one)
        """
        return self._invoke("peek_partner", {"partner": partner, "n": n, "cwd": cwd})

    def prompt_context(
            self,
            *,
            prompt: str | None = None,
            cwd: str | None = None,
            agent: Literal['claude', 'codex', 'gemini', 'antigravity', 'cline'] | None = None,
            session_id: str | None = None,
            max_chars: int | None = None,
            threshold: float | None = None,
            max_tokens: int | None = None,
            budget_ms: int | None = None,
            wing: str | None = None,
    ) -> dict[str, Any]:
        """What the UserPromptSubmit hook injects: this agent's inbox and the memories relevant to the prompt.

        prompt: the user's prompt
        cwd: the session's working directory
        agent: whose inbox is delivered (gemini, antigravity and cline have none: memories only)
        session_id: the current session (its own exchanges are not recalled)
        max_chars: characters of context at most
        threshold: relevance floor: the calibrated relevance (0..1, an estimated probability that a memory bears on
            the prompt) a memory needs (default: hooks.recall_threshold)
        max_tokens: model tokens of memories at most (default: hooks.recall_max_tokens)
        budget_ms: stop searching after this long and still deliver the inbox
        wing: recall from this wing only (default: the cwd's project, or every wing when that project has no
            memories)
        """
        return self._invoke("prompt_context", {
            "prompt": prompt,
            "cwd": cwd,
            "agent": agent,
            "session_id": session_id,
            "max_chars": max_chars,
            "threshold": threshold,
            "max_tokens": max_tokens,
            "budget_ms": budget_ms,
            "wing": wing,
        })

    def hook_config(self) -> dict[str, Any]:
        """The [hooks] settings, so hooks never parse TOML.
        """
        return self._invoke("hook_config", {})

    def compact_summary(
            self,
            summary: str,
            session_id: str,
            *,
            agent: Literal['claude', 'codex'] | None = None,
            cwd: str | None = None,
            transcript_path: str | None = None,
            trigger: Literal['manual', 'auto'] | None = None,
    ) -> dict[str, Any]:
        """Store the host's summary of a compacted session with that session (the PostCompact hook's compact_summary):
        a drawer of kind summary in the session's wing.

        summary: the summary the host wrote when it compacted the conversation
        session_id: the compacted session
        agent: whose session
        cwd: the session's working directory (its wing when the session has no drawers yet)
        transcript_path: the session's transcript (the drawer's source)
        trigger: what compacted it
        """
        return self._invoke("compact_summary", {
            "summary": summary,
            "session_id": session_id,
            "agent": agent,
            "cwd": cwd,
            "transcript_path": transcript_path,
            "trigger": trigger,
        })

    def wing_sessions(
            self,
            wing: str,
            *,
            since: str | float | None = None,
            until: str | float | None = None,
            limit: int | None = None,
    ) -> dict[str, Any]:
        """The sessions of one wing, newest first: each with its start time, first exchange, agent, source and drawer
        count; and the wing's rooms (the viewer's timeline).

        wing: the wing
        since: only sessions started at or after this: ISO date, epoch seconds or an age (7d)
        until: only sessions started at or before this (the next page: the oldest start seen)
        limit: how many sessions
        """
        return self._invoke("wing_sessions", {"wing": wing, "since": since, "until": until, "limit": limit})

    def session_drawers(
            self,
            *,
            drawer_id: str | None = None,
            session_id: str | None = None,
            start: int | None = None,
            before: int | None = None,
            after: int | None = None,
            include_deleted: bool | None = None,
    ) -> dict[str, Any]:
        """A session's drawers in order (by position): the exchanges around a drawer, or from a position of a session;
        soft-deleted ones included on request.

        drawer_id: the drawer in the middle (its session is shown)
        session_id: the session, when no drawer is given
        start: with session_id: the first position shown
        before: exchanges before the drawer
        after: exchanges after the drawer (or after start)
        include_deleted: also soft-deleted drawers (marked as such)
        """
        return self._invoke("session_drawers", {
            "drawer_id": drawer_id,
            "session_id": session_id,
            "start": start,
            "before": before,
            "after": after,
            "include_deleted": include_deleted,
        })

    def kg_graph(
            self,
            *,
            entity: str | None = None,
            as_of: str | None = None,
            include_expired: bool | None = None,
            limit: int | None = None,
    ) -> dict[str, Any]:
        """The knowledge graph as a picture's data: the most connected entities (or one entity and its neighbours) and
        the facts between them, each with its validity interval.

        entity: centre on this entity and its neighbours
        as_of: ISO date: the facts valid then (default: now)
        include_expired: also facts no longer valid
        limit: entities at most
        """
        return self._invoke("kg_graph", {
            "entity": entity,
            "as_of": as_of,
            "include_expired": include_expired,
            "limit": limit,
        })

    def pack_outputs(self, *, dir: str | None = None) -> dict[str, Any]:
        """What pack-mode sources (or one pack folder) produced: where, the header figures, the overview and the topics
        with their facts.

        dir: a pack's output folder (default: every pack-mode source's)
        """
        return self._invoke("pack_outputs", {"dir": dir})

    def get(self, drawer_id: str | Sequence[str], *, max_tokens: int | None = None) -> GetResult:
        """Whole drawers by id (after an index search): text, metadata and each one's token count. Step 2 of
        search(format="index") -> get -> timeline: fetch only the drawers the index showed are worth their tokens.
        Soft-deleted or unknown ids are listed as missing.

        drawer_id: the drawer id(s), at most 50 (or any unique start of one, 4+ characters)
        max_tokens: cut each drawer to this many (LLM) tokens (0: whole)
        """
        return cast("GetResult", self._invoke("get", {"drawer_id": drawer_id, "max_tokens": max_tokens}))

    def timeline(
            self,
            drawer_id: str,
            *,
            before: int | None = None,
            after: int | None = None,
            max_tokens: int | None = None,
            outline: int | None = None,
    ) -> dict[str, Any]:
        """The exchanges around a drawer in its session, and an outline of the session (one title per exchange). Step
        3: what led to a decision and what came of it. The outline shows where in the session the drawer sits; ask
        again with another drawer id to move along.

        drawer_id: the drawer to centre on (or any unique start of its id)
        before: exchanges before it
        after: exchanges after it
        max_tokens: (LLM) tokens for the exchanges in all (the outline comes on top)
        outline: outline lines at most, centred on the drawer (0: none)
        """
        return self._invoke("timeline", {
            "drawer_id": drawer_id,
            "before": before,
            "after": after,
            "max_tokens": max_tokens,
            "outline": outline,
        })

    def file_context(
            self,
            path: str,
            *,
            cwd: str | None = None,
            session_id: str | None = None,
            max_tokens: int | None = None,
            limit: int | None = None,
    ) -> dict[str, Any]:
        """What memory knows about a file: the most recent and most important exchanges whose tool calls touched it
        (exact path, then the path relative to the project), within a token budget. The PreToolUse hook injects this
        once per file per session before Read/Edit/Write; call it for a file you are about to change when no hook
        did.

        path: the file (absolute, or relative to cwd)
        cwd: the project directory (default: the current one)
        session_id: the current session (its own exchanges are left out)
        max_tokens: (LLM) tokens of context at most
        limit: exchanges at most
        """
        return self._invoke("file_context", {
            "path": path,
            "cwd": cwd,
            "session_id": session_id,
            "max_tokens": max_tokens,
            "limit": limit,
        })

    def hook_injected(self, event: Literal['prompt', 'session-start', 'file'], text: str) -> dict[str, Any]:
        """Hooks report the context they injected, for the token figures in status.

        event: which hook injected it
        text: the injected text
        """
        return self._invoke("hook_injected", {"event": event, "text": text})

    def forget(
            self,
            *,
            source: str | None = None,
            session: str | None = None,
            wing: str | None = None,
            room: str | None = None,
            before: str | float | None = None,
            excluded: bool | None = None,
            dry_run: bool | None = None,
            reingest: bool | None = None,
            reason: str | None = None,
            all_machines: bool | None = None,
            actor: str | None = None,
    ) -> dict[str, Any]:
        """Forget every drawer of a transcript, a session or a wing (and room): soft-deleted, audited, and not stored
        again from a transcript still on disk. The answer counts them first. Only when the user asks to forget
        something. Call it with dry_run true first and tell the user how many drawers (by wing and room) it would
        forget; forget for real only after they agree. Forgotten drawers are hidden at once and removed for good by
        purge.

        source: the transcript (or file) whose drawers to forget
        session: the session whose drawers to forget
        wing: the wing (project) whose drawers to forget
        room: only this room of it
        before: only what happened before this: ISO date, epoch seconds or an age like 30d (undated drawers count as
            old)
        excluded: forget every stored drawer the exclusions in force cover (config ingest.exclude and .mempalignore
            files)
        dry_run: only count what would be forgotten
        reingest: the way back: remove these drawers for good and read their transcripts again (earlier forgets of
            them are lifted); those whose transcript is gone are forgotten
        reason: why (kept in the audit log)
        all_machines: a store other machines' daemons share: theirs too (default: this machine's drawers only)
        actor: who forgets (default: user on the CLI, the agent over MCP)
        """
        return self._invoke("forget", {
            "source": source,
            "session": session,
            "wing": wing,
            "room": room,
            "before": before,
            "excluded": excluded,
            "dry_run": dry_run,
            "reingest": reingest,
            "reason": reason,
            "all_machines": all_machines,
            "actor": actor,
        })

    def audit(
            self,
            *,
            since: str | float | None = None,
            action: Literal[
                'forget', 'forget-reingest', 'delete', 'restore', 'purge', 'ingest', 'import',
            ] | None = None,
            limit: int | None = None,
    ) -> dict[str, Any]:
        """What was done to your memories, newest first: forgotten, deleted, restored, purged, saved by hand and
        imported; who did it (the user, an agent), when, to what and why.

        since: only what happened since: ISO date, epoch seconds or an age like 7d
        action: only this kind of action
        limit: at most this many entries
        """
        return self._invoke("audit", {"since": since, "action": action, "limit": limit})

    def exclude_add(self, pattern: str, *, forget: bool | None = None, actor: str | None = None) -> dict[str, Any]:
        """Never read what this rule names from now on (kept in config ingest.exclude, applied at once); counts what is
        already stored of it, and forgets it with forget.

        pattern: an absolute path (/..., ~/...: that folder or file and all in it), a name glob (*-private) or a
            glob from any folder (**/secret/**); matched against file paths and the working directories of sessions
        forget: also forget the drawers already stored that the rule covers
        actor: who excludes
        """
        return self._invoke("exclude_add", {"pattern": pattern, "forget": forget, "actor": actor})

    def exclude_list(self, *, stored: bool | None = None) -> dict[str, Any]:
        """The exclusion rules in force (config and .mempalignore files) and what each has kept out.

        stored: also count the drawers stored before a rule existed that it covers
        """
        return self._invoke("exclude_list", {"stored": stored})

    def exclude_remove(self, pattern: str) -> dict[str, Any]:
        """Stop excluding what a rule names (its files are read at the next scan; what was forgotten stays forgotten).

        pattern: the rule, as `mempal exclude list` shows it
        """
        return self._invoke("exclude_remove", {"pattern": pattern})

    def export(
            self,
            output: str,
            *,
            format: Literal['jsonl', 'md'] | None = None,
            wing: str | None = None,
            since: str | float | None = None,
            include_deleted: bool | None = None,
            force: bool | None = None,
    ) -> dict[str, Any]:
        """Write every drawer verbatim to a file: JSONL with every metadata field (mempal import reads it back), or
        Markdown, one note per wing and session (opens well in an editor or Obsidian). Files 0600.

        output: where: a .jsonl file, or the folder of the Markdown notes (absolute, outside the daemon's own
            folders)
        format: jsonl: for mempal import and scripts; md: notes to read
        wing: only this wing
        since: only newer than this: ISO date, epoch seconds or an age like 30d
        include_deleted: also the soft-deleted drawers (marked as such)
        force: replace an existing file, or write into a folder that is not empty
        """
        return self._invoke("export", {
            "output": output,
            "format": format,
            "wing": wing,
            "since": since,
            "include_deleted": include_deleted,
            "force": force,
        })

    def import_drawers(self, path: str, *, dry_run: bool | None = None, actor: str | None = None) -> dict[str, Any]:
        """Read an export (mempal export --format jsonl) back: drawers keep their ids and metadata, are re-embedded,
        and one already stored as exported is left alone (importing twice changes nothing).

        path: the .jsonl file
        dry_run: only check and count the lines, store nothing
        actor: who imports
        """
        return self._invoke("import_drawers", {"path": path, "dry_run": dry_run, "actor": actor})

    def backup(self, path: str) -> dict[str, Any]:
        """A consistent snapshot of the store, the state database and the config, taken while the daemon runs and
        ingests, into a new or empty folder (mempald restore brings it back).

        path: the backup folder (new or empty; absolute, outside the daemon's own folders)
        """
        return self._invoke("backup", {"path": path})

    def rule_add(
            self,
            text: str,
            match: str,
            *,
            tool: str | None = None,
            decision: Literal['ask', 'deny'] | None = None,
            wing: str | None = None,
            force: bool | None = None,
            actor: str | None = None,
    ) -> dict[str, Any]:
        """Add a rule the PreToolUse hook enforces: when TOOL's input matches REGEX, the host asks you first (ask) or
        refuses the call (deny).

        text: what the rule is for, shown when it fires (e.g. "never push to main")
        tool: the tool it watches: Bash, Edit, Write, mcp__server__tool, several joined by '|', or '*'
        match: a regular expression searched in the call's input (the shell command; else the file, path or URL it
            touches); refused when invalid, catastrophic (nested quantifiers) or matching every command
        decision: ask (the host asks you first) or deny (the call is refused)
        wing: only in this wing (project); default: every wing
        force: keep a pattern that matches every command
        actor: who adds it
        """
        return self._invoke("rule_add", {
            "text": text,
            "tool": tool,
            "match": match,
            "decision": decision,
            "wing": wing,
            "force": force,
            "actor": actor,
        })

    def rule_list(self, *, wing: str | None = None) -> dict[str, Any]:
        """The rules the PreToolUse hook enforces: tool, pattern, decision, wing and source. Read only: the user's
        rules. A tool call the hook refused or asked about names the rule; do not try to work around a rule, ask the
        user instead.

        wing: only the rules that hold in this wing (its own and the global ones)
        """
        return self._invoke("rule_list", {"wing": wing})

    def rule_remove(self, rule_id: str, *, actor: str | None = None) -> dict[str, Any]:
        """Remove a rule (by its id, from rule list).

        rule_id: the rule's id
        actor: who removes it
        """
        return self._invoke("rule_remove", {"rule_id": rule_id, "actor": actor})

    def rule_test(
            self,
            command: str,
            *,
            tool: str | None = None,
            cwd: str | None = None,
            wing: str | None = None,
    ) -> dict[str, Any]:
        """Which rule would fire for a command, without an agent.

        command: the command (or, with --tool Edit/Write/Read, the file path)
        tool: the tool that would run it
        cwd: the project directory: its wing's rules count (default: the current one)
        wing: test in this wing instead of the cwd's
        """
        return self._invoke("rule_test", {"command": command, "tool": tool, "cwd": cwd, "wing": wing})

    def rule_check(
            self,
            tool_name: str,
            tool_input: str,
            *,
            cwd: str | None = None,
            agent: str | None = None,
    ) -> dict[str, Any]:
        """The PreToolUse hook's question: the decision of the rules for one tool call.

        tool_name: the tool's name
        tool_input: the tool's input as JSON
        cwd: the session's working directory (its wing's rules count)
        agent: which host asks (claude, codex)
        """
        return self._invoke("rule_check", {
            "tool_name": tool_name,
            "tool_input": tool_input,
            "cwd": cwd,
            "agent": agent,
        })

    def rule_suggestions(
            self,
            *,
            status: Literal['pending', 'accepted', 'dismissed', 'all'] | None = None,
            scan: bool | None = None,
    ) -> dict[str, Any]:
        """Rules suggested from always / never instructions in your stored prompts, each with a draft pattern and the
        drawer it cites; nothing is enforced until you accept one.

        status: which to list
        scan: look for new ones in the stored prompts first
        """
        return self._invoke("rule_suggestions", {"status": status, "scan": scan})

    def rule_accept(
            self,
            suggestion_id: str,
            *,
            text: str | None = None,
            tool: str | None = None,
            match: str | None = None,
            decision: Literal['ask', 'deny'] | None = None,
            wing: str | None = None,
            force: bool | None = None,
            actor: str | None = None,
    ) -> dict[str, Any]:
        """Make a suggestion a rule, with your edits (any of text, tool, match, decision, wing).

        suggestion_id: the suggestion's id
        text: the rule's text (default: the sentence)
        tool: the tool it watches (default: the draft's)
        match: the pattern (default: the draft's)
        decision: ask or deny (default: the draft's)
        wing: its wing (default: the drawer's; '*' for every wing)
        force: keep a pattern that matches every command
        actor: who accepts it
        """
        return self._invoke("rule_accept", {
            "suggestion_id": suggestion_id,
            "text": text,
            "tool": tool,
            "match": match,
            "decision": decision,
            "wing": wing,
            "force": force,
            "actor": actor,
        })

    def rule_dismiss(self, suggestion_id: str, *, actor: str | None = None) -> dict[str, Any]:
        """Dismiss a suggestion: it is not listed as pending again.

        suggestion_id: the suggestion's id
        actor: who dismisses it
        """
        return self._invoke("rule_dismiss", {"suggestion_id": suggestion_id, "actor": actor})

    def sync_init(self, dir: str, *, encrypt: bool | None = None) -> dict[str, Any]:
        """Start syncing memory through a folder your sync tool already syncs (Syncthing, Dropbox, iCloud, a git repo,
        a share): this machine writes its drawers, forgets and facts there, and reads the other machines'.

        dir: the shared folder (made if missing)
        encrypt: seal every segment with a new key kept 0600 in the config dir (copy it to the other machines)
        """
        return self._invoke("sync_init", {"dir": dir, "encrypt": encrypt})

    def sync_join(self, dir: str, *, key_file: str | None = None) -> dict[str, Any]:
        """Sync this machine through a folder another machine made with sync init.

        dir: the shared folder
        key_file: the key file sync init --encrypt wrote (an encrypted folder only)
        """
        return self._invoke("sync_join", {"dir": dir, "key_file": key_file})

    def sync_status(self) -> dict[str, Any]:
        """Each machine of the sync folder, how far this one has read it, and any segment it could not read, with what
        to do.
        """
        return self._invoke("sync_status", {})

    def sync_leave(self) -> dict[str, Any]:
        """Stop syncing (the drawers imported stay; the folder is left as it is).
        """
        return self._invoke("sync_leave", {})

    def machines(self) -> dict[str, Any]:
        """The machines whose memories this one holds: drawers of each, the last segment each wrote and the last one
        read here.
        """
        return self._invoke("machines", {})

    def archive_status(self) -> dict[str, Any]:
        """The transcript archive: sessions and files kept byte for byte, their bytes and the bytes on disk (the
        compression ratio), and whether archiving is paused (a disk almost full).
        """
        return self._invoke("archive_status", {})

    def archive_list(
            self,
            *,
            wing: str | None = None,
            deleted_upstream: bool | None = None,
            limit: int | None = None,
    ) -> dict[str, Any]:
        """The archived sessions, newest first, with their files; --deleted-upstream: only those whose transcript the
        agent has deleted (mempal restore-session brings them back).

        wing: only this wing (project)
        deleted_upstream: only sessions whose original files are all gone
        limit: at most this many sessions
        """
        return self._invoke("archive_list", {"wing": wing, "deleted_upstream": deleted_upstream, "limit": limit})

    def restore_session(
            self,
            id: str,
            *,
            to: str | None = None,
            dry_run: bool | None = None,
            force: bool | None = None,
    ) -> dict[str, Any]:
        """Write an archived session's files (sub-agent files included) back where the agent expects them, byte for
        byte (sha256 checked), so `claude --resume ID` or Codex's resume finds it again. An existing file with other
        bytes is never replaced without --force.

        id: the session id (or a transcript's file name without .jsonl)
        to: write the files below this folder instead (their paths kept relative to the agent's folder, e.g.
            ~/.claude/projects)
        dry_run: only say what would be written
        force: replace existing files whose bytes differ
        """
        return self._invoke("restore_session", {"id": id, "to": to, "dry_run": dry_run, "force": force})
