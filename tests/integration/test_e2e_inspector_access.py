"""The inspector's boundary: who may see what, refusals a person can act on, and where it
may listen. Reads go over HTTP as a browser sends them (cookies, JSON); one test signs in
through a real headless Chromium."""

from __future__ import annotations

import http.client
import http.cookiejar
import json
import re
import socket
import ssl
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from browser import chromium, screenshot, wait
from certificates import Pki
from conftest import StartService
from contextwm.access.keys import Keys
from contextwm.app import Service
from contextwm.domain.access import Role
from contextwm.inspector.reads import READ_METHODS
from contextwm.settings import ServerSettings, SettingsError
from contextwm.transport.access import method_role
from contextwm_client import Client
from selenium.webdriver.common.by import By
from server_process import START_SECONDS, ServerProcess

STATIC = Path(__file__).parents[2] / "server" / "contextwm" / "inspector" / "static"


class Browser:
    """urllib with a cookie jar: what a browser sends, without rendering."""

    def __init__(self, url: str, context: ssl.SSLContext | None = None) -> None:
        self.url = url.rstrip("/")
        handlers: list[Any] = [urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar())]
        if context is not None:
            handlers.append(urllib.request.HTTPSHandler(context=context))
        self._opener = urllib.request.build_opener(*handlers)

    def call(
        self,
        path: str,
        body: Any = None,
        *,
        raw: bytes | None = None,
        headers: dict[str, str] | None = None,
    ) -> tuple[int, Any, dict[str, str]]:
        data = raw if raw is not None else None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            self.url + path,
            data=data,
            method="GET" if data is None else "POST",
            headers={"Content-Type": "application/json", **(headers or {})},
        )
        try:
            with self._opener.open(request, timeout=30) as response:
                return response.status, json.loads(response.read()), dict(response.headers)
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read()), dict(exc.headers)


def keyed_service(start_service: StartService) -> tuple[Service, Keys, str]:
    """A server that requires keys, with the inspector on; an admin token."""
    service = start_service(require_api_keys=True, inspector_port=0)
    keys = Keys(service.store, time.time)
    _, admin = keys.create("admin", Role.ADMIN, ["*"])
    return service, keys, admin


def test_the_inspector_makes_read_calls_only() -> None:
    assert {method_role(m) for m in READ_METHODS} == {Role.READ}


def test_the_inspector_is_off_by_default(service: Service) -> None:
    assert service.inspector_port is None


@pytest.mark.both_stores
def test_a_key_sees_only_its_namespaces_and_reads_only_within_them(
    start_service: StartService,
) -> None:
    service, keys, admin = keyed_service(start_service)
    with Client(f"127.0.0.1:{service.port}", api_key=admin) as client:
        for namespace in ("team-a/one", "team-a/two", "team-b"):
            client.append("c", f"a note in {namespace}", namespace=namespace)
    reader_key, reader = keys.create("reader", Role.READ, ["team-a/"])
    page = Browser(f"http://127.0.0.1:{service.inspector_port}")

    status, body, _ = page.call("/api/namespaces")
    assert (status, body["code"]) == (401, "UNAUTHENTICATED")
    assert page.call("/api/session")[1] == {"keys_required": True, "signed_in": False, "key": None}
    status, body, _ = page.call("/api/sign-in", {"key": reader[:-4] + "0000"})
    assert status == 401 and "API key" in body["error"]

    status, body, headers = page.call("/api/sign-in", {"key": reader})
    assert status == 200 and body["key_id"] == reader_key.key_id
    cookie = headers["Set-Cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and reader not in cookie
    status, body, _ = page.call("/api/namespaces")
    assert [n["namespace"] for n in body["namespaces"]] == ["team-a/two", "team-a/one"]
    status, body, _ = page.call("/api/timeline?namespace=team-a/one&conversation=c")
    assert status == 200 and body["items"][0]["content"] == "a note in team-a/one"

    # Another namespace: the same refusal whether the conversation exists or not, as gRPC.
    there = page.call("/api/timeline?namespace=team-b&conversation=c")
    missing = page.call("/api/timeline?namespace=team-b&conversation=nobody")
    assert there[0] == missing[0] == 403
    assert there[1] == missing[1] and there[1]["code"] == "PERMISSION_DENIED"
    status, body, _ = page.call(
        "/api/context", {"namespace": "team-b", "conversationId": "c", "maxTokens": 50}
    )
    assert (status, body["code"]) == (403, "PERMISSION_DENIED")

    # Revoked: the session stops working at once.
    keys.revoke(reader_key.key_id)
    status, body, _ = page.call("/api/namespaces")
    assert status == 401 and "revoked" in body["error"]
    assert page.call("/api/namespaces")[0] == 401

    # Signed out: the session is gone on the server too.
    _, _, _ = page.call("/api/sign-in", {"key": admin})
    assert len(page.call("/api/namespaces")[1]["namespaces"]) == 3
    page.call("/api/sign-out", {})
    assert page.call("/api/namespaces")[0] == 401


def test_bad_requests_get_a_clear_status_and_message(start_service: StartService) -> None:
    service = start_service(inspector_port=0)
    with Client(f"127.0.0.1:{service.port}") as client:
        client.append("c", "hello")
    page = Browser(f"http://127.0.0.1:{service.inspector_port}")
    cases = {
        "/api/nothing": (404, "NOT_FOUND"),
        "/api/timeline": (400, "INVALID_ARGUMENT"),
        "/api/timeline?conversation=c&after=ten": (400, "INVALID_ARGUMENT"),
        "/api/timeline?conversation=nobody": (404, "NOT_FOUND"),
        "/api/timeline?conversation=c&state=gone": (400, "INVALID_ARGUMENT"),
        "/api/active": (400, "INVALID_ARGUMENT"),
        "/api/active?conversation=nobody": (404, "NOT_FOUND"),
        "/api/conversations?namespace=bad%20name": (400, "INVALID_ARGUMENT"),
        "/static/../app.py": (404, "NOT_FOUND"),
    }
    for path, expected in cases.items():
        status, body, _ = page.call(path)
        assert (status, body["code"]) == expected, (path, body)
        assert body["error"] and "Traceback" not in body["error"]
    posts = {
        b"{not json": (400, "INVALID_ARGUMENT"),
        b"[1, 2]": (400, "INVALID_ARGUMENT"),
        json.dumps({"conversationId": "c", "maxTokens": 0}).encode(): (400, "INVALID_ARGUMENT"),
        json.dumps({"conversationId": "c", "maxTokens": 9, "budget": 1}).encode(): (
            400,
            "INVALID_ARGUMENT",
        ),
        b" " * (64 * 1024 + 1): (413, "RESOURCE_EXHAUSTED"),
    }
    for raw, expected in posts.items():
        status, body, _ = page.call("/api/context", raw=raw)
        assert (status, body["code"]) == expected, (raw[:40], body)
    # The answer of a read is GetContext's own.
    status, body, _ = page.call("/api/context", {"conversationId": "c", "maxTokens": 50})
    assert status == 200 and body["recent"][0]["item"]["content"] == "hello"
    assert body["tokens"]["total"] <= 50


def test_a_wrong_method_gets_405_with_allow_and_every_answer_keeps_the_headers(
    start_service: StartService,
) -> None:
    service = start_service(inspector_port=0)
    port = service.inspector_port
    assert port is not None

    def send(method: str, path: str, body: bytes = b"") -> tuple[int, dict[str, str], bytes]:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        try:
            connection.request(method, path, body=body or None)
            response = connection.getresponse()
            return response.status, dict(response.headers), response.read()
        finally:
            connection.close()

    cases = {
        ("DELETE", "/api/namespaces"): (405, "GET"),
        ("PUT", "/api/conversation?conversation=c"): (405, "GET"),
        ("PATCH", "/api/timeline"): (405, "GET"),
        ("POST", "/api/timeline?conversation=c"): (405, "GET"),
        ("GET", "/api/search"): (405, "POST"),
        ("DELETE", "/api/sign-out"): (405, "POST"),
        ("PUT", "/static/inspector.js"): (405, "GET, HEAD"),
        ("POST", "/"): (405, "GET, HEAD"),
        ("DELETE", "/api/nothing"): (404, None),
        ("BREW", "/api/namespaces"): (501, None),
    }
    for (method, path), (status, allow) in cases.items():
        got, headers, raw = send(method, path, b'{"a": 1}' if method != "GET" else b"")
        assert got == status, (method, path, got, raw[:80])
        assert headers.get("Allow") == allow, (method, path, headers)
        # The same headers as every other answer: the policy, no sniffing, no caching.
        assert "default-src 'self'" in headers["Content-Security-Policy"], (method, path)
        assert headers["X-Content-Type-Options"] == "nosniff"
        assert headers["Cache-Control"] == "no-store"
        assert headers["Content-Type"].startswith("application/json"), (method, path)
        body = json.loads(raw)
        assert body["error"] and method in body["error"], body
    # HEAD reads a page's or asset's headers, without the body.
    status, headers, raw = send("HEAD", "/static/inspector.js")
    assert (status, raw) == (200, b"") and int(headers["Content-Length"]) > 0
    assert "default-src 'self'" in headers["Content-Security-Policy"]
    # A wrong method does not break the connection's next request.
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.request("DELETE", "/api/namespaces", body=b"x" * 100)
        first = connection.getresponse()
        first.read()
        if first.getheader("Connection") == "close":
            connection.close()
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        connection.request("GET", "/api/namespaces")
        assert connection.getresponse().status == 200
    finally:
        connection.close()


def test_a_page_that_left_gives_its_event_stream_back_at_once(
    start_service: StartService,
) -> None:
    service = start_service(inspector_port=0)
    port = service.inspector_port
    assert port is not None
    with Client(f"127.0.0.1:{service.port}") as client:
        client.append("c", "hello")

        def open_stream() -> tuple[http.client.HTTPConnection, http.client.HTTPResponse]:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            # From the first event: one comes at once, with no new append to the others.
            connection.request("GET", "/api/events?conversation=c&after=0")
            response = connection.getresponse()
            assert response.status == 200
            return connection, response

        # Pages that were open and left: each held one of the server's Watch streams.
        for connection, _ in [open_stream() for _ in range(service.settings.limits.max_watchers)]:
            connection.close()
        # Given back within moments: a new page's stream follows the conversation. (Each
        # looks every 0.5 s whether its page went; the limit leaves a busy machine time,
        # and stays short of the 15 s heartbeat, which could notice the page gone too.)
        deadline = time.monotonic() + 10
        while True:
            connection, response = open_stream()
            line = response.readline()
            connection.close()
            if line != b"event: failed\n" or time.monotonic() > deadline:
                break
        assert line.startswith(b"id: "), line


def test_only_loopback_names_are_answered_on_loopback(start_service: StartService) -> None:
    service = start_service(inspector_port=0)
    page = Browser(f"http://127.0.0.1:{service.inspector_port}")
    # A page elsewhere that rebinds its name to 127.0.0.1 sends its own name as Host.
    status, body, _ = page.call("/api/namespaces", headers={"Host": "attacker.example:80"})
    assert status == 421 and "loopback" in body["error"]
    assert page.call("/api/namespaces", headers={"Host": "localhost"})[0] == 200


def test_the_pages_load_nothing_from_elsewhere_and_forbid_inline_script(
    start_service: StartService,
) -> None:
    service = start_service(inspector_port=0)
    with urllib.request.urlopen(f"http://127.0.0.1:{service.inspector_port}/") as response:
        policy = response.headers["Content-Security-Policy"]
        page = response.read().decode()
    assert "default-src 'self'" in policy and "script-src 'self'" in policy
    assert "frame-ancestors 'none'" in policy
    for asset in STATIC.iterdir():
        text = asset.read_text()
        # The one URL is SVG's namespace, a name and never fetched.
        urls = set(re.findall(r"https?://[^\s\"'`)]+", text)) - {"http://www.w3.org/2000/svg"}
        assert not urls, (asset.name, urls)
    assert '<script type="module" src="/static/inspector.js">' in page and "<script>" not in page


def test_a_person_signs_in_with_a_key_in_the_browser(
    start_service: StartService, tmp_path: Path
) -> None:
    service, keys, admin = keyed_service(start_service)
    with Client(f"127.0.0.1:{service.port}", api_key=admin) as client:
        client.append("c", "visible", namespace="team-a")
        client.append("c", "hidden", namespace="team-b")
    _, reader = keys.create("reader", Role.READ, ["team-a"])
    with chromium() as driver:
        driver.get(f"http://127.0.0.1:{service.inspector_port}/")
        box = wait(driver, lambda d: d.find_element(By.ID, "key-input"))
        screenshot(driver, "sign-in", tmp_path)
        box.send_keys("cwm_000000000000_" + "0" * 64)
        driver.find_element(By.ID, "sign-in").click()
        error = wait(driver, lambda d: d.find_element(By.ID, "sign-in-error"))
        wait(driver, lambda d: error.is_displayed() and error.text)
        assert "API key" in error.text
        box.clear()
        box.send_keys(reader)
        driver.find_element(By.ID, "sign-in").click()
        # One namespace: straight to its conversations.
        wait(driver, lambda d: d.find_elements(By.CSS_SELECTOR, "#conversations tr.conversation"))
        assert "team-a" in driver.find_element(By.ID, "who").text
        assert driver.find_element(By.TAG_NAME, "h1").text == "Conversations in team-a"
        driver.get(f"http://127.0.0.1:{service.inspector_port}/#/n/team-b/c/c")
        refusal = wait(driver, lambda d: d.find_element(By.ID, "error"))
        assert "team-b" in refusal.text and "hidden" not in driver.page_source


def test_an_unguarded_address_is_refused_before_anything_is_created(tmp_path: Path) -> None:
    settings = ServerSettings(
        port=0, data_dir=tmp_path / "data", inspector_port=0, inspector_host="0.0.0.0"
    )
    with pytest.raises(SettingsError, match="without API keys: it would show every"):
        Service.listen(settings)
    assert not (tmp_path / "data").exists()
    result = serve(
        "--data-dir",
        str(tmp_path / "data"),
        "--port",
        "0",
        "--inspector",
        "0",
        "--inspector-host",
        "0.0.0.0",
        "--require-api-keys",
    )
    assert result.returncode == 2
    assert result.stdout.strip().startswith(
        "error: refusing to serve the inspector on 0.0.0.0:0 without TLS"
    )


def test_off_loopback_it_serves_https_with_the_servers_certificate(
    pki: Pki, tmp_path: Path
) -> None:
    tls = ("--tls-cert", str(pki.server.cert), "--tls-key", str(pki.server.key))
    server = ServerProcess(
        tmp_path / "data",
        "--host",
        "0.0.0.0",
        "--require-api-keys",
        *tls,
        "--embedder",
        "hashing",
        "--inspector",
        "0",
        "--inspector-host",
        "0.0.0.0",
        ready=False,
    )
    try:
        found = wait_for(
            lambda: re.search(r"contextwm inspector at https://0\.0\.0\.0:(\d+)/", server.log())
        )
        port = int(found.group(1))
        context = ssl.create_default_context(cafile=str(pki.ca))
        context.check_hostname = False  # the certificate names localhost, reached by address
        page = Browser(f"https://127.0.0.1:{port}", context)
        deadline = time.monotonic() + START_SECONDS
        while (status := page.call("/api/session"))[0] == 503 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert status[:2] == (200, {"keys_required": True, "signed_in": False, "key": None})
        assert page.call("/api/namespaces")[0] == 401
        with pytest.raises((urllib.error.URLError, ConnectionError)):  # plain HTTP: no answer
            urllib.request.urlopen(f"http://127.0.0.1:{port}/api/session", timeout=30)
    finally:
        assert server.terminate() == 0
    assert "Traceback" not in server.log()


def test_a_port_in_use_is_one_line_and_exit_1(tmp_path: Path) -> None:
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    port = str(taken.getsockname()[1])
    try:
        for flag, what in (
            ("--inspector", "the inspector cannot listen"),
            ("--metrics-port", "metrics cannot listen"),
        ):
            result = serve(
                "--data-dir",
                str(tmp_path / "d"),
                "--port",
                "0",
                "--embedder",
                "hashing",
                flag,
                port,
            )
            assert result.returncode == 1, result.stderr
            last = result.stderr.strip().splitlines()[-1]
            assert (
                last
                == f"contextwm: not starting: {what} on 127.0.0.1:{port}: Address already in use"
            )
            assert "Traceback" not in result.stderr
    finally:
        taken.close()


def serve(*args: str) -> subprocess.CompletedProcess[str]:
    """`contextwm serve` with args, run to its exit."""
    return subprocess.run(
        [sys.executable, "-m", "contextwm", "serve", *args],
        capture_output=True,
        text=True,
        timeout=START_SECONDS,
    )


def wait_for(found: Any, seconds: float = START_SECONDS) -> Any:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = found()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError("not found in time")
