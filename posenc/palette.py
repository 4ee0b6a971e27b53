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

__all__ = ["OKABE_ITO", "DASHES", "SYMBOLS", "DIVERGING_STOPS", "colour", "lightness"]

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


#: The book's diverging colour scale, ``(value in [0, 1], colour)`` stops for values from -1 to +1:
#: dark blue (negative) through neutral grey (zero) to light orange (positive). Unlike a
#: red-white-blue scale, whose two ends are equally dark, its lightness rises with the value
#: (CIELAB L* 26 at -1, 56 at 0, 87 at +1), so a grey print still tells +1 from -1 and the
#: sign of every cell. Made in CIELAB: L* = 56 + 34 v, chroma 48 |v|^0.8, hue 255° (blue)
#: below zero and 70° (orange) above, clipped to sRGB.
DIVERGING_STOPS: tuple[tuple[float, str], ...] = (
    (0.0, "#003E7A"),
    (0.125, "#004F81"),
    (0.25, "#206187"),
    (0.375, "#59748A"),
    (0.5, "#868686"),
    (0.625, "#B09882"),
    (0.75, "#D4AC84"),
    (0.875, "#F8C088"),
    (1.0, "#FFD58D"),
)


def lightness(hex_colour: str) -> float:
    """CIELAB lightness L* (0 black .. 100 white) of an sRGB colour ``"#RRGGBB"``: how light it prints in grey."""
    if not (isinstance(hex_colour, str) and len(hex_colour) == 7 and hex_colour.startswith("#")):
        raise ValueError(f"hex_colour must look like '#0072B2', got {hex_colour!r}")

    def linear(channel: float) -> float:
        return channel / 12.92 if channel <= 0.04045 else ((channel + 0.055) / 1.055) ** 2.4

    red, green, blue = (linear(int(hex_colour[i : i + 2], 16) / 255) for i in (1, 3, 5))
    luminance = 0.2126 * red + 0.7152 * green + 0.0722 * blue
    return 116 * luminance ** (1 / 3) - 16 if luminance > 216 / 24389 else luminance * 24389 / 27


def colour(index: int) -> str:
    """The ``index``-th colour of :data:`OKABE_ITO`, cycling when there are more series than colours."""
    if isinstance(index, bool) or not isinstance(index, int) or index < 0:
        raise ValueError(f"index must be a non-negative int, got {index!r}")
    return OKABE_ITO[index % len(OKABE_ITO)]
