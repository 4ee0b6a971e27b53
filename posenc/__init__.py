"""posenc: positional encodings for Transformers, the code behind the book.

Submodules are imported explicitly, e.g. ``from posenc.sinusoidal import sinusoidal_table``;
importing the package or any module changes no global state (plotly's defaults included:
:func:`posenc.plots.use_book_style` opts in to the book's figure style).
"""

from __future__ import annotations

__version__ = "0.1.0"
