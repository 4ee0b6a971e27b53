"""Tests for posenc.compare: offset dependence of dot products, timing helpers."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from posenc.compare import (
    alternating_timings,
    offset_dependence,
    position_vector_samples,
    ratio_spread,
    time_position_vectors,
    timing_spread,
)
from posenc.compare_plots import dot_product_by_offset_figure, timing_figure
from posenc.learned import initial_table
from posenc.sinusoidal import offset_dot_product, sinusoidal_table


def test_sinusoidal_dot_products_depend_on_offset_only() -> None:
    result = offset_dependence(sinusoidal_table(300, 64), max_offset=20)
    assert result.relative_spread < 1e-6
    assert result.scale == pytest.approx(32.0, rel=1e-6)  # every row has norm^2 = d/2
    assert np.allclose(result.mean, offset_dot_product(np.arange(1, 21), 64).numpy(), atol=1e-4)


def test_random_tables_are_not_offset_only() -> None:
    result = offset_dependence(initial_table(300, 64, "gpt2", seed=0), max_offset=20)
    assert result.relative_spread > 0.3
    assert np.all(np.abs(result.mean) < 0.2 * result.scale)  # no systematic similarity between neighbours


def test_a_toeplitz_table_is_detected() -> None:
    # Rows that are rotations of each other (a discrete Fourier table) have offset-only dot products too.
    n, d = 64, 8
    angles = torch.arange(n, dtype=torch.float64)[:, None] * torch.tensor([0.3, 0.7, 1.1, 2.0])
    table = torch.cat([angles.cos(), angles.sin()], dim=1)
    assert table.shape == (n, d)
    assert offset_dependence(table, max_offset=10).relative_spread < 1e-12


def test_offset_dependence_errors() -> None:
    with pytest.raises(ValueError, match="max_offset"):
        offset_dependence(torch.zeros(5, 3), max_offset=5)
    with pytest.raises(ValueError, match="shape"):
        offset_dependence(torch.zeros(5))


def test_dot_product_figure() -> None:
    tables = {"sinusoidal": sinusoidal_table(100, 16), "bert": initial_table(100, 16, "bert", seed=0)}
    fig = dot_product_by_offset_figure(tables, starts=(0, 30), max_offset=20)
    assert len(fig.data) == 4 and fig.layout.meta["alt"]
    first, second = np.asarray(fig.data[0].y), np.asarray(fig.data[1].y)
    assert np.allclose(first, second, atol=1e-3)  # sinusoidal: the lines coincide
    assert not np.allclose(np.asarray(fig.data[2].y), np.asarray(fig.data[3].y), atol=0.1)
    with pytest.raises(ValueError, match="past"):
        dot_product_by_offset_figure(tables, starts=(90,), max_offset=20)


def test_timing_returns_positive_times() -> None:
    timings = time_position_vectors(16, 8, batch=2, number=2, repeats=2)
    assert set(timings) == {"learned: table lookup", "sinusoidal: posenc", "sinusoidal: float32 recipe",
                            "add to a batch"}
    assert all(t > 0 for t in timings.values())
    fig = timing_figure({(16, 8): timings})
    assert len(fig.data) == 4 and fig.layout.meta["alt"] and fig.layout.yaxis.title.text
    with pytest.raises(ValueError, match="at least one"):
        timing_figure({})


def test_sinusoidal_dot_products_cannot_tell_ahead_from_behind() -> None:
    result = offset_dependence(sinusoidal_table(200, 32), max_offset=10)
    assert result.backward_mean.shape == result.mean.shape == (10,)
    assert result.relative_asymmetry < 1e-12  # cos(k w) is even in k


def test_separate_keys_measure_scores_after_projection() -> None:
    table = sinusoidal_table(300, 64)
    generator = torch.Generator().manual_seed(0)
    w_q, w_k = (torch.randn(64, 64, generator=generator) / 8 for _ in range(2))
    projected = offset_dependence(table @ w_q, max_offset=20, keys=table @ w_k)
    # Random, untied projections break the offset-only property and the symmetry in k.
    assert projected.relative_spread > 0.1 and projected.relative_asymmetry > 1e-4
    # keys=table is the same as no keys; an orthogonal projection used for both keeps everything.
    same = offset_dependence(table, max_offset=20, keys=table)
    plain = offset_dependence(table, max_offset=20)
    assert np.allclose(same.mean, plain.mean) and same.scale == pytest.approx(plain.scale)
    rotation, _ = torch.linalg.qr(torch.randn(64, 64, generator=generator, dtype=torch.float64))
    rotated = offset_dependence(table.double() @ rotation, max_offset=20, keys=table.double() @ rotation)
    assert rotated.relative_spread < 1e-6 and rotated.relative_asymmetry < 1e-9


def test_keys_must_match_the_table() -> None:
    with pytest.raises(ValueError, match="keys must have the shape"):
        offset_dependence(torch.zeros(10, 4), max_offset=3, keys=torch.zeros(10, 5))


def test_alternating_timings_take_turns_and_keep_every_round() -> None:
    order: list[str] = []
    samples = alternating_timings({"a": lambda: order.append("a"), "b": lambda: order.append("b")},
                                  repeats=3, number=2)
    assert order == ["a", "b"] + ["a", "a", "b", "b"] * 3  # a warm-up call each, then the rounds in turn
    assert set(samples) == {"a", "b"} and all(len(v) == 3 and min(v) >= 0 for v in samples.values())
    with pytest.raises(ValueError, match="at least one"):
        alternating_timings({}, repeats=1)


def test_spreads_report_the_outlier_instead_of_hiding_it() -> None:
    # A scripted clock: each sample reads it twice, and round 2 of "fast" hits a busy moment.
    durations = [1.0, 2.0, 1.0, 2.0, 50.0, 2.0, 1.0, 2.0]  # fast, slow, fast, slow, ...
    ticks = iter([reading for duration in durations for reading in (0.0, duration)])
    samples = alternating_timings({"fast": lambda: None, "slow": lambda: None}, repeats=4, clock=lambda: next(ticks))
    assert samples == {"fast": [1.0, 1.0, 50.0, 1.0], "slow": [2.0, 2.0, 2.0, 2.0]}
    fast = timing_spread(samples["fast"])
    assert (fast.median, fast.low, fast.high, fast.n) == (1.0, 1.0, 50.0, 4)
    ratio = ratio_spread(samples, "fast", "slow")
    assert ratio.median == 0.5 and ratio.high == 25.0  # the outlier is in the range, not in the median
    with pytest.raises(ValueError, match="no samples named"):
        ratio_spread(samples, "fast", "missing")
    with pytest.raises(ValueError, match="one pair per round"):
        ratio_spread({"a": [1.0], "b": [1.0, 2.0]}, "a", "b")
    with pytest.raises(ValueError, match="must not be empty"):
        timing_spread([])


def test_timing_figure_draws_the_range_of_the_repeats() -> None:
    samples = position_vector_samples(16, 8, batch=2, number=2, repeats=3)
    spreads = {(16, 8): {name: timing_spread(values) for name, values in samples.items()}}
    fig = timing_figure(spreads)
    first = fig.data[0]
    assert first.error_y.array is not None and min(first.error_y.array) >= 0 and min(first.error_y.arrayminus) >= 0
    assert "whiskers" in fig.layout.meta["alt"]
    plain = timing_figure({(16, 8): time_position_vectors(16, 8, batch=2, number=2, repeats=2)})
    assert plain.data[0].error_y.array is None
