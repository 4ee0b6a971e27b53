"""Tests for posenc.relative.apply_rope_reference: the readable RoPE agrees with the fast one."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from posenc.relative import apply_rope, apply_rope_reference, rope_inverse_frequencies

FAST = settings(max_examples=40, deadline=None)


def _rotate_pair_by_pair(x: torch.Tensor, positions: torch.Tensor, layout: str) -> torch.Tensor:
    """RoPE by hand, one 2x2 matrix per position and pair: the definition the reference must meet."""
    d_head = x.shape[-1]
    pairs = [(2 * i, 2 * i + 1) if layout == "interleaved" else (i, i + d_head // 2) for i in range(d_head // 2)]
    theta = rope_inverse_frequencies(d_head)
    out = x.clone()
    for row, position in enumerate(positions.tolist()):
        for i, (first, second) in enumerate(pairs):
            angle = position * float(theta[i])
            rotation = torch.tensor([[math.cos(angle), -math.sin(angle)], [math.sin(angle), math.cos(angle)]],
                                    dtype=x.dtype)
            out[..., row, [first, second]] = x[..., row, [first, second]] @ rotation.T
    return out


@pytest.mark.parametrize("layout", ["interleaved", "half"])
def test_reference_rope_is_the_two_by_two_rotation_of_each_pair(layout: str) -> None:
    x = torch.randn(5, 8, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    positions = torch.tensor([0, 1, 2, 7, 300])
    expected = _rotate_pair_by_pair(x, positions, layout)
    assert torch.allclose(apply_rope_reference(x, positions, layout=layout), expected, atol=1e-12)
    # The check can fail: the inverse rotation (angle -p theta) is not RoPE.
    assert not torch.allclose(apply_rope_reference(x, positions, layout=layout),
                              _rotate_pair_by_pair(x, -positions.double(), layout), atol=1e-6)


@FAST
@given(seed=st.integers(0, 10_000), half_width=st.integers(1, 12), seq_len=st.integers(1, 9),
       layout=st.sampled_from(["interleaved", "half"]), dtype=st.sampled_from([torch.float32, torch.float64]),
       offset=st.floats(0, 5000, allow_nan=False), batched=st.booleans())
def test_fast_and_reference_rope_agree_to_the_last_bit(seed: int, half_width: int, seq_len: int, layout: str,
                                                        dtype: torch.dtype, offset: float, batched: bool) -> None:
    generator = torch.Generator().manual_seed(seed)
    if batched:  # (batch, heads, seq_len, d_head) with one row of positions per batch element
        x = torch.randn(2, 3, seq_len, 2 * half_width, generator=generator, dtype=dtype)
        positions = offset + torch.rand(2, seq_len, generator=generator, dtype=torch.float64) * 100
    else:
        x = torch.randn(seq_len, 2 * half_width, generator=generator, dtype=dtype)
        positions = offset + torch.arange(seq_len, dtype=torch.float64)
    fast = apply_rope(x, positions, layout=layout)
    reference = apply_rope_reference(x, positions, layout=layout)
    assert reference.dtype == dtype and reference.shape == x.shape
    assert torch.equal(fast, reference)


def test_the_agreement_check_can_fail() -> None:
    # Equality is not trivial: one position more, or the other layout, gives other numbers.
    x = torch.randn(6, 8, generator=torch.Generator().manual_seed(3))
    positions = torch.arange(6)
    assert not torch.equal(apply_rope(x, positions), apply_rope_reference(x, positions + 1))
    assert not torch.equal(apply_rope(x, positions), apply_rope_reference(x, positions, layout="half"))
    assert not torch.equal(apply_rope_reference(x, positions), x)


def test_reference_rope_rejects_what_apply_rope_rejects() -> None:
    with pytest.raises(ValueError, match="layout must be one of"):
        apply_rope_reference(torch.zeros(4, 6), layout="pairs")
    with pytest.raises(ValueError, match="must be even"):
        apply_rope_reference(torch.zeros(4, 5))
