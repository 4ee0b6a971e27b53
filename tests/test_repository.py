"""Repository rules: notebooks are committed clean and every one is in the table of contents."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from tools.toc import toc_files, toc_source

ROOT = Path(__file__).resolve().parents[1]
BOOK = ROOT / "book"


NOTEBOOKS = sorted(BOOK.glob("*.ipynb"))


def test_book_has_notebooks() -> None:
    assert NOTEBOOKS, "no notebooks found in book/"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_committed_without_outputs(path: Path) -> None:
    notebook = json.loads(path.read_text())
    dirty = [
        index
        for index, cell in enumerate(notebook["cells"])
        if cell["cell_type"] == "code" and (cell.get("outputs") or cell.get("execution_count") is not None)
    ]
    assert not dirty, f"{path.name}: code cells {dirty} have outputs or execution counts; strip them"
    # jupyterlab-myst stores the evaluated {eval} results of a Markdown cell in its metadata.
    evaluated = [i for i, cell in enumerate(notebook["cells"]) if "user_expressions" in cell.get("metadata", {})]
    assert not evaluated, f"{path.name}: Markdown cells {evaluated} carry saved {{eval}} results (user_expressions); strip them"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_uses_python3_kernel(path: Path) -> None:
    notebook = json.loads(path.read_text())
    assert notebook["metadata"].get("kernelspec", {}).get("name") == "python3", path.name


def test_every_book_notebook_is_in_the_toc() -> None:
    listed = {f"{name}.ipynb" for name in toc_files()}
    missing = [str(p.relative_to(ROOT)) for p in NOTEBOOKS if str(p.relative_to(ROOT)) not in listed]
    assert not missing, f"notebooks missing from _toc.yml: {missing}"


def test_every_toc_entry_exists() -> None:
    for name in toc_files():
        assert toc_source(name).is_file()  # FileNotFoundError names the entry otherwise


def test_ci_runs_the_readme_test_command() -> None:
    readme = (ROOT / "README.md").read_text()
    commands = re.findall(r"^make (\w+)\s", readme, flags=re.MULTILINE)
    assert commands[:2] == ["book", "test"], f"README must start with `make book` and `make test`, got {commands}"
    ci_lines = [
        line.strip()
        for line in (ROOT / ".ci" / "run").read_text().splitlines()
        if line.strip() and not line.startswith("#") and not line.startswith(("set ", "cd "))
    ]
    assert ci_lines == ["make test"], f".ci/run must run exactly the README's test command, got {ci_lines}"


def test_copyright_year_matches_the_licence() -> None:
    """The footer's year (``copyright`` in _config.yml) is the year of LICENSE (no build needed)."""
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    licence_year = re.search(r"Copyright \(c\) (\d{4})", (ROOT / "LICENSE").read_text())
    assert licence_year, "LICENSE has no 'Copyright (c) YYYY' line"
    assert str(config["copyright"]) == licence_year.group(1)


def test_no_npm() -> None:
    """`make test` needs Python, make and Chromium only: axe-core comes from a PyPI package."""
    leftovers = [name for name in ("package.json", "package-lock.json", "node_modules") if (ROOT / name).exists()]
    assert not leftovers, f"npm files are back: {leftovers}"
    commands = [line for line in (ROOT / "Makefile").read_text().splitlines() if not line.lstrip().startswith("#")]
    npm = [line for line in commands if re.search(r"\bnpm\b|\bnpx\b|node_modules", line)]
    assert not npm, f"the Makefile still uses npm: {npm}"
