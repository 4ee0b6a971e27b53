"""Strictly build a subset of the book's pages into a separate folder.

    python -m tools.partial_build --out /tmp/ch2 book/02_sinusoidal [book/03_learned ...]

Uses the real _config.yml with a temporary table of contents (root page + the given
pages), so authors can check their chapter with -W -n without rebuilding everything.
References to pages outside the subset are reported as warnings; that is expected here.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True, help="output folder (gets _build/html inside)")
    parser.add_argument("pages", nargs="+", help="page paths without suffix, e.g. book/02_sinusoidal")
    args = parser.parse_args()
    lines = ["format: jb-book", "root: book/index", "chapters:"]
    lines += [f"  - file: {page.removesuffix('.ipynb').removesuffix('.md')}" for page in args.pages]
    with tempfile.NamedTemporaryFile("w", suffix=".yml", delete=False) as toc:
        toc.write("\n".join(lines) + "\n")
    command = [
        str(Path(sys.executable).parent / "jupyter-book"), "build", str(ROOT),
        "--toc", toc.name, "--path-output", args.out, "-W", "-n", "--keep-going",
    ]
    print(" ".join(command))
    return subprocess.call(command, cwd=ROOT)


if __name__ == "__main__":
    raise SystemExit(main())
