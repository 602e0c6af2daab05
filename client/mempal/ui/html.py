"""HTML (and SVG) built from values, escaped by construction.

Pages are never written as format strings: ``el(tag, *children, **attrs)`` escapes every child that is not
already ``Markup`` and every attribute value, so memory text (a stored ``<script>``, an ``onerror=`` in a
transcript) always reaches the browser as text. Link targets must be this viewer's own paths (``/...``, ``?...``
or ``#...``): a ``javascript:`` or off-site URL cannot be built. A path is written under the viewer's key
(``BASE``, set by the guard for each request: ``/search`` becomes ``/<key>/search``). The Content-Security-Policy
the guard sends (no script at all) is the second wall behind this one.
"""

from __future__ import annotations

import functools
import html
import re
from collections.abc import Iterable, Mapping
from contextvars import ContextVar
from typing import Any
from urllib.parse import quote, urlencode

VOID = frozenset({"br", "hr", "input", "meta", "link", "img", "col", "wbr"})
URL_ATTRS = frozenset({"href", "action", "src", "xlink:href", "formaction"})
BASE: ContextVar[str] = ContextVar("mempal_ui_base", default="")  # the key's path prefix, "/<key>"
# attribute spellings that keep their case or a colon (SVG)
SPELLED = {"viewbox": "viewBox", "xlink_href": "xlink:href", "preserve_aspect_ratio": "preserveAspectRatio"}


class Markup(str):
    """A string that is already HTML (built by ``el`` or ``esc``): inserted as it is."""

    __slots__ = ()



def esc(value: object) -> Markup:
    """``value`` as text inside HTML: ``<``, ``>``, ``&`` and both quotes escaped."""
    return Markup(html.escape(str(value), quote=True))


def _render(child: Any, out: list[str]) -> None:
    # the common cases first, with exact type checks: pages build thousands of elements (a graph, a timeline)
    kind = type(child)
    if kind is Markup:
        out.append(child)
    elif kind is str:
        out.append(_escape(child))
    elif kind is list or kind is tuple:
        for c in child:
            _render(c, out)
    elif child is None or kind is bool:
        return
    elif isinstance(child, Markup):
        out.append(child)
    elif isinstance(child, (str, int, float)):
        out.append(_escape(str(child)))
    elif isinstance(child, Iterable):
        for c in child:
            _render(c, out)
    else:
        raise TypeError(f"cannot put a {type(child).__name__} into HTML")


_SPECIAL = re.compile(r"[&<>\"']")


def _escape(text: str) -> str:
    """``html.escape`` with quotes, skipped when there is nothing to escape (most names and numbers)."""
    return html.escape(text, quote=True) if _SPECIAL.search(text) else text


def join(*children: Any) -> Markup:
    """Several children as one piece of markup (each escaped unless it is ``Markup``)."""
    out: list[str] = []
    _render(children, out)
    return Markup("".join(out))


def check_url(value: str) -> str:
    """Only this viewer's own paths: ``/x`` (not ``//host``), ``?query`` or ``#fragment``."""
    if (value.startswith("/") and not value.startswith("//")) or value.startswith(("?", "#")):
        return value
    raise ValueError(f"refusing a link outside the viewer: {value[:80]!r}")


@functools.lru_cache(maxsize=256)
def _attr_name(name: str) -> str:
    low = name.lower()
    if low in SPELLED:
        return SPELLED[low]
    return name.rstrip("_").replace("_", "-")


def el(tag: str, *children: Any, **attrs: Any) -> Markup:
    """``<tag attrs>children</tag>``. Attribute names: ``class_`` -> ``class``, ``data_x`` -> ``data-x``;
    ``True`` gives a bare attribute, ``None`` / ``False`` leaves it out."""
    parts = [tag]
    for raw, value in attrs.items():
        if value is None or value is False:
            continue
        name = _attr_name(raw)
        if value is True:
            parts.append(name)
            continue
        text = str(value)
        if name in URL_ATTRS and check_url(text).startswith("/"):
            text = BASE.get() + text
        parts.append(f'{name}="{_escape(text)}"')
    opening = "<" + " ".join(parts) + ">"
    if tag in VOID:
        return Markup(opening)
    out: list[str] = [opening]
    _render(children, out)
    out.append(f"</{tag}>")
    return Markup("".join(out))


def link(path: str, query: Mapping[str, Any] | None = None) -> str:
    """A URL of this viewer: ``path`` plus the non-empty ``query`` values (lists give repeated keys)."""
    check_url(path)
    q = {k: v for k, v in (query or {}).items() if v not in (None, "", (), [])}
    return path + ("?" + urlencode(q, doseq=True) if q else "")


def segment(value: str) -> str:
    """One path segment, quoted (``/`` included)."""
    return quote(value, safe="")
