"""The book's colours and line styles, without any plotting library.

Figures (:mod:`posenc.plots`) and the scheme registry (:mod:`posenc.registry`, which gives
each scheme its colour) both read these; keeping them here lets the registry stay free of
plotly.

Colours are the Okabe–Ito palette (Okabe & Ito, 2008), safe for the common forms of colour
blindness. Printed in grey, several of them become the same shade, so a figure that
tells series apart must also vary the line style or the marker (:data:`DASHES`,
:data:`SYMBOLS`).
"""

from __future__ import annotations

__all__ = ["OKABE_ITO", "DASHES", "SYMBOLS", "colour"]

#: Okabe–Ito colours, strongest contrast on white first.
OKABE_ITO: tuple[str, ...] = (
    "#0072B2",  # blue
    "#E69F00",  # orange
    "#009E73",  # bluish green
    "#CC79A7",  # reddish purple
    "#56B4E9",  # sky blue
    "#D55E00",  # vermillion
    "#F0E442",  # yellow (last: the weakest contrast on white)
)

#: Line styles (plotly's names) that stay distinct in grey print.
DASHES: tuple[str, ...] = ("solid", "dash", "dot", "dashdot", "longdash", "longdashdot")

#: Marker symbols (plotly's names) that stay distinct in grey print.
SYMBOLS: tuple[str, ...] = ("circle", "square", "diamond", "triangle-up", "triangle-down", "x", "star", "cross",
                            "pentagon")


def colour(index: int) -> str:
    """The ``index``-th colour of :data:`OKABE_ITO`, cycling when there are more series than colours."""
    if isinstance(index, bool) or not isinstance(index, int) or index < 0:
        raise ValueError(f"index must be a non-negative int, got {index!r}")
    return OKABE_ITO[index % len(OKABE_ITO)]
