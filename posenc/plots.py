"""One figure style for the whole book, and the plotly renderer that makes every
figure show up both in a live Jupyter front end and in the static HTML site.

* Live kernel (JupyterLab, Notebook 7, VS Code): figures use plotly's own mimetype.
* Static site: myst-nb does not know plotly's mimetype, so the same output also carries
  a ``text/html`` version that relies on the site's single copy of plotly.js, which
  the book's Sphinx extension (``book/_ext/posenc_site.py``) adds to the pages that show a figure (nothing is inlined,
  nothing comes from a CDN).
"""

from __future__ import annotations

import html
import math
import re
import uuid
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
from plotly.io._base_renderers import MimetypeRenderer

from posenc.checks import (
    check_array,
    check_bool,
    check_instance,
    check_positive_int,
    check_real,
    check_text,
    check_text_sequence,
)
from posenc.palette import DASHES, DIVERGING_STOPS, OKABE_ITO, SYMBOLS, colour

__all__ = [
    "OKABE_ITO",
    "DASHES",
    "SYMBOLS",
    "colour",
    "html_table",
    "thin_indices",
    "SEQUENTIAL",
    "DIVERGING",
    "RENDERER",
    "use_book_style",
    "figure_html",
    "figure_title",
    "plain_text",
    "describe",
    "new_figure",
    "heatmap",
]

#: Okabe & Ito's colour-blind-safe qualitative palette (black omitted).
#: Perceptually uniform, colour-blind-safe sequential scale.
SEQUENTIAL = "Cividis"
#: Diverging scale for signed values such as encodings in [-1, 1] or similarities: dark blue
#: (negative) to grey (zero) to light orange (positive), lightness rising with the value so that
#: the sign survives a grey print (:data:`posenc.palette.DIVERGING_STOPS`).
DIVERGING: list[list[float | str]] = [[value, hex_colour] for value, hex_colour in DIVERGING_STOPS]

TEMPLATE_NAME = "posenc"
RENDERER = "posenc_html"
_FONT = "system-ui, -apple-system, 'Segoe UI', Roboto, Helvetica, Arial, sans-serif"


def _template() -> go.layout.Template:
    # Series that differ by colour only become one grey in print: every scatter trace that does
    # not choose its own line style and marker takes the next of DASHES and SYMBOLS (plotly
    # cycles a template's list of trace defaults, trace by trace), as its colour takes the next
    # of the colorway.
    grey_safe = [
        go.Scatter(line=dict(dash=DASHES[index % len(DASHES)]), marker=dict(symbol=SYMBOLS[index % len(SYMBOLS)]))
        for index in range(len(DASHES) * len(SYMBOLS) // math.gcd(len(DASHES), len(SYMBOLS)))
    ]
    return go.layout.Template(
        data=dict(scatter=grey_safe),
        layout=go.Layout(
            font=dict(family=_FONT, size=13, color="#222"),
            colorway=list(OKABE_ITO),
            paper_bgcolor="white",
            plot_bgcolor="white",
            margin=dict(l=60, r=20, t=50, b=55),
            xaxis=dict(showgrid=True, gridcolor="#e5e5e5", zeroline=False, linecolor="#444", ticks="outside"),
            yaxis=dict(showgrid=True, gridcolor="#e5e5e5", zeroline=False, linecolor="#444", ticks="outside"),
            coloraxis=dict(colorscale=SEQUENTIAL),
            hoverlabel=dict(font=dict(family=_FONT)),
            legend=dict(bgcolor="rgba(255,255,255,0.8)"),
        )
    )


def figure_html(fig: go.Figure | dict[str, Any], *, div_id: str | None = None) -> str:
    """HTML for one figure as it appears in the static site.

    The figure is wrapped in a ``<figure>`` element carrying its alt text
    (``layout.meta["alt"]``) as ``aria-label`` and its caption (``layout.meta["caption"]``)
    as ``<figcaption>``. plotly.js itself is not included: the site provides one copy.
    """
    check_instance("fig", fig, (go.Figure, dict), what="a plotly Figure or its dict")
    if div_id is not None:
        check_text("div_id", div_id, empty=False)
    figure = fig if isinstance(fig, go.Figure) else go.Figure(fig)
    meta = figure.layout.meta if isinstance(figure.layout.meta, dict) else {}
    alt = str(meta.get("alt", "")) or _fallback_alt(figure)
    title = figure_title(figure)
    caption = meta.get("caption")
    div = pio.to_html(
        figure,
        include_plotlyjs=False,
        include_mathjax=False,
        full_html=False,
        div_id=div_id or f"posenc-{uuid.uuid4().hex[:12]}",
        config={"displaylogo": False, "responsive": True},
        validate=False,
    )
    parts = [f'<figure class="posenc-figure" role="group" aria-label="{html.escape(alt, quote=True)}" '
             f'data-title="{html.escape(title, quote=True)}">', div]
    if caption:
        parts.append(f"<figcaption>{html.escape(str(caption))}</figcaption>")
    parts.append("</figure>")
    return "\n".join(parts)


def plain_text(text: str) -> str:
    """Plotly's text markup as plain text: ``<br>`` starts a new line, other tags go, entities are read."""
    check_text("text", text)
    lines = re.split(r"<br\s*/?>", str(text), flags=re.IGNORECASE)
    return "\n".join(" ".join(html.unescape(re.sub(r"<[^>]+>", "", line)).split()) for line in lines).strip()


def figure_title(fig: go.Figure) -> str:
    """What a figure shows, in a few words, for a list of figures: ``layout.meta["title"]`` if
    set, else the first line of its title, else its subplot titles joined by " · ", else the
    first sentence of its alt text."""
    check_instance("fig", fig, go.Figure, what="a plotly Figure")
    meta = fig.layout.meta if isinstance(fig.layout.meta, dict) else {}
    if meta.get("title"):
        return plain_text(str(meta["title"])).split("\n")[0]
    if fig.layout.title and fig.layout.title.text:
        return plain_text(fig.layout.title.text).split("\n")[0]
    subplot_titles = [plain_text(a.text) for a in fig.layout.annotations
                      if a.text and a.xref == "paper" and a.yref == "paper" and a.showarrow is False
                      and a.yanchor == "bottom"]
    if subplot_titles:
        return " · ".join(subplot_titles)
    alt = " ".join(str(meta.get("alt", "")).split())
    return re.split(r"(?<=[a-z0-9)])[.:] ", alt, maxsplit=1)[0].rstrip(".") if alt else "Figure"


def _fallback_alt(figure: go.Figure) -> str:
    title = figure.layout.title.text if figure.layout.title and figure.layout.title.text else ""
    return f"Interactive chart: {title}" if title else "Interactive chart"


class _BookHtmlRenderer(MimetypeRenderer):
    """``text/html`` output without plotly.js: the site provides it once per page."""

    def to_mimebundle(self, fig_dict: dict[str, Any]) -> dict[str, str]:
        return {"text/html": figure_html(fig_dict)}


def use_book_style() -> None:
    """Make the book's template and renderer plotly's defaults (every chapter calls it first).

    Idempotent. Afterwards ``fig.show()`` (or a figure as the last expression of a cell)
    emits plotly's mimetype for live front ends plus static HTML for the site. Importing
    posenc changes no global state: a project that uses posenc keeps its own plotly settings
    unless it calls this.
    """
    pio.templates[TEMPLATE_NAME] = _template()
    pio.templates.default = f"plotly_white+{TEMPLATE_NAME}"
    pio.renderers[RENDERER] = _BookHtmlRenderer()
    pio.renderers.default = f"plotly_mimetype+{RENDERER}"


def describe(fig: go.Figure, *, alt: str, caption: str | None = None) -> go.Figure:
    """Attach alt text (and optionally a caption) to ``fig``; returns ``fig`` for chaining."""
    check_instance("fig", fig, go.Figure, what="a plotly Figure")
    check_text("alt", alt, empty=False)
    if caption is not None:
        check_text("caption", caption)
    meta = dict(fig.layout.meta) if isinstance(fig.layout.meta, dict) else {}
    meta["alt"] = alt
    if caption is not None:
        meta["caption"] = caption
    fig.update_layout(meta=meta)
    return fig


def new_figure(
    *,
    title: str,
    x_title: str,
    y_title: str,
    alt: str,
    caption: str | None = None,
    height: int = 420,
    width: int | None = None,
) -> go.Figure:
    """An empty figure in the book's style with labelled axes and alt text."""
    for name, text in (("title", title), ("x_title", x_title), ("y_title", y_title)):
        check_text(name, text)
    height = check_positive_int("height", height)
    if width is not None:
        width = check_positive_int("width", width)
    fig = go.Figure()
    fig.update_layout(title=dict(text=title), height=height, width=width)
    fig.update_xaxes(title_text=x_title)
    fig.update_yaxes(title_text=y_title)
    return describe(fig, alt=alt, caption=caption)


def heatmap(
    z: Any,
    *,
    title: str,
    x_title: str,
    y_title: str,
    alt: str,
    colorbar_title: str,
    caption: str | None = None,
    x: Sequence[Any] | np.ndarray | None = None,
    y: Sequence[Any] | np.ndarray | None = None,
    diverging: bool = True,
    zmin: float | None = None,
    zmax: float | None = None,
    height: int = 440,
) -> go.Figure:
    """A labelled heatmap (rows on the y axis, top row first) in the book's style.

    Args:
        z: 2-D array-like of shape ``(rows, columns)``.
        x, y: labels of the columns and rows (one per column / row of ``z``), or ``None``.
    """
    values = check_array("z", z)
    if values.ndim != 2:
        raise ValueError(f"z must be 2-D (rows, columns), got shape {tuple(values.shape)}")
    for name, labels, size in (("x", x, values.shape[1]), ("y", y, values.shape[0])):
        if labels is None:
            continue
        if isinstance(labels, str | bytes) or not hasattr(labels, "__len__"):
            raise TypeError(f"{name} must be a sequence of labels (one per {'column' if name == 'x' else 'row'} of "
                            f"z), got {labels!r}")
        if len(labels) != size:
            raise ValueError(f"{name} must have one label per {'column' if name == 'x' else 'row'} of z ({size}), "
                             f"got {len(labels)}")
    check_text("colorbar_title", colorbar_title)
    diverging = check_bool("diverging", diverging)
    zmin = None if zmin is None else check_real("zmin", zmin)
    zmax = None if zmax is None else check_real("zmax", zmax)
    fig = new_figure(title=title, x_title=x_title, y_title=y_title, alt=alt, caption=caption, height=height)
    fig.add_trace(
        go.Heatmap(
            z=z,
            x=x,
            y=y,
            colorscale=DIVERGING if diverging else SEQUENTIAL,
            zmid=0.0 if diverging and zmin is None and zmax is None else None,
            zmin=zmin,
            zmax=zmax,
            colorbar=dict(title=dict(text=colorbar_title)),
        )
    )
    fig.update_yaxes(autorange="reversed", showgrid=False)
    fig.update_xaxes(showgrid=False)
    return fig


def html_table(headers: Sequence[str], rows: Iterable[Sequence[object]], *, numeric: Sequence[bool] | None = None,
               caption: str | None = None, compact: bool = False) -> str:
    """A plain, accessible HTML table (cells are escaped; numeric columns right-aligned).

    Notebook outputs in Markdown are rendered as CommonMark, which has no tables, so the
    book's computed tables are emitted as HTML.

    Args:
        headers: column titles.
        rows: one sequence of cell values per row (converted with ``str``).
        numeric: per column, ``True`` to right-align it.
        caption: optional caption shown above the table.
        compact: smaller type, so that a wide table of numbers fits the page column.
    """
    headers = check_text_sequence("headers", headers, min_len=1, empty=True)
    if numeric is not None:
        if isinstance(numeric, str | bytes | bool) or not hasattr(numeric, "__iter__"):
            raise TypeError(f"numeric must be a sequence of True/False, one per column, got {numeric!r}")
        numeric = [check_bool(f"numeric[{i}]", flag) for i, flag in enumerate(numeric)]
    if caption is not None:
        check_text("caption", caption)
    compact = check_bool("compact", compact)
    if isinstance(rows, str | bytes) or not hasattr(rows, "__iter__"):
        raise TypeError(f"rows must be a sequence of rows (each a sequence of cells), got {rows!r}")
    align = list(numeric) if numeric is not None else [False] * len(headers)
    if len(align) != len(headers):
        raise ValueError(f"numeric must have one entry per column ({len(headers)}), got {len(align)}")

    def cell(tag: str, value: object, right: bool, attrs: str = "") -> str:
        style = ' style="text-align: right"' if right else ""
        return f"<{tag}{attrs}{style}>{html.escape(str(value))}</{tag}>"

    size = ' style="font-size: 0.85em"' if compact else ""
    parts = [f'<table class="table posenc-table"{size}>']
    if caption:
        parts.append(f"<caption>{html.escape(caption)}</caption>")
    header_cells = (cell("th", h, r, ' scope="col"') for h, r in zip(headers, align, strict=True))
    parts.append("<thead><tr>" + "".join(header_cells) + "</tr></thead><tbody>")
    for index, row in enumerate(rows):
        if isinstance(row, str | bytes) or not hasattr(row, "__iter__"):
            raise TypeError(f"rows[{index}] must be a sequence of cells, got {row!r} (a string is one cell: wrap it "
                            "in a list)")
        values = list(row)
        if len(values) != len(headers):
            raise ValueError(f"every row needs {len(headers)} cells (one per entry of headers), got {len(values)}: "
                             f"{values!r}")
        parts.append("<tr>" + "".join(cell("td", v, r) for v, r in zip(values, align, strict=True)) + "</tr>")
    parts.append("</tbody></table>")
    return "\n".join(parts)


def thin_indices(n: int, max_count: int) -> np.ndarray:
    """Every ``k``-th index ``0, k, 2k, ... < n``, with the smallest ``k`` that keeps at most ``max_count``.

    The one way the book thins the positions of a large table or matrix before drawing it.
    Equal steps keep every drawn diagonal of a similarity matrix at one offset (uneven
    steps would mix offsets into a diagonal). Values are picked, never averaged. Channels
    of a sinusoidal table need their sine/cosine pairs kept together instead: see
    :func:`posenc.sinusoidal_plots.pick_channels`.

    Returns:
        ``(m,)`` int array with ``m <= max_count`` (all of ``0 .. n-1`` if ``n <= max_count``).
    """
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 0:
        raise ValueError(f"n must be a non-negative int, got {n!r}")
    if isinstance(max_count, bool) or not isinstance(max_count, int | np.integer) or max_count < 1:
        raise ValueError(f"max_count must be a positive int, got {max_count!r}")
    stride = max(1, math.ceil(n / max_count))
    return np.arange(0, n, stride)
