"""The printed edition of ``make pdf`` (tools/make_pdf.py): one PDF of the book, and an answer booklet.

* one book PDF and one answer booklet, each a readable PDF of a sane number of pages;
* every page of ``_toc.yml`` was printed, and every title (its first heading in the sources,
  with its number for numbered chapters) is in the book's text;
* every chapter opening and every figure is a destination (contents, list of figures); each
  figure's page carries vector or raster drawing, and a few of them rendered (pypdfium2; PNGs
  in ``tests/artifacts/``) are not blank;
* the formulas were typeset (no TeX source in the text);
* every internal link annotation jumps to a destination that exists in the same PDF, and none
  points at the local server the pages were printed from;
* no character lies outside the left/right margins, nothing was wider than the column when it
  was printed, and the text was not shrunk to fit;
* worked solutions are in the booklet and not in the book; each explorer is printed as small
  multiples (4 to 6 labelled panels) with its note;
* the contents and the list of figures carry the right page numbers, figure titles are whole;
  bookmarks are single, clean (maths as text) and unique; the teacher's guide's handout ranges are
  the chapters' pages; no table column is narrower than a word; chapter 2's diverging table prints
  -1 and +1 as different greys; every code block of the answer booklet parses and is printed
  whole; the README quotes this print. Each of these checks is also fed a broken case.

The PDFs are made by ``make pdf`` from the built site; when they are missing or older than the
site, the first test here prints them (so ``make test`` prints them on one pytest worker while the
other runs other tests). ``$POSENC_PDF`` points at another output folder, which is read as it is.
Marked ``site`` and ``browser``: without Chromium the PDF cannot be printed and these tests skip
with the reason. The last test feeds the checks a cut-off page, a shrunk page, a blank page and a broken
link, to show they can fail.
"""

from __future__ import annotations

import json
import os
import re
import statistics
from pathlib import Path
from typing import Any

import pytest
from support.site import ARTIFACTS, RAW_MATH, missing_chromium, require_site, site_is_partial, toc_pages

from tools import make_pdf
from tools.toc import toc_entries, toc_source

ROOT = Path(__file__).resolve().parents[1]

pytestmark = [pytest.mark.site, pytest.mark.browser]

PDF_DIR = Path(os.environ.get("POSENC_PDF") or ROOT / "_build" / "pdf")
POINTS_PER_MM = 72 / 25.4
PAGES_RANGE = (80, 800)
ANSWER_PAGES_RANGE = (5, 200)
#: Characters this wide are stretched glyphs (MathJax's rules), drawn clipped: not text.
STRETCHED_GLYPH_PT = 100


@pytest.fixture(scope="module")
def report() -> dict[str, Any]:
    reason = missing_chromium()
    if reason:
        pytest.skip(f"the PDF is printed in Chromium: {reason}")
    site = require_site()
    path = PDF_DIR / make_pdf.REPORT_FILE
    names = (make_pdf.BOOK_FILE, make_pdf.ANSWERS_FILE, make_pdf.REPORT_FILE)
    if os.environ.get("POSENC_PDF"):
        missing = [name for name in names if not (PDF_DIR / name).is_file()]
        if missing:
            pytest.fail(f"POSENC_PDF={PDF_DIR} lacks {missing}", pytrace=False)
    elif any(not (PDF_DIR / name).is_file() for name in names) or (
            path.stat().st_mtime < (site / "index.html").stat().st_mtime):
        make_pdf.make_pdf(site, PDF_DIR, skip_missing=site_is_partial())  # what `make pdf` does
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def book(report: dict[str, Any]) -> Any:
    import pypdfium2

    return pypdfium2.PdfDocument(str(PDF_DIR / make_pdf.BOOK_FILE))


@pytest.fixture(scope="module")
def answers(report: dict[str, Any]) -> Any:
    import pypdfium2

    return pypdfium2.PdfDocument(str(PDF_DIR / make_pdf.ANSWERS_FILE))


def page_text(document: Any, index: int) -> str:
    text_page = document[index].get_textpage()
    return str(text_page.get_text_range())


def normalise(text: str) -> str:
    text = text.replace("\u2019", "'").replace("\u2018", "'").replace("\u201c", '"').replace("\u201d", '"')
    return re.sub(r"\s+", " ", text)


@pytest.fixture(scope="module")
def book_text(book: Any) -> list[str]:
    return [normalise(page_text(book, index)) for index in range(len(book))]


def named_destinations(path: Path) -> dict[str, int]:
    """Name -> 0-based page index of every named destination of the PDF at ``path``."""
    from pypdf import PdfReader

    reader = PdfReader(str(path))
    return {
        str(name).lstrip("/"): reader.get_destination_page_number(destination)
        for name, destination in reader.named_destinations.items()
    }


# -- checks (also run on broken PDFs at the end) -------------------------------------------
def margin_problems(document: Any, margin_pt: float, tolerance_pt: float = 1.0) -> list[str]:
    """Characters left of the left margin or right of the right margin, page by page."""
    problems = []
    for index in range(len(document)):
        page = document[index]
        width = page.get_width()
        text_page = page.get_textpage()
        count = text_page.count_chars()
        text = text_page.get_text_range(0, count) if count else ""
        outside = []
        for char in range(count):
            if char >= len(text) or text[char].isspace():
                continue
            left, _, right, _ = text_page.get_charbox(char)
            if right - left > STRETCHED_GLYPH_PT:
                continue
            if right > width - margin_pt + tolerance_pt or left < margin_pt - tolerance_pt:
                outside.append(f"{text[char]!r} at {left:.0f}-{right:.0f} pt")
        if outside:
            problems.append(f"page {index + 1} (width {width:.0f} pt): {len(outside)} character(s), e.g. {outside[:4]}")
    return problems


def ink(document: Any, index: int, save_as: str | None = None) -> tuple[float, float]:
    """(share of non-white pixels, share of coloured pixels) of a page rendered at 50 dpi."""
    import numpy as np

    bitmap = document[index].render(scale=50 / 72)
    if save_as:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        bitmap.to_pil().save(ARTIFACTS / save_as)
    pixels = bitmap.to_numpy()[..., :3].astype(int)
    non_white = float((pixels.min(axis=2) < 235).mean())
    coloured = float((pixels.max(axis=2) - pixels.min(axis=2) > 60).mean())
    return non_white, coloured


def drawing_objects(document: Any, index: int) -> int:
    """Vector paths and raster images on a page."""
    import pypdfium2.raw as raw

    return sum(1 for obj in document[index].get_objects() if obj.type in (raw.FPDF_PAGEOBJ_PATH, raw.FPDF_PAGEOBJ_IMAGE))


def link_problems(path: Path) -> tuple[int, list[str]]:
    """(internal links, problems): a link annotation whose destination is not in the PDF, or
    that leaves the PDF for the local server or a file."""
    from pypdf import PdfReader
    from pypdf.generic import ArrayObject, NameObject, TextStringObject

    reader = PdfReader(str(path))
    names = {str(name).lstrip("/") for name in reader.named_destinations}
    pages = {page.indirect_reference.idnum for page in reader.pages if page.indirect_reference is not None}
    internal, problems = 0, []
    for number, page in enumerate(reader.pages, start=1):
        for annotation in page.get("/Annots") or []:
            link = annotation.get_object()
            if link.get("/Subtype") != "/Link":
                continue
            action = link.get("/A")
            destination = link.get("/Dest")
            if action is not None and action.get("/S") == "/URI":
                uri = str(action.get("/URI"))
                if re.match(r"(https?://(127\.0\.0\.1|localhost)|file:)", uri):
                    problems.append(f"page {number}: link to {uri} (the local copy, not a place in the PDF)")
                continue
            if action is not None and action.get("/S") == "/GoTo":
                destination = action.get("/D")
            if destination is None:
                problems.append(f"page {number}: link annotation without a destination: {dict(link)}")
                continue
            internal += 1
            if isinstance(destination, (NameObject, TextStringObject, str)):
                if str(destination).lstrip("/") not in names:
                    problems.append(f"page {number}: link to {destination!s}, which is not a destination of the PDF")
            elif isinstance(destination, ArrayObject):
                target = destination[0]
                if getattr(target, "idnum", None) not in pages:
                    problems.append(f"page {number}: link to {destination!r}, not a page of the PDF")
            else:
                problems.append(f"page {number}: link with an unreadable destination {destination!r}")
    return internal, problems


# -- the printed book -------------------------------------------------------------------------
def test_one_book_and_one_answer_booklet(report: dict[str, Any]) -> None:
    from pypdf import PdfReader

    book_pages = len(PdfReader(str(PDF_DIR / make_pdf.BOOK_FILE)).pages)
    answer_pages = len(PdfReader(str(PDF_DIR / make_pdf.ANSWERS_FILE)).pages)
    assert PAGES_RANGE[0] <= book_pages <= PAGES_RANGE[1], f"the book has {book_pages} pages"
    assert ANSWER_PAGES_RANGE[0] <= answer_pages <= ANSWER_PAGES_RANGE[1], f"the booklet has {answer_pages} pages"
    assert (PDF_DIR / make_pdf.BOOK_FILE).stat().st_size < 80e6
    assert sorted(path.name for path in PDF_DIR.glob("*.pdf")) == sorted([make_pdf.BOOK_FILE, make_pdf.ANSWERS_FILE])
    expected = [page for page in toc_pages() if page.startswith("book/")]
    if not site_is_partial():
        assert report["pages"] == expected, "the PDF does not hold every page of _toc.yml, in order"


def toc_titles() -> list[tuple[str, str]]:
    """(page stem, printed title) of every page of ``_toc.yml``, read from the sources: the first
    ``# `` heading, with the chapter number for pages in numbered parts."""
    number = 0
    titles = []
    for entry in toc_entries():
        file, numbered = entry.file, entry.numbered
        path = toc_source(file)
        if path.suffix == ".ipynb":
            cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
            text = "\n".join("".join(cell["source"]) for cell in cells if cell["cell_type"] == "markdown")
        else:
            text = path.read_text(encoding="utf-8")
        heading = re.search(r"^# (.+)$", text, flags=re.MULTILINE)
        assert heading, f"{path}: no '# ' title"
        title = re.sub(r"[*_`]", "", heading.group(1)).strip()
        if numbered:
            number += 1
            title = f"{number}. {title}"
        titles.append((Path(file).name, normalise(title)))
    return titles


def test_every_title_of_the_toc_is_in_the_book(report: dict[str, Any], book_text: list[str]) -> None:
    text = " ".join(book_text)
    printed = {Path(page).stem for page in report["pages"]}
    missing = [title for name, title in toc_titles() if name in printed and title not in text]
    assert not missing, f"titles not found in the PDF's text: {missing}"


def test_formulas_are_typeset(book_text: list[str]) -> None:
    """MathJax finished before the print: no TeX source is left, and its symbols are there."""
    raw = [(index + 1, match.group(0)) for index, text in enumerate(book_text) for match in RAW_MATH.finditer(text)]
    assert not raw, f"TeX source in the PDF's text (page, text): {raw[:10]}"
    text = " ".join(book_text)
    for symbol in ("\u221a", "\u22a4", "\u03c9"):  # square root, transpose, omega
        assert symbol in text, f"no {symbol!r} in the PDF's text: were the formulas typeset?"


def test_chapter_openings_and_figures_are_drawn(report: dict[str, Any], book: Any) -> None:
    """Every chapter opening and every figure is a destination (the contents and the list of
    figures link to them); each figure's page carries vector or raster drawing, and a few
    figure pages and chapter openings, rendered, are not blank."""
    destinations = named_destinations(PDF_DIR / make_pdf.BOOK_FILE)
    openings = {Path(page).stem: destinations.get(f"page-{Path(page).stem}") for page in report["pages"]}
    assert None not in openings.values(), f"chapters without a destination at their opening: {openings}"
    assert report["figures"] > 0 and len(report["figure_ids"]) == report["figures"]
    figure_pages = {figure: destinations.get(figure) for figure in report["figure_ids"]}
    assert None not in figure_pages.values(), f"figures that are not destinations: {figure_pages}"
    undrawn = [(figure, index + 1) for figure, index in figure_pages.items() if drawing_objects(book, index) < 20]
    assert not undrawn, f"figure pages with (almost) no vector or raster drawing (figure, page): {undrawn}"
    pages = sorted(set(figure_pages.values()))
    for index in pages[:: max(1, len(pages) // 5)]:
        non_white, coloured = ink(book, index, save_as=f"pdf-page-{index + 1}.png")
        assert non_white > 0.03 and coloured > 0.002, (
            f"page {index + 1} with a figure looks blank: {non_white:.1%} ink, {coloured:.2%} colour"
        )
    for name in ("02_sinusoidal", "07_beyond_trained_length"):
        if name in openings:
            non_white, _ = ink(book, openings[name], save_as=f"pdf-opening-{name}.png")
            assert non_white > 0.01, f"the opening page of {name} is blank ({non_white:.2%} ink)"


def test_every_explorer_appears_as_small_multiples(report: dict[str, Any], book: Any, book_text: list[str]) -> None:
    """Each explorer of the site is printed as 4 to 6 labelled panels (posenc.paper), a destination of
    the list of figures, with its note; none is printed at a single default setting."""
    site = require_site()
    on_site = sum((site / page).read_text(encoding="utf-8").count('class="posenc-explorer"') for page in report["pages"])
    assert report["explorers"] == on_site == len(report["small_multiples"])
    destinations = named_destinations(PDF_DIR / make_pdf.BOOK_FILE)
    problems = []
    for printed in report["small_multiples"]:
        if not min(4, printed.get("grid", 4)) <= printed["panels"] <= 6:
            problems.append(f"{printed['id']}: {printed['panels']} panels")
        index = destinations.get(printed["id"])
        if index is None:
            problems.append(f"{printed['id']}: not a destination of the PDF")
            continue
        text = book_text[index] + (book_text[index + 1] if index + 1 < len(book_text) else "")
        letters = [f"({chr(ord('a') + n)})" for n in range(printed["panels"])]
        missing = [letter for letter in letters if letter not in text]
        if missing or drawing_objects(book, index) < 20:
            problems.append(f"{printed['id']} (page {index + 1}): panels {missing} not found, or no drawing")
    assert not problems, "\n".join(problems)
    text = " ".join(book_text)
    assert "Printed here at its default setting" not in text
    assert text.count("of its settings, (a) to") == on_site


def test_internal_links_resolve(report: dict[str, Any]) -> None:
    internal, problems = link_problems(PDF_DIR / make_pdf.BOOK_FILE)
    assert not problems, "\n".join(problems[:20])
    assert internal >= 100, f"only {internal} internal links: cross-references were not turned into PDF links"
    _, problems = link_problems(PDF_DIR / make_pdf.ANSWERS_FILE)
    assert not problems, "\n".join(problems[:20])


def test_no_text_outside_the_margins(report: dict[str, Any], book: Any, answers: Any) -> None:
    assert report["overflowing"] == {"book": [], "answers": []}, f"wider than the column: {report['overflowing']}"
    margin = make_pdf.MARGIN_MM["left"] * POINTS_PER_MM
    assert make_pdf.MARGIN_MM["left"] == make_pdf.MARGIN_MM["right"]
    for document in (book, answers):
        problems = margin_problems(document, margin)
        assert not problems, "\n".join(problems[:20])


def capital_heights(document: Any, font_px: float, pages: int = 12) -> list[float]:
    """Heights (pt, on the page) of the capitals E, H, I, T set at ``font_px`` CSS pixels: the
    size the PDF records for a glyph is before any scaling, its box on the page is after."""
    import pypdfium2.raw as raw

    heights = []
    for index in range(0, len(document), max(1, len(document) // pages)):
        text_page = document[index].get_textpage()
        count = text_page.count_chars()
        text = text_page.get_text_range(0, count) if count else ""
        for char, letter in enumerate(text[:count]):
            if letter in "EHIT" and abs(raw.FPDFText_GetFontSize(text_page, char) - font_px) < 0.05:
                _, bottom, _, top = text_page.get_charbox(char)
                heights.append(top - bottom)
    return heights


def test_text_was_not_shrunk_to_fit(book: Any) -> None:
    """Chromium shrinks the whole print when something is wider than the column: body capitals
    then come out smaller than their size says (a capital is about 0.73 em high)."""
    heights = capital_heights(book, make_pdf.BODY_PT * 96 / 72)
    assert len(heights) > 50, f"only {len(heights)} capitals of body text found"
    median = statistics.median(heights)
    assert median >= 0.70 * make_pdf.BODY_PT, f"median capital height {median:.2f} pt for {make_pdf.BODY_PT} pt text"


def test_solutions_only_in_the_booklet(report: dict[str, Any], book_text: list[str], answers: Any) -> None:
    assert report["solutions"] > 0
    assert not any("Solution to Exercise" in text for text in book_text), "a worked solution is printed in the book"
    booklet = " ".join(normalise(page_text(answers, index)) for index in range(len(answers)))
    assert booklet.count("Solution to Exercise") == report["solutions"]


# -- the checks can fail ------------------------------------------------------------------------
def _one_page(source: Path, index: int, tmp_path: Path, name: str) -> Path:
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter()
    writer.add_page(PdfReader(str(source)).pages[index])
    path = tmp_path / name
    writer.write(str(path))
    return path


def test_checks_catch_a_cut_off_page_a_blank_page_and_a_broken_link(report: dict[str, Any], tmp_path: Path) -> None:
    import pypdfium2
    from pypdf import PdfReader, PdfWriter, Transformation
    from pypdf.annotations import Link
    from pypdf.generic import NameObject

    source = PDF_DIR / make_pdf.BOOK_FILE
    # The opening page of the first chapter: body text, a heading, a list.
    text_page = named_destinations(source)[f"page-{Path(report['pages'][1]).stem}"]
    margin = make_pdf.MARGIN_MM["left"] * POINTS_PER_MM
    # A page whose text runs 120 pt to the right: the margin check reports it.
    shifted = PdfWriter(clone_from=_one_page(source, text_page, tmp_path, "page.pdf"))
    shifted.pages[0].add_transformation(Transformation().translate(tx=120))
    shifted.write(str(tmp_path / "cut.pdf"))
    assert margin_problems(pypdfium2.PdfDocument(str(tmp_path / "cut.pdf")), margin)
    assert not margin_problems(pypdfium2.PdfDocument(str(tmp_path / "page.pdf")), margin)
    # The same page shrunk by 10 %, as Chromium shrinks a print that does not fit: caught.
    body_px = make_pdf.BODY_PT * 96 / 72
    scaled = PdfWriter(clone_from=tmp_path / "page.pdf")
    scaled.pages[0].add_transformation(Transformation().scale(0.9, 0.9))
    scaled.write(str(tmp_path / "shrunk.pdf"))
    normal = statistics.median(capital_heights(pypdfium2.PdfDocument(str(tmp_path / "page.pdf")), body_px))
    shrunk = statistics.median(capital_heights(pypdfium2.PdfDocument(str(tmp_path / "shrunk.pdf")), body_px))
    assert normal >= 0.70 * make_pdf.BODY_PT > shrunk
    # A blank page: no ink.
    blank = PdfWriter()
    blank.add_blank_page(width=595, height=842)
    blank.write(str(tmp_path / "blank.pdf"))
    blank_doc = pypdfium2.PdfDocument(str(tmp_path / "blank.pdf"))
    assert ink(blank_doc, 0) == (0.0, 0.0) and drawing_objects(blank_doc, 0) == 0
    # A link to a destination that does not exist.
    broken = PdfWriter()
    broken.add_blank_page(width=595, height=842)
    broken.add_annotation(0, Link(rect=(50, 50, 200, 80), target_page_index=0))
    broken.pages[0]["/Annots"][0].get_object()[NameObject("/Dest")] = NameObject("/no-such-place")
    broken.write(str(tmp_path / "broken.pdf"))
    internal, problems = link_problems(tmp_path / "broken.pdf")
    assert internal == 1 and problems and "no-such-place" in problems[0]


# -- navigation: page numbers, bookmarks, handout ranges ------------------------------------------------
def page_number_problems(text: str, entries: list[tuple[str, int]]) -> list[str]:
    """Entries ``(label, page)`` of the contents and the list of figures, in order, each followed in
    ``text`` (the front matter) by its page number."""
    problems, cursor = [], max(0, text.find("Contents"))
    for label, page in entries:
        key = normalise(label).strip()
        found = text.find(key, cursor)
        if found < 0:
            problems.append(f"{label!r}: not in the contents")
            continue
        number = re.search(r"(?<![\d.])(\d+)(?![\d.])", text[found + len(key):])
        if number is None or int(number.group(1)) != page:
            problems.append(f"{label!r}: page {number.group(1) if number else 'none'} printed, it is on page {page}")
        cursor = found + len(key)
    return problems


def front_matter(book_text: list[str], report: dict[str, Any]) -> str:
    first_chapter = named_destinations(PDF_DIR / make_pdf.BOOK_FILE)[f"page-{Path(report['pages'][0]).stem}"]
    return " ".join(book_text[:first_chapter])


def test_the_numbers_filled_in_follow_a_layout_that_alternates() -> None:
    """Chromium may lay the same document out two ways on alternate prints: then the numbers to
    fill in are those of the print before the last, the layout the next print repeats."""
    a, b = ({"page-07": 111}, 326), ({"page-07": 110}, 325)
    settled = {"page-07"}
    assert make_pdf.next_fill([a], settled) == a
    assert make_pdf.next_fill([a, b], settled) == b  # one print behind: follow the last print
    assert make_pdf.next_fill([a, b, a], settled) == b  # a, b, a: the next print lays out b
    assert make_pdf.next_fill([a, b, b], settled) == b
    with pytest.raises(ValueError, match="history must hold"):
        make_pdf.next_fill([], settled)


def test_a_script_named_with_two_cache_queries_is_loaded_once() -> None:
    # An incrementally built site can hold pages of two builds, naming MathJax with and without
    # Sphinx's ?v= query; loaded twice, MathJax never finishes starting and the print waits forever.
    from bs4 import BeautifulSoup

    pages = [BeautifulSoup(f'<html><head><script defer src="../_static/vendor/mathjax/tex-chtml.js{query}"></script>'
                           f'<link rel="stylesheet" href="../_static/posenc.css{query}"></head></html>', "html.parser")
             for query in ("?v=f4737972", "")]
    assets = make_pdf._head_assets(pages)
    assert assets.count("tex-chtml.js") == 1 and assets.count("posenc.css") == 1
    assert "?v=f4737972" in assets  # the first page's tag, as it was


def test_contents_and_figures_carry_their_page_numbers(report: dict[str, Any], book_text: list[str]) -> None:
    destinations = named_destinations(PDF_DIR / make_pdf.BOOK_FILE)
    targets = [f"page-{Path(page).stem}" for page in report["pages"]] + report["figure_ids"]
    assert report["prints"] >= 2, "printed once: page numbers are read from a first print"
    for target in targets:
        assert report["page_numbers"][target] == destinations[target] + 1, f"{target}: the number is not its page"
    entries = [(title, destinations[target] + 1) for title, target in zip(
        report["chapter_titles"] + report["figure_titles"], targets, strict=True)]
    problems = page_number_problems(front_matter(book_text, report), entries)
    assert not problems, "\n".join(problems[:20])
    assert all(title and "…" not in title for title in report["figure_titles"]), "truncated figure titles"


def outline(path: Path) -> list[str]:
    from pypdf import PdfReader

    titles: list[str] = []

    def walk(items: list[Any]) -> None:
        for item in items:
            if isinstance(item, list):
                walk(item)
            else:
                titles.append(str(item.title))

    walk(PdfReader(str(path)).outline)
    return titles


def bookmark_problems(titles: list[str]) -> list[str]:
    """Doubled titles ("1. 1. Why order mattersWhy order matters"), lost formulas ("2.8. An odd "),
    empty or repeated titles."""
    problems = []
    for title in titles:
        if not title.strip() or title != title.strip():
            problems.append(f"{title!r}: empty, or space at an end (a formula left out?)")
        if re.fullmatch(r"(.+)\1", title.replace(" ", "")) or re.match(r"(\d+\.)\s+\1", title):
            problems.append(f"{title!r}: doubled")
    repeated = sorted({title for title in titles if titles.count(title) > 1})
    problems += [f"{title!r}: {titles.count(title)} bookmarks" for title in repeated]
    return problems


def test_bookmarks_are_single_clean_and_unique(report: dict[str, Any]) -> None:
    titles = outline(PDF_DIR / make_pdf.BOOK_FILE)
    assert len(titles) > 50
    problems = bookmark_problems(titles)
    assert not problems, "\n".join(problems[:20])
    assert any(re.fullmatch(r"2\.\d+\. An odd d_model", title) for title in titles), "a heading's formula is lost"
    assert bookmark_problems(["1. 1. Why order mattersWhy order matters", "2.8. An odd ", "Summary", "Summary"])


def test_handout_ranges_are_the_pages_of_the_print(report: dict[str, Any], book_text: list[str]) -> None:
    assert make_pdf.range_text(23, 41) == "pp. 23\u201341" and make_pdf.range_text(7, 7) == "p. 7"
    assert make_pdf.page_ranges({"a": 3, "b": 9, "c": 10}, ["a", "b", "c"], 12) == {
        "a": (3, 8), "b": (9, 9), "c": (10, 12)}
    destinations = named_destinations(PDF_DIR / make_pdf.BOOK_FILE)
    order = [Path(page).stem for page in report["pages"]]
    ranges = make_pdf.page_ranges({name: destinations[f"page-{name}"] + 1 for name in order}, order, len(book_text))
    assert report["handout_ranges"], "no <span class='posenc-pages'> in the printed book (the teacher's guide has one)"
    text = " ".join(book_text)
    for doc, printed in report["handout_ranges"].items():
        assert printed == make_pdf.range_text(*ranges[Path(doc).name])
        assert normalise(printed) in text
    assert make_pdf.RANGE_PLACEHOLDER not in text


# -- tables, grey print, answers, README -------------------------------------------------------------
def test_every_table_fits_the_page(report: dict[str, Any]) -> None:
    """No column narrower than its longest word (chapter 11's landscape table read 2-4 characters a
    line), and nothing wider than the column (test_no_text_outside_the_margins)."""
    assert report["squeezed_table_words"] == {"book": [], "answers": []}, report["squeezed_table_words"]
    from tools.browser import launch_browser

    squeezed = ("<table style='width:120px'><tr><td style='overflow-wrap:anywhere'>landscape</td>"
                "<td>a long cell of several words</td></tr></table>")
    with launch_browser() as browser:
        page = browser.new_page()
        page.set_content(squeezed)
        assert page.evaluate(make_pdf.SQUEEZED_TABLE_WORDS), "a word split over two lines was not caught"
        page.set_content(squeezed.replace("overflow-wrap:anywhere", "overflow-wrap:normal"))
        assert not page.evaluate(make_pdf.SQUEEZED_TABLE_WORDS)


def sign_greys(document: Any, index: int, negative: str, positive: str) -> tuple[float, float, int]:
    """Grey levels (0-255) at which a page prints the colours of -1 and +1 of a diverging scale: the
    page rendered in colour locates them, the same page rendered in grey reads them."""
    import numpy as np

    # rev_byteorder: RGB (pdfium renders BGR by default, which would look for the wrong colours).
    colour = document[index].render(scale=2, rev_byteorder=True).to_numpy()[..., :3].astype(int)
    grey = document[index].render(scale=2, grayscale=True).to_numpy()
    grey = grey[..., 0] if grey.ndim == 3 else grey
    levels, counts = [], []
    for hex_colour in (negative, positive):
        target = np.array([int(hex_colour[i : i + 2], 16) for i in (1, 3, 5)])
        near = np.abs(colour - target).max(axis=2) <= 24
        counts.append(int(near.sum()))
        levels.append(float(grey[near].mean()) if near.any() else float("nan"))
    return levels[0], levels[1], min(counts)


#: Grey levels (0-255) a +1 cell must print lighter than a -1 cell by, and the pixels of each a page must show.
SIGN_GREY_GAP, SIGN_PIXELS = 80, 100


def sign_problem(minus: float, plus: float, pixels: int) -> str | None:
    """Why a page's -1 and +1 (grey levels ``minus``, ``plus``, the rarer seen at ``pixels`` pixels)
    do not tell the sign apart in grey, or None."""
    if pixels < SIGN_PIXELS:
        return f"too few pixels of the scale's ends ({pixels})"
    if not plus - minus > SIGN_GREY_GAP:
        return f"-1 prints at grey {minus:.0f}, +1 at {plus:.0f}"
    return None


def test_a_diverging_figure_keeps_its_sign_in_grey(report: dict[str, Any], book: Any, tmp_path: Path) -> None:
    """Chapter 2's table, printed in grey: its -1 and +1 cells are far apart in grey (with the old
    red-white-blue scale they were the same grey, as the broken case below shows)."""
    from posenc.palette import DIVERGING_STOPS

    negative, positive = DIVERGING_STOPS[0][1], DIVERGING_STOPS[-1][1]
    table = next(p for p in report["small_multiples"] if p["page"] == "02_sinusoidal")
    first = named_destinations(PDF_DIR / make_pdf.BOOK_FILE)[table["id"]]
    index = max((first, first + 1), key=lambda i: sign_greys(book, i, negative, positive)[2])
    minus, plus, pixels = sign_greys(book, index, negative, positive)
    ink(book, index, save_as="pdf-grey-sign-page.png")
    problem = sign_problem(minus, plus, pixels)
    assert problem is None, f"page {index + 1}: {problem}"
    # The check can fail: the old red-white-blue scale's ends, drawn side by side and found at their
    # colours, print as nearly one grey; and a page without the scale's colours is no evidence.
    import pypdfium2
    from matplotlib.figure import Figure

    def two_cells(negative_colour: str, positive_colour: str) -> tuple[float, float, int]:
        figure = Figure(figsize=(3, 1))
        figure.add_axes((0, 0, 0.5, 1)).set_facecolor(negative_colour)
        figure.add_axes((0.5, 0, 0.5, 1)).set_facecolor(positive_colour)
        figure.savefig(tmp_path / "cells.pdf")
        return sign_greys(pypdfium2.PdfDocument(str(tmp_path / "cells.pdf")), 0, negative_colour, positive_colour)

    minus, plus, pixels = two_cells("#053061", "#67001F")
    assert pixels > SIGN_PIXELS and abs(plus - minus) < 20 and sign_problem(minus, plus, pixels)
    assert sign_problem(*two_cells(negative, positive)) is None  # the book's scale, on its own
    assert sign_problem(*sign_greys(pypdfium2.PdfDocument(str(tmp_path / "cells.pdf")), 0, "#123456", "#654321"))


def code_problems(blocks: list[str], text: str) -> list[str]:
    """Code blocks that do not parse as Python, or whose lines are not lines of ``text`` (a line the
    print wrapped reads as two lines there)."""
    import ast

    lines = {normalise(line).strip() for line in text.splitlines()}
    problems = []
    for number, block in enumerate(blocks):
        source = "\n".join("pass" if line.lstrip().startswith(("%", "!")) else line for line in block.splitlines())
        try:
            ast.parse(source)
        except SyntaxError as error:
            problems.append(f"block {number}: {error}")
        missing = [line for line in block.splitlines() if line.strip() and normalise(line).strip() not in lines]
        if missing:
            problems.append(f"block {number}: lines not printed whole: {missing[:2]}")
    return problems


def test_every_answer_code_block_parses_and_is_printed_whole(report: dict[str, Any], answers: Any) -> None:
    text = "\n".join(page_text(answers, index) for index in range(len(answers)))
    assert len(report["answer_code"]) >= report["solutions"] // 2
    problems = code_problems(report["answer_code"], text)
    assert not problems, "\n".join(problems[:10])
    wrapped = "x = compute(alpha, beta)  # a long comment\nthat wrapped onto a line of its own"
    assert code_problems([wrapped], wrapped)
    unindented = "for k in (1, 2):\nx = k"  # a loop's body that lost its indentation on the way to the page
    assert code_problems([unindented], unindented)
    assert code_problems(["y = 1"], "y =\n1")


PAGES_TIMINGS_MAY_MOVE = 2


def test_readme_quotes_this_print(report: dict[str, Any]) -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = readme[readme.index(make_pdf.README_BEGIN): readme.index(make_pdf.README_END)]
    match = re.search(r"the book (\d+) pages, ([\d.]+) MB; the answer booklet (\d+) pages", block)
    assert match, "README.md: the block make pdf writes is missing or empty: run `make pdf` and commit README.md"
    # Appendix C and chapters 5-7 print timings measured while the book builds (a verdict such as "faster in
    # some rounds and slower in others" is longer than "faster in every round"), so the same sources can
    # reflow onto a page more or fewer on a loaded machine; a page or two is that, more is another book.
    pages_apart = abs(int(match.group(1)) - report["book_pages"])
    assert pages_apart <= PAGES_TIMINGS_MAY_MOVE, (
        f"README.md quotes a print of {match.group(1)} pages, this one has {report['book_pages']}: run `make pdf`")
    assert abs(float(match.group(2)) - report["book_bytes"] / 1e6) <= 0.25
    assert int(match.group(3)) == report["answers_pages"]
    added = make_pdf.print_weight_by_page(report["small_multiples"])
    assert all(entry["bytes"] > 1000 for entry in report["small_multiples"]), "a printed explorer without its figure"
    weight = re.search(r"add at most (\d+) kB to a page of the site \((\w+)\)", block)
    assert weight, "README.md: the page weight of the printed explorers is missing: run `make pdf`"
    assert (int(weight.group(1)), weight.group(2)) == (round(max(added.values()) / 1e3), max(added, key=added.__getitem__))
