"""Chapter 1 helpers: equivariance of unmasked attention and how it breaks."""

from __future__ import annotations

import itertools

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from posenc.order import (
    causal_mask,
    embed_words,
    equivariance_gap,
    permute_rows,
    random_attention,
    self_attention,
    with_positions,
)
from posenc.order_plots import order_explorer


@settings(max_examples=40, deadline=None)
@given(seq_len=st.integers(1, 7), d_model=st.integers(1, 12), seed=st.integers(0, 10_000), data=st.data())
def test_unmasked_attention_is_permutation_equivariant(seq_len: int, d_model: int, seed: int, data) -> None:
    x = torch.randn(seq_len, d_model, generator=torch.Generator().manual_seed(seed))
    permutation = data.draw(st.permutations(list(range(seq_len))))
    weights = random_attention(d_model, seed=seed)
    assert equivariance_gap(x, permutation, weights, mode="none") < 1e-5


@pytest.mark.parametrize("mode", ["causal mask", "sinusoidal added"])
def test_causal_mask_and_positions_break_equivariance(mode: str) -> None:
    x = embed_words(["a", "b", "c", "d"], d_model=8)
    weights = random_attention(8, seed=3)
    gaps = [equivariance_gap(x, p, weights, mode=mode) for p in itertools.permutations(range(4)) if list(p) != [0, 1, 2, 3]]
    assert min(gaps) > 1e-3


def test_causal_mask_shape_and_first_row() -> None:
    mask = causal_mask(4)
    assert mask.shape == (4, 4) and mask[0].tolist() == [True, False, False, False] and bool(mask[3].all())
    _, attention = self_attention(torch.randn(4, 6), random_attention(6), causal=True)
    assert torch.allclose(attention.sum(dim=1), torch.ones(4)) and float(attention.triu(1).abs().max()) == 0.0


def test_equal_words_get_equal_vectors() -> None:
    x = embed_words(["the", "dog", "the"], d_model=5)
    assert torch.equal(x[0], x[2]) and not torch.equal(x[0], x[1])


def test_bad_inputs_raise_clear_errors() -> None:
    with pytest.raises(ValueError, match="ordering of 0..2"):
        permute_rows(torch.zeros(3, 2), [0, 0, 1])
    with pytest.raises(ValueError, match="shape"):
        self_attention(torch.zeros(3, 5), random_attention(4))
    with pytest.raises(ValueError, match="mode must be one of"):
        with_positions(torch.zeros(2, 4), "rotary")
    with pytest.raises(ValueError, match="d_model"):
        random_attention(0)


def test_order_explorer_frames_show_identity_only_without_positions() -> None:
    explorer = order_explorer(["dog", "bites", "man"], d_model=4)
    none = explorer.frame(order="man bites dog", mode="none")
    causal = explorer.frame(order="man bites dog", mode="causal mask")
    assert (none.traces[0]["z"] - none.traces[1]["z"]).max() < 1e-5
    assert abs(causal.traces[0]["z"] - causal.traces[1]["z"]).max() > 1e-3
