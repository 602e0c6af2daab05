"""``mempal pack``: compress a folder of markdown into a tiered summary that fits a context window.

Tier 0 is an overview (~200 tokens), tier 1 a summary per topic (~100 tokens), tier 2 up to 10 facts per
topic, each copied verbatim from a source file and cited as ``(file:line)``. Deterministic and offline:
the embedder and the token counter are passed in (the daemon's model through the socket, or in-process).
"""

from mempald.features.pack.output import load_pack, write_pack, write_pack_file
from mempald.features.pack.pipeline import pack_directory
from mempald.features.pack.prune import DroppedTopic, MergedTopics, PrunePlan, prune_pack
from mempald.features.pack.render import render_multi, render_single
from mempald.features.pack.result import (
    Duplicate,
    EmbedFn,
    Fact,
    PackError,
    PackHeader,
    PackResult,
    TokenCounter,
    Topic,
)
from mempald.features.pack.summarize import ClusterInput, ExtractiveSummarizer, Summarizer, TopicDigest

__all__ = [
    "ClusterInput",
    "DroppedTopic",
    "Duplicate",
    "EmbedFn",
    "ExtractiveSummarizer",
    "Fact",
    "MergedTopics",
    "PackError",
    "PackHeader",
    "PackResult",
    "PrunePlan",
    "Summarizer",
    "TokenCounter",
    "Topic",
    "TopicDigest",
    "load_pack",
    "pack_directory",
    "prune_pack",
    "render_multi",
    "render_single",
    "write_pack",
    "write_pack_file",
]
