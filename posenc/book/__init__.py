"""Helpers the book's chapters use, and nothing a reader needs in their own project.

* :func:`show_source` displays posenc's real source in a notebook, so the book never
  pastes a copy of library code;
* :func:`data_path` finds the results the book stores in ``book/data`` (written by the
  commands in ``experiments/``);
* :class:`ProseValues` holds the computed values a chapter's text shows with MyST
  ``{eval}`` (:mod:`posenc.book.evals` records them for the static site);
* :mod:`posenc.book.factcheck` holds the records of Appendix B's fact check.

The teaching modules never import this package; it imports them.
"""

from __future__ import annotations

import inspect
import textwrap
from pathlib import Path
from typing import Any

from IPython.display import Markdown

from posenc.book.evals import ProseValues
from posenc.checks import check_bool

__all__ = ["DATA_DIR", "ProseValues", "data_path", "show_source"]

#: Where the book keeps the results of its stored experiments (``book/data``).
DATA_DIR: Path = Path(__file__).resolve().parents[2] / "book" / "data"


def data_path(name: str) -> Path:
    """The path of a stored results file of the book, e.g. ``data_path("ch6_grid.json")``.

    Raises:
        FileNotFoundError: naming the file, the folder searched, the files it has, and
            the command that writes the book's results.
    """
    if not isinstance(name, str) or not name or Path(name).name != name:
        raise ValueError(f"name must be a plain file name such as 'ch6_grid.json', got {name!r}")
    path = DATA_DIR / name
    if not path.is_file():
        present = sorted(p.name for p in DATA_DIR.glob("*.json")) if DATA_DIR.is_dir() else []
        raise FileNotFoundError(
            f"no stored results {name!r} in {DATA_DIR} (files there: {present or 'none'}); "
            "regenerate them with `make grids` (from the repository root)"
        )
    return path


def show_source(obj: Any, *, docstring: bool = True) -> Markdown:
    """Return the highlighted source of a posenc function, class or method.

    Args:
        obj: the object whose source to show (must be defined in a Python file).
        docstring: keep the docstring; ``False`` drops it to keep long listings short.
    """
    docstring = check_bool("docstring", docstring)
    try:
        source = inspect.getsource(obj)
    except (TypeError, OSError) as error:
        raise TypeError(f"obj must be a function, class or method defined in a file (show_source shows its source), "
                        f"got {obj!r}") from error
    source = textwrap.dedent(source)
    if not docstring:
        source = _strip_docstring(source, obj)
    module = getattr(inspect.getmodule(obj), "__name__", "?")
    header = f"*Source of `{getattr(obj, '__qualname__', repr(obj))}` in `{module}`:*\n\n"
    return Markdown(header + "```python\n" + source.rstrip() + "\n```")


def _strip_docstring(source: str, obj: Any) -> str:
    doc = inspect.getdoc(obj)
    if not doc:
        return source
    lines = source.splitlines()
    for start, line in enumerate(lines):
        stripped = line.strip()
        if stripped.startswith(('"""', "'''", 'r"""')):
            quote = '"""' if '"""' in stripped else "'''"
            end = start
            if stripped.count(quote) < 2:
                end = next(i for i in range(start + 1, len(lines)) if quote in lines[i])
            return "\n".join(lines[:start] + lines[end + 1 :])
    return source
