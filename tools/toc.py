"""The table of contents (``_toc.yml``), read in one place for the tools, the benchmarks and the tests."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
#: Pages every Sphinx site has besides the table of contents.
EXTRA_PAGES = ("index.html", "search.html", "genindex.html")


@dataclass(frozen=True)
class TocEntry:
    """One page of the table of contents.

    Attributes:
        file: the repository-relative source without its suffix, e.g. ``"book/02_sinusoidal"``.
        numbered: the page sits in a numbered part (its title gets a chapter number).
        caption: the caption of its part (``None`` for the root page).
    """

    file: str
    numbered: bool
    caption: str | None


def toc_entries(root: Path = ROOT) -> list[TocEntry]:
    """Every page of ``_toc.yml`` in reading order: the root page, then each part's chapters."""
    toc = yaml.safe_load((root / "_toc.yml").read_text(encoding="utf-8"))
    entries = [TocEntry(toc["root"], False, None)]
    for part in toc.get("parts", []):
        entries += [TocEntry(chapter["file"], bool(part.get("numbered")), part.get("caption"))
                    for chapter in part.get("chapters", [])]
    entries += [TocEntry(chapter["file"], False, None) for chapter in toc.get("chapters", [])]
    return entries


def toc_files(root: Path = ROOT) -> list[str]:
    """The ``file`` of every page, in reading order (``"book/index"``, ``"book/01_why_order_matters"``, ...)."""
    return [entry.file for entry in toc_entries(root)]


def toc_source(file: str, root: Path = ROOT) -> Path:
    """The source of a page: its ``.ipynb`` or ``.md`` file (FileNotFoundError if neither exists)."""
    for suffix in (".ipynb", ".md"):
        if (root / f"{file}{suffix}").is_file():
            return root / f"{file}{suffix}"
    raise FileNotFoundError(f"_toc.yml lists {file!r}, but neither {file}.ipynb nor {file}.md exists in {root}")


def toc_pages(root: Path = ROOT) -> list[str]:
    """Site-relative HTML paths of every page of the table of contents, then index/search/genindex."""
    return [f"{file}.html" for file in toc_files(root)] + list(EXTRA_PAGES)


def toc_notebooks(root: Path = ROOT) -> list[str]:
    """Repository-relative paths of every notebook (``.ipynb``) of the table of contents, in order."""
    return [f"{file}.ipynb" for file in toc_files(root) if (root / f"{file}.ipynb").is_file()]
