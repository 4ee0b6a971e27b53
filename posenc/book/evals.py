"""Values of the book's MyST ``{eval}`` roles, recorded for the static site.

In JupyterLab, jupyterlab-myst evaluates ``{eval}`expr``` itself. For the site, the
book's Sphinx extension (``book/_ext/posenc_eval.py``) adds hidden cells that call
:func:`record` while the notebook runs in the build (and in jupyter-cache), so the
values come from the same cached execution as every other output.
"""

from __future__ import annotations

import re
from typing import Any

MIMETYPE = "application/vnd.posenc.eval+json"
# jupyterlab-myst shows a text/plain result with one pair of enclosing quotes removed
# (``/^(["'])(.*)\1$/`` in its PlainTextRenderer): the site does exactly the same.
_QUOTED = re.compile(r"([\"'])(.*)\1")


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
