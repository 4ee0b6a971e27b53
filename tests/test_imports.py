"""posenc's imports run one way: no cycle, no plug-in loading, no state changed by an import.

Two views of the same rule:

* statically, every ``import`` of a posenc module anywhere in posenc (inside functions
  too) is an edge of a graph that must have no cycle, and the teaching modules never
  import the book helpers (:mod:`posenc.book`);
* dynamically, each module is imported alone in a fresh interpreter, which must print
  nothing, write no file and leave plotly's defaults, torch's default dtype, the random
  number generators and the environment as they were.
"""

from __future__ import annotations

import ast
import json
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import posenc

PACKAGE_DIR = Path(posenc.__file__).resolve().parent
MODULES: list[str] = ["posenc"] + sorted(
    info.name for info in pkgutil.walk_packages([str(PACKAGE_DIR)], prefix="posenc.")
)


def _source_file(module: str) -> Path:
    relative = Path(*module.split(".")[1:])
    package = PACKAGE_DIR / relative / "__init__.py"
    return package if package.is_file() else (PACKAGE_DIR / relative).with_suffix(".py")


def _imported_posenc_modules(module: str) -> set[str]:
    """posenc modules that ``module`` imports, at any depth of its code."""
    tree = ast.parse(_source_file(module).read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.startswith("posenc"))
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("posenc"):
            found.add(node.module)
            # ``from posenc import plots`` imports the module posenc.plots.
            found.update(f"{node.module}.{a.name}" for a in node.names if f"{node.module}.{a.name}" in MODULES)
    found.discard(module)
    return found & set(MODULES)


def _find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` as a list of nodes (first == last), or ``None``."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (cycle := visit(start)):
            return cycle
    return None


def test_the_cycle_finder_finds_cycles() -> None:
    assert _find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None
    assert _find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]


def test_posenc_has_no_import_cycle() -> None:
    graph = {module: _imported_posenc_modules(module) for module in MODULES}
    cycle = _find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_teaching_modules_never_import_the_book_helpers() -> None:
    teaching = [m for m in MODULES if m != "posenc.book" and not m.startswith("posenc.book.")]
    offenders = {m: sorted(i for i in _imported_posenc_modules(m) if i.startswith("posenc.book")) for m in teaching}
    assert not {m: i for m, i in offenders.items() if i}


#: The package's layers, lowest first (the README's "Inside posenc, dependencies run one way"): a
#: module imports only modules of lower layers. Computing modules (layers 0-8) never draw; the
#: figures sit on top: ``plots`` (style), ``paper`` (figures drawn for print), ``interactive``
#: (explorers), then every ``X_plots``,
#: which may also import another ``*_plots`` module (the cycle test above still applies). A new
#: module needs a place here.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("checks", "palette", "runtime", "book.evals"),
    ("sinusoidal", "corpus", "results", "perplexity", "book.factcheck", "landscape"),
    ("learned", "extrapolate", "order", "tasks", "robustness"),
    ("schemes", "params", "compare"),
    ("relative", "hybrid"),
    ("registry", "rope_scaling"),
    ("models", "rope_practice", "rope_config", "long_context", "rope_variants"),
    ("train", "analysis", "bugs"),
    ("checkpoint", "suite", "pretrained"),
    ("plots",),
    ("paper",),  # the second renderer of figures: matplotlib small multiples for print
    ("interactive",),
    tuple(sorted(m.removeprefix("posenc.") for m in MODULES if m.endswith("_plots"))),
    ("book",),
    ("book.findings",),
    ("",),  # the package itself
)
DRAWING_LAYER = 9
#: Third-party packages that draw: computing modules must not import them.
DRAWING_PACKAGES = ("plotly", "ipywidgets", "anywidget", "matplotlib")


def _layer(module: str) -> int:
    name = module.removeprefix("posenc").removeprefix(".")
    for index, names in enumerate(LAYERS):
        if name in names:
            return index
    raise AssertionError(f"{module} has no layer in tests/test_imports.py LAYERS: give it one")


def test_every_module_has_a_layer() -> None:
    for module in MODULES:
        _layer(module)


def test_imports_run_down_the_layers() -> None:
    """``X`` computes, ``X_plots`` draws: a computing module never imports a figure module, and no
    module imports one of its own layer or above (``*_plots`` modules may import each other)."""
    breaches = []
    for module in MODULES:
        for imported in sorted(_imported_posenc_modules(module)):
            both_plots = module.endswith("_plots") and imported.endswith("_plots")
            if _layer(imported) >= _layer(module) and not both_plots:
                breaches.append(f"{module} (layer {_layer(module)}) imports {imported} (layer {_layer(imported)})")
    assert not breaches, "imports against the layers:\n" + "\n".join(breaches)


def test_computing_modules_do_not_draw() -> None:
    drawing = []
    for module in MODULES:
        if _layer(module) >= DRAWING_LAYER:
            continue
        tree = ast.parse(_source_file(module).read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            drawing += [f"{module} line {node.lineno}: {n}" for n in names if n.split(".")[0] in DRAWING_PACKAGES]
    assert not drawing, "computing modules that import a drawing package:\n" + "\n".join(drawing)


def test_the_layer_check_catches_a_breach(monkeypatch: pytest.MonkeyPatch) -> None:
    """Not vacuous: a computing module that imported the explorers would fail it."""
    real = _imported_posenc_modules
    monkeypatch.setattr(sys.modules[__name__], "_imported_posenc_modules",
                        lambda m: real(m) | ({"posenc.interactive"} if m == "posenc.suite" else set()))
    with pytest.raises(AssertionError, match="posenc.suite .* imports posenc.interactive"):
        test_imports_run_down_the_layers()


@pytest.mark.parametrize("module", MODULES)
def test_no_plugin_loading_or_guarded_sibling_imports(module: str) -> None:
    """Dependencies are plain imports: no importlib, no ``try: import posenc...``."""
    tree = ast.parse(_source_file(module).read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            names = [a.name for a in node.names] + ([node.module] if isinstance(node, ast.ImportFrom) else [])
            assert "importlib" not in names, f"{module} line {node.lineno}: imports importlib"
        if isinstance(node, ast.Try):
            for inner in ast.walk(ast.Module(body=node.body, type_ignores=[])):
                if isinstance(inner, ast.ImportFrom) and (inner.module or "").startswith("posenc"):
                    pytest.fail(f"{module} line {inner.lineno}: try-imports {inner.module}")
                if isinstance(inner, ast.Import) and any(a.name.startswith("posenc") for a in inner.names):
                    pytest.fail(f"{module} line {inner.lineno}: try-imports a posenc module")


# One fresh interpreter imports the third-party packages first (scikit-learn, for one,
# sets environment variables and draws from Python's random generator when imported), then
# forks one child per posenc module: each child starts with no posenc module loaded, imports
# its module alone, and reports what changed. What is measured is posenc's own import.
_PROBE = r"""
import io, json, os, random, sys, tempfile
import IPython.display, ipywidgets, plotly.graph_objects, plotly.subplots, safetensors
import sklearn.decomposition, sklearn.metrics.pairwise
import numpy as np
import plotly.io as pio
import torch

def snapshot():
    return {
        "plotly renderer": pio.renderers.default,
        "plotly template": str(pio.templates.default),
        "torch default dtype": str(torch.get_default_dtype()),
        "torch random state": torch.random.get_rng_state().sum().item(),
        "numpy random state": int(np.random.get_state()[1].sum()),
        "python random state": hash(random.getstate()),
        "environment": sorted(os.environ.items()),
    }

assert not [name for name in sys.modules if name.startswith("posenc")]
snapshot()  # plotly resolves its default renderer lazily (seconds): once here, not in every child
report = {}
for module in sys.argv[1:]:
    workdir = tempfile.mkdtemp()
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        os.chdir(workdir)
        result = {}
        out, err = io.StringIO(), io.StringIO()
        sys.stdout, sys.stderr = out, err
        try:
            before = snapshot()
            __import__(module)
            after = snapshot()
            result["changed"] = sorted(k for k in before if before[k] != after[k])
        except BaseException as error:
            result["error"] = f"{type(error).__name__}: {error}"
        result["printed"] = out.getvalue() + err.getvalue()
        result["files"] = sorted(os.listdir(workdir))
        os.write(write_end, json.dumps(result).encode())
        os._exit(0)
    os.close(write_end)
    chunks = []
    while chunk := os.read(read_end, 65536):
        chunks.append(chunk)
    os.waitpid(pid, 0)
    report[module] = json.loads(b"".join(chunks))
sys.__stdout__.write(json.dumps(report))
"""


@pytest.fixture(scope="module")
def import_report() -> dict[str, dict[str, object]]:
    done = subprocess.run([sys.executable, "-c", _PROBE, *MODULES], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"the import probe failed:\n{done.stderr[-3000:]}"
    return json.loads(done.stdout)


@pytest.mark.parametrize("module", MODULES)
def test_module_imports_alone_without_side_effects(module: str, import_report: dict[str, dict[str, object]]) -> None:
    result = import_report[module]
    assert "error" not in result, f"importing {module} alone failed: {result.get('error')}"
    assert result["changed"] == [], f"importing {module} changed global state: {result['changed']}"
    assert result["printed"] == "", f"importing {module} printed: {result['printed']}"
    assert result["files"] == [], f"importing {module} wrote files: {result['files']}"
