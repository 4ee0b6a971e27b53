"""Every chapter has at least three exercises, each with a worked solution.

Exercises use sphinx-exercise. A chapter notebook writes an exercise as a markdown cell

    ```{exercise} Title
    :label: ex-<chapter>-<n>
    ...
    ```

and its solution either as a gated pair (markdown ``{solution-start} ex-...``, code cells
that run and assert, markdown ``{solution-end}``) or as one ``{solution} ex-...``
directive. The notebook JSON is parsed directly: no build, no kernel, well under a second.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
BOOK = ROOT / "book"
CHAPTERS = sorted(BOOK.glob("[0-9][0-9]_*.ipynb"))
MIN_EXERCISES = 3

# A directive opens with a fence of 3+ backticks or colons followed by {name}.
_FENCE = r"^[ \t]*(?:`{3,}|:{3,})[ \t]*"
EXERCISE = re.compile(_FENCE + r"\{exercise(?:-start)?\}(?P<title>[^\n]*)$", re.MULTILINE)
SOLUTION = re.compile(_FENCE + r"\{solution\}[ \t]*(?P<target>\S*)[^\n]*$", re.MULTILINE)
SOLUTION_START = re.compile(_FENCE + r"\{solution-start\}[ \t]*(?P<target>\S*)[^\n]*$", re.MULTILINE)
SOLUTION_END = re.compile(_FENCE + r"\{solution-end\}", re.MULTILINE)
LABEL = re.compile(r"^[ \t]*:label:[ \t]*(?P<label>\S+)", re.MULTILINE)


@dataclass
class ExerciseReport:
    """What one notebook holds.

    Attributes:
        exercises: exercise labels in order of appearance (``""`` for an unlabelled one).
        solutions: for each solved label, the kind of solution (``"gated"`` or ``"directive"``).
        problems: human-readable descriptions of everything that is wrong.
    """

    exercises: list[str] = field(default_factory=list)
    solutions: dict[str, str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    @property
    def solved(self) -> list[str]:
        """Exercise labels that have a solution."""
        return [label for label in self.exercises if label and label in self.solutions]


def _source(cell: dict[str, Any]) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else str(source)


def _label_after(text: str, start: int) -> str:
    """The ``:label:`` option of the directive opening at ``start`` (options follow the opening line)."""
    lines = text[start:].splitlines()[1:]
    for line in lines:
        if not line.strip().startswith(":"):
            break
        match = LABEL.match(line)
        if match:
            return match.group("label")
    return ""


def count_exercises(notebook: dict[str, Any]) -> ExerciseReport:
    """Find the exercises and solutions of a notebook (its parsed JSON) and what is wrong with them.

    Checks: every exercise has a unique label and exactly one solution; every solution
    names an exercise of the same notebook that comes before it; gated solutions are
    closed by ``{solution-end}``, do not nest, and contain at least one code cell.
    """
    report = ExerciseReport()
    open_gate: tuple[str, int] | None = None  # (label, cell index) of an unclosed solution-start
    gate_code_cells = 0

    def add_solution(target: str, kind: str, index: int) -> None:
        if not target:
            report.problems.append(f"cell {index}: a {kind} solution without an exercise label")
        elif target not in report.exercises:
            report.problems.append(f"cell {index}: solution for {target!r}, which is not an earlier exercise")
        elif target in report.solutions:
            report.problems.append(f"cell {index}: a second solution for {target!r}")
        else:
            report.solutions[target] = kind

    for index, cell in enumerate(notebook.get("cells", [])):
        if cell.get("cell_type") == "code":
            if open_gate is not None:
                gate_code_cells += 1
            continue
        if cell.get("cell_type") != "markdown":
            continue
        text = _source(cell)
        events = [(m.start(), "exercise", m) for m in EXERCISE.finditer(text)]
        events += [(m.start(), "solution", m) for m in SOLUTION.finditer(text)]
        events += [(m.start(), "start", m) for m in SOLUTION_START.finditer(text)]
        events += [(m.start(), "end", m) for m in SOLUTION_END.finditer(text)]
        for position, kind, match in sorted(events, key=lambda event: event[0]):
            if kind == "exercise":
                label = _label_after(text, position)
                if not label:
                    report.problems.append(f"cell {index}: exercise{match.group('title')!r} has no :label:")
                elif label in report.exercises:
                    report.problems.append(f"cell {index}: duplicate exercise label {label!r}")
                report.exercises.append(label)
            elif kind == "solution":
                add_solution(match.group("target"), "directive", index)
            elif kind == "start":
                if open_gate is not None:
                    report.problems.append(
                        f"cell {index}: solution-start inside the open solution for {open_gate[0]!r} (cell {open_gate[1]})"
                    )
                open_gate = (match.group("target"), index)
                gate_code_cells = 0
                add_solution(match.group("target"), "gated", index)
            else:  # end
                if open_gate is None:
                    report.problems.append(f"cell {index}: solution-end without a solution-start")
                    continue
                if gate_code_cells == 0:
                    report.problems.append(
                        f"cell {open_gate[1]}: the gated solution for {open_gate[0]!r} has no code cell to run"
                    )
                open_gate = None
    if open_gate is not None:
        report.problems.append(f"cell {open_gate[1]}: solution for {open_gate[0]!r} is never closed by solution-end")
    for label in report.exercises:
        if label and label not in report.solutions:
            report.problems.append(f"exercise {label!r} has no solution")
    return report


# -- the book's chapters ----------------------------------------------------------------------
def test_all_twelve_chapters_exist() -> None:
    numbers = sorted(int(path.name[:2]) for path in CHAPTERS)
    assert numbers == list(range(1, 13)), f"expected chapter notebooks 01..12 in book/, found {numbers}"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_chapter_has_enough_solved_exercises(path: Path) -> None:
    report = count_exercises(json.loads(path.read_text()))
    assert not report.problems, f"{path.name}: " + "; ".join(report.problems)
    assert len(report.solved) >= MIN_EXERCISES, (
        f"{path.name}: {len(report.solved)} exercise(s) with a solution, at least {MIN_EXERCISES} required "
        f"(found exercises {report.exercises})"
    )


def test_exercise_labels_are_unique_across_the_book() -> None:
    seen: dict[str, str] = {}
    clashes = []
    for path in CHAPTERS:
        for label in count_exercises(json.loads(path.read_text())).exercises:
            if label and label in seen and seen[label] != path.name:
                clashes.append(f"{label} in {seen[label]} and {path.name}")
            seen.setdefault(label, path.name)
    assert not clashes, f"exercise labels used in two chapters: {clashes}"


# -- the counter itself must be able to fail ------------------------------------------------------
def _md(text: str) -> dict[str, Any]:
    return {"cell_type": "markdown", "metadata": {}, "source": text}


def _code(text: str = "assert True") -> dict[str, Any]:
    return {"cell_type": "code", "metadata": {}, "source": text, "outputs": [], "execution_count": None}


def _exercise(label: str) -> dict[str, Any]:
    return _md(f"```{{exercise}} Title {label}\n:label: {label}\nDo something.\n```")


def _gated(label: str, code_cells: int = 1) -> list[dict[str, Any]]:
    return (
        [_md(f"```{{solution-start}} {label}\n:class: dropdown\n```")]
        + [_code() for _ in range(code_cells)]
        + [_md("```{solution-end}\n```")]
    )


def _notebook(*cells: dict[str, Any] | list[dict[str, Any]]) -> dict[str, Any]:
    flat: list[dict[str, Any]] = []
    for cell in cells:
        flat.extend(cell if isinstance(cell, list) else [cell])
    return {"cells": flat, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


def test_counter_accepts_a_good_notebook() -> None:
    notebook = _notebook(
        _exercise("ex-a-1"), _gated("ex-a-1"),
        _exercise("ex-a-2"), _gated("ex-a-2", code_cells=2),
        _md("::::{exercise} Colon fence\n:label: ex-a-3\n:class: tip\nText\n::::"),
        _md(":::{solution} ex-a-3\n:class: dropdown\nA written answer.\n:::"),
    )
    report = count_exercises(notebook)
    assert report.problems == []
    assert report.solved == ["ex-a-1", "ex-a-2", "ex-a-3"]
    assert report.solutions == {"ex-a-1": "gated", "ex-a-2": "gated", "ex-a-3": "directive"}


def test_counter_reads_the_reference_chapter() -> None:
    report = count_exercises(json.loads((BOOK / "01_why_order_matters.ipynb").read_text()))
    assert report.problems == []
    assert report.solved == ["ex-order-1", "ex-order-2", "ex-order-3"]


def test_counter_rejects_too_few_exercises() -> None:
    report = count_exercises(_notebook(_exercise("ex-b-1"), _gated("ex-b-1"), _exercise("ex-b-2"), _gated("ex-b-2")))
    assert report.problems == [] and len(report.solved) == 2 < MIN_EXERCISES


@pytest.mark.parametrize(
    ("cells", "expected"),
    [
        # an exercise with no solution at all
        ([_exercise("ex-c-1")], "has no solution"),
        # a solution-start that is never closed
        ([_exercise("ex-c-1"), _md("```{solution-start} ex-c-1\n```"), _code()], "never closed"),
        # a gated solution with prose only: nothing runs
        ([_exercise("ex-c-1"), _gated("ex-c-1", code_cells=0)], "no code cell"),
        # a solution for a label that does not exist
        ([_exercise("ex-c-1"), _gated("ex-c-1"), _gated("ex-c-9")], "not an earlier exercise"),
        # an exercise without a label (a solution cannot point at it)
        ([_md("```{exercise} No label\nText\n```")], "has no :label:"),
        # two solutions for one exercise
        ([_exercise("ex-c-1"), _gated("ex-c-1"), _gated("ex-c-1")], "second solution"),
        # a solution-end with nothing open
        ([_exercise("ex-c-1"), _gated("ex-c-1"), _md("```{solution-end}\n```")], "without a solution-start"),
        # the same label twice
        ([_exercise("ex-c-1"), _gated("ex-c-1"), _exercise("ex-c-1")], "duplicate exercise label"),
    ],
    ids=["unsolved", "unclosed", "no-code", "unknown-target", "unlabelled", "two-solutions", "stray-end", "duplicate"],
)
def test_counter_reports_bad_notebooks(cells: list[Any], expected: str) -> None:
    report = count_exercises(_notebook(*cells))
    assert any(expected in problem for problem in report.problems), report.problems


def test_counter_ignores_directives_in_code_cells() -> None:
    # A code cell that merely prints directive text is not an exercise.
    notebook = _notebook(_code('print("```{exercise} fake\\n:label: ex-d-1\\n```")'))
    assert count_exercises(notebook).exercises == []


#: A reference to an exercise renders as "Exercise 6.4" (numref): a word "exercise" before it doubles it.
_DOUBLED_NAME = re.compile(r"\b[Ee]xercises? \{(?:ref|numref)\}`ex-")


def doubled_exercise_names(text: str) -> list[str]:
    """Places where the text says "exercise" right before a reference that prints "Exercise N"."""
    return [match.group(0) for match in _DOUBLED_NAME.finditer(text)]


def test_a_doubled_exercise_name_is_found() -> None:
    assert doubled_exercise_names("see exercise {ref}`ex-exp-4` and {ref}`ex-exp-2`") == ["exercise {ref}`ex-"]
    assert doubled_exercise_names("see {ref}`ex-exp-4`") == []


@pytest.mark.parametrize("path", sorted(BOOK.glob("*.ipynb")) + sorted(BOOK.glob("*.md")), ids=lambda p: p.name)
def test_no_reference_to_an_exercise_doubles_its_name(path: Path) -> None:
    if path.suffix == ".ipynb":
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        text = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
    else:
        text = path.read_text(encoding="utf-8")
    assert not doubled_exercise_names(text), f"{path.name}: {doubled_exercise_names(text)} (the reference already says Exercise N)"
