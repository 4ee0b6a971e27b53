"""Shared pytest configuration."""

from __future__ import annotations

import os

# Tests run beside notebooks and other workers on 2 cores: keep torch from oversubscribing.
os.environ.setdefault("OMP_NUM_THREADS", "1")

# The same matrix kernels as the stored runs, so re-trained models match them bit for bit
# (posenc.runtime explains why); set before any test runs a matrix product.
from posenc.runtime import pin_cpu_kernels  # noqa: E402

pin_cpu_kernels()


import pytest  # noqa: E402


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Spread the work over the xdist workers (``--dist loadgroup``, the Makefile's PYTEST_FLAGS).

    Each test file is one group, so its module fixtures (a browser, a JupyterLab server, a
    trained model) are made once; each notebook under nbval is a file too. The JupyterLab
    checks of the notebooks form two groups, by the notebook's place in the table of contents,
    so the longest file runs on two workers at once, each with its own Lab.
    """
    if not config.pluginmanager.hasplugin("xdist"):  # e.g. -p no:xdist: no groups to make
        return
    for item in items:
        group = item.nodeid.split("::")[0]
        params = getattr(getattr(item, "callspec", None), "params", {})
        if item.get_closest_marker("lab") and isinstance(params.get("path"), str):
            from tools.toc import toc_notebooks

            group += f"[half {toc_notebooks().index(params['path']) % 2}]"
        item.add_marker(pytest.mark.xdist_group(group))
