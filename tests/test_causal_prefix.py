"""One causal attention layer without positions sees the *set* of the prefix, not its order
(chapter 1, "What a causal mask changes"); a 1-D convolution is translation-equivariant."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from posenc.order import (
    convolution_shift_gap,
    convolve,
    embed_words,
    prefix_shuffle_change,
    random_attention,
    random_convolution,
)


@settings(max_examples=40, deadline=None)
@given(seq_len=st.integers(2, 8), d_model=st.integers(2, 12), seed=st.integers(0, 10_000), data=st.data())
def test_outputs_after_a_reordered_prefix_are_unchanged(seq_len: int, d_model: int, seed: int, data) -> None:
    k = data.draw(st.integers(1, seq_len))
    prefix_order = data.draw(st.permutations(list(range(k))))
    x = torch.randn(seq_len, d_model, generator=torch.Generator().manual_seed(seed))
    change = prefix_shuffle_change(x, prefix_order, random_attention(d_model, seed=seed))
    assert change.shape == (seq_len,)
    assert k == seq_len or float(change[k:].max()) < 1e-5


def test_only_the_reordered_positions_change() -> None:
    x = embed_words(["the", "dog", "bites", "a", "man", "today"], d_model=16)
    change = prefix_shuffle_change(x, [2, 0, 1], random_attention(16, seed=1))
    assert bool((change[:3] > 1e-2).all()) and float(change[3:].max()) < 1e-5
    # Fixed point with a permuted past: position 2 keeps its token, its prefix {0, 1} is only reordered.
    change = prefix_shuffle_change(x, [1, 0, 2], random_attention(16, seed=1))
    assert float(change[2:].max()) < 1e-5 and float(change[:2].min()) > 1e-2


def test_identity_prefix_changes_nothing() -> None:
    x = torch.randn(5, 4)
    assert float(prefix_shuffle_change(x, [0, 1, 2, 3, 4], random_attention(4)).max()) == 0.0


def test_prefix_errors_name_the_argument() -> None:
    x = torch.randn(4, 3)
    with pytest.raises(ValueError, match="prefix_order must be an ordering"):
        prefix_shuffle_change(x, [0, 2], random_attention(3))
    with pytest.raises(ValueError, match="prefix_order must be an ordering"):
        prefix_shuffle_change(x, list(range(5)), random_attention(3))
    with pytest.raises(ValueError, match="prefix_order must be an ordering"):
        prefix_shuffle_change(x, [], random_attention(3))
    with pytest.raises(ValueError, match="x must have shape"):
        prefix_shuffle_change(torch.randn(4), [0], random_attention(3))


@settings(max_examples=30, deadline=None)
@given(seq_len=st.integers(1, 10), d_model=st.integers(1, 8), shift=st.integers(0, 6),
       kernel_size=st.sampled_from([1, 3, 5]), seed=st.integers(0, 10_000))
def test_convolution_is_translation_equivariant(seq_len: int, d_model: int, shift: int, kernel_size: int,
                                                seed: int) -> None:
    x = torch.randn(seq_len, d_model, generator=torch.Generator().manual_seed(seed))
    kernel = random_convolution(d_model, kernel_size, seed=seed)
    assert convolve(x, kernel).shape == (seq_len, d_model)
    assert convolution_shift_gap(x, shift, kernel) < 1e-5


def test_convolution_output_depends_on_neighbours_only() -> None:
    # Changing a token changes only the outputs within the kernel's reach.
    x = torch.randn(9, 4)
    kernel = random_convolution(4, 3, seed=0)
    y = x.clone()
    y[4] += 1.0
    moved = (convolve(y, kernel) - convolve(x, kernel)).abs().amax(dim=1) > 1e-6
    assert moved.tolist() == [False, False, False, True, True, True, False, False, False]


def test_convolution_errors_name_the_argument() -> None:
    with pytest.raises(ValueError, match="kernel_size must be odd"):
        random_convolution(4, 2)
    with pytest.raises(ValueError, match="kernel must have shape"):
        convolve(torch.zeros(3, 4), torch.zeros(4, 4, 2))
    with pytest.raises(ValueError, match="x must have shape"):
        convolve(torch.zeros(3, 5), random_convolution(4))
    with pytest.raises(ValueError, match="shift"):
        convolution_shift_gap(torch.zeros(3, 4), -1, random_convolution(4))
