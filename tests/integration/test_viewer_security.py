"""`mempal ui`'s door, against a real daemon and a real viewer process, over raw HTTP: it binds 127.0.0.1 only
(another address only when asked, with a warning), every request needs the token (then an HttpOnly,
SameSite=Strict cookie), the Host header must be the address bound (DNS rebinding), changes need POST and the
CSRF token, there is no CORS, memory text is escaped and no script is allowed, and Ctrl-C stops it."""

from __future__ import annotations

import http.client
import os
import re
import select
import signal
import subprocess
import sys
import tempfile
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
        self.token = parts.query.split("token=", 1)[1]
        self.cookie: str | None = None

    def request(self, method: str, path: str, *, host: str | None = None, cookie: str | None = None,
                headers: dict[str, str] | None = None, body: str | None = None) -> Reply:
        conn = http.client.HTTPConnection(self.address, self.port, timeout=60)
        try:
            conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
            conn.putheader("Host", host if host is not None else self.netloc)
            jar = cookie if cookie is not None else self.cookie
            if jar:
                conn.putheader("Cookie", jar)
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

    def login(self) -> Reply:
        reply = self.get("/?token=" + self.token, cookie="")
        set_cookie = reply.header("set-cookie") or ""
        self.cookie = set_cookie.split(";", 1)[0]
        return reply

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
def test_the_token_is_required_then_kept_in_a_strict_httponly_cookie(viewer: Viewer) -> None:
    for path in ("/", "/search?q=flamingo", "/static/style.css", "/graph"):
        refused = viewer.get(path, cookie="")
        assert refused.status == 401, path
        assert "flamingo" not in refused.text and "acme" not in refused.text
    assert viewer.get("/?token=" + "x" * len(viewer.token), cookie="").status == 401
    assert viewer.get("/", cookie=f"mempal_ui_{viewer.port}={'y' * len(viewer.token)}").status == 401
    first = viewer.login()
    assert first.status == 303 and first.header("location") == "/"  # the token leaves the address bar
    attrs = {a.strip().lower() for a in (first.header("set-cookie") or "").split(";")}
    assert {"httponly", "samesite=strict", "path=/"} <= attrs
    assert viewer.cookie == f"mempal_ui_{viewer.port}={viewer.token}"
    page = viewer.get("/")
    assert page.status == 200 and "acme" in page.text
    deep = viewer.get(f"/search?q=flamingo&token={viewer.token}", cookie="")
    assert deep.status == 303 and deep.header("location") == "/search?q=flamingo"


@pytest.mark.timeout(180)
def test_the_host_header_must_be_the_address_bound(viewer: Viewer) -> None:
    viewer.login()
    assert viewer.get("/").status == 200
    for host in ("evil.example", f"evil.example:{viewer.port}", f"localhost:{viewer.port}",
                 f"127.0.0.1:{viewer.port + 1}", f"127.0.0.2:{viewer.port}", ""):
        reply = viewer.get("/", host=host)
        assert reply.status == 421, host
        assert "acme" not in reply.text
    assert viewer.get("/?token=" + viewer.token, host=f"rebind.example:{viewer.port}", cookie="").status == 421


@pytest.mark.timeout(180)
def test_changes_need_post_and_the_csrf_token(viewer: Viewer, palace: tuple[Daemon, str]) -> None:
    daemon, did = palace
    viewer.login()
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
    assert viewer.post(action, {"csrf": csrf}, cookie="").status == 401
    assert live(), "a refused request deleted the drawer"

    done = viewer.post(action, {"csrf": csrf, "reason": "superseded"},
                       headers={"Origin": f"http://127.0.0.1:{viewer.port}", "Sec-Fetch-Site": "same-origin"})
    assert done.status == 303 and done.header("location") == f"/drawer/{did}"
    assert not live()
    page = viewer.get(f"/drawer/{did}").text
    assert "Soft-deleted by user" in page and "superseded" in page and "Restore" in page
    assert viewer.post(f"/drawer/{did}/restore", {"csrf": csrf}).status == 303
    assert live()


@pytest.mark.timeout(180)
def test_no_cors_and_a_csp_that_allows_no_script(viewer: Viewer) -> None:
    viewer.login()
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
    viewer.login()
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
        wide.login()
        assert wide.get("/").status == 200
        assert wide.get("/", host=f"attacker.example:{wide.port}").status == 421
    finally:
        code, err = wide.stop()
    assert "warning" in err and "0.0.0.0" in err and "other machines" in err
    assert code == 0


@pytest.mark.timeout(180)
def test_ctrl_c_stops_it(palace: tuple[Daemon, str]) -> None:
    v = Viewer(palace[0].env, "--port", "0")
    v.login()
    assert v.get("/").status == 200
    code, err = v.stop(signal.SIGINT)
    assert code == 0 and "stopped" in err
    with pytest.raises(OSError):
        http.client.HTTPConnection(v.address, v.port, timeout=5).connect()


@pytest.mark.timeout(180)
def test_errors_are_pages_that_say_what_happened(viewer: Viewer, tmp_path: Path) -> None:
    viewer.login()
    assert viewer.get("/drawer/not-a-drawer-id").status == 400
    missing = viewer.get("/drawer/00000000-0000-4000-8000-000000000000")
    assert missing.status == 404 and "no drawer" in missing.text
    assert viewer.get("/no/such/page").status == 404
    bad_date = viewer.get("/graph?as_of=someday")
    assert bad_date.status == 400 and "someday" in bad_date.text
    env = isolated_env(tmp_path)  # a palace with no daemon
    lonely = Viewer(env)
    try:
        lonely.login()
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
    viewer.login()
    assert viewer.get(f"/drawer/{did}").status == 200
    assert daemon.stop() == 0
    down = viewer.get(f"/drawer/{did}")
    assert down.status == 503 and "mempald is not running" in down.text
    daemon.start()
    assert viewer.get(f"/drawer/{did}").status == 200
    assert viewer.get("/").status == 200
