"""The second half of the notebooks of the table of contents in JupyterLab (see ``tests/test_lab.py``).

A file of its own so that pytest-xdist (``--dist loadfile``) gives it to the other worker:
the two halves run side by side, each with its own Lab and browser.
"""

from __future__ import annotations

import pytest
from support.lab import LabReports, check_notebook_in_lab, lab, lab_checks, reports, toc_notebooks  # noqa: F401 - fixtures

pytestmark = pytest.mark.lab

NOTEBOOKS = toc_notebooks()
SECOND_HALF = NOTEBOOKS[(len(NOTEBOOKS) + 1) // 2 :]


@pytest.mark.parametrize("path, check", lab_checks(SECOND_HALF))
def test_notebook_in_lab(reports: LabReports, path: str, check: str) -> None:
    check_notebook_in_lab(reports, path, check)


def test_the_halves_cover_every_notebook_once() -> None:
    from test_lab import FIRST_HALF

    assert FIRST_HALF + SECOND_HALF == NOTEBOOKS and len(SECOND_HALF) >= 1
