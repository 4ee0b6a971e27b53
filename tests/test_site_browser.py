"""The built site in a real browser: every page of the table of contents (plus index,
search and genindex) is opened in headless Chromium from a local server, with every
request to another address blocked and recorded, twice: on a 1280 px desktop in light mode,
and on a 390 px touch phone in dark mode (the system's setting and the theme's own).

Each page is loaded and checked once per viewport (``support.site.check_page``); the tests
below read that report, so a failure names its page, its viewport and its check.
Screenshots of failing pages go to ``tests/artifacts/``. Skipped, with the reason, only when
Chromium is missing (``make browser-deps`` installs it as root). A missing built site (``make
book``; ``make test`` builds it first) or a missing pinned package (playwright,
axe-playwright-python: ``make setup``) fails.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from support.site import (
    DESKTOP,
    MIN_CONTRAST,
    PHONE_DARK,
    VIEWPORTS,
    SiteChecker,
    Viewport,
    check_theme_switch,
    describe,
    missing_chromium,
    missing_python_tools,
    require_page,
    require_site,
    site_checker,
    toc_pages,
)

pytestmark = [pytest.mark.browser, pytest.mark.site]

PAGES = toc_pages()
CHAPTER_1 = "book/01_why_order_matters.html"


@pytest.fixture(scope="module")
def checker() -> Iterator[SiteChecker]:
    root = require_site()
    broken = missing_python_tools()
    if broken:
        pytest.fail(broken, pytrace=False)
    reason = missing_chromium()
    if reason:
        pytest.skip(reason)
    with site_checker(root) as checker:
        yield checker


@pytest.fixture(params=PAGES)
def page(request: pytest.FixtureRequest) -> str:
    path: str = request.param
    require_page(path)
    return path


#: The checks of every page: the key of ``PageReport.problems()`` and what it guards.
CHECKS = {
    "console": "no JavaScript console error or uncaught exception",
    "network": "no request to any address but the local server",
    "local requests": "every request to the local server succeeds (no 404)",
    "figures": "every plotly figure is drawn, with data",
    "math": "MathJax typeset every formula; no raw $$, \\( or \\[ left in the text",
    "explorers": "every control of every static explorer is inside the window and changes its figure "
                 "when clicked (tapped on the phone)",
    "overflow": "no figure, explorer or control reaches past the text column or scrolls sideways, and no "
                "figure cuts off its own text",
    "contrast": f"every text a reader sees (the page, its output panels and captions) has a contrast of at least "
                f"{MIN_CONTRAST}:1 (axe-core's slower colour-contrast rule is left out)",
    "theme": "the page shows the theme the reader asked for (the system's dark mode on the phone)",
    "touch": "on a touch screen no figure zooms or pans when dragged, and a drag on a figure scrolls the page",
    "paint": "plotly.js does not block the first paint: it is asked for after it",
    "axe": "axe-core finds no serious or critical accessibility violation",
}


def _checks(viewport: Viewport) -> list[str]:
    return [
        check for check in CHECKS
        if (check != "touch" or viewport.touch) and (check != "axe" or viewport.axe)
    ]


@pytest.mark.parametrize(
    "viewport, check",
    [(viewport, check) for viewport in VIEWPORTS for check in _checks(viewport)],
    ids=[f"{viewport.name}-{check.replace(' ', '-')}" for viewport in VIEWPORTS for check in _checks(viewport)],
)
def test_page(checker: SiteChecker, page: str, viewport: Viewport, check: str) -> None:
    report = checker.report(page, viewport)
    problems = report.problems()
    if "load" in problems:
        pytest.fail(describe(report))
    if check == "axe":
        assert report.axe_ran, f"axe-core did not run on {page}"
    assert check not in problems, f"{CHECKS[check]}: failed\n{describe(report)}"


def test_chapter_1_shows_math_figures_and_a_working_explorer(checker: SiteChecker) -> None:
    """Guards against the checks above passing vacuously (e.g. if a class name changed)."""
    require_page(CHAPTER_1)
    for viewport in VIEWPORTS:
        report = checker.report(CHAPTER_1, viewport)
        assert report.math.get("typeset", 0) >= 5, f"expected typeset maths on chapter 1, got {report.math}"
        assert report.figures and all(fig["ok"] for fig in report.figures), report.figures
        assert len(report.explorers) >= 2 and all(ex["ok"] for ex in report.explorers), report.explorers
        assert report.contrast.get("checked", 0) >= 50, report.contrast
        assert not report.external_requests and not report.console_errors, describe(report)
    phone = checker.report(CHAPTER_1, PHONE_DARK)
    assert phone.theme == "dark" and phone.expected_theme == "dark", (phone.theme, phone.expected_theme)
    assert all(ex["action"] == "tap" for ex in phone.explorers), phone.explorers
    assert checker.report(CHAPTER_1, DESKTOP).theme == "light"


@pytest.mark.parametrize("start", [None, "light", "auto"], ids=["first-visit", "chose-light", "chose-auto"])
def test_each_press_of_the_theme_button_changes_the_theme(checker: SiteChecker, start: str | None) -> None:
    """Light, dark, light, ...: never the theme's "auto" step, which often changes nothing visible,
    whatever the reader chose before."""
    require_page(CHAPTER_1)
    assert check_theme_switch(checker.browser, checker.base_url, CHAPTER_1, start=start) == []


def test_the_theme_check_fails_with_the_themes_own_cycle(checker: SiteChecker) -> None:
    """Without posenc-site.js the theme's button takes a reader who chose light on to "auto": on a
    light system the same light page."""
    require_page(CHAPTER_1)
    problems = check_theme_switch(checker.browser, checker.base_url, CHAPTER_1, clicks=1, start="light",
                                  block="posenc-site.js")
    assert problems and "press 1 of the theme button left the page 'light'" in problems[0], problems
