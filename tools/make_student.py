"""Student copies of the chapter notebooks: worked solutions out, a stub per exercise (``make student``).

Writes ``_build/student/<name>.ipynb`` for every chapter notebook (``book/[0-9][0-9]_*.ipynb``) and
every appendix notebook that has exercises. The transformation is an nbconvert ``Preprocessor``
(:class:`StripSolutions`) run by nbconvert's ``NotebookExporter``:

* a gated solution (a ``{solution-start} ex-...`` directive, the cells after it, and its
  ``{solution-end}``) is removed, markers included; a one-block ``{solution} ex-...`` directive
  too. The markers often share a markdown cell with other text (the end of one solution, the
  next exercise, the start of its solution): only the marker and the solution's text are cut
  out of such a cell, the rest of it stays;
* where each solution was, a code cell tagged ``exercise-stub`` asks for the student's answer;
  it runs (``pass``) and prints nothing, so the notebook still runs top to bottom;
* everything else is unchanged, and the output is byte-for-byte the same on every run.

The student notebooks import ``posenc`` (installed in the project's venv) and read the book's
stored results through ``posenc.book.data_path``, which does not depend on the notebook's folder.

Usage::

    .venv/bin/python -m tools.make_student [--out _build/student] [notebook.ipynb ...]
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import nbformat
from nbconvert.exporters import NotebookExporter
from nbconvert.preprocessors import Preprocessor

ROOT = Path(__file__).resolve().parents[1]
BOOK = ROOT / "book"
STUB_TAG = "exercise-stub"

# A directive opens with a fence of 3+ backticks or colons followed by {name} (as in
# tests/test_exercises.py, which checks that every exercise has a solution).
_FENCE = r"^[ \t]*(?P<fence>`{3,}|:{3,})[ \t]*"
EXERCISE = re.compile(_FENCE + r"\{exercise(?:-start)?\}(?P<title>[^\n]*)$", re.MULTILINE)
SOLUTION = re.compile(_FENCE + r"\{solution\}[ \t]*(?P<target>\S*)[^\n]*$", re.MULTILINE)
SOLUTION_START = re.compile(_FENCE + r"\{solution-start\}[ \t]*(?P<target>\S*)[^\n]*$", re.MULTILINE)
SOLUTION_END = re.compile(_FENCE + r"\{solution-end\}[^\n]*$", re.MULTILINE)
LABEL = re.compile(r"^[ \t]*:label:[ \t]*(?P<label>\S+)", re.MULTILINE)

STUB = """\
# Exercise {label}{title}
# Your solution here: replace `pass` with your code.
pass
"""


def directive_end(text: str, match: re.Match[str]) -> int:
    """Where the directive block opened by ``match`` ends: just after the line that closes its
    fence (the same character, at least as long). Raises ValueError if it is never closed."""
    fence = match.group("fence")
    closing = re.compile(rf"^[ \t]*{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$", re.MULTILINE)
    found = closing.search(text, match.end())
    if found is None:
        raise ValueError(f"the directive {match.group(0).strip()!r} is never closed by {fence!r}")
    end = found.end()
    return end + 1 if text[end : end + 1] == "\n" else end


def exercise_titles(text: str) -> dict[str, str]:
    """``{label: title}`` of the exercises opened in a markdown text."""
    titles = {}
    for match in EXERCISE.finditer(text):
        block = text[match.end() :].splitlines()[1:]
        for line in block:
            if not line.strip().startswith(":"):
                break
            label = LABEL.match(line)
            if label:
                titles[label.group("label")] = match.group("title").strip()
    return titles


def stub_cell(label: str, title: str) -> nbformat.NotebookNode:
    """The code cell a student fills in for exercise ``label`` (runs, prints nothing)."""
    cell = nbformat.v4.new_code_cell(STUB.format(label=label, title=f": {title}" if title else ""))
    cell.id = f"stub-{label}"  # deterministic (nbformat would draw a random id)
    cell.metadata = nbformat.NotebookNode({"tags": [STUB_TAG]})
    return cell


@dataclass
class _Cut:
    """What cutting the solutions out of one markdown text left and found."""

    kept: str
    inside: bool  # a gated solution is still open at the end of the text
    solved: list[str] = field(default_factory=list)  # labels whose solution started here


def cut_solutions(text: str, inside: bool) -> _Cut:
    """Remove solution markers and solution text from one markdown cell's ``text``.

    Args:
        text: the cell's source.
        inside: True if a gated solution opened in an earlier cell is still open.
    """
    kept: list[str] = []
    solved: list[str] = []
    position = 0
    while position <= len(text):
        if inside:
            end = SOLUTION_END.search(text, position)
            if end is None:
                break  # the rest of the cell belongs to the solution
            position, inside = directive_end(text, end), False
            continue
        starts = [m for m in (SOLUTION_START.search(text, position), SOLUTION.search(text, position)) if m]
        if not starts:
            kept.append(text[position:])
            break
        first = min(starts, key=lambda m: m.start())
        kept.append(text[position : first.start()])
        solved.append(first.group("target"))
        position = directive_end(text, first)
        inside = first.re is SOLUTION_START
    joined = re.sub(r"\n{3,}", "\n\n", "".join(kept)).strip("\n")
    return _Cut(joined, inside, solved)


class StripSolutions(Preprocessor):  # type: ignore[misc]
    """Remove the worked solutions and leave a runnable stub for each exercise (see the module doc)."""

    def preprocess(self, nb: nbformat.NotebookNode, resources: dict[str, Any]) -> tuple[nbformat.NotebookNode, dict[str, Any]]:
        cells: list[nbformat.NotebookNode] = []
        titles: dict[str, str] = {}
        inside = False
        stubs: list[str] = []
        for cell in nb.cells:
            if cell.cell_type != "markdown":
                if not inside:
                    cells.append(cell)
                continue
            titles.update(exercise_titles(cell.source))
            cut = cut_solutions(cell.source, inside)
            inside = cut.inside
            if cut.kept.strip():
                cell.source = cut.kept
                cells.append(cell)
            for label in cut.solved:
                cells.append(stub_cell(label, titles.get(label, "")))
                stubs.append(label)
        if inside:
            raise ValueError(f"{resources.get('metadata', {}).get('name', 'notebook')}: a solution-start is never closed")
        nb.cells = cells
        resources.setdefault("student", {})["stubs"] = stubs
        return nb, resources


def has_exercises(path: Path) -> bool:
    notebook = nbformat.read(path, as_version=4)
    return any(cell.cell_type == "markdown" and EXERCISE.search(cell.source) for cell in notebook.cells)


def student_sources(book: Path = BOOK) -> list[Path]:
    """The chapter notebooks, and the appendix notebooks that have exercises, in name order."""
    chapters = sorted(book.glob("[0-9][0-9]_*.ipynb"))
    appendices = [path for path in sorted(book.glob("appendix_*.ipynb")) if has_exercises(path)]
    return chapters + appendices


def student_notebook(path: Path) -> tuple[str, list[str]]:
    """The student version of the notebook at ``path`` (JSON text) and its exercise labels."""
    exporter = NotebookExporter()
    exporter.register_preprocessor(StripSolutions(), enabled=True)
    body, resources = exporter.from_filename(str(path))
    return body, list(resources.get("student", {}).get("stubs", []))


def write_student_notebooks(out: Path, sources: Iterable[Path]) -> dict[Path, list[str]]:
    """Write the student copy of each of ``sources`` into ``out``; returns the stubs of each file."""
    out.mkdir(parents=True, exist_ok=True)
    written = {}
    for source in sources:
        if source.suffix != ".ipynb" or not source.is_file():
            raise ValueError(f"sources: {source} is not a notebook file (.ipynb)")
        body, stubs = student_notebook(source)
        target = out / source.name
        target.write_text(body, encoding="utf-8")
        written[target] = stubs
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=ROOT / "_build" / "student", help="output folder (default _build/student)")
    parser.add_argument("notebooks", nargs="*", type=Path, help="notebooks (default: the chapters, and appendices with exercises)")
    args = parser.parse_args(argv)
    written = write_student_notebooks(args.out, args.notebooks or student_sources())
    for target, stubs in written.items():
        print(f"{target.relative_to(ROOT) if target.is_relative_to(ROOT) else target}: {len(stubs)} exercise stub(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
