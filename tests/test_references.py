"""Citations, the bibliography and the glossary agree with each other.

* every key cited anywhere in the book (``{cite}``, ``{cite:p}``, ``{cite:t}``, ...; in
  markdown pages, notebook cells, and markdown that posenc generates) exists in
  ``book/references.bib``;
* every bib entry has a title, an author (or editor) and a four-digit year, and no key
  appears twice;
* every ``{term}`` role names a term of ``book/glossary.md``, and every glossary term is
  linked from at least one chapter or appendix.

The strict Sphinx build catches a missing key too, but only after minutes of building;
these checks take a fraction of a second and say exactly where the problem is.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pybtex.database
import pytest

ROOT = Path(__file__).resolve().parents[1]
BOOK = ROOT / "book"
BIB = BOOK / "references.bib"
GLOSSARY = BOOK / "glossary.md"

CITE = re.compile(r"\{cite(?::[a-z]+)?\}`(?P<keys>[^`]*)`")
TERM = re.compile(r"\{term\}`(?P<body>[^`]*)`")
BIB_KEY = re.compile(r"^[ \t]*@(?P<kind>\w+)[ \t]*\{[ \t]*(?P<key>[^,\s]+)[ \t]*,", re.MULTILINE)
YEAR = re.compile(r"^\d{4}$")


# -- helpers ------------------------------------------------------------------------------------
def book_texts(*, include_posenc: bool = True) -> dict[str, str]:
    """Source text of every page: ``{"book/x.md": text, "book/y.ipynb#cell3": text, ...}``.

    Code cells are included because a cell may print or display MyST markdown that cites; posenc
    modules are included because some build markdown tables for the chapters.
    """
    texts: dict[str, str] = {}
    for path in sorted(BOOK.glob("*.md")):
        texts[str(path.relative_to(ROOT))] = path.read_text()
    for path in sorted(BOOK.glob("*.ipynb")):
        notebook = json.loads(path.read_text())
        for index, cell in enumerate(notebook.get("cells", [])):
            source = cell.get("source", "")
            texts[f"{path.relative_to(ROOT)}#cell{index}"] = "".join(source) if isinstance(source, list) else source
    if include_posenc:
        for path in sorted((ROOT / "posenc").glob("*.py")):
            texts[str(path.relative_to(ROOT))] = path.read_text()
    return texts


def cited_keys(text: str) -> list[str]:
    """Keys of every cite role in ``text``, in order (``{cite:p}`a,b``` gives ``["a", "b"]``)."""
    return [key.strip() for match in CITE.finditer(text) for key in match.group("keys").split(",") if key.strip()]


def missing_citations(texts: dict[str, str], known: set[str]) -> dict[str, list[str]]:
    """``{where: [unknown keys]}`` for every text that cites a key not in ``known``."""
    missing: dict[str, list[str]] = {}
    for where, text in texts.items():
        unknown = [key for key in cited_keys(text) if key not in known]
        if unknown:
            missing[where] = unknown
    return missing


def bib_keys_in_order(text: str) -> list[str]:
    """Entry keys of a .bib text as written (``@comment``/``@string``/``@preamble`` skipped)."""
    return [m.group("key") for m in BIB_KEY.finditer(text) if m.group("kind").lower() not in {"comment", "string", "preamble"}]


def incomplete_entries(database: pybtex.database.BibliographyData) -> dict[str, list[str]]:
    """``{key: [missing fields]}`` for entries without a title, an author/editor, or a 4-digit year."""
    problems: dict[str, list[str]] = {}
    for key, entry in database.entries.items():
        missing = []
        if not entry.fields.get("title", "").strip():
            missing.append("title")
        if not (entry.persons.get("author") or entry.persons.get("editor")):
            missing.append("author")
        if not YEAR.match(entry.fields.get("year", "").strip()):
            missing.append("year")
        if missing:
            problems[key] = missing
    return problems


def glossary_entries(text: str) -> list[list[str]]:
    """Entries of the ``{glossary}`` directive(s) in a MyST page, each a list of its names.

    Unindented lines of the body are terms; consecutive ones name the same entry (aliases).
    """
    entries: list[list[str]] = []
    for block in re.finditer(r"^(`{3,}|:{3,})\{glossary\}[^\n]*\n(?P<body>.*?)^\1[ \t]*$", text, re.MULTILINE | re.DOTALL):
        previous_was_term = False
        for line in block.group("body").splitlines():
            is_term = bool(line.strip()) and not line[0].isspace() and not line.startswith(":")
            if is_term and previous_was_term:
                entries[-1].append(line.strip())
            elif is_term:
                entries.append([line.strip()])
            previous_was_term = is_term
    return entries


def glossary_terms(text: str) -> list[str]:
    """Every name of every glossary entry, in order."""
    return [term for entry in glossary_entries(text) for term in entry]


def term_targets(text: str) -> list[str]:
    """Targets of every ``{term}`` role: ``{term}`x``` -> ``x``; ``{term}`text <x>``` -> ``x``."""
    targets = []
    for match in TERM.finditer(text):
        body = match.group("body").strip()
        explicit = re.match(r"^(?P<text>.*?)\s*<(?P<target>[^<>]+)>$", body, re.DOTALL)
        targets.append((explicit.group("target") if explicit else body).strip())
    return targets


# -- the book -----------------------------------------------------------------------------------
DATABASE = pybtex.database.parse_file(str(BIB))
BIB_TEXT = BIB.read_text()


def test_every_cited_key_is_in_the_bibliography() -> None:
    missing = missing_citations(book_texts(), set(DATABASE.entries.keys()))
    assert not missing, f"cited but not in {BIB.name}: {missing}"


def test_the_book_cites_something() -> None:
    # Guards the scanner: if the regex broke, the test above would pass vacuously.
    assert len({key for text in book_texts().values() for key in cited_keys(text)}) >= 3


def test_every_bib_entry_has_title_author_year() -> None:
    problems = incomplete_entries(DATABASE)
    assert not problems, f"incomplete entries in {BIB.name}: {problems}"


def test_no_bib_key_is_defined_twice() -> None:
    keys = [key.lower() for key in bib_keys_in_order(BIB_TEXT)]
    duplicates = sorted({key for key in keys if keys.count(key) > 1})
    assert not duplicates, f"keys defined more than once in {BIB.name}: {duplicates}"
    assert len(keys) == len(DATABASE.entries)


def test_every_term_role_names_a_glossary_term() -> None:
    terms = {term.lower() for term in glossary_terms(GLOSSARY.read_text())}
    unknown = {
        where: bad
        for where, text in book_texts(include_posenc=False).items()
        if (bad := [t for t in term_targets(text) if t.lower() not in terms])
    }
    assert not unknown, f"{{term}} roles without a glossary entry: {unknown}"


#: Terms chapters link to (the foundation's list); they must stay in the glossary.
CORE_TERMS = (
    "self-attention", "permutation equivariance", "causal mask", "positional encoding", "absolute position",
    "relative position", "sinusoidal encoding", "learned position embedding", "maximum length", "token embedding",
    "segment embedding", "inductive bias", "extrapolation", "position interpolation", "RoPE", "ALiBi",
)


def test_glossary_keeps_the_core_terms() -> None:
    terms = glossary_terms(GLOSSARY.read_text())
    assert [t for t in CORE_TERMS if t not in terms] == []
    assert len(terms) == len(set(terms)), "a glossary term is defined twice"


def test_every_glossary_term_is_linked_from_the_book() -> None:
    used = {
        target.lower()
        for where, text in book_texts(include_posenc=False).items()
        if not where.startswith("book/glossary")
        for target in term_targets(text)
    }
    unused = [entry for entry in glossary_entries(GLOSSARY.read_text()) if not any(t.lower() in used for t in entry)]
    assert not unused, f"glossary entries no page links to with {{term}}: {unused}"


# -- the checkers themselves must be able to fail ---------------------------------------------
def test_cited_keys_parses_every_cite_role() -> None:
    text = "See {cite:t}`vaswani2017attention` and {cite:p}`a, b`; also {cite}`c` and {cite:ps}`d`."
    assert cited_keys(text) == ["vaswani2017attention", "a", "b", "c", "d"]


def test_missing_citations_reports_an_unknown_key() -> None:
    texts = {"good.md": "{cite:p}`known`", "bad.md": "{cite:t}`known` and {cite:p}`known,nosuchpaper2099`"}
    assert missing_citations(texts, {"known"}) == {"bad.md": ["nosuchpaper2099"]}


def test_incomplete_entries_reports_missing_fields() -> None:
    database = pybtex.database.parse_string(
        "@article{ok, title={T}, author={A, B}, year={2020}}\n"
        "@article{noyear, title={T}, author={A, B}}\n"
        "@misc{bare, note={nothing}}\n"
        "@article{badyear, title={T}, author={A, B}, year={20x0}}\n",
        "bibtex",
    )
    assert incomplete_entries(database) == {
        "noyear": ["year"],
        "bare": ["title", "author", "year"],
        "badyear": ["year"],
    }


def test_bib_keys_in_order_sees_duplicates() -> None:
    text = "@article{a,\n title={x}}\n@Book{ b ,\n}\n@comment{ignored,\n}\n@article{a,\n}\n"
    assert bib_keys_in_order(text) == ["a", "b", "a"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("{term}`causal mask`", ["causal mask"]),
        ("{term}`permutation-equivariant <permutation equivariance>`", ["permutation equivariance"]),
        ("{term}`RoPE` and {term}`ALiBi`", ["RoPE", "ALiBi"]),
    ],
)
def test_term_targets(text: str, expected: list[str]) -> None:
    assert term_targets(text) == expected


def test_glossary_terms_parses_a_glossary_block() -> None:
    page = "# G\n\n```{glossary}\n:sorted:\nalpha\n  Defined.\n\nbeta\ngamma\n  Two names, one entry.\n```\nafter\n"
    assert glossary_terms(page) == ["alpha", "beta", "gamma"]
    assert glossary_entries(page) == [["alpha"], ["beta", "gamma"]]
