"""Tests for the attention-level view of position tables (posenc.analysis, posenc.pretrained).

Known answers: a head built to attend ``k`` positions back (sinusoidal rows rotated by
``-k`` positions as queries, the rows themselves as keys) must peak at ``-k``; the logits
must equal those the model itself computes from a position-only input; MiniLM's layer 0
must match what ``transformers`` computes from the same file.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import save_file

from posenc.analysis import (
    AttentionWeights,
    HeadPeaks,
    attention_weights,
    peak_offset_shares,
    peak_offsets,
    position_only_logits,
)
from posenc.models import TinyTransformer
from posenc.pretrained import PositionKeyError, load_bert_attention, load_minilm_attention
from posenc.sinusoidal import sinusoidal_table


def shift_matrix(d_model: int, shift: int) -> np.ndarray:
    """``R`` with ``R @ PE_p = PE_{p + shift}`` for the interleaved sinusoidal table (paper frequencies)."""
    omega = 10000.0 ** (-np.arange(0, d_model, 2) / d_model)
    matrix = np.zeros((d_model, d_model))
    for pair, w in enumerate(omega):
        b = shift * w
        # (sin a, cos a) -> (sin(a + b), cos(a + b))
        matrix[2 * pair : 2 * pair + 2, 2 * pair : 2 * pair + 2] = [[math.cos(b), math.sin(b)],
                                                                    [-math.sin(b), math.cos(b)]]
    return matrix


def test_shift_matrix_moves_rows() -> None:
    table = sinusoidal_table(40, 16, dtype=torch.float64).numpy()
    moved = table[10:20] @ shift_matrix(16, -3).T
    assert np.allclose(moved, table[7:17], atol=1e-12)


@pytest.mark.parametrize("k", [1, 2, 5])
@pytest.mark.parametrize("causal", [False, True])
def test_head_built_to_look_k_back_peaks_at_minus_k(k: int, causal: bool) -> None:
    d_model, n = 64, 96
    table = sinusoidal_table(n, d_model, dtype=torch.float64).numpy()
    logits = position_only_logits(table, shift_matrix(d_model, -k), np.eye(d_model), n_heads=1)
    peaks = peak_offsets(logits, causal=causal)
    assert peaks.shape == (1, n)
    assert np.all(peaks[0, k:] == -k)
    summary = peak_offset_shares(peaks)[0]
    assert summary.modal_offset == -k
    assert summary.modal_share >= (n - k) / n


def test_heads_are_consecutive_blocks_of_features() -> None:
    """Head 0 looks 2 back, head 1 looks 3 ahead: the per-head split must follow nn.Linear's output order."""
    d_model, n = 64, 80
    table = sinusoidal_table(n, d_model, dtype=torch.float64).numpy()
    w_query = np.zeros((d_model, d_model))
    w_query[:32] = shift_matrix(d_model, -2)[:32]
    w_query[32:] = shift_matrix(d_model, 3)[32:]
    logits = position_only_logits(table, w_query, np.eye(d_model), n_heads=2)
    assert logits.shape == (2, n, n)
    peaks = peak_offsets(logits)
    assert np.all(peaks[0, 2:] == -2)
    assert np.all(peaks[1, : n - 3] == 3)
    causal = peak_offsets(logits, causal=True)
    assert np.all(causal <= 0)  # no key after its query can win under a causal mask
    assert np.all(causal[0, 2:] == -2)


def test_scale_biases_and_layer_norm() -> None:
    rng = np.random.default_rng(0)
    table = rng.standard_normal((10, 8))
    w_q, w_k = rng.standard_normal((8, 8)), rng.standard_normal((8, 8))
    b_q, b_k = rng.standard_normal(8), rng.standard_normal(8)
    gamma, beta = rng.standard_normal(8), rng.standard_normal(8)
    got = position_only_logits(table, w_q, w_k, n_heads=2, b_query=b_q, b_key=b_k, layer_norm=(gamma, beta),
                               layer_norm_eps=1e-5)
    norm = torch.nn.LayerNorm(8, eps=1e-5).double()
    with torch.no_grad():
        norm.weight.copy_(torch.from_numpy(gamma))
        norm.bias.copy_(torch.from_numpy(beta))
        x = norm(torch.from_numpy(table)).numpy()
    q, k = x @ w_q.T + b_q, x @ w_k.T + b_k
    for head in range(2):
        cols = slice(4 * head, 4 * head + 4)
        assert np.allclose(got[head], q[:, cols] @ k[:, cols].T / 2.0, atol=1e-10)
    unscaled = position_only_logits(table, w_q, w_k, n_heads=2, b_query=b_q, b_key=b_k, layer_norm=(gamma, beta),
                                    layer_norm_eps=1e-5, scale=False)
    assert np.allclose(unscaled, 2.0 * got)


def test_logits_equal_the_models_own_computation() -> None:
    """With token vectors set to zero, block 0's attention scores are exactly the position-only logits."""
    torch.manual_seed(0)
    model = TinyTransformer(7, 3, d_model=16, n_heads=4, n_layers=2, max_len=12, position="learned")
    with torch.no_grad():
        model.token_embedding.weight.zero_()
        model.blocks[0].norm1.weight.uniform_(0.5, 1.5)  # not the identity LayerNorm
    captured: dict[str, torch.Tensor] = {}
    hook = model.blocks[0].attn.qkv.register_forward_hook(lambda _m, _i, out: captured.update(qkv=out))
    model(torch.zeros(1, 12, dtype=torch.long))
    hook.remove()
    qkv = captured["qkv"].view(1, 12, 3, 4, 4).permute(2, 0, 3, 1, 4)
    expected = (qkv[0] @ qkv[1].transpose(-2, -1) / 2.0)[0].detach().double().numpy()
    weights = attention_weights(model)
    assert isinstance(weights, AttentionWeights)
    assert weights.table.shape == (12, 16) and weights.w_query.shape == (16, 16) and weights.n_heads == 4
    assert weights.layer_norm_eps == model.blocks[0].norm1.eps
    assert np.allclose(weights.logits(), expected, atol=1e-5)
    other = attention_weights(model, layer=1)
    assert not np.allclose(other.w_query, weights.w_query)


def test_attention_weights_rejects_bad_input() -> None:
    model = TinyTransformer(7, 3, d_model=16, n_heads=4, n_layers=1, max_len=12, position="learned")
    with pytest.raises(TypeError, match="TinyTransformer"):
        attention_weights(torch.nn.Linear(2, 2))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="layer must be < the model's 1 blocks, got 1"):
        attention_weights(model, layer=1)
    rope = TinyTransformer(7, 3, d_model=16, n_heads=4, n_layers=1, max_len=12, position="rope")
    with pytest.raises(ValueError, match="no position vectors"):
        attention_weights(rope)


def test_peak_offsets_known_answers() -> None:
    logits = np.array([[[0.0, 5.0, 1.0],
                        [3.0, 0.0, 9.0],
                        [2.0, 2.0, 1.0]]])
    assert peak_offsets(logits).tolist() == [[1, 1, -2]]  # the tie in the last row goes to the first key
    assert peak_offsets(logits, causal=True).tolist() == [[0, -1, -2]]
    assert peak_offsets(torch.from_numpy(logits)).tolist() == [[1, 1, -2]]


def test_peak_offset_shares() -> None:
    peaks = np.array([[-2, -2, -2, 0, 1], [0, 1, -1, 3, 3]])
    first, second = peak_offset_shares(peaks)
    assert isinstance(first, HeadPeaks)
    assert (first.head, first.n_queries, first.modal_offset, first.modal_share) == (0, 5, -2, 0.6)
    assert first.shares == {-2: 0.6, 0: 0.2, 1: 0.2} and sum(first.shares.values()) == pytest.approx(1.0)
    assert first.share(7) == 0.0 and first.window(-1, 1) == {-1: 0.0, 0: 0.2, 1: 0.2}
    assert first.top(2) == [(-2, 0.6), (0, 0.2)]
    assert (second.modal_offset, second.modal_share) == (3, 0.4)
    # A three-way tie goes to the smallest |offset|, then to the negative one.
    assert peak_offset_shares(np.array([[2, -1, 1]]))[0].modal_offset == -1


def test_bad_input_errors_name_the_argument() -> None:
    table = np.ones((5, 8)) + np.arange(40).reshape(5, 8)
    eye = np.eye(8)
    with pytest.raises(ValueError, match=r"w_query must have shape \(d_model, d_model\) = \(8, 8\)"):
        position_only_logits(table, np.eye(6), eye, n_heads=2)
    with pytest.raises(ValueError, match="w_key must have shape"):
        position_only_logits(table, eye, np.ones((8, 4)), n_heads=2)
    with pytest.raises(ValueError, match="n_heads=3 must divide d_model=8"):
        position_only_logits(table, eye, eye, n_heads=3)
    with pytest.raises(ValueError, match="n_heads must be a positive integer|n_heads"):
        position_only_logits(table, eye, eye, n_heads=0)
    with pytest.raises(ValueError, match="b_query must have length 8"):
        position_only_logits(table, eye, eye, n_heads=2, b_query=np.zeros(4))
    with pytest.raises(ValueError, match="layer_norm must be a \\(weight, bias\\) pair"):
        position_only_logits(table, eye, eye, n_heads=2, layer_norm=np.ones(8))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="table must be 2-D"):
        position_only_logits(np.ones(8), eye, eye, n_heads=2)
    with pytest.raises(ValueError, match="logits must be 3-D"):
        peak_offsets(np.ones((4, 4)))
    with pytest.raises(ValueError, match="NaN"):
        peak_offsets(np.full((1, 2, 2), np.nan))
    with pytest.raises(ValueError, match="causal=True every query i needs keys 0..i"):
        peak_offsets(np.ones((1, 4, 2)), causal=True)
    with pytest.raises(TypeError, match="peaks must hold integer offsets"):
        peak_offset_shares(np.ones((2, 3)))
    with pytest.raises(ValueError, match="peaks must be 2-D"):
        peak_offset_shares(np.ones(3, dtype=int))


# -- MiniLM and the BERT-style loader ------------------------------------------------------
def test_minilm_attention_shapes_and_config() -> None:
    minilm = load_minilm_attention()
    w = minilm.weights
    assert w.table.shape == (512, 384) and w.n_heads == 12
    assert w.w_query.shape == w.w_key.shape == (384, 384)
    assert w.b_query.shape == w.b_key.shape == w.layer_norm[0].shape == w.layer_norm[1].shape == (384,)
    assert w.layer_norm_eps == 1e-12 and minilm.prefix == "" and minilm.mean_token.shape == (384,)
    assert not np.allclose(w.w_query, w.w_key)
    logits = w.logits()
    assert logits.shape == (12, 512, 512) and np.isfinite(logits).all()


def test_minilm_layer0_matches_transformers() -> None:
    """The same position-only logits as transformers' own BertModel built from the same file."""
    from transformers import BertModel

    minilm = load_minilm_attention()
    bert = BertModel.from_pretrained(str(minilm.file.parent), local_files_only=True).eval()
    with torch.no_grad():
        x = bert.embeddings.LayerNorm(bert.embeddings.position_embeddings.weight[:40])
        attention = bert.encoder.layer[0].attention.self
        q = attention.query(x).view(40, 12, 32).transpose(0, 1)
        k = attention.key(x).view(40, 12, 32).transpose(0, 1)
        expected = (q @ k.transpose(1, 2) / math.sqrt(32)).double().numpy()
    got = minilm.weights.logits(minilm.weights.table[:40])
    assert np.allclose(got, expected, atol=1e-3 * np.abs(expected).max())


def _write_tiny_bert(folder: Path, prefix: str = "", with_config: bool = True) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    d, layer = 8, f"{prefix}encoder.layer.0.attention.self."
    tensors = {
        f"{prefix}embeddings.position_embeddings.weight": torch.randn(6, d),
        f"{prefix}embeddings.word_embeddings.weight": torch.ones(5, d),
        f"{prefix}embeddings.token_type_embeddings.weight": torch.full((2, d), 2.0),
        f"{prefix}embeddings.LayerNorm.weight": torch.ones(d),
        f"{prefix}embeddings.LayerNorm.bias": torch.zeros(d),
        layer + "query.weight": torch.randn(d, d),
        layer + "query.bias": torch.zeros(d),
        layer + "key.weight": torch.randn(d, d),
        layer + "key.bias": torch.zeros(d),
    }
    save_file(tensors, str(folder / "model.safetensors"))
    if with_config:
        (folder / "config.json").write_text(json.dumps({"num_attention_heads": 2, "layer_norm_eps": 1e-6}))


def test_bert_loader_on_a_tiny_checkpoint(tmp_path: Path) -> None:
    _write_tiny_bert(tmp_path / "bare")
    loaded = load_bert_attention(tmp_path / "bare")
    assert loaded.weights.n_heads == 2 and loaded.weights.layer_norm_eps == 1e-6
    assert np.allclose(loaded.mean_token, 3.0)  # mean word vector (1) + segment 0 (2)
    assert loaded.weights.logits().shape == (2, 6, 6)
    _write_tiny_bert(tmp_path / "head", prefix="bert.", with_config=False)
    with pytest.raises(ValueError, match="pass n_heads"):
        load_bert_attention(tmp_path / "head")
    with_head = load_bert_attention(tmp_path / "head", n_heads=4)
    assert with_head.prefix == "bert." and with_head.weights.layer_norm_eps == 1e-12


def test_bert_loader_rejects_other_checkpoints(tmp_path: Path) -> None:
    save_file({"wpe.weight": torch.zeros(4, 4)}, str(tmp_path / "model.safetensors"))
    with pytest.raises(PositionKeyError, match="no BERT-style layer 0"):
        load_bert_attention(tmp_path)
