"""Print the built site as one PDF, and the worked solutions as a second PDF (``make pdf``).

Offline and without TeX: the pages of ``_toc.yml`` are read from the built site (``make book``),
their article contents are joined into ONE HTML document, and the same headless Chromium the site
checks use (:mod:`tools.browser`) prints it once. One document means one print, and an
internal link is an ordinary ``#id`` link that Chromium turns into a jump inside the PDF: every id
of page ``P`` becomes ``P--id`` and every link ``P.html#id`` becomes ``#P--id`` (a link to the page
itself becomes ``#page-P``, the chapter's opening). Plotly figure ids are left as they are (their
scripts look them up; they are unique across the site already).

What the printed edition changes, and why:

* a contents page and a list of figures open the book, each entry a link;
* worked solutions leave the book (a class can read it before attempting the exercises) and go
  to a separate answer booklet, each after a copy of its exercise;
* each explorer (a figure with sliders or buttons, ``.posenc-explorer``) is printed at its
  default setting, with a line saying the web edition has the interactive version;
* folded code cells ("Show code cell source") are left out: paper cannot unfold them;
* long code lines wrap; tables, outputs and formulas may not overflow the page (nothing is
  clipped either: overflow stays visible, so a line that is too long is caught by the test's
  margin check instead of disappearing).

The print CSS lives here, injected at print time; the site's theme is untouched. Outputs:
``_build/pdf/positional-encoding.pdf`` and ``_build/pdf/positional-encoding-answers.pdf``, plus
``positional-encoding.json`` (pages, sizes, timings) for the tests and the README.

Usage::

    .venv/bin/python -m tools.make_pdf [--site _build/html] [--out _build/pdf] [--keep-html]
"""

from __future__ import annotations

import argparse
import copy
import json
import re
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urljoin, urlsplit

import yaml
from bs4 import BeautifulSoup, NavigableString, Tag

from tools.browser import ROOT, launch_browser, missing_chromium, serve
from tools.toc import toc_entries, toc_pages

BOOK_FILE = "positional-encoding.pdf"
ANSWERS_FILE = "positional-encoding-answers.pdf"
REPORT_FILE = "positional-encoding.json"
#: The combined documents are served at these (virtual) addresses beside the pages, so every
#: relative URL of a page (``../_static/...``) resolves exactly as it does on the site.
BOOK_URL = "book/__print_book__.html"
ANSWERS_URL = "book/__print_answers__.html"

#: A4 with 16 mm side margins: the text column is 178 mm = 673 CSS px. The browser window gets
#: exactly that width, so plotly lays each figure out at the width it will be printed at.
PAPER = "A4"
MARGIN_MM = {"top": 16, "bottom": 16, "left": 16, "right": 16}
COLUMN_PX = round((210 - MARGIN_MM["left"] - MARGIN_MM["right"]) / 25.4 * 96)
LOAD_TIMEOUT_MS = 240_000

INTERACTIVE_NOTE = (
    "This figure is interactive in the web edition and in the chapter's notebook ({notebook}): "
    "move its controls there. Printed here at its default setting."
)
SOLUTION_NOTE = "Worked solution: in the answer booklet ({answers})."

#: Body text size; the test checks the print was not shrunk (Chromium shrinks a page to fit
#: anything wider than the column).
BODY_PT = 9.5
PRINT_CSS = """
@page { size: A4; }
html { font-size: BODY_PTpt; }
h1 { font-size: 1.9rem; } h2 { font-size: 1.45rem; } h3 { font-size: 1.2rem; } h4 { font-size: 1.05rem; }
body { margin: 0; padding: 0; background: white; }
.print-book { width: 100%; }
.print-page { break-before: page; }
.print-title-page { text-align: center; padding-top: 30%; }
.print-title-page h1 { font-size: 2.4rem; border: none; }
.print-contents { break-before: page; }
.print-contents ol { list-style: none; padding-left: 0; }
.print-contents li { margin: 0.25rem 0; }
.print-contents li.part { font-weight: bold; margin-top: 0.9rem; }
.print-figures li { font-size: 0.9rem; margin: 0.15rem 0; }
h1, h2, h3, h4 { break-after: avoid; }
/* Nothing may be clipped: what does not fit must show up (and fail the margin check). MathJax
   and plotly clip on purpose inside their own drawings (stretched rules, plot areas). */
.print-book *:not(svg):not(svg *):not(mjx-container *) { overflow: visible !important; max-height: none !important; }
.print-book pre, .print-book code, .print-book kbd {
  white-space: pre-wrap !important; overflow-wrap: anywhere; word-break: break-word;
}
.print-book div.highlight pre, .print-book .output pre, .print-book .cell_output pre {
  font-size: 7.8pt; line-height: 1.3; padding: 0.4rem;
}
.print-book table { max-width: 100%; font-size: 8pt; }
.print-book table td, .print-book table th { overflow-wrap: anywhere; padding: 0.15rem 0.3rem; }
.print-book mjx-container[display="true"] { max-width: 100%; }
/* MathJax's hidden copy of each formula for screen readers is positioned absolutely and may
   reach past the column at a line's end, which would make Chromium shrink the whole book. */
.print-book mjx-assistive-mml { width: 1px !important; }
.print-book .cell, .print-book figure, .print-book .admonition, .print-book tr { break-inside: avoid; }
.print-book .posenc-figure { break-inside: avoid; }
.print-book a { color: #1a4f8b; text-decoration: none; }
.print-note { font-style: italic; font-size: 0.85rem; color: #444; margin: 0.2rem 0 0.8rem 0; }
.print-answers-chapter > h1 { font-size: 1.6rem; }
.print-answer { break-inside: auto; margin-bottom: 1.2rem; }
""".replace("BODY_PT", str(BODY_PT))

#: Resolved when every plotly figure has drawn and MathJax has typeset everything.
_WAIT_FOR_RENDER = """async (timeoutMs) => {
  const started = performance.now();
  while (!(window.MathJax && window.MathJax.startup && window.MathJax.startup.promise)) {
    if (performance.now() - started > timeoutMs) { return 'MathJax never started'; }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  await window.MathJax.startup.promise;
  const figures = () => Array.from(document.querySelectorAll('.plotly-graph-div'));
  const drawn = () => figures().every((gd) => gd.querySelector('svg.main-svg'));
  while (!drawn()) {
    if (performance.now() - started > timeoutMs) {
      return figures().filter((gd) => !gd.querySelector('svg.main-svg')).length + ' figure(s) never drawn';
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  await document.fonts.ready;
  const errors = document.querySelectorAll('mjx-merror').length;
  return errors ? errors + ' MathJax error(s)' : 'ok';
}"""


#: Plotly draws a title or legend entry longer than its figure past the figure's edge, where
#: the SVG clips it. Each such text is shrunk (font size) until it fits; returns what was shrunk.
_FIT_FIGURE_TEXT = """() => {
  const fitted = [];
  for (const text of document.querySelectorAll('svg.main-svg text')) {
    const svg = text.ownerSVGElement.getBoundingClientRect();
    const box = text.getBoundingClientRect();
    if (box.width === 0 || (box.left >= svg.left - 0.5 && box.right <= svg.right + 0.5)) { continue; }
    const anchor = text.getAttribute('text-anchor') || 'start';
    const room = anchor === 'middle'
      ? 2 * Math.min((box.left + box.right) / 2 - svg.left, svg.right - (box.left + box.right) / 2)
      : anchor === 'end' ? box.right - svg.left : svg.right - box.left;
    const size = parseFloat(getComputedStyle(text).fontSize);
    text.style.fontSize = `${(size * Math.max(room, 1) / box.width * 0.98).toFixed(2)}px`;
    const page = text.closest('.print-page');
    fitted.push(`${page ? page.id : '?'}: ${text.textContent.trim().slice(0, 80)}`);
  }
  return fitted;
}"""

#: Elements wider than the text column (Chromium would shrink the whole book to fit them) and
#: figure texts still past their figure's edge; reported, outermost first.
_OVERFLOWING = r"""(column) => {
  // Block boxes (tables, code blocks, figures) must fit the column. An inline element that wraps
  // has one box per line, and its bounding box spans them all; its words are checked instead:
  // every fragment of its text without the spaces at a line's end.
  const outside = (box) => box.width > 0 && (box.right > column + 1 || box.left < -1);
  const inlineOverflows = (node) => {
    const walker = document.createTreeWalker(node, NodeFilter.SHOW_TEXT);
    for (let text = walker.nextNode(); text; text = walker.nextNode()) {
      const value = text.textContent;
      const start = value.search(/\S/);
      if (start < 0) { continue; }
      const range = document.createRange();
      range.setStart(text, start);
      range.setEnd(text, value.trimEnd().length);
      for (const box of range.getClientRects()) {
        if (outside(box) && range.toString().trim()) { return true; }
      }
    }
    return false;
  };
  const found = [];
  for (const node of document.querySelectorAll('.print-book *')) {
    if (node.closest('mjx-container') && !node.matches('mjx-container')) { continue; }
    const box = node.getBoundingClientRect();
    if (box.width === 0) { continue; }
    if (node.ownerSVGElement) {  // the figure clips its own drawing: only cut texts count
      const svg = node.ownerSVGElement.getBoundingClientRect();
      if (!node.matches('text') || (box.right <= svg.right + 0.5 && box.left >= svg.left - 0.5)) { continue; }
    } else if (!outside(box)) { continue; }
    else if (getComputedStyle(node).display === 'inline' && node.getClientRects().length > 1 &&
             !inlineOverflows(node)) { continue; }
    if (found.some((outer) => outer.contains(node))) { continue; }
    found.push(node);
  }
  return found.slice(0, 20).map((node) => {
    const page = node.closest('.print-page');
    const box = node.getBoundingClientRect();
    return `${page ? page.id : '?'}: <${node.tagName.toLowerCase()}> from ${Math.round(box.left)} to ` +
      `${Math.round(box.right)} px: ${node.textContent.trim().slice(0, 60)}`;
  });
}"""


@dataclass
class PrintReport:
    """What was printed, for the tests and the README (saved as JSON beside the PDFs)."""

    pages: list[str] = field(default_factory=list)
    chapter_titles: list[str] = field(default_factory=list)
    explorers: int = 0
    figures: int = 0
    #: Ids of the figures (plotly divs) in the list of figures: named destinations of the PDF.
    figure_ids: list[str] = field(default_factory=list)
    solutions: int = 0
    unresolved_links: list[str] = field(default_factory=list)
    fitted_figure_text: dict[str, list[str]] = field(default_factory=dict)
    overflowing: dict[str, list[str]] = field(default_factory=dict)
    book_pages: int = 0
    book_bytes: int = 0
    answers_pages: int = 0
    answers_bytes: int = 0
    seconds: dict[str, float] = field(default_factory=dict)


# -- reading the site ------------------------------------------------------------------
def book_pages(site: Path, skip_missing: bool = False) -> list[str]:
    """Site-relative pages of ``_toc.yml`` in reading order (``book/index.html`` first).

    Raises:
        FileNotFoundError: a page of the table of contents is not in ``site`` (unless
            ``skip_missing``: then it is left out, with a warning on stderr).
    """
    pages = [page for page in toc_pages() if page.startswith("book/")]
    missing = [page for page in pages if not (site / page).is_file()]
    if missing and not skip_missing:
        raise FileNotFoundError(f"site={site}: pages of _toc.yml not built: {missing}; run `make book` first")
    if missing:
        print(f"warning: left out, not in {site}: {missing}", file=sys.stderr)
    return [page for page in pages if page not in missing]


def toc_parts() -> dict[str, str]:
    """Page stem -> caption of the part of ``_toc.yml`` that opens with it."""
    openers: dict[str, str] = {}
    previous = None
    for entry in toc_entries():
        if entry.caption is not None and entry.caption != previous:
            openers[Path(entry.file).name] = entry.caption
        previous = entry.caption
    return openers


def stem(page: str) -> str:
    """``book/02_sinusoidal.html`` -> ``02_sinusoidal``."""
    return Path(page).stem


def _article(soup: BeautifulSoup, page: str) -> Tag:
    article = soup.select_one("article.bd-article")
    if article is None:
        raise ValueError(f"page={page!r}: no <article class='bd-article'> in it; is it a page of the built book?")
    return article


def _head_assets(pages: list[BeautifulSoup]) -> str:
    """Stylesheets and the scripts printing needs (MathJax with its config, plotly), gathered
    from the heads of all ``pages`` in order: only pages with figures load plotly."""
    kept: dict[str, None] = {}  # an ordered set
    for soup in pages:
        head = soup.head
        for node in head.find_all(["link", "script"]) if head else []:
            if node.name == "link" and "stylesheet" in (node.get("rel") or []):
                kept.setdefault(str(node))
            elif node.name == "script":
                src = str(node.get("src") or "")
                text = node.string or ""
                # The theme's scripts (toggles, search, copy buttons) only change the screen page.
                if "mathjax" in src or "plotly" in src or text.strip().startswith("window.MathJax"):
                    kept.setdefault(str(node))
    return "\n".join(kept)


# -- one page into the combined document ------------------------------------------------
def _keeps_id(node: Tag) -> bool:
    """Ids their own scripts look up (plotly figures, explorer specs): unique site-wide already."""
    value = str(node.get("id", ""))
    return value.startswith("posenc-explorer-") or "plotly-graph-div" in (node.get("class") or [])


def _rewrite_ids(root: Tag, prefix: str) -> None:
    for node in root.find_all(id=True):
        if not _keeps_id(node):
            node["id"] = f"{prefix}--{node['id']}"


def _unwrap_link(link: Tag) -> None:
    """A link with nowhere to go in print keeps its text and loses its target."""
    del link["href"]
    link.name = "span"


def _rewrite_links(root: Tag, page: str, included: set[str]) -> None:
    """Point every internal link of ``page`` into the combined document (see the module doc)."""
    base = urljoin("http://site/", page)
    for link in root.find_all("a", href=True):
        href = str(link["href"]).strip()
        parts = urlsplit(href)
        if parts.scheme or parts.netloc:
            continue
        target = urlsplit(urljoin(base, href))
        target_page = target.path.lstrip("/")
        if target_page not in included:
            _unwrap_link(link)  # genindex, downloads, sources: not part of the printed book
            continue
        link["href"] = f"#{stem(target_page)}--{target.fragment}" if target.fragment else f"#page-{stem(target_page)}"


def _figures(section: Tag, longest: int = 110) -> list[tuple[str, str]]:
    """(id, short description) of each plotly figure of a printed page, in order. The
    description is the first sentence of the figure's accessible name (its ``aria-label``)."""
    found = []
    for figure in section.select(".plotly-graph-div[id]"):
        holder = figure.find_parent(attrs={"aria-label": True})
        label = re.sub(r"\s+", " ", str(holder["aria-label"])) if holder else "Figure"
        sentence = re.split(r"(?<=[a-z0-9)])\. ", label, maxsplit=1)[0].rstrip(".")
        if len(sentence) > longest:
            sentence = sentence[: longest - 1].rsplit(" ", 1)[0] + "…"
        found.append((str(figure["id"]), sentence))
    return found


def _chapter_title(article: Tag) -> str:
    heading = article.find("h1")
    return re.sub(r"\s+", " ", heading.get_text(" ", strip=True)).strip() if heading else ""


@dataclass
class _Answer:
    exercise: Tag | None
    solution: Tag


def prepare_page(
    soup: BeautifulSoup, page: str, included: set[str], report: PrintReport
) -> tuple[Tag, list[_Answer]]:
    """The printable article of one page (a ``<section class="print-page">``) and its solutions."""
    article = _article(soup, page)
    name = stem(page)
    notebook = f"book/{name}.ipynb"
    for node in article.select("a.headerlink, details.hide.above-input, .tag_remove-cell"):
        node.decompose()
    for details in article.find_all("details"):
        details["open"] = ""
    for explorer in article.select(".posenc-explorer"):
        note = BeautifulSoup("", "html.parser").new_tag("p", attrs={"class": "print-note print-interactive"})
        note.string = INTERACTIVE_NOTE.format(notebook=notebook)
        explorer.insert_after(note)
        report.explorers += 1
    report.figures += len(article.select(".plotly-graph-div"))
    answers: list[_Answer] = []
    for solution in article.select("div.solution"):
        title_link = solution.select_one(".admonition-title a[href^='#']")
        target = str(title_link["href"])[1:] if title_link else ""
        exercise = article.find(id=target) if target else None
        answers.append(_Answer(copy.copy(exercise) if isinstance(exercise, Tag) else None, solution.extract()))
        if isinstance(exercise, Tag):
            note = BeautifulSoup("", "html.parser").new_tag("p", attrs={"class": "print-note print-solution"})
            note.string = SOLUTION_NOTE.format(answers=ANSWERS_FILE)
            exercise.insert_after(note)
    report.solutions += len(answers)
    _rewrite_ids(article, name)
    _rewrite_links(article, page, included)
    section = BeautifulSoup("", "html.parser").new_tag("section", attrs={"class": "print-page", "id": f"page-{name}"})
    for child in list(article.children):
        section.append(child.extract())
    return section, answers


def _drop_dangling_links(soup: BeautifulSoup, report: PrintReport, where: str) -> None:
    """Unwrap ``#id`` links whose target is not in the document (e.g. a solution left out)."""
    ids = {str(node["id"]) for node in soup.find_all(id=True)}
    for link in soup.find_all("a", href=True):
        href = str(link["href"])
        if href.startswith("#") and href[1:] not in ids:
            report.unresolved_links.append(f"{where}: {href}")
            _unwrap_link(link)


def _listing(soup: BeautifulSoup, heading: str, classes: str) -> tuple[Tag, Tag]:
    """A ``<nav>`` with an ``<h1>`` heading and an empty ``<ol>`` (not yet placed): ``(nav, ol)``."""
    nav = soup.new_tag("nav", attrs={"class": classes})
    title = soup.new_tag("h1")
    title.string = heading
    items = soup.new_tag("ol")
    nav.append(title)
    nav.append(items)
    return nav, items


def _document(title: str, assets: str, body: str) -> str:
    return (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        f"<title>{title}</title>\n{assets}\n<style>{PRINT_CSS}</style></head>\n"
        f"<body><main class='print-book bd-article'>\n{body}\n</main></body></html>"
    )


def build_documents(site: Path, skip_missing: bool = False) -> tuple[str, str, PrintReport]:
    """The book and the answer booklet as two HTML documents (to be served from ``book/``)."""
    report = PrintReport()
    pages = book_pages(site, skip_missing)
    report.pages = pages
    included = set(pages)
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    title = str(config.get("title", "The book"))
    parts = toc_parts()
    sources = {page: BeautifulSoup((site / page).read_text(encoding="utf-8"), "html.parser") for page in pages}
    assets = _head_assets([sources[page] for page in pages])

    body = BeautifulSoup("", "html.parser")
    title_page = body.new_tag("section", attrs={"class": "print-title-page"})
    heading = body.new_tag("h1")
    heading.string = title
    title_page.append(heading)
    byline = body.new_tag("p")
    byline.string = f"{config.get('author', '')} · printed edition of the website · {config.get('copyright', '')}"
    title_page.append(byline)
    body.append(title_page)
    contents, contents_list = _listing(body, "Contents", "print-contents")
    body.append(contents)
    figures, figures_list = _listing(body, "Figures", "print-contents print-figures")

    answers_by_page: list[tuple[str, str, list[_Answer]]] = []
    for page in pages:
        section, answers = prepare_page(sources[page], page, included, report)
        chapter = _chapter_title(section)
        report.chapter_titles.append(chapter)
        if stem(page) in parts:
            part = body.new_tag("li", attrs={"class": "part"})
            part.string = parts[stem(page)]
            contents_list.append(part)
        entry = body.new_tag("li")
        link = body.new_tag("a", href=f"#page-{stem(page)}")
        link.string = chapter
        entry.append(link)
        contents_list.append(entry)
        for number, (figure_id, description) in enumerate(_figures(section), start=1):
            item = body.new_tag("li")
            figure_link = body.new_tag("a", href=f"#{figure_id}")
            numbered = re.match(r"\d+\.", chapter)
            where = f"{numbered.group(0)}{number}" if numbered else f"{chapter}, figure {number}:"
            figure_link.string = f"{where} {description}"
            item.append(figure_link)
            figures_list.append(item)
            report.figure_ids.append(figure_id)
        body.append(section)
        if answers:
            answers_by_page.append((page, chapter, answers))
    if report.figure_ids:  # after the contents: a list of figures, each a link to its page
        contents.insert_after(figures)
    _drop_dangling_links(body, report, "book")

    booklet = BeautifulSoup("", "html.parser")
    opening = booklet.new_tag("section", attrs={"class": "print-title-page"})
    opening_heading = booklet.new_tag("h1")
    opening_heading.string = f"{title}: worked solutions"
    opening.append(opening_heading)
    note = booklet.new_tag("p")
    note.string = f"Answer booklet to the printed edition ({BOOK_FILE}): each exercise, then its worked solution."
    opening.append(note)
    booklet.append(opening)
    for page, chapter, answers in answers_by_page:
        section = booklet.new_tag("section", attrs={"class": "print-page print-answers-chapter", "id": f"answers-{stem(page)}"})
        chapter_heading = booklet.new_tag("h1")
        chapter_heading.string = chapter
        section.append(chapter_heading)
        for answer in answers:
            block = booklet.new_tag("div", attrs={"class": "print-answer"})
            if answer.exercise is not None:
                block.append(answer.exercise)
            block.append(answer.solution)
            section.append(block)
        booklet.append(section)
    # The booklet stands alone: its links into the book would lead nowhere.
    for link in booklet.find_all("a", href=True):
        if str(link["href"]).startswith("#") or not urlsplit(str(link["href"])).scheme:
            _unwrap_link(link)
    for node in booklet.find_all(id=True):
        if not _keeps_id(node):
            node["id"] = f"answers--{node['id']}"
    return _document(title, assets, str(body)), _document(f"{title}: worked solutions", assets, str(booklet)), report


# -- printing ----------------------------------------------------------------------------
def _print(
    context: Any, base_url: str, url: str, html: str, out: Path, title: str
) -> tuple[float, list[str], list[str]]:
    """Load ``html`` at ``url`` (fulfilled from memory), wait for maths and figures, print it.
    Returns the seconds it took, the figure texts shrunk to fit (``_FIT_FIGURE_TEXT``) and what
    still overflows (``_OVERFLOWING``)."""
    started = time.perf_counter()
    page = context.new_page()
    address = urljoin(base_url, url)

    def route(route: Any) -> None:
        request_url = route.request.url
        if request_url.split("#")[0] == address:
            route.fulfill(status=200, content_type="text/html; charset=utf-8", body=html)
        elif request_url.startswith(base_url):
            route.continue_()
        else:  # nothing leaves the machine
            route.abort("blockedbyclient")

    page.route("**/*", route)
    page.emulate_media(media="print")
    page.goto(address, wait_until="load", timeout=LOAD_TIMEOUT_MS)
    state = page.evaluate(_WAIT_FOR_RENDER, LOAD_TIMEOUT_MS)
    if state != "ok":
        raise RuntimeError(f"{url}: the page did not finish rendering: {state}")
    fitted = page.evaluate(_FIT_FIGURE_TEXT)
    overflowing = page.evaluate(_OVERFLOWING, COLUMN_PX)
    footer = (
        "<div style='font-size:8px; width:100%; text-align:center; color:#555;'>"
        f"{title} · <span class='pageNumber'></span> / <span class='totalPages'></span></div>"
    )
    page.pdf(
        path=str(out),
        format=PAPER,
        margin={side: f"{mm}mm" for side, mm in MARGIN_MM.items()},
        print_background=True,
        display_header_footer=True,
        header_template="<span></span>",
        footer_template=footer,
        outline=True,
        tagged=True,
    )
    page.close()
    return time.perf_counter() - started, fitted, overflowing


def page_count(path: Path) -> int:
    from pypdf import PdfReader

    return len(PdfReader(str(path)).pages)


def make_pdf(site: Path, out: Path, keep_html: bool = False, skip_missing: bool = False) -> PrintReport:
    """Print the book and the answer booklet from the built ``site`` into ``out``."""
    started = time.perf_counter()
    book_html, answers_html, report = build_documents(site, skip_missing)
    report.seconds["combine"] = round(time.perf_counter() - started, 1)
    out.mkdir(parents=True, exist_ok=True)
    if keep_html:
        (out / "positional-encoding.html").write_text(book_html, encoding="utf-8")
        (out / "positional-encoding-answers.html").write_text(answers_html, encoding="utf-8")
    book_pdf, answers_pdf = out / BOOK_FILE, out / ANSWERS_FILE
    title = str(yaml.safe_load((ROOT / "_config.yml").read_text()).get("title", ""))
    with serve(site) as base_url, launch_browser() as browser:
        context = browser.new_context(viewport={"width": COLUMN_PX, "height": 1100}, service_workers="block")
        documents = (
            ("book", BOOK_URL, book_html, book_pdf, title),
            ("answers", ANSWERS_URL, answers_html, answers_pdf, f"{title}: worked solutions"),
        )
        for name, url, html, path, heading in documents:
            seconds, report.fitted_figure_text[name], report.overflowing[name] = _print(
                context, base_url, url, html, path, heading
            )
            report.seconds[name] = round(seconds, 1)
        context.close()
    report.book_pages, report.book_bytes = page_count(book_pdf), book_pdf.stat().st_size
    report.answers_pages, report.answers_bytes = page_count(answers_pdf), answers_pdf.stat().st_size
    report.seconds["total"] = round(time.perf_counter() - started, 1)
    (out / REPORT_FILE).write_text(json.dumps(asdict(report), indent=1) + "\n", encoding="utf-8")
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--site", type=Path, default=ROOT / "_build" / "html", help="the built site (default _build/html)")
    parser.add_argument("--out", type=Path, default=ROOT / "_build" / "pdf", help="output folder (default _build/pdf)")
    parser.add_argument("--keep-html", action="store_true", help="also write the combined HTML documents (to debug)")
    parser.add_argument(
        "--if-chromium", action="store_true",
        help="without Chromium, say so and exit 0 instead of failing",
    )
    parser.add_argument(
        "--skip-missing", action="store_true", help="leave out pages of _toc.yml the site lacks (a partial build)"
    )
    args = parser.parse_args(argv)
    site = args.site.resolve()
    if args.if_chromium and missing_chromium():
        print(f"no PDF made: {missing_chromium()}")
        return 0
    if not (site / "index.html").is_file():
        parser.error(f"--site {site}: no built site there (no index.html); run `make book` first")
    report = make_pdf(site, args.out.resolve(), keep_html=args.keep_html, skip_missing=args.skip_missing)
    print(
        f"{args.out / BOOK_FILE}: {report.book_pages} pages, {report.book_bytes / 1e6:.1f} MB; "
        f"{args.out / ANSWERS_FILE}: {report.answers_pages} pages, {report.answers_bytes / 1e6:.1f} MB; "
        f"{report.explorers} explorers, {report.figures} figures, {report.solutions} solutions; "
        f"{report.seconds['total']:.0f} s"
    )
    for document, elements in report.overflowing.items():
        if elements:
            print(f"warning: {document}: {len(elements)} element(s) wider than the column (the print shrinks to fit):")
            print("\n".join(f"  {element}" for element in elements))
    if report.unresolved_links:
        print(f"{len(report.unresolved_links)} link(s) to content left out of the print were unwrapped")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
