"""Every notebook of the table of contents, read the way a reader with JupyterLab reads it.

A real JupyterLab 4 (this venv's, with its python3 kernel and lab extensions, throwaway user
folders, autosave off) is started once per pytest worker; headless Chromium, driven by
Playwright, opens each notebook with ``/lab/tree/<path>?reset``, runs *Run > Run All Cells*
and checks what Lab shows (``support.lab.inspect_notebook``): the run itself, error outputs,
widgets, one control moved in each explorer, and raw MyST markup in rendered Markdown. Each
notebook runs once; the tests below read its report, one test per check, so a failure names
the notebook and the check.

Marked ``lab`` (``make lab-test`` runs only these; ``make unit`` leaves them out). Skipped,
with the reason, only when Chromium is missing, like the site's browser checks.

From a shell, with a screenshot per notebook::

    cd tests && PYTHONPATH=.. ../.venv/bin/python -m support.lab --screenshot /tmp/lab-shots
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from support.lab import (
    REQUIRED_EXTENSIONS,
    ROOT,
    LabReport,
    LabServer,
    inspect_notebook,
    lab_browser,
    lab_server,
    require_lab_tools,
    toc_notebooks,
)

pytestmark = pytest.mark.lab

NOTEBOOKS = toc_notebooks()

#: The checks of every notebook: the keys of ``LabReport.findings`` and what each guards.
CHECKS = {
    "run": "Lab opens the notebook with a kernel, Run All finishes within the timeout, every code cell runs",
    "errors": "no error output (traceback) in any cell, no failed inline expression in Markdown",
    "widgets": "every widget renders: no 'Error displaying widget', no error view, no 'Loading widget' left",
    "explorers": "in every explorer, moving the first control redraws the figure",
    "markdown": "no raw MyST markup or unfilled placeholder in rendered Markdown",
}


# Module scope, not session: Playwright allows one sync instance per thread, and the next test
# file on this pytest worker (site checks, the other Lab file) starts its own browser.
@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabServer]:
    require_lab_tools()
    with lab_server(ROOT, home=tmp_path_factory.mktemp("lab-home")) as server:
        yield server


class LabReports:
    """One browser context; runs each notebook once and remembers its report.

    One exception: if the only findings are explorers whose figure did not redraw, the
    notebook is opened once more in a fresh tab with a fresh kernel and that report is kept,
    with the first attempt's findings in ``retried`` (printed by the "run" check). Under a
    loaded CI machine a widget view can die in the browser (seen: an uncaught
    "Cannot read properties of undefined (reading 'node')" while the kernel was idle), which a
    reader would fix by re-running the notebook; an explorer that fails twice still fails.
    """

    def __init__(self, context: Any, lab: LabServer) -> None:
        self.context, self.lab = context, lab
        self.reports: dict[str, LabReport] = {}
        self.retried: dict[str, list[str]] = {}

    def report(self, path: str) -> LabReport:
        if path not in self.reports:
            report = inspect_notebook(self.context, self.lab, path)
            if _only_lost_redraws(report):
                self.retried[path] = list(report.findings["explorers"])
                report = inspect_notebook(self.context, self.lab, path)
            self.reports[path] = report
        return self.reports[path]


def _only_lost_redraws(report: LabReport) -> bool:
    """True if every finding is an explorer whose figure was drawn but did not change after a move."""
    findings = {check: problems for check, problems in report.findings.items() if problems}
    return set(findings) == {"explorers"} and all("did not change within" in p for p in findings["explorers"])


@pytest.fixture(scope="module")
def reports(lab: LabServer) -> Iterator[LabReports]:
    with lab_browser() as context:
        yield LabReports(context, lab)


def test_toc_lists_notebooks() -> None:
    assert len(NOTEBOOKS) >= 10, NOTEBOOKS
    assert "book/02_sinusoidal.ipynb" in NOTEBOOKS


def test_lab_uses_this_environment_and_throwaway_settings(lab: LabServer) -> None:
    """The venv's lab extensions are loaded although JUPYTER_DATA_DIR is a temp folder, and
    autosave is off (running a chapter must never write its outputs into book/)."""
    loaded = lab.federated_extensions()
    missing = [name for name in REQUIRED_EXTENSIONS if name not in loaded]
    assert not missing, f"lab extensions not loaded: {missing} (loaded: {loaded})"
    assert lab.user_setting("@jupyterlab/docmanager-extension:plugin").get("autosave") is False
    kernels = lab.api("GET", "api/kernelspecs")
    assert "python3" in kernels["kernelspecs"], kernels


def _mentions_explorer(path: str) -> bool:
    notebook = json.loads((ROOT / path).read_text(encoding="utf-8"))
    return any(
        cell["cell_type"] == "code" and "explorer(" in "".join(cell["source"]) for cell in notebook["cells"]
    )


@pytest.mark.parametrize("check", list(CHECKS))
@pytest.mark.parametrize("path", NOTEBOOKS)
def test_notebook_in_lab(reports: LabReports, path: str, check: str) -> None:
    report = reports.report(path)
    if check == "run":
        print(report.describe())  # timings, explorers moved, stderr: shown with `pytest -rA`
        if path in reports.retried:
            print(f"first attempt, retried once in a fresh kernel: {reports.retried[path]}")
    if check != "run" and "run" in report.findings and report.cells_run == 0:
        pytest.fail(f"the notebook did not run in Lab:\n{report.describe()}", pytrace=False)
    problems = report.findings.get(check, [])
    if check == "explorers" and not report.explorers and _mentions_explorer(path):
        problems = ["a code cell calls an explorer, but no explorer (controls + figure) was found in Lab"]
    assert not problems, (
        f"{CHECKS[check]}: {len(problems)} problem(s) in {path}\n"
        + "\n".join(f"  {problem}" for problem in problems)
        + f"\n\nfull report:\n{report.describe()}"
    )


def test_only_lost_redraws_are_retried() -> None:
    lost = LabReport(path="x.ipynb")
    lost.add("explorers", "explorer 1: its figure did not change within 30 s after a move")
    assert _only_lost_redraws(lost)
    never = LabReport(path="x.ipynb")
    never.add("explorers", "explorer 1: its figure was never drawn")
    assert not _only_lost_redraws(never)
    mixed = LabReport(path="x.ipynb")
    mixed.add("explorers", "explorer 1: its figure did not change within 30 s after a move")
    mixed.add("errors", "cell 3: Traceback")
    assert not _only_lost_redraws(mixed)
    assert not _only_lost_redraws(LabReport(path="x.ipynb"))
