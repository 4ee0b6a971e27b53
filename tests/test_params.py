"""Tests for posenc.params: counts by formula against known values and against real modules."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from posenc.models import TinyTransformer, TransformerBlock
from posenc.params import (
    CONFIGS,
    TransformerConfig,
    count_parameters,
    layer_parameters,
    module_parameter_count,
    parameter_rows,
    position_parameters,
    reference_modules,
    training_bytes,
)
from posenc.params_plots import parameter_table_html, position_params_figure, position_share_figure
from posenc.plots import html_table


def test_bert_base_tables_match_the_known_counts() -> None:
    count = count_parameters(CONFIGS["BERT-base"])
    assert count.position == 393_216 == 512 * 768
    assert count.token == 23_440_896 == 30_522 * 768
    assert count.segment == 1_536 == 2 * 768


@pytest.mark.parametrize(
    ("name", "position"),
    [("BERT-large", 524_288), ("GPT-2 small", 786_432), ("GPT-2 large", 1_310_720),
     ("Hypothetical 8K", 8_388_608), ("Hypothetical 32K", 67_108_864)],
)
def test_position_tables(name: str, position: int) -> None:
    assert count_parameters(CONFIGS[name]).position == position


def test_gpt2_has_no_segment_table_and_a_tied_head() -> None:
    count = count_parameters(CONFIGS["GPT-2 small"])
    assert count.segment == 0 and count.output_head == 0 and count.pooler == 0


@pytest.mark.parametrize(
    ("name", "total"),
    # Exact totals of the base models (Hugging Face BertModel with pooler, GPT2Model).
    [("BERT-base", 109_482_240), ("BERT-large", 335_141_888), ("GPT-2 small", 124_439_808),
     ("GPT-2 large", 774_030_080)],
)
def test_totals_are_exact_and_near_the_published_sizes(name: str, total: int) -> None:
    config = CONFIGS[name]
    assert count_parameters(config).total == total
    assert config.published_total is not None
    assert abs(total - config.published_total) / config.published_total < 0.02


def test_position_shares() -> None:
    shares = {row["name"]: row["position_percent"] for row in parameter_rows()}
    assert shares["BERT-base"] == pytest.approx(100 * 393_216 / 109_482_240)
    assert 0.35 < shares["BERT-base"] < 0.37 and 0.15 < shares["BERT-large"] < 0.16
    assert 0.63 < shares["GPT-2 small"] < 0.64 and 0.16 < shares["GPT-2 large"] < 0.17
    # The hypothetical long-context models spend several times more of their budget on positions.
    assert shares["Hypothetical 32K"] > shares["Hypothetical 8K"] > 2 * shares["GPT-2 small"]


def test_hypothetical_configs_are_labelled() -> None:
    flagged = {name for name, config in CONFIGS.items() if config.hypothetical}
    assert flagged == {"Hypothetical 8K", "Hypothetical 32K"}
    assert all(CONFIGS[name].published_total is None for name in flagged)
    assert all("hypothetical" in CONFIGS[name].source for name in flagged)


@pytest.mark.parametrize("name", list(CONFIGS))
def test_formula_matches_a_module_of_the_same_architecture(name: str) -> None:
    config = CONFIGS[name]
    modules = reference_modules(config)  # meta device: full size, no memory
    assert module_parameter_count(modules) == count_parameters(config).total
    table = modules["embeddings"].position.weight if config.family == "bert" else modules["position"].weight
    assert table.numel() == count_parameters(config).position


@settings(max_examples=25, deadline=None)
@given(
    family=st.sampled_from(["bert", "gpt2"]),
    vocab=st.integers(1, 50),
    layers=st.integers(1, 3),
    heads=st.integers(1, 4),
    head_dim=st.integers(1, 6),
    d_ff=st.integers(1, 40),
    max_len=st.integers(1, 30),
    types=st.integers(0, 3),
    head=st.sampled_from(["none", "tied", "untied"]),
)
def test_formula_matches_real_small_modules(
    family: str, vocab: int, layers: int, heads: int, head_dim: int, d_ff: int, max_len: int, types: int, head: str
) -> None:
    config = TransformerConfig("tiny", family, vocab, layers, heads * head_dim, heads, d_ff, max_len,
                               type_vocab_size=types, output_head=head)
    modules = reference_modules(config, device="cpu")
    assert module_parameter_count(modules) == count_parameters(config).total


def test_layer_formula_matches_the_books_tiny_transformer() -> None:
    block = TransformerBlock(48, 4, 100)
    assert module_parameter_count(block) == layer_parameters(48, 100)
    model = TinyTransformer(20, 7, d_model=32, n_heads=4, n_layers=2, max_len=24, position="learned")
    expected = 20 * 32 + position_parameters(24, 32) + 2 * layer_parameters(32, 128) + 2 * 32 + 32 * 7 + 7
    assert module_parameter_count(model) == expected
    sinusoidal = TinyTransformer(20, 7, d_model=32, n_heads=4, n_layers=2, max_len=24, position="sinusoidal")
    assert module_parameter_count(model) - module_parameter_count(sinusoidal) == 24 * 32


def test_formula_matches_hugging_face_models() -> None:
    """Cross-check against transformers' own classes (pinned in requirements.txt). Only
    config objects are built, on the meta device: no weights, no download."""
    import transformers

    with torch.device("meta"):
        bert = transformers.BertModel(transformers.BertConfig())
        gpt2 = transformers.GPT2Model(transformers.GPT2Config())
        gpt2_large = transformers.GPT2Model(transformers.GPT2Config(n_embd=1280, n_layer=36, n_head=20))
    assert module_parameter_count(bert) == count_parameters(CONFIGS["BERT-base"]).total
    assert bert.embeddings.position_embeddings.weight.numel() == 393_216
    assert bert.embeddings.LayerNorm.eps == 1e-12
    assert module_parameter_count(gpt2) == count_parameters(CONFIGS["GPT-2 small"]).total
    assert module_parameter_count(gpt2_large) == count_parameters(CONFIGS["GPT-2 large"]).total


def test_config_validation() -> None:
    with pytest.raises(ValueError, match="must divide"):
        TransformerConfig("x", "bert", 10, 1, 10, 3, 10, 10)
    with pytest.raises(ValueError, match="family"):
        TransformerConfig("x", "t5", 10, 1, 8, 2, 10, 10)
    with pytest.raises(ValueError, match="max_len"):
        CONFIGS["BERT-base"].with_(max_len=0)
    assert count_parameters(CONFIGS["BERT-base"].with_(max_len=1024)).position == 1024 * 768


def test_training_bytes() -> None:
    assert training_bytes(393_216) == 393_216 * 16  # weights, gradients, two Adam moments in float32
    assert training_bytes(10, optimizer="sgd", bytes_per_value=2) == 40
    assert training_bytes(10, optimizer="inference") == 40
    with pytest.raises(ValueError, match="optimizer"):
        training_bytes(10, optimizer="lion")


def test_html_tables() -> None:
    table = parameter_table_html()
    assert "393,216" in table and "23,440,896" in table and "1,536" in table
    assert "Hypothetical 32K (32,768 × 2,048)" in table
    assert table.count("<tr>") == 1 + len(CONFIGS)
    small = html_table(["a", "b"], [["<x>", 1]], numeric=[False, True], caption="c & d")
    assert "&lt;x&gt;" in small and "c &amp; d" in small and '<td style="text-align: right">1</td>' in small
    assert '<th scope="col">a</th>' in small and "font-size" not in small
    assert "font-size" in html_table(["a"], [[1]], compact=True)
    with pytest.raises(ValueError, match="cells"):
        html_table(["a", "b"], [[1]])
    with pytest.raises(ValueError, match="numeric"):
        html_table(["a"], [[1]], numeric=[True, False])


def test_figures() -> None:
    for fig in (position_params_figure([512, 4096], [256, 1024]),
                position_share_figure([CONFIGS["GPT-2 small"]], [512, 1024, 4096])):
        assert fig.layout.meta["alt"]
        assert fig.layout.xaxis.title.text and fig.layout.yaxis.title.text
    share = position_share_figure([CONFIGS["GPT-2 small"]], [1024])
    assert share.data[0].y[0] == pytest.approx(100 * 786_432 / 124_439_808)


def test_module_parameter_count_can_skip_frozen_parameters() -> None:
    import torch

    from posenc.params import module_parameter_count

    layer = torch.nn.Linear(4, 3)
    layer.bias.requires_grad_(False)
    assert module_parameter_count(layer) == 15
    assert module_parameter_count(layer, trainable_only=True) == 12
