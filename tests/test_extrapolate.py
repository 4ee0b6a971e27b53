"""Tests for posenc.extrapolate: each workaround's index mapping, lookups, errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from posenc.extrapolate import (
    STRATEGIES,
    clip_indices,
    extend_table,
    interpolate_indices,
    lookup,
    map_positions,
    modular_indices,
)
from posenc.analysis import cosine_similarity_matrix

FAST = settings(max_examples=50, deadline=None)


# -- index mappings: known answers ----------------------------------------------------------
def test_clip_known_values() -> None:
    assert clip_indices([0, 3, 4, 5, 100], 5).tolist() == [0, 3, 4, 4, 4]


def test_modular_known_values() -> None:
    assert modular_indices([0, 4, 5, 7, 10, 11], 5).tolist() == [0, 4, 0, 2, 0, 1]


def test_interpolate_known_values() -> None:
    # 0..8 squeezed onto 0..4: every second position lands on a row, the rest halfway between.
    got = interpolate_indices(torch.arange(9), 5, target_len=9)
    assert got.dtype == torch.float64
    assert got.tolist() == pytest.approx([0, 0.5, 1, 1.5, 2, 2.5, 3, 3.5, 4])


def test_interpolate_is_identity_when_the_table_is_long_enough() -> None:
    assert interpolate_indices([0, 1, 2, 3], 8).tolist() == [0.0, 1.0, 2.0, 3.0]
    assert interpolate_indices([0, 1, 2, 3], 8, target_len=8).tolist() == [0.0, 1.0, 2.0, 3.0]


def test_interpolate_default_target_len_is_max_position_plus_one() -> None:
    assert interpolate_indices(torch.arange(7), 4).tolist() == pytest.approx([0, 0.5, 1, 1.5, 2, 2.5, 3])


@FAST
@given(st.integers(1, 64), st.lists(st.integers(0, 500), min_size=1, max_size=30))
def test_mappings_stay_inside_the_table(max_len: int, positions: list[int]) -> None:
    target = max(positions) + 1
    for strategy in STRATEGIES:
        idx = map_positions(positions, max_len, strategy, target_len=target if strategy == "interpolate" else None)
        assert idx.shape == (len(positions),)
        assert float(idx.min()) >= 0 and float(idx.max()) <= max_len - 1


@FAST
@given(st.integers(1, 64), st.integers(0, 63))
def test_mappings_leave_positions_inside_the_table_alone(max_len: int, raw: int) -> None:
    p = raw % max_len
    assert int(clip_indices([p], max_len)) == p
    assert int(modular_indices([p], max_len)) == p
    assert float(interpolate_indices([p], max_len, target_len=max_len)) == p


@FAST
@given(st.integers(2, 40), st.integers(1, 5))
def test_interpolation_is_monotone_and_hits_both_ends(max_len: int, factor: int) -> None:
    target = max_len * factor
    idx = interpolate_indices(torch.arange(target), max_len, target_len=target)
    assert torch.all(idx[1:] >= idx[:-1])
    assert float(idx[0]) == 0.0 and float(idx[-1]) == pytest.approx(max_len - 1)


# -- lookups and tables ------------------------------------------------------------------------
def _table(rows: int = 4, dim: int = 3) -> torch.Tensor:
    return torch.arange(rows * dim, dtype=torch.float32).reshape(rows, dim)


def test_lookup_clip_and_modular_pick_rows() -> None:
    table = _table()
    assert torch.equal(lookup(table, [5], "clip")[0], table[3])
    assert torch.equal(lookup(table, [5], "modular")[0], table[1])


def test_lookup_interpolate_blends_neighbouring_rows() -> None:
    table = _table()
    # target_len 7 on 4 rows: position 1 -> index 0.5, halfway between rows 0 and 1.
    got = lookup(table, [1], "interpolate", target_len=7)[0]
    assert torch.allclose(got, (table[0] + table[1]) / 2)
    assert torch.allclose(lookup(table, [6], "interpolate", target_len=7)[0], table[3])


def test_lookup_keeps_batch_shape_and_gradients() -> None:
    table = _table().requires_grad_(True)
    out = lookup(table, torch.tensor([[0, 5], [6, 2]]), "interpolate", target_len=8)
    assert out.shape == (2, 2, 3)
    out.sum().backward()
    assert table.grad is not None and float(table.grad.abs().sum()) > 0


def test_extend_table_shapes_and_rows() -> None:
    table = _table()
    for strategy in STRATEGIES:
        longer = extend_table(table, 10, strategy)
        assert longer.shape == (10, 3)
        assert torch.allclose(longer[0], table[0])
    assert torch.equal(extend_table(table, 10, "clip")[9], table[3])
    assert torch.equal(extend_table(table, 10, "modular")[9], table[1])
    assert torch.allclose(extend_table(table, 10, "interpolate")[9], table[3])


def test_modular_extension_repeats_the_similarity_pattern() -> None:
    torch.manual_seed(0)
    table = torch.randn(8, 16)
    sim = cosine_similarity_matrix(extend_table(table, 16, "modular"))
    assert sim.shape == (16, 16)
    assert sim[0, 8] == pytest.approx(1.0)  # p and p + max_len share a row
    assert np.allclose(sim[:8, :8], sim[8:, 8:])


def test_clipped_rows_are_identical() -> None:
    torch.manual_seed(0)
    sim = cosine_similarity_matrix(extend_table(torch.randn(8, 16), 12, "clip"))
    assert np.allclose(sim[7:, 7:], 1.0)


def test_cosine_similarity_matrix_known_values() -> None:
    sim = cosine_similarity_matrix(np.array([[1.0, 0.0], [0.0, 2.0], [-3.0, 0.0]]))
    assert np.allclose(sim, [[1, 0, -1], [0, 1, 0], [-1, 0, 1]])


# -- errors ----------------------------------------------------------------------------------------
def test_no_workaround_raises_past_the_table() -> None:
    with pytest.raises(ValueError, match="must be < 4"):
        lookup(_table(), [4])


def test_bad_strategy_is_named() -> None:
    with pytest.raises(ValueError, match="strategy must be one of"):
        map_positions([0], 4, "wrap")


def test_negative_and_float_positions_rejected() -> None:
    with pytest.raises(ValueError, match="positions must be >= 0"):
        clip_indices([-1], 4)
    with pytest.raises(TypeError, match="must hold integers"):
        modular_indices([1.5], 4)


def test_bad_sizes_rejected() -> None:
    with pytest.raises(ValueError, match="max_len"):
        clip_indices([0], 0)
    with pytest.raises(ValueError, match="target_len=3"):
        interpolate_indices([5], 4, target_len=3)
    with pytest.raises(ValueError, match="only used by strategy='interpolate'"):
        map_positions([0], 4, "clip", target_len=8)
    with pytest.raises(ValueError, match="table must have shape"):
        lookup(torch.zeros(4), [0], "clip")
    with pytest.raises(ValueError, match="new_len"):
        extend_table(_table(), 0, "clip")


def test_stored_ch7_cell_reproduces() -> None:
    """Re-run one stored cell of chapter 7's grid (learned table, seed 0) and compare every
    workaround's accuracy with the file (tolerance: CPU thread count can change rounding)."""
    from posenc.book import data_path
    from posenc.results import load_results, select
    from posenc.train import reproduce

    # data_path raises if the committed file is missing: that is a bug, not a reason to skip
    stored = select(load_results(data_path("ch7_grid.json"))[0], scheme="learned", seed=0)[0]
    _, again, difference = reproduce(stored)
    assert difference < 0.02, again.metrics
