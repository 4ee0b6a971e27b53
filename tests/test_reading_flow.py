"""The site reads like a book: no code cell that only does bookkeeping is shown on a page.

Bookkeeping is what a reader of the site does not need to see: imports, the book's figure
style, seeding, and storing the values the text shows (``prose[...] = ...``). A code cell made
of nothing else must carry one of the standard tags that hide or remove it on the site
(the live notebook keeps everything). Cells that compute, draw or check something stay
visible; checks may be folded with ``hide-input``.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "book").glob("*.ipynb"))
HIDING_TAGS = {"remove-cell", "remove-input", "hide-input", "hide-cell"}
_SETUP_CALLS = {"use_book_style", "manual_seed", "ProseValues", "seed"}


def _call_name(node: ast.AST) -> str | None:
    if isinstance(node, ast.Call):
        func = node.func
        return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
    return None


def is_bookkeeping(statement: ast.stmt) -> bool:
    """Imports, setup calls, and statements that only store values for the text."""
    if isinstance(statement, ast.Import | ast.ImportFrom | ast.Pass):
        return True
    if isinstance(statement, ast.Expr):
        return _call_name(statement.value) in _SETUP_CALLS
    if isinstance(statement, ast.Assign):
        if _call_name(statement.value) in _SETUP_CALLS:
            return True
        return all(
            isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name) and target.value.id == "prose"
            for target in statement.targets
        )
    if isinstance(statement, ast.For):
        return not statement.orelse and all(is_bookkeeping(inner) for inner in statement.body)
    return False


def bookkeeping_only(source: str) -> bool:
    # IPython magics and shell escapes are not Python: such a cell does something visible.
    if any(line.lstrip().startswith(("%", "!")) for line in source.splitlines()):
        return False
    statements = ast.parse(source).body
    return bool(statements) and all(is_bookkeeping(s) for s in statements)


def test_the_classifier() -> None:
    assert bookkeeping_only("import torch\nfrom posenc.book import ProseValues\nprose = ProseValues()\nuse_book_style()")
    assert bookkeeping_only('prose["a"] = 1\nfor k in range(3):\n    prose[f"b{k}"] = k')
    assert not bookkeeping_only('prose["a"] = f(1)\nfig')
    assert not bookkeeping_only("assert x == 1")
    assert not bookkeeping_only("")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_no_visible_bookkeeping_cell(path: Path) -> None:
    notebook = json.loads(path.read_text(encoding="utf-8"))
    shown = []
    for index, cell in enumerate(notebook["cells"]):
        if cell["cell_type"] != "code" or HIDING_TAGS & set(cell["metadata"].get("tags", [])):
            continue
        source = "".join(cell["source"])
        if bookkeeping_only(source):
            shown.append(f"cell {index}: {source.strip().splitlines()[0][:80]}")
    assert not shown, f"{path.name}: code cells that only do bookkeeping are shown on the site " \
                      f"(tag them remove-cell or hide-input): {shown}"
