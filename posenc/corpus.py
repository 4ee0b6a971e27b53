"""Real text for the book's language-modelling runs: a fixed snapshot of English prose, split by document.

The snapshot (``posenc/data/python_docs.jsonl.xz``) holds the reStructuredText sources of the
Python 3.11 documentation (tutorial, HOWTOs, FAQ, language reference, glossary, "using",
"extending", "what's new") as Debian's ``python3.11-doc`` package ships them, under the PSF
licence (``posenc/data/python_docs_LICENSE.txt``). ``tools/make_corpus.py`` wrote it;
``posenc/data/python_docs.json`` records its SHA-256 and the size of each split. Every
document belongs to exactly one split (train, validation, test), so no sentence is both
trained on and tested.

Text is read as bytes (a vocabulary of 256): no tokenizer to download or to explain, and
"bits per byte" compares across models and lengths.
"""

from __future__ import annotations

import functools
import hashlib
import json
import lzma
from dataclasses import dataclass
from pathlib import Path

import torch

from posenc.checks import check_choice

__all__ = ["SPLITS", "CORPORA", "DOCUMENT_SEPARATOR", "Document", "corpus_path", "load_documents", "split_bytes",
           "verify_corpus"]

#: The splits of a corpus.
SPLITS: tuple[str, ...] = ("train", "validation", "test")
#: The corpora posenc ships (by name).
CORPORA: tuple[str, ...] = ("python_docs",)
#: Put between documents when a split is read as one stream of bytes.
DOCUMENT_SEPARATOR = b"\n\n"
_DATA = Path(__file__).resolve().parent / "data"


@dataclass(frozen=True)
class Document:
    """One document of the snapshot: its path in the documentation, its split and its text."""

    path: str
    split: str
    text: str


def corpus_path(name: str = "python_docs") -> Path:
    """The compressed snapshot of corpus ``name`` (``.jsonl.xz``)."""
    check_choice("name", name, CORPORA)
    return _DATA / f"{name}.jsonl.xz"


def verify_corpus(name: str = "python_docs") -> str:
    """Check the snapshot's SHA-256 against its manifest; returns it.

    Raises:
        FileNotFoundError: the snapshot or its manifest is missing.
        ValueError: the checksum differs (the file was changed or damaged).
    """
    path = corpus_path(name)
    manifest = path.with_name(f"{name}.json")
    for required in (path, manifest):
        if not required.is_file():
            raise FileNotFoundError(f"corpus file {required} is missing (tools/make_corpus.py writes it)")
    expected = json.loads(manifest.read_text(encoding="utf-8"))["sha256"]
    actual = hashlib.sha256(path.read_bytes()).hexdigest()
    if actual != expected:
        raise ValueError(f"{path} has SHA-256 {actual}, but its manifest records {expected}: the snapshot changed")
    return actual


@functools.lru_cache(maxsize=4)
def load_documents(name: str = "python_docs") -> tuple[Document, ...]:
    """Every document of the snapshot, in its stored order (checksum verified)."""
    verify_corpus(name)
    lines = lzma.decompress(corpus_path(name).read_bytes()).decode("utf-8").splitlines()
    return tuple(Document(**json.loads(line)) for line in lines if line)


@functools.lru_cache(maxsize=12)
def split_bytes(split: str, name: str = "python_docs") -> torch.Tensor:
    """One split as a stream of bytes, documents joined by :data:`DOCUMENT_SEPARATOR`.

    Returns:
        A 1-D ``torch.uint8`` tensor (read-only use: it is cached).
    """
    check_choice("split", split, SPLITS)
    text = DOCUMENT_SEPARATOR.join(doc.text.encode("utf-8") for doc in load_documents(name) if doc.split == split)
    return torch.frombuffer(bytearray(text), dtype=torch.uint8)
