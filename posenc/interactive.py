"""Explorers: one object, two worlds.

An :class:`Explorer` couples a plotly figure, an ``update`` function and a few
:class:`Control` s. Displaying it gives

* in a live kernel (JupyterLab 4, Notebook 7, VS Code): ipywidgets controls driving a
  ``plotly.graph_objects.FigureWidget``; every change calls ``update`` for the value the
  reader picked (any value in the control's live range, not only the grid);
* in the static HTML site: the same figure under HTML controls (buttons, a range slider or a
  drop-down list per control) whose frames were precomputed over the controls' grid values.
  A small site-wide script (``book/_ext/assets/posenc-explorer.js``) swaps frames in the
  browser: no kernel, no network.

Usage in a notebook::

    def update(d_model: int, seq_len: int) -> Frame:
        table = sinusoidal_table(seq_len, d_model).numpy()
        return Frame(traces={0: {"z": table}}, layout={"title.text": f"d_model={d_model}"})

    Explorer(
        figure=heatmap([[0]], ...),
        update=update,
        controls=[Control("d_model", [16, 64, 128], live=(2, 512, 2)), Control("seq_len", [32, 64])],
    )

Both render paths go through :meth:`Explorer.frame` and :meth:`Explorer.apply`, so
what a reader sees on the site is exactly what the live kernel computes.
"""

from __future__ import annotations

import html
import itertools
import json
import math
import numbers
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import plotly.graph_objects as go

from posenc.checks import check_callable, check_instance, check_mapping, check_real, check_text
from posenc.paper import MAX_PANELS, MIN_PANELS, Panel, alt_text, panel_labels, small_multiples, to_svg
from posenc.plots import figure_html, plain_text

__all__ = ["Control", "Frame", "Explorer"]

#: Static pages above this many precomputed frames get too heavy; split the explorer.
MAX_FRAMES = 400
#: Significant decimals kept for floats in the static page's JSON.
JSON_DECIMALS = 4
#: A control with text values is a row of buttons up to this many values and this many
#: characters of labels in all; above, a drop-down list (the static site only).
BUTTONS_MAX_VALUES = 6
BUTTONS_MAX_LABEL_CHARS = 70


@dataclass(frozen=True)
class Frame:
    """What one setting of the controls changes in the figure.

    Attributes:
        traces: trace index -> plotly properties, e.g. ``{0: {"z": array, "x": [...]}}``.
            Arrays may be numpy arrays, torch tensors or lists.
        layout: flat plotly layout paths -> values, e.g. ``{"title.text": "..."}``.
    """

    traces: Mapping[int, Mapping[str, Any]] = field(default_factory=dict)
    layout: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        check_mapping("traces", self.traces, what="a dict of trace index -> plotly properties")
        for index, props in self.traces.items():
            if not isinstance(index, int) or isinstance(index, bool):
                raise TypeError(f"traces keys must be trace indices (ints), got {index!r}")
            check_mapping(f"traces[{index}]", props, what="a dict of plotly properties")
        check_mapping("layout", self.layout, what="a dict of layout paths such as 'title.text' -> values")
        for path in self.layout:
            check_text("layout key", path, empty=False)


@dataclass(frozen=True)
class Control:
    """One input of an explorer.

    Attributes:
        name: keyword argument passed to ``update``.
        values: grid of values precomputed for the static page (numbers or strings).
        label: text shown next to the control (defaults to ``name``).
        default: starting value; must be one of ``values`` (defaults to the first).
        live: ``(min, max, step)`` of the live slider for a numeric control, so a reader
            with a kernel can pick any value in that range; ``None`` offers ``values`` only.
    """

    name: str
    values: Sequence[Any]
    label: str | None = None
    default: Any = None
    live: tuple[float, float, float] | None = None

    def __post_init__(self) -> None:
        if not check_text("name", self.name).isidentifier():
            raise ValueError(f"Control name must be a Python identifier, got {self.name!r}")
        if isinstance(self.values, str | bytes | Mapping) or not isinstance(self.values, Sequence):
            raise TypeError(f"Control {self.name!r}: values must be a sequence of grid values such as [16, 64], got "
                            f"{self.values!r}")
        if self.label is not None:
            check_text("label", self.label)
        if len(self.values) == 0:
            raise ValueError(f"Control {self.name!r}: values must not be empty")
        if len(set(map(repr, self.values))) != len(self.values):
            raise ValueError(f"Control {self.name!r}: values must be distinct, got {list(self.values)!r}")
        if self.default is not None and self.default not in self.values:
            raise ValueError(
                f"Control {self.name!r}: default {self.default!r} is not one of values {list(self.values)!r}"
            )
        if self.live is not None:
            if not self.numeric:
                raise ValueError(f"Control {self.name!r}: live=(min, max, step) needs numeric values")
            if not isinstance(self.live, tuple | list) or len(self.live) != 3:
                raise TypeError(f"Control {self.name!r}: live must be a (min, max, step) triple, got {self.live!r}")
            low, high, step = (check_real(f"live[{i}]", v) for i, v in enumerate(self.live))
            if not (low <= min(self.values) and max(self.values) <= high and step > 0):
                raise ValueError(
                    f"Control {self.name!r}: live range {self.live!r} must satisfy min <= every value <= max, step > 0"
                )

    @property
    def numeric(self) -> bool:
        return all(isinstance(v, numbers.Real) and not isinstance(v, bool) for v in self.values)

    @property
    def start(self) -> Any:
        return self.values[0] if self.default is None else self.default

    @property
    def text(self) -> str:
        return self.label or self.name


def _to_jsonable(value: Any) -> Any:
    """Arrays/tensors to (rounded) nested lists so frames serialise compactly."""
    if hasattr(value, "detach"):  # torch tensor
        value = value.detach().cpu().numpy()
    if isinstance(value, np.ndarray):
        if np.issubdtype(value.dtype, np.floating):
            rounded = np.round(value.astype(np.float64), JSON_DECIMALS)
            cells = rounded.astype(object)
            cells[~np.isfinite(rounded)] = None  # JSON has no NaN: plotly draws a gap
            return cells.tolist()
        return value.tolist()
    if isinstance(value, float):
        return round(value, JSON_DECIMALS) if math.isfinite(value) else None
    if isinstance(value, np.generic):
        return _to_jsonable(value.item())
    if isinstance(value, Mapping):
        return {str(k): _to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_to_jsonable(v) for v in value]
    return value


def _nest(flat: Mapping[str, Any]) -> dict[str, Any]:
    """``{"title.text": t}`` -> ``{"title": {"text": t}}`` for ``Figure.update_layout``."""
    nested: dict[str, Any] = {}
    for path, value in flat.items():
        node = nested
        *parents, leaf = path.split(".")
        for key in parents:
            node = node.setdefault(key, {})
        node[leaf] = value
    return nested


def _static_kind(control: Control) -> str:
    """How the static site draws a control: ``slider`` (numbers), ``buttons`` or ``select``."""
    if control.numeric:
        return "slider"
    label_chars = sum(len(str(v)) for v in control.values)
    few = len(control.values) <= BUTTONS_MAX_VALUES and label_chars <= BUTTONS_MAX_LABEL_CHARS
    return "buttons" if few else "select"


def _controls_html(controls: Sequence[Control], uid: str) -> str:
    """The static explorer's controls as plain HTML, at their default values.

    One ``<div class="posenc-control" data-control="i">`` per control, in order: a group of
    toggle buttons (``aria-pressed``), a range input over the value indices with an
    ``<output>`` showing the value, or a ``<select>``. They wrap onto more lines in a narrow
    column (``posenc.css``); ``posenc-explorer.js`` makes them drive the figure.
    """
    rows = []
    for index, control in enumerate(controls):
        kind = _static_kind(control)
        field_id = f"{uid}-control-{index}"
        labels = [html.escape(str(v)) for v in control.values]
        active = list(control.values).index(control.start)
        body, attributes = _CONTROL_HTML[kind](html.escape(control.text), labels, active, field_id)
        rows.append(f'<div class="posenc-control posenc-control-{kind}" data-control="{index}"{attributes}>{body}</div>')
    return f'<div class="posenc-controls">{"".join(rows)}</div>'


def _buttons_html(label: str, labels: list[str], active: int, field_id: str) -> tuple[str, str]:
    """A labelled group of toggle buttons; returns (inner HTML, attributes of the group)."""
    buttons = "".join(
        f'<button type="button" class="posenc-choice" data-index="{i}" aria-pressed="{str(i == active).lower()}">'
        f"{text}</button>"
        for i, text in enumerate(labels)
    )
    body = (
        f'<span class="posenc-control-label" id="{field_id}-label">{label}</span>'
        f'<span class="posenc-choices">{buttons}</span>'
    )
    return body, f' role="group" aria-labelledby="{field_id}-label"'


def _slider_html(label: str, labels: list[str], active: int, field_id: str) -> tuple[str, str]:
    """A range input over the value indices, its label and an ``<output>`` with the value."""
    body = (
        f'<label class="posenc-control-label" for="{field_id}">{label}</label>'
        f'<output class="posenc-value" for="{field_id}">{labels[active]}</output>'
        f'<input type="range" id="{field_id}" min="0" max="{len(labels) - 1}" step="1" value="{active}" '
        f'aria-valuetext="{labels[active]}">'
    )
    return body, ""


def _select_html(label: str, labels: list[str], active: int, field_id: str) -> tuple[str, str]:
    """A labelled drop-down list, for a control with many or long values."""
    options = "".join(
        f'<option value="{i}"{" selected" if i == active else ""}>{text}</option>' for i, text in enumerate(labels)
    )
    return f'<label class="posenc-control-label" for="{field_id}">{label}</label><select id="{field_id}">{options}</select>', ""


_CONTROL_HTML = {"buttons": _buttons_html, "slider": _slider_html, "select": _select_html}


class Explorer:
    """An interactive figure that works live (ipywidgets) and statically (HTML controls).

    Args:
        figure: the figure skeleton: its traces (in order) are what ``Frame.traces`` indexes.
        update: called with one keyword per control; returns the :class:`Frame` to apply.
        controls: the inputs, in display order.
        caption: optional text shown under the figure in both worlds.
        title: what the explorer shows, in a few words (the printed figure's title and its entry in
            the PDF's list of figures); defaults to the first line of ``figure``'s own title.
        print_settings: the 4 to 6 settings printed side by side on paper (:mod:`posenc.paper`),
            each a mapping of control names to grid values (a control left out takes its
            default); chosen by :meth:`default_print_settings` when ``None``.
    """

    def __init__(
        self,
        figure: go.Figure,
        update: Callable[..., Frame],
        controls: Sequence[Control],
        *,
        caption: str | None = None,
        title: str | None = None,
        print_settings: Sequence[Mapping[str, Any]] | None = None,
    ) -> None:
        check_instance("figure", figure, go.Figure, what="a plotly Figure (the explorer's skeleton)")
        check_callable("update", update)
        if isinstance(controls, str | bytes) or not isinstance(controls, Sequence):
            raise TypeError(f"controls must be a sequence of Control, got {controls!r}")
        if not controls:
            raise ValueError("controls must hold at least one Control: an Explorer needs one")
        for index, control in enumerate(controls):
            check_instance(f"controls[{index}]", control, Control)
        if caption is not None:
            check_text("caption", caption)
        if title is not None:
            check_text("title", title)
        names = [c.name for c in controls]
        if len(set(names)) != len(names):
            raise ValueError(f"control names must be distinct, got {names}")
        n_frames = math.prod(len(c.values) for c in controls)
        if n_frames > MAX_FRAMES:
            raise ValueError(
                f"the static grid has {n_frames} frames (product of the controls' value counts); "
                f"at most {MAX_FRAMES} are allowed: use fewer grid values and a live=(min, max, step) range"
            )
        self.figure = go.Figure(figure)
        self.update = update
        self.controls = tuple(controls)
        self.caption = caption
        own_title = plain_text(self.figure.layout.title.text).split("\n")[0] if self.figure.layout.title.text else ""
        self.title = title or own_title
        self.print_settings = (self.default_print_settings() if print_settings is None
                               else self._check_print_settings(print_settings))
        self._widget: Any = None
        self._figure_widget: Any = None
        self.apply(self.frame(**{c.name: c.start for c in self.controls}), self.figure)

    # -- the one update path shared by both worlds ---------------------------------
    def frame(self, **values: Any) -> Frame:
        """Compute the frame for one setting of the controls."""
        frame = self.update(**values)
        if not isinstance(frame, Frame):
            raise TypeError(f"update must return a posenc.interactive.Frame, got {type(frame).__name__}")
        for index in frame.traces:
            if not 0 <= index < len(self.figure.data):
                raise IndexError(f"Frame refers to trace {index}, but the figure has {len(self.figure.data)} traces")
        return frame

    @staticmethod
    def apply(frame: Frame, figure: go.Figure) -> None:
        """Apply ``frame`` to ``figure`` (a Figure or FigureWidget) in one batch."""
        check_instance("frame", frame, Frame, what="a posenc.interactive.Frame")
        if not hasattr(figure, "batch_update") or not hasattr(figure, "data"):
            raise TypeError(f"figure must be a plotly Figure or FigureWidget, got {type(figure).__name__}")
        with figure.batch_update():
            for index, props in frame.traces.items():
                figure.data[index].update(dict(props))
            if frame.layout:
                figure.update_layout(_nest(frame.layout))

    # -- paper ---------------------------------------------------------------------
    def _grid_size(self) -> int:
        return math.prod(len(c.values) for c in self.controls)

    def _check_print_settings(self, settings: Sequence[Mapping[str, Any]]) -> tuple[dict[str, Any], ...]:
        """Each setting completed with the defaults, checked against the controls' grids."""
        if isinstance(settings, str | bytes | Mapping) or not isinstance(settings, Sequence):
            raise TypeError(f"print_settings must be a list of settings (dicts of control name -> value), "
                            f"got {settings!r}")
        names = [c.name for c in self.controls]
        complete = []
        for index, setting in enumerate(settings):
            check_mapping(f"print_settings[{index}]", setting, what="a setting (a dict of control name -> value)")
            unknown = sorted(set(setting) - set(names))
            if unknown:
                raise ValueError(f"print_settings: setting {dict(setting)!r} names no control {unknown}; "
                                 f"controls: {names}")
            values = {c.name: setting.get(c.name, c.start) for c in self.controls}
            for control in self.controls:
                if values[control.name] not in control.values:
                    raise ValueError(f"print_settings: {dict(setting)!r}: {control.name}={values[control.name]!r} is "
                                     f"not one of the grid values {list(control.values)!r} (paper shows grid frames)")
            complete.append(values)
        if len({repr(sorted(v.items())) for v in complete}) != len(complete):
            raise ValueError(f"print_settings must be distinct, got {list(settings)!r}")
        smallest = min(MIN_PANELS, self._grid_size())
        if not smallest <= len(complete) <= MAX_PANELS:
            raise ValueError(f"print_settings: an explorer prints {smallest} to {MAX_PANELS} settings, "
                             f"got {len(complete)}")
        return tuple(complete)

    def default_print_settings(self) -> tuple[dict[str, Any], ...]:
        """The settings printed when the explorer's builder chose none.

        Every combination of the grid when there are at most six; otherwise the default setting,
        then the other values of the first control, then of the second, ... (the rest at their
        defaults), spread evenly over each control's grid, up to six, in grid order.
        """
        if self._grid_size() <= MAX_PANELS:
            combos = itertools.product(*(c.values for c in self.controls))
            return tuple(dict(zip([c.name for c in self.controls], combo, strict=True)) for combo in combos)
        start = {c.name: c.start for c in self.controls}
        chosen = [start]
        for control in self.controls:
            room = MAX_PANELS - len(chosen)
            others = [v for v in control.values if v != control.start]
            if room <= 0 or not others:
                continue
            picks = np.unique(np.linspace(0, len(others) - 1, min(room, len(others))).round().astype(int))
            chosen += [dict(start, **{control.name: others[i]}) for i in picks]

        def grid_order(setting: Mapping[str, Any]) -> tuple[int, ...]:
            return tuple(list(c.values).index(setting[c.name]) for c in self.controls)

        return tuple(sorted(chosen, key=grid_order))

    def print_panels(self) -> list[Panel]:
        """The printed settings as panels: the figure with each setting's frame applied (the same
        :meth:`frame` the widget and the static controls use)."""
        labels = panel_labels(self.print_settings, {c.name: c.text for c in self.controls})
        panels = []
        for label, setting in zip(labels, self.print_settings, strict=True):
            figure = go.Figure(self.figure)
            self.apply(self.frame(**setting), figure)
            panels.append(Panel(label=label, figure=figure))
        return panels

    def print_html(self, uid: str) -> str:
        """The explorer on paper: its settings as small multiples (SVG), hidden on screen and shown
        in print by the site's stylesheet (``posenc-print.css``)."""
        check_text("uid", uid, empty=False)
        panels = self.print_panels()
        svg = to_svg(small_multiples(panels), salt=uid)
        meta = self.figure.layout.meta if isinstance(self.figure.layout.meta, dict) else {}
        alt = alt_text(str(meta.get("alt", "")) or self.title or "Explorer.", panels)
        return (f'<figure class="posenc-print-figure" id="{uid}-print" role="img" '
                f'aria-label="{html.escape(alt, quote=True)}" data-title="{html.escape(self.title, quote=True)}" '
                f'data-panels="{len(panels)}" data-grid="{self._grid_size()}">{svg}</figure>')

    # -- static world --------------------------------------------------------------
    def static_figure(self) -> tuple[go.Figure, list[Any]]:
        """The figure at the default setting, and the precomputed frames in grid order.

        Frame ``k`` belongs to the combination of control indices whose mixed-radix
        number (first control most significant) is ``k``. The controls are not part of the
        figure: :meth:`static_html` writes them as HTML, which wraps onto more lines in a
        narrow column and works with touch and keyboard.
        """
        fig = go.Figure(self.figure)
        frames = []
        for combo in itertools.product(*(c.values for c in self.controls)):
            frame = self.frame(**dict(zip([c.name for c in self.controls], combo, strict=True)))
            frames.append({"traces": _to_jsonable(dict(frame.traces)), "layout": _to_jsonable(dict(frame.layout))})
        return fig, frames

    def static_html(self) -> str:
        """HTML of the static explorer for the site (needs plotly.js and posenc-explorer.js).

        The controls come first (:func:`_controls_html`), then the figure, the frames as JSON
        and the caption. The site's script swaps frames when a control changes.
        """
        fig, frames = self.static_figure()
        uid = f"posenc-explorer-{uuid.uuid4().hex[:12]}"
        spec = {
            "figure": f"{uid}-figure",
            "controls": [
                {"name": c.name, "kind": _static_kind(c), "size": len(c.values), "labels": [str(v) for v in c.values]}
                for c in self.controls
            ],
            "frames": frames,
        }
        payload = json.dumps(spec, separators=(",", ":"), allow_nan=False).replace("</", "<\\/")
        parts = [
            f'<div class="posenc-explorer" id="{uid}" data-spec="{uid}-spec">',
            _controls_html(self.controls, uid),
            figure_html(fig, div_id=f"{uid}-figure"),
            f'<script type="application/json" id="{uid}-spec">{payload}</script>',
        ]
        if self.caption:
            parts.append(f'<p class="posenc-explorer-caption">{html.escape(self.caption)}</p>')
        parts.append(self.print_html(uid))
        parts.append("</div>")
        return "\n".join(parts)

    # -- live world ----------------------------------------------------------------
    def widget(self) -> Any:
        """The ipywidgets view (built once): controls above a FigureWidget."""
        if self._widget is not None:
            return self._widget
        import ipywidgets as widgets

        self._figure_widget = go.FigureWidget(self.figure)
        inputs = [self._make_input(c, widgets) for c in self.controls]

        def on_change(_change: Any) -> None:
            values = {c.name: w.value for c, w in zip(self.controls, inputs, strict=True)}
            self.apply(self.frame(**values), self._figure_widget)

        for w in inputs:
            w.observe(on_change, names="value")
        children: list[Any] = [widgets.HBox(inputs, layout=widgets.Layout(flex_flow="row wrap")), self._figure_widget]
        if self.caption:
            children.append(widgets.HTML(f"<p>{html.escape(self.caption)}</p>"))
        self._widget = widgets.VBox(children)
        return self._widget

    @staticmethod
    def _make_input(control: Control, widgets: Any) -> Any:
        style = {"description_width": "initial"}
        if control.numeric and control.live is not None:
            low, high, step = control.live
            integral = all(float(x).is_integer() for x in (low, high, step, *control.values))
            cls = widgets.IntSlider if integral else widgets.FloatSlider
            cast = int if integral else float
            return cls(
                value=cast(control.start), min=cast(low), max=cast(high), step=cast(step),
                description=control.text, continuous_update=False, style=style,
            )
        if control.numeric:
            return widgets.SelectionSlider(
                options=list(control.values), value=control.start, description=control.text,
                continuous_update=False, style=style,
            )
        return widgets.ToggleButtons(
            options=[(str(v), v) for v in control.values], value=control.start, description=control.text, style=style
        )

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        """Widget view for Jupyter front ends and static HTML for the site builder."""
        bundle: dict[str, Any] = {
            "text/plain": f"<Explorer: {', '.join(c.text for c in self.controls)}>",
            "text/html": self.static_html(),
        }
        widget_bundle = self.widget()._repr_mimebundle_()
        if isinstance(widget_bundle, tuple):  # (data, metadata) from some ipywidgets versions
            widget_bundle = widget_bundle[0]
        if widget_bundle:
            bundle.update({k: v for k, v in widget_bundle.items() if k != "text/plain"})
        return bundle
