"""Tests for posenc.rope_practice: each pitfall's check passes on the fix and fails on the bug."""

from __future__ import annotations

import pytest
import torch

from posenc.relative import apply_rope
from posenc.rope_practice import (
    ANGLE_DTYPES,
    angle_error,
    exact_integer_limit,
    generation_position_ids,
    incremental_attention,
    interleaved_to_half_permutation,
    left_padding_position_ids,
    packed_attention_mask,
    packed_position_ids,
    permute_rotary_weight,
    rope_attention,
    rope_attention_scores,
    rope_cos_sin,
)
from posenc.rope_scaling import RopeScaling


def _randn(*shape: int, seed: int) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


# -- 1. left padding --------------------------------------------------------------------------------
def test_left_padding_position_ids_by_hand() -> None:
    mask = torch.tensor([[0, 0, 1, 1, 1], [1, 1, 1, 1, 1]])
    assert left_padding_position_ids(mask).tolist() == [[1, 1, 0, 1, 2], [0, 1, 2, 3, 4]]
    assert left_padding_position_ids(mask, fill_value=0).tolist() == [[0, 0, 0, 1, 2], [0, 1, 2, 3, 4]]
    assert left_padding_position_ids([[True, True, False]]).tolist() == [[0, 1, 1]]  # right padding too
    assert left_padding_position_ids(mask).dtype == torch.long


def _padded_scores(scaling: RopeScaling | None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Scores between the 6 real tokens (10 padding slots before them): unpadded, with HF positions, with arange."""
    n_pad, n_real, d = 10, 6, 16
    q, k = _randn(n_real, d, seed=1), _randn(n_real, d, seed=2)
    qp, kp = torch.cat([_randn(n_pad, d, seed=3), q]), torch.cat([_randn(n_pad, d, seed=4), k])
    mask = torch.tensor([[0] * n_pad + [1] * n_real])
    unpadded = rope_attention_scores(q, k, torch.arange(n_real), scaling=scaling)
    fixed = rope_attention_scores(qp, kp, left_padding_position_ids(mask)[0], scaling=scaling)[n_pad:, n_pad:]
    naive = rope_attention_scores(qp, kp, torch.arange(n_pad + n_real), scaling=scaling)[n_pad:, n_pad:]
    return unpadded, fixed, naive


def test_left_padding_matters_for_dynamic_ntk() -> None:
    # trained on 8: the real prompt (6) is within it, the padded row (16) is not
    unpadded, fixed, naive = _padded_scores(RopeScaling("dynamic_ntk", train_len=8))
    assert torch.allclose(fixed, unpadded, atol=1e-12)
    assert (naive - unpadded).abs().max() > 0.05  # the padding changed the speeds


def test_left_padding_does_not_matter_for_plain_rope_scores() -> None:
    # The honest half: a constant shift of a row leaves every offset, hence every score, unchanged.
    unpadded, fixed, naive = _padded_scores(None)
    assert torch.allclose(fixed, unpadded, atol=1e-12)
    assert torch.allclose(naive, unpadded, atol=1e-10)


def test_left_padding_position_ids_errors() -> None:
    with pytest.raises(ValueError, match=r"shape \(batch, seq_len\)"):
        left_padding_position_ids(torch.tensor([1, 1, 0]))
    with pytest.raises(ValueError, match="only 0 and 1.*got 2"):
        left_padding_position_ids(torch.tensor([[1, 2]]))
    with pytest.raises(ValueError, match=r"at least one real token.*rows \[1\]"):
        left_padding_position_ids(torch.tensor([[0, 1], [0, 0]]))
    with pytest.raises(TypeError, match="bool or integers.*float32"):
        left_padding_position_ids(torch.tensor([[0.0, 1.0]]))
    with pytest.raises(ValueError, match="fill_value"):
        left_padding_position_ids([[1, 1]], fill_value=-1)


# -- 2. KV cache -------------------------------------------------------------------------------------
def test_generation_position_ids_by_hand() -> None:
    assert generation_position_ids(5, 3).tolist() == [5, 6, 7]
    assert generation_position_ids(0, 2).tolist() == [0, 1]


def test_incremental_attention_matches_one_pass_only_with_offset() -> None:
    n, d = 7, 8
    q, k, v = _randn(n, d, seed=5), _randn(n, d, seed=6), _randn(n, 3, seed=7)
    one_pass = rope_attention(q, k, v, torch.arange(n))
    cached = incremental_attention(q, k, v, prompt_len=3)
    buggy = incremental_attention(q, k, v, prompt_len=3, offset=False)
    assert torch.allclose(cached, one_pass, atol=1e-12)
    assert torch.allclose(buggy[:3], one_pass[:3], atol=1e-12)  # the prompt itself is fine
    assert (buggy[3:] - one_pass[3:]).abs().amax(dim=1).min() > 1e-3  # every generated token is wrong


def test_rope_attention_default_mask_is_causal() -> None:
    q, k, v = _randn(4, 4, seed=8), _randn(4, 4, seed=9), torch.eye(4, dtype=torch.float64)
    weights = rope_attention(q, k, v, torch.arange(4))  # v = identity: the output is the weights
    assert torch.equal(weights.triu(1), torch.zeros(4, 4, dtype=torch.float64))
    assert torch.allclose(weights.sum(-1), torch.ones(4, dtype=torch.float64))


def test_kv_cache_errors() -> None:
    with pytest.raises(ValueError, match="past_length"):
        generation_position_ids(-1, 1)
    with pytest.raises(ValueError, match="n_new"):
        generation_position_ids(3, 0)
    q = _randn(4, 4, seed=0)
    with pytest.raises(ValueError, match="prompt_len must be <= the sequence length 4, got 5"):
        incremental_attention(q, q, q, prompt_len=5)
    with pytest.raises(ValueError, match="same number of rows"):
        incremental_attention(q, q, q[:3], prompt_len=2)
    with pytest.raises(ValueError, match="d_head.*even"):
        incremental_attention(q[:, :3], q[:, :3], q, prompt_len=2)
    with pytest.raises(ValueError, match=r"mask must be a bool tensor of shape \(4, 4\)"):
        rope_attention(q, q, q, torch.arange(4), mask=torch.ones(4, 4))
    with pytest.raises(ValueError, match=r"q_positions must have shape \(4,\)"):
        rope_attention_scores(q, q, torch.arange(3))


# -- 3. packed sequences ---------------------------------------------------------------------------------
def test_packing_by_hand() -> None:
    assert packed_position_ids([3, 2]).tolist() == [0, 1, 2, 0, 1]
    assert packed_attention_mask([2, 1]).int().tolist() == [[1, 0, 0], [1, 1, 0], [0, 0, 1]]
    assert packed_attention_mask(torch.tensor([2, 1]), causal=False).int().tolist() == [[1, 1, 0], [1, 1, 0],
                                                                                        [0, 0, 1]]


def _packed_vs_alone(lengths: list[int], positions: torch.Tensor, mask: torch.Tensor | None,
                     scaling: RopeScaling | None = None) -> list[float]:
    """For each document: largest |packed output - output alone|."""
    n, d = sum(lengths), 8
    q, k, v = _randn(n, d, seed=10), _randn(n, d, seed=11), _randn(n, 3, seed=12)
    packed = rope_attention(q, k, v, positions, mask=mask, scaling=scaling)
    gaps, start = [], 0
    for length in lengths:
        part = slice(start, start + length)
        alone = rope_attention(q[part], k[part], v[part], torch.arange(length), scaling=scaling)
        gaps.append(float((packed[part] - alone).abs().max()))
        start += length
    return gaps


def test_packing_needs_the_block_mask() -> None:
    lengths = [5, 3, 4]
    restarted, mask = packed_position_ids(lengths), packed_attention_mask(lengths)
    assert max(_packed_vs_alone(lengths, restarted, mask)) < 1e-12
    # plain causal mask: the first document is alone anyway, the others see their predecessors
    gaps = _packed_vs_alone(lengths, restarted, None)
    assert gaps[0] < 1e-12 and min(gaps[1:]) > 1e-2
    # plain RoPE does not need restarted positions: offsets inside a document are unchanged
    assert max(_packed_vs_alone(lengths, torch.arange(sum(lengths)), mask)) < 1e-10


def test_packing_needs_restarted_positions_for_the_trained_range_and_dynamic_ntk() -> None:
    lengths, train_len = [16] * 4, 16
    restarted, naive = packed_position_ids(lengths), torch.arange(64)
    assert int(restarted.max()) == 15 and int(naive.max()) == 63  # 63 is past a 16-token training length
    mask, dynamic = packed_attention_mask(lengths), RopeScaling("dynamic_ntk", train_len=train_len)
    assert max(_packed_vs_alone(lengths, restarted, mask, dynamic)) < 1e-12
    assert min(_packed_vs_alone(lengths, naive, mask, dynamic)) > 1e-2  # factor 4 instead of 1


def test_packing_errors() -> None:
    with pytest.raises(ValueError, match="non-empty"):
        packed_position_ids([])
    with pytest.raises(ValueError, match=r"document_lengths\[1\] must be a positive integer"):
        packed_position_ids([3, 0])
    with pytest.raises(TypeError, match=r"document_lengths\[0\]"):
        packed_attention_mask([2.5])
    with pytest.raises(ValueError, match="1-D"):
        packed_position_ids(torch.tensor([[2, 3]]))
    with pytest.raises(TypeError, match="causal must be True or False"):
        packed_attention_mask([2], causal="yes")  # type: ignore[arg-type]


# -- 4. interleaved vs half-split ---------------------------------------------------------------------------
def test_permutation_by_hand_and_on_rotations() -> None:
    perm = interleaved_to_half_permutation(6)
    assert perm.tolist() == [0, 2, 4, 1, 3, 5]
    assert perm.argsort().tolist() == [0, 3, 1, 4, 2, 5]
    x = _randn(5, 6, seed=13)
    assert torch.allclose(apply_rope(x, layout="interleaved")[..., perm], apply_rope(x[..., perm], layout="half"),
                          atol=1e-12)


def test_permute_rotary_weight_is_hugging_faces_permute_and_round_trips() -> None:
    n_heads, d_head, d_in = 3, 8, 10
    w = _randn(n_heads * d_head, d_in, seed=14)
    # convert_llama_weights_to_hf.py: w.view(n_heads, dim1 // n_heads // 2, 2, dim2).transpose(1, 2).reshape(dim1, dim2)
    hf = w.view(n_heads, d_head // 2, 2, d_in).transpose(1, 2).reshape(n_heads * d_head, d_in)
    assert torch.equal(permute_rotary_weight(w, n_heads), hf)
    assert torch.equal(permute_rotary_weight(permute_rotary_weight(w, n_heads), n_heads, to="interleaved"), w)
    assert torch.equal(permute_rotary_weight(permute_rotary_weight(w, n_heads, to="interleaved"), n_heads), w)


def test_permuted_weights_give_the_same_scores_and_unpermuted_ones_do_not() -> None:
    n_heads, d_head, d_in, n = 2, 8, 12, 6
    w_q, w_k = _randn(n_heads * d_head, d_in, seed=15), _randn(n_heads * d_head, d_in, seed=16)
    x = _randn(n, d_in, seed=17)
    w_q_half, w_k_half = permute_rotary_weight(w_q, n_heads), permute_rotary_weight(w_k, n_heads)
    positions = torch.arange(n)
    for h in range(n_heads):
        rows = slice(h * d_head, (h + 1) * d_head)
        trained = rope_attention_scores(x @ w_q[rows].T, x @ w_k[rows].T, positions, layout="interleaved")
        converted = rope_attention_scores(x @ w_q_half[rows].T, x @ w_k_half[rows].T, positions, layout="half")
        wrong = rope_attention_scores(x @ w_q[rows].T, x @ w_k[rows].T, positions, layout="half")
        assert torch.allclose(converted, trained, atol=1e-10)
        assert (wrong - trained).abs().max() > 0.1


def test_layout_errors() -> None:
    with pytest.raises(ValueError, match="d_head must be even"):
        interleaved_to_half_permutation(7)
    with pytest.raises(ValueError, match="not a multiple of n_heads=3"):
        permute_rotary_weight(torch.zeros(16, 4), 3)
    with pytest.raises(ValueError, match=r"shape \(n_heads \* d_head, d_in\)"):
        permute_rotary_weight(torch.zeros(16), 2)
    with pytest.raises(ValueError, match="to must be one of"):
        permute_rotary_weight(torch.zeros(16, 4), 2, to="neox")
    with pytest.raises(ValueError, match="d_head must be even"):
        permute_rotary_weight(torch.zeros(6, 4), 2)


# -- 5. precision ----------------------------------------------------------------------------------------------
def test_exact_integer_limits() -> None:
    assert exact_integer_limit(torch.bfloat16) == 256
    assert exact_integer_limit(torch.float16) == 2048
    assert exact_integer_limit(torch.float32) == 2**24
    for dtype in (torch.bfloat16, torch.float16):
        limit = exact_integer_limit(dtype)
        assert torch.tensor(float(limit), dtype=dtype).item() == limit
        assert torch.tensor(float(limit + 1), dtype=dtype).item() != limit + 1


def test_rope_cos_sin_by_hand() -> None:
    cos, sin = rope_cos_sin(torch.tensor([0, 1]), 4, base=100.0)
    assert cos.dtype == torch.float32 and cos.shape == (2, 2)
    assert cos[0].tolist() == [1.0, 1.0] and sin[0].tolist() == [0.0, 0.0]
    assert sin[1].tolist() == pytest.approx([0.8414710, 0.0998334], abs=1e-6)  # sin(1), sin(0.1)


def test_bfloat16_angles_are_garbage_at_4000_and_float32_angles_are_not() -> None:
    # measured: bfloat16 1.6, float16 0.60, float32 6.6e-5 at position 4000 (d_head 64)
    at_4000 = {dtype: angle_error([4000], 64, dtype=dtype) for dtype in ANGLE_DTYPES}
    assert at_4000[torch.float64] == 0.0
    assert at_4000[torch.bfloat16] > 0.5
    assert at_4000[torch.float16] > 0.2
    assert at_4000[torch.float32] < 1e-3
    # measured over 0 .. 4095: bfloat16 2.0 (cos/sin flipped), float32 1.5e-4
    assert angle_error(torch.arange(4096), 64, dtype=torch.bfloat16) > 1.5
    assert angle_error(torch.arange(4096), 64, dtype=torch.float32) < 1e-3


def test_precision_errors() -> None:
    with pytest.raises(ValueError, match="angle_dtype must be one of"):
        rope_cos_sin([1], 8, angle_dtype=torch.int32)
    with pytest.raises(ValueError, match=r"positions must have shape \(n,\)"):
        rope_cos_sin([[1]], 8)
    with pytest.raises(ValueError, match="largest finite torch.float16"):
        angle_error([70000], 8, dtype=torch.float16)
    with pytest.raises(ValueError, match="positions must be >= 0"):
        angle_error([-1], 8, dtype=torch.float32)
    with pytest.raises(ValueError, match="dtype must be one of"):
        exact_integer_limit(torch.int64)
