"""structlog, configured once: JSON lines when stderr is not a TTY, the console renderer on a TTY.

``get(component)`` gives a logger whose every line names the component that wrote it (``component=...``).
"""

from __future__ import annotations

import logging
import sys

import structlog


def configure(verbose: bool = False, json: bool | None = None) -> None:
    use_json = (not sys.stderr.isatty()) if json is None else json
    level = logging.DEBUG if verbose else logging.INFO
    renderer: structlog.typing.Processor = (
        structlog.processors.JSONRenderer() if use_json else structlog.dev.ConsoleRenderer(colors=False)
    )
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(level),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=False,
    )


def get(component: str) -> structlog.typing.FilteringBoundLogger:
    """A logger for one component (``app``, ``server``, ``ingest``, ``store``...): its lines say which."""
    logger: structlog.typing.FilteringBoundLogger = structlog.get_logger(component=component)
    return logger
