"""Tests for posenc.hybrid: parameter counts by formula, values, limits and errors."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from posenc.hybrid import (
    FactoredPositionEmbedding,
    HierarchicalPositionEmbedding,
    HybridScheme,
    ScaledSinusoidalEmbedding,
    factored_parameters,
    hierarchical_parameters,
    learned_parameters,
    scaled_sinusoid_parameters,
)
from posenc.learned import LearnedPositionEmbedding
from posenc.models import TinyTransformer
from posenc.registry import make_position_scheme
from posenc.params import module_parameter_count
from posenc.sinusoidal import sinusoidal_table

FAST = settings(max_examples=30, deadline=None)


def n_params(module: torch.nn.Module) -> int:
    return module_parameter_count(module, trainable_only=True)


# -- parameter counts ------------------------------------------------------------------------
@FAST
@given(max_len=st.integers(1, 96), d_model=st.integers(1, 48), rank_fraction=st.floats(0.0, 1.0))
def test_factored_count_is_L_r_plus_r_d(max_len: int, d_model: int, rank_fraction: float) -> None:
    rank = max(1, round(rank_fraction * min(max_len, d_model)))
    module = FactoredPositionEmbedding(max_len, d_model, rank)
    assert n_params(module) == factored_parameters(max_len, d_model, rank) == max_len * rank + rank * d_model


@FAST
@given(n_segments=st.integers(1, 40), segment_len=st.integers(1, 40), half_width=st.integers(1, 24))
def test_hierarchical_count_is_two_small_tables(n_segments: int, segment_len: int, half_width: int) -> None:
    d_model = 2 * half_width
    module = HierarchicalPositionEmbedding(n_segments, segment_len, d_model)
    assert n_params(module) == hierarchical_parameters(n_segments, segment_len, d_model)
    assert n_params(module) == (n_segments + segment_len) * d_model
    assert module.max_len == n_segments * segment_len


@given(half_width=st.integers(1, 512))
def test_scaled_sinusoid_count_is_2d_and_has_no_length(half_width: int) -> None:
    d_model = 2 * half_width
    module = ScaledSinusoidalEmbedding(d_model)
    assert n_params(module) == scaled_sinusoid_parameters(d_model) == 2 * d_model
    assert module.max_len is None


def test_counts_for_a_bert_base_sized_table() -> None:
    # 512 x 768 = 393,216 (FACTS item 11); rank 64 factored: 512*64 + 64*768 = 81,920.
    assert learned_parameters(512, 768) == 393_216
    assert factored_parameters(512, 768, 64) == 81_920
    assert hierarchical_parameters(16, 32, 768) == 36_864
    assert scaled_sinusoid_parameters(768) == 1_536
    assert n_params(LearnedPositionEmbedding(512, 768, init="sinusoidal")) == learned_parameters(512, 768)


# -- sinusoid-initialised learned (posenc.learned) --------------------------------------------
def test_sinusoid_initialised_learned_table_starts_as_the_sinusoid_and_trains() -> None:
    table = LearnedPositionEmbedding(32, 16, init="sinusoidal")
    assert torch.equal(table.weight.detach(), sinusoidal_table(32, 16))
    assert table.weight.requires_grad


# -- scaled sinusoid -------------------------------------------------------------------------
def test_scaled_sinusoid_starts_as_the_sinusoid_at_any_position() -> None:
    module = ScaledSinusoidalEmbedding(16)
    far = torch.tensor([0, 5, 10_000, 123_456])
    reference = sinusoidal_table(123_457, 16)[far]
    assert torch.allclose(module.encode(far), reference, atol=1e-6)
    assert torch.allclose(module.table(40), sinusoidal_table(40, 16))


def test_scaled_sinusoid_applies_scale_then_bias() -> None:
    module = ScaledSinusoidalEmbedding(8)
    with torch.no_grad():
        module.scale.copy_(torch.arange(8.0))
        module.bias.fill_(0.5)
    expected = sinusoidal_table(6, 8) * torch.arange(8.0) + 0.5
    assert torch.allclose(module.table(6), expected)
    # The bias is the same at every position: differences between positions ignore it.
    assert torch.allclose(module.table(6)[3] - module.table(6)[1], (expected[3] - expected[1]))


def test_scaled_sinusoid_gradients_reach_only_scale_and_bias() -> None:
    module = ScaledSinusoidalEmbedding(8)
    out = module(torch.zeros(2, 5, 8))
    out.sum().backward()
    assert module.scale.grad is not None and module.bias.grad is not None
    assert module.bias.grad.tolist() == [10.0] * 8  # 2 * 5 positions each contribute 1
    assert [name for name, _ in module.named_parameters()] == ["scale", "bias"]


# -- factored ----------------------------------------------------------------------------
def test_factored_table_has_the_requested_rank() -> None:
    torch.manual_seed(0)
    singular = torch.linalg.svdvals(FactoredPositionEmbedding(50, 32, 5).table(50).detach().double())
    # Five clearly non-zero singular values, the rest at float32 round-off.
    assert singular[4] > 1e-3 * singular[0] and singular[5] < 1e-5 * singular[0]


def test_factored_normal_init_matches_bert_scale() -> None:
    torch.manual_seed(1)
    table = FactoredPositionEmbedding(512, 256, 16).table(512)
    assert table.std().item() == pytest.approx(0.02, rel=0.05)


def test_factored_sinusoidal_init_is_the_best_low_rank_approximation() -> None:
    full = sinusoidal_table(64, 32, dtype=torch.float64)
    singular = torch.linalg.svdvals(full)
    for rank in (1, 4, 16):
        approx = FactoredPositionEmbedding(64, 32, rank, init="sinusoidal").table(64).double()
        # Eckart-Young: the error is the norm of the dropped singular values.
        assert torch.linalg.norm(full - approx).item() == pytest.approx(singular[rank:].norm().item(), rel=1e-4, abs=1e-5)
    exact = FactoredPositionEmbedding(64, 32, 32, init="sinusoidal").table(64)
    assert torch.allclose(exact, full.float(), atol=1e-5)


def test_factored_lookup_by_position() -> None:
    module = FactoredPositionEmbedding(10, 6, 2)
    with torch.no_grad():
        module.positions_factor.copy_(torch.arange(20.0).view(10, 2))
        module.features_factor.copy_(torch.ones(2, 6))
    assert module.encode(torch.tensor([3])).tolist() == [[13.0] * 6]  # 6 + 7
    x = torch.zeros(1, 4, 6)
    assert torch.allclose(module(x)[0, :, 0], torch.tensor([1.0, 5.0, 9.0, 13.0]))


# -- hierarchical --------------------------------------------------------------------------
def test_hierarchical_split_and_encode() -> None:
    module = HierarchicalPositionEmbedding(4, 8, 6)
    segment, offset = module.split(torch.tensor([0, 7, 8, 9, 31]))
    assert segment.tolist() == [0, 0, 1, 1, 3] and offset.tolist() == [0, 7, 0, 1, 7]
    expected = module.segments.weight[3] + module.offsets.weight[5]
    assert torch.allclose(module.encode(torch.tensor([29])), expected.unsqueeze(0))
    # Positions in the same segment share the segment vector: their difference is offsets only.
    diff = module.encode(torch.tensor([10]))[0] - module.encode(torch.tensor([9]))[0]
    assert torch.allclose(diff, module.offsets.weight[2] - module.offsets.weight[1])


def test_hierarchical_init_choices_reach_both_tables() -> None:
    module = HierarchicalPositionEmbedding(3, 5, 8, init="sinusoidal")
    assert torch.equal(module.segments.weight.detach(), sinusoidal_table(3, 8))
    assert torch.equal(module.offsets.weight.detach(), sinusoidal_table(5, 8))


# -- errors ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("call", "error", "fragment"),
    [
        (lambda: FactoredPositionEmbedding(10, 6, 7), ValueError, "rank must be <= min(max_len, d_model) = 6"),
        (lambda: FactoredPositionEmbedding(10, 6, 0), ValueError, "rank must be a positive integer"),
        (lambda: FactoredPositionEmbedding(10, 6, 2, init="svd"), ValueError, "init must be one of"),
        (lambda: FactoredPositionEmbedding(10, 5, 2, init="sinusoidal"), ValueError, "even d_model"),
        (lambda: FactoredPositionEmbedding(10, 6, 2).encode([9, 10]), ValueError, "holds positions 0 .. 9"),
        (lambda: FactoredPositionEmbedding(10, 6, 2)(torch.zeros(1, 11, 6)), ValueError, "must be < 10"),
        (lambda: FactoredPositionEmbedding(10, 6, 2)(torch.zeros(1, 3, 5)), ValueError, "(batch, seq_len, 6)"),
        (lambda: FactoredPositionEmbedding(10, 6, 2).encode([1.5]), TypeError, "must hold integers"),
        (lambda: HierarchicalPositionEmbedding(4, 8, 6).encode([32]), ValueError, "holds positions 0 .. 31"),
        (lambda: HierarchicalPositionEmbedding(0, 8, 6), ValueError, "n_segments must be a positive integer"),
        (lambda: HierarchicalPositionEmbedding(2, 8, 6, init="zeros"), ValueError, "init must be one of"),
        (lambda: ScaledSinusoidalEmbedding(7), ValueError, "even"),
        (lambda: ScaledSinusoidalEmbedding(8).encode([-1]), ValueError, "must be >= 0"),
        (lambda: ScaledSinusoidalEmbedding(8)(torch.zeros(2, 3, 8), torch.arange(4)), ValueError, "shape (3,)"),
    ],
)
def test_errors_name_the_argument(call, error, fragment) -> None:
    with pytest.raises(error) as info:
        call()
    assert fragment in str(info.value)


# -- in the chapter 6 model ----------------------------------------------------------------
def test_registry_defaults_and_options() -> None:
    factored = make_position_scheme("hybrid-factored", d_model=32, n_heads=4, max_len=64)
    assert isinstance(factored, HybridScheme) and factored.module.rank == 8 and factored.max_len == 64
    ranked = make_position_scheme("hybrid-factored", d_model=32, n_heads=4, max_len=64, rank=3, init="sinusoidal")
    assert n_params(ranked) == factored_parameters(64, 32, 3)
    hier = make_position_scheme("hybrid-hierarchical", d_model=32, n_heads=4, max_len=40)
    assert (hier.module.segment_len, hier.module.n_segments, hier.max_len) == (7, 6, 42)
    hier = make_position_scheme("hybrid-hierarchical", d_model=32, n_heads=4, max_len=40, segment_len=10)
    assert (hier.module.n_segments, hier.max_len) == (4, 40)
    scaled = make_position_scheme("hybrid-scaled-sinusoid", d_model=32, n_heads=4, max_len=8)
    assert scaled.max_len is None and scaled.table(100).shape == (100, 32)
    with pytest.raises(ValueError, match="unknown option"):
        make_position_scheme("hybrid-factored", d_model=32, n_heads=4, max_len=8, segment_len=2)


@pytest.mark.parametrize("name", ["hybrid-scaled-sinusoid", "hybrid-factored", "hybrid-hierarchical"])
def test_hybrids_train_inside_the_model(name: str) -> None:
    torch.manual_seed(0)
    model = TinyTransformer(10, 3, d_model=16, n_heads=2, position=name, max_len=12)
    before = [p.detach().clone() for p in model.position.parameters()]
    loss = model(torch.randint(0, 10, (4, 12))).logsumexp(-1).mean()
    loss.backward()
    torch.optim.SGD(model.parameters(), lr=0.1).step()
    after = list(model.position.parameters())
    assert any(not torch.equal(b, a) for b, a in zip(before, after, strict=True))
    # The model's embed adds exactly the scheme's table.
    tokens = torch.randint(0, 10, (1, 12))
    with torch.no_grad():
        added = model.embed(tokens) - model.token_embedding(tokens)
    assert torch.allclose(added[0], model.position.table(12), atol=1e-6)


# -- figures and explorer (posenc.hybrid_plots) ------------------------------------------------
def test_low_rank_explorer_full_rank_recovers_the_table_similarity() -> None:
    from posenc.analysis import cosine_similarity_matrix
    from posenc.hybrid_plots import low_rank_explorer

    table = sinusoidal_table(24, 16)
    explorer = low_rank_explorer(table, ranks=(1, 4, 16))
    full = explorer.frame(rank=16)
    assert "100.0%" in full.layout["title.text"]
    assert torch.allclose(torch.as_tensor(full.traces[0]["z"]), torch.as_tensor(cosine_similarity_matrix(table)),
                          atol=1e-6)
    # Rank 1: every row is a multiple of one vector, so all similarities are +-1.
    assert torch.allclose(torch.as_tensor(explorer.frame(rank=1).traces[0]["z"]).abs(),
                          torch.ones(24, 24, dtype=torch.float64), atol=1e-6)


def test_parameter_figure_crosses_at_the_break_even_rank() -> None:
    from posenc.hybrid_plots import rank_parameters_figure

    fig = rank_parameters_figure(512, 768, [1, 307, 308])
    factored, full = fig.data[0].y, fig.data[1].y
    assert factored[1] < full[0] < factored[2]
    assert fig.layout.xaxis.title.text and fig.layout.meta["alt"]


# -- the stored results of chapters 8 and 10 ---------------------------------------------------
def test_a_stored_extra_run_reproduces() -> None:
    """Re-train the first stored run of the ch8_ch10 grid (``experiments.configs.extra_configs``) and compare its metrics."""
    from pathlib import Path

    from posenc.results import load_results
    from posenc.train import reproduce

    path = Path(__file__).resolve().parents[1] / "book" / "data" / "ch8_ch10_extra.json"
    results, meta = load_results(path)
    assert meta["n_runs"] == len(results) and len(meta["tables"]) >= 1
    stored = results[0]  # a low-data hybrid run: one of the cheapest cells
    _, again, difference = reproduce(stored)
    # One thread, seeded and deterministic: the same torch reproduces every metric exactly.
    assert difference == 0.0, (stored.config, stored.metrics, again.metrics)
