"""The built site in a real browser: every page of the table of contents (plus index,
search and genindex) is opened in headless Chromium from a local server, with every
request to another address blocked and recorded.

Each page is loaded and checked once (``support.site.check_page``); the tests below read
that report, so a failure names its page and its check. Screenshots of failing pages go to
``tests/artifacts/``. Skipped, with the reason, when Chromium, axe-core (``make
browser-deps``) or the built site (``make book``) is missing; ``make test`` provides all three.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from support.site import (
    SiteChecker,
    describe,
    missing_browser_requirements,
    site_checker,
    site_dir,
    site_is_partial,
    toc_pages,
)

pytestmark = pytest.mark.browser

PAGES = toc_pages()
CHAPTER_1 = "book/01_why_order_matters.html"


@pytest.fixture(scope="module")
def checker() -> Iterator[SiteChecker]:
    reason = missing_browser_requirements()
    if reason:
        pytest.skip(reason)
    with site_checker(site_dir()) as checker:
        yield checker


@pytest.fixture(params=PAGES)
def page(request: pytest.FixtureRequest) -> str:
    path: str = request.param
    if not (site_dir() / path).is_file():
        if site_is_partial():
            pytest.skip(f"{path} is not part of the partial build at {site_dir()}")
        pytest.fail(f"{path} is listed in _toc.yml but was not built into {site_dir()}")
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
    if not (site_dir() / CHAPTER_1).is_file():
        pytest.skip(f"{CHAPTER_1} is not in the site at {site_dir()}")
    report = checker.report(CHAPTER_1)
    assert report.math.get("typeset", 0) >= 5, f"expected typeset maths on chapter 1, got {report.math}"
    assert report.figures and all(fig["ok"] for fig in report.figures), report.figures
    assert report.explorers and all(ex["ok"] for ex in report.explorers), report.explorers
    assert not report.external_requests and not report.console_errors, describe(report)
