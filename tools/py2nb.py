"""Write a book notebook from a percent-format script (authoring aid).

    python -m tools.py2nb /tmp/chapter.py book/02_sinusoidal.ipynb

Cells start with ``# %%`` (code) or ``# %% [markdown]`` (markdown; each line starts
with ``# `` which is removed). Tags: ``# %% tags=["hide-input"]``. The notebook is
written without outputs or execution counts, with the python3 kernelspec.
"""

from __future__ import annotations

import ast
import re
import sys

import nbformat

HEADER = re.compile(r"^# %%(?P<md> \[markdown\])?(?:\s+tags=(?P<tags>\[.*\]))?\s*$")


def convert(text: str) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.metadata = {
        "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
        "language_info": {"name": "python"},
    }
    cells: list[tuple[bool, list[str], list[str]]] = []
    for line in text.splitlines():
        match = HEADER.match(line)
        if match:
            tags = ast.literal_eval(match["tags"]) if match["tags"] else []
            cells.append((bool(match["md"]), tags, []))
        elif cells:
            cells[-1][2].append(line)
    for is_md, tags, lines in cells:
        while lines and not lines[-1].strip():
            lines.pop()
        while lines and not lines[0].strip():
            lines.pop(0)
        if is_md:
            source = "\n".join(l[2:] if l.startswith("# ") else l.lstrip("#") for l in lines)
            cell = nbformat.v4.new_markdown_cell(source)
        else:
            cell = nbformat.v4.new_code_cell("\n".join(lines))
        if tags:
            cell.metadata["tags"] = tags
        nb.cells.append(cell)
    return nb


def main() -> None:
    source, target = sys.argv[1], sys.argv[2]
    with open(source, encoding="utf-8") as handle:
        nb = convert(handle.read())
    nbformat.validate(nb)
    nbformat.write(nb, target)
    print(f"wrote {target}: {len(nb.cells)} cells")


if __name__ == "__main__":
    main()
