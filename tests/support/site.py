"""Checks of the built HTML site, shared by the site tests and usable from a shell.

* :func:`check_links`: every ``href``/``src`` that points inside the site resolves to a
  file, and every ``#anchor`` exists in its target page (static HTML, no browser).
* :func:`check_page`: opens one page from a local HTTP server in headless Chromium
  (Playwright's Python package driving Debian's ``chromium``) as one :class:`Viewport` sees
  it (a 1280 px desktop in light mode, a 390 px touch phone in dark mode), blocks and
  records every request that leaves 127.0.0.1, and reports console errors, broken local
  requests, unrendered plotly figures, unrendered or raw maths, explorer controls that do
  not respond to a click (a tap on the phone) or lie outside the window, figures or
  controls wider than the text column (and text a figure cuts off), text in output panels
  and captions below a 4.5:1 contrast, figures that a drag zooms on a touch screen, and
  serious/critical axe-core violations. Pages with a problem are screenshotted into
  ``tests/artifacts/``.

axe-core is the ``axe.min.js`` shipped inside the PyPI package ``axe-playwright-python``
(pinned in requirements.txt; only its JavaScript file is used): no npm, no CDN.

From a shell (prints every problem of every page, in every viewport)::

    cd tests && PYTHONPATH=.. ../.venv/bin/python -m support.site [--site ../_build/html] [--viewport phone-dark] [book/01_why_order_matters.html ...]

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
#: WCAG 2 AA contrast for normal text, asked of every text in output panels and captions.
MIN_CONTRAST = 4.5
#: Text the contrast check reads: every output panel of a notebook cell, and every caption.
CONTRAST_SELECTOR = ".cell_output, figcaption, caption, .posenc-explorer-caption"
#: Pixels by which a box may pass its column's edge (sub-pixel layout, borders) before it counts.
OVERFLOW_TOLERANCE_PX = 2


@dataclass(frozen=True)
class Viewport:
    """How the checks look at a page: the window and the reader's device and theme.

    Attributes:
        name: short name, used in test ids and screenshot names.
        width, height: the window in CSS pixels.
        touch: a phone: touch events (``has_touch``, ``is_mobile``); controls are tapped, not
            clicked, and a drag on a figure must scroll the page.
        dark: the system's dark mode (``color_scheme="dark"``) and the theme's own dark
            setting (localStorage, as the theme button leaves it).
        axe: run axe-core (the slowest check).
        axe_rules: only these axe-core rules (None: all of them).
        axe_skip: axe-core rules left out (their ground covered by a check of our own).
        contrast: the boxes whose text the contrast check reads.
    """

    name: str
    width: int
    height: int
    touch: bool = False
    dark: bool = False
    axe: bool = True
    axe_rules: tuple[str, ...] | None = None
    axe_skip: tuple[str, ...] = ()
    contrast: str = CONTRAST_SELECTOR

    def context_options(self) -> dict[str, Any]:
        """Keyword arguments of Playwright's ``Browser.new_context`` besides the viewport."""
        options: dict[str, Any] = {"color_scheme": "dark" if self.dark else "light"}
        if self.touch:
            options.update(has_touch=True, is_mobile=True)
        return options


#: The axe-core rules whose verdict can change with the window, the device or the theme, less
#: colour contrast, which takes most of axe's time (6 of 8 s on chapter 10): our own contrast
#: check reads every text of the page instead (``PAGE_TEXT``), here and on the desktop. Every
#: other rule gave its verdict on the same HTML in the desktop run.
PHONE_AXE_RULES = ("target-size", "scrollable-region-focusable", "meta-viewport", "meta-viewport-large")
#: Everything a reader can see of a page: header, article, footer (the sidebars are drawers on a phone).
PAGE_TEXT = f".bd-header, .bd-main, {CONTRAST_SELECTOR}"

#: axe-core's colour contrast takes most of its time (6 of 8 s on chapter 10); our own contrast
#: check reads every text a reader sees (``PAGE_TEXT``) in a second or less, in both viewports.
DESKTOP = Viewport("desktop", 1280, 900, axe_skip=("color-contrast",), contrast=PAGE_TEXT)
PHONE_DARK = Viewport("phone-dark", 390, 844, touch=True, dark=True, axe_rules=PHONE_AXE_RULES, contrast=PAGE_TEXT)
#: Every page is loaded once in each.
VIEWPORTS = (DESKTOP, PHONE_DARK)
#: Sets the theme's own dark setting before any script of the page runs.
_DARK_THEME = "try { localStorage.setItem('mode', 'dark'); localStorage.setItem('theme', 'dark'); } catch (e) {}"


def viewport_context(browser: Any, viewport: Viewport) -> Any:
    """A browser context that shows pages as ``viewport`` does (see :func:`new_context`)."""
    context = new_context(browser, (viewport.width, viewport.height), **viewport.context_options())
    if viewport.dark:
        context.add_init_script(_DARK_THEME)
    return context


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
    viewport: str = DESKTOP.name
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
    #: The theme the page showed (``data-theme`` of ``<html>``), and the one it should have.
    theme: str | None = None
    expected_theme: str | None = None
    overflow: list[str] = field(default_factory=list)
    #: {"checked": number of texts, "failing": [{text, ratio, fg, bg, tag}], "lowest": [...]}
    contrast: dict[str, Any] = field(default_factory=dict)
    touch: list[str] = field(default_factory=list)
    #: First contentful paint and when plotly.js was asked for (ms after navigation), see ``_PAINT``.
    paint: dict[str, Any] = field(default_factory=dict)
    screenshots: list[str] = field(default_factory=list)
    #: Seconds spent in each phase of the check (load, axe, explorers, ...).
    phases: dict[str, float] = field(default_factory=dict)

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
                f"explorer #{ex['id']}: {ex['control']} did not respond to a {ex.get('action', 'click')}: {ex['why']}"
                for ex in self.explorers if not ex["ok"]
            ],
            "overflow": list(self.overflow),
            "contrast": [
                f"contrast {item['ratio']}:1 (< {MIN_CONTRAST}) for {item['text']!r} in <{item['tag']}>: "
                f"{item['fg']} on {item['bg']}"
                for item in self.contrast.get("failing", [])
            ],
            "touch": list(self.touch),
            "paint": _paint_problems(self.paint) if self.paint else [],
            "theme": (
                [f"the page shows the {self.theme!r} theme, not {self.expected_theme!r}"]
                if self.expected_theme and self.theme != self.expected_theme else []
            ),
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

_AXE = """async ([rules, skip]) => {
  const options = {resultTypes: ['violations']};
  if (rules) { options.runOnly = {type: 'rule', values: rules}; }
  if (skip.length) { options.rules = Object.fromEntries(skip.map((rule) => [rule, {enabled: false}])); }
  const result = await axe.run(document, options);
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


# Open every collapsed block (hidden solutions, <details>), so the contrast check reads all text.
_REVEAL_ALL = """() => {
  let revealed = 0;
  document.querySelectorAll('details:not([open])').forEach((node) => { node.open = true; revealed += 1; });
  document.querySelectorAll('.toggle-hidden').forEach((node) => {
    const button = node.querySelector(':scope > .toggle-button, :scope > .admonition-title, :scope > button');
    if (button) { button.click(); } else { node.classList.remove('toggle-hidden'); }
    revealed += 1;
  });
  if (revealed) { window.dispatchEvent(new Event('resize')); }
  return revealed;
}"""

# Finish every running CSS animation and transition (e.g. the toggle's 0.3 s fade-in of an
# opened block): the checks read the colours and boxes a reader sees once the page is still,
# not a frame of a fade that a busy page may still be showing after the wait.
_SETTLE = """() => {
  for (const animation of document.getAnimations()) {
    try { animation.finish(); } catch (error) { /* an endless animation cannot finish */ }
  }
}"""

# Boxes wider than the text column, boxes that scroll sideways, and text a figure cuts off.
_OVERFLOW = """(tolerance) => {
  const problems = [];
  const root = document.documentElement;
  if (root.scrollWidth > root.clientWidth + tolerance) {
    problems.push(`the page scrolls sideways: ${root.scrollWidth} px of content in a ${root.clientWidth} px window`);
  }
  const shown = (el) => el.getClientRects().length > 0 && el.checkVisibility({checkVisibilityCSS: true});
  const name = (el) => el.id ? `#${el.id}` : `<${el.tagName.toLowerCase()}${el.className && typeof el.className === 'string'
    ? ' class="' + el.className.split(' ')[0] + '"' : ''}>${(el.textContent || '').trim().slice(0, 30)}`;
  const columnOf = (el) => (el.closest('.bd-article, article, main') || document.body).getBoundingClientRect();
  const boxes = 'figure.posenc-figure, div.posenc-explorer, .posenc-control, .posenc-control button, '
    + '.posenc-control input, .posenc-control select, .js-plotly-plot, .js-plotly-plot svg.main-svg';
  for (const el of document.querySelectorAll(boxes)) {
    if (!shown(el)) { continue; }
    const box = el.getBoundingClientRect(), column = columnOf(el);
    if (box.left < column.left - tolerance || box.right > column.right + tolerance) {
      problems.push(`${name(el)} reaches past the text column: ${Math.round(box.left)}-${Math.round(box.right)} px `
        + `in a column at ${Math.round(column.left)}-${Math.round(column.right)} px`);
    }
  }
  for (const el of document.querySelectorAll('figure.posenc-figure, .posenc-controls')) {
    if (shown(el) && el.scrollWidth > el.clientWidth + tolerance) {
      problems.push(`${name(el)} is wider than its box and scrolls sideways (${el.scrollWidth} px in ${el.clientWidth} px)`);
    }
  }
  for (const gd of document.querySelectorAll('.js-plotly-plot')) {
    if (!shown(gd)) { continue; }
    const box = gd.getBoundingClientRect();
    for (const text of gd.querySelectorAll('svg.main-svg text')) {
      if (text.closest('.hoverlayer, .modebar')) { continue; }
      const r = text.getBoundingClientRect();
      if (!r.width || !text.textContent.trim()) { continue; }
      const side = r.left < box.left - tolerance ? 'left' : r.right > box.right + tolerance ? 'right' : '';
      if (side) {
        problems.push(`figure #${gd.id}: text ${JSON.stringify(text.textContent.trim().slice(0, 50))} is cut off at its ${side} edge`);
      }
    }
  }
  return problems.slice(0, 40);
}"""

# WCAG 2 contrast of every visible text in the given boxes, against the colour behind it
# (translucent backgrounds composited up to the first opaque one; white behind the page).
_CONTRAST = """(args) => {
  const skip = 'script, style, svg, mjx-container, noscript, template';
  const parse = (value) => {
    const m = /rgba?\\(([^)]+)\\)/.exec(value || '');
    if (!m) { return [0, 0, 0, 0]; }
    const parts = m[1].split(/[\\s,\\/]+/).filter(Boolean).map(Number);
    return [parts[0], parts[1], parts[2], parts.length > 3 ? parts[3] : 1];
  };
  const over = (top, below) => [0, 1, 2].map((i) => top[i] * top[3] + below[i] * (1 - top[3])).concat([1]);
  const luminance = (c) => {
    const lin = c.slice(0, 3).map((v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); });
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2];
  };
  const background = (el) => {
    const layers = [];
    for (let node = el; node && node.nodeType === 1; node = node.parentElement) {
      const bg = parse(getComputedStyle(node).backgroundColor);
      if (bg[3] > 0) { layers.push(bg); if (bg[3] >= 1) { break; } }
    }
    let colour = layers.length && layers[layers.length - 1][3] >= 1 ? layers.pop() : [255, 255, 255, 1];
    while (layers.length) { colour = over(layers.pop(), colour); }
    return colour;
  };
  const opacity = (el) => {
    let value = 1;
    for (let node = el; node && node.nodeType === 1; node = node.parentElement) { value *= Number(getComputedStyle(node).opacity); }
    return value;
  };
  const css = (c) => `rgb(${c.slice(0, 3).map(Math.round).join(', ')})`;
  const seen = new Set(), results = [];
  for (const box of document.querySelectorAll(args.selector)) {
    const walker = document.createTreeWalker(box, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      const el = node.parentElement;
      if (!el || seen.has(el) || !node.textContent.trim() || el.closest(skip)) { continue; }
      seen.add(el);
      if (!el.getClientRects().length || !el.checkVisibility({checkOpacity: true, checkVisibilityCSS: true})) { continue; }
      const bg = background(el);
      const ink = parse(getComputedStyle(el).color);
      ink[3] *= opacity(el);
      const fg = over(ink, bg);
      const [light, dark] = [luminance(fg), luminance(bg)].sort((a, b) => b - a);
      const ratio = Math.round((light + 0.05) / (dark + 0.05) * 100) / 100;
      results.push({text: node.textContent.trim().slice(0, 60), ratio: ratio, fg: css(fg), bg: css(bg),
                    tag: el.tagName.toLowerCase() + (typeof el.className === 'string' && el.className
                      ? '.' + el.className.trim().split(/\\s+/)[0] : '')});
    }
  }
  results.sort((a, b) => a.ratio - b.ratio);
  const failing = results.filter((r) => r.ratio < args.minimum);
  return {checked: results.length, failing: failing.slice(0, 40), lowest: results.slice(0, 3)};
}"""

# On a touch screen, a drag on a figure must scroll the page: no figure may zoom or pan by drag.
_TOUCH_STATE = """() => Array.from(document.querySelectorAll('.js-plotly-plot')).map((gd) => ({
  id: gd.id,
  dragmode: gd._fullLayout ? gd._fullLayout.dragmode : null,
  scrollZoom: gd._context ? Boolean(gd._context.scrollZoom) : null,
}))"""

# The axis ranges of a figure: what a drag that zooms or pans would change.
_AXIS_RANGES = """(id) => {
  const gd = document.getElementById(id);
  const layout = (gd && gd._fullLayout) || {};
  return JSON.stringify(Object.keys(layout).filter((k) => /^[xy]axis\\d*$/.test(k)).map((k) => [k, layout[k].range]));
}"""

# Whether plotly.js waited for the first paint: posenc-plotly.js notes when it asked for it
# (a page that loads plotly.js itself, render-blocking, never lets it ask).
_PAINT = """() => {
  const paint = performance.getEntriesByName('first-contentful-paint')[0];
  return {figures: document.querySelectorAll('.plotly-graph-div').length,
          first_paint: paint ? paint.startTime : null,
          plotly_requested: window.posencFigures ? window.posencFigures.plotlyRequestedAt : null};
}"""


def _paint_problems(paint: dict[str, Any]) -> list[str]:
    """A page with figures whose plotly.js was not asked for after its first paint."""
    if not paint["figures"]:
        return []
    if paint["first_paint"] is None:
        return ["the browser recorded no first contentful paint"]
    if paint["plotly_requested"] is None:
        return ["plotly.js did not come from posenc-plotly.js after the first paint: the page loads it itself, "
                "which blocks the first paint"]
    if paint["plotly_requested"] < paint["first_paint"]:
        return [f"plotly.js was asked for at {paint['plotly_requested']:.0f} ms, before the first paint at "
                f"{paint['first_paint']:.0f} ms"]
    return []


# The explorers of a page: their div, their figure and how many controls they have.
_EXPLORERS = """() => Array.from(document.querySelectorAll('div.posenc-explorer')).map((node) => {
  const gd = node.querySelector('.plotly-graph-div');
  return {id: node.id, figure: gd ? gd.id : '', controls: node.querySelectorAll('.posenc-control').length};
})"""


def _is_local(url: str, base: str) -> bool:
    parts = urlsplit(url)
    if parts.scheme in ("data", "blob", "about", "javascript"):
        return True
    return f"{parts.scheme}://{parts.netloc}/" == base


def _inside_window(page: Any, element: Any) -> None:
    """Raise ValueError unless ``element`` lies within the window's width as the page is laid
    out (a control a reader would have to scroll sideways to reach counts as outside)."""
    element.scroll_into_view_if_needed(timeout=EXPLORER_TIMEOUT_MS)
    left, right, width = element.evaluate(
        "(el) => { const r = el.getBoundingClientRect();"
        " return [r.left + scrollX, r.right + scrollX, document.documentElement.clientWidth]; }"
    )
    if right <= left:
        raise ValueError("it is not visible")
    if left < -1 or right > width + 1:
        raise ValueError(f"it lies outside the {width} px window ({left:.0f} to {right:.0f} px)")


def _press(page: Any, element: Any, touch: bool) -> None:
    """What a reader does to a control: a tap on a phone, a click elsewhere."""
    if touch:
        element.tap(timeout=EXPLORER_TIMEOUT_MS)
    else:
        element.click(timeout=EXPLORER_TIMEOUT_MS)


def _operate_control(page: Any, control: Any, target: int, touch: bool) -> str:
    """Move one explorer control to value ``target``, as a reader would.

    Returns what was done; raises ValueError when the control is out of reach or ignored it.
    """
    kind = next((k for k in ("buttons", "slider", "select") if f"posenc-control-{k}" in (control.get_attribute("class") or "")), "")
    label = (control.locator(".posenc-control-label").first.text_content() or "").strip()
    if kind == "buttons":
        buttons = control.locator("button[data-index]")
        count = buttons.count()
        button = buttons.nth(target)
        _inside_window(page, button)
        _press(page, button, touch)
        if button.get_attribute("aria-pressed") != "true":
            raise ValueError(f"button {target + 1} of {count} did not become pressed")
        return f"buttons {label!r} (button {target + 1} of {count})"
    if kind == "slider":
        slider = control.locator("input[type=range]")
        count = int(slider.get_attribute("max") or 0) + 1
        _inside_window(page, slider)
        box = slider.bounding_box()
        # Chromium's thumb is about 16 px wide: step i sits at its centre's i-th position.
        thumb = 16
        x = box["x"] + thumb / 2 + target * (box["width"] - thumb) / (count - 1)
        y = box["y"] + box["height"] / 2
        if touch:
            page.touchscreen.tap(x, y)
        else:
            page.mouse.click(x, y)
        if int(slider.input_value()) != target:
            raise ValueError(f"the slider shows step {int(slider.input_value()) + 1}, not step {target + 1} of {count}")
        return f"slider {label!r} (step {target + 1} of {count})"
    if kind == "select":
        select = control.locator("select")
        count = select.locator("option").count()
        _inside_window(page, select)
        # A tap opens the system's list, which headless Chromium does not draw: the trial tap
        # proves the list can be reached (visible, enabled, not covered); then pick the entry.
        if touch:
            select.tap(trial=True, timeout=EXPLORER_TIMEOUT_MS)
        else:
            select.click(trial=True, timeout=EXPLORER_TIMEOUT_MS)
        select.select_option(str(target), timeout=EXPLORER_TIMEOUT_MS)
        return f"drop-down list {label!r} (entry {target + 1} of {count})"
    raise ValueError("it is neither buttons, a slider nor a drop-down list")


# For one control of an explorer: its value now, and the values that show another frame from
# the current setting of the others, nearest first (a control may legitimately change nothing
# in some settings of the others, e.g. a window longer than the table chosen).
_CONTROL_CHOICES = """([id, index]) => {
  const node = document.getElementById(id);
  const spec = JSON.parse(document.getElementById(node.getAttribute('data-spec')).textContent);
  const state = spec.controls.map((control, i) => {
    const box = node.querySelector(`.posenc-control[data-control="${i}"]`);
    const field = box.querySelector('input[type=range], select');
    if (field) { return Number(field.value); }
    const pressed = box.querySelector('button[aria-pressed=true]');
    return pressed ? Number(pressed.getAttribute('data-index')) : 0;
  });
  const frameOf = (values) => values.reduce((acc, value, i) => acc * spec.controls[i].size + value, 0);
  const shown = JSON.stringify(spec.frames[frameOf(state)]);
  const choices = [];
  for (let value = 0; value < spec.controls[index].size; value++) {
    if (value === state[index]) { continue; }
    const other = state.slice(); other[index] = value;
    if (JSON.stringify(spec.frames[frameOf(other)]) !== shown) { choices.push(value); }
  }
  choices.sort((a, b) => Math.abs(a - state[index]) - Math.abs(b - state[index]));
  return {active: state[index], choices: choices};
}"""


def _exercise_explorer(page: Any, explorer: dict[str, Any], touch: bool) -> list[dict[str, Any]]:
    """Every control of one static explorer, in turn: does the figure change each time?

    Each control moves to the nearest value that shows another frame. When no value does
    (the controls moved before it made it moot), those are first moved back to their
    defaults, which is checked the same way.
    """
    figure_id = explorer["figure"]
    action = "tap" if touch else "click"
    if not figure_id or not explorer["controls"]:
        why = "no plotly figure inside the explorer" if not figure_id else "no control"
        return [{"id": explorer["id"], "control": "the explorer", "action": action, "ok": False, "why": why}]
    if page.evaluate(_REVEAL, figure_id):
        page.wait_for_timeout(300)
    results: list[dict[str, Any]] = []
    moved: dict[int, int] = {}  # control index -> its default value, for the controls moved so far

    def operate(index: int, target: int | None) -> bool:
        result: dict[str, Any] = {"id": explorer["id"], "control": f"control {index + 1}", "action": action, "ok": False}
        results.append(result)
        before = page.evaluate(_FIGURE_STATE, figure_id)
        if before is None:
            result["why"] = "the figure was never drawn"
            return False
        if target is None:
            result["why"] = "none of its values changes the figure from the default setting"
            return False
        control = page.locator(f"#{explorer['id']} .posenc-control[data-control='{index}']")
        try:
            result["control"] = _operate_control(page, control, target, touch)
        except Exception as error:  # noqa: BLE001 - any failure to reach or move the control is the finding
            result["why"] = f"could not {action} it: {str(error).splitlines()[0]}"
            return False
        result.update(_figure_changed(page, figure_id, before))
        return bool(result["ok"])

    for index in range(explorer["controls"]):
        found = page.evaluate(_CONTROL_CHOICES, [explorer["id"], index])
        if not found["choices"] and moved:
            for earlier, default in list(moved.items()):
                operate(earlier, default)
            moved.clear()
            found = page.evaluate(_CONTROL_CHOICES, [explorer["id"], index])
        target = found["choices"][0] if found["choices"] else None
        if operate(index, target):
            moved.setdefault(index, found["active"])
    return results


def _figure_changed(page: Any, figure_id: str, before: dict[str, Any]) -> dict[str, Any]:
    """Wait for the figure to show another frame; ``{"ok": ..., "why": ...}``."""
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
        return {"ok": False, "why": "the figure disappeared"}
    if after["wired"] != "1":
        return {"ok": False, "why": "posenc-explorer.js never wired it (data-wired missing)"}
    if after["frame"] == before["frame"]:
        return {"ok": False, "why": f"data-frame stayed {before['frame']!r}"}
    if (after["data"], after["layout"]) == (before["data"], before["layout"]):
        return {"ok": False, "why": f"data-frame changed to {after['frame']!r} but the traces and layout did not"}
    layout_only = "" if after["data"] != before["data"] else " (layout only)"
    return {"ok": True, "why": f"frame {before['frame']} -> {after['frame']}{layout_only}"}


def _swipe(cdp: Any, x: float, y: float, dx: float, dy: float, steps: int = 8) -> None:
    """One finger drag from (x, y) by (dx, dy), as touch events (Chrome DevTools Protocol)."""
    cdp.send("Input.dispatchTouchEvent", {"type": "touchStart", "touchPoints": [{"x": x, "y": y}]})
    for step in range(1, steps + 1):
        point = {"x": x + dx * step / steps, "y": y + dy * step / steps}
        cdp.send("Input.dispatchTouchEvent", {"type": "touchMove", "touchPoints": [point]})
    cdp.send("Input.dispatchTouchEvent", {"type": "touchEnd", "touchPoints": []})


def _wait_until_at_rest(page: Any, figure_id: str, quiet_ms: int = 400, timeout_ms: int = 5000) -> None:
    """Wait until the figure's axis ranges have stayed the same for ``quiet_ms``.

    An explorer frame shown just before may still be settling: the texts are fitted 50 ms
    after plotly's last draw, and a wrapped axis title shrinks the plot, which moves the
    autorange of a figure with markers. A drag must be judged against the figure at rest.
    """
    deadline = time.monotonic() + timeout_ms / 1000
    ranges, since = page.evaluate(_AXIS_RANGES, figure_id), time.monotonic()
    while time.monotonic() < deadline and time.monotonic() - since < quiet_ms / 1000:
        page.wait_for_timeout(100)
        now = page.evaluate(_AXIS_RANGES, figure_id)
        if now != ranges:
            ranges, since = now, time.monotonic()


def _axes_moved(before: str, after: str, tolerance: float = 1e-3) -> bool:
    """Whether any axis range moved by more than ``tolerance`` of its span.

    ``before`` and ``after`` are ``_AXIS_RANGES`` JSON. A zoom or pan by touch moves a range by
    a visible fraction of it; plotly recomputing an autorange after a relayout (text fitting,
    a resize) can move it in the seventh digit, which a reader never sees.
    """
    old, new = dict(json.loads(before)), dict(json.loads(after))
    if old.keys() != new.keys():
        return True
    for axis, range_before in old.items():
        range_after = new[axis]
        numeric = all(isinstance(v, (int, float)) for v in [*(range_before or []), *(range_after or [])])
        if not numeric or not range_before or not range_after or len(range_before) != len(range_after):
            if range_before != range_after:
                return True
            continue
        span = abs(range_before[1] - range_before[0]) or 1.0
        if any(abs(a - b) > tolerance * span for a, b in zip(range_before, range_after)):
            return True
    return False


def _check_touch(page: Any) -> list[str]:
    """On a touch screen: no figure zooms or pans when dragged, and a drag on the first figure
    scrolls the page (up and down) and leaves its axes as they were (sideways)."""
    problems = [
        f"figure #{fig['id']}: a drag zooms or pans it on a touch screen (dragmode {fig['dragmode']!r}"
        f"{', scroll zoom on' if fig['scrollZoom'] else ''})"
        for fig in page.evaluate(_TOUCH_STATE)
        if fig["dragmode"] is not False or fig["scrollZoom"]
    ]
    figures = page.locator(".js-plotly-plot")
    first = next((figures.nth(i) for i in range(figures.count()) if figures.nth(i).is_visible()), None)
    if first is None:
        return problems
    figure_id = first.get_attribute("id")
    first.evaluate("(gd) => gd.scrollIntoView({block: 'center'})")
    _wait_until_at_rest(page, figure_id)
    box = first.bounding_box()
    if not box:
        return problems
    cdp = page.context.new_cdp_session(page)
    try:
        x, y = box["x"] + box["width"] / 2, min(box["y"] + box["height"] / 2, page.viewport_size["height"] - 100)
        ranges = page.evaluate(_AXIS_RANGES, figure_id)
        at_bottom = page.evaluate("() => scrollY + innerHeight >= document.documentElement.scrollHeight - 5")
        scrolled_from = page.evaluate("() => scrollY")
        _swipe(cdp, x, y, 0, 160 if at_bottom else -160)  # a finger moving up scrolls the page down
        _swipe(cdp, x, y, -120, 0)
        page.wait_for_timeout(250)
        moved = abs(page.evaluate("() => scrollY") - scrolled_from)
        if moved < 40:
            problems.append(f"figure #{figure_id}: a vertical drag on it scrolled the page by {moved:.0f} px only")
        after = page.evaluate(_AXIS_RANGES, figure_id)
        if _axes_moved(ranges, after):
            problems.append(f"figure #{figure_id}: a drag on it changed its axes (zoom or pan by touch): "
                            f"{ranges} -> {after}")
    finally:
        cdp.detach()
    return problems


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
    viewport: Viewport = DESKTOP,
    render_timeout_ms: int = RENDER_TIMEOUT_MS,
) -> PageReport:
    """Open ``page_path`` (site-relative) in a new tab of ``context`` and check it.

    Args:
        context: a Playwright ``BrowserContext`` made for ``viewport`` (:func:`viewport_context`).
        base_url: the server's base URL from :func:`serve`; every other address is blocked.
        axe_source: the text of ``axe.min.js``, or None to skip the accessibility check.
        artifacts: folder for screenshots of failing pages (None: no screenshots).
        viewport: how the context shows pages: taps instead of clicks and the touch checks on
            a touch screen, the theme the page must show, whether axe-core runs.
        render_timeout_ms: how long to wait for MathJax and every plotly figure before the checks.
    """
    from playwright.sync_api import Error as PlaywrightError

    url = urljoin(base_url, page_path)
    report = PageReport(page=page_path, url=url, viewport=viewport.name)
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

    last_lap = [started]

    def lap(phase: str) -> None:
        now = time.perf_counter()
        report.phases[phase] = round(now - last_lap[0], 2)
        last_lap[0] = now

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
        page.evaluate(_WAIT_FOR_RENDER, render_timeout_ms)
        # Late requests (fonts asked for by MathJax or CSS) must be seen too: wait for quiet.
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and (traffic["in_flight"] > 0 or time.monotonic() - traffic["last"] < 0.3):
            page.wait_for_timeout(50)
        lap("load")
        report.figures = page.evaluate(_FIGURES)
        report.paint = page.evaluate(_PAINT)
        report.math = page.evaluate(_MATH, RAW_MATH.pattern)
        report.theme = page.evaluate("() => document.documentElement.getAttribute('data-theme')")
        if page.locator(".theme-switch-button").count():  # a page of the book, with its theme
            report.expected_theme = "dark" if viewport.dark else "light"
        if axe_source is not None and viewport.axe:
            page.add_script_tag(content=axe_source)
            axe_running[0] = True
            try:
                rules = list(viewport.axe_rules) if viewport.axe_rules else None
                report.axe_violations = page.evaluate(_AXE, [rules, list(viewport.axe_skip)])
            finally:
                axe_running[0] = False
            report.axe_ran = True
            lap("axe")
        for explorer in page.evaluate(_EXPLORERS):
            report.explorers.extend(_exercise_explorer(page, explorer, viewport.touch))
        lap("explorers")
        if viewport.touch:
            report.touch = _check_touch(page)
            lap("touch")
        if page.evaluate(_REVEAL_ALL):
            page.wait_for_timeout(500)  # plotly re-lays out the figures that were hidden
        page.evaluate(_SETTLE)
        report.overflow = page.evaluate(_OVERFLOW, OVERFLOW_TOLERANCE_PX)
        report.contrast = page.evaluate(_CONTRAST, {"selector": viewport.contrast, "minimum": MIN_CONTRAST})
        lap("overflow and contrast")
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


def check_theme_switch(browser: Any, base_url: str, page_path: str, *, clicks: int = 3,
                       start: str | None = None, block: str | None = None) -> list[str]:
    """Press the theme button ``clicks`` times on a light system: each press must change what the
    reader sees (light and dark in turn, ``aria-pressed`` telling which), and a reload must keep
    the last choice. Runs in a fresh context (the choice is remembered in localStorage).

    Args:
        start: the mode a reader chose on an earlier visit ("light", "dark" or "auto"), stored
            as the theme stores it before the page is loaded again; None: a first visit.
        block: the name of a script to keep from loading (to show the check can fail).
    """
    context = viewport_context(browser, DESKTOP)
    problems: list[str] = []
    try:
        page = context.new_page()
        if block:
            page.route(f"**/{block}*", lambda route: route.abort())
        page.goto(urljoin(base_url, page_path), wait_until="load")
        if start:
            page.evaluate("(mode) => { localStorage.setItem('mode', mode); localStorage.setItem('theme', mode); }", start)
            page.reload(wait_until="load")
        button = page.locator(".theme-switch-button").first
        theme = lambda: page.evaluate("() => document.documentElement.getAttribute('data-theme')")  # noqa: E731
        shown = theme()
        for click in range(1, clicks + 1):
            button.click()
            page.wait_for_timeout(100)
            now = theme()
            if now == shown:
                problems.append(f"press {click} of the theme button left the page {now!r}")
            elif button.get_attribute("aria-pressed") != str(now == "dark").lower():
                problems.append(f"after press {click} the page is {now!r} but aria-pressed is {button.get_attribute('aria-pressed')!r}")
            shown = now
        page.reload(wait_until="load")
        if theme() != shown:
            problems.append(f"after a reload the page is {theme()!r}, not the {shown!r} chosen")
    finally:
        context.close()
    return problems


def _save_screenshots(page: Any, report: PageReport, artifacts: Path) -> None:
    """Screenshot a failing page (and each failing explorer); drop stale shots of a passing one."""
    name = artifact_name(report.page) + ("" if report.viewport == DESKTOP.name else f"--{report.viewport}")
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
        failing = dict.fromkeys(explorer["id"] for explorer in report.explorers if not explorer["ok"] and explorer["id"])
        for explorer_id in failing:
            shot = artifacts / f"{name}--explorer-{explorer_id}.png"
            page.locator(f"#{explorer_id}").screenshot(path=str(shot))
            report.screenshots.append(str(shot))
    except Exception as error:  # noqa: BLE001 - a failed screenshot must not hide the findings
        report.screenshots.append(f"(screenshot failed: {error})")


def describe(report: PageReport) -> str:
    """Human-readable findings of one page, for assertion messages."""
    lines = [f"{report.page} ({report.viewport}): {sum(map(len, report.problems().values()))} problem(s)"]
    for check, items in report.problems().items():
        lines += [f"  [{check}] {item}" for item in items]
    lines += [f"  screenshot: {shot}" for shot in report.screenshots]
    lines += [f"  (not counted: axe-core's own request, {request})" for request in report.axe_requests]
    return "\n".join(lines)


class SiteChecker:
    """A browser and a server for one site; checks each page once per viewport and remembers
    the report. One browser context per viewport, made when first needed."""

    def __init__(self, browser: Any, base_url: str, *, axe_source: str | None, artifacts: Path | None = ARTIFACTS,
                 render_timeout_ms: int = RENDER_TIMEOUT_MS):
        self.browser = browser
        self.render_timeout_ms = render_timeout_ms
        self.base_url = base_url
        self.axe_source = axe_source
        self.artifacts = artifacts
        self.contexts: dict[str, Any] = {}
        self.reports: dict[tuple[str, str], PageReport] = {}

    def context(self, viewport: Viewport) -> Any:
        if viewport.name not in self.contexts:
            self.contexts[viewport.name] = viewport_context(self.browser, viewport)
        return self.contexts[viewport.name]

    def report(self, page: str, viewport: Viewport = DESKTOP) -> PageReport:
        key = (page, viewport.name)
        if key not in self.reports:
            self.reports[key] = check_page(
                self.context(viewport), self.base_url, page, axe_source=self.axe_source, artifacts=self.artifacts,
                viewport=viewport, render_timeout_ms=self.render_timeout_ms,
            )
        return self.reports[key]


@contextmanager
def site_checker(root: Path, *, axe: bool = True, artifacts: Path | None = ARTIFACTS,
                 render_timeout_ms: int = RENDER_TIMEOUT_MS) -> Iterator[SiteChecker]:
    """Server + browser for ``root``; yields a :class:`SiteChecker`."""
    source = axe_source() if axe else None
    with serve(root) as base_url, launch_browser() as browser:
        yield SiteChecker(browser, base_url, axe_source=source, artifacts=artifacts, render_timeout_ms=render_timeout_ms)


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--site", type=Path, default=None, help=f"site folder (default ${SITE_ENV} or _build/html)")
    parser.add_argument("--json", action="store_true", help="print the full reports as JSON")
    parser.add_argument("--viewport", choices=[v.name for v in VIEWPORTS], action="append",
                        help="check only in this viewport (repeatable; default: all of them)")
    parser.add_argument("pages", nargs="*", help="site-relative pages (default: every page of the toc)")
    args = parser.parse_args(argv)
    root = (args.site or site_dir()).resolve()
    pages = args.pages or toc_pages()
    viewports = [v for v in VIEWPORTS if not args.viewport or v.name in args.viewport]
    failures = 0
    with site_checker(root) as checker:
        for page in pages:
            links = check_links(root, page)
            for viewport in viewports:
                report = checker.report(page, viewport)
                failures += bool(report.problems())
                if args.json:
                    print(json.dumps(asdict(report), indent=1))
                phases = ", ".join(f"{name} {seconds:.1f}" for name, seconds in report.phases.items())
                print(describe(report) + f"  ({report.seconds:.1f} s: {phases})")
            failures += bool(links)
            for problem in links:
                print(f"  [links] {problem}")
    print(f"{len(pages)} page(s) in {len(viewports)} viewport(s), {failures} problem report(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
