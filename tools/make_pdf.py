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
import ast
import copy
import io
import json
import re
import sys
import textwrap
import time
import tokenize
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
#: Under an explorer printed as small multiples (posenc.paper): what paper shows of it.
PAPER_NOTE = (
    "Interactive in the web edition and in the chapter's notebook ({notebook}), where its controls take "
    "any value; printed here at {count} of its settings, {first} to {last}."
)
#: Page numbers are filled in after a first print (Chromium's print has no CSS target-counter):
#: these stand in for them in the first print, with the widest number the book can need.
PAGE_PLACEHOLDER = "000"
RANGE_PLACEHOLDER = f"pp. {PAGE_PLACEHOLDER}\u2013{PAGE_PLACEHOLDER}"
#: A handout range in the teacher's guide: ``<span class="posenc-pages" data-doc="book/02_sinusoidal">``
#: (the page's file in _toc.yml) shows its fallback text on the site and the page's range in print.
HANDOUT_CLASS = "posenc-pages"
#: Prints made in a row until every page number stays where the previous print put it.
MAX_PRINTS = 4
#: Code lines longer than this are reflowed before printing (a comment continues on a new comment
#: line, a long line breaks inside its brackets): code at 7.8 pt wraps past ~100 characters, and a
#: wrapped line is no longer valid Python.
CODE_COLUMNS = 96
#: The answer booklet sets code a little smaller (7 pt), so that its lines, the ones a student
#: types in, reflow less: up to this many characters fit its column.
ANSWER_CODE_COLUMNS = 112
ANSWER_CODE_PT = 7
#: The smallest code the answer booklet sets a block in, to fit a line that cannot be reflowed.
MIN_CODE_PT = 6
README_BEGIN = "<!-- make-pdf: begin (written by `make pdf`, tools/make_pdf.py; do not edit) -->"
README_END = "<!-- make-pdf: end -->"
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
.print-contents li a { display: flex; align-items: baseline; gap: 0.3em; }
.print-contents .print-entry { flex: 0 1 auto; }
.print-contents .print-dots { flex: 1 1 auto; min-width: 1.5em; border-bottom: 1px dotted #888; }
.print-contents .print-pageno, .posenc-pages { font-variant-numeric: tabular-nums; }
.print-contents .print-pageno { flex: 0 0 2.2em; text-align: right; color: #222; }
.print-contents li.part { font-weight: bold; margin-top: 0.9rem; }
.print-figures li { font-size: 0.9rem; margin: 0.15rem 0; }
h1, h2, h3, h4 { break-after: avoid; }
/* A heading at the top of a page with the theme's tight line height (1.15) has glyphs reaching
   above its line box into the previous page: Chromium paints and tags it on both, and its
   bookmark reads "1. 1. Why order mattersWhy order matters". */
h1, h2, h3, h4, h5, h6 { line-height: 1.3; }
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
/* Words wrap between words only, so no column is squeezed below its longest word (with
   overflow-wrap: anywhere a column may shrink to 2-4 characters a line); code may break anywhere. */
.print-book table td, .print-book table th { overflow-wrap: normal; word-break: normal; hyphens: auto;
  padding: 0.15rem 0.3rem; }
.print-book table td code, .print-book table th code { overflow-wrap: anywhere; word-break: break-all; }
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
.print-answer div.highlight pre { font-size: ANSWER_CODE_PTpt; white-space: pre !important; }
""".replace("BODY_PT", str(BODY_PT)).replace("ANSWER_CODE_PT", str(ANSWER_CODE_PT))

#: Resolved when every plotly figure has drawn and MathJax has typeset everything.
_WAIT_FOR_RENDER = """async (timeoutMs) => {
  const started = performance.now();
  while (!(window.MathJax && window.MathJax.startup && window.MathJax.startup.promise)) {
    if (performance.now() - started > timeoutMs) { return 'MathJax never started'; }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const late = new Promise((resolve) => setTimeout(() => resolve('late'), Math.max(0, timeoutMs - (performance.now() - started))));
  if (await Promise.race([window.MathJax.startup.promise.then(() => 'ok'), late]) === 'late') {
    return 'MathJax started but never finished (is it loaded twice?)';
  }
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
  // Word by word: spaces where a line wraps hang past the column's edge and are not drawn.
  const inlineOverflows = (node) => {
    const walker = document.createTreeWalker(node, NodeFilter.SHOW_TEXT);
    for (let text = walker.nextNode(); text; text = walker.nextNode()) {
      for (const word of text.textContent.matchAll(/\S+/g)) {
        const range = document.createRange();
        range.setStart(text, word.index);
        range.setEnd(text, word.index + word[0].length);
        for (const box of range.getClientRects()) {
          if (outside(box)) { return true; }
        }
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


#: Table cells with a word split over two lines (a column squeezed narrower than its longest word):
#: tables must fit the column without that. Code in a cell may break anywhere and is not counted.
SQUEEZED_TABLE_WORDS = r"""() => {
  const found = [];
  for (const cell of document.querySelectorAll('table td, table th')) {
    const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
    for (let text = walker.nextNode(); text; text = walker.nextNode()) {
      if (text.parentElement.closest('code, mjx-container')) { continue; }
      // A word may wrap after its hyphen or slash ("BERT-" / "base"): only the pieces between must stay whole.
      for (const match of text.textContent.matchAll(/[^\s\-\u2010\u2011\u2013\u2014\/]+/g)) {
        const range = document.createRange();
        range.setStart(text, match.index);
        range.setEnd(text, match.index + match[0].length);
        const tops = new Set(Array.from(range.getClientRects()).filter((r) => r.width > 0).map((r) => Math.round(r.top)));
        if (tops.size > 1) {
          const page = cell.closest('.print-page');
          found.push(`${page ? page.id : '?'}: "${match[0]}" in "${cell.textContent.trim().slice(0, 40)}"`);
        }
      }
    }
  }
  return found.slice(0, 30);
}"""

#: The text of every Python code block of the loaded document, as printed (one trailing newline dropped).
_PRINTED_CODE = """(selector) => Array.from(document.querySelectorAll(selector))
  .map((pre) => pre.textContent.replace(/\\n$/, ''))"""

#: After a first print: fill every page number (``.print-pageno[data-target]``) and handout range
#: (``.posenc-pages[data-doc]``) from ``numbers`` (target or doc -> text); returns how many were filled.
_FILL_PAGE_NUMBERS = """(numbers) => {
  let filled = 0;
  for (const node of document.querySelectorAll('.print-pageno[data-target], .posenc-pages[data-doc]')) {
    const key = node.dataset.target || node.dataset.doc;
    if (key in numbers) { node.textContent = numbers[key]; filled += 1; }
  }
  return filled;
}"""

#: The text of every heading the PDF's outline is made from (Chromium: every visible h1-h6, in
#: order), as make_pdf wrote it in ``data-outline`` (maths as text).
_OUTLINE_TITLES = """() => Array.from(document.querySelectorAll('h1, h2, h3, h4, h5, h6'))
  .filter((heading) => heading.getClientRects().length > 0)
  .map((heading) => heading.dataset.outline || heading.textContent.replace(/\\s+/g, ' ').trim())"""


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
    #: Words split over two lines inside a table cell (``SQUEEZED_TABLE_WORDS``), per document.
    squeezed_table_words: dict[str, list[str]] = field(default_factory=dict)
    #: Explorers printed as small multiples: id of the printed figure, its title and panel count.
    small_multiples: list[dict[str, Any]] = field(default_factory=list)
    #: Title of each entry of the list of figures, in order (as ``figure_ids``).
    figure_titles: list[str] = field(default_factory=list)
    #: Page (1-based) of every destination the contents and the list of figures number, as printed.
    page_numbers: dict[str, int] = field(default_factory=dict)
    #: Handout range of each page a ``posenc-pages`` span names (data-doc -> "pp. 23–41").
    handout_ranges: dict[str, str] = field(default_factory=dict)
    #: Prints of the book made until its page numbers settled (2: they did not move).
    prints: int = 0
    #: The bookmarks' titles were rewritten from the headings (maths as text).
    outline_titles: list[str] = field(default_factory=list)
    #: Every Python code block of the answer booklet as printed (after reflowing long lines), read
    #: from the page Chromium printed.
    answer_code: list[str] = field(default_factory=list)
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
    kept: dict[str, str] = {}  # key -> tag, in order
    for soup in pages:
        head = soup.head
        for node in head.find_all(["link", "script"]) if head else []:
            if node.name == "link" and "stylesheet" in (node.get("rel") or []):
                kept.setdefault(_asset_key(str(node.get("href") or "")) or str(node), str(node))
            elif node.name == "script":
                src = str(node.get("src") or "")
                text = node.string or ""
                # The theme's scripts (toggles, search, copy buttons) only change the screen page.
                if "mathjax" in src or "plotly" in src or text.strip().startswith("window.MathJax"):
                    kept.setdefault(_asset_key(src) or str(node), str(node))
    return "\n".join(kept.values())


def _asset_key(url: str) -> str:
    """One key per file, whatever its cache-busting query (``?v=...``): a page built at another time
    can name the same script with another query, and MathJax loaded twice never starts."""
    return urlsplit(url).path if url else ""


# -- code that stays valid Python on paper -----------------------------------------------
def reflow_code(source: str, columns: int = CODE_COLUMNS) -> str:
    """``source`` with every line longer than ``columns`` split into valid Python lines.

    A comment continues on new comment lines (a trailing comment moves above its code line); a
    long code line breaks after a comma or an opening bracket inside brackets, continuing 8
    columns deeper. The result must parse to the same syntax tree as ``source``; if it would not,
    or ``source`` does not parse (IPython magics), ``source`` is returned unchanged.
    """
    lines = source.split("\n")
    if all(len(line) <= columns for line in lines):
        return source
    try:
        tree = ast.dump(ast.parse(source))
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (SyntaxError, tokenize.TokenError, ValueError):
        return source
    on_line: dict[int, list[tuple[tokenize.TokenInfo, int]]] = {}
    inside_tokens: set[int] = set()
    depth = 0
    for token in tokens:
        if token.start[0] != token.end[0]:
            inside_tokens.update(range(token.start[0], token.end[0] + 1))
        on_line.setdefault(token.start[0], []).append((token, depth))
        if token.type == tokenize.OP and token.string in "([{":
            depth += 1
        elif token.type == tokenize.OP and token.string in ")]}":
            depth -= 1
    reflowed: list[str] = []
    for number, line in enumerate(lines, start=1):
        if len(line) <= columns or number in inside_tokens:
            reflowed.append(line)
        else:
            reflowed += _reflow_line(line, on_line.get(number, []), columns)
    result = "\n".join(reflowed)
    try:
        return result if ast.dump(ast.parse(result)) == tree else source
    except SyntaxError:
        return source


def _reflow_line(line: str, tokens: list[tuple[tokenize.TokenInfo, int]], columns: int) -> list[str]:
    indent = line[: len(line) - len(line.lstrip())]
    imported = re.fullmatch(r"(\s*from \S+ import )([^()#]+)", line)
    if imported:  # names imported without brackets: bracket them, then they may break after a comma
        names = [name.strip() for name in imported.group(2).split(",")]
        lines, current = [], imported.group(1) + "("
        for number, name in enumerate(names):
            piece = name + (", " if number < len(names) - 1 else ")")
            if len(current) + len(piece.rstrip()) > columns and current.strip():
                lines.append(current.rstrip())
                current = indent + " " * 4
            current += piece
        return lines + [current.rstrip()]
    comment = next((token for token, _ in tokens if token.type == tokenize.COMMENT), None)
    result: list[str] = []
    code = line
    if comment is not None:
        code = line[: comment.start[1]].rstrip()
        words = comment.string.lstrip("#").strip()
        width = max(20, columns - len(indent) - 2)
        result += [f"{indent}# {part}" for part in textwrap.wrap(words, width)] or [f"{indent}#"]
        if not code.strip():
            return result
        if len(code) <= columns:
            return result + [code]
    # Break points: after a comma or an opening bracket, inside brackets.
    breaks = [token.end[1] for (token, depth), _ in zip(tokens, tokens[1:], strict=False)
              if token.type == tokenize.OP and token.string in (",", "(", "[", "{") and depth + (token.string != ",") > 0
              and token.end[1] < len(code)]
    continuation = indent + " " * 8
    pieces, start = [], 0
    while len(code) - start + (len(continuation) if start else 0) > columns:
        room = columns - (len(continuation) if start else 0)
        fitting = [cut for cut in breaks if start < cut <= start + room]
        if not fitting:
            break
        pieces.append(code[start : fitting[-1]])
        start = fitting[-1]
    pieces.append(code[start:])
    result.append(pieces[0].rstrip())
    result += [continuation + piece.strip() for piece in pieces[1:]]
    return result


def _highlighted(source: str) -> str:
    """Python source as the site's highlighted HTML (pygments' classes, styled by pygments.css)."""
    from pygments import highlight
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import PythonLexer

    return str(highlight(source, PythonLexer(), HtmlFormatter(nowrap=True)))


#: The Python code blocks of a page (as myst-nb and Sphinx mark them).
PYTHON_BLOCKS = "div.highlight-ipython3 pre, div.highlight-python pre, div.highlight-python3 pre"


def reflow_code_blocks(root: BeautifulSoup | Tag, columns: int = CODE_COLUMNS, unwrapped_pt: float | None = None) -> list[str]:
    """Reflow (:func:`reflow_code`) every Python code block under ``root`` in place; returns every
    block's source as it will be printed.

    Args:
        columns: lines longer than this are reflowed.
        unwrapped_pt: for code printed without wrapping (the answer booklet), its font size: a block
            with a line that cannot be reflowed (a long string) is set smaller, so that line fits
            (down to ``MIN_CODE_PT``; anything longer still is caught by the overflow check).
    """
    sources = []
    for pre in root.select(PYTHON_BLOCKS):
        source = pre.get_text().rstrip("\n")
        reflowed = reflow_code(source, columns)
        if reflowed != source:
            pre.clear()
            # Parsed inside a <pre>: elsewhere BeautifulSoup collapses the whitespace between two tags
            # to one newline, and the next line loses its indentation.
            pre.extend(list(BeautifulSoup(f"<pre>{_highlighted(reflowed)}</pre>", "html.parser").pre.contents))
            printed = pre.get_text().rstrip("\n")
            if printed != reflowed:
                raise RuntimeError(f"a reflowed code block changed on its way into the page:\n{reflowed}\n---\n{printed}")
        longest = max(len(line) for line in reflowed.split("\n"))
        if unwrapped_pt is not None and longest > columns:
            pre["style"] = f"font-size: {max(MIN_CODE_PT, unwrapped_pt * columns / longest):.2f}pt"
        sources.append(reflowed)
    return sources


# -- one page into the combined document ------------------------------------------------
def _keeps_id(node: Tag) -> bool:
    """Ids their own scripts or drawings look up (plotly figures, explorer specs, the clip paths of a
    printed explorer's SVG): unique site-wide already."""
    value = str(node.get("id", ""))
    return (value.startswith("posenc-explorer-") or "plotly-graph-div" in (node.get("class") or [])
            or node.find_parent("svg") is not None)


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


def _figures(section: Tag) -> list[tuple[str, str]]:
    """(id, title) of each figure of a printed page, in order: plotly figures and explorers printed
    as small multiples. The title is the figure's ``data-title`` (posenc.plots.figure_title: its
    own title or subplot titles); a figure without one (an older build) gets the first sentence
    of its accessible name."""
    found = []
    for figure in section.select(".plotly-graph-div[id], figure.posenc-print-figure[id]"):
        holder = figure if figure.name == "figure" else figure.find_parent("figure")
        title = str(holder.get("data-title") or "") if holder else ""
        if not title:
            label_holder = figure.find_parent(attrs={"aria-label": True})
            label = re.sub(r"\s+", " ", str(label_holder["aria-label"])) if label_holder else "Figure"
            title = re.split(r"(?<=[a-z0-9)])\. ", label, maxsplit=1)[0].rstrip(".")
        found.append((str(figure["id"]), " ".join(title.split())))
    return found


#: TeX commands of the book's headings, as text (bookmarks are plain text).
_TEX_TEXT = {r"\sqrt": "√", r"\cdot": "·", r"\times": "×", r"\theta": "θ", r"\omega": "ω", r"\alpha": "α",
             r"\beta": "β", r"\lambda": "λ", r"\Delta": "Δ", r"\delta": "δ", r"\pi": "π", r"\top": "⊤",
             r"\leq": "≤", r"\geq": "≥", r"\le": "≤", r"\ge": "≥", r"\infty": "∞", r"\ell": "ℓ", r"\sum": "∑"}


def tex_to_text(tex: str) -> str:
    """A short TeX formula as plain text: ``d_\\text{model}`` -> ``d_model``, ``\\sqrt{d}`` -> ``√d``."""
    text = tex.strip()
    text = re.sub(r"\\(?:text|mathrm|mathit|mathbf|operatorname)\s*\{([^{}]*)\}", r"\1", text)
    for command in sorted(_TEX_TEXT, key=len, reverse=True):
        text = re.sub(re.escape(command) + r"(?![A-Za-z])", _TEX_TEXT[command], text)
    while re.search(r"\{[^{}]*\}", text):
        text = re.sub(r"\{([^{}]*)\}", r"\1", text)
    text = re.sub(r"\\[,;:! ]", " ", text).replace("\\", "")
    return " ".join(text.split())


def outline_text(heading: Tag) -> str:
    """A heading as its bookmark should read: its text with each formula (``span.math``) as text."""
    copy_of = copy.copy(heading)
    for math in copy_of.select("span.math"):
        tex = math.get_text()
        tex = re.sub(r"^\\\(|\\\)$", "", tex.strip())
        math.replace_with(tex_to_text(tex))
    for link in copy_of.select("a.headerlink"):
        link.decompose()
    return " ".join(copy_of.get_text().split())


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
        printed = explorer.select_one("figure.posenc-print-figure")
        if printed is not None:
            # Paper shows the small multiples: the interactive figure and its frames stay on the site.
            for node in explorer.select(":scope > figure.posenc-figure, :scope > script"):
                node.decompose()
            count = int(str(printed.get("data-panels") or 0))
            note.string = PAPER_NOTE.format(notebook=notebook, count=count, first="(a)",
                                            last=f"({chr(ord('a') + max(count, 1) - 1)})")
            # "bytes": what the print-only figure adds to the site's page (its page weight).
            report.small_multiples.append({"id": str(printed["id"]), "title": str(printed.get("data-title") or ""),
                                           "panels": count, "page": name,
                                           "grid": int(str(printed.get("data-grid") or count)),
                                           "bytes": len(str(printed).encode("utf-8"))})
        else:
            note.string = INTERACTIVE_NOTE.format(notebook=notebook)
        explorer.insert_after(note)
        report.explorers += 1
    report.figures += len(article.select(".plotly-graph-div, figure.posenc-print-figure"))
    for heading in article.find_all(["h1", "h2", "h3", "h4", "h5", "h6"]):
        heading["data-outline"] = outline_text(heading)
    for span in article.select(f"span.{HANDOUT_CLASS}"):
        span.string = RANGE_PLACEHOLDER
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


def _numbered_entry(soup: BeautifulSoup, target: str, content: list[Any]) -> Tag:
    """A line of the contents or the list of figures: a link to ``#target`` holding ``content``
    (strings or copies of nodes, formulas included), dots, and the target's page number, which the
    first print leaves as a placeholder (:func:`fill_page_numbers`)."""
    item = soup.new_tag("li")
    link = soup.new_tag("a", href=f"#{target}")
    entry = soup.new_tag("span", attrs={"class": "print-entry"})
    for node in content:
        entry.append(copy.copy(node) if isinstance(node, Tag) else NavigableString(str(node)))
    for node in entry.select("[id]"):
        del node["id"]
    dots = soup.new_tag("span", attrs={"class": "print-dots"})
    number = soup.new_tag("span", attrs={"class": "print-pageno", "data-target": target})
    number.string = PAGE_PLACEHOLDER
    link.extend([entry, dots, number])
    item.append(link)
    return item


def handout_docs(soup: BeautifulSoup | Tag) -> list[str]:
    """The ``data-doc`` of every handout range span (``HANDOUT_CLASS``) of a document, in order."""
    return [str(span.get("data-doc") or "") for span in soup.select(f"span.{HANDOUT_CLASS}")]


def page_ranges(openings: dict[str, int], order: list[str], last_page: int) -> dict[str, tuple[int, int]]:
    """First and last page (1-based) of each printed page of the site, from where each one opens.

    Args:
        openings: page stem -> the page its opening (``#page-<stem>``) was printed on.
        order: page stems in print order (each opens on a new page, so one ends where the next begins).
        last_page: the book's last page.
    """
    ranges = {}
    for index, name in enumerate(order):
        start = openings[name]
        end = openings[order[index + 1]] - 1 if index + 1 < len(order) else last_page
        ranges[name] = (start, max(start, end))
    return ranges


def range_text(first: int, last: int) -> str:
    """``(23, 41)`` -> ``"pp. 23–41"``; one page -> ``"p. 23"``."""
    return f"p. {first}" if first == last else f"pp. {first}\u2013{last}"


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
    heading["data-outline"] = "Title page"  # the book's first page has the title of the site's opening page too
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
        opening = section.find("h1")
        contents_list.append(_numbered_entry(body, f"page-{stem(page)}",
                                             list(opening.children) if opening is not None else [chapter]))
        for number, (figure_id, description) in enumerate(_figures(section), start=1):
            numbered = re.match(r"\d+\.", chapter)
            where = f"{numbered.group(0)}{number}" if numbered else f"{chapter}, figure {number}:"
            figures_list.append(_numbered_entry(body, figure_id, [f"{where} {description}"]))
            report.figure_ids.append(figure_id)
            report.figure_titles.append(description)
        body.append(section)
        if answers:
            answers_by_page.append((page, chapter, answers))
    if report.figure_ids:  # after the contents: a list of figures, each a link to its page
        contents.insert_after(figures)
    unknown = sorted({doc for doc in handout_docs(body) if f"{doc}.html" not in included})
    if unknown and not skip_missing:
        raise ValueError(f"<span class='{HANDOUT_CLASS}' data-doc=...> names pages that are not printed: {unknown}; "
                         f"data-doc is a page's file in _toc.yml, e.g. 'book/02_sinusoidal'")
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
    reflow_code_blocks(body)
    report.answer_code = reflow_code_blocks(booklet, ANSWER_CODE_COLUMNS, ANSWER_CODE_PT)
    # The booklet stands alone: its links into the book would lead nowhere.
    for link in booklet.find_all("a", href=True):
        if str(link["href"]).startswith("#") or not urlsplit(str(link["href"])).scheme:
            _unwrap_link(link)
    for node in booklet.find_all(id=True):
        if not _keeps_id(node):
            node["id"] = f"answers--{node['id']}"
    return _document(title, assets, str(body)), _document(f"{title}: worked solutions", assets, str(booklet)), report


# -- printing ----------------------------------------------------------------------------
def _open(context: Any, base_url: str, url: str, html: str) -> Any:
    """Load ``html`` at ``url`` (fulfilled from memory) and wait for maths and figures."""
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
    return page


def _pdf(page: Any, out: Path, title: str) -> None:
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


def destination_pages(path: Path) -> dict[str, int]:
    """Name -> page (1-based) of every named destination of the PDF at ``path``."""
    from pypdf import PdfReader

    reader = PdfReader(str(path))
    return {str(name).lstrip("/"): reader.get_destination_page_number(destination) + 1
            for name, destination in reader.named_destinations.items()}


def page_number_texts(pages: dict[str, int], order: list[str], last_page: int, docs: list[str]) -> dict[str, str]:
    """What to fill in: each destination's page number, and each handout doc's page range."""
    texts = {name: str(number) for name, number in pages.items()}
    openings = {name: pages[f"page-{name}"] for name in order if f"page-{name}" in pages}
    ranges = page_ranges(openings, [name for name in order if name in openings], last_page)
    for doc in docs:
        name = Path(doc).name
        if name in ranges:
            texts[doc] = range_text(*ranges[name])
    return texts


def next_fill(history: list[tuple[dict[str, int], int]], settled: set[str]) -> tuple[dict[str, int], int]:
    """The page numbers to fill in before the next print, from what every print so far laid out
    (``history``: ``(destination pages, page count)`` per print, the draft first).

    Usually the last print's numbers. But Chromium can lay the same document out in two ways on
    alternate prints (a heading that fits at the foot of a page once, and moves to the next the
    next time). Then the layouts alternate and the numbers one print behind never match: when the
    last print repeats the one two before it, the next print will repeat the one before the last,
    so its numbers are the ones to fill in.
    """
    if not history:
        raise ValueError("history must hold at least the draft's pages")

    def same(a: tuple[dict[str, int], int], b: tuple[dict[str, int], int]) -> bool:
        return a[1] == b[1] and all(a[0].get(name) == b[0].get(name) for name in settled)

    if len(history) >= 3 and same(history[-1], history[-3]) and not same(history[-1], history[-2]):
        return history[-2]
    return history[-1]


def _print_book(page: Any, out: Path, title: str, order: list[str], report: PrintReport) -> None:
    """Print the book until its page numbers stay put: a first print with placeholders, then the
    numbers read from it filled in and printed again (and again, if a number moved a page)."""
    watched = [node for node in page.evaluate(
        "() => Array.from(document.querySelectorAll('.print-pageno[data-target]')).map((n) => n.dataset.target)")]
    docs = page.evaluate(
        f"() => Array.from(document.querySelectorAll('.{HANDOUT_CLASS}[data-doc]')).map((n) => n.dataset.doc)")
    settled = set(watched) | {f"page-{name}" for name in order}
    draft = out.with_name(out.stem + ".draft.pdf")
    _pdf(page, draft, title)
    pages, last_page = destination_pages(draft), page_count(draft)
    report.prints = 1
    history = [(pages, last_page)]  # what each print laid out, the draft first
    for _ in range(MAX_PRINTS):
        texts = page_number_texts(pages, order, last_page, docs)
        missing = [target for target in watched if target not in texts]
        if missing:
            raise RuntimeError(f"no destination in the printed PDF for {missing[:5]}")
        page.evaluate(_FILL_PAGE_NUMBERS, texts)
        _pdf(page, out, title)
        report.prints += 1
        again, last_again = destination_pages(out), page_count(out)
        # What the filled numbers point at: the numbered entries and each page's opening (other
        # destinations, cross-references, may shift by a page from one print to the next).
        moved = {name: (pages.get(name), again.get(name)) for name in sorted(settled)
                 if again.get(name) != pages.get(name)}
        if last_again == last_page and not moved:
            break
        history.append((again, last_again))
        pages, last_page = next_fill(history, settled)
    else:
        shown = ", ".join(f"{name} {before}->{after}" for name, (before, after) in list(moved.items())[:8])
        raise RuntimeError(f"page numbers still moved after {MAX_PRINTS} prints: {len(moved)} moved ({shown}); "
                           f"last page {last_page}")
    draft.unlink()
    report.page_numbers = {name: pages[name] for name in watched}
    report.handout_ranges = {doc: texts[doc] for doc in docs if doc in texts}


def rewrite_outline(path: Path, titles: list[str]) -> list[str]:
    """Give the PDF's bookmarks the headings' own text (``titles``, in document order, maths as
    text): Chromium names a bookmark by the heading's painted text, which leaves out a formula
    drawn by MathJax. Returns the titles written, or [] (file untouched) if the bookmarks are not
    one per heading."""
    from pypdf import PdfWriter
    from pypdf.generic import NameObject, TextStringObject

    writer = PdfWriter(clone_from=str(path))
    outlines = writer._root_object.get("/Outlines")
    items = []

    def walk(node: Any) -> None:
        child = node.get("/First")
        while child is not None:
            item = child.get_object()
            items.append(item)
            walk(item)
            child = item.get("/Next")

    if outlines is not None:
        walk(outlines.get_object())
    if len(items) != len(titles):
        print(f"warning: {len(items)} bookmarks for {len(titles)} headings: bookmarks left as printed", file=sys.stderr)
        return []
    for item, title in zip(items, titles, strict=True):
        item[NameObject("/Title")] = TextStringObject(title)
    with path.open("wb") as handle:
        writer.write(handle)
    return titles


def _check_page(page: Any) -> tuple[list[str], list[str], list[str]]:
    fitted = page.evaluate(_FIT_FIGURE_TEXT)
    return fitted, page.evaluate(_OVERFLOWING, COLUMN_PX), page.evaluate(SQUEEZED_TABLE_WORDS)


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
    order = [stem(page) for page in report.pages]
    with serve(site) as base_url, launch_browser() as browser:
        context = browser.new_context(viewport={"width": COLUMN_PX, "height": 1100}, service_workers="block")
        for name, url, html, path, heading in (
            ("book", BOOK_URL, book_html, book_pdf, title),
            ("answers", ANSWERS_URL, answers_html, answers_pdf, f"{title}: worked solutions"),
        ):
            begun = time.perf_counter()
            page = _open(context, base_url, url, html)
            checks = _check_page(page)
            report.fitted_figure_text[name], report.overflowing[name], report.squeezed_table_words[name] = checks
            if name == "book":
                _print_book(page, path, heading, order, report)
                report.outline_titles = rewrite_outline(path, page.evaluate(_OUTLINE_TITLES))
            else:
                # The code as the browser holds it, the text it prints (not the source make_pdf meant to print).
                report.answer_code = page.evaluate(_PRINTED_CODE, PYTHON_BLOCKS)
                _pdf(page, path, heading)
                rewrite_outline(path, page.evaluate(_OUTLINE_TITLES))
            page.close()
            report.seconds[name] = round(time.perf_counter() - begun, 1)
        context.close()
    report.book_pages, report.book_bytes = page_count(book_pdf), book_pdf.stat().st_size
    report.answers_pages, report.answers_bytes = page_count(answers_pdf), answers_pdf.stat().st_size
    report.seconds["total"] = round(time.perf_counter() - started, 1)
    (out / REPORT_FILE).write_text(json.dumps(asdict(report), indent=1) + "\n", encoding="utf-8")
    return report


# -- the README quotes the print -----------------------------------------------------------
def readme_block(report: PrintReport | dict[str, Any]) -> str:
    """The README's lines about the printed edition, from a print's report."""
    data = asdict(report) if isinstance(report, PrintReport) else report
    added = print_weight_by_page(data["small_multiples"])
    heaviest = max(added, key=lambda page: added[page], default="")
    return (
        f"{README_BEGIN}\n"
        f"Last `make pdf`: the book {data['book_pages']} pages, {data['book_bytes'] / 1e6:.1f} MB; the answer "
        f"booklet {data['answers_pages']} pages, {data['answers_bytes'] / 1e6:.1f} MB; "
        f"{data['explorers']} explorers printed as small multiples, {data['figures']} figures, "
        f"{data['solutions']} worked solutions; printed in {data['seconds']['total']:.0f} s "
        f"({data['prints']} prints of the book until its page numbers settled). The print-only small multiples "
        f"add at most {added.get(heaviest, 0) / 1e3:.0f} kB to a page of the site ({heaviest}). Appendix C's "
        f"timings are measured while the book builds, so another machine's print can run a page or two longer "
        f"or shorter.\n"
        f"{README_END}"
    )


def print_weight_by_page(small_multiples: list[dict[str, Any]]) -> dict[str, int]:
    """Page name -> bytes its print-only figures (small multiples) add to the site's HTML."""
    added: dict[str, int] = {}
    for printed in small_multiples:
        added[printed["page"]] = added.get(printed["page"], 0) + int(printed.get("bytes", 0))
    return added


def update_readme(report: PrintReport, readme: Path = ROOT / "README.md") -> bool:
    """Replace the README's block between ``README_BEGIN`` and ``README_END``; True if it changed."""
    text = readme.read_text(encoding="utf-8")
    pattern = re.compile(re.escape(README_BEGIN) + r".*?" + re.escape(README_END), flags=re.DOTALL)
    if not pattern.search(text):
        raise ValueError(f"{readme} has no block {README_BEGIN!r} ... {README_END!r} for make pdf to fill")
    updated = pattern.sub(lambda _: readme_block(report), text)
    if updated != text:
        readme.write_text(updated, encoding="utf-8")
    return updated != text


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
    parser.add_argument("--no-readme", action="store_true", help="leave README.md's figures of the print as they are")
    args = parser.parse_args(argv)
    site = args.site.resolve()
    if args.if_chromium and missing_chromium():
        print(f"no PDF made: {missing_chromium()}")
        return 0
    if not (site / "index.html").is_file():
        parser.error(f"--site {site}: no built site there (no index.html); run `make book` first")
    report = make_pdf(site, args.out.resolve(), keep_html=args.keep_html, skip_missing=args.skip_missing)
    if not args.skip_missing and not args.no_readme and update_readme(report):
        print("README.md: the printed edition's figures updated (commit them)")
    print(
        f"{args.out / BOOK_FILE}: {report.book_pages} pages, {report.book_bytes / 1e6:.1f} MB; "
        f"{args.out / ANSWERS_FILE}: {report.answers_pages} pages, {report.answers_bytes / 1e6:.1f} MB; "
        f"{report.explorers} explorers, {report.figures} figures, {report.solutions} solutions; "
        f"{report.seconds['total']:.0f} s"
    )
    for document, words in report.squeezed_table_words.items():
        if words:
            print(f"warning: {document}: {len(words)} word(s) split inside a table cell (a squeezed column):")
            print("\n".join(f"  {word}" for word in words))
    for document, elements in report.overflowing.items():
        if elements:
            print(f"warning: {document}: {len(elements)} element(s) wider than the column (the print shrinks to fit):")
            print("\n".join(f"  {element}" for element in elements))
    if report.unresolved_links:
        print(f"{len(report.unresolved_links)} link(s) to content left out of the print were unwrapped")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
