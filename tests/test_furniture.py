"""The built site has the furniture readers expect (static HTML checks, no browser).

* every notebook page offers its ``.ipynb`` for download, and the file is in the site;
* every page links to the repository;
* pages are chained by previous/next links in table-of-contents order;
* the search page and its index are local files, and the index covers every page;
* the footer shows the licence and the copyright year of ``_config.yml`` (that year matches
  ``LICENSE``: checked in ``test_repository.py``, no site needed).

The site is ``_build/html`` (what ``make book`` builds) or ``$POSENC_SITE`` (e.g. a partial build
made with ``make pages``, where pages it lacks are skipped). Marked ``site``: without a built site
these tests fail (``make test`` builds it first); ``make unit`` leaves them out.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml
from support.site import require_page, require_site, site_dir, toc_pages

ROOT = Path(__file__).resolve().parents[1]
SITE = site_dir()
CONFIG = yaml.safe_load((ROOT / "_config.yml").read_text())

pytestmark = pytest.mark.site

#: The book's own pages in the table of contents (not index/search/genindex): known without a
#: build, so a page that was not built is a failure, not a test that silently never exists.
BOOK_PAGES = [page for page in toc_pages() if page.startswith("book/")]
NOTEBOOK_PAGES = [page for page in BOOK_PAGES if (ROOT / page).with_suffix(".ipynb").is_file()]


def _page_id(page: str) -> str:
    return page.removeprefix("book/").removesuffix(".html")


@pytest.fixture(scope="module", autouse=True)
def site() -> Path:
    """Every test here reads the built site: fail (do not skip) when there is none."""
    return require_site()


def built_pages() -> list[Path]:
    """Content pages of the site (the book's own pages, not genindex/search)."""
    return sorted((SITE / "book").glob("*.html"))


def test_site_has_pages() -> None:
    assert built_pages(), f"no pages under {SITE / 'book'}"
    assert NOTEBOOK_PAGES, "no notebook pages in _toc.yml"


@pytest.mark.parametrize("page_name", NOTEBOOK_PAGES, ids=_page_id)
def test_notebook_page_offers_its_ipynb(page_name: str) -> None:
    page = require_page(page_name)
    html = page.read_text()
    link = f"../_sources/book/{page.stem}.ipynb"
    assert f'href="{link}"' in html, f"{page.name}: no download link to {link}"
    assert (page.parent / link).resolve().is_file(), f"{page.name}: {link} is not in the site"


@pytest.mark.parametrize("page_name", BOOK_PAGES, ids=_page_id)
def test_page_links_to_the_repository(page_name: str) -> None:
    page = require_page(page_name)
    url = CONFIG["repository"]["url"].rstrip("/")
    assert f'href="{url}"' in page.read_text(), f"{page.name}: no repository button linking to {url}"


def _prev_next(page: Path) -> dict[str, str]:
    html = page.read_text()
    links = {}
    for kind in ("prev", "next"):
        match = re.search(rf'<a class="(?:left-|right-)?{kind}"[^>]*href="([^"]+)"', html)
        if match:
            links[kind] = match.group(1).split("#")[0]
    return links


def test_pages_are_chained_by_prev_and_next() -> None:
    pages = built_pages()
    unlinked = [p.name for p in pages if not _prev_next(p)]
    assert not unlinked, f"pages without previous/next navigation: {unlinked}"
    # Following "next" from the first page visits every page exactly once.
    start = SITE / "book" / "index.html"
    seen, current = [], start
    while current is not None and current not in seen:
        seen.append(current)
        target = _prev_next(current).get("next")
        current = (current.parent / target).resolve() if target else None
    missing = sorted({p.name for p in pages} - {p.name for p in seen})
    assert not missing, f"pages not reached by following 'next' from the preface: {missing}"


def test_search_works_offline() -> None:
    search = (SITE / "search.html").read_text()
    sources = re.findall(r'<script[^>]*src="([^"]+)"', search)
    remote = [src for src in sources if re.match(r"^(https?:)?//", src)]
    assert not remote, f"search.html loads scripts from the network: {remote}"
    assert any(src.split("?")[0].endswith("searchindex.js") for src in sources)
    index_text = (SITE / "searchindex.js").read_text()
    index = json.loads(index_text[index_text.index("(") + 1 : index_text.rindex(")")])
    indexed = set(index["docnames"])
    pages = {f"book/{p.stem}" for p in built_pages()}
    assert pages <= indexed, f"pages missing from the search index: {sorted(pages - indexed)}"
    assert "equivari" in index_text, "a word the book uses everywhere is not in the search index"


@pytest.mark.parametrize("page_name", BOOK_PAGES, ids=_page_id)
def test_footer_shows_licence_and_year(page_name: str) -> None:
    page = require_page(page_name)
    year = str(CONFIG["copyright"])
    html = page.read_text()
    assert f"© Copyright {year}." in html, f"{page.name}: footer lacks '© Copyright {year}.'"
    assert "MIT licence" in html, f"{page.name}: footer does not name the licence"
