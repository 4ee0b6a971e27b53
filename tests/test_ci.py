"""What ``make test`` (and so CI, through ``.ci/run``) runs, read from the Makefile.

These guard the promises of the README's test command: the type check runs before pytest,
the site is built before the tests that read it, pytest's exit status (including 5, "no test
ran") is never swallowed, parallelism follows the machine, and ``make unit`` leaves out
exactly the tests that need a build or a browser.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAKEFILE = (ROOT / "Makefile").read_text()
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def target(name: str) -> tuple[list[str], list[str]]:
    """(prerequisites, recipe lines) of a Makefile target."""
    match = re.search(rf"^{re.escape(name)}:([^\n=]*)\n((?:\t[^\n]*\n?)*)", MAKEFILE, flags=re.MULTILINE)
    assert match, f"no target {name!r} in the Makefile"
    return match.group(1).split(), [line.strip() for line in match.group(2).splitlines()]


def variable(name: str) -> str:
    match = re.search(rf"^{re.escape(name)}\s*[:?]?=\s*(.*)$", MAKEFILE, flags=re.MULTILINE)
    assert match, f"no variable {name} in the Makefile"
    return match.group(1).strip()


def test_test_target_type_checks_and_builds_before_pytest() -> None:
    prerequisites, recipe = target("test")
    assert prerequisites.index("typecheck") < prerequisites.index("book"), prerequisites
    assert "setup" in prerequisites and "browser-deps" in prerequisites, prerequisites
    assert recipe == ["$(BIN)/python -m pytest $(PYTEST_FLAGS) --nbval-lax"], recipe
    # No path arguments: pytest's testpaths decide, and they cover the tests and the notebooks.
    assert PYPROJECT["tool"]["pytest"]["ini_options"]["testpaths"] == ["tests", "book"]


def test_typecheck_runs_mypy_on_posenc() -> None:
    prerequisites, recipe = target("typecheck")
    assert recipe == ["$(BIN)/python -m mypy posenc"], recipe
    mypy = PYPROJECT["tool"]["mypy"]
    assert mypy.get("packages") == ["posenc"]
    assert not mypy.get("ignore_errors") and not mypy.get("ignore_missing_imports"), (
        "errors are silenced wholesale; list untyped third-party modules in [[tool.mypy.overrides]] instead"
    )


def test_pytest_exit_status_reaches_make() -> None:
    """pytest exits 5 when it ran no test: that must fail `make test` like any failure."""
    for name in ("test", "unit", "notebooks", "browser", "lab-test", "typecheck"):
        _, recipe = target(name)
        for line in recipe:
            assert not line.startswith("-"), f"make {name} ignores the status of: {line}"
            assert not re.search(r"\|\|\s*(true|:|exit 0)|;\s*true\b|\|\s*tee\b", line), (
                f"make {name} hides the exit status of: {line}"
            )
    ci = (ROOT / ".ci" / "run").read_text()
    assert "set -euo pipefail" in ci


def test_parallelism_follows_the_machine() -> None:
    flags = variable("PYTEST_FLAGS").split()
    assert flags[flags.index("-n") + 1] == "auto", flags
    assert flags[flags.index("--dist") + 1] == "loadfile", flags


def test_unit_target_leaves_out_site_browser_and_lab_tests() -> None:
    prerequisites, recipe = target("unit")
    assert "book" not in prerequisites
    assert recipe == ['$(BIN)/python -m pytest $(PYTEST_FLAGS) tests -m "not browser and not site and not lab"'], recipe
    markers = " ".join(PYPROJECT["tool"]["pytest"]["ini_options"]["markers"])
    assert "site:" in markers and "browser:" in markers and "lab:" in markers
    assert PYPROJECT["tool"]["pytest"]["ini_options"].get("strict_markers") is True


def test_tests_that_read_the_site_are_marked_site() -> None:
    """A test file that needs the built site must be marked `site` (or `make unit` would fail
    on it), and it must fail without the site rather than skip (``require_site``)."""
    unmarked, skipping = [], []
    for path in sorted((ROOT / "tests").glob("test_*.py")):
        text = path.read_text()
        reads_site = re.search(r"\brequire_(site|page)\(|\bsite_dir\(\)", text)
        if reads_site and "pytest.mark.site" not in text:
            unmarked.append(path.name)
        if re.search(r"skip\w*\([^)]*no built site", text):
            skipping.append(path.name)
    assert not unmarked, f"tests that read the built site without the `site` marker: {unmarked}"
    assert not skipping, f"tests that skip when the site is missing: {skipping}"
