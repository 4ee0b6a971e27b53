"""Tests of the JupyterLab checker itself (``tests/support/lab.py``), on small notebooks written
here into a folder that a second JupyterLab serves: a clean one (explorers with each kind of
control, maths, a Python code block with braces, a warning on stderr) that must pass, and
notebooks broken on purpose (an error cell, dead widgets, raw MyST, an explorer whose figure
ignores its control) whose defect must be reported. So a green ``make lab-test`` means something.

The pure helpers (patterns, the table of contents) are tested without a browser.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest
from support.lab import (
    ROOT,
    LabReport,
    LabServer,
    _is_traceback,
    _raw_myst,
    check_notebook,
    inspect_notebook,
    lab_browser,
    lab_server,
    require_lab_tools,
    toc_notebooks,
)

MYST_EXTENSION = "jupyterlab-myst"

FIGURE = """\
import plotly.graph_objects as go
import ipywidgets as widgets
from posenc.interactive import Control, Explorer, Frame

def line(title):
    fig = go.Figure()
    fig.add_scatter(x=[0, 1, 2, 3], y=[0, 0, 0, 0], mode="lines+markers")
    fig.update_layout(title=title, width=500, height=300)
    return fig

def update(slope=1, shape="flat"):
    k = slope * (3 if shape == "steep" else 1)
    return Frame(traces={0: {"y": [k * i for i in range(4)]}}, layout={"title.text": f"slope {k}"})
"""

CLEAN_MARKDOWN = """\
# A clean notebook

Maths such as $f(x) = x^2$ and $(a)=b$, inline `code`, and a Python block with braces:

```python
d = {"a": 1}
print(f"{d['a']:.3f}")
```
"""

RAW_MARKDOWN = """\
(glue-label)=
# Raw MyST

The value is {glue:text}`my_value:.3f` and the term is {term}`token`; a bare {glue}`other`.

```{exercise}
:label: ex-raw
Do something.
```

:::{note}
A note.
:::
"""

NOTEBOOKS: dict[str, list[tuple[str, str]]] = {
    "clean.ipynb": [
        ("markdown", CLEAN_MARKDOWN),
        ("code", "import warnings\nwarnings.warn('only a warning, not an error')"),
        ("code", FIGURE),
        ("code", "Explorer(line('live slider'), update, [Control('slope', [1, 2, 3], live=(1, 10, 1))])"),
        ("code", "Explorer(line('selection slider'), update, [Control('slope', [1, 2, 3])])"),
        ("code", "Explorer(line('toggle buttons'), update, [Control('shape', ['flat', 'steep']), Control('slope', [1, 2])])"),
        (
            "code",
            (
                "figure = go.FigureWidget(line('dropdown'))\n"
                "choice = widgets.Dropdown(options=['a', 'bb', 'ccc'], description='word')\n"
                "def redraw(change):\n"
                "    figure.data[0].y = [len(choice.value) * i for i in range(4)]\n"
                "choice.observe(redraw, names='value')\n"
                "widgets.VBox([choice, figure])"
            ),
        ),
    ],
    "error_cell.ipynb": [
        ("markdown", "# An error"),
        ("code", "x = 1"),
        ("code", "1 / 0"),
        ("code", "print('never reached')"),
    ],
    "dead_widget.ipynb": [
        ("markdown", "# Dead widgets"),
        (
            "code",
            (
                "from IPython.display import display\n"
                "display({'application/vnd.jupyter.widget-view+json': "
                "{'model_id': 'no-such-model-0123', 'version_major': 2, 'version_minor': 0}, 'text/plain': 'dead'}, raw=True)"
            ),
        ),
        (
            "code",
            (
                "import ipywidgets as widgets\nfrom traitlets import Unicode\n\n"
                "class Missing(widgets.DOMWidget):\n"
                "    _view_name = Unicode('MissingView').tag(sync=True)\n"
                "    _view_module = Unicode('no-such-widget-module').tag(sync=True)\n"
                "    _view_module_version = Unicode('1.0.0').tag(sync=True)\n\n"
                "Missing()"
            ),
        ),
    ],
    "raw_glue.ipynb": [
        ("markdown", RAW_MARKDOWN),
        ("code", "my_value = 0.5"),
    ],
    "inline_eval.ipynb": [
        ("code", "x = 0.123456"),
        ("markdown", "A value {eval}`round(x, 3)` and a broken one {eval}`undefined_name`."),
    ],
    "frozen_explorer.ipynb": [
        ("markdown", "# An explorer whose figure ignores its control"),
        ("code", FIGURE),
        ("code", "Explorer(line('frozen'), lambda slope: Frame(traces={0: {'y': [1, 2, 3, 4]}}), [Control('slope', [1, 2, 3], live=(1, 10, 1))])"),
    ],
}


def write_notebooks(folder: Path) -> None:
    for name, cells in NOTEBOOKS.items():
        notebook = nbformat.v4.new_notebook()
        notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
        notebook.cells = [
            nbformat.v4.new_markdown_cell(source) if kind == "markdown" else nbformat.v4.new_code_cell(source)
            for kind, source in cells
        ]
        nbformat.write(notebook, folder / name)


# Module scope, not session: Playwright allows one sync instance per thread, and the next test
# file on this pytest worker (site checks, the other Lab file) starts its own browser.
@pytest.fixture(scope="module")
def checker_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabServer]:
    require_lab_tools()
    root = tmp_path_factory.mktemp("lab-root")
    write_notebooks(root)
    with lab_server(root, home=tmp_path_factory.mktemp("lab-checker-home")) as server:
        yield server


@pytest.fixture(scope="module")
def plain_lab(checker_lab: LabServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabServer]:
    """The same notebooks in a Lab without a MyST renderer (jupyterlab-myst disabled if installed):
    every raw construct then shows, and each must be reported."""
    with lab_server(
        checker_lab.root, home=tmp_path_factory.mktemp("lab-plain-home"), disabled_extensions=(MYST_EXTENSION,)
    ) as server:
        yield server


@pytest.fixture(scope="module")
def context(checker_lab: LabServer) -> Iterator[Any]:
    with lab_browser() as context:
        yield context


_REPORTS: dict[str, LabReport] = {}


def report_of(context: Any, lab: LabServer, name: str) -> LabReport:
    if name not in _REPORTS:
        # A short wait for a figure to change (these figures redraw in well under a second): the
        # frozen explorer waits it out in full, once per route.
        _REPORTS[name] = inspect_notebook(context, lab, name, run_timeout=120, explorer_timeout=4)
    return _REPORTS[name]


# -- in the browser -----------------------------------------------------------------------------
@pytest.mark.lab
def test_clean_notebook_passes_and_every_explorer_responds(context: Any, checker_lab: LabServer) -> None:
    report = report_of(context, checker_lab, "clean.ipynb")
    assert not report.problems(), report.describe()
    assert report.cells_run == report.code_cells == 6, report.describe()
    kinds = sorted(explorer["kind"] for explorer in report.explorers)
    assert kinds == ["dropdown", "slider", "slider", "toggle buttons"], report.describe()
    assert all(explorer["ok"] for explorer in report.explorers), report.describe()
    # The warning is on stderr, recorded but not an error.
    assert any("only a warning" in text for text in report.stderr), report.describe()


@pytest.mark.lab
def test_error_cell_is_reported(context: Any, checker_lab: LabServer) -> None:
    report = report_of(context, checker_lab, "error_cell.ipynb")
    errors = report.findings.get("errors", [])
    assert len(errors) == 1 and "ZeroDivisionError" in errors[0], report.describe()
    assert "cell 2" in errors[0], report.describe()
    # Run All stops at the error: the cell after it never ran.
    assert any("never ran" in problem and "[3]" in problem for problem in report.findings.get("run", [])), (
        report.describe()
    )


@pytest.mark.lab
def test_dead_widgets_are_reported(context: Any, checker_lab: LabServer) -> None:
    report = report_of(context, checker_lab, "dead_widget.ipynb")
    widgets = report.findings.get("widgets", [])
    assert any("cell 1" in problem and "Error displaying widget" in problem for problem in widgets), report.describe()
    assert any("cell 2" in problem and "error view" in problem for problem in widgets), report.describe()
    assert "errors" not in report.findings, report.describe()


@pytest.mark.lab
def test_raw_myst_is_reported_without_a_myst_renderer(context: Any, plain_lab: LabServer) -> None:
    assert MYST_EXTENSION not in plain_lab.federated_extensions()
    problems = check_notebook(context, plain_lab, "raw_glue.ipynb")
    text = "\n".join(problems)
    assert all(problem.startswith("[markdown] raw_glue.ipynb: cell 0") for problem in problems), text
    for expected in ("'{glue:text}'", "'{term}'", "'{glue}'", "'(glue-label)='", "```{exercise}", "':::{'"):
        assert expected in text, f"{expected} not reported:\n{text}"


@pytest.mark.lab
def test_a_notebook_only_opened_has_its_markdown_checked_and_runs_nothing(context: Any, plain_lab: LabServer) -> None:
    """``run=False`` (the notebooks make test does not run in full): Lab opens it with its kernel,
    no cell runs, and raw MyST is still reported."""
    report = inspect_notebook(context, plain_lab, "raw_glue.ipynb", run=False)
    assert set(report.findings) == {"markdown"}, report.describe()
    assert any("'{glue:text}'" in problem for problem in report.findings["markdown"]), report.describe()
    assert "run" not in report.seconds and report.cells_run == 0, report.describe()
    assert plain_lab.sessions() == [], plain_lab.sessions()


@pytest.mark.lab
def test_unfilled_glue_is_reported_in_this_lab(context: Any, checker_lab: LabServer) -> None:
    """With jupyterlab-myst (if installed) {glue:text} is not filled either: its placeholder shows."""
    problems = check_notebook(context, checker_lab, "raw_glue.ipynb")
    assert any("my_value:.3f" in problem for problem in problems), "\n".join(problems)


@pytest.mark.lab
def test_failed_inline_expression_is_reported(context: Any, checker_lab: LabServer) -> None:
    """With jupyterlab-myst, {eval} runs in the kernel and a failure shows as an error in the
    text; without it, the role itself is raw markup."""
    report = report_of(context, checker_lab, "inline_eval.ipynb")
    if MYST_EXTENSION in checker_lab.federated_extensions():
        errors = report.findings.get("errors", [])
        assert len(errors) == 1 and "NameError" in errors[0] and "cell 1" in errors[0], report.describe()
        assert "markdown" not in report.findings, report.describe()
    else:
        markdown = report.findings.get("markdown", [])
        assert len(markdown) == 2 and all("'{eval}'" in problem for problem in markdown), report.describe()


@pytest.mark.lab
def test_explorer_that_ignores_its_control_is_reported(context: Any, checker_lab: LabServer) -> None:
    report = report_of(context, checker_lab, "frozen_explorer.ipynb")
    assert len(report.explorers) == 1 and not report.explorers[0]["ok"], report.describe()
    problems = report.findings.get("explorers", [])
    assert len(problems) == 1 and "did not change" in problems[0], report.describe()
    # Both routes were tried, and the second (a click on the track) did move the slider.
    moved = report.explorers[0]["moved"]
    assert "(arrow key on the handle); again: " in moved and "(click on the track)" in moved, moved
    second = moved.split("; again: ")[1]
    before, after = second.split(" (click")[0].split(" -> ")
    assert before != after, moved


@pytest.mark.lab
def test_kernels_are_shut_down_between_notebooks(context: Any, checker_lab: LabServer) -> None:
    report_of(context, checker_lab, "clean.ipynb")
    assert checker_lab.sessions() == [], checker_lab.sessions()


# -- without a browser --------------------------------------------------------------------------
def test_toc_notebooks_are_the_ipynb_files_of_the_toc() -> None:
    notebooks = toc_notebooks()
    assert notebooks[0] == "book/01_why_order_matters.ipynb"
    assert all(path.endswith(".ipynb") and (ROOT / path).is_file() for path in notebooks)
    assert "book/glossary.ipynb" not in notebooks  # a Markdown page of the toc


@pytest.mark.parametrize(
    ("text", "kinds"),
    [
        ("The gap is {glue:text}gap_causal:.2f here.", ["role"]),
        ("The gap is gap_causal:.2f here.", ["unfilled placeholder"]),
        ("A {term}token and {doc}02_sinusoidal.", ["role", "role"]),
        ("intro\n(sin-waves)=\nWaves", ["label"]),
        ("Text :::{note} more", ["directive fence"]),
        ("{eval}`x` and {cite:p}smith", ["role", "role"]),
        # Not MyST: prose, Python f-strings and dicts, maths read out, times of day.
        ("print(f'{x:.3f}') and d = {'a': 1} and f(x)=x2 at 10:30.", []),
        ("A set {1, 2} and {a} alone, ratio 3:1.", []),
    ],
)
def test_raw_myst_patterns(text: str, kinds: list[str]) -> None:
    assert [kind for kind, _ in _raw_myst(text)] == kinds


def test_traceback_is_told_apart_from_a_warning() -> None:
    assert _is_traceback("-----\nZeroDivisionError        Traceback (most recent call last)\nCell In[3], line 1\n----> 1 1/0\n\nZeroDivisionError: division by zero")
    assert _is_traceback("  Cell In[1], line 1\n    1 +\n       ^\nSyntaxError: invalid syntax")
    assert not _is_traceback("/tmp/ipykernel_1/1.py:1: UserWarning: just a warning\n  warnings.warn('just a warning')")
    assert not _is_traceback("100%|██████████| 10/10 [00:01<00:00, 9.8it/s]")
