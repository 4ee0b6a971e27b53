"""Sphinx extension for the book's offline site.

Registers the JavaScript and CSS the pages need and copies them, at the end of the
build, from pinned installed packages into ``_static/vendor``:

* plotly.js from the ``plotly`` Python package (one file for the site, never inlined). Pages
  that show a figure load ``posenc-plotly.js`` (small, in the head), which preloads plotly.js
  and runs it after the first paint, so text paints at once; it also fits each figure to
  the screen (touch, narrow columns);
* MathJax 3 from the ``django-static-mathjax`` package;
* the book's own scripts and stylesheets from ``book/_ext/assets``: ``posenc-plotly.js``,
  ``posenc-explorer.js`` (the explorers' controls), ``posenc-site.js`` (every page: the theme
  button as a light/dark switch), ``posenc.css`` and ``posenc-print.css`` (each explorer's
  printed small multiples, shown in print only).

Nothing is fetched from the network and no third-party file is committed.

It also keeps the pages clean in a browser (``tests/test_site_browser.py`` checks them):

* Jupyter Book always loads sphinx-thebe, which declares ``const THEBE_JS_URL`` (an
  unpkg.com address) twice per page, a JavaScript error; the book has no thebe launch
  button, so thebe's page scripts are not registered at all;
* two generated attributes that axe-core reports (Sphinx's deprecated
  ``role="doc-biblioentry"`` on citations, myst-nb's ``aria-label`` hiding the text of
  "Show code cell source") are rewritten, see ``_ACCESSIBLE_MARKUP``.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from sphinx.application import Sphinx

ASSETS = Path(__file__).parent / "assets"
VENDOR = "vendor"
PLOTLY_JS = f"{VENDOR}/plotly.min.js"
#: Loads plotly.js (from the same folder) without blocking the first paint; see its header.
FIGURES_JS = f"{VENDOR}/posenc-plotly.js"
EXPLORER_JS = f"{VENDOR}/posenc-explorer.js"
SITE_JS = f"{VENDOR}/posenc-site.js"
MATHJAX_JS = f"{VENDOR}/mathjax/tex-chtml.js"
# Big bundles and the speech engine are never requested by tex-chtml.js pages.
_MATHJAX_SKIP = ("sre", "*-full*.js", "mml-*.js", "tex-svg*.js", "tex-mml-*.js", "node-main.js", "latest.js")


def plotly_js_path() -> Path:
    import plotly

    path = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    if not path.is_file():
        raise FileNotFoundError(f"plotly.min.js not found at {path}: reinstall the pinned plotly package")
    return path


def mathjax_dir() -> Path:
    import mathjax  # provided by django-static-mathjax

    path = Path(next(iter(mathjax.__path__))) / "static" / "mathjax" / "es5"
    if not (path / "tex-chtml.js").is_file():
        raise FileNotFoundError(f"MathJax 3 not found at {path}: run `make setup` (django-static-mathjax)")
    return path


def _configure(app: Sphinx, config: Any) -> None:
    config.mathjax_path = MATHJAX_JS
    css_files = list(config.html_css_files)
    for name in ("posenc.css", "posenc-print.css"):
        if f"{VENDOR}/{name}" not in css_files:
            css_files.append(f"{VENDOR}/{name}")
    config.html_css_files = css_files


def _copy_assets(app: Sphinx, exception: Exception | None) -> None:
    if exception is not None or app.builder.format != "html":
        return
    target = Path(app.outdir) / "_static" / VENDOR
    target.mkdir(parents=True, exist_ok=True)
    shutil.copy2(plotly_js_path(), target / "plotly.min.js")
    for asset in ASSETS.iterdir():
        shutil.copy2(asset, target / asset.name)
    shutil.copytree(
        mathjax_dir(), target / "mathjax", dirs_exist_ok=True, ignore=shutil.ignore_patterns(*_MATHJAX_SKIP)
    )


def _add_plotly(app: Sphinx, pagename: str, templatename: str, context: dict[str, Any], doctree: Any) -> None:
    """Load the figure scripts only on pages that show a figure.

    ``posenc-plotly.js`` goes in the page's ``<head>`` without ``defer``: it must run before
    the figures' inline scripts, whose ``Plotly.newPlot`` calls it queues until plotly.js
    (4.8 MB, preloaded by it, never in a ``<script>`` tag of the page) has run after the
    first paint. ``posenc-explorer.js`` is deferred. Added through the builder, Sphinx keeps
    them to this page.
    """
    if "plotly-graph-div" in str(context.get("body", "")):
        app.builder.add_js_file(FIGURES_JS)  # type: ignore[attr-defined]
        app.builder.add_js_file(EXPLORER_JS, defer="defer")  # type: ignore[attr-defined]


def _drop_thebe(app: Sphinx, config: Any) -> None:
    """Unregister sphinx-thebe's page scripts and stylesheet (Jupyter Book always loads it).

    Its ``env-before-read-docs`` handler registers an inline script declaring ``const
    THEBE_JS_URL`` (an unpkg.com address); Jupyter Book pages carry it twice, a
    SyntaxError in every page. Its ``doctree-resolved`` handler appends a thebe
    configuration pointing at mybinder. The book runs no code in the browser.
    """
    if config.html_theme_options.get("launch_buttons", {}).get("thebe"):
        return  # someone turned thebe on in _config.yml: leave it alone
    for event in ("env-before-read-docs", "doctree-resolved"):
        for listener in list(app.events.listeners.get(event, [])):
            if getattr(listener.handler, "__module__", "").startswith("sphinx_thebe"):
                app.disconnect(listener.id)
    app.registry.css_files = [entry for entry in app.registry.css_files if entry[0] != "sphinx-thebe.css"]


#: Markup of Sphinx and myst-nb that axe-core rejects, and its accessible replacement.
_ACCESSIBLE_MARKUP = {
    # Citations: doc-biblioentry is deprecated in ARIA 1.2, so axe-core rejects it as a child
    # of Sphinx's role="list" citation list (critical: aria-required-children).
    'role="doc-biblioentry"': 'role="listitem"',
    # Hidden code cells: the label hides the visible "Show code cell source" from screen
    # readers (serious: label-content-name-mismatch); without it the name is that text.
    '<summary aria-label="Toggle hidden content">': "<summary>",
}


def _fix_markup(app: Sphinx, pagename: str, templatename: str, context: dict[str, Any], doctree: Any) -> None:
    """Rewrite the few generated attributes listed in ``_ACCESSIBLE_MARKUP`` in the page body."""
    body = context.get("body")
    if isinstance(body, str):
        for old, new in _ACCESSIBLE_MARKUP.items():
            body = body.replace(old, new)
        context["body"] = body


def _drop_widget_state(app: Sphinx, pagename: str, *args: Any, **kwargs: Any) -> None:
    """Keep executed widgets' saved state out of the page.

    Explorers render their static plotly form on the site, so the live widgets' state
    (several MB: plotly's FigureWidget ships its JavaScript inside it) is dead weight.
    Runs before myst-nb's own ``html-page-context`` handler, which would embed it.
    """
    page_data = getattr(app.env, "nb_metadata", {}).get(pagename, {})
    page_data.get("js_files", {}).pop("ipywidgets_state", None)


def setup(app: Sphinx) -> dict[str, Any]:
    # Fail early, before hours of notebook execution, if an asset is missing.
    plotly_js_path()
    mathjax_dir()
    app.add_js_file(SITE_JS, loading_method="defer")
    app.connect("config-inited", _configure)
    app.connect("config-inited", _drop_thebe)
    app.connect("build-finished", _copy_assets)
    app.connect("html-page-context", _drop_widget_state, priority=400)
    app.connect("html-page-context", _fix_markup)
    app.connect("html-page-context", _add_plotly)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
