"""The student notebooks of ``make student`` (tools/make_student.py).

* every chapter notebook (and every appendix with exercises) gets a student copy;
* no worked solution survives: no solution code cell, no line of solution code that the
  chapter does not also show elsewhere, no solution marker;
* every exercise is followed by a stub code cell tagged ``exercise-stub``, which runs and prints
  nothing;
* apart from that the notebook is unchanged (same code cells, same order, same ids);
* the transformation is deterministic.

That each student notebook runs top to bottom is checked by nbval: ``make test`` writes them
with ``make student`` and runs ``pytest --nbval-lax _build/student`` (target ``student-notebooks``).
These tests write their own copies into a temporary folder: no build needed, a few seconds.
"""

from __future__ import annotations

import ast
import contextlib
import io
import json
from pathlib import Path
from typing import Any

import nbformat
import pytest
from test_exercises import SOLUTION, SOLUTION_END, SOLUTION_START, count_exercises

from tools import make_student

ROOT = Path(__file__).resolve().parents[1]

SOURCES = make_student.student_sources()


@pytest.fixture(scope="module")
def student(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """Student copies of every source notebook, written by the tool: name -> parsed JSON."""
    out = tmp_path_factory.mktemp("student")
    make_student.write_student_notebooks(out, SOURCES)
    return {path.name: json.loads(path.read_text(encoding="utf-8")) for path in sorted(out.glob("*.ipynb"))}


def _source(cell: dict[str, Any]) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else str(source)


def _load(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def solution_code_cells(notebook: dict[str, Any]) -> list[dict[str, Any]]:
    """The code cells inside gated solutions (between a solution-start and its solution-end)."""
    inside, found = False, []
    for cell in notebook["cells"]:
        text = _source(cell)
        if cell["cell_type"] == "code":
            if inside:
                found.append(cell)
            continue
        starts = [m.start() for m in SOLUTION_START.finditer(text)]
        ends = [m.start() for m in SOLUTION_END.finditer(text)]
        if starts or ends:
            inside = max(starts, default=-1) > max(ends, default=-1)
    return found


def _stubs(notebook: dict[str, Any]) -> list[dict[str, Any]]:
    return [cell for cell in notebook["cells"] if make_student.STUB_TAG in cell.get("metadata", {}).get("tags", [])]


def leaked_solution_lines(source: dict[str, Any], student: dict[str, Any]) -> list[str]:
    """Lines of solution code (of ``source``) found in ``student``, leaving out lines the chapter
    also shows outside its solutions (an import, a blank line)."""
    solutions = solution_code_cells(source)
    solution_ids = {id(cell) for cell in solutions}
    elsewhere = {
        line.strip() for cell in source["cells"] if id(cell) not in solution_ids for line in _source(cell).splitlines()
    }
    student_lines = {line.strip() for cell in student["cells"] for line in _source(cell).splitlines()}
    leaked = []
    for cell in solutions:
        for line in _source(cell).splitlines():
            stripped = line.strip()
            if len(stripped) > 8 and stripped not in elsewhere and stripped in student_lines:
                leaked.append(stripped)
    return leaked


# -- the book's notebooks ------------------------------------------------------------------
def test_every_chapter_has_a_student_copy(student: dict[str, dict[str, Any]]) -> None:
    chapters = sorted(path.name for path in (ROOT / "book").glob("[0-9][0-9]_*.ipynb"))
    assert chapters, "no chapter notebooks in book/"
    assert set(chapters) <= set(student), f"chapters without a student copy: {sorted(set(chapters) - set(student))}"
    assert sorted(student) == sorted(path.name for path in SOURCES)


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.stem)
def test_no_solution_survives(path: Path, student: dict[str, dict[str, Any]]) -> None:
    source, copy = _load(path), student[path.name]
    solutions = solution_code_cells(source)
    assert solutions, f"{path.name}: no solution code found in the source: is the check looking at the right cells?"
    kept_ids = {cell.get("id") for cell in copy["cells"]}
    survivors = [cell.get("id") for cell in solutions if cell.get("id") in kept_ids]
    assert not survivors, f"{path.name}: solution cells still in the student copy: {survivors}"
    leaked = leaked_solution_lines(source, copy)
    assert not leaked, f"{path.name}: solution code in the student copy: {leaked[:5]}"
    for cell in copy["cells"]:
        text = _source(cell)
        for pattern in (SOLUTION, SOLUTION_START, SOLUTION_END):
            assert not pattern.search(text), f"{path.name}: a solution marker survives in cell {cell.get('id')}: {text[:200]!r}"


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.stem)
def test_every_exercise_has_a_stub(path: Path, student: dict[str, dict[str, Any]]) -> None:
    source, copy = _load(path), student[path.name]
    exercises = count_exercises(source).exercises
    assert exercises, f"{path.name}: no exercises"
    stubs = _stubs(copy)
    assert [cell["id"] for cell in stubs] == [f"stub-{label}" for label in exercises]
    cells = copy["cells"]
    for stub, label in zip(stubs, exercises, strict=True):
        index = cells.index(stub)
        before = _source(cells[index - 1])
        assert cells[index - 1]["cell_type"] == "markdown" and f":label: {label}" in before, (
            f"{path.name}: the stub of {label} does not follow its exercise: {before[-300:]!r}"
        )
        text = _source(stub)
        assert label in text and "Your solution here" in text, text
        assert stub["outputs"] == [] and stub["execution_count"] is None


def test_stubs_run_and_print_nothing(student: dict[str, dict[str, Any]]) -> None:
    for name, notebook in student.items():
        for stub in _stubs(notebook):
            printed = io.StringIO()
            with contextlib.redirect_stdout(printed):
                exec(compile(_source(stub), f"{name}:{stub['id']}", "exec"), {})  # noqa: S102 - our own stub
            assert printed.getvalue() == "", f"{name}: stub {stub['id']} prints {printed.getvalue()!r}"


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.stem)
def test_the_rest_is_unchanged(path: Path, student: dict[str, dict[str, Any]]) -> None:
    source, copy = _load(path), student[path.name]
    solution_ids = {cell.get("id") for cell in solution_code_cells(source)}
    expected = [(cell.get("id"), _source(cell)) for cell in source["cells"] if cell["cell_type"] == "code" and cell.get("id") not in solution_ids]
    stub_ids = {cell["id"] for cell in _stubs(copy)}
    got = [(cell.get("id"), _source(cell)) for cell in copy["cells"] if cell["cell_type"] == "code" and cell.get("id") not in stub_ids]
    assert got == expected, f"{path.name}: the chapter's own code cells changed"
    assert copy["metadata"] == source["metadata"]
    nbformat.validate(nbformat.reads(json.dumps(copy), as_version=4))
    # Markdown cells keep their ids and order; only solution text is cut out of them.
    source_markdown = [cell.get("id") for cell in source["cells"] if cell["cell_type"] == "markdown"]
    copy_markdown = [cell.get("id") for cell in copy["cells"] if cell["cell_type"] == "markdown"]
    assert copy_markdown == [cell_id for cell_id in source_markdown if cell_id in copy_markdown]


def _names(source: str) -> tuple[set[str], set[str]]:
    """(names a cell binds, names it reads), ignoring IPython magics and shell lines."""
    lines = [line for line in source.splitlines() if not line.lstrip().startswith(("%", "!"))]
    try:
        tree = ast.parse("\n".join(lines))
    except SyntaxError:
        return set(), set()
    bound, read = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (bound if isinstance(node.ctx, (ast.Store, ast.Del)) else read).add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
    return bound, read


def names_needed_after_solutions(notebook: dict[str, Any]) -> list[str]:
    """Names bound only inside a worked solution and read by a later cell of the notebook."""
    solution_ids = {id(cell) for cell in solution_code_cells(notebook)}
    only_in_solutions: set[str] = set()
    bound_outside: set[str] = set()
    needed: list[str] = []
    for cell in notebook["cells"]:
        if cell["cell_type"] != "code":
            continue
        bound, read = _names(_source(cell))
        if id(cell) in solution_ids:
            only_in_solutions |= bound - bound_outside
            continue
        needed += sorted((read & only_in_solutions) - bound)
        bound_outside |= bound
        only_in_solutions -= bound
    return needed


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.stem)
def test_nothing_after_a_solution_needs_it(path: Path) -> None:
    """Such a name would break the student copy (nbval runs it under ``make test``; this finds
    it without a kernel)."""
    needed = names_needed_after_solutions(_load(path))
    assert not needed, f"{path.name}: cells after a solution read names only the solution binds: {needed}"


def test_transformation_is_deterministic(tmp_path: Path) -> None:
    source = SOURCES[0]
    first, _ = make_student.student_notebook(source)
    second, _ = make_student.student_notebook(source)
    assert first == second
    written = make_student.write_student_notebooks(tmp_path, [source])
    assert next(iter(written)).read_text(encoding="utf-8") == first


# -- the transformation on small cases ------------------------------------------------------
def test_cut_solutions_keeps_the_text_around_the_markers() -> None:
    text = (
        "```{solution-end}\n```\n\nBetween.\n\n```{exercise} Two\n:label: ex-2\nDo it.\n```\n\n"
        "```{solution-start} ex-2\n:class: dropdown\n```\nSolution prose.\n"
    )
    cut = make_student.cut_solutions(text, inside=True)
    assert cut.inside and cut.solved == ["ex-2"]
    assert cut.kept == "Between.\n\n```{exercise} Two\n:label: ex-2\nDo it.\n```"
    directive = "Intro.\n\n````{solution} ex-3\n:class: dropdown\n```python\nx = 1\n```\n````\n\nAfter."
    cut = make_student.cut_solutions(directive, inside=False)
    assert not cut.inside and cut.solved == ["ex-3"] and cut.kept == "Intro.\n\nAfter."


def test_an_unclosed_marker_is_an_error() -> None:
    with pytest.raises(ValueError, match="never closed"):
        make_student.cut_solutions("```{solution-start} ex-1\n:class: dropdown\n", inside=False)


def _tiny_notebook() -> nbformat.NotebookNode:
    cells = [
        nbformat.v4.new_markdown_cell("```{exercise} One\n:label: ex-1\nCompute it.\n```\n\n```{solution-start} ex-1\n```"),
        nbformat.v4.new_code_cell("answer_of_the_solution = 42"),
        nbformat.v4.new_markdown_cell("```{solution-end}\n```\n\nThe end."),
        nbformat.v4.new_code_cell("print('after')"),
    ]
    for index, cell in enumerate(cells):
        cell.id = f"cell-{index}"
    return nbformat.v4.new_notebook(cells=cells)


def test_checks_fail_on_a_notebook_that_keeps_its_solutions(tmp_path: Path) -> None:
    """The leak and stub checks are not vacuous: on the source itself they report."""
    notebook = _tiny_notebook()
    raw = json.loads(nbformat.writes(notebook))
    assert leaked_solution_lines(raw, raw) == ["answer_of_the_solution = 42"]
    assert names_needed_after_solutions(raw) == []
    raw["cells"][3]["source"] = "print(answer_of_the_solution)"
    assert names_needed_after_solutions(raw) == ["answer_of_the_solution"]
    raw["cells"][3]["source"] = "print('after')"
    assert _stubs(raw) == []
    path = tmp_path / "tiny.ipynb"
    nbformat.write(notebook, path)
    body, stubs = make_student.student_notebook(path)
    copy = json.loads(body)
    assert stubs == ["ex-1"] and leaked_solution_lines(raw, copy) == []
    assert [_source(cell).splitlines()[0] for cell in copy["cells"]] == [
        "```{exercise} One", "# Exercise ex-1: One", "The end.", "print('after')"
    ]
