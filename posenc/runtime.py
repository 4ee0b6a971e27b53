"""How posenc runs torch on a CPU.

The book's models are tiny (d_model 32-64, a few layers): splitting their small matrix
products across threads costs more than it saves, and on a busy 2-core machine thread
contention made training 5 to 20 times slower than on one thread, with the same results.
Training therefore runs inside :func:`single_thread`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch

__all__ = ["single_thread"]


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
