"""Tests for posenc.book.factcheck: records validate their evidence, counts and tables are exact."""

from __future__ import annotations

import pytest

from posenc.book.factcheck import (
    VERDICTS,
    Claim,
    claims_table,
    count_verdicts,
    counts_by_source,
    summary_table,
    verdict_key,
)


def make(id: str, source: str = "000", verdict: str = "confirmed", evidence: str = "see {doc}`02_sinusoidal`") -> Claim:
    return Claim(id=id, source=source, claim=f"claim {id}", verdict=verdict, evidence=evidence)


CLAIMS = [
    make("000-1"),
    make("000-2", verdict="cited", evidence="{cite:p}`vaswani2017attention`"),
    make("001-1", source="001", verdict="corrected", evidence="wrong; right: {cite:t}`press2022train`"),
    make("001-2", source="001", verdict="corrected", evidence="computed in {ref}`fc-check-params`"),
    make("001-3", source="001"),
    make("001-4", source="001", verdict="partly right", evidence="true at the training length: {ref}`exp-schemes`"),
    make("001-5", source="001", verdict="unverifiable", evidence="the architecture is not published"),
]


def test_count_verdicts_counts_each_verdict() -> None:
    assert count_verdicts(CLAIMS) == {"confirmed": 2, "partly right": 1, "corrected": 2, "unverifiable": 1, "cited": 1}
    assert list(count_verdicts(CLAIMS)) == list(VERDICTS)
    assert count_verdicts([]) == {verdict: 0 for verdict in VERDICTS}


def test_counts_by_source() -> None:
    assert counts_by_source(CLAIMS) == {
        "000": {"confirmed": 1, "partly right": 0, "corrected": 0, "unverifiable": 0, "cited": 1},
        "001": {"confirmed": 1, "partly right": 1, "corrected": 2, "unverifiable": 1, "cited": 0},
    }


def test_duplicate_ids_are_rejected() -> None:
    with pytest.raises(ValueError, match="'000-1' is used twice"):
        count_verdicts([make("000-1"), make("000-1")])


@pytest.mark.parametrize(
    ("verdict", "evidence", "message"),
    [
        ("confirmed", "trust me", "links to no cell"),
        ("confirmed", "{cite:p}`vaswani2017attention`", "links to no cell"),
        ("cited", "see {doc}`02_sinusoidal`", "no {cite} role"),
        ("corrected", "it is wrong", "'corrected' but its evidence gives no source"),
        ("partly right", "true, mostly", "'partly right' but its evidence gives no source"),
        ("maybe", "{doc}`02_sinusoidal`", "verdict must be one of"),
    ],
)
def test_evidence_must_fit_the_verdict(verdict: str, evidence: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        make("x", verdict=verdict, evidence=evidence)


def test_unverifiable_needs_no_source_but_says_why() -> None:
    claim = make("x", verdict="unverifiable", evidence="not published by its makers")
    assert claim.verdict == "unverifiable"
    with pytest.raises(ValueError, match="evidence of claim 'x' must be a non-empty string"):
        make("x", verdict="unverifiable", evidence="")


def test_verdict_key_is_an_identifier() -> None:
    assert [verdict_key(v) for v in VERDICTS] == ["confirmed", "partly_right", "corrected", "unverifiable", "cited"]
    assert all(verdict_key(v).isidentifier() for v in VERDICTS)
    with pytest.raises(ValueError, match="verdict must be one of"):
        verdict_key("wrong")


def test_fields_must_be_single_nonempty_lines() -> None:
    with pytest.raises(ValueError, match="claim of claim 'x' must be a non-empty string"):
        Claim(id="x", source="000", claim=" ", verdict="confirmed", evidence="{doc}`a`")
    with pytest.raises(ValueError, match="must be one line"):
        Claim(id="x", source="000", claim="two\nlines", verdict="confirmed", evidence="{doc}`a`")


def test_claims_table_rows_and_escaping() -> None:
    claim = Claim(id="002-9", source="002", claim="a | b", verdict="cited", evidence="{cite:p}`x`")
    table = claims_table([claim, make("000-1")], source="002").splitlines()
    assert table[0] == "| Claim | Verdict | Evidence |"
    assert table[2] == "| **002-9** a \\| b | **cited** | {cite:p}`x` |"
    assert len(table) == 3  # header, rule, one row: the other source text is left out
    with pytest.raises(ValueError, match="no claims to tabulate for source text '009'"):
        claims_table(CLAIMS, source="009")


def test_summary_table_totals() -> None:
    lines = summary_table(CLAIMS, source_names={"000": "Source text 000"}).splitlines()
    assert lines[0] == "| Source | confirmed | partly right | corrected | unverifiable | cited | all |"
    assert lines[1] == "|---|---:|---:|---:|---:|---:|---:|"
    assert lines[2] == "| Source text 000 | 1 | 0 | 0 | 0 | 1 | 2 |"
    assert lines[3] == "| 001 | 1 | 1 | 2 | 1 | 0 | 5 |"
    assert lines[4] == "| **all sources** | **2** | **1** | **2** | **1** | **1** | **7** |"
