"""`mempal ui`'s door, against a real daemon and a real viewer process, over raw HTTP: it binds 127.0.0.1 only
(another address only when asked, with a warning), every page lives under the key in the printed URL's path and
no cookie is ever set, `--open` hands the browser a one-time link, the Host header must be the address bound (DNS
rebinding), changes need POST and the CSRF token, there is no CORS, memory text is escaped and no script is
allowed, and Ctrl-C stops it."""

from __future__ import annotations

import http.client
import json
import os
import re
import select
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

import pytest

from tests.conftest import Daemon

XSS = ('<script>window.__pwned = 1; document.title = "pwned"</script><img src=x onerror="window.__pwned = 2">'
       ' The flamingo release checklist lives in docs/release.md.')


def isolated_env(root: Path) -> dict[str, str]:
    """Every mempald path inside ``root`` (as ``tests/conftest.py``'s ``home`` does, for module-wide use)."""
    home = root / "home"
    runtime = Path(tempfile.mkdtemp(prefix="mpv-"))  # Unix socket paths are short
    env = {k: v for k, v in os.environ.items() if k not in ("XDG_RUNTIME_DIR", "NOTIFY_SOCKET")}
    env.update({
        "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"), "XDG_DATA_HOME": str(home / ".local/share"),
        "XDG_STATE_HOME": str(home / ".local/state"), "XDG_CACHE_HOME": str(home / ".cache"),
        "MEMPAL_CONFIG_DIR": str(home / ".config/mempald"), "MEMPAL_DATA_DIR": str(home / ".local/share/mempald"),
        "MEMPAL_RUNTIME_DIR": str(runtime / "run"), "HF_HUB_OFFLINE": "1",
    })
    (home / ".claude" / "projects").mkdir(parents=True)
    return env


@dataclass
class Reply:
    status: int
    headers: http.client.HTTPMessage
    text: str

    def header(self, name: str) -> str | None:
        return self.headers.get(name)


class Viewer:
    """A real ``mempal ui`` process; ``get``/``post`` speak raw HTTP so every header can be forged."""

    def __init__(self, env: dict[str, str], *args: str, cwd: Path | None = None) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "mempal.cli.main", "ui", *args], env=env,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=cwd)
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], 60)
        line = self.proc.stdout.readline() if ready else ""
        found = re.search(r"http://\S+", line)
        if found is None:
            self.proc.kill()
            err = self.proc.stderr.read() if self.proc.stderr else ""
            raise AssertionError(f"mempal ui printed no URL: {line!r} {err}")
        self.url = found.group(0)
        parts = urlsplit(self.url)
        self.netloc = parts.netloc
        self.address = parts.hostname or ""
        self.port = parts.port or 80
        self.token = parts.path.strip("/")  # the key: the first segment of every page's path
        self.base = "/" + self.token

    def request(self, method: str, path: str, *, host: str | None = None, cookie: str | None = None,
                headers: dict[str, str] | None = None, body: str | None = None, raw: bool = False) -> Reply:
        """``path`` under the key (``raw``: as given)."""
        conn = http.client.HTTPConnection(self.address, self.port, timeout=60)
        try:
            conn.putrequest(method, path if raw else self.base + path, skip_host=True, skip_accept_encoding=True)
            conn.putheader("Host", host if host is not None else self.netloc)
            if cookie:
                conn.putheader("Cookie", cookie)
            data = body.encode() if body is not None else None
            for k, v in (headers or {}).items():
                conn.putheader(k, v)
            if data is not None:
                conn.putheader("Content-Length", str(len(data)))
            conn.endheaders(data)
            resp = conn.getresponse()
            return Reply(resp.status, resp.headers, resp.read().decode("utf-8", "replace"))
        finally:
            conn.close()

    def get(self, path: str, **kw: Any) -> Reply:
        return self.request("GET", path, **kw)

    def post(self, path: str, form: dict[str, str], **kw: Any) -> Reply:
        headers = {"Content-Type": "application/x-www-form-urlencoded", **kw.pop("headers", {})}
        return self.request("POST", path, body=urlencode(form), headers=headers, **kw)

    def csrf(self, path: str) -> str:
        found = re.search(r'name="csrf" value="([^"]+)"', self.get(path).text)
        assert found, f"no CSRF field on {path}"
        return found.group(1)

    def stop(self, sig: int = signal.SIGINT) -> tuple[int, str]:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            _, err = self.proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.communicate()
            raise AssertionError("mempal ui did not stop on its signal") from None
        return self.proc.returncode, err


def listening(pid: int) -> set[tuple[str, int]]:
    """The TCP addresses process ``pid`` listens on (from /proc: its socket inodes in /proc/net/tcp*)."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    out = set()
    for table, width in (("tcp", 8), ("tcp6", 32)):
        for line in Path(f"/proc/net/{table}").read_text().splitlines()[1:]:
            cols = line.split()
            if cols[3] != "0A" or cols[9] not in inodes:  # 0A: LISTEN
                continue
            hexaddr, hexport = cols[1].split(":")
            ipv4 = ".".join(str(int(hexaddr[i:i + 2], 16)) for i in (6, 4, 2, 0)) if width == 8 else ""
            addr = ipv4 or "v6:" + hexaddr
            out.add((addr, int(hexport, 16)))
    return out


@pytest.fixture(scope="module")
def palace(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Daemon, str]]:
    root = tmp_path_factory.mktemp("viewer-security")
    daemon = Daemon(isolated_env(root), root / "mempald.log").start()
    try:
        saved = daemon.call("ingest", {"text": XSS, "wing": "acme", "room": "planning", "agent": "user"})
        daemon.idle()
        yield daemon, saved["drawer_ids"][0]
    finally:
        daemon.kill()


@pytest.fixture(scope="module")
def viewer(palace: tuple[Daemon, str]) -> Iterator[Viewer]:
    v = Viewer(palace[0].env)
    yield v
    v.stop()


@pytest.mark.timeout(180)
def test_binds_loopback_only_and_prints_a_token_url(viewer: Viewer) -> None:
    assert viewer.address == "127.0.0.1" and len(viewer.token) >= 40
    assert listening(viewer.proc.pid) == {("127.0.0.1", viewer.port)}


@pytest.mark.timeout(180)
def test_every_page_needs_the_key_in_its_path_and_no_cookie_is_set(viewer: Viewer) -> None:
    for path in ("/", "/search?q=flamingo", "/static/style.css", "/graph", f"/x{viewer.token}/",
                 f"/{viewer.token[:-1]}/", f"/{'y' * len(viewer.token)}/search?q=flamingo",
                 f"/?token={viewer.token}", f"/search?q=flamingo&token={viewer.token}"):
        refused = viewer.get(path, raw=True, cookie=f"mempal_ui_{viewer.port}={viewer.token}")  # the old cookie
        assert refused.status == 401, path
        assert "flamingo" not in refused.text and "acme" not in refused.text
    assert viewer.get("/favicon.ico", raw=True).status == 204  # asked for by every browser, holds nothing
    page = viewer.get("/")
    assert page.status == 200 and "acme" in page.text and page.header("set-cookie") is None
    assert f'href="{viewer.base}/search"' in page.text and f'href="{viewer.base}/static/style.css"' in page.text
    assert 'href="/search"' not in page.text  # every link of the page is under the key
    bare = viewer.get(viewer.base, raw=True)
    assert bare.status == 303 and bare.header("location") == viewer.base + "/"
    found = viewer.get("/search?q=flamingo")
    assert found.status == 200 and "flamingo" in found.text and found.header("set-cookie") is None


@pytest.mark.timeout(180)
def test_the_host_header_must_be_the_address_bound(viewer: Viewer) -> None:
    assert viewer.get("/").status == 200
    for host in ("evil.example", f"evil.example:{viewer.port}", f"localhost:{viewer.port}",
                 f"127.0.0.1:{viewer.port + 1}", f"127.0.0.2:{viewer.port}", ""):
        reply = viewer.get("/", host=host)
        assert reply.status == 421, host
        assert "acme" not in reply.text
    assert viewer.get("/", host=f"rebind.example:{viewer.port}").status == 421


@pytest.mark.timeout(180)
def test_changes_need_post_and_the_csrf_token(viewer: Viewer, palace: tuple[Daemon, str]) -> None:
    daemon, did = palace
    csrf = viewer.csrf(f"/drawer/{did}")
    assert csrf != viewer.token
    action = f"/drawer/{did}/delete"

    def live() -> bool:
        return bool(daemon.call("search", {"query": "flamingo release checklist", "wing": "acme"})["hits"])

    assert viewer.get(action).status == 405
    assert viewer.request("PUT", action).status == 405
    assert viewer.post(action, {"reason": "forged"}).status == 403
    assert viewer.post(action, {"reason": "forged", "csrf": "z" * len(csrf)}).status == 403
    assert viewer.post(action, {"csrf": csrf}, headers={"Origin": "http://evil.example"}).status == 403
    assert viewer.post(action, {"csrf": csrf}, headers={"Sec-Fetch-Site": "cross-site"}).status == 403
    assert viewer.post(action, {"csrf": csrf}, headers={"Origin": "null"}).status == 403  # a sandboxed page
    assert viewer.request("POST", action, body=f'{{"csrf": "{csrf}"}}',
                          headers={"Content-Type": "application/json"}).status == 403
    assert viewer.post(action, {"csrf": csrf}, raw=True).status == 401  # without the key
    assert live(), "a refused request deleted the drawer"

    done = viewer.post(action, {"csrf": csrf, "reason": "superseded"},
                       headers={"Origin": f"http://127.0.0.1:{viewer.port}", "Sec-Fetch-Site": "same-origin"})
    assert done.status == 303 and done.header("location") == f"{viewer.base}/drawer/{did}"
    assert not live()
    page = viewer.get(f"/drawer/{did}").text
    assert "Soft-deleted by user" in page and "superseded" in page and "Restore" in page
    assert viewer.post(f"/drawer/{did}/restore", {"csrf": csrf}).status == 303
    assert live()


@pytest.mark.timeout(180)
def test_no_cors_and_a_csp_that_allows_no_script(viewer: Viewer) -> None:
    pre = viewer.request("OPTIONS", "/", headers={"Origin": "http://evil.example",
                                                  "Access-Control-Request-Method": "POST"})
    assert pre.status == 405
    page = viewer.get("/search?q=flamingo", headers={"Origin": "http://evil.example"})
    assert page.status == 200
    for reply in (pre, page, viewer.get("/nope")):
        assert not [k for k in reply.headers if k.lower().startswith("access-control-")]
    csp = page.header("content-security-policy") or ""
    assert "default-src 'none'" in csp and "script-src" not in csp and "frame-ancestors 'none'" in csp
    assert page.header("x-content-type-options") == "nosniff" and page.header("referrer-policy") == "same-origin"


@pytest.mark.timeout(180)
def test_memory_text_is_escaped_on_every_page_that_shows_it(viewer: Viewer, palace: tuple[Daemon, str]) -> None:
    _, did = palace
    for path in ("/search?q=flamingo+release+checklist", f"/drawer/{did}", "/timeline?wing=acme"):
        text = viewer.get(path).text
        assert "&lt;script&gt;window.__pwned" in text, path
        assert "<script" not in text.lower() and "<img src=x" not in text.lower(), path
    evil = viewer.get("/search?q=%3Cscript%3Ealert(1)%3C/script%3E&wing=%22%3E%3Cb%3E").text
    assert "<script>alert" not in evil and 'value="&quot;&gt;&lt;b&gt;"' in evil


@pytest.mark.timeout(180)
def test_another_address_only_when_asked_and_with_a_warning(palace: tuple[Daemon, str]) -> None:
    wide = Viewer(palace[0].env, "--host", "0.0.0.0")
    try:
        assert wide.address == "127.0.0.1"  # the printed URL still points at this machine
        assert listening(wide.proc.pid) == {("0.0.0.0", wide.port)}
        assert wide.get("/").status == 200
        assert wide.get("/", host=f"attacker.example:{wide.port}").status == 421
    finally:
        code, err = wide.stop()
    assert "warning" in err and "0.0.0.0" in err and "other machines" in err
    assert code == 0


@pytest.mark.timeout(180)
def test_ctrl_c_stops_it(palace: tuple[Daemon, str]) -> None:
    v = Viewer(palace[0].env, "--port", "0")
    assert v.get("/").status == 200
    code, err = v.stop(signal.SIGINT)
    assert code == 0 and "stopped" in err
    with pytest.raises(OSError):
        http.client.HTTPConnection(v.address, v.port, timeout=5).connect()


@pytest.mark.timeout(180)
def test_errors_are_pages_that_say_what_happened(viewer: Viewer, tmp_path: Path) -> None:
    assert viewer.get("/drawer/not-a-drawer-id").status == 400
    missing = viewer.get("/drawer/00000000-0000-4000-8000-000000000000")
    assert missing.status == 404 and "no drawer" in missing.text
    assert viewer.get("/no/such/page").status == 404
    bad_date = viewer.get("/graph?as_of=someday")
    assert bad_date.status == 400 and "someday" in bad_date.text
    env = isolated_env(tmp_path)  # a palace with no daemon
    lonely = Viewer(env)
    try:
        down = lonely.get("/")
        assert down.status == 503 and "mempald is not running" in down.text
    finally:
        code, err = lonely.stop()
    assert code == 0 and "the viewer starts anyway" in err


@pytest.mark.timeout(240)
def test_pages_come_back_when_the_daemon_restarts(viewer: Viewer, palace: tuple[Daemon, str]) -> None:
    """(Last in this module: it restarts the module's daemon.) The viewer keeps its connections between pages;
    a daemon that went away gives a 503 page, and once it is back the next page is served on a new one."""
    daemon, did = palace
    assert viewer.get(f"/drawer/{did}").status == 200
    assert daemon.stop() == 0
    down = viewer.get(f"/drawer/{did}")
    assert down.status == 503 and "mempald is not running" in down.text
    daemon.start()
    assert viewer.get(f"/drawer/{did}").status == 200
    assert viewer.get("/").status == 200


FAKE_BROWSER = """#!{python}
# What `mempal ui --open` starts as the browser: like a real one it leaves a process running with the URL in its
# command line (readable by every local user in ps) and, as the browser, follows that URL.
import http.client, json, os, sys, time, urllib.parse
if os.fork():
    sys.exit(0)
url = urllib.parse.urlsplit(sys.argv[1])
conn = http.client.HTTPConnection(url.hostname, url.port, timeout=30)
conn.request("GET", url.path, headers={{"Host": url.netloc}})
first = conn.getresponse()
first.read()
where = first.getheader("location") or ""
conn.request("GET", where, headers={{"Host": url.netloc}})
page = conn.getresponse()
out = {{"pid": os.getpid(), "first": first.status, "location": where, "page": page.status,
        "text": page.read().decode()}}
with open({out!r} + ".tmp", "w") as f:
    json.dump(out, f)
os.rename({out!r} + ".tmp", {out!r})
time.sleep(120)  # the browser's lifetime
"""


@pytest.mark.timeout(180)
def test_open_hands_the_browser_a_one_time_link_and_ps_shows_no_key(palace: tuple[Daemon, str],
                                                                    tmp_path: Path) -> None:
    """Issue 47 H3: `--open` put the token in the browser's command line, readable by every local user in `ps`
    for the browser's lifetime. The attack, replayed: read the browser's command line from /proc (what `ps`
    shows) and use the URL in it."""
    out = tmp_path / "browser.json"
    fake = tmp_path / "browser"
    fake.write_text(FAKE_BROWSER.format(python=sys.executable, out=str(out)))
    fake.chmod(0o755)
    v = Viewer({**palace[0].env, "BROWSER": str(fake)}, "--open")
    pid = 0
    try:
        deadline = time.monotonic() + 60
        while not out.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert out.exists(), "the browser was not started, or it did not load the page"
        seen = json.loads(out.read_text())
        pid = seen["pid"]
        assert seen["first"] == 303 and seen["location"] == v.base + "/"
        assert seen["page"] == 200 and "acme" in seen["text"]  # the browser got in
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")  # what ps shows, still running
        assert v.token not in " ".join(argv)
        link = next(a for a in argv if a.startswith("http://"))
        assert urlsplit(link).path.startswith("/open/")
        stolen = v.get(urlsplit(link).path, raw=True)  # another user replays it
        assert stolen.status == 401 and v.token not in stolen.text and stolen.header("location") is None
        assert "acme" not in stolen.text and "used already" in stolen.text
    finally:
        if pid:
            os.kill(pid, signal.SIGKILL)
        v.stop()
