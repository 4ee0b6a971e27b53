"""posenc.long_context and posenc.rope_variants: the serving rules and RoPE variants the book's chapter 12
computes, each against a value worked out by hand or a defining property."""

from __future__ import annotations

import math

import pytest
import torch

from posenc.long_context import (
    batch_seq_len,
    dynamic_ntk_batch_frequencies,
    effective_length,
    llama4_query_scale,
    softmax_with_sink,
    static_dynamic_ntk_factor,
    streaming_cache,
)
from posenc.relative import rope_inverse_frequencies
from posenc.rope_scaling import dynamic_ntk_inverse_frequencies
from posenc.rope_variants import (
    axial_rope,
    cache_width,
    decoupled_scores,
    latent_scores,
    mrope_angles,
    mrope_position_ids,
    offset_matrix_gap,
)


def _randn(*shape: int, seed: int = 0) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def test_dynamic_scaling_reads_the_longest_row() -> None:
    ids = torch.tensor([[1, 1, 0, 1, 2], [0, 1, 2, 3, 4]])  # a left-padded short row beside a longer one
    assert batch_seq_len(ids) == 5
    speeds = dynamic_ntk_batch_frequencies(torch.tensor([[0, 1], [0, 39]]), 16, train_len=16)
    assert torch.equal(speeds, dynamic_ntk_inverse_frequencies(16, seq_len=40, train_len=16))
    assert not torch.equal(speeds, rope_inverse_frequencies(16))
    with pytest.raises(ValueError, match="position_ids"):
        batch_seq_len(torch.tensor([-1]))


def test_static_dynamic_ntk_factor() -> None:
    assert static_dynamic_ntk_factor(1.0) == 1.0
    assert static_dynamic_ntk_factor(2.0) == 3.0  # 2 * 2 - 1: NTK for three times the length, at every length
    assert static_dynamic_ntk_factor(4.0) == 13.0


def test_a_sink_takes_weight_from_every_key() -> None:
    p = softmax_with_sink(torch.tensor([0.0, 0.0]), math.log(2.0))  # exp(sink) = 2 = the two keys together
    assert p.tolist() == pytest.approx([0.25, 0.25])
    assert softmax_with_sink(torch.tensor([5.0]), -1e3).tolist() == pytest.approx([1.0])
    with pytest.raises(ValueError, match="sink"):
        softmax_with_sink(torch.tensor([1.0]), float("nan"))


def test_streaming_cache_renumbers() -> None:
    kept, places = streaming_cache(100, n_sink=4, window=8)
    assert kept.tolist() == [0, 1, 2, 3, *range(92, 100)] and places.tolist() == list(range(12))
    kept, places = streaming_cache(10, n_sink=4, window=8)
    assert kept.tolist() == places.tolist() == list(range(10))


def test_llama4_query_scale() -> None:
    s = llama4_query_scale(torch.tensor([0, 8190, 8191, 8192 * 3 - 1]))
    assert s.tolist() == pytest.approx([1.0, 1.0, 1 + 0.1 * math.log(2), 1 + 0.1 * math.log(4)])


def test_effective_length() -> None:
    assert effective_length({16: 1.0, 32: 0.95, 64: 0.5}, 0.9) == 32
    assert effective_length({16: 0.5, 32: 0.95}, 0.9) is None
    assert effective_length({16: 1.0, 32: 0.5, 64: 0.95}, 0.9) == 16  # a later recovery does not count
    with pytest.raises(ValueError, match="at least one"):
        effective_length({}, 0.9)


def test_absorption_works_without_rotation_only() -> None:
    q, c, w = _randn(5, 16, seed=1), _randn(7, 8, seed=2), _randn(16, 8, seed=3)
    qp, kp = torch.arange(2, 7), torch.arange(7)
    assert torch.allclose(latent_scores(q, c, w), latent_scores(q, c, w, absorbed=True), atol=1e-12)
    rotated = latent_scores(q, c, w, rotate=True, q_positions=qp, k_positions=kp)
    assert not torch.allclose(rotated, latent_scores(q, c, w, rotate=True, absorbed=True, q_positions=qp,
                                                     k_positions=kp), atol=1e-3)
    gaps = offset_matrix_gap(w, [0, 1, 5])
    assert gaps[0] == 0.0 and gaps[1] > 0.1 and gaps[2] > gaps[1]
    with pytest.raises(ValueError, match="needs q_positions"):
        latent_scores(q, c, w, rotate=True)


def test_decoupled_scores_absorb_and_depend_on_offsets_only() -> None:
    q, qr, c, kr, w = _randn(3, 16, seed=1), _randn(3, 4, seed=2), _randn(6, 8, seed=3), _randn(6, 4, seed=4), \
        _randn(16, 8, seed=5)
    qp, kp = torch.arange(3, 6), torch.arange(6)
    a = decoupled_scores(q, qr, c, kr, w, q_positions=qp, k_positions=kp)
    assert torch.allclose(a, decoupled_scores(q, qr, c, kr, w, q_positions=qp, k_positions=kp, absorbed=False),
                          atol=1e-12)
    shifted = decoupled_scores(q, qr, c, kr, w, q_positions=qp + 100, k_positions=kp + 100)
    assert torch.allclose(a, shifted, atol=1e-9)
    assert cache_width(latent=512, rope=64) == 576


def test_axial_and_multimodal_rope() -> None:
    x = _randn(2, 8)
    a = axial_rope(x, torch.tensor([1, 3]), torch.tensor([2, 7]))
    b = axial_rope(x, torch.tensor([11, 13]), torch.tensor([4, 9]))  # the same offsets (2, 5)
    assert float(a[0] @ a[1]) == pytest.approx(float(b[0] @ b[1]), abs=1e-12)
    with pytest.raises(ValueError, match="divisible by 4"):
        axial_rope(_randn(2, 6), torch.tensor([0, 1]), torch.tensor([0, 1]))
    ids = mrope_position_ids(3, (1, 2, 3), 2)
    assert ids[:, :3].tolist() == [[0, 1, 2]] * 3
    assert ids[:, 3:9].tolist() == [[3] * 6, [3, 3, 3, 4, 4, 4], [3, 4, 5, 3, 4, 5]]
    assert ids[:, 9:].tolist() == [[6, 7]] * 3  # text after the image continues from the largest id + 1
    angles = mrope_angles(ids, 16, [2, 3, 3])
    speeds = rope_inverse_frequencies(16)
    assert torch.allclose(angles[8, :2], 3 * speeds[:2]) and torch.allclose(angles[8, 2:5], 4 * speeds[2:5])
    assert torch.allclose(angles[8, 5:], 5 * speeds[5:])  # patch (t 0, row 1, column 2) after 3 text tokens
    with pytest.raises(ValueError, match="summing to"):
        mrope_angles(ids, 16, [2, 2, 2])
