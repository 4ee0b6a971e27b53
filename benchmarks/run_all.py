"""The book's performance figures, measured on this machine (a script, not a test).

    make bench                                  # everything (several minutes)
    .venv/bin/python -m benchmarks.run_all --skip-build --skip-notebooks   # the quick parts

Prints:

1. clean build time as ``make book`` does it, into a temporary --path-output: every notebook
   executed into an empty cache, one kernel per core (``tools/execute_book.py``), then the
   strict build; and two cached rebuilds: with nothing changed, and with every page
   re-rendered (``--all``) from the execution cache;
2. each notebook's Run-All time in a fresh kernel (nbclient), in table-of-contents order;
3. explorer update latency (median, p95) at d_model = 512, length = 512: the live-kernel
   callback (recompute the frame + apply it to the FigureWidget) of chapter 2's table explorer;
   and chapter 5's analysis explorer (four 512 x 384 tables, every analysis, several windows),
   the latency the unit tests no longer assert (a wall-clock limit under ``pytest -n`` is flaky);
4. sinusoidal table precision and time ratio against the source texts' float32 recipe (from
   ``benchmarks/sinusoidal_bench.py``);
5. per-page weight of the built site: HTML bytes, the explorer JSON and figure JSON inside
   it, and the JavaScript the page loads;
6. first paint (the Performance API's first-contentful-paint) of the heaviest page with figures,
   loaded cold in headless Chromium, as built (plotly.js runs after the first paint) and with
   plotly.js render-blocking in the head as the site loaded it before; and of a page without figures.

Timings depend on the load of the machine; the script prints the core count and load
average so the figures can be read in context.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from tools.browser import ROOT, site_dir
from tools.toc import toc_pages

BIN = Path(sys.executable).parent


_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def heading(text: str) -> None:
    print(f"\n## {text}", flush=True)


def percentile(samples: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (q in [0, 100])."""
    ordered = sorted(samples)
    rank = max(1, min(len(ordered), round(q / 100 * len(ordered) + 0.5)))
    return ordered[rank - 1]


def machine() -> None:
    load = os.getloadavg() if hasattr(os, "getloadavg") else (float("nan"),) * 3
    print(f"date: {time.strftime('%Y-%m-%d %H:%M %Z')}")
    print(f"machine: {os.cpu_count()} cores, load average {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} (1/5/15 min)")
    print(f"python {sys.version.split()[0]}, OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', '(unset)')}")


# -- 1. builds -------------------------------------------------------------------------------
def timed_build(out: Path, *extra: str) -> tuple[float, int, str]:
    command = [str(BIN / "jupyter-book"), "build", str(ROOT), "--path-output", str(out), "-W", "-n", "--keep-going",
               *extra]
    start = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    lines = _ANSI.sub("", done.stdout + done.stderr).splitlines()
    problems = [line for line in lines if ("WARNING" in line or "ERROR" in line) and "over TCP" not in line]
    tail = "\n".join(problems[-8:] or lines[-4:])
    return seconds, done.returncode, tail


def timed_execution(out: Path) -> tuple[float, int, str]:
    """``make book``'s first step into the temporary build's cache: every notebook, one kernel per core."""
    command = [str(BIN / "python"), "-m", "tools.execute_book", "--cache", str(out / "_build" / ".jupyter_cache")]
    start = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    return time.perf_counter() - start, done.returncode, "\n".join((done.stdout + done.stderr).splitlines()[-6:])


def bench_builds(out: Path) -> Path | None:
    heading("1. Build times (strict: -W -n --keep-going)")
    seconds, code, tail = timed_execution(out)
    print(f"{'clean: notebooks executed into an empty cache (tools/execute_book)':<72} {seconds:7.1f} s  "
          f"{'ok' if code == 0 else f'FAILED (exit {code})'}", flush=True)
    if code != 0:
        print("   " + tail.replace("\n", "\n   "))
    executed = seconds
    rows = [
        ("clean: the strict build after it (notebooks from the cache)", ()),
        ("cached rebuild, nothing changed", ()),
        ("cached rebuild, every page re-rendered (--all), notebooks from cache", ("--all",)),
    ]
    ok = code == 0
    for index, (label, extra) in enumerate(rows):
        seconds, code, tail = timed_build(out, *extra)
        status = "ok" if code == 0 else f"FAILED (exit {code})"
        print(f"{label:<72} {seconds:7.1f} s  {status}", flush=True)
        if index == 0:
            print(f"{'clean build in all (make book: both steps)':<72} {executed + seconds:7.1f} s", flush=True)
        if code != 0:
            print("   " + tail.replace("\n", "\n   "))
            ok = False
    if not ok:
        print("(a build reported warnings or errors: its times are still what it took, see above)")
    html = out / "_build" / "html"
    return html if (html / "index.html").is_file() else None


# -- 2. notebooks ----------------------------------------------------------------------------
def bench_notebooks() -> None:
    import nbformat
    from nbclient import NotebookClient

    heading("2. Notebook Run-All time (nbclient, fresh python3 kernel each)")
    notebooks = [ROOT / page.replace(".html", ".ipynb") for page in toc_pages()]
    notebooks = [path for path in notebooks if path.is_file()]
    total = 0.0
    for path in notebooks:
        notebook = nbformat.read(path, as_version=4)
        client = NotebookClient(notebook, timeout=900, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}})
        start = time.perf_counter()
        try:
            # The kernel's stderr only carries jupyter_client's "running over TCP" notice; cell
            # errors come back through CellExecutionError.
            client.execute(stderr=subprocess.DEVNULL)
            status = "ok"
        except Exception as error:  # noqa: BLE001 - report and go on with the next notebook
            last = _ANSI.sub("", str(error).strip().splitlines()[-1])
            status = f"FAILED: {type(error).__name__}: {last[:110]}"
        seconds = time.perf_counter() - start
        total += seconds
        cells = sum(cell.cell_type == "code" for cell in notebook.cells)
        print(f"{path.relative_to(ROOT)!s:<44} {seconds:7.1f} s  ({cells:3d} code cells)  {status}", flush=True)
    print(f"{'total':<44} {total:7.1f} s")


# -- 3. explorer latency ---------------------------------------------------------------------
def _table_explorer() -> tuple[Any, str]:
    """Chapter 2's table explorer, or a stand-in with the same job if it is not there."""
    try:
        from posenc.sinusoidal_plots import table_explorer
    except ImportError:
        table_explorer = None
    if table_explorer is not None:
        return table_explorer(), "posenc.sinusoidal_plots.table_explorer (chapter 2)"
    from posenc.interactive import Control, Explorer, Frame
    from posenc.plots import heatmap
    from posenc.sinusoidal import sinusoidal_table

    def update(d_model: int, seq_len: int) -> Frame:
        table = sinusoidal_table(int(seq_len), int(d_model))
        rows, cols = max(1, table.shape[0] // 128), max(1, table.shape[1] // 128)
        return Frame(traces={0: {"z": table[::rows, ::cols].numpy()}})

    figure = heatmap([[0.0]], title="table", x_title="channel", y_title="position", alt="table",
                     colorbar_title="value")
    controls = [Control("d_model", [256, 512], default=512), Control("seq_len", [256, 512], default=512)]
    return Explorer(figure, update, controls), "generic heatmap Explorer (chapter 2's explorer not found)"


def time_update(explorer: Any, figure: Any, values: dict[str, Any]) -> tuple[float, float]:
    """Seconds to recompute one explorer frame, and to recompute and apply it to the live widget."""
    start = time.perf_counter()
    frame = explorer.frame(**values)
    middle = time.perf_counter()
    explorer.apply(frame, figure)
    end = time.perf_counter()
    return middle - start, end - start


def live_figure(explorer: Any) -> Any:
    """The ``FigureWidget`` of the explorer's live widget (what a kernel callback redraws)."""
    import plotly.graph_objects as go

    return next(child for child in explorer.widget().children if isinstance(child, go.FigureWidget))


def time_settings(explorer: Any, settings: list[dict[str, Any]], rounds: int) -> tuple[list[float], list[float], str]:
    """Time every setting ``rounds`` times: ``(frame seconds, callback seconds, the slowest frame's setting)``."""
    figure = live_figure(explorer)
    compute, total, slowest = [], [], (0.0, "")
    for _ in range(rounds):
        for values in settings:
            frame_s, callback_s = time_update(explorer, figure, values)
            compute.append(frame_s)
            total.append(callback_s)
            if frame_s > slowest[0]:
                slowest = (frame_s, ", ".join(f"{k}={v}" for k, v in values.items()))
    return compute, total, slowest[1]


def print_latency(compute: list[float], total: list[float], *, with_max: bool = False) -> None:
    """Median and p95 (and optionally the maximum) of the frame and callback times, in ms."""
    for label, seconds in (("recompute frame:         ", compute), ("recompute + apply widget:", total)):
        line = f"{label} median {1e3 * statistics.median(seconds):6.1f} ms   p95 {1e3 * percentile(seconds, 95):6.1f} ms"
        print(line + (f"   max {1e3 * max(seconds):6.1f} ms" if with_max else ""))


def targets_met(compute: list[float], total: list[float]) -> bool:
    """Both p95 targets (:data:`FRAME_TARGET_MS`, :data:`CALLBACK_TARGET_MS`) met."""
    return percentile(compute, 95) * 1e3 <= FRAME_TARGET_MS and percentile(total, 95) * 1e3 <= CALLBACK_TARGET_MS


def bench_explorer(runs: int) -> None:
    heading("3. Explorer update latency at d_model = 512, length = 512 (live-kernel callback)")
    explorer, source = _table_explorer()
    figure = live_figure(explorer)
    target, other = {"d_model": 512, "seq_len": 512}, {"d_model": 128, "seq_len": 512}
    compute, total = [], []
    for _ in range(runs):
        explorer.apply(explorer.frame(**other), figure)  # so every timed update really changes the figure
        frame_s, callback_s = time_update(explorer, figure, target)
        compute.append(frame_s)
        total.append(callback_s)
    print(f"explorer: {source}; {runs} updates")
    print_latency(compute, total)


#: Targets of one explorer update: the frame's recompute (the limit the unit test used to
#: assert) and the whole live-kernel callback (the book promises updates well under 100 ms).
FRAME_TARGET_MS = 50.0
CALLBACK_TARGET_MS = 100.0


def _analysis_explorer() -> tuple[Any, dict[str, Any], str]:
    """Chapter 5's analysis explorer over 512 x 384 tables like the chapter's (the chapter's own
    trained table needs a training run: a random walk stands in for it)."""
    import numpy as np

    from posenc.analysis import analyze_table
    from posenc.analysis_plots import analysis_explorer
    from posenc.pretrained import load_minilm_position_table
    from posenc.sinusoidal import sinusoidal_table

    rng = np.random.default_rng(0)
    tables = {
        "random init": rng.normal(0.0, 0.02, size=(512, 384)).astype(np.float32),
        "random walk": np.cumsum(rng.standard_normal((512, 384)), axis=0).astype(np.float32),
        "MiniLM": np.asarray(load_minilm_position_table().weight),
        "sinusoidal": sinusoidal_table(512, 384).numpy(),
    }
    analyses = {name: analyze_table(table) for name, table in tables.items()}
    return analysis_explorer(analyses, windows=(64, 512)), analyses, "posenc.analysis_plots.analysis_explorer (chapter 5)"


def bench_analysis_explorer(runs: int) -> None:
    from posenc.analysis_plots import ANALYSES

    heading("3b. Analysis explorer update latency, 512 x 384 tables (live-kernel callback)")
    explorer, analyses, source = _analysis_explorer()
    windows = (64, 256, 512)
    settings = [dict(table=t, analysis=a, positions=w) for t in analyses for a in ANALYSES for w in windows]
    rounds = max(1, runs // 10)
    compute, total, slowest = time_settings(explorer, settings, rounds)
    print(f"explorer: {source}; {len(settings)} settings "
          f"({len(analyses)} tables x {len(ANALYSES)} analyses x windows {windows}), {rounds} round(s)")
    print_latency(compute, total, with_max=True)
    print(f"slowest frame: {1e3 * max(compute):.1f} ms ({slowest})")
    print(f"targets (p95: recompute <= {FRAME_TARGET_MS:.0f} ms, recompute + apply <= {CALLBACK_TARGET_MS:.0f} ms): "
          + ("met" if targets_met(compute, total) else "MISSED"))


def bench_scaling_explorer(runs: int) -> None:
    """Chapter 11's method x factor explorer: every grid setting plus live factors off the grid."""
    from posenc.rope_scaling import METHODS
    from posenc.rope_scaling_plots import SETTINGS, scaling_explorer

    heading("3c. RoPE scaling explorer update latency (chapter 11, live-kernel callback)")
    settings = [dict(method=m, factor=f, setting=s) for m in METHODS for f in (2.0, 4.0, 8.0, 16.0, 3.5, 31.5)
                for s in SETTINGS]
    compute, total, _ = time_settings(scaling_explorer(), settings, max(1, runs // 10))
    print(f"explorer: posenc.rope_scaling_plots.scaling_explorer (chapter 11); {len(settings)} settings")
    print_latency(compute, total)
    print("targets: " + ("met" if targets_met(compute, total) else "MISSED"))


# -- 4. sinusoidal table -----------------------------------------------------------------------
def bench_sinusoidal(runs: int) -> None:
    heading("4. Sinusoidal table: precision and speed vs the source texts' float32 recipe")
    from benchmarks import sinusoidal_bench

    code = sinusoidal_bench.main(["--runs", str(runs)])
    if code:
        print(f"(sinusoidal_bench exited with {code}: a target was missed)")


# -- 5. page weight --------------------------------------------------------------------------
_SPEC = re.compile(r'<script type="application/json" id="[^"]*-spec">(.*?)</script>', re.S)
_NEWPLOT = re.compile(r"Plotly\.newPlot\((.*?)\)\s*};?\s*</script>", re.S)
_SCRIPT_SRC = re.compile(r'<script[^>]*\ssrc="([^"]+)"')


def page_weight(root: Path, page: str) -> dict[str, Any]:
    path = root / page
    text = path.read_text(encoding="utf-8")
    scripts = set()
    for src in _SCRIPT_SRC.findall(text):
        local = (path.parent / src.split("?")[0]).resolve()
        if local.is_file():
            scripts.add(local)
            if local.name == "posenc-plotly.js":  # it loads plotly.js from its own folder
                scripts.add(local.parent / "plotly.min.js")
    return {
        "page": page,
        "html": path.stat().st_size,
        "explorer_json": sum(len(m.encode()) for m in _SPEC.findall(text)),
        "figure_json": sum(len(m.encode()) for m in _NEWPLOT.findall(text)),
        "explorers": len(_SPEC.findall(text)),
        "figures": text.count('class="plotly-graph-div"'),
        "js": sum(script.stat().st_size for script in scripts),
    }


def bench_pages(root: Path) -> None:
    heading(f"5. Page weight of the built site ({root})")
    mb: Callable[[int], str] = lambda n: f"{n / 1e6:7.3f}"  # noqa: E731
    print(f"{'page':<44}{'HTML MB':>9}{'explorer JSON':>15}{'figure JSON':>13}{'figs':>6}{'expl':>6}{'JS loaded MB':>14}")
    total = 0
    for page in toc_pages():
        if not (root / page).is_file():
            print(f"{page:<44}  (not built)")
            continue
        w = page_weight(root, page)
        total += w["html"]
        print(f"{page:<44}{mb(w['html']):>9}{mb(w['explorer_json']):>15}{mb(w['figure_json']):>13}"
              f"{w['figures']:>6}{w['explorers']:>6}{mb(w['js']):>14}")
    print(f"{'all pages':<44}{mb(total):>9}")
    print("(explorer/figure JSON are inside the HTML; JS loaded = local scripts the page references, "
          "shared by all pages and cached by the browser)")


# -- 6. first paint ---------------------------------------------------------------------------
_PAINT_TIMES = """() => {
  const paint = performance.getEntriesByName('first-contentful-paint')[0];
  const nav = performance.getEntriesByType('navigation')[0];
  const figures = window.posencFigures;
  return {paint: paint ? paint.startTime : null, dom: nav.domContentLoadedEventEnd,
          drawn: figures && figures.drawnAt ? figures.drawnAt : nav.loadEventEnd};
}"""
# Painted, and every figure drawn: by posenc-plotly.js after the first paint (it notes when it
# is done), or, with plotly.js render-blocking, by the figures' own inline scripts (then
# posenc-plotly.js never asks for plotly.js and its drawnAt stays null).
_ALL_DRAWN = """() => {
  if (!performance.getEntriesByName('first-contentful-paint').length) { return false; }
  const drawn = Array.from(document.querySelectorAll('.plotly-graph-div')).every((gd) => gd._fullLayout);
  const figures = window.posencFigures;
  return drawn && (!figures || figures.drawnAt !== null || figures.plotlyRequestedAt === null);
}"""
#: Where the site's pages load their figure script; the "before" variant puts plotly.js in front of it.
_FIGURE_SCRIPT = re.compile(r'<script src="([^"]*/)posenc-plotly\.js[^"]*"></script>')


def heaviest_figure_page(root: Path) -> str | None:
    """The page of the table of contents with the most HTML among those that show a figure."""
    pages = [page for page in toc_pages() if (root / page).is_file()]
    weights = [page_weight(root, page) for page in pages]
    with_figures = [w for w in weights if w["figures"]]
    return max(with_figures, key=lambda w: w["html"])["page"] if with_figures else None


def _blocking_plotly(html: str) -> str:
    """The page as the site served it before: plotly.js in a plain <script> tag in the head."""
    return _FIGURE_SCRIPT.sub(lambda m: f'<script src="{m.group(1)}plotly.min.js"></script>\n{m.group(0)}', html, count=1)


def paint_times(root: Path, page: str, runs: int, *, blocking: bool = False) -> list[dict[str, float]]:
    """First paint, DOMContentLoaded and all figures drawn (ms after navigation), one cold load each."""
    from tools.browser import launch_browser, new_context, serve

    source = (root / page).read_text(encoding="utf-8")
    samples = []
    with serve(root) as base, launch_browser() as browser:
        for _ in range(runs):
            context = new_context(browser)
            tab = context.new_page()
            if blocking:
                tab.route(base + page, lambda route: route.fulfill(
                    status=200, content_type="text/html; charset=utf-8", body=_blocking_plotly(source)))
            tab.goto(base + page, wait_until="load")
            tab.wait_for_function(_ALL_DRAWN, timeout=120_000)
            samples.append(tab.evaluate(_PAINT_TIMES))
            context.close()
    return samples


def _spread(samples: list[dict[str, float]], key: str) -> str:
    values = [s[key] / 1000 for s in samples if s.get(key) is not None]
    if not values:
        return "n/a"
    return f"{statistics.median(values):5.2f} s (min {min(values):.2f}, max {max(values):.2f})"


def bench_first_paint(root: Path, runs: int) -> None:
    from tools.browser import missing_chromium

    heading("6. First paint (Performance API: first-contentful-paint), cold loads in headless Chromium")
    reason = missing_chromium()
    page = heaviest_figure_page(root)
    if reason or page is None:
        print(reason or f"no page with figures in {root}")
        return
    print(f"heaviest page with figures: {page}; {runs} cold loads each (new browser context, empty cache)")
    print(f"{'':<44}{'first paint':<32}{'all figures drawn':<32}")
    rows = [("as built: plotly.js after the first paint", paint_times(root, page, runs)),
            ("before: plotly.js render-blocking in <head>", paint_times(root, page, runs, blocking=True))]
    plain = next((p for p in toc_pages() if (root / p).is_file() and not page_weight(root, p)["figures"]
                  and p.startswith("book/0")), None)
    for label, samples in rows:
        print(f"{label:<44}{_spread(samples, 'paint'):<32}{_spread(samples, 'drawn'):<32}")
    if plain:
        print(f"{'page without figures: ' + plain:<44}{_spread(paint_times(root, plain, runs), 'paint'):<32}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--skip-build", action="store_true", help="skip the clean/cached build timings")
    parser.add_argument("--skip-notebooks", action="store_true", help="skip the notebook Run-All timings")
    parser.add_argument("--keep-build", type=Path, default=None,
                        help="build into this folder and keep it (default: a temporary folder, removed)")
    parser.add_argument("--runs", type=int, default=30, help="timed explorer updates (default 30)")
    parser.add_argument("--sinusoidal-runs", type=int, default=9, help="timed runs per table method (default 9)")
    parser.add_argument("--paint-runs", type=int, default=7, help="cold page loads per first-paint figure (default 7)")
    parser.add_argument("--only-paint", action="store_true", help="only the page weight and first paint of the built site")
    args = parser.parse_args(argv)

    print("# posenc book: performance figures")
    machine()
    pages_root = site_dir()
    workdir = args.keep_build or Path(tempfile.mkdtemp(prefix="posenc-bench-"))
    if args.only_paint:
        bench_pages(pages_root)
        bench_first_paint(pages_root, args.paint_runs)
        return 0
    try:
        if not args.skip_build:
            built = bench_builds(workdir)
            pages_root = built or pages_root
        if not args.skip_notebooks:
            bench_notebooks()
        bench_explorer(args.runs)
        bench_analysis_explorer(args.runs)
        bench_scaling_explorer(args.runs)
        bench_sinusoidal(args.sinusoidal_runs)
        if (pages_root / "index.html").is_file():
            bench_pages(pages_root)
            bench_first_paint(pages_root, args.paint_runs)
        else:
            heading("5. Page weight")
            print(f"no built site at {pages_root}: run `make book` or drop --skip-build")
    finally:
        if args.keep_build is None:
            shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
