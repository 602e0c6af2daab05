"""Issue 47 C2: the viewer's credential must not reach other servers on the loopback address.

Cookies ignore ports and ``SameSite=Strict`` counts every ``127.0.0.1:*`` origin as one site, so the viewer's old
cookie was sent by the owner's browser to any other local server it opened (another user's, a dev server
running untrusted code), even after a cross-site link followed by a meta refresh; that server could then read
and delete the owner's memories. Replayed here for real: a second local user (made with ``useradd``, removed
afterwards) runs a web server on 127.0.0.1; the owner's headless Chromium uses the viewer, then follows a link
from a viewer page to that server, whose page refreshes itself, then opens it again by its address. The
server, as that user, records every byte it was sent, then replays all of it (every path, header, cookie and
referrer) against the viewer (refused as another user's process: 403); so does a process of the owner's (the
untrusted dev server case: no key, 401). A control cookie set on the viewer's origin shows the browser does
send loopback cookies across ports, so a cookie credential would have been caught.

A second test: another user holding the key itself, or the one-time link of ``--open`` read in ``ps`` before the
browser used it, is refused (403) and the link stays good for the owner.
"""

from __future__ import annotations

import json
import os
import pwd
import queue
import secrets
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Daemon
from tests.integration.test_viewer_security import Viewer, isolated_env

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")
SETPRIV = shutil.which("setpriv")
PYTHON = "/usr/bin/python3"  # the other user's interpreter: stdlib only, readable by everyone
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--window-size=1000,800")
SECRET_TEXT = "The otter migration runbook says to drain the queue before the schema change."

if os.geteuid() != 0:
    pytest.skip("needs root: the test creates a second real local user (useradd) and runs a server as it",
                allow_module_level=True)
if not shutil.which("useradd") or not shutil.which("userdel") or not SETPRIV or not os.access(PYTHON, os.X_OK):
    pytest.skip("needs useradd, userdel, setpriv and /usr/bin/python3 to run a server as another user",
                allow_module_level=True)
if not CHROMIUM or not DRIVER:
    pytest.skip("needs Debian's chromium and chromium-driver (apt-get install -y chromium chromium-driver)",
                allow_module_level=True)
webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed (pip install -e '.[test]')")
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.wait import WebDriverWait  # noqa: E402

# The other user's server. Every request is written to stdout as JSON (request line and headers, verbatim).
# "/" is the page the owner is lured to: it refreshes itself to "/again" at once (same-site to the browser, so a
# SameSite=Strict cookie goes along). With "replay PORT" on the command line, it reads those records from stdin
# and sends each, with every header it received, to the viewer's port, plus the viewer's root and a search, and
# prints what the viewer answered; with "fetch PORT PATH..." it asks the viewer for those paths.
NEIGHBOUR = r'''
import http.client, http.server, json, sys

def fetch(port, tries):
    for path, headers in tries:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        conn.request("GET", path, headers={**headers, "Host": "127.0.0.1:%d" % port})
        resp = conn.getresponse()
        print(json.dumps({"path": path, "status": resp.status, "body": resp.read().decode("utf-8", "replace")}),
              flush=True)
        conn.close()

def replay(port):
    seen = [json.loads(line) for line in sys.stdin if line.strip()]
    tries = []
    for r in seen:
        headers = {k: v for k, v in r["headers"] if k.lower() not in ("host", "content-length")}
        for path in (r["path"], "/", "/search?q=otter"):
            tries.append((path, headers))
    for referer in {v for r in seen for k, v in r["headers"] if k.lower() == "referer"}:
        tries.append(("/" + referer.split("//", 1)[-1].partition("/")[2], {}))
    fetch(port, tries)

class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        print(json.dumps({"path": self.path, "line": self.requestline, "headers": list(self.headers.items())}),
              flush=True)
        page = ("<!doctype html><meta http-equiv=refresh content='0;url=/again'><title>neighbour</title>"
                "<p>nothing to see" if self.path == "/" else "<!doctype html><title>again</title><p>here again")
        data = page.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass

if len(sys.argv) > 2 and sys.argv[1] == "replay":
    replay(int(sys.argv[2]))
elif len(sys.argv) > 2 and sys.argv[1] == "fetch":
    fetch(int(sys.argv[2]), [(path, {}) for path in sys.argv[3:]])
else:
    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    print(json.dumps({"port": server.server_address[1]}), flush=True)
    server.serve_forever()
'''


@pytest.fixture(scope="module")
def other_user() -> Iterator[pwd.struct_passwd]:
    name = "mpv" + secrets.token_hex(4)
    made = subprocess.run(["useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", name],
                          capture_output=True, text=True)
    if made.returncode != 0:
        pytest.skip(f"useradd could not create a second user here: {made.stderr.strip()}")
    try:
        yield pwd.getpwnam(name)
    finally:
        subprocess.run(["userdel", name], capture_output=True)


def as_user(user: pwd.struct_passwd, *args: str) -> list[str]:
    assert SETPRIV is not None
    return [SETPRIV, f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}", "--clear-groups", "--inh-caps=-all",
            "--", PYTHON, "-c", NEIGHBOUR, *args]


class Neighbour:
    """The other user's server, and the requests it logged (read by a thread: a pipe read line by line)."""

    def __init__(self, user: pwd.struct_passwd) -> None:
        self.proc = subprocess.Popen(as_user(user), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     cwd="/", env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"})
        self.lines: queue.Queue[dict[str, Any]] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        try:
            self.port = int(self.lines.get(timeout=30)["port"])
        except queue.Empty:
            self.proc.kill()
            raise AssertionError(f"the other user's server did not start: {self.proc.communicate()[1]}") from None

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(json.loads(line))

    def records(self, until: str, timeout: float = 60) -> list[dict[str, Any]]:
        """What it logged, up to a request for ``until``."""
        out: list[dict[str, Any]] = []
        deadline = time.monotonic() + timeout
        while not out or out[-1]["path"] != until:
            try:
                out.append(self.lines.get(timeout=max(0.0, deadline - time.monotonic())))
            except queue.Empty:
                raise AssertionError(f"the other server never saw {until}: {out}") from None
        return out


@pytest.fixture(scope="module")
def neighbour(other_user: pwd.struct_passwd) -> Iterator[Neighbour]:
    n = Neighbour(other_user)
    try:
        yield n
    finally:
        n.proc.kill()
        n.proc.communicate()


@pytest.mark.timeout(300)
def test_another_users_server_on_loopback_gets_no_credential_and_can_use_nothing(
        tmp_path: Path, other_user: pwd.struct_passwd, neighbour: Neighbour) -> None:
    other_port = neighbour.port
    daemon = Daemon(isolated_env(tmp_path), tmp_path / "mempald.log").start()
    viewer: Viewer | None = None
    driver: Any = None
    profile = tempfile.mkdtemp(prefix="mpv-chromium-")
    try:
        daemon.call("ingest", {"text": SECRET_TEXT, "wing": "ops", "room": "runbooks", "agent": "user"})
        daemon.idle()
        viewer = Viewer(daemon.env)
        assert viewer.address == "127.0.0.1" and viewer.port != other_port
        opts = webdriver.ChromeOptions()
        opts.binary_location = CHROMIUM
        for flag in (*FLAGS, f"--user-data-dir={profile}"):
            opts.add_argument(flag)
        driver = webdriver.Chrome(service=Service(DRIVER), options=opts)
        driver.set_page_load_timeout(60)

        # the owner uses the viewer, from the printed URL
        driver.get(viewer.url)
        driver.get(f"http://{viewer.netloc}{viewer.base}/search?q=otter+migration+runbook")
        assert "drain the queue" in driver.find_element(By.TAG_NAME, "body").text
        # the control: a SameSite=Strict cookie of the viewer's origin (as the old credential was)
        driver.add_cookie({"name": "control", "value": "viewer-origin-cookie", "sameSite": "Strict",
                           "httpOnly": True, "path": "/"})

        # a link from a viewer page to the other server (cross-site navigation), whose page refreshes itself
        neighbour_url = f"http://127.0.0.1:{other_port}/"
        driver.execute_script("window.location.href = arguments[0]", neighbour_url)
        WebDriverWait(driver, 30, poll_frequency=0.1).until(lambda d: d.title == "again")
        seen = neighbour.records("/again")
        # and the owner opens it by its address (a top-level, user-typed navigation sends Strict cookies)
        driver.get(neighbour_url)
        WebDriverWait(driver, 30, poll_frequency=0.1).until(lambda d: d.title == "again")
        seen += neighbour.records("/again")

        received = json.dumps(seen)
        pages = [r["path"] for r in seen if r["path"] != "/favicon.ico"]
        assert pages == ["/", "/again", "/", "/again"], pages
        assert "viewer-origin-cookie" in received, "the control cookie was not sent: the test proves nothing"
        assert viewer.token not in received, "the viewer's key reached another user's server"
        assert "mempal_ui" not in received and "/search" not in received
        for r in seen:
            assert {k.lower(): v for k, v in r["headers"]}.get("cookie") == "control=viewer-origin-cookie"

        # the other user replays everything it got against the viewer: refused as another user (403); the same
        # replay from a process of the owner's (a dev server running untrusted code) has no key either (401)
        log = "\n".join(json.dumps(r) for r in seen)
        env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}
        for who, command, refused in (("another user", as_user(other_user, "replay", str(viewer.port)), 403),
                                      ("the owner", [PYTHON, "-c", NEIGHBOUR, "replay", str(viewer.port)], 401)):
            replay = subprocess.run(command, input=log, capture_output=True, text=True, timeout=120, cwd="/",
                                    env=env)
            assert replay.returncode == 0, replay.stderr
            answers = [json.loads(line) for line in replay.stdout.splitlines()]
            assert len(answers) >= 3 * len(seen)
            for a in answers:  # (the favicon, asked for at every origin's root, is an empty 204 for its owner)
                assert a["status"] == refused or (refused == 401 and a["path"] == "/favicon.ico"
                                                  and a["status"] == 204 and not a["body"]), (who, a)
                assert "drain the queue" not in a["body"] and "otter" not in a["body"], (who, a)
        # the owner still reads the memory
        driver.get(f"http://{viewer.netloc}{viewer.base}/search?q=otter+migration+runbook")
        assert "drain the queue" in driver.find_element(By.TAG_NAME, "body").text
        print(f"RELIABILITY viewer loopback: {len(seen)} requests from the owner's browser to another user's "
              f"server, 0 carried the key; {len(answers)} replays of it by that user (403) and by the owner (401)")
    finally:
        if driver is not None:
            driver.quit()
        shutil.rmtree(profile, ignore_errors=True)
        if viewer is not None:
            viewer.stop()
        daemon.kill()


@pytest.mark.timeout(180)
def test_another_user_holding_the_key_or_a_live_one_time_link_gets_nothing(
        tmp_path: Path, other_user: pwd.struct_passwd) -> None:
    """A key that leaked (a screen, a history file) or the one-time link read in `ps` before the browser used it
    (H3's race): another local user is refused before anything is read (the kernel's socket table names the
    connection's owner), and the link stays good for the owner's browser."""
    daemon = Daemon(isolated_env(tmp_path), tmp_path / "mempald.log").start()
    slow = tmp_path / "slow-browser"  # a browser still starting: it has the link in its argv, not yet used
    handed = tmp_path / "handed"
    slow.write_text(f"#!/bin/sh\necho \"$1\" > {handed}\n")
    slow.chmod(0o755)
    viewer: Viewer | None = None
    try:
        daemon.call("ingest", {"text": SECRET_TEXT, "wing": "ops", "room": "runbooks", "agent": "user"})
        daemon.idle()
        viewer = Viewer({**daemon.env, "BROWSER": str(slow)}, "--open")
        deadline = time.monotonic() + 30
        while not handed.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        link = handed.read_text().strip()
        nonce_path = "/" + link.split("//", 1)[1].partition("/")[2]
        assert nonce_path.startswith("/open/")
        stolen = subprocess.run(as_user(other_user, "fetch", str(viewer.port), nonce_path, viewer.base + "/",
                                        viewer.base + "/search?q=otter"),
                                capture_output=True, text=True, timeout=60, cwd="/",
                                env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"})
        assert stolen.returncode == 0, stolen.stderr
        answers = [json.loads(line) for line in stolen.stdout.splitlines()]
        assert [a["status"] for a in answers] == [403, 403, 403], answers
        assert all("only the user who started it" in a["body"] and "drain the queue" not in a["body"]
                   for a in answers)
        mine = viewer.get(nonce_path, raw=True)  # the owner's browser comes in after all
        assert mine.status == 303 and mine.header("location") == viewer.base + "/"
        assert "drain the queue" in viewer.get("/search?q=otter+migration+runbook").text
        print(f"RELIABILITY viewer other user with the key and a live one-time link: {len(answers)} tries, all 403")
    finally:
        if viewer is not None:
            viewer.stop()
        daemon.kill()
