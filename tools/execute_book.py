"""Execute the book's notebooks into the build's execution cache, in parallel (the first step of ``make book``).

The strict build (``jupyter-book build``, ``execute_notebooks: cache``) executes a notebook
only when jupyter-cache holds no run of its exact code, and it runs them one at a time.
This step runs them ahead of the build, one kernel per core, and caches each run exactly as
myst-nb would (the same ``{eval}`` record cells, the same hash), so the build finds every
notebook cached. It also knows what jupyter-cache does not: a page's outputs depend on more
than its own code. A run is redone when any of its **inputs** changed:

* the ``posenc`` package and ``posenc.book`` (every chapter imports them), the book's
  Sphinx extension, and ``requirements.lock`` (the installed packages);
* every stored result in ``book/data`` whose file name the notebook mentions (e.g.
  ``"suite_grid.json"``): after ``make grids``, the chapters that read a new file run again,
  the others keep their cached run.

Each cached run carries the digest of its inputs. A notebook executed here has its file's
modification time updated, so Sphinx reads it again and the page shows the new outputs.

    python -m tools.execute_book [--jobs N] [--cache DIR] [--dry-run]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import threading
import time
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import nbformat
import yaml
from jupyter_cache import get_cache
from jupyter_cache.base import CacheBundleIn
from jupyter_cache.executors.utils import single_nb_execution

from posenc.book.evals import add_record_cells
from tools.toc import ROOT, toc_notebooks

#: Where jupyter-book keeps its execution cache.
CACHE_DIR = Path("_build") / ".jupyter_cache"
#: Files every notebook's outputs depend on (globs relative to the book's root).
SHARED_INPUTS = ("posenc/**/*.py", "book/_ext/**/*", "requirements.lock")
#: Stored results a notebook may read (it depends on those whose file name it mentions).
DATA_DIR = Path("book") / "data"
#: The key under which a cached run records the digest of its inputs.
INPUTS_KEY = "posenc_inputs"
#: Kernels run side by side, but jupyter-cache's database is written by one thread at a time.
_CACHE_LOCK = threading.Lock()


def _files(root: Path, patterns: Iterable[str]) -> list[Path]:
    found = {path for pattern in patterns for path in root.glob(pattern) if path.is_file()}
    return sorted(path for path in found if "__pycache__" not in path.parts)


def data_inputs(notebook: Path, root: Path = ROOT) -> list[Path]:
    """The files of ``book/data`` whose name the notebook's text mentions, sorted."""
    text = notebook.read_text(encoding="utf-8")
    return [path for path in _files(root, [f"{DATA_DIR}/*"]) if path.name in text]


def inputs_digest(notebook: Path, root: Path = ROOT) -> str:
    """SHA-256 over the shared inputs and the notebook's stored results (their paths and bytes)."""
    digest = hashlib.sha256()
    for path in _files(root, SHARED_INPUTS) + data_inputs(notebook, root):
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def prepared_notebook(notebook: Path) -> nbformat.NotebookNode:
    """The notebook as the build executes it: with the ``{eval}`` record cells of ``posenc.book.evals``."""
    data = json.loads(notebook.read_text(encoding="utf-8"))
    add_record_cells(data)
    return nbformat.reads(json.dumps(data), as_version=4)


@dataclass(frozen=True)
class Plan:
    """What one notebook needs: ``reason`` is ``None`` when its cached run is current."""

    notebook: Path
    digest: str
    reason: str | None


def plan(notebooks: Iterable[Path], cache_dir: Path, root: Path = ROOT) -> list[Plan]:
    """For each notebook: is there a cached run of its code, made from the current inputs?"""
    cache = get_cache(str(cache_dir))
    plans = []
    for notebook in notebooks:
        digest = inputs_digest(notebook, root)
        try:
            record = cache.match_cache_notebook(prepared_notebook(notebook))
        except KeyError:
            plans.append(Plan(notebook, digest, "no cached run of its code"))
            continue
        if record.data.get(INPUTS_KEY) != digest:
            plans.append(Plan(notebook, digest, "its inputs changed (posenc, the extension, the lock or its data)"))
            cache.remove_cache(record.pk)
        else:
            plans.append(Plan(notebook, digest, None))
    return plans


def execution_settings(root: Path = ROOT) -> tuple[int, bool]:
    """``(timeout, allow_errors)`` from ``_config.yml``'s ``execute`` section, as the build reads them."""
    execute = (yaml.safe_load((root / "_config.yml").read_text(encoding="utf-8")) or {}).get("execute", {})
    return int(execute.get("timeout", 300)), bool(execute.get("allow_errors", False))


def execute(item: Plan, cache_dir: Path, timeout: int, allow_errors: bool) -> tuple[Plan, float, str | None]:
    """Run one notebook in a fresh kernel (in its own folder) and cache the run; returns ``(plan, seconds, error)``."""
    notebook = prepared_notebook(item.notebook)
    result = single_nb_execution(notebook, cwd=str(item.notebook.parent), timeout=timeout,
                                 allow_errors=allow_errors, meta_override=True)
    if result.err is not None:
        return item, result.time, result.exc_string or repr(result.err)
    with _CACHE_LOCK:
        cache = get_cache(str(cache_dir))
        cache.cache_notebook_bundle(
            CacheBundleIn(notebook, str(item.notebook),
                          data={"execution_seconds": result.time, INPUTS_KEY: item.digest}),
            check_validity=False, overwrite=True)
    os.utime(item.notebook)  # Sphinx reads a source again when its modification time is newer
    return item, result.time, None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="kernels at once (default: cores)")
    parser.add_argument("--root", type=Path, default=ROOT, help="the book's root (default: this repository)")
    parser.add_argument("--cache", type=Path, default=None,
                        help="the execution cache (default: _build/.jupyter_cache under the root, jupyter-book's)")
    parser.add_argument("--dry-run", action="store_true", help="say what would run; execute nothing")
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error(f"--jobs must be at least 1, got {args.jobs}")
    root = args.root.resolve()
    cache_dir = (args.cache or root / CACHE_DIR).resolve()
    notebooks = [root / path for path in toc_notebooks(root)]
    plans = plan(notebooks, cache_dir, root) if not args.dry_run else [
        Plan(n, inputs_digest(n, root), "(dry run)") for n in notebooks]
    todo = [p for p in plans if p.reason is not None]
    for item in plans:
        print(f"{item.notebook.relative_to(root)}: {item.reason or 'cached run is current'}")
    if args.dry_run or not todo:
        return 0
    timeout, allow_errors = execution_settings(root)
    # Kernels run side by side: one torch thread each, as under nbval (tests/conftest.py), so the
    # numbers the pages print are the numbers the tests see.
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    started = time.perf_counter()
    failures = []
    with ThreadPoolExecutor(max_workers=min(args.jobs, len(todo))) as pool:
        for item, seconds, error in pool.map(lambda p: execute(p, cache_dir, timeout, allow_errors), todo):
            print(f"  executed {item.notebook.relative_to(root)} in {seconds:.1f} s" + (" FAILED" if error else ""),
                  flush=True)
            if error:
                failures.append((item.notebook, error))
    print(f"{len(todo)} notebook(s) executed on {min(args.jobs, len(todo))} kernel(s) at once in "
          f"{time.perf_counter() - started:.0f} s")
    for notebook, error in failures:
        print(f"\n{notebook.relative_to(root)} failed:\n{error}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
