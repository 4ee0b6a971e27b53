"""Every notebook of the table of contents, read the way a reader with JupyterLab reads it.

A real JupyterLab 4 (this venv's, with its python3 kernel and lab extensions, throwaway user
folders, autosave off) is started once per pytest worker; headless Chromium, driven by
Playwright, opens each notebook with ``/lab/tree/<path>?reset``, runs *Run > Run All Cells*
and checks what Lab shows (``support.lab.inspect_notebook``): the run itself, error outputs,
widgets, one control moved in each explorer, and raw MyST markup in rendered Markdown. ``make
test`` runs the notebooks of ``support.lab.RUN_IN_LAB`` in full and opens the others (kernel
started, Markdown checked); ``make lab-test`` runs every notebook in full. Each notebook is read
once; the tests below read its report, one test per check, so a failure names the notebook and
the check. This file checks the first half of the table of contents and
``tests/test_lab_second_half.py`` the second, so that two pytest workers share the work.

Marked ``lab`` (``make lab-test`` runs only these; ``make unit`` leaves them out). Skipped,
with the reason, only when Chromium is missing, like the site's browser checks.

From a shell, with a screenshot per notebook::

    cd tests && PYTHONPATH=.. ../.venv/bin/python -m support.lab --screenshot /tmp/lab-shots
"""

from __future__ import annotations

import pytest
from support.lab import (  # noqa: F401 - lab and reports are the fixtures of these tests
    CONTROL_KINDS_MOVED,
    REQUIRED_EXTENSIONS,
    RUN_IN_LAB,
    LabReport,
    LabReports,
    LabServer,
    _only_lost_redraws,
    check_notebook_in_lab,
    lab,
    lab_checks,
    reports,
    runs_in_lab,
    toc_notebooks,
)

pytestmark = pytest.mark.lab

NOTEBOOKS = toc_notebooks()
#: The notebooks this file checks; tests/test_lab_second_half.py checks the others (another pytest worker).
FIRST_HALF = NOTEBOOKS[: (len(NOTEBOOKS) + 1) // 2]


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


@pytest.mark.parametrize("path, check", lab_checks(FIRST_HALF))
def test_notebook_in_lab(reports: LabReports, path: str, check: str) -> None:
    check_notebook_in_lab(reports, path, check)


def test_full_runs_move_every_kind_of_control(reports: LabReports) -> None:
    """The notebooks run in full are in the table of contents and, between them, move each kind
    of live control the book's explorers move first (else they no longer represent the others)."""
    assert set(RUN_IN_LAB) <= set(NOTEBOOKS) and set(RUN_IN_LAB) <= set(FIRST_HALF), RUN_IN_LAB
    moved = {explorer["kind"] for path in RUN_IN_LAB for explorer in reports.report(path).explorers if explorer["ok"]}
    missing = [kind for kind in CONTROL_KINDS_MOVED if kind not in moved]
    assert not missing, f"no explorer of {RUN_IN_LAB} moved a {missing} control (moved: {sorted(moved)})"


def test_the_choice_of_full_runs_is_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POSENC_LAB_RUN", "all")
    assert all(runs_in_lab(path) for path in NOTEBOOKS)
    monkeypatch.setenv("POSENC_LAB_RUN", "every")
    with pytest.raises(ValueError, match=r"POSENC_LAB_RUN='every': expected 'all'"):
        runs_in_lab(NOTEBOOKS[0])
    monkeypatch.delenv("POSENC_LAB_RUN")
    assert [path for path in NOTEBOOKS if runs_in_lab(path)] == list(RUN_IN_LAB)


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
