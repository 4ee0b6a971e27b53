"""Tests for posenc.learned: init statistics, lookups, errors past L_max, BERT embeddings."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import truncnorm
from torch import nn

from posenc.learned import (
    BERT_INIT_STD,
    GPT2_INIT_STD,
    INIT_CHOICES,
    INIT_STRATEGIES,
    OPTIMIZERS,
    ROBERTA_INIT_STD,
    UNIFORM_BOUND,
    BertEmbeddings,
    LearnedPositionEmbedding,
    init_scale,
    init_table_,
    initial_table,
    offset_position_ids,
    row_steps,
    truncated_normal_std,
)
from posenc.sinusoidal import sinusoidal_table

# 1024 x 256 = 262,144 entries: the sample std is within ~0.3 % of the true one (2 sigma).
BIG = (1024, 256)


def rms(table: torch.Tensor) -> float:
    return float(table.double().pow(2).mean().sqrt())


# -- initialisation ----------------------------------------------------------------------


def test_strategies_are_the_four_the_book_compares() -> None:
    assert INIT_STRATEGIES == ("bert", "gpt2", "uniform", "sinusoidal")


def test_truncated_normal_std_matches_scipy() -> None:
    assert truncated_normal_std(1.0, 2.0) == pytest.approx(truncnorm(-2, 2).std(), rel=1e-12)
    assert truncated_normal_std(0.02, 2.0) == pytest.approx(0.02 * 0.879626, rel=1e-5)
    # Truncating far out changes nothing; truncating close in shrinks the std a lot.
    assert truncated_normal_std(1.0, 8.0) == pytest.approx(1.0, rel=1e-9)
    assert truncated_normal_std(1.0, 0.5) == pytest.approx(truncnorm(-0.5, 0.5).std(), rel=1e-12)
    with pytest.raises(ValueError, match="std"):
        truncated_normal_std(0.0)


@pytest.mark.parametrize("init", INIT_STRATEGIES)
def test_init_scale_matches_sample(init: str) -> None:
    table = initial_table(*BIG, init, seed=1)
    assert table.shape == BIG and table.dtype == torch.float32
    assert rms(table) == pytest.approx(init_scale(init), rel=0.01)


def test_bert_init_is_truncated_at_two_std() -> None:
    table = initial_table(*BIG, "bert", seed=2).double()
    limit = 2 * BERT_INIT_STD
    assert float(table.abs().max()) <= limit
    assert float(table.abs().max()) > 0.99 * limit  # values do reach the cut
    assert abs(float(table.mean())) < 1e-4
    # The std is the truncated one (0.0176), clearly below the std parameter 0.02.
    assert float(table.std()) == pytest.approx(truncated_normal_std(BERT_INIT_STD), rel=0.01)
    assert float(table.std()) < 0.95 * BERT_INIT_STD
    # Share within one std parameter: truncated normal theory.
    inside = float((table.abs() < BERT_INIT_STD).double().mean())
    expected = (math.erf(1 / math.sqrt(2))) / math.erf(2 / math.sqrt(2))
    assert inside == pytest.approx(expected, abs=0.005)


def test_gpt2_init_is_an_untruncated_normal() -> None:
    table = initial_table(*BIG, "gpt2", seed=3).double()
    assert float(table.std()) == pytest.approx(GPT2_INIT_STD, rel=0.01)
    assert float(table.abs().max()) > 4 * GPT2_INIT_STD  # tails are there (about 17 values beyond 4 std)
    assert float((table.abs() > 2 * GPT2_INIT_STD).double().mean()) == pytest.approx(0.0455, abs=0.003)


def test_uniform_init_range_and_std() -> None:
    table = initial_table(*BIG, "uniform", seed=4).double()
    assert float(table.min()) >= -UNIFORM_BOUND and float(table.max()) <= UNIFORM_BOUND
    assert float(table.std()) == pytest.approx(UNIFORM_BOUND / math.sqrt(3), rel=0.01)
    assert float(table.min()) < -0.99 * UNIFORM_BOUND and float(table.max()) > 0.99 * UNIFORM_BOUND


def test_sinusoidal_init_is_the_sinusoidal_table() -> None:
    table = initial_table(200, 64, "sinusoidal")
    assert torch.equal(table, sinusoidal_table(200, 64))
    assert torch.allclose(table.norm(dim=1), torch.full((200,), math.sqrt(32)), atol=1e-5)
    assert rms(table) == pytest.approx(init_scale("sinusoidal"), rel=1e-6)
    with pytest.raises(ValueError, match="even"):
        initial_table(10, 7, "sinusoidal")


def test_seeds_make_tables_reproducible() -> None:
    for init in ("bert", "gpt2", "uniform"):
        assert torch.equal(initial_table(32, 8, init, seed=5), initial_table(32, 8, init, seed=5))
        assert not torch.equal(initial_table(32, 8, init, seed=5), initial_table(32, 8, init, seed=6))
    a = LearnedPositionEmbedding(16, 8, init="gpt2", seed=9)
    b = LearnedPositionEmbedding(16, 8, init="gpt2", seed=9)
    assert torch.equal(a.weight, b.weight)


def test_bad_init_arguments() -> None:
    with pytest.raises(ValueError, match="init must be one of"):
        LearnedPositionEmbedding(8, 4, init="xavier")
    with pytest.raises(ValueError, match="max_len"):
        LearnedPositionEmbedding(0, 4)
    with pytest.raises(TypeError, match="d_model"):
        LearnedPositionEmbedding(8, 4.0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="shape"):
        init_table_(torch.empty(3), "bert")


# -- lookups and errors ------------------------------------------------------------------


def test_forward_adds_the_first_rows() -> None:
    emb = LearnedPositionEmbedding(10, 4, seed=0)
    x = torch.randn(3, 6, 4)
    out = emb(x)
    assert out.shape == x.shape
    assert torch.equal(out, x + emb.weight[:6])
    assert torch.allclose(out[1] - x[1], emb.weight[:6])


def test_explicit_position_ids_1d_and_2d() -> None:
    emb = LearnedPositionEmbedding(10, 4, seed=0)
    x = torch.zeros(2, 3, 4)
    ids_1d = torch.tensor([7, 0, 9])
    assert torch.equal(emb(x, ids_1d), emb.weight[ids_1d].expand(2, 3, 4))
    ids_2d = torch.tensor([[1, 2, 3], [9, 9, 0]])
    assert torch.equal(emb(x, ids_2d), emb.weight[ids_2d])
    assert torch.equal(emb.lookup(ids_2d), emb.weight[ids_2d])


def test_input_longer_than_table_raises_value_error_naming_both() -> None:
    emb = LearnedPositionEmbedding(512, 8)
    with pytest.raises(ValueError, match=r"seq_len=600 exceeds max_len=512"):
        emb(torch.zeros(1, 600, 8))
    # An explicit position past the table: the error names max_len too, not an IndexError.
    with pytest.raises(ValueError, match=r"max_len=512.*maximum of 512"):
        emb(torch.zeros(1, 3, 8), torch.tensor([0, 1, 512]))
    with pytest.raises(ValueError, match="max_len=512"):
        emb.lookup([600])


def test_other_bad_inputs() -> None:
    emb = LearnedPositionEmbedding(8, 4)
    with pytest.raises(ValueError, match="d_model=4"):
        emb(torch.zeros(1, 3, 5))
    with pytest.raises(ValueError, match=">= 0"):
        emb(torch.zeros(1, 2, 4), torch.tensor([0, -1]))
    with pytest.raises(TypeError, match="integers"):
        emb(torch.zeros(1, 2, 4), torch.tensor([0.0, 1.0]))
    with pytest.raises(ValueError, match="do not fit"):
        emb(torch.zeros(2, 3, 4), torch.zeros(3, 3, dtype=torch.long))


@settings(max_examples=40, deadline=None)
@given(max_len=st.integers(1, 40), seq_len=st.integers(1, 60), d_model=st.integers(1, 12))
def test_property_table_rows_or_clear_error(max_len: int, seq_len: int, d_model: int) -> None:
    emb = LearnedPositionEmbedding(max_len, d_model, init="uniform", seed=0)
    x = torch.randn(2, seq_len, d_model)
    if seq_len <= max_len:
        assert torch.allclose(emb(x) - x, emb.weight[:seq_len].expand_as(x), atol=1e-6)
        assert torch.equal(emb(x), emb(x, torch.arange(seq_len)))
    else:
        with pytest.raises(ValueError, match=f"seq_len={seq_len} exceeds max_len={max_len}"):
            emb(x)


def test_nn_embedding_gives_an_index_error_where_posenc_gives_a_value_error() -> None:
    # The behaviour chapter 3 shows: plain torch fails from inside the lookup.
    table = nn.Embedding(4, 2)
    with pytest.raises(IndexError):
        table(torch.tensor([4]))


def test_gradient_reaches_only_used_rows() -> None:
    emb = LearnedPositionEmbedding(12, 3, seed=0)
    emb(torch.randn(2, 5, 3)).sum().backward()
    grad = emb.weight.grad
    assert grad is not None
    assert torch.all(grad[5:] == 0) and torch.all(grad[:5].abs().sum(dim=1) > 0)
    # d(sum)/dP[i] = batch size for every used entry.
    assert torch.equal(grad[:5], torch.full((5, 3), 2.0))


# -- fairseq / RoBERTa offsets -------------------------------------------------------------


def test_offset_position_ids_like_roberta() -> None:
    ids = torch.tensor([[0, 31, 7, 2, 1, 1], [0, 5, 6, 7, 8, 2]])
    assert offset_position_ids(ids, padding_idx=1).tolist() == [[2, 3, 4, 5, 1, 1], [2, 3, 4, 5, 6, 7]]
    full = torch.full((1, 512), 5)
    assert int(offset_position_ids(full, 1).max()) + 1 == 514  # RoBERTa's table has 514 rows
    with pytest.raises(ValueError, match="shape"):
        offset_position_ids(torch.tensor([1, 2]), 1)


# -- BERT embeddings -----------------------------------------------------------------------


def test_bert_embeddings_match_manual_computation() -> None:
    emb = BertEmbeddings(50, 16, 8, seed=0).eval()
    assert emb.norm.eps == 1e-12
    ids = torch.randint(0, 50, (2, 7), generator=torch.Generator().manual_seed(0))
    types = torch.tensor([[0, 0, 0, 1, 1, 1, 1]] * 2)
    summed = emb.token.weight[ids] + emb.position.weight[:7] + emb.segment.weight[types]
    expected = nn.functional.layer_norm(summed, (8,), emb.norm.weight, emb.norm.bias, eps=1e-12)
    out = emb(ids, types)
    assert torch.allclose(out, expected, atol=1e-6)
    # LayerNorm: every output vector has mean 0 and (biased) std 1 at initialisation.
    assert torch.allclose(out.mean(-1), torch.zeros(2, 7), atol=1e-5)
    assert torch.allclose(out.std(-1, unbiased=False), torch.ones(2, 7), atol=1e-3)
    assert not torch.allclose(emb(ids), out)  # segments matter


def test_bert_embeddings_parameter_count_and_init() -> None:
    emb = BertEmbeddings(1000, 64, 32, type_vocab_size=3, seed=1).requires_grad_(False)
    assert sum(p.numel() for p in emb.parameters()) == 1000 * 32 + 64 * 32 + 3 * 32 + 2 * 32
    assert float(emb.token.weight.abs().max()) <= 0.04  # BERT's truncated normal for tokens too
    assert float(emb.token.weight.std()) == pytest.approx(truncated_normal_std(0.02), rel=0.05)


def test_bert_embeddings_errors_and_dropout() -> None:
    emb = BertEmbeddings(20, 8, 4, dropout=0.5, seed=0)
    with pytest.raises(ValueError, match="seq_len=9 exceeds max_len=8"):
        emb(torch.zeros(1, 9, dtype=torch.long))
    with pytest.raises(ValueError, match="input_ids must be < 20"):
        emb(torch.tensor([[3, 20]]))
    with pytest.raises(ValueError, match="token_type_ids must be < 2"):
        emb(torch.tensor([[3, 4]]), torch.tensor([[0, 2]]))
    with pytest.raises(ValueError, match="shape"):
        emb(torch.tensor([3, 4]))
    with pytest.raises(ValueError, match="dropout"):
        BertEmbeddings(20, 8, 4, dropout=1.0)
    ids = torch.randint(0, 20, (4, 8), generator=torch.Generator().manual_seed(1))
    emb.train()
    assert float((emb(ids) == 0).double().mean()) == pytest.approx(0.5, abs=0.15)
    emb.eval()
    assert torch.equal(emb(ids), emb(ids))


# -- RoBERTa and fairseq initialisations ---------------------------------------------------


def test_roberta_init_is_bert_params_std_not_inverse_sqrt_d() -> None:
    # fairseq's RoBERTa re-draws every nn.Embedding with init_bert_params: N(0, 0.02^2).
    assert INIT_CHOICES == INIT_STRATEGIES + ("roberta", "fairseq", "normal")
    table = initial_table(*BIG, "roberta", seed=2).double()
    assert ROBERTA_INIT_STD == 0.02 and init_scale("roberta") == 0.02
    assert float(table.std()) == pytest.approx(0.02, rel=0.01)
    assert float(table.abs().max()) > 2.5 * 0.02  # a plain normal: not truncated like BERT's
    assert float(table.std()) != pytest.approx(BIG[1] ** -0.5, rel=0.1)


def test_normal_init_has_the_token_embeddings_scale() -> None:
    # a random table as large as token embeddings drawn from N(0, 1): the scale runs' control
    table = initial_table(*BIG, "normal", seed=4).double()
    assert init_scale("normal") == 1.0
    assert float(table.std()) == pytest.approx(1.0, rel=0.01) and abs(float(table.mean())) < 0.01


def test_fairseq_init_is_inverse_sqrt_d() -> None:
    for d_model in (64, 256):
        table = initial_table(1024, d_model, "fairseq", seed=3).double()
        assert init_scale("fairseq", d_model) == pytest.approx(d_model ** -0.5)
        assert rms(table) == pytest.approx(d_model ** -0.5, rel=0.02)
    assert LearnedPositionEmbedding(8, 16, init="fairseq", seed=0).init == "fairseq"
    with pytest.raises(ValueError, match="needs d_model"):
        init_scale("fairseq")


# -- which rows move: gradients versus optimiser state ---------------------------------------

ROW_ONCE = [[0, 1]] + [[0]] * 5  # row 1 occurs at the first step only; rows 2, 3 never


def test_plain_sgd_moves_only_rows_in_the_batch() -> None:
    moves, initial, final = row_steps("sgd", ROW_ONCE)
    assert moves.shape == (6, 4)
    assert float(moves[0, 1]) > 0 and torch.all(moves[1:, 1] == 0)
    assert not torch.equal(initial[1], final[1]) and torch.equal(initial[2:], final[2:])


@pytest.mark.parametrize("optimizer", ["adam", "sgd-momentum"])
def test_momentum_keeps_moving_rows_absent_from_the_batch(optimizer: str) -> None:
    moves, initial, final = row_steps(optimizer, ROW_ONCE)
    assert torch.all(moves[:, 1] > 0)  # row 1 moves at every step, present only at the first
    assert torch.all(moves[:, 2:] == 0) and torch.equal(initial[2:], final[2:])  # never used: bit-identical


def test_adamw_weight_decay_moves_even_rows_never_used() -> None:
    moves, initial, final = row_steps("adamw", ROW_ONCE, lr=0.1)
    assert torch.all(moves[:, 2:] > 0)
    # AdamW's default weight decay 0.01 scales an unused row by (1 - lr * 0.01) per step.
    assert torch.allclose(final[2:], initial[2:] * (1 - 0.1 * 0.01) ** 6)


def test_row_steps_bad_arguments() -> None:
    assert OPTIMIZERS == ("sgd", "sgd-momentum", "adam", "adamw")
    with pytest.raises(ValueError, match="optimizer must be one of"):
        row_steps("rmsprop", ROW_ONCE)
    with pytest.raises(ValueError, match=r"occurs\[0\] must be < 4"):
        row_steps("sgd", [[0, 4]])
    with pytest.raises(ValueError, match="empty"):
        row_steps("sgd", [])
    with pytest.raises(ValueError, match="lr"):
        row_steps("sgd", ROW_ONCE, lr=0.0)
    moves, _, _ = row_steps("adam", [[1], []])  # a step without any position is allowed
    assert float(moves[1, 1]) > 0
