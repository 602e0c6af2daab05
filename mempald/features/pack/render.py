"""Markdown for a pack: one file, or an index plus one file per topic.

The header states ``tokens_out``, which is the model's count of the single-file markdown that contains
that very header; ``settle_tokens`` finds the number that is true of the text it appears in.
"""

from __future__ import annotations

import dataclasses
import re

from mempald.features.pack.result import PackError, PackHeader, PackResult, TokenCounter, Topic, floor1

KB_NAME = "knowledge_base"
INDEX_NAME = "index.md"


def header_lines(h: PackHeader) -> list[str]:
    plural = "" if h.files == 1 else "s"
    lines = [
        f"# Knowledge Base: {h.topic}",
        f"> Packed by mempal | {h.files} file{plural} | {h.num(h.tokens_in)} -> {h.num(h.tokens_out)} tokens "
        f"({floor1(h.ratio):.1f}:1)",
    ]
    if h.shortfall:
        lines.append(f"> {h.shortfall[:1].upper()}{h.shortfall[1:]}")
    return lines


def _fallback_summary(t: Topic) -> str:
    more = ", …" if len(t.sources) > 5 else ""
    return f"_No prose to summarise; sources: {', '.join(t.sources[:5])}{more}_"


def fact_line(f_text: str, file: str, line: int) -> str:
    return f"- {f_text} ({file}:{line})"


def render_single(r: PackResult) -> str:
    out = header_lines(r.header)
    out += ["", "## Overview", r.overview or "_(empty)_"]
    if r.topics:
        out += ["", "## Topics"]
        for t in r.topics:
            out += ["", f"### {t.label}", t.summary or _fallback_summary(t)]
    if any(t.facts for t in r.topics):
        out += ["", "## Facts"]
        for t in r.topics:
            if t.facts:
                out += ["", f"### {t.label}"]
                out += [fact_line(f.text, f.file, f.line) for f in t.facts]
    return "\n".join(out) + "\n"


def slug(label: str) -> str:
    s = re.sub(r"[^a-z0-9]+", "-", label.lower()).strip("-")
    return s[:40].rstrip("-") or "topic"


def topic_filenames(r: PackResult) -> list[str]:
    return [f"{i:02d}-{slug(t.label)}.md" for i, t in enumerate(r.topics, start=1)]


def render_multi(r: PackResult) -> dict[str, str]:
    """File name -> text: ``index.md`` (header, overview, topic list) and one file per topic."""
    names = topic_filenames(r)
    index = header_lines(r.header)
    index += ["", "## Overview", r.overview or "_(empty)_"]
    if r.topics:
        index += ["", "## Topics", ""]
        for name, t in zip(names, r.topics, strict=True):
            n_src = len(t.sources)
            index.append(
                f"- [{t.label}]({name}): {len(t.facts)} facts from {n_src} file{'s' if n_src != 1 else ''}, "
                f"importance {t.importance:.2f}"
            )
    index += ["", "_Token figures are for the whole pack as one file (the knowledge_base.md layout)._"]
    files = {INDEX_NAME: "\n".join(index) + "\n"}
    total = len(r.topics)
    for i, (name, t) in enumerate(zip(names, r.topics, strict=True), start=1):
        body = [
            f"# {t.label}",
            f"> Topic {i} of {total} in Knowledge Base: {r.header.topic} | packed by mempal | [index]({INDEX_NAME})",
            "",
            "## Summary",
            t.summary or _fallback_summary(t),
        ]
        if t.facts:
            body += ["", "## Facts", *(fact_line(f.text, f.file, f.line) for f in t.facts)]
        body += ["", "## Sources", *(f"- {s}" for s in t.sources)]
        files[name] = "\n".join(body) + "\n"
    return files


def settle_tokens(r: PackResult, count: TokenCounter) -> PackResult:
    """``r`` with ``header.tokens_out`` equal to the token count of ``render_single`` of the result."""
    for plain in (r.header.plain_numbers, not r.header.plain_numbers):

        def with_out(n: int, plain: bool = plain) -> PackResult:
            return dataclasses.replace(r, header=dataclasses.replace(r.header, tokens_out=n, plain_numbers=plain))

        n = count(render_single(with_out(max(1, r.header.tokens_out))))
        for _ in range(6):
            m = count(render_single(with_out(n)))
            if m == n:
                return with_out(n)
            n = m
        for cand in sorted(range(max(1, n - 12), n + 13), key=lambda c: (abs(c - n), c)):
            if count(render_single(with_out(cand))) == cand:
                return with_out(cand)
    raise PackError(f"could not settle the header's token count near {r.header.tokens_out}")  # pragma: no cover
