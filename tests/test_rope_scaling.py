"""posenc.rope_scaling: each method against values worked out by hand, against an independent
transcription of its reference code, and against its defining property; plus the model hook."""

from __future__ import annotations

import math

import pytest
import torch

from posenc.relative import RopeScheme, apply_rope, rope_inverse_frequencies
from posenc.rope_scaling import (
    METHODS,
    SETUPS,
    RopeScaling,
    dynamic_ntk_factor,
    dynamic_ntk_inverse_frequencies,
    LongRopeScaling,
    llama3_inverse_frequencies,
    longrope_attention_factor,
    longrope_inverse_frequencies,
    ntk_base,
    ntk_inverse_frequencies,
    pair_diagnostic,
    pi_inverse_frequencies,
    relative_score_curve,
    yarn_attention_factor,
    yarn_correction_range,
    yarn_inverse_frequencies,
    yarn_mscale,
    yarn_zones,
)
from posenc.train import TrainConfig, train

TWO_PI = 2 * math.pi


# -- by hand: d_head = 4, base = 100, so the speeds are [1, 0.1] ------------------------------
def test_pi_by_hand() -> None:
    assert pi_inverse_frequencies(4, factor=2.0, base=100.0).tolist() == pytest.approx([0.5, 0.05])


def test_ntk_by_hand() -> None:
    # base' = 100 * 4 ** (4 / 2) = 1600, so the slow pair turns at 1600 ** (-1/2) = 0.025 = 0.1 / 4
    assert ntk_base(4, factor=4.0, base=100.0) == pytest.approx(1600.0)
    assert ntk_inverse_frequencies(4, factor=4.0, base=100.0).tolist() == pytest.approx([1.0, 0.025])


def test_llama3_by_hand() -> None:
    # train_len 12: pair 0 turns 12 / (2 pi) = 1.91 times (between 1 and 4: blended with
    # g = (1.91 - 1) / 3); pair 1 turns 0.19 times (< 1: divided by the factor).
    g = (12 / TWO_PI - 1.0) / 3.0
    expected = [(1 - g) * 1.0 / 2 + g * 1.0, 0.1 / 2]
    got = llama3_inverse_frequencies(4, factor=2.0, train_len=12, base=100.0)
    assert got.tolist() == pytest.approx(expected)


def test_yarn_by_hand_on_the_books_model() -> None:
    # d_head 16, base 10,000, 16 tokens: pair 0 turns 16 / (2 pi) = 2.5 times, pair 1 0.8 times.
    # The pair that turns beta_slow = 1 time sits at i = 16 ln(16 / 2 pi) / (2 ln 10^4) = 0.81 -> ceil 1;
    # the one that would turn 32 times at i < 0 -> 0. The ramp keeps pair 0 and interpolates pairs 1..7.
    assert yarn_correction_range(16, train_len=16) == (0, 1)
    speeds = rope_inverse_frequencies(16)
    expected = torch.cat([speeds[:1], speeds[1:] / 4])
    assert torch.allclose(yarn_inverse_frequencies(16, factor=4.0, train_len=16), expected, rtol=0, atol=1e-15)


def test_yarn_attention_factor() -> None:
    assert yarn_attention_factor(1.0) == 1.0
    assert yarn_attention_factor(4.0) == pytest.approx(0.1 * math.log(4) + 1)  # 1.1386
    assert yarn_attention_factor(math.e) == pytest.approx(1.1)


# -- against transcriptions of the reference code (loops, as the authors wrote them) -----------
def _meta_llama3_reference(freqs: list[float], factor: float, low: float, high: float, old_len: int) -> list[float]:
    """Meta's ``apply_scaling`` for Llama 3.1, transcribed loop by loop."""
    low_freq_wavelen, high_freq_wavelen = old_len / low, old_len / high
    out = []
    for freq in freqs:
        wavelen = 2 * math.pi / freq
        if wavelen < high_freq_wavelen:
            out.append(freq)
        elif wavelen > low_freq_wavelen:
            out.append(freq / factor)
        else:
            smooth = (old_len / wavelen - low) / (high - low)
            out.append((1 - smooth) * freq / factor + smooth * freq)
    return out


def test_llama3_matches_the_reference_code_for_llama_3_1() -> None:
    d_head, base = 128, 500_000.0
    ours = llama3_inverse_frequencies(d_head, factor=8.0, train_len=8192, base=base)
    reference = _meta_llama3_reference(rope_inverse_frequencies(d_head, base=base).tolist(), 8.0, 1.0, 4.0, 8192)
    assert ours.tolist() == pytest.approx(reference, rel=1e-12)


def _yarn_reference(d_head: int, base: float, factor: float, original: int, beta_fast: float = 32,
                    beta_slow: float = 1) -> list[float]:
    """The YaRN authors' ``find_correction_range`` / ``linear_ramp_mask`` code, transcribed."""
    def correction_dim(rotations: float) -> float:
        return (d_head * math.log(original / (rotations * 2 * math.pi))) / (2 * math.log(base))

    low = max(math.floor(correction_dim(beta_fast)), 0)
    high = min(math.ceil(correction_dim(beta_slow)), d_head - 1)
    if low == high:
        high += 0.001
    out = []
    for i in range(d_head // 2):
        freq = base ** (-2 * i / d_head)
        ramp = min(max((i - low) / (high - low), 0.0), 1.0)
        extrapolation_share = 1 - ramp
        out.append(freq / factor * (1 - extrapolation_share) + freq * extrapolation_share)
    return out


@pytest.mark.parametrize(("d_head", "base", "factor", "original"),
                         [(128, 10000.0, 16.0, 4096), (128, 10000.0, 4.0, 2048), (16, 10000.0, 4.0, 16),
                          (64, 500_000.0, 8.0, 8192)])
def test_yarn_matches_the_reference_code(d_head: int, base: float, factor: float, original: int) -> None:
    ours = yarn_inverse_frequencies(d_head, factor=factor, train_len=original, base=base)
    assert ours.tolist() == pytest.approx(_yarn_reference(d_head, base, factor, original), rel=1e-12)


def test_llama3_with_equal_factors_is_a_step() -> None:
    # Llama 4 Scout: factor 16, low = high = 1: pairs that turn at least once in 8,192 tokens are kept,
    # the others divided by 16, nothing in between (Meta's apply_scaling gives the same step).
    d_head, base = 128, 500_000.0
    plain = rope_inverse_frequencies(d_head, base=base)
    scout = llama3_inverse_frequencies(d_head, factor=16.0, train_len=8192, base=base, low_freq_factor=1.0,
                                       high_freq_factor=1.0)
    ratio = scout / plain
    kept = ratio == 1.0
    assert kept.any() and torch.allclose(ratio[~kept], torch.full_like(ratio[~kept], 1 / 16), rtol=1e-12, atol=0)
    turns = 8192 * plain / TWO_PI
    assert torch.equal(kept, turns >= 1)
    reference = _meta_llama3_reference(plain.tolist(), 16.0, 1.0, 1.0 + 1e-9, 8192)  # a vanishing ramp
    assert scout.tolist() == pytest.approx(reference, rel=1e-12)


def test_yarn_without_rounding_is_gpt_oss() -> None:
    # gpt-oss's reference: the ramp's ends are not rounded (Hugging Face's truncate: false)
    low, high = yarn_correction_range(64, train_len=4096, base=150_000.0, truncate=False)
    assert (round(low, 2), round(high, 2)) == (8.09, 17.40)
    rounded = yarn_inverse_frequencies(64, factor=32.0, train_len=4096, base=150_000.0)
    exact = yarn_inverse_frequencies(64, factor=32.0, train_len=4096, base=150_000.0, truncate=False)
    assert not torch.allclose(rounded, exact) and torch.equal(rounded[:8], exact[:8])


def test_yarn_attention_factor_with_deepseek_mscales() -> None:
    assert yarn_attention_factor(40.0, mscale=1.0, mscale_all_dim=1.0) == 1.0
    assert yarn_attention_factor(40.0, mscale=1.0, mscale_all_dim=0.707) == pytest.approx(
        yarn_mscale(40.0) / yarn_mscale(40.0, 0.707))
    assert yarn_mscale(1.0) == 1.0 and yarn_mscale(40.0) == pytest.approx(0.1 * math.log(40) + 1)


def test_longrope_switches_sets_at_the_original_length() -> None:
    short, long_ = [1.0, 1.5], [2.0, 8.0]
    plain = rope_inverse_frequencies(4, base=100.0)
    for seq_len, factors in ((None, short), (8, short), (9, long_)):
        got = longrope_inverse_frequencies(4, short_factor=short, long_factor=long_, train_len=8, seq_len=seq_len,
                                           base=100.0)
        assert got.tolist() == pytest.approx((plain / torch.tensor(factors, dtype=torch.float64)).tolist())
    # Phi-3-mini-128k: 131,072 / 4,096 = 32
    assert longrope_attention_factor(32.0, train_len=4096) == pytest.approx(math.sqrt(1 + math.log(32) / math.log(4096)))
    assert longrope_attention_factor(1.0, train_len=4096) == 1.0
    scaling = LongRopeScaling(short, long_, train_len=8, factor=32.0)
    assert scaling.inverse_frequencies(4, base=100.0, seq_len=20)[1] == pytest.approx(0.1 / 8)
    assert scaling.query_key_scale == pytest.approx(math.sqrt(1 + math.log(32) / math.log(8)))


def test_yarn_correction_range_for_llama_2() -> None:
    # d_head 128, base 10,000, 4,096 tokens: pairs 20 (32 turns) to 46 (1 turn), rounded outwards.
    assert yarn_correction_range(128, train_len=4096) == (20, 46)


# -- defining properties ---------------------------------------------------------------------
@pytest.mark.parametrize("d_head", [4, 16, 64, 128])
@pytest.mark.parametrize("factor", [2.0, 4.0, 8.0])
def test_ntk_keeps_the_fastest_pair_and_slows_the_slowest_by_s(d_head: int, factor: float) -> None:
    plain, ntk = rope_inverse_frequencies(d_head), ntk_inverse_frequencies(d_head, factor=factor)
    assert ntk[0].item() == plain[0].item() == 1.0
    assert ntk[-1].item() == pytest.approx(plain[-1].item() / factor, rel=1e-12)
    ratios = (plain / ntk).tolist()
    assert all(a < b for a, b in zip(ratios, ratios[1:], strict=False))  # slower pairs are slowed more


@pytest.mark.parametrize("ramp", ["index", "rotations"])
def test_yarn_leaves_fast_pairs_and_divides_slow_pairs_by_s(ramp: str) -> None:
    d_head, train_len, factor = 128, 4096, 8.0
    plain = rope_inverse_frequencies(d_head)
    yarn = yarn_inverse_frequencies(d_head, factor=factor, train_len=train_len, ramp=ramp)
    turns = train_len * plain / TWO_PI
    fast, slow = turns > 32, turns < 1
    assert fast.any() and slow.any()
    assert torch.equal(yarn[fast], plain[fast])
    assert torch.allclose(yarn[slow], plain[slow] / factor, rtol=1e-12, atol=0)
    ratio = yarn / plain
    assert bool(((ratio >= 1 / factor - 1e-12) & (ratio <= 1 + 1e-12)).all())


def test_yarn_ramps_differ_in_between() -> None:
    # The paper's ramp is linear in turns, the code's in the pair index: same ends, another middle.
    by_index = yarn_inverse_frequencies(128, factor=8.0, train_len=4096, ramp="index")
    by_turns = yarn_inverse_frequencies(128, factor=8.0, train_len=4096, ramp="rotations")
    assert (by_index - by_turns).abs().max().item() > 1e-3


def test_llama3_keeps_short_wavelengths_and_divides_long_ones() -> None:
    d_head, base, train_len = 128, 500_000.0, 8192
    plain = rope_inverse_frequencies(d_head, base=base)
    scaled = llama3_inverse_frequencies(d_head, factor=8.0, train_len=train_len, base=base)
    wavelength = TWO_PI / plain
    short, long_ = wavelength < train_len / 4, wavelength > train_len
    assert short.sum() > 0 and long_.sum() > 0
    assert torch.equal(scaled[short], plain[short])
    assert torch.allclose(scaled[long_], plain[long_] / 8, rtol=1e-12, atol=0)


def test_pi_is_reading_positions_at_p_over_s() -> None:
    x = torch.randn(10, 8, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    positions = torch.arange(10)
    by_speed = apply_rope(x, positions, inverse_frequencies=pi_inverse_frequencies(8, factor=4.0))
    by_position = apply_rope(x, positions / 4.0)
    assert torch.allclose(by_speed, by_position, atol=1e-12)


def test_dynamic_ntk_is_plain_up_to_the_training_length_then_ntk() -> None:
    assert dynamic_ntk_factor(10, train_len=16) == 1.0
    assert dynamic_ntk_factor(16, train_len=16) == 1.0
    assert dynamic_ntk_factor(48, train_len=16) == 3.0
    # Hugging Face's factor: s = factor * L / L_train - (factor - 1)
    assert dynamic_ntk_factor(32, train_len=16, factor=2.0) == 3.0
    assert torch.equal(dynamic_ntk_inverse_frequencies(16, seq_len=12, train_len=16), rope_inverse_frequencies(16))
    assert torch.equal(dynamic_ntk_inverse_frequencies(16, seq_len=64, train_len=16),
                       ntk_inverse_frequencies(16, factor=4.0))


def test_every_method_is_the_identity_at_factor_1() -> None:
    plain = rope_inverse_frequencies(16)
    for method in METHODS:
        scaling = RopeScaling(method, factor=1.0, train_len=16)
        assert torch.allclose(scaling.inverse_frequencies(16, seq_len=16), plain, rtol=1e-12, atol=0), method
        assert scaling.query_key_scale == 1.0


# -- errors -------------------------------------------------------------------------------------
@pytest.mark.parametrize(("call", "match"), [
    (lambda: pi_inverse_frequencies(16, factor=0.5), "factor must be >= 1"),
    (lambda: ntk_base(2, factor=2.0), "d_head must be an even number >= 4"),
    (lambda: yarn_inverse_frequencies(16, factor=2.0, train_len=16, beta_fast=1.0, beta_slow=2.0),
     "beta_fast must be > beta_slow"),
    (lambda: yarn_inverse_frequencies(16, factor=2.0, train_len=16, ramp="linear"), "ramp"),
    (lambda: llama3_inverse_frequencies(16, factor=2.0, train_len=16, low_freq_factor=4.0, high_freq_factor=1.0),
     "high_freq_factor must be >= low_freq_factor"),
    (lambda: yarn_correction_range(16, train_len=16, truncate="no"), "truncate must be True or False"),
    (lambda: longrope_inverse_frequencies(16, short_factor=[1.0] * 7, long_factor=[1.0] * 8, train_len=8),
     "short_factor must hold 8 numbers"),
    (lambda: longrope_inverse_frequencies(16, short_factor=[1.0] * 8, long_factor=[0.0] * 8, train_len=8),
     "long_factor must be finite numbers > 0"),
    (lambda: LongRopeScaling((1.0,), (1.0, 2.0), train_len=8), "the same length"),
    (lambda: RopeScaling("xpos"), "method"),
    (lambda: RopeScaling.for_length("pi", train_len=16, target_len=8), "target_len must be >= train_len"),
    (lambda: RopeScaling("dynamic_ntk", train_len=16).inverse_frequencies(16), "needs seq_len"),
    (lambda: RopeScaling("yarn", factor=4.0), "train_len is required"),
    (lambda: yarn_correction_range(15, train_len=16), "even"),
])
def test_bad_input_is_named(call, match: str) -> None:  # noqa: ANN001
    with pytest.raises((ValueError, TypeError), match=match):
        call()


# -- the model hook -----------------------------------------------------------------------------
def _scheme_outputs(scheme: RopeScheme, positions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(1)
    q = torch.randn(2, 4, len(positions), 16, generator=generator)
    k = torch.randn(2, 4, len(positions), 16, generator=generator)
    return scheme.rotate(q, k, positions)


def test_pi_scaling_in_the_model_equals_position_interpolation() -> None:
    scheme, positions = RopeScheme(64, 4), torch.arange(64)
    scheme.set_position_interpolation(16, 64)
    expected = _scheme_outputs(scheme, positions)
    scheme.set_position_interpolation()
    scheme.set_scaling(RopeScaling.for_length("pi", train_len=16, target_len=64))
    got = _scheme_outputs(scheme, positions)
    for a, b in zip(got, expected, strict=True):
        assert torch.allclose(a, b, atol=1e-6)


def test_yarn_in_the_model_scales_queries_and_keys() -> None:
    scheme, positions = RopeScheme(64, 4), torch.arange(20)
    yarn = RopeScaling.for_length("yarn", train_len=16, target_len=64)
    scheme.set_scaling(yarn)
    q, k = _scheme_outputs(scheme, positions)
    assert yarn.query_key_scale == pytest.approx(yarn_attention_factor(4.0))
    plain_norm = _scheme_outputs(RopeScheme(64, 4), positions)[0].norm(dim=-1)
    assert torch.allclose(q.norm(dim=-1), plain_norm * yarn.query_key_scale, rtol=1e-5)


def test_dynamic_ntk_in_the_model_reads_the_current_length() -> None:
    plain = _scheme_outputs(RopeScheme(64, 4), torch.arange(16))
    scheme = RopeScheme(64, 4)
    scheme.set_scaling(RopeScaling("dynamic_ntk", train_len=16))
    short = _scheme_outputs(scheme, torch.arange(16))
    assert all(torch.equal(a, b) for a, b in zip(short, plain, strict=True))
    static = RopeScheme(64, 4)
    static.set_scaling(RopeScaling("ntk", factor=2.0, train_len=16))
    assert all(torch.allclose(a, b) for a, b in zip(_scheme_outputs(scheme, torch.arange(32)),
                                                     _scheme_outputs(static, torch.arange(32)), strict=True))


def test_scaling_and_interpolation_exclude_each_other() -> None:
    scheme = RopeScheme(64, 4)
    scheme.set_scaling(RopeScaling("ntk", factor=2.0))
    with pytest.raises(ValueError, match="switch it off"):
        scheme.set_position_interpolation(16, 32)
    with pytest.raises(TypeError, match="RopeScaling"):
        scheme.set_scaling("ntk")  # type: ignore[arg-type]


# -- diagnostics and curves ---------------------------------------------------------------------
def test_pair_diagnostic_on_the_books_model() -> None:
    rows = pair_diagnostic(16, train_len=16, target_len=64)
    assert rows[0].turns_in_training == pytest.approx(16 / TWO_PI)
    assert not rows[0].meets_new_angles  # pair 0 made a full turn in training: it has seen every angle
    assert all(row.meets_new_angles for row in rows[1:])
    assert rows[3].max_angle_at_target == pytest.approx(63 * 10000 ** (-6 / 16))
    pi = pair_diagnostic(16, train_len=16, target_len=64, scaling=RopeScaling.for_length("pi", train_len=16,
                                                                                          target_len=64))
    assert all(row.speed_ratio == pytest.approx(0.25) for row in pi)
    ntk = pair_diagnostic(16, train_len=16, target_len=64, scaling=RopeScaling("ntk", factor=4.0, train_len=16))
    assert ntk[0].speed_ratio == 1.0 and ntk[-1].speed_ratio == pytest.approx(0.25)


def test_pair_diagnostic_on_a_partial_head() -> None:
    # Width 128, base 10,000, trained on 4,096 and read at 16,384 (chapter 12's setting).
    setting = dict(train_len=4096, target_len=16384)
    full = pair_diagnostic(128, **setting)
    compressed = pair_diagnostic(128, **setting, partial=0.25, ladder="compressed")
    truncated = pair_diagnostic(128, **setting, partial=0.25, ladder="truncated")
    new = [sum(row.meets_new_angles for row in rows) for rows in (full, compressed, truncated)]
    assert new[2] == 0 < new[1] < new[0]  # p-RoPE keeps only pairs that turned in training
    for rows in (compressed, truncated):
        assert len(rows) == 64 and sum(row.speed > 0 for row in rows) == 16
        assert all(row.speed_ratio == 1.0 and not row.meets_new_angles for row in rows[16:])  # still pairs
    assert [row.speed for row in truncated[:16]] == [row.speed for row in full[:16]]
    # A scaling acts on the rotated part: PI divides every rotating pair of the compressed quarter by 4.
    pi = RopeScaling.for_length("pi", train_len=4096, target_len=16384)
    scaled = pair_diagnostic(128, **setting, scaling=pi, partial=0.25, ladder="compressed")
    assert all(row.speed_ratio == pytest.approx(0.25) for row in scaled[:16])
    assert not any(row.meets_new_angles for row in scaled)
    with pytest.raises(ValueError, match="ladder"):
        pair_diagnostic(128, **setting, partial=0.25, ladder="sideways")
    with pytest.raises(TypeError, match="scaling"):
        pair_diagnostic(128, **setting, scaling="yarn")

def test_relative_score_curve() -> None:
    distances = torch.arange(0, 200)
    plain = relative_score_curve(distances, 64)
    assert plain[0].item() == pytest.approx(1.0)
    assert plain[150:].abs().max() < 0.6  # it has decayed (the slowest pairs keep a floor)
    yarn = RopeScaling("yarn", factor=4.0, train_len=16)
    assert relative_score_curve(distances, 64, scaling=yarn)[0].item() == pytest.approx(yarn.query_key_scale ** 2)
    with pytest.raises(ValueError, match="distances"):
        relative_score_curve(torch.tensor([-1.0]), 64)


# -- training ---------------------------------------------------------------------------------------
def test_config_checks_rope_scalings() -> None:
    with pytest.raises(ValueError, match=r"needs a scheme that rotates queries and keys \(rope\), got scheme='alibi'"):
        TrainConfig(scheme="alibi", rope_scalings=("pi",))
    with pytest.raises(ValueError, match=r"rope_scalings\[0\]"):
        TrainConfig(scheme="rope", rope_scalings=("none",))
    assert "rope_scalings" not in TrainConfig(scheme="rope").to_dict()
    config = TrainConfig(scheme="rope", rope_scalings=["pi"])
    assert TrainConfig.from_dict(config.to_dict()) == config


def test_training_scores_every_method() -> None:
    config = TrainConfig(scheme="rope", steps=20, causal=True, eval_lengths=(32,), eval_examples=16,
                         score_new_positions=True, finetune_steps=2, finetune_len=32, rope_scalings=("pi", "yarn"))
    _, result = train(config)
    for key in ("new@32", "new@32:pi", "new@32:yarn", "short@32:pi", "short@32:yarn", "ft_new@32",
                "ft_new@32:pi", "ft_new@32:yarn", "ft@16:pi"):
        assert 0.0 <= result.metrics[key] <= 1.0, key


# -- figures, attention weights and the stored grid ---------------------------------------------------
def test_frequency_ladder_figure() -> None:
    from posenc.rope_scaling_plots import frequency_ladder_figure

    fig = frequency_ladder_figure(16, train_len=16, factor=4.0)
    by_name = {trace.name: list(trace.y) for trace in fig.data}
    assert set(by_name) == {"PI", "NTK-aware", "YaRN", "Llama 3"}
    assert by_name["PI"] == pytest.approx([0.25] * 8)
    assert by_name["NTK-aware"][0] == 1.0 and by_name["NTK-aware"][-1] == pytest.approx(0.25)
    assert by_name["YaRN"][0] == 1.0 and by_name["YaRN"][1:] == pytest.approx([0.25] * 7)


def test_scaling_explorer_frames_follow_the_diagnostic() -> None:
    from posenc.rope_scaling_plots import SETTINGS, scaling_explorer

    explorer = scaling_explorer()
    for setting, (d_head, train_len, base) in SETTINGS.items():
        for method in METHODS:
            frame = explorer.frame(method=method, factor=4.0, setting=setting)
            scaling = RopeScaling.for_length(method, train_len=train_len, target_len=4 * train_len)
            rows = pair_diagnostic(d_head, train_len=train_len, target_len=4 * train_len, scaling=scaling, base=base)
            assert frame.traces[1]["y"] == pytest.approx([r.max_angle_at_target for r in rows])
            assert f"{sum(r.meets_new_angles for r in rows)} of {d_head // 2} pairs" in frame.layout["title.text"]
    live = explorer.frame(method="yarn", factor=3.5, setting=next(iter(SETTINGS)))  # a live value off the grid
    assert len(live.traces[4]["y"]) == len(live.traces[4]["x"]) > 10


def test_attention_maps_figure_checks_its_input() -> None:
    from posenc.rope_scaling_plots import attention_maps_figure

    fig = attention_maps_figure({"a": torch.eye(4), "b": torch.eye(4)}, train_len=2, head=0, layer=1)
    assert len(fig.data) == 2
    with pytest.raises(ValueError, match="square"):
        attention_maps_figure({"a": torch.ones(3, 4)}, train_len=2, head=0, layer=1)
    with pytest.raises(ValueError, match="at least one"):
        attention_maps_figure({}, train_len=2, head=0, layer=1)


def test_attention_probabilities() -> None:
    from posenc.models import TinyTransformer, attention_probabilities

    torch.manual_seed(0)
    model = TinyTransformer(10, 10, d_model=32, n_heads=4, n_layers=2, max_len=8, position="rope", causal=True)
    model.train()
    tokens = torch.randint(0, 10, (3, 8))
    weights = attention_probabilities(model, tokens, layer=1)
    assert weights.shape == (3, 4, 8, 8)
    assert torch.allclose(weights.sum(-1), torch.ones(3, 4, 8))
    assert float(weights.triu(1).abs().max()) == 0.0  # causal: nothing after the query
    assert model.training and not model.blocks[1].attn.keep_weights and model.blocks[1].attn.last_weights is None
    with pytest.raises(ValueError, match="layer"):
        attention_probabilities(model, tokens, layer=2)


def _stored_scaling_grid():  # noqa: ANN202
    from posenc.book import data_path
    from posenc.results import load_results

    return load_results(data_path("rope_scaling_grid.json"))[0]


def test_scaling_rows_read_the_stored_grid() -> None:
    from posenc.results import select
    from posenc.suite import choose_learning_rates, outcome, outcome_text, scaling_rows, suite_variants

    results = _stored_scaling_grid()
    by_length = {n: choose_learning_rates(select(results, finetune_len=n)) for n in (32, 64)}
    cell = by_length[64]["copy_offset", "rope"]
    assert list(suite_variants(cell)) == ["rope", "rope + PI", "rope + NTK-aware", "rope + YaRN",
                                          "rope + YaRN (paper's ramp)", "rope + Llama 3"]
    headers, rows = scaling_rows(by_length, task="copy_offset")
    assert len(headers) == 6 and len(rows) == 7  # six readings of the base-10,000 model, one base-500,000 model
    yarn = next(row for row in rows if row[0] == "rope + YaRN")
    assert yarn[3] == outcome_text(outcome([r.metrics["new@64:yarn"] for r in cell.runs]))
    assert yarn[4] == outcome_text(outcome([r.metrics["ft_new@64:yarn"] for r in cell.runs]))


def test_stored_scaling_run_reproduces() -> None:
    """Re-run one stored run of chapter 11's grid (marker recall, fine-tuned at 32, seed 0): every
    method's zero-shot, short-input and fine-tuned scores are reproduced exactly."""
    from posenc.results import select
    from posenc.train import reproduce

    stored = [r for r in select(_stored_scaling_grid(), task="marker_recall", finetune_len=32, seed=0)
              if r.config.get("rope_scalings")]
    assert len(stored) == 1
    _, again, difference = reproduce(stored[0])
    assert {"new@64:yarn", "new@64:yarn_rotations", "short@64:pi", "ft_new@32:llama3"} <= set(again.metrics)
    assert difference == 0.0, again.metrics


# -- YaRN's zones of pairs, as the code ramps and as the paper defines them ---------------------
def test_yarn_zones_as_the_code_ramps() -> None:
    assert yarn_zones(16, train_len=16).counts == (1, 0, 7)  # chapter 11's toy: pair 0 kept by the clamp
    assert yarn_zones(128, train_len=32768, base=1e6).counts == (24, 16, 24)  # Qwen3 x4: ramp over pairs 24..39
    assert yarn_zones(64, train_len=4096).counts == (11, 12, 9)  # DeepSeek-V3's rotated slice
    assert sum(yarn_zones(128, train_len=4096).counts) == 64
    low, high = yarn_correction_range(64, train_len=4096)
    zones = yarn_zones(64, train_len=4096)
    assert zones.kept[-1] == low and zones.interpolated[0] == high


def test_yarn_zones_as_the_paper_defines_them() -> None:
    zones = yarn_zones(64, train_len=512, ramp="rotations")  # 81.5 * 10000**(-i/32) turns
    assert zones.kept == tuple(range(4)) and zones.ramp == tuple(range(4, 16)) and zones.interpolated == tuple(range(16, 32))
    assert zones.every_zone_holds(0.1) and zones.shares == {"kept": 0.125, "ramp": 0.375, "interpolated": 0.5}
    assert min(yarn_zones(128, train_len=4096, ramp="rotations").shares.values()) > 0.2  # Llama 2's regime
    toy = yarn_zones(16, train_len=16, ramp="rotations")  # no pair turns 32 times
    assert toy.kept == () and not toy.every_zone_holds(0.1)
    ratio = (yarn_inverse_frequencies(64, factor=4.0, train_len=512, ramp="rotations")
             / yarn_inverse_frequencies(64, factor=1.0, train_len=512)).tolist()
    assert all(ratio[i] == 1.0 for i in zones.kept) and all(ratio[i] == pytest.approx(0.25) for i in zones.interpolated)
    assert all(0.25 < ratio[i] < 1.0 for i in zones.ramp)


def test_yarn_paper_ramp_by_hand_in_the_realistic_regime() -> None:
    # d_head 64 at 512 tokens, x4: pair i turns r_i = 512 * 10000**(-i/32) / (2 pi) times; the paper's
    # ramp keeps r >= 32, divides r <= 1 by 4 and blends linearly in r between.
    d_head, train_len, factor = 64, 512, 4.0
    expected = []
    for i in range(d_head // 2):
        speed = 10000.0 ** (-2 * i / d_head)
        turns = train_len * speed / (2 * math.pi)
        kept_share = min(max((turns - 1.0) / (32.0 - 1.0), 0.0), 1.0)
        expected.append(kept_share * speed + (1 - kept_share) * speed / factor)
    ours = yarn_inverse_frequencies(d_head, factor=factor, train_len=train_len, ramp="rotations")
    assert ours.tolist() == pytest.approx(expected, rel=1e-12)
    # the authors' code ramps over the same pairs here (its clamp at pair 0 changes nothing), by index
    code = yarn_inverse_frequencies(d_head, factor=factor, train_len=train_len)
    assert code.tolist() == pytest.approx(_yarn_reference(d_head, 10000.0, factor, train_len), rel=1e-12)
    assert yarn_zones(d_head, train_len=train_len).counts == yarn_zones(d_head, train_len=train_len,
                                                                        ramp="rotations").counts == (4, 12, 16)


def test_setups_by_name() -> None:
    paper = RopeScaling.for_length("yarn_rotations", train_len=512, target_len=2048)
    assert paper == RopeScaling("yarn", factor=4.0, train_len=512, yarn_ramp="rotations")
    assert RopeScaling.for_length("yarn", train_len=512, target_len=2048).yarn_ramp == "index"
    assert RopeScaling.for_length("dynamic_ntk", train_len=512, target_len=2048).factor == 1.0
    assert set(SETUPS) == {m for m in METHODS if m != "none"} | {"yarn_rotations"}
    with pytest.raises(ValueError, match="method must be one of .*yarn_rotations.*got 'yarn_paper'"):
        RopeScaling.for_length("yarn_paper", train_len=512, target_len=2048)


def test_rope_scaling_accepts_llama_4_scouts_equal_factors() -> None:
    scout = RopeScaling("llama3", factor=16.0, train_len=8192, low_freq_factor=1.0, high_freq_factor=1.0)
    expected = llama3_inverse_frequencies(128, factor=16.0, train_len=8192, base=500_000.0, low_freq_factor=1.0,
                                          high_freq_factor=1.0)
    assert torch.equal(scout.inverse_frequencies(128, base=500_000.0), expected)


def test_yarn_zones_reject_bad_input() -> None:
    with pytest.raises(ValueError, match="train_len"):
        yarn_zones(64, train_len=0)
    with pytest.raises(ValueError, match="beta_fast must be > beta_slow"):
        yarn_zones(64, train_len=512, beta_fast=1.0, beta_slow=2.0)
    with pytest.raises(ValueError, match="ramp"):
        yarn_zones(64, train_len=512, ramp="linear")
