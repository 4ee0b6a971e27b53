"""Internal links of the built site: every ``href``/``src`` that points inside the site
resolves to a file and every ``#anchor`` exists in its target page. Static HTML only (no
browser). Marked ``site``: without a built site (``make book``; ``make test`` builds it first)
these tests fail; ``make unit`` leaves them out."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from support.site import check_links, require_page, require_site, toc_pages

PAGES = toc_pages()

pytestmark = pytest.mark.site


@pytest.fixture(scope="module")
def root() -> Path:
    return require_site()


@pytest.mark.parametrize("page", PAGES)
def test_internal_links_resolve(root: Path, page: str) -> None:
    require_page(page)
    problems = check_links(root, page)
    assert not problems, f"{page}: {len(problems)} broken internal link(s):\n" + "\n".join(problems)


def test_pages_outside_the_toc_have_no_broken_links(root: Path) -> None:
    """Any other HTML the build produced (there should be little) is checked too."""
    others = sorted(
        str(path.relative_to(root))
        for path in root.rglob("*.html")
        if str(path.relative_to(root)) not in PAGES and "_static" not in path.parts and "_sources" not in path.parts
    )
    problems = [f"{page}: {problem}" for page in others for problem in check_links(root, page)]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("page", PAGES)
def test_plotly_js_is_loaded_exactly_where_a_figure_is(root: Path, page: str) -> None:
    """plotly.js is 4.8 MB: pages without a figure must not load it; pages with one load it through
    posenc-plotly.js, in the head before the first figure, and never by a <script> tag of their own
    (that would block the first paint; the browser checks measure it)."""
    html = require_page(page).read_text(encoding="utf-8")
    has_figure = 'class="plotly-graph-div"' in html
    loader = re.search(r'<script src="[^"]*vendor/posenc-plotly\.js[^"]*"></script>', html)
    assert has_figure == bool(loader), f"{page}: figure on the page: {has_figure}, loads posenc-plotly.js: {bool(loader)}"
    assert not re.search(r'<script[^>]*src="[^"]*plotly\.min\.js', html), f"{page}: loads plotly.js with a <script> tag"
    if loader:
        assert loader.start() < html.index('class="plotly-graph-div"') and loader.start() < html.index("</head>")
