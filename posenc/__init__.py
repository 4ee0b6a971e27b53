"""posenc: positional encodings for Transformers, the code behind the book.

Importing the package registers the book's plotly renderer (see :mod:`posenc.plots`),
so every plotly figure renders both in a live Jupyter front end and in the static site.
Submodules are imported explicitly, e.g. ``from posenc.sinusoidal import sinusoidal_table``.
"""

from __future__ import annotations

__version__ = "0.1.0"

from posenc import plots as _plots

_plots.register_renderer()
