"""Argument checks shared by every module: clear errors that name the argument,
the value received and what is allowed (never a bare IndexError from deep in torch)."""

from __future__ import annotations

import numbers
from collections.abc import Collection
from typing import Any

import torch

__all__ = [
    "check_positive_int",
    "check_nonnegative_int",
    "check_even_int",
    "check_choice",
    "check_positive_float",
    "check_positions",
    "check_real_positions",
]


def _is_int(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def check_positive_int(name: str, value: Any) -> int:
    """Return ``value`` as ``int`` if it is an integer >= 1, else raise a ValueError/TypeError naming it."""
    if not _is_int(value):
        raise TypeError(f"{name} must be a positive integer, got {value!r} of type {type(value).__name__}")
    if value < 1:
        raise ValueError(f"{name} must be a positive integer (>= 1), got {value}")
    return int(value)


def check_nonnegative_int(name: str, value: Any) -> int:
    """Return ``value`` as ``int`` if it is an integer >= 0, else raise naming it."""
    if not _is_int(value):
        raise TypeError(f"{name} must be a non-negative integer, got {value!r} of type {type(value).__name__}")
    if value < 0:
        raise ValueError(f"{name} must be a non-negative integer (>= 0), got {value}")
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
    if not isinstance(value, numbers.Real) or isinstance(value, bool):
        raise TypeError(f"{name} must be a positive number, got {value!r} of type {type(value).__name__}")
    if not (float(value) > 0.0) or value != value or value == float("inf"):
        raise ValueError(f"{name} must be a finite number > 0, got {value}")
    return float(value)


def check_choice(name: str, value: Any, allowed: Collection[Any]) -> Any:
    """Return ``value`` if it is one of ``allowed``, else raise a ValueError listing the choices."""
    if value not in allowed:
        choices = ", ".join(repr(a) for a in allowed)
        raise ValueError(f"{name} must be one of {choices}; got {value!r}")
    return value


def check_positions(name: str, positions: Any, *, upper: int | None = None) -> torch.Tensor:
    """Validate integer positions and return them as a ``torch.long`` tensor.

    Args:
        name: argument name used in error messages.
        positions: integer sequence or tensor, any shape.
        upper: if given, every position must be ``< upper``.

    Returns:
        ``torch.long`` tensor with the same shape as ``positions``.
    """
    tensor = torch.as_tensor(positions)
    if tensor.is_floating_point() or tensor.is_complex() or tensor.dtype == torch.bool:
        raise TypeError(f"{name} must hold integers, got dtype {tensor.dtype}")
    tensor = tensor.long()
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
    tensor = torch.as_tensor(positions)
    if tensor.dtype == torch.bool or tensor.is_complex():
        raise TypeError(f"{name} must hold real numbers (integer or fractional positions), got dtype {tensor.dtype}")
    tensor = tensor.to(torch.float64)
    if tensor.numel():
        if not bool(torch.isfinite(tensor).all()):
            raise ValueError(f"{name} must be finite, got {tensor[~torch.isfinite(tensor)][0].item()}")
        if float(tensor.min()) < 0:
            raise ValueError(f"{name} must be >= 0, got a minimum of {float(tensor.min())}")
    return tensor
