"""The built site in a real browser: every page of the table of contents (plus index,
search and genindex) is opened in headless Chromium from a local server, with every
request to another address blocked and recorded.

Each page is loaded and checked once (``support.site.check_page``); the tests below read
that report, so a failure names its page and its check. Screenshots of failing pages go to
``tests/artifacts/``. Skipped, with the reason, only when Chromium is missing (``make
browser-deps`` installs it as root). A missing built site (``make book``; ``make test`` builds it
first) or a missing pinned package (playwright, axe-playwright-python: ``make setup``) fails.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from support.site import (
    SiteChecker,
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
    "explorers": "every static explorer changes its figure after one click on a control",
    "axe": "axe-core finds no serious or critical accessibility violation",
}


@pytest.mark.parametrize("check", list(CHECKS), ids=lambda check: check.replace(" ", "-"))
def test_page(checker: SiteChecker, page: str, check: str) -> None:
    report = checker.report(page)
    problems = report.problems()
    if "load" in problems:
        pytest.fail(describe(report))
    if check == "axe":
        assert report.axe_ran, f"axe-core did not run on {page}"
    assert check not in problems, f"{CHECKS[check]}: failed\n{describe(report)}"


def test_chapter_1_shows_math_figures_and_a_working_explorer(checker: SiteChecker) -> None:
    """Guards against the checks above passing vacuously (e.g. if a class name changed)."""
    require_page(CHAPTER_1)
    report = checker.report(CHAPTER_1)
    assert report.math.get("typeset", 0) >= 5, f"expected typeset maths on chapter 1, got {report.math}"
    assert report.figures and all(fig["ok"] for fig in report.figures), report.figures
    assert report.explorers and all(ex["ok"] for ex in report.explorers), report.explorers
    assert not report.external_requests and not report.console_errors, describe(report)
