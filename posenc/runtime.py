"""How posenc runs torch on a CPU.

The book's models are tiny (d_model 32-64, a few layers): splitting their small matrix
products across threads costs more than it saves, and on a busy 2-core machine thread
contention made training 5 to 20 times slower than on one thread, with the same results.
Training therefore runs inside :func:`single_thread`.

Training is deterministic, but "the same bits" also needs the same kernels. torch picks its
CPU kernels by the processor's instruction set, twice over: oneDNN for matrix products and
ATen's own vectorised kernels (softmax, layer norm, the optimiser) each use AVX-512 where
the CPU has it. A model trained from the same seed on an AVX-512 machine then differs in the
last bits from one trained with AVX2 kernels (a final loss of 0.00096615492 against
0.00096615569 for one of chapter 7's runs), and a long enough run can drift to other
predictions (one of chapter 11's stored fine-tunes scores one test token differently).
:func:`pin_cpu_kernels` caps both at AVX2, which every x86-64 CPU of the last decade has;
the book's stored runs were made with AVX2 kernels, so they re-train bit for bit on any
such machine. On another kind of processor (an ARM laptop) the kernels differ and results
agree only to rounding.
"""

from __future__ import annotations

import os
import platform
from collections.abc import Iterator
from contextlib import contextmanager

import torch

__all__ = ["single_thread", "pin_cpu_kernels", "KERNEL_CAPS", "kernel_setting"]

#: The environment variables torch's two kernel libraries read (once, when a process first
#: uses them), with the instruction set the book's stored runs were trained with.
KERNEL_CAPS: dict[str, str] = {"ONEDNN_MAX_CPU_ISA": "AVX2", "ATEN_CPU_CAPABILITY": "avx2"}


@contextmanager
def single_thread() -> Iterator[None]:
    """Run torch on one CPU thread inside the block, then restore the previous setting.

    Example::

        with single_thread():
            model, result = train(config)
    """
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


def pin_cpu_kernels() -> bool:
    """Cap torch's CPU kernels at AVX2 in this process (:data:`KERNEL_CAPS`), unless the environment chose caps.

    Call it before the process's first tensor operation: both libraries read the setting
    once, the first time they run, so a call after that changes nothing (the book's
    notebooks call it in their first cell; ``make`` sets the variables for everything it
    starts).

    Returns:
        True if the caps in force are the book's on an x86-64 processor, i.e. stored runs
        re-train to the same bits here; False otherwise.
    """
    for variable, value in KERNEL_CAPS.items():
        os.environ.setdefault(variable, value)
    return kernel_setting() == _BOOK_SETTING


def kernel_setting() -> str:
    """This process's kernel choice, e.g. ``"x86_64 ONEDNN_MAX_CPU_ISA=AVX2 ATEN_CPU_CAPABILITY=avx2"``.

    Stored grids record it (``meta["kernels"]``) so a re-run can tell whether it should
    match to the bit. ``none`` stands for no cap (the library uses the CPU's best kernels).
    """
    machine = platform.machine().lower().replace("amd64", "x86_64")
    caps = " ".join(f"{variable}={os.environ.get(variable, 'none')}" for variable in KERNEL_CAPS)
    return f"{machine} {caps}"


_BOOK_SETTING = "x86_64 " + " ".join(f"{variable}={value}" for variable, value in KERNEL_CAPS.items())
