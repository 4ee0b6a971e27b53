"""Tests for T5's bucketed relative bias (posenc.relative.t5_relative_position_bucket and the "t5_bias" scheme).

The expected buckets are worked out by hand from the rule in the docstring (Raffel et al.
2020; Hugging Face's ``T5Attention._relative_position_bucket``), with ``n`` buckets per
direction, ``e = n // 2`` exact ones, and for ``d >= e``:
``bucket = min(e + floor(log(d / e) / log(max_distance / e) * (n - e)), n - 1)``.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from posenc.models import TinyTransformer
from posenc.registry import available_schemes, make_position_scheme
from posenc.relative import T5BiasScheme, T5RelativeBias, t5_relative_position_bucket
from posenc.train import TrainConfig, build_model, train


def _buckets(offsets: list[int], **kwargs: object) -> list[int]:
    return t5_relative_position_bucket(torch.tensor(offsets), **kwargs).tolist()  # type: ignore[arg-type]


# -- the bucket rule -----------------------------------------------------------------------
def test_bidirectional_small_example_by_hand() -> None:
    # num_buckets=8, bidirectional: n = 4 per direction, e = 2 exact buckets (d = 0, 1), then
    # 2 + floor(log(d/2) / log(16/2) * 2) = 2 + floor(2 * log8(d/2)):
    #   d = 2..5 -> 2 (2*log8(2.5) = 0.88),  d = 6 -> 3 (2*log8(3) = 1.06),  d >= 16 -> 4, clamped to 3.
    # Keys after the query (offset > 0) use buckets 4..7.
    offsets = [-100, -16, -10, -6, -5, -2, -1, 0, 1, 2, 5, 6, 16, 100]
    expected = [3, 3, 3, 3, 2, 2, 1, 0, 5, 6, 6, 7, 7, 7]
    assert _buckets(offsets, bidirectional=True, num_buckets=8, max_distance=16) == expected


def test_causal_small_example_by_hand() -> None:
    # num_buckets=8, causal: distance d = max(-offset, 0); n = 8, e = 4 exact buckets (d = 0..3), then
    # 4 + floor(log(d/4) / log(16/4) * 4) = 4 + floor(4 * log4(d/4)):
    #   d = 4, 5 -> 4;  6, 7 -> 5 (4*log4(1.5) = 1.17);  8..11 -> 6 (d = 8 gives exactly 2);
    #   12..15 -> 7 (4*log4(3) = 3.17);  d = 16 -> 8, clamped to 7 (every d >= max_distance).
    offsets = [-1000, -16, -12, -11, -8, -7, -6, -5, -4, -3, -1, 0, 1, 50]
    expected = [7, 7, 7, 6, 6, 5, 5, 4, 4, 3, 1, 0, 0, 0]
    assert _buckets(offsets, bidirectional=False, num_buckets=8, max_distance=16) == expected


def test_t5_default_bucket_boundaries() -> None:
    # Defaults (32 buckets, max_distance 128), bidirectional: n = 16, e = 8, and for d >= 8
    # bucket = 8 + floor(8 * log(d/8) / log(16)) = 8 + floor(2 * log2(d/8)), so bucket k starts at
    # d = 8 * 2**((k - 8) / 2): 8, 11.3, 16, 22.6, 32, 45.3, 64, 90.5 -> first integers 8, 12, 16, 23, 32, 46, 64, 91.
    starts = {8: 8, 9: 12, 10: 16, 11: 23, 12: 32, 13: 46, 14: 64, 15: 91}
    for bucket, start in starts.items():
        assert _buckets([-start], bidirectional=True) == [bucket], start
        assert _buckets([-(start - 1)], bidirectional=True) == [bucket - 1], start
        assert _buckets([start], bidirectional=True) == [bucket + 16], start
    assert _buckets([-128, -10_000, 10_000], bidirectional=True) == [15, 15, 31]
    assert _buckets(list(range(-7, 1)), bidirectional=True) == [7, 6, 5, 4, 3, 2, 1, 0]
    # Causal defaults: n = 32, e = 16, bucket = 16 + floor(16 * log(d/16) / log(8)): d = 32 -> 16 + 5.33 -> 21.
    assert _buckets([-15, -16, -32, -127, -128, 5], bidirectional=False) == [15, 16, 21, 31, 31, 0]


def test_buckets_cover_the_range_and_are_monotone_in_distance() -> None:
    offsets = torch.arange(-300, 301)
    for bidirectional in (True, False):
        buckets = t5_relative_position_bucket(offsets, bidirectional=bidirectional)
        assert int(buckets.min()) == 0 and int(buckets.max()) == 31
        # Bidirectional: bucket 16 (a key after the query at distance 0) can never occur, as in T5.
        assert set(buckets.tolist()) == set(range(32)) - ({16} if bidirectional else set())
        back = buckets[:301].flip(0)  # offsets 0, -1, -2, ...: never a smaller bucket further back
        assert bool((back[1:] >= back[:-1]).all())


def test_bucket_errors_name_the_argument() -> None:
    with pytest.raises(TypeError, match="relative_position must hold integers"):
        t5_relative_position_bucket(torch.tensor([0.5]), bidirectional=True)
    with pytest.raises(TypeError, match="bidirectional must be True or False"):
        t5_relative_position_bucket(torch.tensor([1]), bidirectional=1)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="num_buckets must be >= 4 with bidirectional=True"):
        t5_relative_position_bucket(torch.tensor([1]), bidirectional=True, num_buckets=3)
    with pytest.raises(ValueError, match="num_buckets must be >= 2 with bidirectional=False"):
        t5_relative_position_bucket(torch.tensor([1]), bidirectional=False, num_buckets=1)
    with pytest.raises(ValueError, match=r"max_distance must be > 8 .* got 8"):
        t5_relative_position_bucket(torch.tensor([1]), bidirectional=True, max_distance=8)
    with pytest.raises(TypeError, match="num_buckets must be a positive integer"):
        t5_relative_position_bucket(torch.tensor([1]), bidirectional=True, num_buckets=8.0)  # type: ignore[arg-type]


# -- the learned bias -------------------------------------------------------------------------
def test_bias_reads_the_bucket_of_key_minus_query() -> None:
    bias = T5RelativeBias(2, num_buckets=8, max_distance=16)
    with torch.no_grad():
        bias.weight.copy_(torch.arange(16.0).view(8, 2))  # weight[b, h] = 2 b + h
    out = bias(3)
    assert out.shape == (2, 3, 3)
    # query 0, key 1: offset +1 -> bucket 5 (a key *after* the query); query 1, key 0: offset -1 -> bucket 1.
    assert out[0].tolist() == [[0.0, 10.0, 12.0], [2.0, 0.0, 10.0], [4.0, 2.0, 0.0]]
    assert torch.equal(out[1], out[0] + 1)


def test_bias_depends_only_on_offsets_and_takes_batched_positions() -> None:
    torch.manual_seed(0)
    bias = T5RelativeBias(3)
    pos = torch.arange(10)
    assert torch.equal(bias(pos), bias(pos + 57))
    batched = bias(torch.stack([pos, pos + 200]))
    assert batched.shape == (2, 3, 10, 10)
    assert torch.equal(batched[0], batched[1])
    assert not torch.equal(bias(pos), bias(pos).transpose(-1, -2))  # direction-aware, unlike encoder ALiBi


def test_bias_gradients_reach_only_the_buckets_used() -> None:
    bias = T5RelativeBias(2, num_buckets=8, max_distance=16)
    bias(torch.arange(3)).sum().backward()
    assert bias.weight.grad is not None
    used = {0, 1, 2, 5, 6}  # offsets -2..2
    for bucket in range(8):
        assert bool((bias.weight.grad[bucket] != 0).all()) == (bucket in used), bucket


def test_bias_errors() -> None:
    bias = T5RelativeBias(2)
    with pytest.raises(ValueError, match=r"positions must have shape \(seq_len,\) or \(batch, seq_len\)"):
        bias(torch.zeros(1, 2, 3, dtype=torch.long))
    with pytest.raises(TypeError, match="positions must hold integers"):
        bias(torch.tensor([0.5, 1.5]))
    with pytest.raises(ValueError, match="init_std must be a finite number > 0"):
        T5RelativeBias(2, init_std=0.0)


# -- the scheme, the registry, the model, training ----------------------------------------------
def test_scheme_is_registered_and_defined_at_any_length() -> None:
    assert "t5_bias" in available_schemes()
    scheme = make_position_scheme("t5_bias", d_model=16, n_heads=4, max_len=8)
    assert isinstance(scheme, T5BiasScheme) and scheme.max_len is None
    assert scheme.bias.weight.shape == (32, 4)
    assert scheme.attention_bias(torch.arange(500)).shape == (4, 500, 500)
    with pytest.raises(ValueError, match=r"unknown option\(s\) \['slopes'\] for scheme 't5_bias'"):
        make_position_scheme("t5_bias", d_model=16, n_heads=4, max_len=8, slopes=1)


def test_default_init_is_t5s_scale() -> None:
    torch.manual_seed(0)
    scheme = T5BiasScheme(256, 8, num_buckets=64)
    assert float(scheme.bias.weight.detach().std()) == pytest.approx(256**-0.5, rel=0.15)


def test_model_direction_follows_the_causal_mask_unless_given() -> None:
    def direction(**kwargs: object) -> bool:
        model = TinyTransformer(7, 3, d_model=16, n_heads=2, n_layers=1, max_len=8, position="t5_bias", **kwargs)
        assert isinstance(model.position, T5BiasScheme)
        return model.position.bias.bidirectional

    assert direction() is True
    assert direction(causal=True) is False
    assert direction(causal=True, position_options={"bidirectional": True}) is True


def test_model_runs_past_max_len_and_trains() -> None:
    torch.manual_seed(0)
    model = TinyTransformer(7, 3, d_model=16, n_heads=2, n_layers=1, max_len=8, position="t5_bias")
    assert model(torch.randint(0, 7, (2, 40))).shape == (2, 40, 3)
    config = TrainConfig(scheme="t5_bias", seq_len=8, steps=4, batch_size=8, d_model=16, n_heads=2, n_layers=1,
                         eval_examples=32, log_every=2, eval_lengths=(12,))
    assert isinstance(build_model(config).position, T5BiasScheme)
    trained, result = train(replace(config, causal=True))
    assert isinstance(trained.position, T5BiasScheme) and not trained.position.bias.bidirectional
    assert 0.0 <= result.metrics["accuracy@12"] <= 1.0
