"""Write the book's real-text corpus snapshot from Debian's ``python3.11-doc`` package (``make corpus``).

The snapshot is English prose written by others: the reStructuredText sources of the Python
3.11 documentation (tutorial, HOWTOs, FAQ, language reference, glossary, "using", "extending"
and "what's new"), as Debian ships them in ``python3.11-doc`` (``/usr/share/doc/python3.11/html/_sources``).
The documentation is under the PSF licence; its licence page is stored beside the snapshot.

    apt-get download python3.11-doc          # the exact version is checked below
    python -m tools.make_corpus python3.11-doc_3.11.2-6+deb12u9_all.deb

Output (``posenc/data``): ``python_docs.jsonl.xz`` (one JSON object per document: path, split,
text), ``python_docs_LICENSE.txt`` and ``python_docs.json`` (package version, SHA-256 of the
snapshot, documents and bytes per split). Each document goes to one split only, chosen by a hash
of its path (about 80 % train, 10 % validation, 10 % test), so no text crosses splits.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import lzma
import subprocess
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "posenc" / "data"
PACKAGE = "python3.11-doc_3.11.2-6+deb12u9_all.deb"
SOURCES = Path("usr/share/doc/python3.11/html/_sources")
FOLDERS = ("tutorial", "howto", "faq", "reference", "using", "extending", "whatsnew")
FILES = ("glossary.rst.txt",)


def split_of(path: str) -> str:
    """``"test"``, ``"validation"`` or ``"train"``, by the first byte of the path's SHA-256 (stable, uniform)."""
    bucket = hashlib.sha256(path.encode()).digest()[0] % 10
    return "test" if bucket == 0 else "validation" if bucket == 1 else "train"


def documents(sources: Path) -> list[dict[str, str]]:
    paths = sorted(p for folder in FOLDERS for p in (sources / folder).rglob("*.rst.txt"))
    paths += [sources / name for name in FILES]
    docs = []
    for path in paths:
        relative = str(path.relative_to(sources))
        docs.append({"path": relative, "split": split_of(relative), "text": path.read_text(encoding="utf-8")})
    return docs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("deb", type=Path, help=f"the Debian package file, {PACKAGE}")
    args = parser.parse_args(argv)
    if args.deb.name != PACKAGE:
        parser.error(f"expected {PACKAGE} (the snapshot is of that exact version), got {args.deb.name}")
    with tempfile.TemporaryDirectory() as folder:
        subprocess.run(["dpkg-deb", "-x", str(args.deb), folder], check=True)
        sources = Path(folder) / SOURCES
        docs = documents(sources)
        licence = (sources / "license.rst.txt").read_text(encoding="utf-8")
    OUT.mkdir(parents=True, exist_ok=True)
    lines = "".join(json.dumps(doc, ensure_ascii=False, sort_keys=True) + "\n" for doc in docs).encode("utf-8")
    # xz with fixed settings: the same input gives the same bytes, so the checksum is reproducible
    data = lzma.compress(lines, format=lzma.FORMAT_XZ, check=lzma.CHECK_CRC64, preset=9)
    (OUT / "python_docs.jsonl.xz").write_bytes(data)
    (OUT / "python_docs_LICENSE.txt").write_text(licence, encoding="utf-8")
    splits = {name: {"documents": sum(d["split"] == name for d in docs),
                     "bytes": sum(len(d["text"].encode()) for d in docs if d["split"] == name)}
              for name in ("train", "validation", "test")}
    manifest = {"source": f"Debian package {PACKAGE}, {SOURCES}", "folders": list(FOLDERS) + list(FILES),
                "licence": "PSF License Agreement (python_docs_LICENSE.txt)",
                "sha256": hashlib.sha256(data).hexdigest(), "splits": splits}
    (OUT / "python_docs.json").write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(manifest, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
