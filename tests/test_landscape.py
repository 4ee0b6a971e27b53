"""The landscape table of chapter 12: every row sourced from the bibliography, the date stated once."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pybtex.database
import pytest

from posenc.landscape import AS_OF, COLUMNS, NOT_READ, ModelRow, ROWS, rows_table

ROOT = Path(__file__).resolve().parents[1]
CHAPTER = ROOT / "book" / "12_what_ships_now.ipynb"


def test_every_row_has_sources_in_the_bibliography() -> None:
    known = set(pybtex.database.parse_file(str(ROOT / "book" / "references.bib")).entries)
    for row in ROWS:
        assert row.sources, row.model
        assert set(row.sources) <= known, (row.model, set(row.sources) - known)
        assert row.provenance.strip(), row.model


def test_the_table_has_every_column_and_one_citation_per_row() -> None:
    headers, cells = rows_table()
    assert headers == list(COLUMNS) and headers[-1] == "Source"
    assert len(cells) == len(ROWS) >= 20
    for row in cells:
        assert len(row) == len(COLUMNS) and all(cell.strip() for cell in row)
        assert re.fullmatch(r"\{cite:p\}`[\w,]+`", row[-1])
    assert len({row.model for row in ROWS}) == len(ROWS)


def test_the_date_is_stated_once_and_the_chapter_shows_it() -> None:
    assert re.fullmatch(r"(January|February|March|April|May|June|July|August|September|October|November|December) "
                        r"20\d\d", AS_OF)
    text = "".join("".join(cell["source"]) for cell in json.loads(CHAPTER.read_text())["cells"])
    assert "AS_OF" in text  # the chapter reads the date from posenc.landscape, it does not retype it
    assert "as of" in text.lower()


def test_unread_values_are_marked_not_guessed() -> None:
    assert any(NOT_READ in row.cells() for row in ROWS)


def test_a_row_without_a_source_is_refused() -> None:
    with pytest.raises(ValueError, match="at least one source"):
        ModelRow("X", "2026", "RoPE", "10,000", "none", "4K", "none", "1", (), "nowhere")
    with pytest.raises(ValueError, match="scaling is empty"):
        ModelRow("X", "2026", "RoPE", "10,000", " ", "4K", "none", "1", ("devlin2019bert",), "nowhere")


def test_the_table_renders_as_markdown_with_one_line_per_row() -> None:
    from posenc.landscape import markdown_table, provenance_markdown

    lines = markdown_table().splitlines()
    assert len(lines) == len(ROWS) + 2 and all(line.startswith("| ") or line.startswith("|---") for line in lines)
    assert all(line.count("|") == len(COLUMNS) + 1 for line in lines[2:])  # no cell holds a '|'
    assert len(provenance_markdown().splitlines()) == len(ROWS)


def test_the_chapter_renders_the_table_as_myst() -> None:
    # A Markdown output renders as CommonMark unless the cell asks for MyST: no pipe tables, no citations.
    cells = [cell for cell in json.loads(CHAPTER.read_text())["cells"] if cell["cell_type"] == "code"]
    shown = [cell for cell in cells if "".join(cell["source"]).startswith(("Markdown(markdown_table", "Markdown(\":::"))]
    assert len(shown) == 2
    assert all(cell["metadata"].get("mystnb", {}).get("markdown_format") == "myst" for cell in shown)
