"""Checks of the built HTML site, shared by the site tests and usable from a shell.

* :func:`check_links`: every ``href``/``src`` that points inside the site resolves to a
  file, and every ``#anchor`` exists in its target page (static HTML, no browser).
* :func:`check_page`: opens one page from a local HTTP server in headless Chromium
  (Playwright's Python package driving Debian's ``chromium``), blocks and records every
  request that leaves 127.0.0.1, and reports console errors, broken local requests,
  unrendered plotly figures, unrendered or raw maths, static explorers that do not
  respond to a click, and serious/critical axe-core violations. Pages with a problem are
  screenshotted into ``tests/artifacts/``.

axe-core is the ``axe.min.js`` shipped inside the PyPI package ``axe-playwright-python``
(pinned in requirements.txt; only its JavaScript file is used): no npm, no CDN.

From a shell (prints every problem of every page)::

    cd tests && PYTHONPATH=.. ../.venv/bin/python -m support.site [--site ../_build/html] [book/01_why_order_matters.html ...]

(the tests folder and the repository root on the import path, as pytest sets them up).

The site folder defaults to ``_build/html``; set ``POSENC_SITE`` to check another build,
e.g. a partial one made with ``make pages``.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urljoin, urlsplit

from tools.browser import (  # noqa: F401 - re-exported for the tests, which use them with the checks below
    ROOT,
    SITE_ENV,
    launch_browser,
    missing_chromium,
    new_context,
    serve,
    site_dir,
    site_is_partial,
)
from tools.toc import toc_pages  # noqa: F401 - re-exported for the tests

ARTIFACTS = ROOT / "tests" / "artifacts"
#: The PyPI package (pinned in requirements.txt) whose wheel ships axe-core's ``axe.min.js``.
AXE_PACKAGE = "axe_playwright_python"
AXE_FILE = "axe.min.js"
#: axe-core impacts that fail the gate.
BLOCKING_IMPACTS = ("serious", "critical")
#: Text that only appears when maths was left for MathJax and MathJax did not process it.
RAW_MATH = re.compile(r"\$\$|\\\(|\\\)|\\\[|\\\]|\\begin\{")
RENDER_TIMEOUT_MS = 15_000
EXPLORER_TIMEOUT_MS = 4_000


# -- where things are ------------------------------------------------------------------
def axe_js_path() -> Path | None:
    """``axe.min.js`` inside the installed ``axe-playwright-python`` package (found without
    importing it), or None if the package is not installed."""
    spec = importlib.util.find_spec(AXE_PACKAGE)
    for folder in (spec.submodule_search_locations or []) if spec else []:
        path = Path(folder) / AXE_FILE
        if path.is_file():
            return path
    return None


def axe_version(source: str) -> str | None:
    """The axe-core version from the licence banner of ``axe.min.js`` (``/*! axe v4.12.1``)."""
    match = re.match(r"/\*!\s*axe v(\d+\.\d+\.\d+)", source)
    return match.group(1) if match else None


def axe_source() -> str:
    """The text of ``axe.min.js``; raises FileNotFoundError saying how to install it."""
    path = axe_js_path()
    if path is None:
        raise FileNotFoundError(
            f"axe-core not found: the Python package `{AXE_PACKAGE.replace('_', '-')}` (pinned in "
            "requirements.txt) is not installed or lacks axe.min.js; run `make setup`"
        )
    return path.read_text(encoding="utf-8")


def missing_python_tools() -> str | None:
    """Why the pinned Python side of the browser checks (playwright, axe-core) is not usable
    (a message for ``pytest.fail``), or None."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the Python package `playwright` (pinned in requirements.txt) is not installed: run `make setup`"
    if axe_js_path() is None:
        return (f"axe-core not found: the Python package `{AXE_PACKAGE.replace('_', '-')}` (pinned in "
                "requirements.txt) is not installed or lacks axe.min.js: run `make setup`")
    return None


def missing_site(root: Path | None = None) -> str | None:
    """Why there is no built site at ``root`` (default :func:`site_dir`), or None."""
    root = root or site_dir()
    if not (root / "index.html").is_file() or not (root / "search.html").is_file():
        return (f"no built site at {root}: run `make book` first (`make test` does), "
                f"or set {SITE_ENV} to a site built with `make pages`")
    return None


def require_site() -> Path:
    """The built site folder, for a test; fails the test (never skips it) when there is none."""
    import pytest

    reason = missing_site()
    if reason:
        pytest.fail(reason, pytrace=False)
    return site_dir()


def require_page(page: str) -> Path:
    """The file of a site-relative ``page``, for a test. A page missing from a partial build
    (``POSENC_SITE``) skips the test; missing from the full build, it fails it."""
    import pytest

    path = require_site() / page
    if not path.is_file():
        if site_is_partial():
            pytest.skip(f"{page} is not part of the partial build at {site_dir()}")
        pytest.fail(f"{page} is listed in _toc.yml but was not built into {site_dir()}", pytrace=False)
    return path


def artifact_name(page: str) -> str:
    """``book/01_x.html`` -> ``book--01_x`` (a flat file name for screenshots)."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "--", page.removesuffix(".html"))


# -- internal links --------------------------------------------------------------------
_LINK_ATTRIBUTES = {
    "a": ("href",), "link": ("href",), "area": ("href",), "script": ("src",), "img": ("src",),
    "iframe": ("src",), "source": ("src",), "video": ("src", "poster"), "audio": ("src",),
    "embed": ("src",), "object": ("data",), "form": ("action",),
}


class _PageParser(HTMLParser):
    """Collects ids/names (anchor targets) and the URLs a page points to."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.anchors: set[str] = set()
        self.links: list[tuple[str, str]] = []  # (description, url)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {name: value for name, value in attrs if value is not None}
        if "id" in values:
            self.anchors.add(values["id"])
        if tag == "a" and "name" in values:
            self.anchors.add(values["name"])
        for attribute in _LINK_ATTRIBUTES.get(tag, ()):
            if attribute in values:
                self.links.append((f"<{tag} {attribute}>", values[attribute]))
        if tag == "meta" and values.get("http-equiv", "").lower() == "refresh":
            match = re.search(r"url\s*=\s*(\S+)", values.get("content", ""), flags=re.IGNORECASE)
            if match:
                self.links.append(("<meta refresh>", match.group(1).strip("'\"")))


@functools.lru_cache(maxsize=256)
def _parse(path: Path) -> _PageParser:
    parser = _PageParser()
    parser.feed(path.read_text(encoding="utf-8", errors="replace"))
    parser.close()
    return parser


def _is_external(url: str) -> bool:
    parts = urlsplit(url)
    return bool(parts.scheme or parts.netloc)  # http:, https:, mailto:, data:, javascript:, //host


def check_links(root: Path, page: str) -> list[str]:
    """Broken internal links of one page: missing files and missing ``#anchors``.

    Args:
        root: the site folder.
        page: site-relative path of the page, e.g. ``book/01_why_order_matters.html``.
    """
    source = root / page
    if not source.is_file():
        return [f"{page}: page not found in {root}"]
    problems = []
    for where, url in _parse(source).links:
        url = url.strip()
        if not url or _is_external(url):
            continue
        parts = urlsplit(url)
        target = source if not parts.path else (source.parent / unquote(parts.path)).resolve()
        if target.is_dir():
            target = target / "index.html"
        try:
            target.relative_to(root)
        except ValueError:
            problems.append(f"{where} {url!r}: points outside the site")
            continue
        if not target.is_file():
            problems.append(f"{where} {url!r}: {target.relative_to(root)} does not exist")
            continue
        fragment = unquote(parts.fragment)
        if fragment and target.suffix == ".html" and fragment not in _parse(target).anchors:
            problems.append(f"{where} {url!r}: no id {fragment!r} in {target.relative_to(root)}")
    return problems


# -- one page in the browser -----------------------------------------------------------
@dataclass
class PageReport:
    """Everything the browser saw on one page. :meth:`problems` says what is wrong."""

    page: str
    url: str
    seconds: float = 0.0
    load_error: str | None = None
    console_errors: list[str] = field(default_factory=list)
    external_requests: list[str] = field(default_factory=list)
    failed_requests: list[str] = field(default_factory=list)
    figures: list[dict[str, Any]] = field(default_factory=list)
    math: dict[str, Any] = field(default_factory=dict)
    explorers: list[dict[str, Any]] = field(default_factory=list)
    axe_ran: bool = False
    axe_violations: list[dict[str, Any]] = field(default_factory=list)
    #: Requests axe-core itself made while it ran (XHRs of its stylesheet preload) that failed.
    #: They are the checker's traffic, not the page's, so they fail no check. (axe-core 4.12.1
    #: resolves a stylesheet's ``@import`` against the page's URL instead of the stylesheet's.)
    axe_requests: list[str] = field(default_factory=list)
    screenshots: list[str] = field(default_factory=list)

    def problems(self) -> dict[str, list[str]]:
        """Problems by check (only non-empty checks appear)."""
        found: dict[str, list[str]] = {
            "load": [self.load_error] if self.load_error else [],
            "console": list(self.console_errors),
            "network": [f"request to a non-local address (blocked): {url}" for url in self.external_requests],
            "local requests": list(self.failed_requests),
            "figures": [
                f"plotly figure #{fig['id']} not rendered ({fig['why']})" for fig in self.figures if not fig["ok"]
            ],
            "math": (
                [f"maths not typeset by MathJax: {text!r}" for text in self.math.get("unrendered", [])]
                + [f"raw TeX left in the text: {text!r}" for text in self.math.get("raw", [])]
                + [f"MathJax error: {text!r}" for text in self.math.get("errors", [])]
            ),
            "explorers": [
                f"explorer #{ex['id']} did not respond to a click on {ex['control']}: {ex['why']}"
                for ex in self.explorers if not ex["ok"]
            ],
            "axe": [
                f"axe {v['impact']} {v['id']} ({v['help']}) on {v['count']} element(s), e.g. {v['nodes'][:3]}"
                for v in self.axe_violations if v["impact"] in BLOCKING_IMPACTS
            ],
        }
        return {check: items for check, items in found.items() if items}


_WAIT_FOR_RENDER = """async (timeoutMs) => {
  const started = performance.now();
  const mj = window.MathJax;
  if (mj && mj.startup && mj.startup.promise) {
    try { await mj.startup.promise; } catch (e) { /* reported through the maths check */ }
  }
  const ready = () => Array.from(document.querySelectorAll('.plotly-graph-div')).every(
    (gd) => gd.classList.contains('js-plotly-plot') && gd.querySelector('svg.main-svg'));
  while (!ready() && performance.now() - started < timeoutMs) {
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}"""

_FIGURES = """() => Array.from(document.querySelectorAll('.plotly-graph-div')).map((gd) => {
  const traces = Array.isArray(gd.data) ? gd.data.length : 0;
  const svg = gd.querySelector('svg.main-svg') !== null;
  const plotted = gd.classList.contains('js-plotly-plot');
  const why = !plotted ? 'Plotly never drew it' : traces === 0 ? 'no traces' : !svg ? 'no SVG' : '';
  return {id: gd.id, traces: traces, ok: why === '', why: why};
})"""

_MATH = """(pattern) => {
  const raw = new RegExp(pattern);
  const math = Array.from(document.querySelectorAll('.math'));
  const unrendered = math.filter((el) => !el.querySelector('mjx-container'))
    .map((el) => el.textContent.trim().slice(0, 80));
  const errors = Array.from(document.querySelectorAll('mjx-merror'))
    .map((el) => (el.getAttribute('data-mjx-error') || el.textContent).slice(0, 120));
  const skip = 'script, style, pre, code, textarea, noscript, svg, mjx-container, .highlight';
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT, {
    acceptNode: (node) => (node.parentElement && !node.parentElement.closest(skip)
      ? NodeFilter.FILTER_ACCEPT : NodeFilter.FILTER_REJECT),
  });
  const left = [];
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const match = raw.exec(node.textContent);
    if (match) {
      const start = Math.max(0, match.index - 30);
      left.push(node.textContent.slice(start, match.index + 40).replace(/\\s+/g, ' ').trim());
    }
  }
  return {elements: math.length, typeset: document.querySelectorAll('mjx-container').length,
          unrendered: unrendered, errors: errors, raw: left.slice(0, 20)};
}"""

# What a reader sees of a figure: its traces and its layout minus the controls' own state.
_FIGURE_STATE = """(id) => {
  const gd = document.getElementById(id);
  const container = gd && gd.closest('.posenc-explorer');
  if (!gd || !gd.layout) { return null; }
  const layout = Object.assign({}, gd.layout);
  // The controls' own state and the size (responsive resizes) are not what a frame changes.
  ['sliders', 'updatemenus', 'width', 'height', 'autosize'].forEach((key) => { delete layout[key]; });
  // Plain JSON copies, compared in Python (key order does not matter there).
  const dump = (value) => { try { return JSON.parse(JSON.stringify(value)); } catch (e) { return String(e); } };
  const sliders = (gd.layout.sliders || []).map((s) => ({active: s.active || 0, steps: (s.steps || []).length}));
  const menus = (gd.layout.updatemenus || []).map((m) => ({
    active: m.active || 0, buttons: (m.buttons || []).length, type: m.type || 'dropdown'}));
  return {frame: container ? container.getAttribute('data-frame') : null,
          wired: container ? container.getAttribute('data-wired') : null,
          data: dump(gd.data), layout: dump(layout), sliders: sliders, menus: menus};
}"""

_AXE = """async () => {
  const result = await axe.run(document, {resultTypes: ['violations']});
  return result.violations.map((v) => ({
    id: v.id, impact: v.impact, help: v.help, count: v.nodes.length,
    nodes: v.nodes.slice(0, 5).map((n) => n.target.join(' ')),
  }));
}"""

# Open collapsed ancestors (dropdown solutions, <details>) so a control can be clicked.
_REVEAL = """(id) => {
  let revealed = false;
  for (let node = document.getElementById(id); node; node = node.parentElement) {
    if (node.tagName === 'DETAILS' && !node.open) { node.open = true; revealed = true; }
    if (node.classList && node.classList.contains('toggle-hidden')) {
      const button = node.querySelector(':scope > .toggle-button, :scope > .admonition-title, :scope > button');
      if (button) { button.click(); } else { node.classList.remove('toggle-hidden'); }
      revealed = true;
    }
  }
  if (revealed) { window.dispatchEvent(new Event('resize')); }  // let plotly size the figure
  return revealed;
}"""


def _is_local(url: str, base: str) -> bool:
    parts = urlsplit(url)
    if parts.scheme in ("data", "blob", "about", "javascript"):
        return True
    return f"{parts.scheme}://{parts.netloc}/" == base


def _explorer_ids(page: Any) -> list[str]:
    return page.eval_on_selector_all(
        "div.posenc-explorer",
        "(nodes) => nodes.map((n) => { const gd = n.querySelector('.plotly-graph-div'); return gd ? gd.id : ''; })",
    )


def _neighbour(active: int, count: int) -> int:
    """The step next to the active one (the next, or the previous at the end)."""
    if count < 2:
        raise ValueError("it offers a single value")
    return active + 1 if active + 1 < count else active - 1


def _click_control(page: Any, figure_id: str, state: dict[str, Any]) -> str:
    """Click the value next to the active one on the figure's first control: a slider
    step, a button of a button row, or an entry of a dropdown menu. Returns what was
    clicked; raises ValueError if nothing could be clicked."""
    root = page.locator(f"#{figure_id}")
    if state["sliders"]:
        slider = state["sliders"][0]
        target = _neighbour(slider["active"], slider["steps"])
        group = root.locator("g.slider-group").first
        ticks = group.locator("rect.slider-tick-rect")
        if ticks.count() != slider["steps"]:
            raise ValueError(f"expected {slider['steps']} ticks on its slider, found {ticks.count()}")
        tick = ticks.nth(target)
        tick.scroll_into_view_if_needed()
        tick_box = tick.bounding_box()
        rail_box = group.locator("rect.slider-rail-touch-rect").bounding_box()
        if not tick_box or not rail_box:
            raise ValueError("its slider is not visible")
        # A press on the rail moves the grip to the nearest step, as a reader's click does.
        page.mouse.click(tick_box["x"] + tick_box["width"] / 2, rail_box["y"] + rail_box["height"] / 2)
        return f"slider step {target + 1} of {slider['steps']}"
    if state["menus"]:
        menu = state["menus"][0]
        target = _neighbour(menu["active"], menu["buttons"])
        header = root.locator("g.updatemenu-header-group").nth(0)
        if header.count() == 0:
            raise ValueError("its menu was not drawn")
        if menu["type"] == "dropdown":
            header.locator("g.updatemenu-header").click()
            entries = root.locator("g.updatemenu-dropdown-button-group g.updatemenu-dropdown-button")
            entries.first.wait_for(timeout=EXPLORER_TIMEOUT_MS)
        else:
            entries = header.locator("g.updatemenu-button")
        if entries.count() != menu["buttons"]:
            raise ValueError(f"expected {menu['buttons']} entries in its {menu['type']} menu, found {entries.count()}")
        entries.nth(target).click()
        return f"{menu['type']} entry {target + 1} of {menu['buttons']}"
    raise ValueError("it has no slider and no menu")


def _exercise_explorer(page: Any, figure_id: str) -> dict[str, Any]:
    """One scripted interaction with a static explorer; did the figure change?"""
    result: dict[str, Any] = {"id": figure_id, "control": "its first control", "ok": False, "why": ""}
    if not figure_id:
        result["why"] = "no plotly figure inside the explorer"
        return result
    if page.evaluate(_REVEAL, figure_id):
        page.wait_for_timeout(300)
    before = page.evaluate(_FIGURE_STATE, figure_id)
    if before is None:
        result["why"] = "the figure was never drawn"
        return result
    try:
        result["control"] = _click_control(page, figure_id, before)
    except Exception as error:  # noqa: BLE001 - any failure to click is the finding
        result["why"] = f"could not click it: {str(error).splitlines()[0]}"
        return result
    deadline = time.monotonic() + EXPLORER_TIMEOUT_MS / 1000
    after = before
    while time.monotonic() < deadline:
        page.wait_for_timeout(50)
        after = page.evaluate(_FIGURE_STATE, figure_id)
        if after and after["frame"] != before["frame"] and (after["data"], after["layout"]) != (
            before["data"], before["layout"]
        ):
            break
    if not after:
        result["why"] = "the figure disappeared"
    elif after["wired"] != "1":
        result["why"] = "posenc-explorer.js never wired it (data-wired missing)"
    elif after["frame"] == before["frame"]:
        result["why"] = f"data-frame stayed {before['frame']!r}"
    elif (after["data"], after["layout"]) == (before["data"], before["layout"]):
        result["why"] = f"data-frame changed to {after['frame']!r} but the traces and layout did not"
    else:
        result["ok"] = True
        result["why"] = f"frame {before['frame']} -> {after['frame']}" + (
            "" if after["data"] != before["data"] else " (layout only)"
        )
    return result


def _redirect_target(url: str) -> str | None:
    """Where a ``<meta http-equiv="refresh">`` stub page (the site's index.html) sends the reader."""
    from urllib.request import urlopen

    with urlopen(url, timeout=10) as response:  # the local server: nothing leaves the machine
        if "html" not in response.headers.get("content-type", ""):
            return None
        parser = _PageParser()
        parser.feed(response.read().decode("utf-8", errors="replace"))
    targets = [link for where, link in parser.links if where == "<meta refresh>"]
    return urljoin(url, targets[0]) if targets else None


def check_page(
    context: Any,
    base_url: str,
    page_path: str,
    *,
    axe_source: str | None,
    artifacts: Path | None = ARTIFACTS,
) -> PageReport:
    """Open ``page_path`` (site-relative) in a new tab of ``context`` and check it.

    Args:
        context: a Playwright ``BrowserContext`` (see :func:`new_context`).
        base_url: the server's base URL from :func:`serve`; every other address is blocked.
        axe_source: the text of ``axe.min.js``, or None to skip the accessibility check.
        artifacts: folder for screenshots of failing pages (None: no screenshots).
    """
    from playwright.sync_api import Error as PlaywrightError

    url = urljoin(base_url, page_path)
    report = PageReport(page=page_path, url=url)
    started = time.perf_counter()
    external: dict[str, None] = {}  # an ordered set
    traffic = {"in_flight": 0, "last": time.monotonic()}
    axe_running = [False]
    axe_failed_urls: set[str] = set()
    console: list[tuple[str, str, bool]] = []  # (message, url it names, logged while axe ran)

    def by_axe(request: Any) -> bool:
        """A request axe-core's own script made (an XHR/fetch while axe.run was running)."""
        return axe_running[0] and request.resource_type in ("xhr", "fetch")

    def route(route: Any) -> None:
        if _is_local(route.request.url, base_url):
            route.continue_()
        else:
            external.setdefault(route.request.url)
            route.abort("blockedbyclient")

    def on_request(request: Any) -> None:
        traffic["in_flight"] += 1
        traffic["last"] = time.monotonic()
        if not _is_local(request.url, base_url):
            external.setdefault(request.url)

    def on_done(request: Any, failed: bool) -> None:
        traffic["in_flight"] -= 1
        traffic["last"] = time.monotonic()
        if failed and _is_local(request.url, base_url):
            problem = f"request failed ({request.failure}) for {request.url}"
            if by_axe(request):
                axe_failed_urls.add(request.url)
                report.axe_requests.append(problem)
            else:
                report.failed_requests.append(problem)

    def on_console(message: Any) -> None:
        if message.type == "error":
            where = message.location or {}
            origin = f" ({where.get('url', '')}:{where.get('lineNumber', '')})" if where.get("url") else ""
            console.append((f"console error: {message.text}{origin}", where.get("url", ""), axe_running[0]))

    def on_response(response: Any) -> None:
        if _is_local(response.url, base_url) and response.status >= 400:
            problem = f"HTTP {response.status} for {response.url}"
            if by_axe(response.request):
                axe_failed_urls.add(response.url)
                report.axe_requests.append(problem)
            else:
                report.failed_requests.append(problem)

    page = context.new_page()
    page.route("**/*", route)
    page.on("console", on_console)
    page.on("pageerror", lambda error: report.console_errors.append(f"uncaught exception: {error}"))
    page.on("request", on_request)
    page.on("requestfinished", lambda request: on_done(request, False))
    page.on("requestfailed", lambda request: on_done(request, True))
    page.on("websocket", lambda socket: external.setdefault(socket.url))
    page.on("response", on_response)
    try:
        target = _redirect_target(url)
        page.goto(url, wait_until="load")
        if target is not None:  # a redirect stub: check the page it leads to
            page.wait_for_url(target, wait_until="load")
            report.url = target
        page.evaluate(_WAIT_FOR_RENDER, RENDER_TIMEOUT_MS)
        # Late requests (fonts asked for by MathJax or CSS) must be seen too: wait for quiet.
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and (traffic["in_flight"] > 0 or time.monotonic() - traffic["last"] < 0.3):
            page.wait_for_timeout(50)
        report.figures = page.evaluate(_FIGURES)
        report.math = page.evaluate(_MATH, RAW_MATH.pattern)
        if axe_source is not None:
            page.add_script_tag(content=axe_source)
            axe_running[0] = True
            try:
                report.axe_violations = page.evaluate(_AXE)
            finally:
                axe_running[0] = False
            report.axe_ran = True
        for figure_id in _explorer_ids(page):
            report.explorers.append(_exercise_explorer(page, figure_id))
    except PlaywrightError as error:
        report.load_error = f"{type(error).__name__}: {str(error).splitlines()[0]}"
    report.external_requests = list(external)
    # The browser's own "Failed to load resource" line for a request of axe's is axe's too.
    report.console_errors = [
        text for text, where, during_axe in console
        if not (during_axe and where in axe_failed_urls and "Failed to load resource" in text)
    ] + report.console_errors
    report.seconds = time.perf_counter() - started
    if artifacts is not None:
        _save_screenshots(page, report, artifacts)
    page.close()
    return report


def _save_screenshots(page: Any, report: PageReport, artifacts: Path) -> None:
    """Screenshot a failing page (and each failing explorer); drop stale shots of a passing one."""
    name = artifact_name(report.page)
    stale = list(artifacts.glob(f"{name}.png")) + list(artifacts.glob(f"{name}--explorer-*.png"))
    for old in stale:
        old.unlink()
    if not report.problems():
        return
    artifacts.mkdir(parents=True, exist_ok=True)
    try:
        shot = artifacts / f"{name}.png"
        page.screenshot(path=str(shot), full_page=True)
        report.screenshots.append(str(shot))
        for explorer in report.explorers:
            if not explorer["ok"] and explorer["id"]:
                shot = artifacts / f"{name}--explorer-{explorer['id']}.png"
                page.locator(f"#{explorer['id']}").screenshot(path=str(shot))
                report.screenshots.append(str(shot))
    except Exception as error:  # noqa: BLE001 - a failed screenshot must not hide the findings
        report.screenshots.append(f"(screenshot failed: {error})")


def describe(report: PageReport) -> str:
    """Human-readable findings of one page, for assertion messages."""
    lines = [f"{report.page}: {sum(map(len, report.problems().values()))} problem(s)"]
    for check, items in report.problems().items():
        lines += [f"  [{check}] {item}" for item in items]
    lines += [f"  screenshot: {shot}" for shot in report.screenshots]
    lines += [f"  (not counted: axe-core's own request, {request})" for request in report.axe_requests]
    return "\n".join(lines)


class SiteChecker:
    """A browser and a server for one site; checks each page once and remembers the report."""

    def __init__(self, browser: Any, base_url: str, *, axe_source: str | None, artifacts: Path | None = ARTIFACTS):
        self.browser = browser
        self.context = new_context(browser)
        self.base_url = base_url
        self.axe_source = axe_source
        self.artifacts = artifacts
        self.reports: dict[str, PageReport] = {}

    def report(self, page: str) -> PageReport:
        if page not in self.reports:
            self.reports[page] = check_page(
                self.context, self.base_url, page, axe_source=self.axe_source, artifacts=self.artifacts
            )
        return self.reports[page]


@contextmanager
def site_checker(root: Path, *, axe: bool = True, artifacts: Path | None = ARTIFACTS) -> Iterator[SiteChecker]:
    """Server + browser for ``root``; yields a :class:`SiteChecker`."""
    source = axe_source() if axe else None
    with serve(root) as base_url, launch_browser() as browser:
        yield SiteChecker(browser, base_url, axe_source=source, artifacts=artifacts)


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--site", type=Path, default=None, help=f"site folder (default ${SITE_ENV} or _build/html)")
    parser.add_argument("--json", action="store_true", help="print the full reports as JSON")
    parser.add_argument("pages", nargs="*", help="site-relative pages (default: every page of the toc)")
    args = parser.parse_args(argv)
    root = (args.site or site_dir()).resolve()
    pages = args.pages or toc_pages()
    failures = 0
    with site_checker(root) as checker:
        for page in pages:
            links = check_links(root, page)
            report = checker.report(page)
            failures += bool(report.problems() or links)
            if args.json:
                print(json.dumps(asdict(report), indent=1))
            print(describe(report) + f"  ({report.seconds:.1f} s)")
            for problem in links:
                print(f"  [links] {problem}")
    print(f"{len(pages)} page(s), {failures} with problems")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
