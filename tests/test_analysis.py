"""Tests for posenc.analysis: every analysis on inputs whose answer is known in closed form."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from posenc.analysis import (
    components_for_share,
    variance_by_period,
    PCAResult,
    analyze_table,
    as_table,
    band_mean,
    cosine_similarity_matrix,
    distance_by_offset,
    mean_by_offset,
    offset_distances,
    pair_rotation,
    periodicity,
    principal_components,
    row_norms,
    similarity_summary,
)
from posenc.sinusoidal import sinusoidal_table


def sinusoid_frequencies(d_model: int, base: float = 10000.0) -> np.ndarray:
    """Angular frequencies of the paper's table: omega_i = base^(-2i/d)."""
    return base ** (-np.arange(0, d_model, 2) / d_model)


def constant_table(n: int = 40, d: int = 8) -> np.ndarray:
    return np.tile(np.linspace(-1.0, 2.0, d), (n, 1))


# -- input validation ----------------------------------------------------------------
@pytest.mark.parametrize(
    ("bad", "error", "text"),
    [
        (np.zeros(5), ValueError, "2-D"),
        (np.zeros((2, 3, 4)), ValueError, "2-D"),
        (np.zeros((1, 4)), ValueError, "at least 2 rows"),
        (np.zeros((4, 0)), ValueError, "at least 1 column"),
        (np.array([[1.0, np.nan], [0.0, 1.0]]), ValueError, "row 0, column 1"),
        (np.array([[1.0, 2.0], [np.inf, 1.0]]), ValueError, "finite"),
        (np.array([["a", "b"], ["c", "d"]]), TypeError, "real numbers"),
        (np.ones((3, 3), dtype=complex), TypeError, "real numbers"),
    ],
)
def test_as_table_rejects_bad_input(bad: np.ndarray, error: type[Exception], text: str) -> None:
    with pytest.raises(error, match=text):
        as_table(bad)


def test_as_table_accepts_tensors_and_lists() -> None:
    tensor = torch.arange(6.0, requires_grad=True).reshape(3, 2)
    out = as_table(tensor)
    assert out.dtype == np.float64 and out.shape == (3, 2)
    np.testing.assert_array_equal(as_table([[1, 2], [3, 4]]), [[1.0, 2.0], [3.0, 4.0]])


# -- cosine similarity ---------------------------------------------------------------
def test_constant_table_is_all_ones() -> None:
    similarity = cosine_similarity_matrix(constant_table())
    np.testing.assert_allclose(similarity, 1.0, atol=1e-12)
    summary = similarity_summary(constant_table(300, 8))
    assert summary.adjacent == pytest.approx(1.0) and summary.near == pytest.approx(1.0)
    assert summary.far == pytest.approx(1.0)


def test_orthogonal_rows_give_identity() -> None:
    rng = np.random.default_rng(0)
    q, _ = np.linalg.qr(rng.standard_normal((16, 16)))
    table = q * rng.uniform(0.5, 3.0, size=(16, 1))  # orthogonal rows of different lengths
    np.testing.assert_allclose(cosine_similarity_matrix(table), np.eye(16), atol=1e-12)


def test_sinusoidal_similarity_depends_on_offset_only() -> None:
    """cos(PE_p, PE_{p+k}) = (2/d) * sum_i cos(omega_i k) for the paper's table (every row has norm sqrt(d/2))."""
    n, d = 96, 32
    similarity = cosine_similarity_matrix(sinusoidal_table(n, d, dtype=torch.float64))
    offsets = np.arange(n)
    expected = (2.0 / d) * np.cos(np.outer(offsets, sinusoid_frequencies(d))).sum(axis=1)
    np.testing.assert_allclose(mean_by_offset(similarity), expected, atol=1e-10)
    # Every entry, not just the diagonal means: the matrix is Toeplitz.
    np.testing.assert_allclose(similarity, expected[np.abs(offsets[:, None] - offsets[None, :])], atol=1e-10)


def test_zero_row_is_rejected() -> None:
    table = np.ones((5, 3))
    table[2] = 0.0
    with pytest.raises(ValueError, match=r"all-zero rows at positions \[2\]"):
        cosine_similarity_matrix(table)


def test_random_gaussian_table_has_no_neighbour_structure() -> None:
    rng = np.random.default_rng(1)
    n, d = 512, 384
    summary = similarity_summary(rng.standard_normal((n, d)) * 0.02)
    # Each band mean averages many nearly independent cosines of std 1/sqrt(d) ~ 0.05.
    assert abs(summary.adjacent) < 0.02
    assert abs(summary.near) < 0.01
    assert abs(summary.far) < 0.01


def test_band_mean_counts_every_pair_once() -> None:
    rng = np.random.default_rng(2)
    matrix = rng.standard_normal((30, 30))
    matrix = matrix + matrix.T
    i, j = np.triu_indices(30, k=1)
    offsets = j - i
    for low, high in [(1, 1), (10, 20), (3, 29), (5, None)]:
        top = 29 if high is None else high
        chosen = (offsets >= low) & (offsets <= top)
        assert band_mean(matrix, low, high) == pytest.approx(matrix[i[chosen], j[chosen]].mean())


@pytest.mark.parametrize(("low", "high", "text"), [(0, 3, "positive"), (5, 2, "high must be >= low"), (40, 50, "empty")])
def test_band_mean_rejects_bad_bands(low: int, high: int, text: str) -> None:
    with pytest.raises(ValueError, match=text):
        band_mean(np.eye(30), low, high)


def test_band_mean_needs_a_square_matrix() -> None:
    with pytest.raises(ValueError, match="square"):
        band_mean(np.ones((3, 4)), 1)


def test_summary_far_band_is_nan_for_short_tables() -> None:
    summary = similarity_summary(np.random.default_rng(3).standard_normal((64, 8)))
    assert math.isnan(summary.far) and summary.n_positions == 64
    with pytest.raises(ValueError, match="too few for the near band"):
        similarity_summary(np.ones((8, 3)))


# -- distance by offset ----------------------------------------------------------------
def test_sinusoidal_distance_matches_closed_form() -> None:
    """||PE_{p+k} - PE_p||^2 = sum_i 2 (1 - cos(omega_i k)), whatever p is."""
    n, d = 128, 64
    distances = distance_by_offset(sinusoidal_table(n, d, dtype=torch.float64))
    expected = np.sqrt((2.0 * (1.0 - np.cos(np.outer(np.arange(n), sinusoid_frequencies(d))))).sum(axis=1))
    np.testing.assert_allclose(distances, expected, atol=1e-10)


def test_relative_distance_known_values() -> None:
    # Sinusoidal rows all have squared norm d/2, so relative distance = sqrt(1 - cos similarity).
    table = sinusoidal_table(128, 64, dtype=torch.float64)
    similarity = mean_by_offset(cosine_similarity_matrix(table))
    np.testing.assert_allclose(distance_by_offset(table, relative=True), np.sqrt(1.0 - similarity), atol=1e-9)
    # Independent Gaussian rows: about 1 at every offset.
    noise = np.random.default_rng(8).standard_normal((200, 400)) * 0.02
    relative = distance_by_offset(noise, relative=True, max_offset=50)[1:]
    np.testing.assert_allclose(relative, 1.0, atol=0.02)
    with pytest.raises(ValueError, match="all zeros"):
        distance_by_offset(np.zeros((5, 3)), relative=True)


def test_offset_distances_are_constant_for_sinusoids_only() -> None:
    table = sinusoidal_table(200, 32, dtype=torch.float64)
    for offset in (1, 7, 150):
        distances = offset_distances(table, offset)
        assert distances.shape == (200 - offset,)
        np.testing.assert_allclose(distances, distances[0], atol=1e-10)  # translation invariance
    noisy = offset_distances(np.random.default_rng(9).standard_normal((200, 32)), 1)
    assert noisy.std() / noisy.mean() > 0.05
    with pytest.raises(ValueError, match="offset must be <= n_positions - 1 = 199"):
        offset_distances(table, 200)
    with pytest.raises(ValueError, match="positive"):
        offset_distances(table, 0)


def test_constant_table_has_zero_distances() -> None:
    distances = distance_by_offset(constant_table(), max_offset=10)
    assert distances.shape == (11,)
    np.testing.assert_array_equal(distances, 0.0)


def test_distance_of_a_straight_line_grows_linearly() -> None:
    direction = np.array([3.0, 4.0])  # length 5
    table = np.arange(20)[:, None] * direction
    np.testing.assert_allclose(distance_by_offset(table), 5.0 * np.arange(20), atol=1e-12)


def test_distance_rejects_offsets_past_the_table() -> None:
    with pytest.raises(ValueError, match="max_offset must be <= n_positions - 1 = 9"):
        distance_by_offset(np.ones((10, 2)), max_offset=10)


# -- norms ---------------------------------------------------------------------------
def test_row_norms_known_values() -> None:
    table = np.zeros((10, 2))
    table[:, 0] = np.arange(10)  # norms 0, 1, ..., 9
    summary = row_norms(table, window=3)
    np.testing.assert_allclose(summary.norms, np.arange(10))
    assert summary.early_mean == pytest.approx(1.0) and summary.late_mean == pytest.approx(8.0)
    assert (summary.argmin, summary.argmax, summary.min, summary.max) == (0, 9, 0.0, 9.0)
    assert summary.mean == pytest.approx(4.5)


def test_sinusoidal_rows_all_have_norm_sqrt_half_d() -> None:
    summary = row_norms(sinusoidal_table(200, 64, dtype=torch.float64))
    np.testing.assert_allclose(summary.norms, math.sqrt(32.0), atol=1e-12)
    assert summary.std == pytest.approx(0.0, abs=1e-12)


def test_row_norms_window_must_fit() -> None:
    with pytest.raises(ValueError, match="window must be <= n_positions // 2 = 5"):
        row_norms(np.ones((10, 2)), window=6)


# -- PCA -----------------------------------------------------------------------------
def test_pca_of_a_planar_circle() -> None:
    """Points on a circle in a 2-D plane of a 10-D space: two equal components carry everything."""
    n = 64
    angle = 2 * np.pi * np.arange(n) / n
    rng = np.random.default_rng(4)
    basis, _ = np.linalg.qr(rng.standard_normal((10, 2)))
    table = np.column_stack([np.cos(angle), np.sin(angle)]) @ basis.T
    result = principal_components(table, n_components=3)
    assert isinstance(result, PCAResult)
    np.testing.assert_allclose(result.explained_variance_ratio[:2], [0.5, 0.5], atol=1e-10)
    assert result.explained_variance_ratio[2] == pytest.approx(0.0, abs=1e-10)
    assert result.cumulative(2) == pytest.approx(1.0)
    assert result.scores.shape == (n, 3) and result.components.shape == (3, 10)


def test_pca_ratios_are_shares_of_the_total_variance() -> None:
    table = np.random.default_rng(5).standard_normal((50, 12))
    few = principal_components(table, n_components=3)
    every = principal_components(table, n_components=12)
    np.testing.assert_allclose(few.explained_variance_ratio, every.explained_variance_ratio[:3], atol=1e-12)
    assert every.cumulative(12) == pytest.approx(1.0)


def test_pca_errors() -> None:
    with pytest.raises(ValueError, match="no variance"):
        principal_components(constant_table(), n_components=3)
    with pytest.raises(ValueError, match=r"n_components must be <= min\(n_positions, d_model\) = 8"):
        principal_components(np.random.default_rng(0).standard_normal((40, 8)), n_components=9)
    result = principal_components(np.random.default_rng(0).standard_normal((40, 8)), n_components=2)
    with pytest.raises(ValueError, match="k must be <= n_components = 2"):
        result.cumulative(3)


# -- periodicity ---------------------------------------------------------------------
@pytest.mark.parametrize("period", [8.0, 20.0, 50.0, 64.0, 5.7])
def test_periodicity_of_a_pure_sinusoid(period: float) -> None:
    n = 512
    signal = 3.0 * np.sin(2 * np.pi * np.arange(n) / period + 0.4) + 1.5
    result = periodicity(signal)
    assert result.period == pytest.approx(period, rel=0.01)
    assert result.cycles == pytest.approx(n / period, rel=0.01)
    assert result.fit_r2 > 0.99
    assert result.autocorr_lag is not None and abs(result.autocorr_lag - period) <= 1


def test_periodicity_exact_when_the_period_divides_the_length() -> None:
    result = periodicity(np.cos(2 * np.pi * np.arange(512) / 64))
    assert result.period == 64.0 and result.cycles == 8.0
    assert result.fit_r2 == pytest.approx(1.0, abs=1e-12)


def test_periodicity_of_noise_is_weak() -> None:
    result = periodicity(np.random.default_rng(6).standard_normal(512))
    assert result.fit_r2 < 0.1
    assert result.autocorr_lag is None


def test_periodicity_of_a_sinusoidal_table_column() -> None:
    """Column 2i of the paper's table is sin(omega_i p): its period is 2 pi / omega_i."""
    d = 64
    table = sinusoidal_table(512, d, dtype=torch.float64).numpy()
    for i in (2, 5, 8):
        expected = 2 * np.pi / sinusoid_frequencies(d)[i]
        assert periodicity(table[:, 2 * i]).period == pytest.approx(expected, rel=0.01)


def test_periodicity_errors() -> None:
    with pytest.raises(ValueError, match="constant"):
        periodicity(np.ones(20))
    with pytest.raises(ValueError, match="1-D"):
        periodicity(np.ones((4, 4)))
    with pytest.raises(ValueError, match="threshold must be in"):
        periodicity(np.arange(10.0), threshold=2.0)


# -- rotation of a pair of components ---------------------------------------------------
@pytest.mark.parametrize("period", [5.7, 12.0, 100.0])
def test_pair_rotation_of_a_sin_cos_pair(period: float) -> None:
    angle = 2 * np.pi * np.arange(300) / period
    result = pair_rotation(np.cos(angle), np.sin(angle))
    assert result.step_degrees == pytest.approx(360.0 / period)
    assert result.period == pytest.approx(period)
    assert result.step_spread_degrees == pytest.approx(0.0, abs=1e-4)
    assert result.radius_cv == pytest.approx(0.0, abs=1e-12)
    # Swapping the pair reverses the direction of the turn, not its speed.
    assert pair_rotation(np.sin(angle), np.cos(angle)).step_degrees == pytest.approx(-360.0 / period)


def test_pair_rotation_errors() -> None:
    with pytest.raises(ValueError, match="same length"):
        pair_rotation(np.ones(5), np.ones(6))
    with pytest.raises(ValueError, match="origin at positions \\[1\\]"):
        pair_rotation(np.array([1.0, 0.0, 1.0, 2.0]), np.array([1.0, 0.0, 1.0, 0.0]))


# -- everything at once, and properties ----------------------------------------------------
def test_analyze_table_on_a_sinusoidal_table() -> None:
    n, d = 256, 32
    analysis = analyze_table(sinusoidal_table(n, d, dtype=torch.float64))
    assert analysis.similarity.shape == (n, n)
    assert analysis.similarity_by_offset[0] == pytest.approx(1.0)
    assert analysis.summary.adjacent > analysis.summary.near > analysis.summary.far
    assert len(analysis.periodicities) == 5
    assert analysis.distances.shape == (n,) and analysis.norms.norms.shape == (n,)
    assert analysis.pca.scores.shape == (n, 10)


def test_analyze_table_caps_sizes_for_small_tables() -> None:
    analysis = analyze_table(np.random.default_rng(7).standard_normal((16, 4)), n_periodic=3)
    assert analysis.pca.scores.shape == (16, 4)
    assert analysis.norms.window == 8
    with pytest.raises(ValueError, match="n_periodic must be <= n_components = 4"):
        analyze_table(np.random.default_rng(7).standard_normal((16, 4)), n_periodic=5)


@settings(max_examples=25, deadline=None)
@given(
    n=st.integers(min_value=3, max_value=40),
    d=st.integers(min_value=1, max_value=12),
    scale=st.floats(min_value=1e-3, max_value=1e3),
    seed=st.integers(min_value=0, max_value=10_000),
)
def test_similarity_is_scale_invariant_and_distance_scales(n: int, d: int, scale: float, seed: int) -> None:
    table = np.random.default_rng(seed).standard_normal((n, d)) + 0.1
    similarity = cosine_similarity_matrix(table)
    np.testing.assert_allclose(similarity, cosine_similarity_matrix(table * scale), atol=1e-9)
    np.testing.assert_allclose(np.diag(similarity), 1.0, atol=1e-9)
    assert np.all(np.abs(similarity) <= 1.0 + 1e-9)
    np.testing.assert_allclose(distance_by_offset(table * scale), scale * distance_by_offset(table), rtol=1e-9)


@settings(max_examples=25, deadline=None)
@given(n=st.integers(min_value=3, max_value=30), seed=st.integers(min_value=0, max_value=10_000))
def test_shifting_every_row_leaves_distances_and_pca_variance_unchanged(n: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    table = rng.standard_normal((n, 6))
    shifted = table + rng.standard_normal(6) * 10
    np.testing.assert_allclose(distance_by_offset(shifted), distance_by_offset(table), atol=1e-9)
    k = min(n, 6)
    np.testing.assert_allclose(
        principal_components(shifted, n_components=k).explained_variance_ratio,
        principal_components(table, n_components=k).explained_variance_ratio,
        atol=1e-9,
    )


# -- the spectrum of a whole table -----------------------------------------------------
def test_variance_by_period_puts_a_pure_wave_in_its_band() -> None:
    positions = np.arange(256)[:, None]
    table = np.hstack([np.sin(2 * np.pi * positions / 16), np.cos(2 * np.pi * positions / 16)])
    shares = variance_by_period(table, [2, 8, 32, 257])
    np.testing.assert_allclose(shares, [0.0, 1.0, 0.0], atol=1e-12)


def test_variance_by_period_shares_sum_to_one_over_all_periods() -> None:
    table = np.random.default_rng(0).standard_normal((100, 7))
    shares = variance_by_period(table, [2, 5, 20, 101])
    assert shares.shape == (3,) and abs(shares.sum() - 1) < 1e-12


@pytest.mark.parametrize("edges", [[8], [8, 8], [16, 8], [2, float("nan")]])
def test_variance_by_period_rejects_bad_edges(edges: list[float]) -> None:
    with pytest.raises(ValueError, match="edges must be"):
        variance_by_period(np.random.default_rng(0).standard_normal((10, 3)), edges)


def test_components_for_share_counts_exactly() -> None:
    # Variances 9, 4, 1 along three axes: orthogonal zero-mean columns of a Hadamard matrix.
    signs = np.array([[1, 1, 1], [-1, 1, -1], [1, -1, -1], [-1, -1, 1]], dtype=float)
    table = signs * np.array([3.0, 2.0, 1.0])
    assert components_for_share(table, 9 / 14) == 1
    assert components_for_share(table, 9 / 14 + 1e-6) == 2
    assert components_for_share(table, 1.0) == 3


@pytest.mark.parametrize("share", [0, -0.1, 1.5, "half"])
def test_components_for_share_rejects_bad_share(share: object) -> None:
    with pytest.raises((TypeError, ValueError), match="share must be"):  # TypeError for "half": not a number
        components_for_share(np.eye(4), share)  # type: ignore[arg-type]
