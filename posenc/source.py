"""Show posenc's real source in a notebook, so the book never pastes a copy."""

from __future__ import annotations

import inspect
import textwrap
from typing import Any

from IPython.display import Markdown

__all__ = ["show_source"]


def show_source(obj: Any, *, docstring: bool = True) -> Markdown:
    """Return the highlighted source of a posenc function, class or method.

    Args:
        obj: the object whose source to show (must be defined in a Python file).
        docstring: keep the docstring; ``False`` drops it to keep long listings short.
    """
    try:
        source = inspect.getsource(obj)
    except (TypeError, OSError) as error:
        raise TypeError(f"show_source needs a function, class or method defined in a file, got {obj!r}") from error
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
