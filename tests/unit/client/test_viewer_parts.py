"""The viewer's pure parts: HTML escaped by construction, links kept inside the viewer, the Host check, the
graph's data (from a real knowledge graph in SQLite) and its picture, and the read rates of the overview."""

from __future__ import annotations

import os
import re
import sqlite3

import anyio
import pytest
from starlette.types import Message, Receive, Scope, Send

from mempal.ui.guard import Guard, Keys, OneTimeLinks
from mempal.ui.html import Markup, check_url, el, esc, join, link
from mempal.ui.pages.overview import Rates
from mempal.ui.svg import HEIGHT, WIDTH, layout, picture
from mempald.features.kg import KnowledgeGraph
from mempald.features.viewer import graph_data

EVIL = '<script>alert("x")</script><img src=x onerror=alert(1)>'


def test_children_and_attributes_are_escaped_markup_is_not() -> None:
    out = el("p", EVIL, el("b", "ok"), 3, None, False, [EVIL], title=EVIL, data_note='"quoted"')
    assert "<script" not in out and "<img" not in out and "onerror=alert(1)&gt;" in out
    assert out.count("&lt;script&gt;") == 3  # twice as text, once in the title attribute
    assert '<b>ok</b>' in out and ">3" in out and 'data-note="&quot;quoted&quot;"' in out
    assert esc("a & b") == "a &amp; b" and isinstance(join("x", el("i", "y")), Markup)
    assert el("input", name="q", checked=True, disabled=False) == '<input name="q" checked>'
    with pytest.raises(TypeError):
        el("p", object())


@pytest.mark.parametrize("url", ["javascript:alert(1)", "//evil.example/x", "http://evil.example", "data:text/html,x",
                                 " /x", "JAVASCRIPT:x"])
def test_links_outside_the_viewer_cannot_be_built(url: str) -> None:
    with pytest.raises(ValueError):
        check_url(url)
    with pytest.raises(ValueError):
        el("a", "x", href=url)


def test_links_inside_the_viewer_carry_their_query_quoted() -> None:
    assert link("/search", {"q": "a&b <c>", "wing": ["x", "y"], "room": None, "since": ""}) == \
        "/search?q=a%26b+%3Cc%3E&wing=x&wing=y"
    assert el("a", "go", href="/drawer/1?x=1") == '<a href="/drawer/1?x=1">go</a>'
    assert check_url("?page=2") == "?page=2" and check_url("#top") == "#top"


def guard(host: str, port: int = 8765) -> Guard:
    async def app(scope: object, receive: object, send: object) -> None:
        raise AssertionError("never called here")

    return Guard(app, keys=Keys("t", "c"), host=host, port=port)


def test_the_host_header_must_name_the_bound_address_and_port() -> None:
    g = guard("127.0.0.1")
    assert g.host_ok("127.0.0.1:8765") and g.host_ok("127.0.0.1:8765".upper())
    for bad in (None, "", "127.0.0.1", "127.0.0.1:8766", "localhost:8765", "evil.example:8765", "10.0.0.2:8765",
                "127.0.0.1:8765.evil.example"):
        assert not g.host_ok(bad), bad
    six = guard("::1")
    assert six.host_ok("[::1]:8765") and not six.host_ok("127.0.0.1:8765")
    wide = guard("0.0.0.0")
    assert wide.host_ok("192.168.1.20:8765") and wide.host_ok("127.0.0.1:8765") and wide.host_ok("[fe80::1]:8765")
    assert not wide.host_ok("rebind.example:8765") and not wide.host_ok("192.168.1.20:9999")
    assert guard("127.0.0.1", 80).host_ok("127.0.0.1")


def test_tokens_are_compared_whole() -> None:
    assert Keys.same("abc", "abc") and not Keys.same("abd", "abc") and not Keys.same(None, "abc")
    assert not Keys.same("ab", "abc") and not Keys.same("", "abc")


@pytest.fixture
def kg() -> KnowledgeGraph:
    graph = KnowledgeGraph(sqlite3.connect(":memory:", check_same_thread=False))
    graph.ensure_schema()
    for s, p, o in (("Kai", "works on", "Orion"), ("kai", "recommends", "Clerk"), ("Maya", "manages", "Kai"),
                    ("Orion", "uses", "Postgres"), ("Orion", "uses", "Clerk"), ("Leo", "likes", "Tea")):
        graph.add(s, p, o, valid_from="2025-01-01")
    graph.invalidate(subject="Orion", predicate="uses", object="Postgres", ended="2025-06-01")
    return graph


def test_graph_data_takes_the_most_connected_entities_and_the_facts_between_them(kg: KnowledgeGraph) -> None:
    everything = graph_data(kg.query(include_expired=True), entity=None, limit=3, now="2026-01-01")
    assert [n["name"] for n in everything["nodes"]] == ["Kai", "Orion", "Clerk"]  # "kai" merged into "Kai"
    assert everything["entities"] == 7 and everything["triples"] == 6 and everything["truncated"]
    pairs = {(e["subject"].casefold(), e["object"].casefold()) for e in everything["edges"]}  # as recorded
    assert pairs == {("kai", "orion"), ("kai", "clerk"), ("orion", "clerk")}
    current = graph_data(kg.query(include_expired=True), entity=None, limit=60, now="2026-01-01")
    states = {(e["subject"], e["object"]): e["current"] for e in current["edges"]}
    assert states[("Orion", "Postgres")] is False and states[("Kai", "Orion")] is True


def test_graph_data_around_an_entity(kg: KnowledgeGraph) -> None:
    res = graph_data(kg.query(include_expired=True), entity="  orion ", limit=60, now="2026-01-01")
    assert res["entity"] == "Orion" and res["nodes"][0] == {"name": "Orion", "degree": 3, "centre": True}
    assert {n["name"] for n in res["nodes"]} == {"Orion", "Kai", "Postgres", "Clerk"}
    assert "Leo" not in {n["name"] for n in res["nodes"]}
    assert graph_data(kg.query(), entity="Nobody", limit=60, now="2026-01-01")["nodes"] == []


def test_the_picture_places_every_entity_inside_and_escapes_names(kg: KnowledgeGraph) -> None:
    kg.add(EVIL, "breaks", "Kai")
    data = graph_data(kg.query(include_expired=True), entity=None, limit=60, now="2026-01-01")
    pos = layout(data["nodes"], data["edges"])
    assert set(pos) == {n["name"].casefold() for n in data["nodes"]}
    assert all(0 <= x <= WIDTH and 0 <= y <= HEIGHT for x, y in pos.values())
    assert layout(data["nodes"], data["edges"]) == pos  # deterministic
    svg = picture(data)
    assert svg.startswith("<svg") and "<script" not in svg and "&lt;script&gt;" in svg
    assert len(re.findall(r'<line [^>]*class="edge (current|expired)"', svg)) == len(data["edges"])
    assert svg.count('class="edge expired"') == 1 and svg.count("<circle") == len(data["nodes"])
    centred = graph_data(kg.query(), entity="Kai", limit=60, now="2026-01-01")
    assert layout(centred["nodes"], centred["edges"])["kai"] == (WIDTH / 2, HEIGHT / 2)


def test_read_rates_and_eta_from_two_status_samples() -> None:
    rates = Rates()
    src = {"key": "claude_code", "exchanges": 100, "backlog_bytes": 10_000}
    rates.add({"sources": [src]}, now=10.0)
    assert rates.of("claude_code") == (None, None, None)
    rates.add({"sources": [{**src, "exchanges": 140, "backlog_bytes": 6_000}]}, now=14.0)
    ex_rate, drained, eta = rates.of("claude_code")
    assert ex_rate == 10.0 and drained == 1000.0 and eta == 6.0
    rates.add({"sources": [{**src, "exchanges": 150, "backlog_bytes": 0}]}, now=200.0)  # older samples age out
    assert rates.of("claude_code") == (None, None, None)


def test_a_one_time_link_works_once_and_only_within_its_time() -> None:
    now = [1000.0]
    links = OneTimeLinks(clock=lambda: now[0])
    first, second, third = links.issue(), links.issue(), links.issue()
    assert len({first, second, third}) == 3 and len(first) >= 40
    assert links.redeem(first) and not links.redeem(first)  # spent
    assert not links.redeem("x" * len(second)) and not links.redeem("")
    now[0] += OneTimeLinks.TTL_S - 1
    assert links.redeem(second)
    now[0] += 2
    assert not links.redeem(third) and not links.redeem(third)  # expired, then spent


def _ask(g: Guard, path: str, client: tuple[str, int] = ("127.0.0.1", 50000)) -> tuple[int, bytes, dict[str, str]]:
    """One GET through the guard, as uvicorn hands it over."""
    sent: list[Message] = []

    async def receive() -> Message:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: Message) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "GET", "path": path, "raw_path": path.encode(), "query_string": b"",
             "headers": [(b"host", b"127.0.0.1:8765")], "client": client, "server": ("127.0.0.1", 8765),
             "root_path": "", "scheme": "http", "http_version": "1.1"}
    anyio.run(g, scope, receive, send)
    start = next(m for m in sent if m["type"] == "http.response.start")
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return start["status"], body, {k.decode(): v.decode() for k, v in start["headers"]}


def test_the_pages_links_and_redirects_are_under_the_key_and_other_users_are_refused_first() -> None:
    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        assert scope["root_path"] == "/key"
        await send({"type": "http.response.start", "status": 303, "headers": [(b"location", b"/drawer/1")]})
        await send({"type": "http.response.body", "body": el("a", "x", href="/search").encode()})

    keys = Keys("key", "c")
    uids = {50000: os.getuid(), 50001: os.getuid() + 1}
    g = Guard(app, keys=keys, host="127.0.0.1", port=8765, uid_of=lambda c, s: uids.get(c[1]))
    status, body, headers = _ask(g, "/key/drawer/1/x")
    assert status == 303 and headers["location"] == "/key/drawer/1" and body == b'<a href="/key/search">x</a>'
    assert el("a", "x", href="/search") == '<a href="/search">x</a>'  # outside a request: as written
    nonce = keys.links.issue()
    for path in ("/key/", f"/open/{nonce}", "/favicon.ico"):
        status, body, _ = _ask(g, path, client=("127.0.0.1", 50001))  # another user, key or nonce in hand
        assert status == 403 and b"only the user who started it" in body
        assert _ask(g, path, client=("127.0.0.1", 50002))[0] == 403  # a peer the table does not list
    assert _ask(g, f"/open/{nonce}")[0] == 303  # the refused tries did not spend it
    assert _ask(g, "/key/")[0] == 303
