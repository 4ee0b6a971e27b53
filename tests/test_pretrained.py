"""Tests for posenc.pretrained: the offline MiniLM table, the general safetensors loader, and
MiniLM's layer-0 attention on real text (transformers, offline)."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import save_file

from posenc.pretrained import (
    KNOWN_POSITION_KEYS,
    PositionKeyError,
    checkpoint_keys,
    find_position_key,
    load_minilm_attention,
    load_minilm_position_table,
    load_position_table,
    minilm_text_attention,
    resolve_checkpoint,
    text_attention,
    token_vectors,
)
from posenc.pretrained import _hub_offline, _minilm_folder


def write_checkpoint(folder: Path, tensors: dict[str, torch.Tensor], name: str = "model.safetensors") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    save_file({k: v.contiguous() for k, v in tensors.items()}, str(folder / name))
    return folder / name


def test_minilm_table_key_shape_dtype() -> None:
    table = load_minilm_position_table()
    assert table.key == "embeddings.position_embeddings.weight"
    assert table.shape == (512, 384)
    assert table.weight.dtype == np.float32
    assert table.file.name == "model.safetensors" and table.skipped_rows == 0
    assert np.isfinite(table.weight).all()
    # A trained table, not zeros or an untouched N(0, 0.02) initialisation.
    assert 0.3 < float(np.linalg.norm(table.weight, axis=1).mean()) < 1.0


def test_minilm_known_figures() -> None:
    """The figures quoted in the book's notes, with the chapter's definitions."""
    from posenc.analysis import principal_components, similarity_summary

    weight = load_minilm_position_table().weight
    summary = similarity_summary(weight)
    assert summary.adjacent == pytest.approx(0.851, abs=5e-4)
    assert summary.near == pytest.approx(0.294, abs=5e-4)
    assert summary.far == pytest.approx(0.018, abs=5e-4)
    assert principal_components(weight, n_components=5).cumulative(5) == pytest.approx(0.516, abs=5e-4)


@pytest.mark.parametrize("key", KNOWN_POSITION_KEYS)
def test_every_known_key_is_found(tmp_path: Path, key: str) -> None:
    weight = torch.arange(12, dtype=torch.float32).reshape(4, 3)
    write_checkpoint(tmp_path, {key: weight, "encoder.layer.0.weight": torch.zeros(3, 3)})
    table = load_position_table(tmp_path)
    assert table.key == key
    np.testing.assert_array_equal(table.weight, weight.numpy())


def test_suffix_match_for_other_models(tmp_path: Path) -> None:
    write_checkpoint(tmp_path, {"electra.embeddings.position_embeddings.weight": torch.ones(6, 2)})
    assert find_position_key(tmp_path) == "electra.embeddings.position_embeddings.weight"


def test_explicit_key_and_file_path(tmp_path: Path) -> None:
    file = write_checkpoint(tmp_path, {"my.table": torch.full((5, 2), 0.5), "wpe.weight": torch.zeros(5, 2)})
    table = load_position_table(file, key="my.table")
    assert table.key == "my.table" and table.file == file
    np.testing.assert_array_equal(table.weight, 0.5)


def test_roberta_offset_with_skip_rows(tmp_path: Path) -> None:
    weight = torch.arange(10, dtype=torch.float32)[:, None].repeat(1, 4)  # row r holds r
    write_checkpoint(tmp_path, {"roberta.embeddings.position_embeddings.weight": weight})
    table = load_position_table(tmp_path, skip_rows=2)
    assert table.shape == (8, 4) and table.skipped_rows == 2
    assert table.weight[0, 0] == 2.0  # input position 0 uses row padding_idx + 1 = 2
    with pytest.raises(ValueError, match="skip_rows must be < the table's 10 rows"):
        load_position_table(tmp_path, skip_rows=10)
    with pytest.raises(ValueError, match="non-negative"):
        load_position_table(tmp_path, skip_rows=-1)


def test_half_precision_is_converted(tmp_path: Path) -> None:
    write_checkpoint(tmp_path, {"wpe.weight": torch.ones(3, 2, dtype=torch.bfloat16)})
    assert load_position_table(tmp_path).weight.dtype == np.float32


def test_sharded_checkpoint(tmp_path: Path) -> None:
    write_checkpoint(tmp_path, {"wte.weight": torch.zeros(7, 2)}, name="model-00001-of-00002.safetensors")
    write_checkpoint(tmp_path, {"wpe.weight": torch.ones(9, 2)}, name="model-00002-of-00002.safetensors")
    index = {"metadata": {}, "weight_map": {"wte.weight": "model-00001-of-00002.safetensors",
                                            "wpe.weight": "model-00002-of-00002.safetensors"}}
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(index))
    assert checkpoint_keys(tmp_path) == ["wpe.weight", "wte.weight"]
    table = load_position_table(tmp_path)
    assert table.key == "wpe.weight" and table.shape == (9, 2)
    assert table.file.name == "model-00002-of-00002.safetensors"


def test_bad_path_errors(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_position_table(tmp_path / "nowhere")
    with pytest.raises(FileNotFoundError, match="no model.safetensors"):
        load_position_table(tmp_path)
    (tmp_path / "pytorch_model.bin").write_bytes(b"not read")
    with pytest.raises(FileNotFoundError, match=r"pytorch_model\.bin"):
        resolve_checkpoint(tmp_path)
    other = tmp_path / "weights.txt"
    other.write_text("x")
    with pytest.raises(ValueError, match="not a .safetensors file"):
        load_position_table(other)


def test_missing_key_lists_candidates(tmp_path: Path) -> None:
    write_checkpoint(tmp_path, {"encoder.pos_bias": torch.zeros(4, 4), "encoder.layer.0.weight": torch.zeros(2, 2)})
    with pytest.raises(PositionKeyError, match=r"no position table found.*encoder\.pos_bias") as info:
        load_position_table(tmp_path)
    assert isinstance(info.value, KeyError)
    assert not str(info.value).startswith('"')  # readable message, not a quoted repr
    with pytest.raises(KeyError, match=r"key='nope' is not in .*encoder\.pos_bias"):
        load_position_table(tmp_path, key="nope")


def test_ambiguous_suffix_matches_need_an_explicit_key(tmp_path: Path) -> None:
    write_checkpoint(tmp_path, {"model.encoder.embed_positions.weight": torch.zeros(4, 2),
                                "model.decoder.embed_positions.weight": torch.zeros(4, 2)})
    with pytest.raises(KeyError, match="several position tables"):
        load_position_table(tmp_path)
    assert load_position_table(tmp_path, key="model.decoder.embed_positions.weight").shape == (4, 2)


def test_non_table_tensors_are_rejected(tmp_path: Path) -> None:
    write_checkpoint(tmp_path, {"wpe.weight": torch.zeros(4, 2, 2), "ids": torch.zeros(3, 3, dtype=torch.long)})
    with pytest.raises(ValueError, match=r"shape \(4, 2, 2\)"):
        load_position_table(tmp_path)
    with pytest.raises(TypeError, match="floating-point"):
        load_position_table(tmp_path, key="ids")


SENTENCE = "The brave men, living and dead, who struggled here, have consecrated it."


def _softmax(logits: np.ndarray) -> np.ndarray:
    shifted = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return shifted / shifted.sum(axis=-1, keepdims=True)


@pytest.fixture(scope="module")
def minilm_attention_on_a_sentence():
    """MiniLM's layer 0 on one sentence, with every attempt to open a network connection refused."""
    def refuse(*args, **kwargs):
        raise OSError("network access attempted during an offline test")

    original = socket.socket.connect
    socket.socket.connect = refuse  # type: ignore[method-assign]
    try:
        return minilm_text_attention([SENTENCE])[0]
    finally:
        socket.socket.connect = original  # type: ignore[method-assign]


def test_real_text_attention_is_read_offline_with_the_checkpoint_tokenizer(minilm_attention_on_a_sentence) -> None:
    result = minilm_attention_on_a_sentence
    n = len(result.tokens)
    assert result.tokens[0] == "[CLS]" and result.tokens[-1] == "[SEP]" and "brave" in result.tokens
    assert result.input_ids.shape == (n,) and result.weights.shape == (12, n, n)
    assert np.allclose(result.weights.sum(axis=-1), 1.0, atol=1e-5) and (result.weights >= 0).all()


def test_the_hub_is_switched_off_only_while_loading(monkeypatch: pytest.MonkeyPatch) -> None:
    for before in (None, "0"):
        if before is None:
            monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
        else:
            monkeypatch.setenv("HF_HUB_OFFLINE", before)
        with _hub_offline():
            assert os.environ["HF_HUB_OFFLINE"] == "1"
        assert os.environ.get("HF_HUB_OFFLINE") == before


def test_position_only_logits_plus_the_tokens_are_layer_zero(minilm_attention_on_a_sentence) -> None:
    # The book's position-only view (chapter 5) is layer 0 with the word and segment vectors left out:
    # put them back and the softmax of its logits is transformers' own attention.
    result = minilm_attention_on_a_sentence
    weights = load_minilm_attention().weights
    n = len(result.input_ids)
    tokens = token_vectors(_minilm_folder(), result.input_ids)
    rebuilt = _softmax(weights.logits(weights.table[:n] + tokens))
    assert np.abs(rebuilt - result.weights).max() < 1e-5
    # The comparison can fail: the same tokens one position later give other attention.
    shifted = _softmax(weights.logits(weights.table[1 : n + 1] + tokens))
    assert np.abs(shifted - result.weights).max() > 1e-2


def test_text_attention_errors(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="not a single string"):
        minilm_text_attention("one string")
    with pytest.raises(ValueError, match="non-empty string"):
        minilm_text_attention([""])
    with pytest.raises(ValueError, match="layer must be <"):
        minilm_text_attention(["a sentence"], layer=6)
    with pytest.raises(FileNotFoundError, match="not a checkpoint folder"):
        text_attention(tmp_path / "missing", ["a sentence"])
    with pytest.raises(ValueError, match="input_ids must lie in"):
        token_vectors(_minilm_folder(), np.array([5, 10**6]))
    with pytest.raises(ValueError, match="segment must be <"):
        token_vectors(_minilm_folder(), np.array([5]), segment=2)
