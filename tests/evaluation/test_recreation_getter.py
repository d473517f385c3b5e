"""``gotoRecreationPage_and_get_html_content`` against a real headless Chromium.

The getter connects over CDP to the endpoint in ``services["cdp"]``; here that is a Chromium
this module starts (no desktop). recreation.gov is a loopback HTTPS server with a self-signed
certificate: Chromium resolves ``www.recreation.gov`` and ``recreation.gov`` to it
(``--host-resolver-rules``) and accepts the certificate, so the getter's own code loads
``https://www.recreation.gov/`` and everything after it unchanged. The pages have what the
getter uses: the search box and button, a result whose highlighted name opens the campground
in a new tab, and a campground table whose "Next Available" button moves the dates on.

Expected values come from reading OSWorld's code with chrome/b4f95342's config (``selector``
"class", ``class`` "camp-sortable-column-header", ``order`` "2": the third header's stripped
text, read right after the button is clicked), as desktop-env 1.0.2 reaches it: 2026.04's code
never opens the search result (that step sits after a ``raise``), and by the task file both
references take the getter that does.
"""

from __future__ import annotations

import collections.abc
import contextlib
import http.server
import json
import shutil
import ssl
import subprocess
import threading
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from desktop_helpers import wait_until
from fixture_marks import needs
from http_helpers import loopback_server, port_of
from osworld_data import OSWORLD_TASKS

from osworld_gym.evaluation.getters import GETTERS, EvalContext, getters_for
from osworld_gym.evaluation.getters import html as getters_html
from osworld_gym.evaluation.getters.html import (
    get_gotoRecreationPage_and_get_html_content,
)
from osworld_gym.evaluation.metrics import get_metric
from osworld_gym.task_setup.downloads import AssetCache

pytest.importorskip("playwright.sync_api")
pytestmark = pytest.mark.skipif(
    shutil.which("chromium") is None or shutil.which("openssl") is None,
    reason="needs chromium and openssl",
)

# chrome/b4f95342's expected getter config.
TASK_CONFIG = {
    "type": "gotoRecreationPage_and_get_html_content",
    "selector": "class",
    "class": "camp-sortable-column-header",
    "order": "2",
}
TASK_FILE = OSWORLD_TASKS / "examples/chrome/b4f95342-463e-4179-8c3f-193cd7241fb2.json"
FAILED = "__EVALUATION_FAILED__"
CAMPGROUND = "/camping/campgrounds/233187"

HOME = """<!doctype html><title>Recreation.gov</title>
<input id="hero-search-input" type="text" placeholder="Where to?">
<button class="nav-search-button" type="button">Search</button>
<script>
document.querySelector('.nav-search-button').addEventListener('click', () => {
  const query = document.getElementById('hero-search-input').value;
  location.assign('/search?q=' + encodeURIComponent(query));
});
</script>"""
RESULTS = f"""<!doctype html><title>Search results</title>
<div class="search-result"><a href="{CAMPGROUND}" target="_blank">
<span class="search-result-highlight--success">Diamond</span> Lake Campground</a></div>"""
NO_RESULTS = "<!doctype html><title>Search results</title><p>No results</p>"
# The campground's availability table; the button (``{button}``) moves the dates on.
CAMPGROUND_PAGE = """<!doctype html><title>Diamond Lake Campground</title>
<table><thead><tr>
<th class="camp-sortable-column-header"> Site </th>
<th class="camp-sortable-column-header">Loop</th>
<th class="camp-sortable-column-header" id="day1">
   Sat Jun 1 </th>
<th class="camp-sortable-column-header" id="day2">Sun Jun 2</th>
</tr></thead></table>
{button}
<script>
for (const button of document.querySelectorAll('[data-next]')) {{
  button.addEventListener('click', () => {{
    document.getElementById('day1').textContent = ' Fri Jun 14 ';
    document.getElementById('day2').textContent = 'Sat Jun 15';
  }});
}}
</script>"""
NEXT_BUTTON = '<button class="sarsa-button next-available" data-next>Next Available</button>'


@dataclass
class Site:
    """The fake recreation.gov: which "Next Available" button the campground has, and a log."""

    button: str = NEXT_BUTTON
    requests: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def page(self, path: str) -> str | None:
        parts = urllib.parse.urlsplit(path)
        if parts.path == "/":
            return HOME
        if parts.path == "/search":
            query = urllib.parse.parse_qs(parts.query).get("q", [""])[0]
            return RESULTS if query == "Diamond" else NO_RESULTS
        if parts.path == CAMPGROUND:
            return CAMPGROUND_PAGE.format(button=self.button)
        return None

    def count(self, path: str) -> int:
        with self.lock:
            return self.requests.count(path)


def _handler(site: Site) -> type[http.server.BaseHTTPRequestHandler]:
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - the http.server API
            with site.lock:
                site.requests.append(self.path)
            body = site.page(self.path)
            data = (body or "not found").encode()
            self.send_response(200 if body else 404)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


@contextlib.contextmanager
def _https_server(site: Site, folder: Path) -> collections.abc.Iterator[int]:
    """Serve ``site`` over TLS on 127.0.0.1 (a free port), with a fresh self-signed cert."""
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
         "-nodes", "-days", "2", "-subj", "/CN=www.recreation.gov",
         "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(cert, key)
    with loopback_server(_handler(site), tls) as url:
        yield port_of(url)


@contextlib.contextmanager
def _chromium(folder: Path, resolver_rules: str) -> collections.abc.Iterator[str]:
    """A headless Chromium listening for CDP on a free port; yields its endpoint."""
    profile = folder / "profile"
    process = subprocess.Popen(
        ["chromium", "--headless=new", "--no-sandbox", "--no-first-run",
         "--no-default-browser-check", "--remote-debugging-port=0",
         f"--user-data-dir={profile}", f"--host-resolver-rules={resolver_rules}",
         "--ignore-certificate-errors", "about:blank"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        port_file = profile / "DevToolsActivePort"
        wait_until(port_file.is_file, timeout=60, message="Chromium's DevToolsActivePort")
        port = wait_until(lambda: port_file.read_text().split("\n")[0], message="the port")
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=20)


@pytest.fixture(scope="module")
def site() -> Site:
    return Site()


@pytest.fixture(scope="module")
@needs("apps")
def online(site: Site, tmp_path_factory: pytest.TempPathFactory) -> collections.abc.Iterator[str]:
    """The CDP endpoint of a Chromium that finds recreation.gov on the loopback server."""
    folder = tmp_path_factory.mktemp("recreation")
    with _https_server(site, folder) as port:
        rules = f"MAP www.recreation.gov 127.0.0.1:{port}, MAP recreation.gov 127.0.0.1:{port}"
        with _chromium(folder, rules) as endpoint:
            yield endpoint


@pytest.fixture(scope="module")
@needs("apps")
def offline(tmp_path_factory: pytest.TempPathFactory) -> collections.abc.Iterator[str]:
    """The CDP endpoint of a Chromium for which no host name resolves (the site unreachable)."""
    with _chromium(tmp_path_factory.mktemp("offline"), "MAP * ~NOTFOUND") as endpoint:
        yield endpoint


@pytest.fixture()
def fresh_site(site: Site) -> collections.abc.Iterator[Site]:
    """The module's site with an empty log and the ordinary "Next Available" button."""
    with site.lock:
        site.requests.clear()
    site.button = NEXT_BUTTON
    yield site
    site.button = NEXT_BUTTON


def _ctx(tmp_path: Path, endpoint: str | None) -> EvalContext:
    return EvalContext(
        client=None,  # type: ignore[arg-type]  # the getter never asks the desktop
        task_id="chrome/b4f95342",
        cache=AssetCache(tmp_path / "cache"),
        scratch=tmp_path / "scratch",
        services={"cdp": endpoint} if endpoint else {},
    )


def _failed(value: Any, attempts: int) -> str:
    """The failure marker's message, after checking the marker's shape."""
    assert isinstance(value, dict) and set(value) == {"expected"}, value
    assert set(value["expected"]) == {"error", "error_message"}, value
    assert value["expected"]["error"] == FAILED
    message: str = value["expected"]["error_message"]
    assert message.startswith(f"Failed after {attempts} attempt"), message
    return message


def test_the_task_file_asks_what_these_tests_use() -> None:
    if not TASK_FILE.is_file():
        pytest.skip(f"no {TASK_FILE}")
    evaluator = json.loads(TASK_FILE.read_text())["evaluator"]
    assert evaluator["expected"] == TASK_CONFIG
    assert evaluator["func"] == "check_direct_json_object"


def test_registered_under_osworlds_name_for_both_references() -> None:
    name = "gotoRecreationPage_and_get_html_content"
    assert GETTERS[name] is get_gotoRecreationPage_and_get_html_content
    assert getters_for("osworld-1.0.2")[name] is get_gotoRecreationPage_and_get_html_content


def test_it_reaches_the_campground_and_reads_the_third_header(
    online: str, fresh_site: Site, tmp_path: Path
) -> None:
    value = get_gotoRecreationPage_and_get_html_content(_ctx(tmp_path, online), TASK_CONFIG)
    # The third header (order "2"), stripped, as it reads once "Next Available" was clicked.
    assert value == {"expected": {"camp-sortable-column-header": "Fri Jun 14"}}
    # It searched for "Diamond" (the results page gives the link only for that query).
    assert fresh_site.count("/search?q=Diamond") == 1
    assert fresh_site.count(CAMPGROUND) == 1
    # With the agent's page read the same way (active_tab_html_parse), the task scores 1.
    check = get_metric("check_direct_json_object")
    assert check({"camp-sortable-column-header": "Fri Jun 14"}, value) == 1.0
    assert check({"camp-sortable-column-header": "Sat Jun 1"}, value) == 0.0


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        # No order: the first element of the class.
        ({"selector": "class", "class": "camp-sortable-column-header"}, {
            "camp-sortable-column-header": "Site"}),
        # A negative order counts from the end (Python's indexing, as OSWorld's).
        ({**TASK_CONFIG, "order": "-1"}, {"camp-sortable-column-header": "Sat Jun 15"}),
        # Past the last element, or an order that is not a number: the marker.
        ({**TASK_CONFIG, "order": "4"}, {"camp-sortable-column-header": FAILED}),
        ({**TASK_CONFIG, "order": "third"}, {"camp-sortable-column-header": FAILED}),
        ({**TASK_CONFIG, "class": "no-such-class"}, {"no-such-class": FAILED}),
        # Another selector kind reads nothing; a config without a class fails extraction.
        ({"selector": "xpath", "class": "camp-sortable-column-header"}, {}),
        ({"selector": "class"}, {"extraction_error": FAILED}),
    ],
    ids=["first", "negative", "past-end", "not-a-number", "absent-class", "other-kind",
         "no-class"],
)  # fmt: skip
@pytest.mark.slow
def test_selector_rules(
    online: str, fresh_site: Site, tmp_path: Path, config: dict[str, Any], expected: Any
) -> None:
    value = get_gotoRecreationPage_and_get_html_content(_ctx(tmp_path, online), config)
    assert value == {"expected": expected}


@pytest.mark.parametrize(
    ("button", "header"),
    [
        # A later selector of OSWorld's list: [data-testid*='next'].
        ('<a href="#" data-testid="next-available-link" data-next>Next</a>', "Fri Jun 14"),
        # A hidden first choice gives way to the one that shows.
        ('<button class="next-available" style="display:none" data-next>Next</button>'
         '<span data-testid="next-dates" data-next>Next</span>', "Fri Jun 14"),
        # No button: the page is read as it is.
        ("", "Sat Jun 1"),
    ],
    ids=["testid", "hidden-first", "none"],
)  # fmt: skip
@pytest.mark.slow
def test_next_available_button(
    online: str,
    fresh_site: Site,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    button: str,
    header: str,
) -> None:
    fresh_site.button = button
    monkeypatch.setattr(getters_html, "_NEXT_AVAILABLE_MS", 2_000)  # not OSWorld's 30 s
    value = get_gotoRecreationPage_and_get_html_content(_ctx(tmp_path, online), TASK_CONFIG)
    assert value == {"expected": {"camp-sortable-column-header": header}}


def test_unreachable_site_gives_the_marker_after_three_attempts(
    offline: str, tmp_path: Path
) -> None:
    getter = get_gotoRecreationPage_and_get_html_content
    message = _failed(getter(_ctx(tmp_path, offline), TASK_CONFIG), attempts=3)
    assert "recreation.gov did not load" in message
    assert "https://www.recreation.gov/" in message and "https://recreation.gov/" in message


@pytest.mark.parametrize("endpoint", [None, "http://127.0.0.1:9"], ids=["no-service", "refused"])
@pytest.mark.heavy  # waits out a refused browser connection
def test_unreachable_browser_gives_the_marker_at_once(tmp_path: Path, endpoint: str | None) -> None:
    getter = get_gotoRecreationPage_and_get_html_content
    # No second browser is started (OSWorld would launch one on the desktop).
    message = _failed(getter(_ctx(tmp_path, endpoint), TASK_CONFIG), attempts=1)
    assert "Chrome DevTools" in message
