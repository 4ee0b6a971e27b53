"""Tests for posenc.bugs: every check fails on its buggy implementation and passes on the fix."""

from __future__ import annotations

import functools
import math
import subprocess
import sys

import pytest
import torch

from posenc import bugs
from posenc.bugs import BUGS, Bug, check_fails
from posenc.relative import alibi_slopes
from posenc.rope_practice import rope_cos_sin
from posenc.sinusoidal import sinusoidal_table


@pytest.fixture(params=BUGS, ids=[bug.key for bug in BUGS])
def bug(request: pytest.FixtureRequest) -> Bug:
    return request.param  # type: ignore[no-any-return]


# -- the contract of every case --------------------------------------------------------------------
def test_eleven_cases_with_distinct_keys() -> None:
    assert len(BUGS) == 11  # the appendix's text and summary table count them
    assert len({b.key for b in BUGS}) == len(BUGS)


def test_check_fails_on_the_buggy_version(bug: Bug) -> None:
    with pytest.raises(AssertionError):
        bug.check(bug.buggy)


def test_check_passes_on_the_fix(bug: Bug) -> None:
    summary = bug.check(bug.fixed)
    assert isinstance(summary, str) and summary


def test_check_fails_returns_the_message(bug: Bug) -> None:
    message = check_fails(bug.check, bug.buggy)
    assert isinstance(message, str) and len(message) > 20


def test_check_fails_raises_when_the_check_passes(bug: Bug) -> None:
    with pytest.raises(AssertionError, match="expected to expose a bug"):
        check_fails(bug.check, bug.fixed)


def test_check_fails_lets_other_errors_through() -> None:
    def broken_check(implementation: object) -> None:
        raise KeyError("not an assertion")

    with pytest.raises(KeyError):
        check_fails(broken_check, bugs.sinusoid_table_recipe)
    with pytest.raises(TypeError, match="check must be a function"):
        check_fails("not callable", bugs.sinusoid_table_recipe)  # type: ignore[arg-type]


def test_checks_fail_without_assert_statements() -> None:
    # python -O strips `assert`: the checks must still fail on every buggy version.
    script = "from posenc.bugs import BUGS, check_fails\nfor b in BUGS: check_fails(b.check, b.buggy)"
    subprocess.run([sys.executable, "-O", "-c", script], check=True, capture_output=True, timeout=120)


def test_checks_reject_a_non_function() -> None:
    with pytest.raises(TypeError, match="build must be a function"):
        bugs.check_sinusoid_frequencies(42)  # type: ignore[arg-type]


# -- what each check measures ------------------------------------------------------------------------
def test_channel_exponent_pairs_leave_the_unit_circle() -> None:
    assert bugs.pair_radius_error(bugs.sinusoid_table_channel_exponent(64, 16)) > 0.5
    assert bugs.pair_radius_error(bugs.sinusoid_table_recipe(64, 16)) < 1e-6
    message = check_fails(bugs.check_sinusoid_frequencies, bugs.sinusoid_table_channel_exponent)
    assert "channel 1 (pair 0)" in message  # the first cosine already has the wrong frequency


def test_layout_shift_error_and_conversion() -> None:
    concatenated = bugs.sinusoid_table_concatenated(32, 8)
    assert torch.allclose(concatenated, sinusoidal_table(32, 8, layout="concatenated"), atol=1e-6)
    assert bugs.shift_error(concatenated, 1) > 0.1
    assert bugs.shift_error(bugs.to_interleaved(concatenated), 1) < 1e-6
    assert "concatenated layout" in check_fails(bugs.check_interleaved_layout, bugs.sinusoid_table_concatenated)
    with pytest.raises(ValueError, match="table must be a tensor"):
        bugs.to_interleaved("table")  # type: ignore[arg-type]


def test_token_position_ratio_matches_the_norms() -> None:
    # Unscaled: |e_a - e_b| ~ sqrt(2) against |PE_p - PE_q| of order sqrt(d); scaled: sqrt(d) times more.
    unscaled = bugs.token_position_ratio(bugs.embed_without_scale)
    scaled = bugs.token_position_ratio(bugs.embed_with_scale)
    assert unscaled < 0.2
    assert scaled > 1.0
    assert scaled / unscaled == pytest.approx(math.sqrt(512), rel=1e-4)


def test_odd_width_accepts_a_clear_value_error() -> None:
    def strict(seq_len: int, d_model: int) -> torch.Tensor:
        return sinusoidal_table(seq_len, d_model)  # raises ValueError naming d_model for odd widths

    assert "ValueError" in bugs.check_odd_width(strict)
    assert "RuntimeError" in check_fails(bugs.check_odd_width, bugs.sinusoid_table_recipe)


def test_odd_width_rejects_a_silently_wrong_last_column() -> None:
    def extra_sine(seq_len: int, d_model: int) -> torch.Tensor:
        table = sinusoidal_table(seq_len, d_model, odd="pad")
        table[:, -1] = torch.sin(torch.arange(seq_len) * 1e-3)
        return table

    assert "last channel" in check_fails(bugs.check_odd_width, extra_sine)


def test_cache_report_shows_the_silent_empty_result() -> None:
    report = {(start, n): outcome for start, n, outcome in bugs.cache_rows_report(bugs.add_positions_from_cache)}
    assert report[(0, 4)] == "shape (4, 8)"
    assert report[(16, 1)] == "shape (0, 8)"  # one token past the end: no error, no row
    assert report[(14, 4)].startswith("RuntimeError")
    fixed = bugs.cache_rows_report(bugs.add_positions_from_cache_fixed)
    assert all(outcome == f"shape ({n}, 8)" for _, n, outcome in fixed)
    assert "silently" in check_fails(bugs.check_cached_table, bugs.add_positions_from_cache)


def test_rope_layout_gap_starts_after_position_zero() -> None:
    message = check_fails(bugs.check_rope_layout_conversion, bugs.half_split_scores)
    assert "from query position 1 on" in message


def test_bf16_angles_are_wrong_even_below_256() -> None:
    errors = bugs.cos_sin_error(bugs.rope_cos_sin_model_dtype, torch.arange(4096), 64)
    assert float(errors[:256].max()) > 0.1 and float(errors.max()) > 1.0
    float32_angles = functools.partial(rope_cos_sin, angle_dtype=torch.float32)
    assert "within" in bugs.check_rope_angle_precision(float32_angles)  # float32 angles are within the tolerance


def test_dynamic_ntk_gaps_start_past_the_training_length() -> None:
    gaps = bugs.dynamic_ntk_gaps(bugs.generate_dynamic_ntk_cached)
    assert float(gaps[:8].max()) < 1e-12  # no scaling up to the training length: nothing to disagree on
    assert float(gaps[8:].max()) > 1e-2
    assert float(bugs.dynamic_ntk_gaps(bugs.generate_dynamic_ntk_fixed).max()) < 1e-12


def test_geometric_slopes_agree_for_powers_of_two_only() -> None:
    for n_heads in (1, 2, 4, 8, 16):
        assert torch.allclose(bugs.alibi_slopes_geometric(n_heads), alibi_slopes(n_heads))
    for n_heads in (3, 6, 12):
        assert not torch.allclose(bugs.alibi_slopes_geometric(n_heads), alibi_slopes(n_heads))
    assert "3 heads" in check_fails(bugs.check_alibi_slopes, bugs.alibi_slopes_geometric)


def test_config_scaling_names_each_config_and_layer() -> None:
    message = check_fails(bugs.check_config_scaling, bugs.rotary_inverse_frequencies)
    assert "Llama 3.1 8B: pairs 29–63 of 64" in message  # 29 pairs kept, the blend and the division start at 29
    assert "Llama 3.2 1B: pairs 15–31 of 32" in message  # as jmaczan/tiny-vllm PR 1 counts them: 0-14 unchanged
    assert "Gemma 3 4B, full_attention layers" in message and "sliding_attention" not in message
    assert "scaling was ignored" in message
    report = dict(bugs.config_scaling_report(bugs.rotary_inverse_frequencies))
    assert not report["Gemma 3 4B, sliding_attention layers"].startswith("FAILS")  # right there by construction

    def global_everywhere(config: dict, layer_type: str | None = None) -> torch.Tensor:  # the opposite mistake
        return bugs.rotary_inverse_frequencies_fixed(config, "full_attention" if layer_type else None)

    assert "Gemma 3 4B, sliding_attention layers" in check_fails(bugs.check_config_scaling, global_everywhere)


def test_longrope_gaps_start_at_the_switch() -> None:
    gaps = bugs.longrope_gaps(bugs.generate_longrope_cached)
    switch = bugs.LONGROPE_TRAIN_LEN
    assert float(gaps[:switch].max()) < 1e-12  # short factors throughout: nothing to disagree on
    assert float(gaps[switch:].max()) > 1e-2
    assert float(bugs.longrope_gaps(bugs.generate_longrope_fixed).max()) < 1e-12
    assert "from token 8 on" in check_fails(bugs.check_longrope_cache, bugs.generate_longrope_cached)
    case = bugs.longrope_case()
    assert case.long_factor[0] == 1.0 and case.long_factor[-1] == pytest.approx(4.0)
