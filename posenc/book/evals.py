"""Values of the book's MyST ``{eval}`` roles, recorded for the static site.

In JupyterLab, jupyterlab-myst evaluates ``{eval}`expr``` itself. For the site,
:func:`add_record_cells` adds hidden cells that call :func:`record` to the notebook the
build executes (the book's Sphinx extension ``book/_ext/posenc_eval.py`` does it when the
build reads a notebook, and ``tools/execute_book.py`` when it executes the notebooks ahead
of the build), so the values come from the same cached execution as every other output.
"""

from __future__ import annotations

import re
from typing import Any

from markdown_it import MarkdownIt
from mdit_py_plugins.myst_role import myst_role_plugin

MIMETYPE = "application/vnd.posenc.eval+json"
# jupyterlab-myst shows a text/plain result with one pair of enclosing quotes removed
# (``/^(["'])(.*)\1$/`` in its PlainTextRenderer): the site does exactly the same.
_QUOTED = re.compile(r"([\"'])(.*)\1")
_MD = MarkdownIt("commonmark").use(myst_role_plugin)


def eval_expressions(markdown: str) -> list[str]:
    """The ``{eval}`` expressions of a Markdown text, directive bodies included, each once, in order."""
    found: list[str] = []

    def walk(tokens: list[Any]) -> None:
        for token in tokens:
            if token.type == "myst_role" and token.meta.get("name") == "eval":
                found.append(token.content)
            elif token.type == "fence" and token.info.startswith("{"):
                walk(_MD.parse(token.content))  # a MyST directive: its body is MyST
            if token.children:
                walk(token.children)

    walk(_MD.parse(markdown))
    return list(dict.fromkeys(found))


def _record_cell(expressions: list[str], where: str, n: int) -> dict[str, Any]:
    return {
        "cell_type": "code", "id": f"posenc-eval-{n}", "execution_count": None, "outputs": [],
        "metadata": {"tags": ["remove-cell"]},
        "source": f"import posenc.book.evals\nposenc.book.evals.record({expressions!r}, {where!r})",
    }


def add_record_cells(notebook: dict[str, Any]) -> bool:
    """Add a hidden :func:`record` cell after every Markdown cell with ``{eval}`` roles, and one at the end.

    Works in place on the notebook's JSON (a dict as ``json.loads`` gives it). The
    expressions become part of the code that jupyter-cache hashes: editing one re-executes
    the notebook, editing other prose does not. ``metadata["source_map"]`` keeps each
    cell's line base (myst-nb's ``(index + 1) * 10000``), so build warnings still point at
    the source's cells.

    Returns:
        True if the notebook has ``{eval}`` roles (and was changed), False otherwise.
    """
    cells, lines, every = [], [], []
    for index, cell in enumerate(notebook["cells"]):
        cells.append(cell)
        lines.append((index + 1) * 10000)  # myst-nb's default line base of cell `index`
        text = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
        found = eval_expressions(text) if cell["cell_type"] == "markdown" else []
        if found:
            cells.append(_record_cell(found, f"Markdown cell {index}", len(cells)))
            lines.append(lines[-1])  # warnings keep pointing at the source's cells
            every += found
    if not every:
        return False
    cells.append(_record_cell(list(dict.fromkeys(every)), "end", len(cells)))
    lines.append(lines[-1])
    notebook["cells"] = cells
    notebook["metadata"]["source_map"] = lines
    return True


def record(expressions: list[str], where: str) -> None:
    """Evaluate ``expressions`` as jupyterlab-myst does, display them for the build."""
    from IPython import get_ipython
    from IPython.display import display

    shell = get_ipython()
    # the very call the kernel makes for Lab's execute_request(user_expressions=...)
    replies = shell.user_expressions({str(i): e for i, e in enumerate(expressions)})
    values: dict[str, dict[str, str]] = {}
    for i, expression in enumerate(expressions):
        reply = replies[str(i)]
        if reply["status"] != "ok":
            values[expression] = {"error": f"{reply['ename']}: {reply['evalue']}"}
            continue
        rich = sorted(set(reply["data"]) - {"text/plain"})
        if rich:
            values[expression] = {
                "error": f"gives {', '.join(rich)}, which jupyterlab-myst shows as a block; "
                'return a str instead, e.g. f"{x:.3f}"'
            }
            continue
        text = reply["data"]["text/plain"]
        quoted = _QUOTED.fullmatch(text)
        values[expression] = {"text": quoted.group(2) if quoted else text}
    display({MIMETYPE: {"where": where, "values": values}, "text/plain": f"{len(values)} {{eval}} values"}, raw=True)


class ProseValues(dict[str, Any]):
    """The computed values a chapter's text shows, one copy each.

    A code cell stores a value under a name (``prose["chance"] = chance``, or a built name
    such as ``prose[f"acc_{n}"]``); the Markdown reads it with a MyST inline expression,
    ``{eval}`f"{prose.chance:.3f}"```, which jupyterlab-myst evaluates in the live kernel
    and the book's build fills from the executed notebook (:func:`record`).
    """

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            known = ", ".join(sorted(self)) or "none yet"
            raise AttributeError(
                f"no prose value {name!r}: set prose[{name!r}] in a code cell above the text that uses it "
                f"(values set so far: {known})"
            ) from None
