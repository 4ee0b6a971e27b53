"""Argument checks shared by every module, and the contract they enforce.

**The contract.** Every public function, method and constructor of posenc (the ``X_plots``
figure builders and the file readers included) keeps these promises about what a reader
passes in:

1. **Checked at the boundary, before any work.** Types and ranges of every argument are
   checked first, with the helpers below; a bad argument never reaches torch, numpy, json
   or safetensors, so the error is never a bare library error from deep inside.
2. **Clear errors.** A wrong kind of value raises :class:`TypeError`, a value of the right
   kind that is not allowed raises :class:`ValueError`, and a file that is not there raises
   :class:`FileNotFoundError`. The message names the argument, the value it got and what is
   allowed; a hint names only options the function actually accepts.
3. **Nothing silent.** No value is clamped, dropped or guessed: a length past what a table
   holds is either scored by a rule the docstring states or rejected; a string where a
   sequence of names is expected is not iterated character by character; a number that
   depends on the caller's setting (a training length, a scaling's factor) is never
   assumed.
4. **Expensive work is bounded before it starts**: a count that grows with an argument
   (the permutations of the order explorer, the frames of an explorer, a table grown to
   the largest position) is checked before anything is computed.

``tests/test_contract.py`` holds posenc to this: it enumerates every public callable (each
module's ``__all__``, classes' constructors and public methods), feeds every parameter
generic bad values (wrong type, ``None``, negative, NaN, empty, wrong shape) and asserts a
clear error that names the parameter. What is deliberately accepted is in its allow-list,
each entry with its reason.

The helpers return the checked value (converted where that is what they promise, e.g. a
``Path``, a tuple, a ``torch.long`` tensor), so a function checks and binds in one line:
``d_model = check_positive_int("d_model", d_model)``.
"""

from __future__ import annotations

import math
import numbers
import os
from collections.abc import Callable, Collection, Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch

__all__ = [
    "check_positive_int",
    "check_nonnegative_int",
    "check_int",
    "check_even_int",
    "check_choice",
    "check_positive_float",
    "check_real",
    "check_real_pair",
    "check_bool",
    "check_text",
    "check_int_sequence",
    "check_choice_sequence",
    "check_text_sequence",
    "check_instance",
    "check_callable",
    "check_mapping",
    "check_records",
    "check_tensor",
    "check_dtype",
    "check_device",
    "check_generator",
    "check_file",
    "check_path",
    "check_array",
    "check_integers",
    "check_reals",
    "check_positions",
    "check_real_positions",
]


def _is_int(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool | np.bool_)


def _is_real(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool | np.bool_)


def _kind(value: Any) -> str:
    return type(value).__name__


def _shown(value: Any, limit: int = 80) -> str:
    """``repr(value)``, cut to ``limit`` characters (a long list or a tensor stays readable)."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


# -- numbers ------------------------------------------------------------------------------------
def check_positive_int(name: str, value: Any) -> int:
    """Return ``value`` as ``int`` if it is an integer >= 1, else raise a ValueError/TypeError naming it."""
    if not _is_int(value):
        raise TypeError(f"{name} must be a positive integer, got {_shown(value)} of type {_kind(value)}")
    if value < 1:
        raise ValueError(f"{name} must be a positive integer (>= 1), got {value}")
    return int(value)


def check_nonnegative_int(name: str, value: Any) -> int:
    """Return ``value`` as ``int`` if it is an integer >= 0, else raise naming it."""
    if not _is_int(value):
        raise TypeError(f"{name} must be a non-negative integer, got {_shown(value)} of type {_kind(value)}")
    if value < 0:
        raise ValueError(f"{name} must be a non-negative integer (>= 0), got {value}")
    return int(value)


def check_int(name: str, value: Any, *, low: int | None = None, high: int | None = None) -> int:
    """Return ``value`` as ``int`` if it is an integer in ``[low, high]`` (either end may be open: ``None``).

    For integers that may be negative (an offset ``k``, a signed shift); a 0-d integer tensor is accepted.
    """
    if isinstance(value, torch.Tensor) and value.numel() == 1 and value.ndim == 0 and not value.is_floating_point() \
            and value.dtype != torch.bool:
        value = value.item()
    if not _is_int(value):
        raise TypeError(f"{name} must be an integer, got {_shown(value)} of type {_kind(value)}")
    if (low is not None and value < low) or (high is not None and value > high):
        raise ValueError(f"{name} must be an integer in [{'-inf' if low is None else low}, "
                         f"{'inf' if high is None else high}], got {value}")
    return int(value)


def check_even_int(name: str, value: Any, *, why: str) -> int:
    """Return ``value`` as ``int`` if it is a positive even integer, else raise naming it and saying ``why``.

    Args:
        why: the reason evenness is needed, e.g. ``"RoPE rotates pairs of coordinates"``.
    """
    value = check_positive_int(name, value)
    if value % 2:
        raise ValueError(f"{name} must be even ({why}), got {value}")
    return value


def check_positive_float(name: str, value: Any) -> float:
    """Return ``value`` as ``float`` if it is a finite real number > 0, else raise naming it."""
    if not _is_real(value):
        raise TypeError(f"{name} must be a positive number, got {_shown(value)} of type {_kind(value)}")
    if not (float(value) > 0.0) or value != value or value == float("inf"):
        raise ValueError(f"{name} must be a finite number > 0, got {value}")
    return float(value)


def check_real(
    name: str,
    value: Any,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
    what: str = "a number",
) -> float:
    """Return ``value`` as ``float`` if it is a finite real number in the given range, else raise naming it.

    Args:
        low, high: the ends of the range (``None``: unbounded on that side).
        low_open, high_open: exclude that end (``(0, 1]`` is ``low=0, low_open=True, high=1``).
        what: how the range error names the value, e.g. ``"an accuracy"``.
    """
    if not _is_real(value):
        raise TypeError(f"{name} must be a real number, got {_shown(value)} of type {_kind(value)}")
    number = float(value)
    if not math.isfinite(number):
        raise ValueError(f"{name} must be a finite number, got {number}")
    below = low is not None and (number <= low if low_open else number < low)
    above = high is not None and (number >= high if high_open else number > high)
    if below or above:
        left = "-inf" if low is None else f"{low:g}"
        right = "inf" if high is None else f"{high:g}"
        interval = f"{'(' if low_open or low is None else '['}{left}, {right}{')' if high_open or high is None else ']'}"
        raise ValueError(f"{name} must be {what} in {interval}, got {number:g}")
    return number


def check_real_pair(name: str, value: Any, *, increasing: bool = False) -> tuple[float, float]:
    """Return ``value`` as a ``(low, high)`` pair of finite numbers (``low < high`` with ``increasing``), else raise."""
    if isinstance(value, str | bytes) or not isinstance(value, tuple | list):
        raise TypeError(f"{name} must be a pair of numbers such as (0.0, 1.0), got {_shown(value)} of type "
                        f"{_kind(value)}")
    if len(value) != 2:
        raise ValueError(f"{name} must be a pair of numbers (two entries), got {len(value)}: {_shown(value)}")
    low, high = check_real(f"{name}[0]", value[0]), check_real(f"{name}[1]", value[1])
    if increasing and not low < high:
        raise ValueError(f"{name} must be increasing (low < high), got {_shown(value)}")
    return low, high


def check_bool(name: str, value: Any) -> bool:
    """Return ``value`` if it is ``True`` or ``False`` (a numpy bool too), else a TypeError naming it.

    Strings such as ``"yes"`` and numbers such as ``1`` are refused: they would otherwise be
    read as true without a word.
    """
    if not isinstance(value, bool | np.bool_):
        raise TypeError(f"{name} must be True or False, got {_shown(value)} of type {_kind(value)}")
    return bool(value)


def check_choice(name: str, value: Any, allowed: Collection[Any]) -> Any:
    """Return ``value`` if it is one of ``allowed``, else raise a ValueError listing the choices."""
    try:
        found = value in allowed
    except TypeError:  # an unhashable value tested against a set or a dict
        found = False
    if not found or isinstance(value, bool | np.bool_) and not any(a is value for a in allowed):
        choices = ", ".join(repr(a) for a in allowed)
        raise ValueError(f"{name} must be one of {choices}; got {_shown(value)}")
    return value


# -- text ----------------------------------------------------------------------------------------
def check_text(name: str, value: Any, *, empty: bool = True) -> str:
    """Return ``value`` if it is a string (a non-empty one with ``empty=False``), else raise naming it."""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a string, got {_shown(value)} of type {_kind(value)}")
    if not empty and not value.strip():
        raise ValueError(f"{name} must be a non-empty string, got {value!r}")
    return value


# -- sequences -----------------------------------------------------------------------------------
def _as_items(name: str, value: Any, what: str, example: str) -> list[Any]:
    """The items of a list-like ``value``; a string, a bare number or a non-iterable is refused naming ``name``."""
    if isinstance(value, str | bytes):
        raise TypeError(f"{name} must be a sequence of {what}, got the string {_shown(value)}: a string is not "
                        f"split into its characters here; a one-element tuple is written ({value!r},)")
    if isinstance(value, numbers.Number | np.bool_):
        raise TypeError(f"{name} must be a sequence of {what} such as {example}, got the {_kind(value)} "
                        f"{_shown(value)}: a one-element tuple is written ({value!r},), not ({value!r})")
    if isinstance(value, torch.Tensor | np.ndarray):
        if value.ndim != 1:
            raise ValueError(f"{name} must be 1-D (a sequence of {what}), got shape {tuple(value.shape)}")
        return list(value.tolist())
    if isinstance(value, Mapping) or not isinstance(value, Iterable):
        raise TypeError(f"{name} must be a sequence of {what} such as {example}, got {_shown(value)} "
                        f"of type {_kind(value)}")
    return list(value)


def check_int_sequence(name: str, value: Any, *, nonnegative: bool = False, min_len: int = 0) -> tuple[int, ...]:
    """Return ``value`` as a tuple of positive integers (non-negative with ``nonnegative=True``).

    ``(32)`` is the integer 32, not a tuple: it is refused with that hint, never iterated.

    Args:
        min_len: the fewest entries allowed (``1``: not empty).
    """
    items = _as_items(name, value, "integers", "(16, 32)")
    if len(items) < min_len:
        needed = "non-empty (at least one integer)" if min_len == 1 else f"hold at least {min_len} integers"
        raise ValueError(f"{name} must be {needed}, got {_shown(value)}")
    check = check_nonnegative_int if nonnegative else check_positive_int
    return tuple(check(f"{name}[{index}]", item) for index, item in enumerate(items))


def check_choice_sequence(name: str, value: Any, allowed: Collection[Any], *, min_len: int = 0) -> tuple[Any, ...]:
    """Return ``value`` as a tuple whose every entry is one of ``allowed``.

    ``("clip")`` is the string ``"clip"``, not a tuple: it is refused with that hint rather than
    read as the five names ``"c", "l", ...``.
    """
    example = "(" + ", ".join(repr(a) for a in list(allowed)[:2]) + ")"
    items = _as_items(name, value, "names", example)
    if len(items) < min_len:
        raise ValueError(f"{name} must hold at least {min_len} entry(ies) from {sorted(map(str, allowed))}, "
                         f"got {_shown(value)}")
    return tuple(check_choice(f"{name}[{index}]", item, allowed) for index, item in enumerate(items))


def check_text_sequence(name: str, value: Any, *, min_len: int = 0, empty: bool = False) -> tuple[str, ...]:
    """Return ``value`` as a tuple of strings (non-empty ones unless ``empty=True``)."""
    items = _as_items(name, value, "strings", "('a', 'b')")
    if len(items) < min_len:
        raise ValueError(f"{name} must hold at least {min_len} string(s), got {_shown(value)}")
    return tuple(check_text(f"{name}[{index}]", item, empty=empty) for index, item in enumerate(items))


# -- objects -------------------------------------------------------------------------------------
def check_instance(name: str, value: Any, types: type | tuple[type, ...], *, what: str | None = None) -> Any:
    """Return ``value`` if it is an instance of ``types``, else a TypeError naming it and what is expected.

    Args:
        what: how the expected kind is named, e.g. ``"a posenc.tasks.Task (make_task('copy_offset'))"``.
    """
    if not isinstance(value, types):
        if what is None:
            names = [t.__name__ for t in (types if isinstance(types, tuple) else (types,))]
            what = " or ".join(names)
        raise TypeError(f"{name} must be {what}, got {_shown(value)} of type {_kind(value)}")
    return value


def check_callable(name: str, value: Any) -> Callable[..., Any]:
    """Return ``value`` if it can be called, else a TypeError naming it."""
    if not callable(value):
        raise TypeError(f"{name} must be a function (a callable), got {_shown(value)} of type {_kind(value)}")
    return value


def check_mapping(
    name: str, value: Any, *, min_len: int = 0, what: str = "a dict", item: str = "entry"
) -> Mapping[Any, Any]:
    """Return ``value`` if it is a mapping (a dict) with at least ``min_len`` entries, else raise naming it.

    Args:
        what: how the expected value reads in messages; item: what one entry is (``"table"``).
    """
    if not isinstance(value, Mapping):
        raise TypeError(f"{name} must be {what}, got {_shown(value)} of type {_kind(value)}")
    if len(value) < min_len:
        count = f"one {item}" if min_len == 1 else f"{min_len} {item}s"
        raise ValueError(f"{name} must hold at least {count}, got {len(value)}")
    return value


def check_records(name: str, value: Any, keys: Collection[str], *, min_len: int = 0) -> list[Mapping[str, Any]]:
    """Return ``value`` as a list of mappings (table rows), each holding every one of ``keys``, else raise naming it.

    Args:
        keys: the keys each row needs, e.g. ``("label", "mean", "std")``.
        min_len: the fewest rows allowed.
    """
    if isinstance(value, str | bytes | Mapping) or not isinstance(value, Iterable):
        raise TypeError(f"{name} must be a sequence of rows (dicts with {sorted(keys)}), got {_shown(value)} of type "
                        f"{_kind(value)}")
    rows = list(value)
    if len(rows) < min_len:
        raise ValueError(f"{name} must hold at least {min_len} row(s), got {len(rows)}")
    for index, row in enumerate(rows):
        if not isinstance(row, Mapping):
            raise TypeError(f"{name}[{index}] must be a dict with {sorted(keys)}, got {_shown(row)} of type {_kind(row)}")
        missing = [key for key in keys if key not in row]
        if missing:
            raise ValueError(f"{name}[{index}] lacks {missing}; each row needs {list(keys)}")
    return rows


def check_tensor(
    name: str,
    value: Any,
    *,
    ndim: int | tuple[int, ...] | None = None,
    shape: str | None = None,
    floating: bool = False,
    integer: bool = False,
    nonempty: bool = False,
) -> torch.Tensor:
    """Return ``value`` if it is a ``torch.Tensor`` of the given kind, else raise naming it.

    Args:
        ndim: the number(s) of dimensions allowed.
        shape: how the expected shape reads in messages, e.g. ``"(batch, seq_len)"``.
        floating: require a floating-point dtype; integer: an integer dtype (not bool).
        nonempty: require at least one element.
    """
    expected = f" of shape {shape}" if shape else ""
    if not isinstance(value, torch.Tensor):
        hint = " (convert it with torch.tensor(...))" if isinstance(value, list | tuple | np.ndarray) else ""
        raise TypeError(f"{name} must be a torch.Tensor{expected}, got {_shown(value)} of type {_kind(value)}{hint}")
    if ndim is not None:
        allowed = (ndim,) if isinstance(ndim, int) else ndim
        if value.ndim not in allowed:
            dims = " or ".join(str(n) for n in allowed)
            raise ValueError(f"{name} must be a {dims}-D tensor{expected}, got shape {tuple(value.shape)}")
    if floating and not value.is_floating_point():
        raise TypeError(f"{name} must be a floating-point tensor, got dtype {value.dtype}")
    if integer and (value.is_floating_point() or value.is_complex() or value.dtype == torch.bool):
        raise TypeError(f"{name} must hold integers, got dtype {value.dtype}")
    if nonempty and value.numel() == 0:
        raise ValueError(f"{name} must not be empty, got shape {tuple(value.shape)}")
    return value


def check_dtype(name: str, value: Any, allowed: Collection[torch.dtype]) -> torch.dtype:
    """Return ``value`` if it is one of the ``torch.dtype`` s ``allowed``, else raise naming it."""
    if not isinstance(value, torch.dtype):
        raise TypeError(f"{name} must be a torch.dtype such as torch.float32, got {_shown(value)} of type {_kind(value)}")
    if value not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(str(d) for d in allowed)}; got {value}")
    return value


def check_device(name: str, value: Any) -> torch.device | None:
    """Return ``value`` as a ``torch.device`` (``None`` stays ``None``) if this torch can use it, else raise naming it.

    ``device="cuda"`` on a torch without CUDA is a ValueError here, not torch's assertion later.
    """
    if value is None:
        return None
    if not isinstance(value, str | torch.device):
        raise TypeError(f"{name} must be a device such as 'cpu' (a str or torch.device) or None, got "
                        f"{_shown(value)} of type {_kind(value)}")
    try:
        device = torch.device(value)
    except RuntimeError as error:
        raise ValueError(f"{name}={value!r} is not a device torch knows ({error})") from None
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"{name}={value!r}, but this torch cannot use CUDA (torch.cuda.is_available() is False); "
                         f"use {name}='cpu'")
    if device.type == "mps" and not torch.backends.mps.is_available():
        raise ValueError(f"{name}={value!r}, but this torch cannot use MPS (torch.backends.mps.is_available() is "
                         f"False); use {name}='cpu'")
    if device.type not in ("cpu", "cuda", "mps", "meta"):
        raise ValueError(f"{name}={value!r} is not supported; use {name}='cpu' (or 'cuda'/'mps' where available)")
    return device


def check_generator(name: str, value: Any) -> torch.Generator | None:
    """Return ``value`` if it is a ``torch.Generator`` or ``None``, else a TypeError naming it."""
    if value is not None and not isinstance(value, torch.Generator):
        raise TypeError(f"{name} must be a torch.Generator or None, got {_shown(value)} of type {_kind(value)}")
    return value


# -- files ---------------------------------------------------------------------------------------
def check_path(name: str, value: Any) -> Path:
    """Return ``value`` as a ``Path`` if it is a path (a ``str`` or ``os.PathLike``), else a TypeError naming it."""
    if not isinstance(value, str | os.PathLike) or isinstance(value, str) and not value:
        raise TypeError(f"{name} must be a file path (a str or pathlib.Path), got {_shown(value)} of type "
                        f"{_kind(value)}")
    return Path(value)


def check_file(name: str, value: Any, *, what: str = "file") -> Path:
    """Return ``value`` as a ``Path`` to an existing file, else a TypeError, or a FileNotFoundError naming it."""
    path = check_path(name, value)
    if not path.is_file():
        where = "a folder, not a file" if path.is_dir() else "not there"
        raise FileNotFoundError(f"{name}={str(path)!r}: no {what} there ({where})")
    return path


# -- numbers in tensors ------------------------------------------------------------------------------
def check_array(name: str, value: Any) -> torch.Tensor:
    """``value`` (a tensor, a numpy array or a nested sequence of numbers) as a tensor, without copying a tensor.

    What torch cannot read (a string, ``None``, a ragged list, an object) is a TypeError naming ``name``,
    not torch's own message.
    """
    if isinstance(value, torch.Tensor):
        return value
    if isinstance(value, str | bytes) or value is None or isinstance(value, Mapping):
        raise TypeError(f"{name} must be a tensor or a sequence of numbers, got {_shown(value)} of type {_kind(value)}")
    try:
        return torch.as_tensor(value)
    except (TypeError, ValueError, RuntimeError) as error:
        raise TypeError(f"{name} must be a tensor or a (nested) sequence of numbers, got {_shown(value)} "
                        f"of type {_kind(value)} ({error})") from None


def check_integers(name: str, value: Any) -> torch.Tensor:
    """Integers of any sign and shape (offsets, token ids) as a ``torch.long`` tensor; floats and bools are refused."""
    tensor = check_array(name, value)
    if tensor.is_floating_point() or tensor.is_complex() or tensor.dtype == torch.bool:
        raise TypeError(f"{name} must hold integers, got dtype {tensor.dtype}")
    return tensor.long()


def check_reals(name: str, value: Any) -> torch.Tensor:
    """Finite real numbers of any sign and shape as a ``torch.float64`` tensor (NaN and infinity are refused).

    Python numbers are read in float64 directly (as ``np.asarray(value, dtype=float)`` does), never
    through torch's default float32; tensors and arrays are converted exactly from their own dtype.
    """
    tensor = check_array(name, value)
    if tensor.dtype == torch.bool or tensor.is_complex():
        raise TypeError(f"{name} must hold real numbers, got dtype {tensor.dtype}")
    if not isinstance(value, torch.Tensor | np.ndarray) and tensor.is_floating_point():
        tensor = torch.as_tensor(value, dtype=torch.float64)
    tensor = tensor.to(torch.float64)
    if tensor.numel() and not bool(torch.isfinite(tensor).all()):
        raise ValueError(f"{name} must be finite, got {tensor[~torch.isfinite(tensor)][0].item()}")
    return tensor


# -- positions -----------------------------------------------------------------------------------
def check_positions(name: str, positions: Any, *, upper: int | None = None) -> torch.Tensor:
    """Validate integer positions and return them as a ``torch.long`` tensor.

    Args:
        name: argument name used in error messages.
        positions: integer sequence or tensor, any shape.
        upper: if given, every position must be ``< upper``.

    Returns:
        ``torch.long`` tensor with the same shape as ``positions``.
    """
    tensor = check_integers(name, positions)
    if tensor.numel() and int(tensor.min()) < 0:
        raise ValueError(f"{name} must be >= 0, got a minimum of {int(tensor.min())}")
    if upper is not None and tensor.numel() and int(tensor.max()) >= upper:
        raise ValueError(f"{name} must be < {upper}, got a maximum of {int(tensor.max())}")
    return tensor


def check_real_positions(name: str, positions: Any) -> torch.Tensor:
    """Validate integer *or fractional* positions (e.g. after position interpolation).

    Negative, NaN or infinite positions are rejected: they are almost always a bug.

    Returns:
        ``torch.float64`` tensor with the same shape as ``positions``.
    """
    tensor = check_array(name, positions)
    if tensor.dtype == torch.bool or tensor.is_complex():
        raise TypeError(f"{name} must hold real numbers (integer or fractional positions), got dtype {tensor.dtype}")
    tensor = check_reals(name, tensor)
    if tensor.numel() and float(tensor.min()) < 0:
        raise ValueError(f"{name} must be >= 0, got a minimum of {float(tensor.min())}")
    return tensor
