"""Sphinx extension for the book's offline site.

Registers the JavaScript and CSS the pages need and copies them, at the end of the
build, from pinned installed packages into ``_static/vendor``:

* plotly.js from the ``plotly`` Python package (loaded once per page, never inlined);
* MathJax 3 from the ``django-static-mathjax`` package;
* the book's own explorer script and stylesheet from ``posenc/assets``.

Nothing is fetched from the network and no third-party file is committed.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from sphinx.application import Sphinx

ASSETS = Path(__file__).parent / "assets"
VENDOR = "vendor"
PLOTLY_JS = f"{VENDOR}/plotly.min.js"
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
    js_files = list(config.html_js_files)
    for name in (PLOTLY_JS, f"{VENDOR}/posenc-explorer.js"):
        if name not in [entry if isinstance(entry, str) else entry[0] for entry in js_files]:
            js_files.append(name)
    config.html_js_files = js_files
    css_files = list(config.html_css_files)
    if f"{VENDOR}/posenc.css" not in css_files:
        css_files.append(f"{VENDOR}/posenc.css")
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
    app.connect("config-inited", _configure)
    app.connect("build-finished", _copy_assets)
    app.connect("html-page-context", _drop_widget_state, priority=400)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
