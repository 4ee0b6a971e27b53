"""Tests for posenc.relative: RoPE's relative property and ALiBi's slopes and biases."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from posenc.models import TinyTransformer
from posenc.registry import make_position_scheme
from posenc.relative import (
    ALiBi,
    AlibiScheme,
    RopeScheme,
    RotaryEmbedding,
    alibi_bias,
    alibi_slopes,
    apply_rope,
    rope_angles,
    rope_inverse_frequencies,
)

FAST = settings(max_examples=40, deadline=None)


def _score(q: torch.Tensor, k: torch.Tensor, m: float, n: float, layout: str = "interleaved") -> float:
    """Dot product of q rotated to position m and k rotated to position n (float64)."""
    qm = apply_rope(q.unsqueeze(0), torch.tensor([m], dtype=torch.float64), layout=layout)[0]
    kn = apply_rope(k.unsqueeze(0), torch.tensor([n], dtype=torch.float64), layout=layout)[0]
    return float(qm @ kn)


# -- RoPE ------------------------------------------------------------------------------------
def test_inverse_frequencies_known_values() -> None:
    theta = rope_inverse_frequencies(8)
    assert torch.allclose(theta, torch.tensor([1.0, 0.1, 0.01, 0.001], dtype=torch.float64), rtol=1e-12)
    assert rope_inverse_frequencies(4, base=100.0).tolist() == pytest.approx([1.0, 0.1])


def test_rotation_of_a_unit_vector_is_a_known_angle() -> None:
    x = torch.tensor([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]], dtype=torch.float64)
    out = apply_rope(x, torch.tensor([0, 1, 2]))
    expected = torch.tensor([[1.0, 0.0], [math.cos(1), math.sin(1)], [-math.sin(2), math.cos(2)]], dtype=torch.float64)
    assert torch.allclose(out, expected, atol=1e-12)


def test_position_zero_is_the_identity_and_norms_are_kept() -> None:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(2, 3, 7, 16, generator=g)
    out = apply_rope(x)
    assert torch.equal(out[..., 0, :], x[..., 0, :])
    assert torch.allclose(out.norm(dim=-1), x.norm(dim=-1), atol=1e-5)
    # Each pair keeps its own length, not only the whole vector.
    assert torch.allclose(out[..., 0::2] ** 2 + out[..., 1::2] ** 2, x[..., 0::2] ** 2 + x[..., 1::2] ** 2, atol=1e-5)


@FAST
@given(
    seed=st.integers(0, 2**16),
    half_width=st.integers(1, 16),
    m=st.integers(0, 5000),
    n=st.integers(0, 5000),
    shift=st.integers(0, 5000),
    layout=st.sampled_from(["interleaved", "half"]),
)
def test_rope_score_depends_only_on_the_offset(seed: int, half_width: int, m: int, n: int, shift: int,
                                               layout: str) -> None:
    g = torch.Generator().manual_seed(seed)
    q, k = torch.randn(2, 2 * half_width, generator=g, dtype=torch.float64)
    base = _score(q, k, m, n, layout)
    assert _score(q, k, m + shift, n + shift, layout) == pytest.approx(base, rel=1e-9, abs=1e-9)
    # The same number as: q unrotated against k rotated by the offset alone (R_m^T R_n = R_{n-m}).
    if n >= m:
        assert _score(q, k, 0, n - m, layout) == pytest.approx(base, rel=1e-9, abs=1e-9)
    else:
        assert _score(q, k, m - n, 0, layout) == pytest.approx(base, rel=1e-9, abs=1e-9)


def test_rope_score_does_change_with_the_offset() -> None:
    # The property above must not hold trivially (e.g. by a no-op rotation).
    g = torch.Generator().manual_seed(1)
    q, k = torch.randn(2, 8, generator=g, dtype=torch.float64)
    scores = {round(_score(q, k, 10, 10 + offset), 6) for offset in range(6)}
    assert len(scores) == 6


def test_half_layout_is_a_channel_permutation_of_interleaved() -> None:
    g = torch.Generator().manual_seed(2)
    x = torch.randn(5, 12, generator=g)
    perm = torch.cat([torch.arange(0, 12, 2), torch.arange(1, 12, 2)])
    assert torch.allclose(apply_rope(x[:, perm], layout="half"), apply_rope(x)[:, perm], atol=1e-6)


def test_fractional_positions_rotate_by_fractional_angles() -> None:
    # Position interpolation: positions divided by 2 give exactly half the angles.
    assert torch.allclose(rope_angles(torch.arange(6) / 2, 8), rope_angles(torch.arange(6), 8) / 2)
    x = torch.randn(6, 8, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    # Row 2 sits at position 2 / 2 = 1: the same rotation as position 1 in an unscaled sequence.
    assert torch.allclose(apply_rope(x, torch.arange(6) / 2)[2], apply_rope(x[2:3], torch.tensor([1]))[0])


def test_float32_is_accurate_at_large_positions() -> None:
    # Angles are computed in float64 before casting, so float32 output stays close to float64.
    x = torch.randn(4, 64, generator=torch.Generator().manual_seed(4), dtype=torch.float64)
    pos = torch.tensor([0, 8192, 65536, 1_000_000])
    exact = apply_rope(x, pos)
    assert torch.allclose(apply_rope(x.float(), pos).double(), exact, atol=1e-5)


def test_batched_positions_match_per_row_positions() -> None:
    g = torch.Generator().manual_seed(5)
    q = torch.randn(2, 3, 4, 8, generator=g)
    pos = torch.tensor([[0, 1, 2, 3], [10, 11, 12, 13]])
    out = apply_rope(q, pos)
    assert torch.allclose(out[1], apply_rope(q[1], pos[1]))
    assert torch.allclose(out[0], apply_rope(q[0]))


@pytest.mark.parametrize(
    ("call", "error", "fragment"),
    [
        (lambda: rope_inverse_frequencies(7), ValueError, "d_head must be even"),
        (lambda: rope_inverse_frequencies(8, base=1.0), ValueError, "base must be > 1"),
        (lambda: apply_rope(torch.zeros(4, 6), torch.arange(3)), ValueError, "positions must have shape (4,)"),
        (lambda: apply_rope(torch.zeros(4, 6), torch.tensor([0, 1, -2, 3])), ValueError, "must be >= 0"),
        (lambda: apply_rope(torch.zeros(2, 6), torch.tensor([0.0, float("nan")])), ValueError, "must be finite"),
        (lambda: apply_rope(torch.zeros(2, 6), torch.tensor([True, False])), TypeError, "real numbers"),
        (lambda: apply_rope(torch.zeros(4, 5)), ValueError, "must be even"),
        (lambda: apply_rope(torch.zeros(4, 6, dtype=torch.long)), TypeError, "floating-point"),
        (lambda: apply_rope(torch.zeros(6)), ValueError, "shape (..., seq_len, d_head)"),
        (lambda: apply_rope(torch.zeros(4, 6), layout="pairs"), ValueError, "layout must be one of"),
        (lambda: RotaryEmbedding(8)(torch.zeros(3, 6), torch.zeros(3, 6)), ValueError, "d_head=8"),
        (lambda: RotaryEmbedding(8)(torch.zeros(3, 8), torch.zeros(4, 8)), ValueError, "same shape, got (3, 8) and (4, 8)"),
        (lambda: RopeScheme(30, 4), ValueError, "divisible"),
        (lambda: RopeScheme(12, 4), ValueError, "must be even"),
    ],
)
def test_rope_errors_name_the_argument(call, error, fragment) -> None:
    with pytest.raises(error, match=None) as info:
        call()
    assert fragment in str(info.value)


# -- ALiBi -----------------------------------------------------------------------------------
def test_eight_head_slopes_are_the_papers() -> None:
    assert alibi_slopes(8).tolist() == [1 / 2**h for h in range(1, 9)]


@pytest.mark.parametrize("n_heads", [1, 2, 4, 16, 32])
def test_power_of_two_slopes_are_geometric(n_heads: int) -> None:
    slopes = alibi_slopes(n_heads)
    start = 2 ** (-8 / n_heads)
    assert slopes[0].item() == pytest.approx(start)
    assert torch.allclose(slopes[1:] / slopes[:-1], torch.full((n_heads - 1,), start, dtype=torch.float64))
    assert slopes[-1].item() == pytest.approx(2**-8)


def test_sixteen_heads_interleave_the_eight_head_slopes() -> None:
    # The paper: 16 heads = the 8 slopes plus their pairwise geometric means (start 2^-0.5, ratio 2^-0.5).
    sixteen, eight = alibi_slopes(16), alibi_slopes(8)
    assert torch.allclose(sixteen[1::2], eight)
    assert sixteen[0].item() == pytest.approx(2**-0.5)


@pytest.mark.parametrize(
    ("n_heads", "exponents"),
    [
        (12, [1, 2, 3, 4, 5, 6, 7, 8, 0.5, 1.5, 2.5, 3.5]),
        (6, [2, 4, 6, 8, 1, 3]),
        (3, [4, 8, 2]),
        (5, [2, 4, 6, 8, 1]),
    ],
)
def test_other_head_counts_follow_the_reference_interpolation(n_heads: int, exponents: list[float]) -> None:
    assert torch.allclose(alibi_slopes(n_heads), torch.tensor([2.0**-e for e in exponents], dtype=torch.float64))


@given(n_heads=st.integers(1, 64))
def test_slopes_are_distinct_and_in_the_unit_interval(n_heads: int) -> None:
    slopes = alibi_slopes(n_heads)
    assert slopes.shape == (n_heads,)
    assert bool(((slopes > 0) & (slopes < 1)).all())
    assert len(set(slopes.tolist())) == n_heads


@FAST
@given(
    n_heads=st.integers(1, 8),
    positions=st.lists(st.integers(0, 1000), min_size=1, max_size=12),
    shift=st.integers(0, 1000),
)
def test_alibi_bias_is_minus_slope_times_distance(n_heads: int, positions: list[int], shift: int) -> None:
    bias = alibi_bias(n_heads, torch.tensor(positions))
    slopes = alibi_slopes(n_heads)
    size = len(positions)
    assert bias.shape == (n_heads, size, size)
    for h in range(n_heads):
        for i in range(size):
            for j in range(size):
                expected = -slopes[h].item() * abs(positions[i] - positions[j])
                assert bias[h, i, j].item() == pytest.approx(expected, rel=1e-6, abs=1e-6)
    assert torch.equal(bias, bias.transpose(-1, -2))
    assert torch.equal(alibi_bias(n_heads, torch.tensor(positions) + shift), bias)  # only distances matter


def test_alibi_bias_on_consecutive_positions_is_toeplitz_with_zero_diagonal() -> None:
    bias = alibi_bias(4, 10)
    assert torch.equal(torch.diagonal(bias, dim1=-2, dim2=-1), torch.zeros(4, 10))
    for offset in range(10):
        diagonal = torch.diagonal(bias, offset=-offset, dim1=-2, dim2=-1)
        assert torch.allclose(diagonal, diagonal[:, :1].expand_as(diagonal))
        assert torch.allclose(diagonal[:, 0], -alibi_slopes(4).float() * offset)


def test_causal_softmax_equals_the_reference_implementation_form() -> None:
    # The authors' code adds +m*j (one row for every query); under the causal mask the
    # softmax is the same as with -m*(i - j), because each row differs by a constant.
    n_heads, size = 4, 9
    scores = torch.randn(n_heads, size, size, generator=torch.Generator().manual_seed(6), dtype=torch.float64)
    mask = torch.ones(size, size, dtype=torch.bool).triu(1)
    ours = (scores + alibi_bias(n_heads, size).double()).masked_fill(mask, float("-inf")).softmax(-1)
    reference_bias = alibi_slopes(n_heads).view(-1, 1, 1) * torch.arange(size, dtype=torch.float64).view(1, 1, -1)
    theirs = (scores + reference_bias).masked_fill(mask, float("-inf")).softmax(-1)
    assert torch.allclose(ours, theirs, atol=1e-12)


def test_batched_positions_and_module() -> None:
    pos = torch.tensor([[0, 1, 2], [5, 7, 9]])
    bias = ALiBi(2)(pos)
    assert bias.shape == (2, 2, 3, 3)
    assert torch.allclose(bias[1], alibi_bias(2, torch.tensor([5, 7, 9])))
    assert bias[1, 0, 0, 2].item() == pytest.approx(-0.0625 * 4)


@pytest.mark.parametrize(
    ("call", "error", "fragment"),
    [
        (lambda: alibi_slopes(0), ValueError, "n_heads must be a positive integer"),
        (lambda: alibi_slopes(2.0), TypeError, "n_heads must be a positive integer"),
        (lambda: alibi_bias(2, 0), ValueError, "positions (as a length)"),
        (lambda: alibi_bias(2, torch.zeros(1, 2, 3)), ValueError, "(seq_len,) or (batch, seq_len)"),
        (lambda: alibi_bias(2, 3, slopes=torch.ones(3)), ValueError, "slopes must have shape (2,)"),
        (lambda: alibi_bias(2, torch.tensor([0, -1])), ValueError, "must be >= 0"),
    ],
)
def test_alibi_errors_name_the_argument(call, error, fragment) -> None:
    with pytest.raises(error) as info:
        call()
    assert fragment in str(info.value)


# -- in the chapter 6 model ------------------------------------------------------------------
@pytest.mark.parametrize("name", ["rope", "alibi"])
def test_registered_schemes_make_the_model_shift_invariant(name: str) -> None:
    # A purely relative scheme: shifting every position by the same amount changes nothing.
    torch.manual_seed(0)
    model = TinyTransformer(12, 3, d_model=32, n_heads=4, position=name, max_len=16).eval()
    tokens = torch.randint(0, 12, (2, 10), generator=torch.Generator().manual_seed(7))
    with torch.no_grad():
        plain = model(tokens)
        shifted = model(tokens, position_ids=torch.arange(10) + 37)
        longer = model(torch.randint(0, 12, (1, 64)))  # no maximum length
    assert torch.allclose(plain, shifted, atol=1e-4)
    assert longer.shape == (1, 64, 3)


def test_sinusoidal_model_is_not_shift_invariant() -> None:
    # Control for the test above: an absolute scheme does see the shift.
    torch.manual_seed(0)
    model = TinyTransformer(12, 3, d_model=32, n_heads=4, position="sinusoidal", max_len=16).eval()
    tokens = torch.randint(0, 12, (2, 10), generator=torch.Generator().manual_seed(7))
    with torch.no_grad():
        assert not torch.allclose(model(tokens), model(tokens, position_ids=torch.arange(10) + 37), atol=1e-3)


def test_registry_builds_the_adapters_and_rejects_unknown_options() -> None:
    rope = make_position_scheme("rope", d_model=32, n_heads=4, max_len=8, layout="half")
    assert isinstance(rope, RopeScheme) and rope.rotary.layout == "half" and rope.max_len is None
    alibi = make_position_scheme("alibi", d_model=32, n_heads=4, max_len=8)
    assert isinstance(alibi, AlibiScheme) and alibi.attention_bias(torch.arange(3)).shape == (4, 3, 3)
    assert sum(p.numel() for p in rope.parameters()) == 0 and sum(p.numel() for p in alibi.parameters()) == 0
    with pytest.raises(ValueError, match="unknown option"):
        make_position_scheme("alibi", d_model=32, n_heads=4, max_len=8, base=10.0)


# -- figures and explorer (posenc.relative_plots) ----------------------------------------------
def test_rope_explorer_score_ignores_the_query_position() -> None:
    from posenc.relative_plots import rope_pair_explorer

    explorer = rope_pair_explorer()
    near = explorer.frame(offset=8, pair=1, query_position=64)
    far = explorer.frame(offset=8, pair=1, query_position=1000)
    assert near.traces[5]["y"] == pytest.approx(far.traces[5]["y"], abs=1e-9)
    assert list(near.traces[3]["y"]) == pytest.approx(list(far.traces[3]["y"]), abs=1e-9)
    # ...while the arrows themselves did turn.
    assert near.traces[1]["x"][1] != pytest.approx(far.traces[1]["x"][1], abs=1e-3)


def test_accuracy_rows_and_html_table() -> None:
    from posenc.relative_plots import accuracy_by_length_rows, length_table_html
    from posenc.results import RunResult

    def run(scheme: str, seed: int, metrics: dict[str, float]) -> RunResult:
        return RunResult(config={"scheme": scheme, "position_options": {}, "seed": seed}, seed=seed,
                         metrics=metrics, history=[], wall_time_s=0.0)

    results = [
        run("rope", 0, {"accuracy@16": 1.0, "accuracy@32": 0.8}),
        run("rope", 1, {"accuracy@16": 1.0, "accuracy@32": 0.6}),
        run("learned", 0, {"accuracy@16": 0.9, "accuracy@32:clip": 0.3}),
    ]
    rows = accuracy_by_length_rows(results, [16, 32], strategies=["clip"])
    rope_32 = next(r for r in rows if r["label"] == "rope" and r["length"] == 32)
    assert rope_32["mean"] == pytest.approx(0.7) and rope_32["n"] == 2
    assert any(r["label"] == "learned (bert) + clip" and r["length"] == 32 for r in rows)
    table = length_table_html(rows, [16, 32], train_len=16)
    assert "<td>rope</td><td style=\"text-align: right\">1.000 ± 0.000</td>" in table
    assert "0.700 ± 0.141" in table and "<th scope=\"col\" style=\"text-align: right\">32 (2×)</th>" in table
    assert "<td>learned (bert)</td><td style=\"text-align: right\">0.900 ± 0.000</td><td style=\"text-align: right\">—</td>" in table


def test_encoder_alibi_is_symmetric_and_its_own_reverse() -> None:
    # The question the reversal property turns on: ALiBi without a mask is -m |i - j|, so the bias
    # equals its transpose and is unchanged when the sequence is reversed (i -> n-1-i, j -> n-1-j).
    bias = alibi_bias(4, 7)
    assert torch.equal(bias, bias.transpose(-1, -2))
    assert torch.equal(bias, bias.flip(-1, -2))
    assert bias[0, 2, 5] == bias[0, 5, 2] == -0.25 * 3  # 4 heads: slopes 1/4, 1/16, ...


def test_rope_scheme_position_interpolation_in_a_model() -> None:
    # With PI from 4 to 8, the model at position p computes what it computed at p / 2: an input
    # at positions 0, 2, 4 under PI equals the plain model at positions 0, 1, 2.
    torch.manual_seed(0)
    model = TinyTransformer(7, 3, d_model=16, n_heads=2, n_layers=1, max_len=4, position="rope").eval()
    assert isinstance(model.position, RopeScheme) and model.position.interpolation is None
    tokens = torch.tensor([[1, 5, 2]])
    plain = model(tokens)
    model.position.set_position_interpolation(4, 8)
    assert torch.allclose(model(tokens, position_ids=torch.tensor([0, 2, 4])), plain, atol=1e-6)
    assert not torch.allclose(model(tokens), plain, atol=1e-4)
    with pytest.raises(ValueError, match="positions must be < target_len=8"):
        model(torch.zeros(1, 9, dtype=torch.long))
    model.position.set_position_interpolation()
    assert torch.equal(model(tokens), plain)
    with pytest.raises(ValueError, match="give both train_len and target_len"):
        model.position.set_position_interpolation(4)
    with pytest.raises(ValueError, match="target_len must be >= train_len=8"):
        model.position.set_position_interpolation(8, 4)


# -- partial rotation (partial RoPE, p-RoPE) -----------------------------------------------------------
def test_partial_ladders_against_transformers() -> None:
    """'truncated' is Gemma 4's 'proportional'; 'compressed' is GLM-4.5's partial_rotary_factor."""
    import warnings

    from transformers import Glm4MoeConfig, LlamaConfig
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS
    from transformers.models.glm4_moe.modeling_glm4_moe import Glm4MoeRotaryEmbedding

    from posenc.relative import partial_inverse_frequencies

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gemma_like = LlamaConfig(hidden_size=256, num_attention_heads=4, head_dim=64, rope_parameters={
            "rope_type": "proportional", "rope_theta": 1e6, "partial_rotary_factor": 0.25})
        proportional, _ = ROPE_INIT_FUNCTIONS["proportional"](gemma_like, None)
        glm_like = Glm4MoeConfig(hidden_size=256, num_attention_heads=4, head_dim=64, partial_rotary_factor=0.5,
                                 rope_parameters={"rope_type": "default", "rope_theta": 1e4,
                                                  "partial_rotary_factor": 0.5})
        compressed, _ = Glm4MoeRotaryEmbedding.compute_default_rope_parameters(glm_like, None)
    truncated = partial_inverse_frequencies(64, 0.25, base=1e6, ladder="truncated")
    assert torch.allclose(truncated, proportional.double(), rtol=1e-6, atol=0)
    ours = partial_inverse_frequencies(64, 0.5, base=1e4, ladder="compressed")
    assert torch.allclose(ours[:16], compressed.double(), rtol=1e-6, atol=0) and not ours[16:].any()
    # the compressed ladder spans the full range of speeds on fewer pairs; the truncated one drops the slow ones
    assert ours[15] < 1e-3 < truncated[7] and truncated[8:].eq(0).all()


def test_a_partial_rope_scheme_leaves_the_other_pairs_untouched() -> None:
    scheme = make_position_scheme("rope", d_model=32, n_heads=2, max_len=8, partial=0.25, layout="interleaved")
    q = torch.randn(1, 2, 5, 16, dtype=torch.float64)
    rotated, _ = scheme.rotate(q, q, torch.arange(5))
    assert torch.equal(rotated[..., 4:], q[..., 4:])  # pairs 2..7 have speed 0: no rotation
    assert not torch.allclose(rotated[..., :4], q[..., :4])
    from posenc.rope_scaling import RopeScaling

    scheme.set_scaling(RopeScaling.for_length("yarn", train_len=8, target_len=32))
    scaled, _ = scheme.rotate(q, q, torch.arange(5))
    assert torch.allclose(scaled[..., 4:], q[..., 4:] * scheme.scaling.query_key_scale, rtol=1e-12, atol=0)
    with pytest.raises(ValueError, match="rotates no pair"):
        make_position_scheme("rope", d_model=32, n_heads=2, max_len=8, partial=0.05)
    with pytest.raises(ValueError, match="ladder must be one of"):
        make_position_scheme("rope", d_model=32, n_heads=2, max_len=8, partial=0.5, ladder="middle")


def test_rope_alias_offsets_are_the_offsets_the_fast_pairs_confuse() -> None:
    from posenc.relative import rope_alias_offsets

    # d_head 16: pair 0 turns 1 rad per token, pair 1 0.316; offset 2 + 19 = 21 is 19 rad on
    # (about 3 turns) in pair 0 and 6.0 rad (about 1 turn) in pair 1
    found = rope_alias_offsets(2, 16, max_offset=63)
    assert [r for r, _ in found] == [21, 40]
    assert found[0][1] == pytest.approx((abs(19 - 6 * math.pi), abs(19 * 10000 ** -0.125 - 2 * math.pi)), abs=1e-4)
    # with one pair only, more offsets fool it; an exact whole turn is found at tolerance ~0
    assert {8, 21, 27, 46} <= {r for r, _ in rope_alias_offsets(2, 16, max_offset=63, pairs=1, tolerance=0.3)}
    with pytest.raises(ValueError, match="max_offset must be > offset"):
        rope_alias_offsets(2, 16, max_offset=2)
    with pytest.raises(ValueError, match="pairs must be at most d_head / 2 = 8"):
        rope_alias_offsets(2, 16, max_offset=63, pairs=9)
