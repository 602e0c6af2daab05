"""`mempal ui` in a real browser: Debian's headless Chromium driven by Selenium loads every page from a real
viewer process, in front of a real daemon holding the shared format fixtures (Claude Code, Codex, ChatGPT,
Gemini CLI transcripts, read from ``../shared`` by path), and checks what a person sees: wing names, a search
hit, a drawer's text in its session, graph nodes, the cowork inbox, a pack. Each page is saved as a screenshot
under the test's ``tmp_path`` (``screens/<page>.png``). A stored ``<script>`` is shown as text and never runs."""

from __future__ import annotations

import base64
import json
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FORMATS, REPO, Daemon, copy_tree
from tests.integration.test_viewer_security import XSS, Viewer, isolated_env

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--window-size=1280,1000")
LAYOUT = "claude_code/projects_layout/-home-USER-projects-spotter-worktrees-spotter-4te"
SHORT = "55604662-cf2a-4331-851a-ec234028f8ca"
ROLLOUT = "rollout-2025-11-22T21-45-35-019aad50-a7e6-7422-b7a8-0b384290624f.jsonl"
LONG_ROLLOUT = "rollout-2026-03-09T16-29-31-019cd4b8-43b8-78a3-9985-04f6307807de.jsonl"
PACK_NOTES = REPO / "tests" / "fixtures" / "pack_corpus" / "notes" / "agent"

if not CHROMIUM or not DRIVER:
    pytest.skip("the browser tests need Debian's chromium and chromium-driver (apt-get install -y chromium "
                "chromium-driver; .ci/run installs them)", allow_module_level=True)
webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed (pip install -e '.[test]')")
from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException  # noqa: E402
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.wait import WebDriverWait  # noqa: E402


@dataclass
class Palace:
    daemon: Daemon
    viewer: Viewer
    project: Path
    pack_out: Path
    xss_drawer: str
    phx_drawer: str


def _setup(root: Path) -> tuple[Daemon, Path, Path, str, str]:
    if not FORMATS.is_dir():
        pytest.skip(f"the shared format fixtures are not at {FORMATS} (they live beside the repo, not in it)")
    env = isolated_env(root)
    home = Path(env["HOME"])
    projects = home / ".claude" / "projects"
    copy_tree(FORMATS / LAYOUT, projects / LAYOUT.rsplit("/", 1)[1])
    short = projects / "-home-marco-projects-spotter" / f"{SHORT}.jsonl"
    short.parent.mkdir()
    short.write_bytes((FORMATS / "claude_code" / "short_session_v2.1.38.jsonl").read_bytes())
    codex = home / ".codex" / "sessions" / "2025" / "11" / "22"
    codex.mkdir(parents=True)
    shutil.copy(FORMATS / "codex" / "rtchess_turn_aborted_excerpt.jsonl", codex / ROLLOUT)
    long_codex = home / ".codex" / "sessions" / "2026" / "03" / "09"
    long_codex.mkdir(parents=True)
    shutil.copy(FORMATS / "codex" / "real2" / LONG_ROLLOUT, long_codex / LONG_ROLLOUT)  # 13 prompts in one session
    chatgpt = root / "exports" / "chatgpt"
    chatgpt.mkdir(parents=True)
    shutil.copy(FORMATS / "chatgpt" / "conversations.subset.json", chatgpt / "conversations.json")
    gemini = root / "gemini"
    gemini.mkdir()
    for f in (FORMATS / "gemini_cli").glob("*.json"):
        shutil.copy(f, gemini / f.name)
    notes = root / "notes"
    shutil.copytree(PACK_NOTES, notes)
    pack_out = root / "notes-packed"
    project = root / "spotter"
    project.mkdir()

    daemon = Daemon(env, root / "mempald.log").start()
    try:
        daemon.call("watch_add", {"path": str(chatgpt), "mode": "convos"})
        daemon.call("watch_add", {"path": str(notes), "mode": "pack", "wing": "notes", "output": str(pack_out)})
        daemon.call("mine", {"paths": [str(gemini)]})
        xss = daemon.call("ingest", {"text": XSS, "wing": "acme", "room": "planning", "agent": "user"})["drawer_ids"][0]
        daemon.idle(timeout=300)
        phx = daemon.call("search", {"query": "mix phx.server doesnt seem to start", "limit": 1})["hits"][0]
        for s, p, o, since in (("spotter", "built with", "Phoenix", "2026-02-10"),
                               ("spotter", "exports traces to", "OpenTelemetry", "2026-02-12"),
                               ("Marco", "maintains", "spotter", "2025-06-01"),
                               ("spotter", "served by", "Cowboy", "2025-01-01"),
                               ("OpenTelemetry", "instruments", "Phoenix", None)):
            daemon.call("kg", {"op": "add", "subject": s, "predicate": p, "object": o, "valid_from": since,
                               "source_drawer": phx["drawer_id"]})
        daemon.call("kg", {"op": "invalidate", "subject": "spotter", "predicate": "served by", "object": "Cowboy",
                           "ended": "2026-01-15"})
        daemon.call("cowork_push", {"text": "Codex: I moved the OTEL exporter config to config/runtime.exs; please "
                                            "re-run the traces test.", "to": "codex", "from": "claude",
                                    "cwd": str(project)})
        daemon.wait_for((pack_out / "knowledge_base.json").is_file, timeout=300, interval=0.5)
    except BaseException:
        daemon.kill()  # a failed setup leaves no daemon behind
        raise
    return daemon, project, pack_out, xss, phx["drawer_id"]


@pytest.fixture(scope="module")
def palace(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Palace]:
    root = tmp_path_factory.mktemp("viewer-browser")
    daemon, project, pack_out, xss, phx = _setup(root)
    viewer = Viewer(daemon.env, cwd=project)
    try:
        yield Palace(daemon, viewer, project, pack_out, xss, phx)
    finally:
        viewer.stop()
        daemon.kill()


@pytest.fixture(scope="module")
def browser(palace: Palace) -> Iterator[Any]:
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    profile = tempfile.mkdtemp(prefix="mpv-chromium-")
    for flag in (*FLAGS, f"--user-data-dir={profile}"):
        opts.add_argument(flag)
    driver = webdriver.Chrome(service=Service(DRIVER), options=opts)
    driver.set_page_load_timeout(60)
    try:
        driver.get(palace.viewer.url)  # the printed URL, with the key in its path
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def wait(driver: Any, condition: Callable[[Any], Any], timeout: float = 30) -> Any:
    """Until ``condition(driver)`` holds (a click's navigation has landed).  An element read while the page is
    being replaced goes stale: that is "not yet", as is one not there yet."""
    return WebDriverWait(driver, timeout, poll_frequency=0.1,
                         ignored_exceptions=(NoSuchElementException, StaleElementReferenceException)).until(condition)


def visit(driver: Any, palace: Palace, path: str) -> str:
    driver.get(f"http://{palace.viewer.netloc}{palace.viewer.base}{path}")
    body: str = driver.find_element(By.TAG_NAME, "body").text
    assert "only under its key" not in body and "mempald is not running" not in body, body[:500]
    return body


def shot(driver: Any, tmp_path: Path, name: str) -> Path:
    """The whole page (beyond the window) as ``tmp_path/screens/<name>.png``."""
    size = driver.execute_cdp_cmd("Page.getLayoutMetrics", {})["cssContentSize"]
    clip = {"x": 0, "y": 0, "width": size["width"], "height": min(size["height"], 8000), "scale": 1}
    data = driver.execute_cdp_cmd("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True,
                                                             "clip": clip})["data"]
    out = tmp_path / "screens" / f"{name}.png"
    out.parent.mkdir(exist_ok=True)
    out.write_bytes(base64.b64decode(data))
    assert out.stat().st_size > 10_000
    return out


@pytest.mark.timeout(600)
def test_overview_shows_wings_rooms_sources_and_filters(browser: Any, palace: Palace, tmp_path: Path) -> None:
    body = visit(browser, palace, "/")
    st = palace.daemon.call("status")
    assert {"spotter", "acme", "notes"} <= set(st["wings"])
    wings = [a.text for a in browser.find_elements(By.CSS_SELECTOR, "table.counts a[href*='/timeline?']")]
    assert set(wings) == set(st["wings"])
    for room in st["rooms"]:
        assert room in body
    assert f"{st['drawers']:,} drawers" in body and "caught up" in body
    for source in st["sources"]:
        assert source["path"] in body
    assert "Redactions and skipped files" in body and "Index" in body
    shot(browser, tmp_path, "overview")


@pytest.mark.timeout(600)
def test_search_with_filters_cites_and_opens_the_drawer(browser: Any, palace: Palace, tmp_path: Path) -> None:
    visit(browser, palace, "/search")
    box = browser.find_element(By.NAME, "q")
    box.send_keys("mix phx.server doesnt seem to start")
    browser.find_element(By.CSS_SELECTOR, "details summary").click()
    browser.find_element(By.NAME, "wing").send_keys("spotter")
    browser.find_element(By.CSS_SELECTOR, ".searchbar button").click()
    wait(browser, lambda d: "wing=spotter" in d.current_url and d.find_elements(By.CSS_SELECTOR, "article.hit"))
    hits = browser.find_elements(By.CSS_SELECTOR, "article.hit")
    assert hits, browser.find_element(By.TAG_NAME, "body").text[:1000]
    top = hits[0].text
    assert "> mix phx.server doesnt seem to start" in top and f"{SHORT}.jsonl" in top and palace.phx_drawer in top
    assert all("spotter" in h.find_element(By.CSS_SELECTOR, ".meta").text for h in hits)
    names = {e.get_attribute("name") for e in browser.find_elements(By.CSS_SELECTOR, "form.search [name]")}
    assert {"q", "wing", "room", "memory_type", "source_kind", "agent", "session_id", "machine", "since", "until",
            "limit"} <= names
    shot(browser, tmp_path, "search")
    hits[0].find_element(By.CSS_SELECTOR, "a.title").click()
    wait(browser, lambda d: d.current_url.endswith(f"/drawer/{palace.phx_drawer}"))
    assert "mix phx.server doesnt seem to start" in browser.find_element(By.CSS_SELECTOR, "pre.full").text


@pytest.mark.timeout(600)
def test_index_search_shows_one_line_hits_and_the_format_is_one_choice(browser: Any, palace: Palace,
                                                                      tmp_path: Path) -> None:
    """Issue 41: with format=index every hit showed an empty excerpt box and "from ?"; the format was two
    checkboxes that could both be ticked."""
    visit(browser, palace, "/search")
    browser.find_element(By.NAME, "q").send_keys("mix phx.server doesnt seem to start")
    browser.find_element(By.CSS_SELECTOR, "details summary").click()
    choices = browser.find_elements(By.CSS_SELECTOR, "input[name=format]")
    assert [(c.get_attribute("type"), c.get_attribute("value")) for c in choices] == [("radio", "full"),
                                                                                    ("radio", "index")]
    assert [c.is_selected() for c in choices] == [True, False]
    choices[1].click()
    choices[0].click()
    choices[1].click()  # a person ticks both: one stays ticked
    assert [c.is_selected() for c in choices] == [False, True]
    browser.find_element(By.CSS_SELECTOR, ".searchbar button").click()
    wait(browser, lambda d: "format=index" in d.current_url and d.find_elements(By.CSS_SELECTOR, "article.hit"))
    hits = browser.find_elements(By.CSS_SELECTOR, "article.hit")
    expected = palace.daemon.call("search", {"query": "mix phx.server doesnt seem to start", "format": "index"})
    assert len(hits) == len(expected["hits"]) > 0
    for shown, h in zip(hits, expected["hits"], strict=True):
        text = shown.text
        assert h["title"] in text and h["drawer_id"] in text and h["date"] in text and "tokens in full" in text
        assert "from ?" not in text and "?" not in shown.find_element(By.CSS_SELECTOR, ".meta").text
        assert not shown.find_elements(By.CSS_SELECTOR, "pre")  # no empty excerpt box
        assert shown.find_element(By.CSS_SELECTOR, "a.title").get_attribute("href").endswith(
            f"/drawer/{h['drawer_id']}")
    assert [c.is_selected() for c in browser.find_elements(By.CSS_SELECTOR, "input[name=format]")] == [False, True]
    shot(browser, tmp_path, "search-index")


def _long_session(daemon: Daemon) -> tuple[dict[str, Any], dict[str, Any]]:
    """A fixture session with many exchanges, and a drawer in its middle."""
    for wing in daemon.call("status")["wings"]:
        for s in sorted(daemon.call("wing_sessions", {"wing": wing})["sessions"], key=lambda s: -s["drawers"]):
            if not s["session_id"]:
                continue
            drawers = daemon.call("session_drawers", {"session_id": s["session_id"], "after": 200})["drawers"]
            positions = sorted({d["position"] for d in drawers})
            if len(positions) >= 7:
                pos = positions[len(positions) // 2]
                return s, next(d for d in drawers if d["position"] == pos)
    raise AssertionError("no fixture session with 7 exchanges or more")


@pytest.mark.timeout(600)
def test_drawer_in_its_session_with_delete_and_restore(browser: Any, palace: Palace, tmp_path: Path) -> None:
    _, middle = _long_session(palace.daemon)
    body = visit(browser, palace, f"/drawer/{middle['drawer_id']}")
    shown = browser.find_element(By.CSS_SELECTOR, "pre.full").text
    assert shown.strip() == middle["text"].strip()
    for label, value in (("Source", middle["source_path"]), ("Agent", middle["agent"]),
                         ("Branch", middle["git_branch"]), ("Session", middle["session_id"])):
        assert label in body and value in body, label
    assert f"exchange #{middle['position']}" in body
    items = browser.find_elements(By.CSS_SELECTOR, "ol.timeline li")
    positions = [int(i.find_element(By.CSS_SELECTOR, ".meta a").text.lstrip("#")) for i in items]
    assert positions == sorted(positions) and min(positions) < middle["position"] < max(positions)
    assert "this drawer" in browser.find_element(By.CSS_SELECTOR, "ol.timeline li.current").text
    shot(browser, tmp_path, "drawer")

    def found() -> bool:
        query = {"query": middle["text"][:200], "wing": middle["wing"], "limit": 50}
        hits = palace.daemon.call("search", query)["hits"]
        return any(h["drawer_id"] == middle["drawer_id"] for h in hits)

    assert found()
    browser.find_element(By.NAME, "reason").send_keys("checked in the browser test")
    browser.find_element(By.CSS_SELECTOR, "button.danger").click()
    wait(browser, lambda d: "Soft-deleted by user" in d.find_element(By.TAG_NAME, "body").text)
    assert "checked in the browser test" in browser.find_element(By.TAG_NAME, "body").text and not found()
    shot(browser, tmp_path, "drawer-deleted")
    browser.find_element(By.XPATH, "//button[text()='Restore']").click()
    wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "button.danger"))
    assert found()



@pytest.mark.timeout(600)
def test_a_long_session_reads_as_one_page_with_every_drawer_linked(browser: Any, palace: Palace,
                                                                   tmp_path: Path) -> None:
    """Issue 41: a long session was cramped in small inner scroll boxes, 20 exchanges a page, each clipped."""
    long, middle = _long_session(palace.daemon)
    drawers = palace.daemon.call("session_drawers", {"session_id": long["session_id"], "after": 199})["drawers"]
    visit(browser, palace, f"/session?id={long['session_id']}")
    items = browser.find_elements(By.CSS_SELECTOR, "ol.exchanges li.exchange")
    groups: dict[tuple[int, str], list[dict[str, Any]]] = {}
    for d in drawers:
        groups.setdefault((d["position"], d["exchange_key"]), []).append(d)
    assert len(items) == len(groups) >= 7 and not browser.find_elements(By.CSS_SELECTOR, ".pager")  # one page
    for item, parts in zip(items, groups.values(), strict=True):
        assert item.get_attribute("id") == f"x{parts[0]['position']}"  # in order
        linked = [a.get_attribute("href").rsplit("/", 1)[-1] for a in item.find_elements(By.CSS_SELECTOR, ".cite a")]
        assert linked == [d["drawer_id"] for d in parts]  # a link to each drawer
        shown = [pre.text.strip() for pre in item.find_elements(By.CSS_SELECTOR, "pre.text")]
        assert shown == [d["text"].strip() for d in parts]  # whole, not clipped
    boxed = browser.execute_script(  # an element scrolling inside the page (its content taller than its box)
        "return [...document.querySelectorAll('main *')].filter(e => e.scrollHeight > e.clientHeight + 2 && "
        "['auto', 'scroll'].includes(getComputedStyle(e).overflowY)).length")
    assert boxed == 0
    shot(browser, tmp_path, "session")
    # a drawer's page links to its exchange on the session page
    visit(browser, palace, f"/drawer/{middle['drawer_id']}")
    browser.find_element(By.CSS_SELECTOR, f"dl.facts a[href*='#x{middle['position']}']").click()
    wait(browser, lambda d: d.current_url.endswith(f"#x{middle['position']}"))
    assert browser.find_element(By.CSS_SELECTOR, f"li.exchange#x{middle['position']}").is_displayed()


@pytest.mark.timeout(600)
def test_timeline_of_a_wing_lists_its_sessions_by_day(browser: Any, palace: Palace, tmp_path: Path) -> None:
    body = visit(browser, palace, "/timeline?wing=spotter")
    res = palace.daemon.call("wing_sessions", {"wing": "spotter"})
    assert len(res["sessions"]) == 2
    days = [h.text for h in browser.find_elements(By.CSS_SELECTOR, "section.day h2")]
    expected = [time.strftime("%A %d %B %Y", time.localtime(s["ts"])) for s in res["sessions"]]
    assert [d.split(" 1 session")[0] for d in days] == expected  # newest first
    assert "> mix phx.server doesnt seem to start" in body and "branch spotter-4te" in body
    sizes = [a.text for a in browser.find_elements(By.CSS_SELECTOR, "li.session .meta a")]
    assert sizes == [f"{s['drawers']} drawer" + ("s" if s["drawers"] != 1 else "") for s in res["sessions"]]
    shot(browser, tmp_path, "timeline")
    browser.find_element(By.CSS_SELECTOR, "li.session a.title").click()
    wait(browser, lambda d: d.current_url.endswith(f"/drawer/{res['sessions'][0]['first_drawer']}"))


@pytest.mark.timeout(600)
def test_knowledge_graph_draws_entities_and_an_entity_timeline(browser: Any, palace: Palace, tmp_path: Path) -> None:
    visit(browser, palace, "/graph?expired=1")
    labels = {t.text for t in browser.find_elements(By.CSS_SELECTOR, "svg.graph text.label")}
    assert labels == {"spotter", "Phoenix", "OpenTelemetry", "Marco", "Cowboy"}
    assert len(browser.find_elements(By.CSS_SELECTOR, "svg.graph line.edge")) == 5
    assert len(browser.find_elements(By.CSS_SELECTOR, "svg.graph line.edge.expired")) == 1
    shot(browser, tmp_path, "graph")
    now = visit(browser, palace, "/graph")
    assert "Cowboy" not in {t.text for t in browser.find_elements(By.CSS_SELECTOR, "svg.graph text.label")}
    assert "facts valid now" in now
    spotter = next(a for a in browser.find_elements(By.CSS_SELECTOR, "svg.graph a.entity")
                   if a.find_element(By.CSS_SELECTOR, "text.label").text == "spotter")
    assert spotter.get_dom_attribute("href") == f"{palace.viewer.base}/graph?entity=spotter"
    spotter.find_element(By.CSS_SELECTOR, "circle").click()  # a person clicks the node
    wait(browser, lambda d: d.current_url.endswith("/graph?entity=spotter"))
    body = browser.find_element(By.TAG_NAME, "body").text
    assert "Timeline of spotter" in body and "2025-01-01 → 2026-01-15" in body and "2026-02-10 → now" in body
    assert browser.find_elements(By.CSS_SELECTOR, "svg.graph circle.node.centre")
    shot(browser, tmp_path, "graph-entity")


@pytest.mark.timeout(600)
def test_cowork_inbox_is_read_only_and_packs_are_shown(browser: Any, palace: Palace, tmp_path: Path) -> None:
    body = visit(browser, palace, "/cowork")  # the viewer's own cwd is the project
    assert str(palace.project) in body and "moved the OTEL exporter config" in body and "from claude" in body
    shot(browser, tmp_path, "cowork")
    still = palace.daemon.call("cowork_status", {"cwd": str(palace.project)})["inboxes"]["codex"]
    assert still["pending"] == 1, "looking at the inbox took the message"

    pack = json.loads((palace.pack_out / "knowledge_base.json").read_text())
    body = visit(browser, palace, "/packs")
    assert str(palace.pack_out) in body and pack["header"]["topic"] in body
    shown = {h.text.split(" importance")[0] for h in browser.find_elements(By.CSS_SELECTOR, "article.topic h3")}
    assert shown == {t["label"] for t in pack["topics"]}
    shot(browser, tmp_path, "packs")


@pytest.mark.timeout(600)
def test_a_stored_script_is_shown_as_text_and_never_runs(browser: Any, palace: Palace, tmp_path: Path) -> None:
    for path in (f"/drawer/{palace.xss_drawer}", "/search?q=flamingo+release+checklist", "/timeline?wing=acme"):
        body = visit(browser, palace, path)
        assert "<script>window.__pwned = 1;" in body, path
        assert browser.execute_script("return window.__pwned === undefined") is True, path
        assert browser.title != "pwned"  # the script would have set it
        assert not browser.find_elements(By.CSS_SELECTOR, "main script, main img")
    shot(browser, tmp_path, "escaped")
