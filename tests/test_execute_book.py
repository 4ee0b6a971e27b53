"""``make book``'s first step (``tools/execute_book.py``): notebooks run ahead of the build, in
parallel, into the execution cache, and run again when an input jupyter-cache does not see changed.

The stale-page case: a chapter reads a stored result (``book/data/*.json``); after ``make grids``
rewrites it, the page must show the new numbers although the notebook did not change. A tiny
book (two notebooks, one of which reads a data file) is built with the real ``jupyter-book``.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from tools import execute_book

ROOT = Path(__file__).resolve().parents[1]

CONFIG = """title: tiny
only_build_toc_files: true
exclude_patterns: [_build]
execute:
  execute_notebooks: cache
  timeout: 120
"""
TOC = """format: jb-book
root: book/index
chapters:
  - file: book/reads_data
  - file: book/plain
"""


def _notebook(path: Path, code: str) -> None:
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(f"# {path.stem}"),
                                               nbformat.v4.new_code_cell(code)])
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(notebook, str(path))


@pytest.fixture
def tiny_book(tmp_path: Path) -> Path:
    (tmp_path / "book" / "data").mkdir(parents=True)
    (tmp_path / "_config.yml").write_text(CONFIG)
    (tmp_path / "_toc.yml").write_text(TOC)
    (tmp_path / "book" / "index.md").write_text("# Tiny\n")
    (tmp_path / "book" / "data" / "result.json").write_text(json.dumps({"accuracy": 0.25}))
    _notebook(tmp_path / "book" / "reads_data.ipynb",
              'import json\nprint("accuracy", json.load(open("data/result.json"))["accuracy"])')
    _notebook(tmp_path / "book" / "plain.ipynb", 'print("no data here")')
    return tmp_path


def _run(root: Path) -> list[str]:
    """Run the tool on ``root``; returns the notebooks it executed."""
    done = subprocess.run([sys.executable, "-m", "tools.execute_book", "--root", str(root), "--jobs", "2"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return sorted(re.findall(r"executed (book/\S+\.ipynb)", done.stdout))


def _build(root: Path) -> str:
    jupyter_book = shutil.which("jupyter-book", path=str(Path(sys.executable).parent))
    assert jupyter_book, "jupyter-book is not installed in this environment"
    done = subprocess.run([jupyter_book, "build", str(root), "-W", "--keep-going"], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "Executing notebook" not in done.stdout, "the build executed a notebook the tool had cached"
    return (root / "_build" / "html" / "book" / "reads_data.html").read_text(encoding="utf-8")


def test_a_changed_data_file_re_executes_the_chapter_that_reads_it(tiny_book: Path) -> None:
    assert _run(tiny_book) == ["book/plain.ipynb", "book/reads_data.ipynb"]
    assert "accuracy 0.25" in _build(tiny_book)
    assert _run(tiny_book) == []  # nothing changed: every cached run is current
    (tiny_book / "book" / "data" / "result.json").write_text(json.dumps({"accuracy": 0.75}))
    assert _run(tiny_book) == ["book/reads_data.ipynb"]  # only the chapter that reads the file
    page = _build(tiny_book)
    assert "accuracy 0.75" in page and "accuracy 0.25" not in page


def test_inputs_are_the_shared_files_and_the_data_a_notebook_names(tiny_book: Path) -> None:
    reads, plain = tiny_book / "book" / "reads_data.ipynb", tiny_book / "book" / "plain.ipynb"
    assert execute_book.data_inputs(reads, tiny_book) == [tiny_book / "book" / "data" / "result.json"]
    assert execute_book.data_inputs(plain, tiny_book) == []
    before = (execute_book.inputs_digest(reads, tiny_book), execute_book.inputs_digest(plain, tiny_book))
    (tiny_book / "requirements.lock").write_text("changed packages\n")  # a shared input
    after = (execute_book.inputs_digest(reads, tiny_book), execute_book.inputs_digest(plain, tiny_book))
    assert before[0] != after[0] and before[1] != after[1]


def test_the_tool_caches_what_the_build_would_execute() -> None:
    """The prepared notebook is the build's: with the {eval} record cells the extension adds."""
    chapter = ROOT / "book" / "02_sinusoidal.ipynb"
    prepared = execute_book.prepared_notebook(chapter)
    plain = nbformat.read(str(chapter), as_version=4)
    added = [cell for cell in prepared.cells if cell.get("id", "").startswith("posenc-eval-")]
    assert added and len(prepared.cells) == len(plain.cells) + len(added)
    assert all("posenc.book.evals.record" in cell.source for cell in added)
