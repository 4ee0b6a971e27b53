"""What ``make test`` (and so CI, through ``.ci/run``) runs, read from ``make -n`` (the commands make
would run, in order) rather than from the Makefile's text.

These guard the promises of the README's test command: the type check and the build run
(side by side) before pytest, the notebooks execute before the strict build, pytest runs the tests, every book notebook and one student
notebook, its exit status (including 5, "no test ran") is never swallowed, parallelism follows
the machine, and ``make unit`` leaves out exactly the tests that need a build or a browser.
"""

from __future__ import annotations

import re
import subprocess
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAKEFILE = (ROOT / "Makefile").read_text()
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def planned(target: str) -> list[str]:
    """The commands ``make -n <target>`` prints (what the target would run, in order)."""
    done = subprocess.run(["make", "-n", "--no-print-directory", target], cwd=ROOT, capture_output=True, text=True,
                          check=True)
    return [line.strip() for line in done.stdout.splitlines() if line.strip()]


def index_of(commands: list[str], pattern: str) -> int:
    hits = [i for i, command in enumerate(commands) if re.search(pattern, command)]
    assert hits, f"no command matching {pattern!r} in {commands}"
    return hits[0]


def test_test_type_checks_and_builds_then_runs_every_test_and_notebook() -> None:
    commands = planned("test")
    typecheck = index_of(commands, r"-m mypy posenc$")
    execute = index_of(commands, r"-m tools\.execute_book")
    build = index_of(commands, r"jupyter-book build \. -W -n --keep-going")
    pytest = index_of(commands, r"-m pytest ")
    assert execute < build < pytest and typecheck < pytest, commands
    # mypy and the build side by side: one make, two jobs, each job's output kept together
    both = index_of(commands, r"make .*-j2 .*--output-sync=target typecheck book$")
    assert both < typecheck and both < execute, commands
    arguments = commands[pytest].split(" -m pytest ", 1)[1].split()
    assert "--nbval-lax" in arguments and {"tests", "book"} <= set(arguments), arguments
    students = [a for a in arguments if a.startswith("_build/student/")]
    assert len(students) == 1 and students[0].endswith(".ipynb"), f"one student notebook as a smoke test: {arguments}"
    assert PYPROJECT["tool"]["pytest"]["ini_options"]["testpaths"] == ["tests", "book"]


def test_classroom_kit_runs_every_student_notebook_and_the_pdf_checks() -> None:
    commands = planned("classroom-kit")
    assert any(re.search(r"-m tools\.make_pdf$", c) for c in commands), commands
    pytest = commands[index_of(commands, r"-m pytest ")]
    assert "--nbval-lax _build/student " in pytest and "tests/test_pdf.py" in pytest, pytest


def test_typecheck_runs_mypy_on_posenc() -> None:
    assert planned("typecheck")[-1].endswith("-m mypy posenc")
    mypy = PYPROJECT["tool"]["mypy"]
    assert mypy.get("packages") == ["posenc"]
    assert not mypy.get("ignore_errors") and not mypy.get("ignore_missing_imports"), (
        "errors are silenced wholesale; list untyped third-party modules in [[tool.mypy.overrides]] instead"
    )


def test_pytest_exit_status_reaches_make() -> None:
    """pytest exits 5 when it ran no test: that must fail `make test` like any failure."""
    for name in ("test", "unit", "notebooks", "browser", "lab-test", "typecheck", "classroom-kit"):
        for line in planned(name):
            if " -m pytest " not in line and " -m mypy " not in line:
                continue
            assert not re.search(r"\|\|\s*(true|:|exit 0)|;\s*true\b|\|\s*tee\b", line), (
                f"make {name} hides the exit status of: {line}"
            )
    for line in MAKEFILE.splitlines():
        assert not re.match(r"\t-", line), f"a recipe line ignores its exit status: {line.strip()}"
    ci = (ROOT / ".ci" / "run").read_text()
    assert "set -euo pipefail" in ci


def test_parallelism_follows_the_machine() -> None:
    pytest = next(c for c in planned("unit") if " -m pytest " in c).split()
    assert pytest[pytest.index("-n") + 1] == "auto", pytest
    assert pytest[pytest.index("--dist") + 1] == "loadfile", pytest


def test_unit_target_leaves_out_site_browser_and_lab_tests() -> None:
    commands = planned("unit")
    assert not any("jupyter-book" in c for c in commands), commands
    assert commands[-1].endswith('tests -m "not browser and not site and not lab"'), commands
    markers = " ".join(PYPROJECT["tool"]["pytest"]["ini_options"]["markers"])
    assert "site:" in markers and "browser:" in markers and "lab:" in markers
    assert PYPROJECT["tool"]["pytest"]["ini_options"].get("strict_markers") is True


def test_make_exports_the_kernel_caps_of_the_stored_runs() -> None:
    """Every command make starts sees the CPU kernel caps of posenc.runtime (unless the caller set them)."""
    import os

    from posenc.runtime import KERNEL_CAPS

    env = {k: v for k, v in os.environ.items() if k not in KERNEL_CAPS}
    shell = " ".join(f"$${variable}" for variable in KERNEL_CAPS)
    done = subprocess.run(["make", "-s", "--eval", f"show-caps: ; @echo {shell}", "show-caps"], cwd=ROOT, env=env,
                          capture_output=True, text=True, check=True)
    assert done.stdout.split() == list(KERNEL_CAPS.values())


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
