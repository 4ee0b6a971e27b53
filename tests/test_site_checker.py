"""Tests of the site checker itself (``tests/support/site.py``), on a tiny site generated
here: one clean page, and copies of it broken on purpose (an external script, a console
error, raw TeX, an explorer that does not respond, ...). The checker must pass the clean
page and report each defect, so a green site gate means something."""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.site import (
    AXE_PACKAGE,
    DESKTOP,
    PHONE_DARK,
    VIEWPORTS,
    PageReport,
    SiteChecker,
    Viewport,
    _axes_moved,
    artifact_name,
    axe_js_path,
    axe_source,
    axe_version,
    check_links,
    missing_chromium,
    missing_python_tools,
    site_checker,
)

from posenc.interactive import Control, Explorer, Frame
from posenc.plots import figure_html, new_figure
from posenc_site import ASSETS, mathjax_dir, plotly_js_path  # book/_ext/posenc_site.py (see conftest)

HEAD = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="stylesheet" href="vendor/posenc.css">
<link rel="stylesheet" href="vendor/posenc-print.css">
{plotly_js}
<script defer src="vendor/mathjax/tex-chtml.js"></script>
{extra_head}
</head><body><main><h1>{title}</h1>
<p>Inline maths <span class="math notranslate nohighlight">\\(x^2 + y^2\\)</span> and a display:</p>
<div class="math notranslate nohighlight">\\[\\sum_{{i=1}}^{{n}} i = \\frac{{n(n+1)}}{{2}}\\]</div>
{body}
</main></body></html>
"""


def _line_figure(title: str) -> object:
    fig = new_figure(title=title, x_title="position (index)", y_title="value (unitless)", alt=f"Line chart: {title}")
    fig.add_scatter(x=[0, 1, 2, 3], y=[0.0, 0.0, 0.0, 0.0], mode="lines+markers", name="k")
    return fig


def _explorer(control: Control, *, responsive: bool = True) -> str:
    """A small static explorer; ``responsive=False`` makes every frame identical."""

    def update(**values: object) -> Frame:
        value = list(control.values).index(values[control.name]) + 1 if responsive else 1
        return Frame(traces={0: {"y": [value * i for i in range(4)]}}, layout={"title.text": f"slope {value}"})

    return Explorer(_line_figure("slope explorer"), update, [control]).static_html()


def _page(title: str, *, body: str = "", extra_head: str = "", explorer_js: bool = True, loader: bool = True) -> str:
    """A page like the site's: the figure scripts only where there is a figure.

    ``loader=False`` loads plotly.js the old way, render-blocking, instead of through
    posenc-plotly.js (no fitting to the screen, no first paint before it)."""
    scripts = []
    if "plotly-graph-div" in body:
        scripts.append('<script src="vendor/posenc-plotly.js"></script>' if loader
                       else '<script src="vendor/plotly.min.js"></script>')
        if explorer_js:
            scripts.append('<script defer src="vendor/posenc-explorer.js"></script>')
    return HEAD.format(title=title, body=body, extra_head=extra_head, plotly_js="\n".join(scripts))


def _long_figure(title: str, **layout: object) -> str:
    fig = _line_figure(title)
    fig.update_layout(**layout)
    return figure_html(fig)


#: An output panel whose table caption is as faint as myst-nb's dark-mode panel made it (1.71:1).
DARK_PANEL = """<style>@media (prefers-color-scheme: dark) {
  body { background: #14181e; color: #ced6dd; } .cell_output .text_html { background: #ced6dd; color: #222832; }
  .cell_output caption { color: #9ca4af; } }</style>
<div class="cell_output"><div class="text_html"><table><caption>Parameters of each model</caption>
<tr><td>none</td><td>102,160</td></tr></table></div></div>"""


SLIDER = Control("slope", [1, 2, 3], label="slope")
BUTTONS = Control("shape", ["flat", "steep"], label="shape")
DROPDOWN = Control("word", [f"option number {i}" for i in range(8)], label="word")
CLEAN_BODY = "\n".join(
    [
        figure_html(_line_figure("a plain figure")),
        _explorer(SLIDER),
        _explorer(BUTTONS),
        _explorer(DROPDOWN),
        # Collapsed, as in a hidden solution: the checker has to open it before clicking.
        f"<details><summary>Show the last explorer</summary>{_explorer(SLIDER)}</details>",
        # A title too long for a phone (or for this column): it has to wrap, not be cut off.
        _long_figure("a title of many words " * 6),
        '<div class="cell_output"><table><caption>A caption to read</caption><tr><td>1</td></tr></table></div>',
        # A hidden cell that fades in for a minute once opened, as sphinx-togglebutton's blocks fade
        # in (0.3 s, longer on a busy page): the contrast check reads the colours once the page is
        # still, not a frame of the fade.
        "<style>@keyframes fade { from { opacity: 0.1; } to { opacity: 1; } }"
        " details[open] > .cell_output { animation: fade 60s; }</style>"
        '<details><summary>Show the output</summary><div class="cell_output"><p>text that fades in</p></div></details>',
    ]
)

#: page -> (the check that must report it, a fragment of the expected message, the viewport)
BROKEN: dict[str, tuple[str, str, Viewport]] = {
    "external_script.html": ("network", "https://cdn.example.org/lib.js", DESKTOP),
    "external_image.html": ("network", "https://images.example.org/photo.png", DESKTOP),
    "console_error.html": ("console", "deliberate console error", DESKTOP),
    "uncaught_exception.html": ("console", "uncaught exception", DESKTOP),
    "missing_local_file.html": ("local requests", "HTTP 404", DESKTOP),
    "no_mathjax.html": ("math", "maths not typeset", DESKTOP),
    "raw_dollars.html": ("math", "$$E = mc^2$$", DESKTOP),
    "unplotted_figure.html": ("figures", "Plotly never drew it", DESKTOP),
    "explorer_without_script.html": ("explorers", "never wired", DESKTOP),
    "explorer_that_never_changes.html": ("explorers", "none of its values changes the figure", DESKTOP),
    "explorer_update_ignored.html": ("explorers", "but the traces and layout did not", DESKTOP),
    "axe_violation.html": ("axe", "button-name", DESKTOP),
    "figure_too_wide.html": ("overflow", "reaches past the text column", DESKTOP),
    "title_cut_off.html": ("overflow", "is cut off at its right edge", DESKTOP),
    "page_too_wide.html": ("overflow", "the page scrolls sideways", PHONE_DARK),
    "control_off_screen.html": ("explorers", "lies outside the 390 px window", PHONE_DARK),
    "faint_output.html": ("contrast", "'faint output text'", DESKTOP),
    # axe-core's colour contrast is off (our check covers it): a faint paragraph of the text itself.
    "faint_text.html": ("contrast", "'faint body text'", DESKTOP),
    "dark_mode_caption.html": ("contrast", "1.71:1", PHONE_DARK),
    "light_theme_only.html": ("theme", "shows the 'light' theme, not 'dark'", PHONE_DARK),
    "drag_zooms.html": ("touch", "a drag zooms or pans it", PHONE_DARK),
    "plotly_blocks_paint.html": ("paint", "blocks the first paint", DESKTOP),
}


def _write_site(root: Path) -> None:
    vendor = root / "vendor"
    vendor.mkdir(parents=True)
    (vendor / "plotly.min.js").symlink_to(plotly_js_path())
    (vendor / "mathjax").symlink_to(mathjax_dir(), target_is_directory=True)
    for asset in ASSETS.iterdir():
        shutil.copy2(asset, vendor / asset.name)
    figure = figure_html(_line_figure("a figure that a drag must not zoom on a phone"))
    pages = {
        "clean.html": _page("A clean page", body=CLEAN_BODY),
        "external_script.html": _page("External script", extra_head='<script src="https://cdn.example.org/lib.js"></script>'),
        "external_image.html": _page("External image", body='<img src="https://images.example.org/photo.png" alt="a photo">'),
        "console_error.html": _page("Console error", body='<script>console.error("deliberate console error")</script>'),
        "uncaught_exception.html": _page("Uncaught exception", body="<script>noSuchFunction();</script>"),
        "missing_local_file.html": _page("Missing file", body='<img src="missing.png" alt="missing picture">'),
        "no_mathjax.html": _page("No MathJax").replace('<script defer src="vendor/mathjax/tex-chtml.js"></script>', ""),
        "raw_dollars.html": _page("Raw dollars", body="<p>Left for MathJax: $$E = mc^2$$</p>").replace(
            '<script defer src="vendor/mathjax/tex-chtml.js"></script>', ""
        ),
        "unplotted_figure.html": _page(
            "Unplotted figure", body='<div class="plotly-graph-div" id="never-drawn" style="height:200px"></div>'
        ),
        "explorer_without_script.html": _page("Dead explorer", body=_explorer(SLIDER), explorer_js=False),
        "explorer_that_never_changes.html": _page("Frozen explorer", body=_explorer(BUTTONS, responsive=False)),
        "axe_violation.html": _page("Unnamed button", body="<button></button>"),
        "explorer_update_ignored.html": _page("Ignored update", body=_explorer(BUTTONS)).replace(
            '<script defer src="vendor/posenc-explorer.js">',
            "<script>window.posencFigures.update = () => Promise.resolve();</script>"
            '<script defer src="vendor/posenc-explorer.js">',
        ),
        "figure_too_wide.html": _page("Wide figure", body=_long_figure("wide", width=1600)),
        "title_cut_off.html": _page("Clipped title", body=_long_figure("W" * 160)),
        "page_too_wide.html": _page("Long word", body=f"<p><code style='white-space: nowrap'>{'x' * 90}</code></p>"),
        "control_off_screen.html": _page(
            "Control off screen", body=_explorer(BUTTONS), extra_head="<style>.posenc-controls { margin-left: 420px; }</style>"
        ),
        "faint_output.html": _page(
            "Faint output", body='<div class="cell_output"><p style="color: #aaa">faint output text</p></div>'
        ),
        "dark_mode_caption.html": _page("Dark mode caption", body=DARK_PANEL),
        "faint_text.html": _page(
            "Faint text", body='<main class="bd-main"><p style="color: #9a9a9a">faint body text</p></main>'
        ),
        "light_theme_only.html": _page(
            "Light theme only", body='<button class="theme-switch-button" aria-label="Dark mode">theme</button>'
        ).replace('<html lang="en">', '<html lang="en" data-theme="light">'),
        "drag_zooms.html": _page("Drag zooms", body=figure + "<p>text</p>" * 80, loader=False),
        "plotly_blocks_paint.html": _page("Blocking plotly.js", body=figure, loader=False),
    }
    for name, text in pages.items():
        (root / name).write_text(text, encoding="utf-8")
    # A theme stylesheet that @imports its neighbour, as Sphinx themes do, on a page one folder
    # down: "../basic.css" is relative to the stylesheet, not to the page.
    (vendor / "styles").mkdir()
    (vendor / "basic.css").write_text("main { margin: 0 auto; }\n", encoding="utf-8")
    (vendor / "styles" / "theme.css").write_text('@import "../basic.css";\nh1 { color: #222; }\n', encoding="utf-8")
    (root / "sub").mkdir()
    (root / "sub" / "imports.html").write_text(
        _page("Imported stylesheet", extra_head='<link rel="stylesheet" href="../vendor/styles/theme.css">')
        .replace('src="vendor/', 'src="../vendor/').replace('href="vendor/', 'href="../vendor/'),
        encoding="utf-8",
    )


@pytest.fixture(scope="module")
def fixture_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("fixture-site")
    _write_site(root)
    return root


@pytest.fixture(scope="module")
def checker(fixture_site: Path) -> Iterator[SiteChecker]:
    broken = missing_python_tools()
    if broken:
        pytest.fail(broken, pytrace=False)
    reason = missing_chromium()
    if reason:
        pytest.skip(reason)
    # The fixture's small figures draw in well under a second: the page whose figure never draws
    # waits 3 s for it, not the book's 15.
    with site_checker(fixture_site, artifacts=fixture_site / "artifacts", render_timeout_ms=3_000) as checker:
        yield checker


@pytest.mark.browser
@pytest.mark.parametrize("viewport", VIEWPORTS, ids=lambda viewport: viewport.name)
def test_checker_passes_the_clean_page(checker: SiteChecker, viewport: Viewport) -> None:
    report = checker.report("clean.html", viewport)
    assert report.problems() == {}, report.problems()
    assert report.math["typeset"] == 2 and report.math["elements"] == 2, report.math
    assert len(report.figures) == 6 and all(fig["ok"] for fig in report.figures), report.figures
    controls = [explorer["control"] for explorer in report.explorers]
    assert all(explorer["ok"] for explorer in report.explorers), report.explorers
    assert [c.split(" ")[0] for c in controls] == ["slider", "buttons", "drop-down", "slider"], controls
    assert {explorer["action"] for explorer in report.explorers} == {"tap" if viewport.touch else "click"}
    assert report.contrast["checked"] >= 2 and not report.overflow, (report.contrast, report.overflow)
    assert report.paint["plotly_requested"] >= report.paint["first_paint"] > 0, report.paint
    assert report.axe_ran and report.screenshots == []


@pytest.mark.browser
@pytest.mark.parametrize("page", sorted(BROKEN))
def test_checker_reports_a_page_broken_on_purpose(checker: SiteChecker, page: str) -> None:
    check, expected, viewport = BROKEN[page]
    report: PageReport = checker.report(page, viewport)
    problems = report.problems()
    assert check in problems, f"{page} ({viewport.name}): the {check!r} check saw nothing wrong; all findings: {problems}"
    assert any(expected in message for message in problems[check]), problems[check]
    suffix = "" if viewport is DESKTOP else f"--{viewport.name}"
    screenshot = checker.artifacts / f"{artifact_name(page)}{suffix}.png"
    assert screenshot.is_file() and screenshot.stat().st_size > 1000, "a failing page must be screenshotted"


@pytest.mark.browser
def test_dark_mode_caption_passes_in_light_mode(checker: SiteChecker) -> None:
    """The contrast check reads the colours the page shows: the same caption is fine in light mode."""
    assert "contrast" not in checker.report("dark_mode_caption.html", DESKTOP).problems()


@pytest.mark.browser
def test_a_stylesheet_import_is_resolved_like_a_browser_does(checker: SiteChecker) -> None:
    """The page itself loads ``vendor/basic.css`` fine. axe-core 4.12.1's stylesheet preload asks
    for ``/basic.css`` (it resolves the ``@import`` against the page): that request is the
    checker's, not the page's, so it must not fail the page; what axe finds is still reported."""
    report = checker.report("sub/imports.html")
    assert report.problems() == {}, report.problems()
    assert report.axe_ran and report.math["typeset"] == 2, report.math
    assert all("basic.css" in request for request in report.axe_requests), report.axe_requests


@pytest.mark.browser
def test_blocked_requests_never_reach_the_network(checker: SiteChecker) -> None:
    """The external script is recorded and aborted by the browser, not fetched."""
    report = checker.report("external_script.html")
    assert report.external_requests == ["https://cdn.example.org/lib.js"]
    assert any("ERR_BLOCKED_BY_CLIENT" in error for error in report.console_errors), report.console_errors


ROOT = Path(__file__).resolve().parents[1]


def test_axe_core_comes_from_a_pinned_python_package() -> None:
    """The accessibility engine is ``axe.min.js`` from the wheel of a package pinned exactly in
    requirements.txt: no npm, no CDN, no vendored copy in the repository."""
    distribution = AXE_PACKAGE.replace("_", "-")
    requirements = (ROOT / "requirements.txt").read_text()
    assert re.search(rf"^{re.escape(distribution)}==\S+", requirements, flags=re.MULTILINE), (
        f"{distribution} is not pinned exactly in requirements.txt"
    )
    path = axe_js_path()
    assert path is not None, missing_python_tools()
    assert ".venv" in path.parts or "site-packages" in path.parts, f"axe.min.js should come from the venv, not {path}"
    source = axe_source()
    assert len(source) > 100_000 and "runRules" in source, f"{path} does not look like axe-core"
    version = axe_version(source)
    assert version is not None, "axe.min.js has no '/*! axe vX.Y.Z' banner"
    assert f"axe-core {version}" in requirements, (
        f"requirements.txt should say which axe-core the pinned package ships ({version})"
    )


# -- the link checker (no browser) -----------------------------------------------------
@pytest.fixture()
def linked_site(tmp_path: Path) -> Path:
    (tmp_path / "sub").mkdir()
    (tmp_path / "target.html").write_text('<html><body><h1 id="here">t</h1><a name="old-style"></a></body></html>')
    (tmp_path / "sub" / "index.html").write_text("<html><body>folder index</body></html>")
    (tmp_path / "style.css").write_text("body {}")
    (tmp_path / "page.html").write_text(
        """<html><head><link rel="stylesheet" href="style.css"><link rel="stylesheet" href="gone.css"></head><body>
        <p id="top">x</p>
        <a href="#top">ok: same page</a> <a href="#nowhere">bad: same page</a>
        <a href="target.html#here">ok</a> <a href="target.html#old-style">ok: a name</a>
        <a href="target.html#missing">bad anchor</a> <a href="missing.html">bad file</a>
        <a href="sub/">ok: folder</a> <a href="../outside.html">bad: outside</a>
        <a href="https://example.org/x.html#y">external: ignored</a> <a href="mailto:a@b.c">ignored</a>
        <img src="img/none.png" alt="bad image"> <script src="target.html?v=3"></script>
        </body></html>"""
    )
    return tmp_path


def test_link_checker_reports_each_broken_link(linked_site: Path) -> None:
    problems = check_links(linked_site, "page.html")
    expected = ["'gone.css'", "'#nowhere'", "'target.html#missing'", "'missing.html'", "'../outside.html'",
                "'img/none.png'"]
    assert len(problems) == len(expected), problems
    for fragment, problem in zip(expected, problems, strict=True):
        assert fragment in problem, (fragment, problem)


def test_link_checker_passes_a_clean_page(linked_site: Path) -> None:
    assert check_links(linked_site, "target.html") == []
    assert check_links(linked_site, "absent.html") == [f"absent.html: page not found in {linked_site}"]


# A 1 x 2 grid: a line on the left with its legend beside the plot, a heatmap with a colour bar
# and a second legend on the right, and make_subplots-style titles above each subplot.
_COMPACT_CASE = """(width) => {
  const layout = {
    height: 400, margin: {t: 60, b: 50, l: 60, r: 80},
    xaxis: {domain: [0, 0.45], anchor: 'y'}, yaxis: {domain: [0, 1], anchor: 'x'},
    xaxis2: {domain: [0.55, 1], anchor: 'y2'}, yaxis2: {domain: [0, 1], anchor: 'x2', matches: 'y', showticklabels: false},
    legend: {x: 1.02, y: 1}, legend2: {x: 1.02, y: 0.4},
    annotations: [
      {text: 'left', x: 0.225, y: 1, xref: 'paper', yref: 'paper', xanchor: 'center', yanchor: 'bottom', showarrow: false},
      {text: 'right', x: 0.775, y: 1, xref: 'paper', yref: 'paper', xanchor: 'center', yanchor: 'bottom', showarrow: false},
    ],
  };
  const data = [
    {type: 'scatter', x: [0, 1], y: [0, 1], name: 'a line'},
    {type: 'scatter', x: [0, 1], y: [1, 0], name: 'another line', xaxis: 'x2', yaxis: 'y2', legend: 'legend2'},
    {type: 'heatmap', z: [[0, 1], [1, 0]], xaxis: 'x2', yaxis: 'y2', colorbar: {title: {text: 'value'}}},
  ];
  const originals = data.map(window.posencFigures.traceOriginals);
  const result = window.posencFigures.compact(layout, data, width, originals);
  return {layout: result.layout, traces: result.traces, before: layout};
}"""


@pytest.mark.browser
def test_compact_layout_stacks_subplots_and_puts_legends_under_the_plot(checker: SiteChecker) -> None:
    """posenc-plotly.js's narrow-column layout, on a made-up figure (the clean page loads the script)."""
    page = checker.context(PHONE_DARK).new_page()
    try:
        page.goto(checker.base_url + "clean.html", wait_until="load")
        result = page.evaluate(_COMPACT_CASE, 358)
    finally:
        page.close()
    layout, traces, before = result["layout"], result["traces"], result["before"]
    assert before["xaxis"]["domain"] == [0, 0.45] and "legend2" in before, "compact must not change its input"
    assert layout["xaxis"]["domain"] == [0, 1] and layout["xaxis2"]["domain"] == [0, 1]
    top, bottom = layout["yaxis"]["domain"], layout["yaxis2"]["domain"]
    assert top[1] == 1 and bottom[0] == 0 and bottom[1] < top[0], (top, bottom)  # stacked, not overlapping
    assert layout["yaxis2"]["showticklabels"] is True  # a shared axis shows its labels in its own row
    titles = {note["text"]: (note["x"], note["y"]) for note in layout["annotations"]}
    assert titles["left"] == pytest.approx((0.5, top[1])) and titles["right"] == pytest.approx((0.5, bottom[1]))
    assert layout["legend"]["orientation"] == "h" and layout["legend"]["yref"] == "container"
    assert "legend2" not in layout and traces[1] == {"legend": "legend"}
    colorbar = traces[2]["colorbar"]
    assert bottom[0] < colorbar["y"] < bottom[1] and colorbar["len"] == pytest.approx(bottom[1] - bottom[0])
    assert colorbar["title"]["side"] == "right" and colorbar["thickness"] <= 14
    assert layout["height"] > 2 * 260 and layout["margin"]["l"] <= 56


@pytest.mark.browser
def test_a_wide_column_keeps_the_figure_as_given(checker: SiteChecker) -> None:
    """At 1280 px nothing is stacked or moved, and a drag still zooms (no touch screen)."""
    page = checker.context(DESKTOP).new_page()
    try:
        page.goto(checker.base_url + "clean.html", wait_until="load")
        page.wait_for_function("() => window.posencFigures && window.posencFigures.drawnAt !== null")
        state = page.evaluate("""() => { const gd = document.querySelector('.js-plotly-plot');
            return {dragmode: gd._fullLayout.dragmode, legend: gd.layout.legend || null, domain: gd._fullLayout.xaxis.domain}; }""")
    finally:
        page.close()
    assert state["dragmode"] == "zoom" and state["domain"] == [0, 1], state


def test_touch_check_tells_a_zoom_from_an_autorange_recomputed_in_the_seventh_digit() -> None:
    # The ranges CI once saw on chapter 12's phone page before and after a sideways drag:
    # plotly recomputed the y autorange after a relayout; nobody zoomed.
    before = '[["xaxis",[-4.6969904,67.6969904]],["yaxis",[-1.3999647247038343,3.090824883923153]]]'
    noise = '[["xaxis",[-4.6969904,67.6969904]],["yaxis",[-1.3999648683531207,3.0908250275724396]]]'
    zoomed = '[["xaxis",[10.0,40.0]],["yaxis",[-1.3999647247038343,3.090824883923153]]]'
    panned = '[["xaxis",[-4.6969904,67.6969904]],["yaxis",[-1.2,3.29]]]'
    assert not _axes_moved(before, before)
    assert not _axes_moved(before, noise)
    assert _axes_moved(before, zoomed)
    assert _axes_moved(before, panned)
    assert _axes_moved(before, '[["xaxis",[-4.6969904,67.6969904]]]')  # an axis vanished
    assert _axes_moved('[["xaxis",["a","b"]]]', '[["xaxis",["a","c"]]]')  # non-numeric: exact
