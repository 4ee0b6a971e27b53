"""Tests for the constructed "attend k positions back" head and the offset-only score condition
(posenc.sinusoidal: offset_head_weights, offset_head_attention, scaled_rotation_blocks,
bilinear_scores, diagonal_spread, shift_commutator)."""

from __future__ import annotations

import math

import pytest
import torch

from posenc.analysis import peak_offsets, position_only_logits
from posenc.sinusoidal import (
    bilinear_scores,
    diagonal_spread,
    offset_head_attention,
    offset_head_weights,
    rotation_matrix,
    scaled_rotation_blocks,
    shift_commutator,
    sinusoidal_table,
)


def causal_peaks(logits: torch.Tensor) -> torch.Tensor:
    """Offset j - i of each query's largest logit among keys j <= i."""
    n = logits.shape[0]
    masked = logits.masked_fill(torch.ones(n, n, dtype=torch.bool).triu(1), float("-inf"))
    return masked.argmax(dim=1) - torch.arange(n)


@pytest.mark.parametrize(("k", "d_model"), [(1, 16), (3, 64), (7, 32), (20, 128)])
def test_head_peaks_exactly_k_back(k: int, d_model: int) -> None:
    w_query, w_key = offset_head_weights(k, d_model)
    table = sinusoidal_table(96, d_model)
    logits = (table @ w_query.T) @ (table @ w_key.T).T
    peaks = causal_peaks(logits)
    assert torch.all(peaks[k:] == -k), peaks[k:]


def test_weights_shapes_layout_and_dtype() -> None:
    w_query, w_key = offset_head_weights(5, 32, scale=2.0)
    assert w_query.shape == w_key.shape == (32, 32) and w_query.dtype == torch.float32
    assert torch.equal(w_key, torch.eye(32))
    assert torch.allclose(w_query.double(), 2.0 * rotation_matrix(-5, 32), atol=1e-6)
    # torch.nn.Linear layout: a Linear with this weight maps PE(i) to scale * PE(i - k)
    linear = torch.nn.Linear(32, 32, bias=False)
    with torch.no_grad():
        linear.weight.copy_(w_query)
    table = sinusoidal_table(40, 32)
    assert torch.allclose(linear(table[5:]), 2.0 * table[:-5], atol=1e-5)


def test_score_is_a_sum_of_cosines_of_the_shifted_offset() -> None:
    k, d_model = 4, 16
    w_query, w_key = offset_head_weights(k, d_model, dtype=torch.float64)
    table = sinusoidal_table(30, d_model, dtype=torch.float64)
    scores = (table @ w_query.T) @ (table @ w_key.T).T
    omega = 10000.0 ** (-torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
    i, j = 17, 9
    assert math.isclose(float(scores[i, j]), float(torch.cos(omega * (j - i + k)).sum()), abs_tol=1e-12)
    assert math.isclose(float(scores[i, i - k]), d_model / 2, abs_tol=1e-12)


def test_attention_weights_concentrate_and_mask_the_future() -> None:
    logits, weights = offset_head_attention(3, 64, 48, scale=32.0)
    assert logits.shape == weights.shape == (48, 48)
    assert torch.allclose(weights.sum(dim=1), torch.ones(48, dtype=torch.float64))
    assert torch.all(weights.triu(1) == 0) and torch.isinf(logits[0, 1])
    rows = torch.arange(3, 48)
    assert float(weights[rows, rows - 3].min()) > 0.9
    assert torch.all(causal_peaks(logits)[3:] == -3)
    _, open_weights = offset_head_attention(-2, 16, 20, causal=False)  # k < 0: attend ahead
    assert torch.all(open_weights.argmax(dim=1)[:-2] == torch.arange(2, 20))


def test_scale_does_not_move_the_peak() -> None:
    sharp, _ = offset_head_attention(6, 32, 40, scale=50.0)
    soft, _ = offset_head_attention(6, 32, 40, scale=1.0)
    assert torch.equal(causal_peaks(sharp), causal_peaks(soft))


def test_random_form_is_not_offset_only_but_scaled_rotations_are() -> None:
    d_model = 32
    table = sinusoidal_table(64, d_model, dtype=torch.float64)
    generator = torch.Generator().manual_seed(0)
    random_form = torch.randn(d_model, d_model, generator=generator, dtype=torch.float64)
    a = torch.randn(d_model // 2, generator=generator, dtype=torch.float64)
    b = torch.randn(d_model // 2, generator=generator, dtype=torch.float64)
    good_form = scaled_rotation_blocks(a, b)
    assert float(diagonal_spread(bilinear_scores(table, random_form)).max()) > 1.0
    assert float(diagonal_spread(bilinear_scores(table, good_form)).max()) < 1e-10
    for k in (1, -3, 100):
        assert shift_commutator(good_form, k) < 1e-12
    assert shift_commutator(random_form, 1) > 0.1
    # The shift matrices themselves have this form, and so does the head's A = w_query.T @ w_key.
    w_query, w_key = offset_head_weights(3, d_model, dtype=torch.float64)
    assert float(diagonal_spread(bilinear_scores(table, w_query.T @ w_key)).max()) < 1e-10


def test_offset_only_scores_match_the_closed_form() -> None:
    a, b = torch.tensor([1.0, 0.5, -2.0]), torch.tensor([0.0, 1.5, 0.25])
    table = sinusoidal_table(20, 6, dtype=torch.float64)
    scores = bilinear_scores(table, scaled_rotation_blocks(a, b))
    omega = 10000.0 ** (-torch.arange(0, 6, 2, dtype=torch.float64) / 6)
    for i, j in [(0, 0), (3, 11), (15, 2)]:
        expected = (a * torch.cos((j - i) * omega) + b * torch.sin((j - i) * omega)).sum()
        assert math.isclose(float(scores[i, j]), float(expected), abs_tol=1e-12)


def test_scaled_rotation_blocks_concatenated_layout() -> None:
    a, b = torch.tensor([1.0, 2.0]), torch.tensor([3.0, 4.0])
    inter = bilinear_scores(sinusoidal_table(10, 4, dtype=torch.float64), scaled_rotation_blocks(a, b))
    concat = bilinear_scores(sinusoidal_table(10, 4, layout="concatenated", dtype=torch.float64),
                             scaled_rotation_blocks(a, b, layout="concatenated"))
    assert torch.allclose(inter, concat, atol=1e-12)


def test_diagonal_spread_layout() -> None:
    scores = torch.tensor([[1.0, 2.0], [5.0, 4.0]])
    assert diagonal_spread(scores).tolist() == [0.0, 3.0, 0.0]  # offsets -1, 0, +1


@pytest.mark.parametrize(
    ("call", "error", "fragment"),
    [
        (lambda: offset_head_weights(1.5, 16), TypeError, "k must be an integer"),
        (lambda: offset_head_weights(2, 15), ValueError, "d_model"),
        (lambda: offset_head_weights(2, 16, scale=0.0), ValueError, "scale"),
        (lambda: offset_head_attention(2, 16, 0), ValueError, "n_positions"),
        (lambda: scaled_rotation_blocks([1.0, 2.0], [1.0]), ValueError, "a and b"),
        (lambda: bilinear_scores(torch.zeros(4, 8), torch.eye(6)), ValueError, "form must be (8, 8)"),
        (lambda: bilinear_scores([[1.0]], torch.eye(1)), ValueError, "table"),
        (lambda: diagonal_spread(torch.zeros(2, 3)), ValueError, "scores"),
    ],
)
def test_errors_name_the_argument(call, error, fragment) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(error, match=fragment.replace("(", r"\(").replace(")", r"\)")):
        call()


@pytest.mark.parametrize("k", [1, 4, 10])
def test_attention_view_finds_the_constructed_head(k: int) -> None:
    """posenc.analysis reads the head as the model would: every query with i >= k peaks at -k."""
    w_query, w_key = offset_head_weights(k, 64)
    logits = position_only_logits(sinusoidal_table(80, 64), w_query, w_key, n_heads=1)
    peaks = peak_offsets(logits, causal=True)
    assert peaks.shape == (1, 80) and (peaks[0, k:] == -k).all()
    own_logits, _ = offset_head_attention(k, 64, 80)
    assert torch.allclose(torch.as_tensor(logits[0]).tril(), own_logits.tril().nan_to_num(neginf=0.0), atol=1e-5)
