"""Every third-party package the project imports is pinned exactly in requirements.txt.

The imports of the package (``posenc/``), the tests, benchmarks, experiments, tools, the
book's Sphinx extension (``book/_ext``) and the code cells of every notebook in ``book/`` are
read with :mod:`ast` (so imports inside functions count too). Each top-level module is mapped
to the distribution that provides it with :func:`importlib.metadata.packages_distributions`;
the standard library and the project's own modules are left out. A distribution imported but
not pinned with ``==`` fails the test, by name and with the files that import it.
"""

from __future__ import annotations

import ast
import importlib.metadata
import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REQUIREMENTS = ROOT / "requirements.txt"
#: Folders whose ``.py`` files are scanned (recursively).
PY_FOLDERS = ("posenc", "tests", "benchmarks", "experiments", "tools", "book/_ext")
#: The project's own top-level modules: the package, the tests' helpers, the Sphinx extension.
OWN_MODULES = {"posenc", "support", "posenc_site", "posenc_eval", "conftest", "tools", "experiments", "benchmarks"}


def python_sources() -> Iterator[tuple[str, str]]:
    """(where, source) of every Python file scanned and every notebook code cell."""
    for folder in PY_FOLDERS:
        for path in sorted((ROOT / folder).rglob("*.py")):
            if "__pycache__" not in path.parts:
                yield str(path.relative_to(ROOT)), path.read_text(encoding="utf-8")
    for path in sorted((ROOT / "book").glob("*.ipynb")):
        try:
            notebook = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as error:
            raise AssertionError(f"{path.relative_to(ROOT)} is not valid JSON: {error}") from error
        for index, cell in enumerate(notebook["cells"]):
            if cell["cell_type"] == "code":
                source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
                # IPython magics and shell escapes are not Python: blank them out.
                source = "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines())
                yield f"{path.relative_to(ROOT)} cell {index}", source


def sibling_modules() -> set[str]:
    """Modules that scripts import from their own folder (``import sinusoidal_bench``)."""
    return {path.stem for folder in PY_FOLDERS for path in (ROOT / folder).glob("*.py")}


def top_level_imports(source: str, where: str) -> set[str]:
    """Top-level names of every absolute import in ``source``."""
    try:
        tree = ast.parse(source, filename=where)
    except SyntaxError as error:
        raise AssertionError(f"{where}: cannot parse: {error}") from error
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def pinned_distributions() -> dict[str, str]:
    """Normalised distribution name -> the exact version requirements.txt pins for this platform."""
    pins = {}
    for line in REQUIREMENTS.read_text(encoding="utf-8").splitlines():
        line = line.split("#")[0].strip()
        match = re.fullmatch(r"([A-Za-z0-9._-]+)(?:\[[^\]]*\])?\s*==\s*([^\s;]+)\s*(?:;\s*(.+))?", line)
        if match and applies_here(match.group(3)):
            pins[normalise(match.group(1))] = match.group(2)
    return pins


def applies_here(marker: str | None) -> bool:
    """Whether an environment marker of requirements.txt holds on this machine (the file uses only
    ``sys_platform == "..."`` and ``sys_platform != "..."``)."""
    if marker is None:
        return True
    match = re.fullmatch(r"""sys_platform\s*(==|!=)\s*["']([^"']+)["']""", marker.strip())
    assert match, f"requirements.txt: marker {marker!r} is not one this test can read"
    return (sys.platform == match.group(2)) == (match.group(1) == "==")


def normalise(name: str) -> str:
    """PEP 503 normalisation: ``Jupyter_Cache`` and ``jupyter-cache`` are one name."""
    return re.sub(r"[-_.]+", "-", name).lower()


def imported_modules() -> dict[str, list[str]]:
    """Third-party top-level module -> where it is imported."""
    ignore = set(sys.stdlib_module_names) | OWN_MODULES | sibling_modules() | {"__future__"}
    found: dict[str, list[str]] = {}
    for where, source in python_sources():
        for name in top_level_imports(source, where):
            if name not in ignore:
                found.setdefault(name, []).append(where)
    return found


def test_the_scan_sees_the_known_imports() -> None:
    """Guards against a scan that finds nothing (and so passes vacuously)."""
    modules = imported_modules()
    for name in ("torch", "numpy", "plotly", "pytest", "yaml", "nbformat", "transformers"):
        assert name in modules, f"{name} is imported somewhere but the scan did not see it"
    assert "json" not in modules and "posenc" not in modules


def test_every_imported_distribution_is_pinned_exactly() -> None:
    providers = importlib.metadata.packages_distributions()
    pins = pinned_distributions()
    unknown, unpinned = [], []
    for module, places in sorted(imported_modules().items()):
        where = ", ".join(places[:3]) + (f" and {len(places) - 3} more" if len(places) > 3 else "")
        distributions = providers.get(module)
        if not distributions:
            unknown.append(f"{module} (imported in {where}): no installed distribution provides it")
            continue
        if not any(normalise(dist) in pins for dist in distributions):
            unpinned.append(f"{' or '.join(sorted(set(distributions)))} (module {module}, imported in {where})")
    assert not unknown, "imports that no installed package provides (run `make setup`):\n" + "\n".join(unknown)
    assert not unpinned, "imported but not pinned with == in requirements.txt:\n" + "\n".join(unpinned)


def test_pins_match_the_installed_versions() -> None:
    """A pin that differs from what .venv has means requirements.txt was edited without
    reinstalling (``make setup``), or the other way round."""
    stale = []
    for name, version in pinned_distributions().items():
        try:
            installed = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            stale.append(f"{name}=={version}: not installed")
            continue
        if installed != version:
            stale.append(f"{name}=={version}: {installed} installed")
    assert not stale, "requirements.txt and the environment disagree:\n" + "\n".join(stale)
