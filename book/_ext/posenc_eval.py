"""MyST ``{eval}`` roles on the static site, filled from the cached execution.

jupyterlab-myst evaluates ``{eval}`expr``` in the live kernel; myst-nb does so only in
its ``inline`` execution mode, which has no cache. This extension keeps
``execute_notebooks: cache``:

* ``source-read``: after every Markdown cell that uses ``{eval}``, and once at the end,
  a hidden code cell (tag ``remove-cell``) calling ``posenc.book.evals.record`` is added
  to the notebook text myst-nb parses (``posenc.book.evals.add_record_cells``, which
  ``tools/execute_book.py`` uses too when it executes the notebooks ahead of the build). The expressions are thus part of the code that
  jupyter-cache hashes: editing an expression re-executes, editing other prose does not.
* the ``eval`` role (replacing myst-nb's) reads the recorded text from the executed
  notebook and inserts it. A missing value, an error, an expression that fails where the
  prose uses it, or one whose value changes later in the notebook (Lab's Run All shows
  the final value) is a build error at the role's line.
"""

from __future__ import annotations

import json
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx

from posenc.book.evals import MIMETYPE
from posenc.book.evals import add_record_cells as with_record_cells


def add_record_cells(app: Sphinx, docname: str, source: list[str]) -> None:
    if not str(app.env.doc2path(docname)).endswith(".ipynb"):
        return
    nb = json.loads(source[0])
    if with_record_cells(nb):
        source[0] = json.dumps(nb)


def _recorded(document: nodes.document) -> tuple[list[dict[str, Any]], dict[str, Any]] | None:
    cached = getattr(document, "_posenc_eval", None)
    if cached is None:
        renderer = document.get("nb_renderer") if hasattr(document, "get") else None
        if renderer is None:
            return None
        notebook = renderer.renderer.nb_client.notebook
        records = [
            output["data"][MIMETYPE]
            for cell in notebook.cells if cell.cell_type == "code"
            for output in cell.get("outputs", []) if MIMETYPE in output.get("data", {})
        ]
        ends = [r for r in records if r["where"] == "end"]
        cached = document._posenc_eval = (records[:-1], ends[0]["values"]) if ends else None
    return cached


def eval_role(name: str, rawtext: str, text: str, lineno: int, inliner: Any,
              options: dict[str, Any] | None = None, content: list[str] | None = None):
    def fail(message: str):
        env = inliner.document.settings.env  # re-read next build, or the error is forgotten
        env.posenc_eval_failed = getattr(env, "posenc_eval_failed", set()) | {env.docname}
        msg = inliner.reporter.error(f"{{eval}}`{text}`: {message}", line=lineno)
        return [inliner.problematic(rawtext, rawtext, msg)], [msg]

    recorded = _recorded(inliner.document)
    if recorded is None:
        return fail("no recorded values: {eval} works in notebooks executed by the build "
                    "(execute_notebooks: cache or force)")
    points, final = recorded
    if text not in final:
        return fail("not recorded by the execution (is the notebook's cache stale?)")
    if "error" in final[text]:
        return fail(final[text]["error"])
    for point in points:
        value = point["values"].get(text)
        if value is None:
            continue
        if "error" in value:
            return fail(f"fails where the prose uses it ({point['where']}): {value['error']}; "
                        "compute it in a code cell above that Markdown cell")
        if value["text"] != final[text]["text"]:
            return fail(f"is {value['text']!r} after {point['where']} but {final[text]['text']!r} "
                        "at the end of the notebook (JupyterLab's Run All shows the final value): "
                        "do not rebind names used in the prose")
    return [nodes.inline(rawtext, final[text]["text"], classes=["posenc-eval"])], []


def _failed_docs(app: Sphinx, env: Any, added: set, changed: set, removed: set) -> list[str]:
    failed, env.posenc_eval_failed = getattr(env, "posenc_eval_failed", set()), set()
    return sorted(failed - removed)


def setup(app: Sphinx) -> dict[str, Any]:
    app.setup_extension("myst_nb")  # so that this role replaces myst-nb's `eval`
    app.add_role("eval", eval_role, override=True)
    app.connect("source-read", add_record_cells)
    app.connect("env-get-outdated", _failed_docs)
    return {"version": "0.1", "env_version": 1, "parallel_read_safe": True, "parallel_write_safe": True}
