"""Records for the book's fact check of its source texts (Appendix B).

Each :class:`Claim` is one quantitative or attributive statement from one of the four
source texts, with a verdict from :data:`VERDICTS` and the evidence in MyST markdown:

* ``"confirmed"``: this book's code shows it; the evidence links to the cell
  (``{ref}`` or ``{doc}``);
* ``"partly right"``: true only with a qualification the claim leaves out; the evidence states
  the qualification and its source (a citation or a link to a cell);
* ``"corrected"``: wrong, or contradicted by a source; the evidence states what is right and
  gives its source (a citation or a link to the cell that computes it);
* ``"unverifiable"``: cannot be checked, because the claim gives no source and none was found,
  or because the facts are not public (e.g. the architecture of a closed model); the evidence
  says why, and may point at what is published;
* ``"cited"``: a published result that code cannot reproduce; the evidence cites it.

:func:`count_verdicts` and :func:`counts_by_source` count them, :func:`claims_table` and
:func:`summary_table` render MyST tables (shown by a code cell whose Markdown output is parsed as MyST).
Nothing is counted by hand: the page's summary comes from these functions.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from posenc.checks import check_choice, check_instance, check_mapping, check_text

__all__ = ["VERDICTS", "Claim", "count_verdicts", "counts_by_source", "claims_table", "summary_table", "verdict_key"]

#: The verdicts, in the order the page lists them.
VERDICTS: tuple[str, ...] = ("confirmed", "partly right", "corrected", "unverifiable", "cited")

_LINK = re.compile(r"\{(?:doc|ref)\}`[^`]+`")
_CITE = re.compile(r"\{cite(?::[a-z]+)?\}`[^`]+`")


@dataclass(frozen=True)
class Claim:
    """One claim of a source text and its verdict.

    Attributes:
        id: short unique id, e.g. ``"002-21"`` (source text number, running number).
        source: the source text, e.g. ``"002"``.
        claim: the claim, quoted briefly or paraphrased (one line of MyST markdown).
        verdict: one of :data:`VERDICTS`.
        evidence: MyST markdown: why, and where (links and citations).

    Raises:
        ValueError: an empty field, an unknown verdict, or evidence without the kind of
            source its verdict needs (confirmed: a ``{ref}``/``{doc}`` link; cited: a
            ``{cite}`` role; partly right and corrected: either; unverifiable: none required).
    """

    id: str
    source: str
    claim: str
    verdict: str
    evidence: str

    def __post_init__(self) -> None:
        for name in ("id", "source", "claim", "evidence"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value.strip():
                raise ValueError(f"{name} of claim {self.id!r} must be a non-empty string, got {value!r}")
            if "\n" in value:
                raise ValueError(f"{name} of claim {self.id!r} must be one line (it becomes a table cell)")
        check_choice("verdict", self.verdict, VERDICTS)
        has_link, has_cite = bool(_LINK.search(self.evidence)), bool(_CITE.search(self.evidence))
        if self.verdict == "confirmed" and not has_link:
            raise ValueError(f"claim {self.id!r} is 'confirmed' but its evidence links to no cell ({{ref}} or {{doc}})")
        if self.verdict == "cited" and not has_cite:
            raise ValueError(f"claim {self.id!r} is 'cited' but its evidence has no {{cite}} role")
        if self.verdict in ("partly right", "corrected") and not (has_link or has_cite):
            raise ValueError(
                f"claim {self.id!r} is {self.verdict!r} but its evidence gives no source (a link or a citation)"
            )


def verdict_key(verdict: str) -> str:
    """A verdict as a Python identifier, e.g. ``"partly right"`` -> ``"partly_right"`` (for names of stored values)."""
    return str(check_choice("verdict", verdict, VERDICTS)).replace(" ", "_")


def _listed(claims: Iterable[Claim]) -> list[Claim]:
    """``claims`` as a list of :class:`Claim` records (a TypeError naming ``claims`` otherwise)."""
    if isinstance(claims, str | bytes | Claim) or not isinstance(claims, Iterable):
        raise TypeError(f"claims must be a sequence of Claim records, got {claims!r} of type {type(claims).__name__}")
    listed = list(claims)
    for index, claim in enumerate(listed):
        check_instance(f"claims[{index}]", claim, Claim, what="a Claim record")
    return listed


def _check_unique(claims: Sequence[Claim]) -> None:
    seen: set[str] = set()
    for claim in claims:
        if not isinstance(claim, Claim):
            raise TypeError(f"claims must hold Claim records, got {type(claim).__name__}")
        if claim.id in seen:
            raise ValueError(f"claim id {claim.id!r} is used twice")
        seen.add(claim.id)


def count_verdicts(claims: Iterable[Claim]) -> dict[str, int]:
    """``{verdict: number of claims}`` for every verdict in :data:`VERDICTS` (zeros included)."""
    claims = _listed(claims)
    _check_unique(claims)
    return {verdict: sum(c.verdict == verdict for c in claims) for verdict in VERDICTS}


def counts_by_source(claims: Iterable[Claim]) -> dict[str, dict[str, int]]:
    """``{source: {verdict: count}}``, source texts in sorted order."""
    claims = _listed(claims)
    _check_unique(claims)
    return {source: count_verdicts(c for c in claims if c.source == source)
            for source in sorted({c.source for c in claims})}


def _cell(text: str) -> str:
    # A pipe would end the table cell; MyST reads an escaped one as a literal "|".
    return text.replace("|", "\\|")


def claims_table(claims: Iterable[Claim], *, source: str | None = None) -> str:
    """A MyST table with columns claim (led by its id), verdict, evidence (only ``source``'s claims if given)."""
    if source is not None:
        check_text("source", source, empty=False)
    rows = [c for c in _listed(claims) if source is None or c.source == source]
    if not rows:
        raise ValueError(f"no claims to tabulate for source text {source!r}")
    lines = ["| Claim | Verdict | Evidence |", "|---|---|---|"]
    lines += [f"| **{c.id}** {_cell(c.claim)} | **{c.verdict}** | {_cell(c.evidence)} |" for c in rows]
    return "\n".join(lines)


def summary_table(claims: Iterable[Claim], *, source_names: dict[str, str] | None = None) -> str:
    """A MyST table of verdict counts: one row per source text and a total row."""
    claims = _listed(claims)
    names = {} if source_names is None else check_mapping("source_names", source_names)
    header = "| Source | " + " | ".join(VERDICTS) + " | all |"
    lines = [header, "|---|" + "---:|" * (len(VERDICTS) + 1)]
    for source, counts in counts_by_source(claims).items():
        label = _cell(names.get(source, source))
        lines.append(f"| {label} | " + " | ".join(str(counts[v]) for v in VERDICTS) + f" | {sum(counts.values())} |")
    total = count_verdicts(claims)
    lines.append("| **all sources** | " + " | ".join(f"**{total[v]}**" for v in VERDICTS) + f" | **{len(claims)}** |")
    return "\n".join(lines)
