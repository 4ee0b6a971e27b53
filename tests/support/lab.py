"""The book's notebooks in a real JupyterLab 4, driven by Playwright in headless Chromium.

* :func:`lab_server`: starts ``jupyter lab`` (the venv's, so its python3 kernel and its lab
  extensions) on 127.0.0.1 at a free port, with a random token and throwaway config, data,
  runtime, settings, workspaces and IPython folders, so nothing of the user's state is read
  or written. Autosave is turned off in those settings: running a chapter in Lab must never
  write outputs into ``book/*.ipynb``.
* :func:`inspect_notebook`: opens one notebook as a reader would (``/lab/tree/<path>?reset``),
  runs it with *Run > Run All Cells*, waits for the kernel, then checks what Lab shows:

  - ``open``: Lab opened it and started its kernel;
  - ``run``: Run All finished in time, every code cell ran;
  - ``errors``: no error output (Lab 4 renders a traceback as an output with the mimetype
    ``application/vnd.jupyter.stderr``, like a warning: tracebacks are told apart by their
    text; other stderr output is recorded, not failed);
  - ``widgets``: no "Error displaying widget", no ipywidgets error view, no "Loading widget"
    left once the widgets had time to render;
  - ``explorers``: in every explorer (a widget output holding a slider, dropdown or toggle
    buttons and a plotly figure, see ``posenc.interactive.Explorer``) its first control is
    moved and the figure's SVG must change;
  - ``markdown``: no raw MyST markup or unfilled placeholder in rendered Markdown (roles such
    as ``{glue:text}``/``{term}``, directive fences, ``(label)=`` lines, ``name:.3f``);

  then shuts the kernel down (REST ``DELETE /api/sessions/<id>``) and closes the tab. With
  ``run=False`` it stops after ``open`` and ``markdown``: no cell runs.
  :func:`check_notebook` returns just the list of problems.

Chromium and Playwright come from the same helpers as the site checks (``support.site``).

From a shell (prints every problem of every notebook of the table of contents)::

    cd tests && PYTHONPATH=.. ../.venv/bin/python -m support.lab [book/02_sinusoidal.ipynb ...] [--screenshot DIR]
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.error import HTTPError, URLError
from urllib.parse import quote
from urllib.request import Request, urlopen

import pytest

from tools.browser import ROOT, launch_browser, missing_chromium, new_context
from tools.toc import toc_notebooks

#: Lab extensions the notebooks need: ipywidgets' manager and plotly's FigureWidget.
REQUIRED_EXTENSIONS = ("@jupyter-widgets/jupyterlab-manager", "jupyterlab-plotly")
#: User settings of the throwaway Lab: no autosave (never write outputs into the book), no news
#: or update check (no network, no pop-up over the notebook).
LAB_SETTINGS = {
    "@jupyterlab/docmanager-extension/plugin.jupyterlab-settings": {"autosave": False},
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {
        "fetchNews": "false",
        "checkForUpdates": False,
    },
}
SERVER_START_TIMEOUT_S = 90
OPEN_TIMEOUT_S = 90  # Lab's page load + kernel start, under load
RUN_TIMEOUT_S = 360  # Run All of one notebook: generous, as CI runs other tests on the second core
WIDGET_TIMEOUT_S = 30  # widgets (and their figures) to render after the run
EXPLORER_TIMEOUT_S = 30  # the kernel to redraw a figure after a control moved
VIEWPORT = (1400, 1000)

PANEL = ".jp-NotebookPanel:not(.lm-mod-hidden)"
CONTROLS = ".widget-slider, .widget-dropdown, .widget-toggle-buttons"

# -- what counts as an error output, and as raw MyST ------------------------------------------
#: IPython's rendering of an exception (Lab shows it with the stderr mimetype).
TRACEBACK = re.compile(
    r"Traceback \(most recent call last\)"
    r"|^\s*Cell In\[\d+\], line \d+"
    r"|^\s*File [^\n]*, line \d+",
    re.MULTILINE,
)
#: The last line of an exception: ``ZeroDivisionError: division by zero``.
EXCEPTION_LINE = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Interrupt|Exit|Iteration)\b(:.*)?$")
#: Raw MyST in rendered text: (name, pattern). Maths and code blocks are removed before.
RAW_MYST = (
    # {glue:text}, {term}, {eval}, ... and any other {role} glued to its content (the backticks are gone).
    ("role", re.compile(
        r"\{(?:glue|term|eval|ref|doc|cite|numref|eq|download|abbr|index|footcite|prf)(?::[\w-]+)?\}"
        r"|\{[a-z][\w-]*(?::[\w-]+)?\}(?=[^\s}])"
    )),
    ("directive fence", re.compile(r"```\{|:::\{|~~~\{")),
    ("label", re.compile(r"^\s*\([\w.:-]+\)=\s*$", re.MULTILINE)),
    # A glue/eval placeholder left as its name and format: `gap_causal:.2f` (not `{x:.2f}`).
    ("unfilled placeholder", re.compile(r"(?<![{\w])[A-Za-z_]\w*:[,_]?\.\d+[eEfFgG%](?![\w}])")),
)


# -- where things are -------------------------------------------------------------------------
def lab_command() -> list[str]:
    """``jupyter lab`` of this environment (the interpreter running the tests)."""
    return [sys.executable, "-m", "jupyterlab"]


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def require_lab_tools() -> None:
    """For a test: skip (with the reason) only when Chromium is missing; a missing pinned
    package (playwright, PyYAML, jupyterlab) fails."""
    import pytest

    for module in ("playwright.sync_api", "yaml", "jupyterlab"):
        try:
            __import__(module)
        except ImportError:
            pytest.fail(f"the Python module `{module}` (pinned in requirements.txt) is not installed: run `make setup`",
                        pytrace=False)
    reason = missing_chromium()
    if reason:
        pytest.skip(reason)


# -- the server -------------------------------------------------------------------------------
@dataclass
class LabServer:
    """A running JupyterLab: base URL, token, served root, process and log."""

    url: str  # ends with "/"
    token: str
    root: Path
    home: Path
    process: subprocess.Popen[bytes]
    log: Path

    def api(self, method: str, path: str, body: Any = None, timeout: float = 30) -> Any:
        """Call the server (``path`` like ``api/sessions``); returns the decoded JSON, or the text
        of a page that is not JSON."""
        data = None if body is None else json.dumps(body).encode()
        request = Request(self.url + path, data=data, method=method)
        request.add_header("Authorization", f"token {self.token}")
        if data is not None:
            request.add_header("Content-Type", "application/json")
        with urlopen(request, timeout=timeout) as response:  # the local server only
            text = response.read().decode() or "null"
        return json.loads(text) if text.lstrip().startswith(("{", "[", "null")) else text

    def tree_url(self, path: str) -> str:
        """The address that opens ``path`` alone in Lab (``?reset``: no restored tabs)."""
        return f"{self.url}lab/tree/{quote(path)}?reset&token={self.token}"

    def page_config(self) -> dict[str, Any]:
        """The ``jupyter-config-data`` JSON that Lab's HTML page carries."""
        html = self.api("GET", "lab")
        match = re.search(r'<script id="jupyter-config-data" type="application/json">(.*?)</script>', html, re.DOTALL)
        if not match:
            raise RuntimeError("no jupyter-config-data in Lab's page")
        config: dict[str, Any] = json.loads(match.group(1))
        return config

    def federated_extensions(self) -> list[str]:
        """Names of the prebuilt lab extensions this Lab loads (found in sys.prefix/share/jupyter,
        less those disabled)."""
        config = self.page_config()
        disabled = set(config.get("disabledExtensions") or [])
        return [ext["name"] for ext in config.get("federated_extensions", []) if ext["name"] not in disabled]

    def user_setting(self, plugin: str) -> dict[str, Any]:
        """The user settings Lab holds for ``plugin`` (e.g. ``@jupyterlab/docmanager-extension:plugin``)."""
        settings: dict[str, Any] = self.api("GET", f"lab/api/settings/{plugin}").get("settings", {})
        return settings

    def sessions(self, path: str | None = None) -> list[dict[str, Any]]:
        sessions: list[dict[str, Any]] = self.api("GET", "api/sessions")
        return [s for s in sessions if path is None or s.get("path") == path]

    def shutdown_kernels(self, path: str) -> int:
        """Delete every session of ``path`` (which shuts its kernel down); returns how many."""
        count = 0
        for session in self.sessions(path):
            self.api("DELETE", f"api/sessions/{session['id']}")
            count += 1
        return count

    def kernel_state(self, path: str) -> str | None:
        """The server's view of the execution state ("idle", "busy", ...) of ``path``'s kernel,
        or None without a session. The server tracks it from the kernel's own status messages,
        so it holds for cells the page does not show and for widget messages."""
        for session in self.sessions(path):
            kernel = session.get("kernel") or {}
            state = kernel.get("execution_state")
            return str(state) if state is not None else None
        return None

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""


def lab_environment(home: Path) -> dict[str, str]:
    """The server's environment: this venv first on PATH, every per-user Jupyter folder in
    ``home`` (so the user's config, settings and workspaces are neither read nor written),
    while the venv's own ``share/jupyter`` (kernels, lab extensions) stays on Jupyter's path."""
    env = dict(os.environ)
    for variable in ("JUPYTER_PATH", "JUPYTER_CONFIG_PATH", "JUPYTER_PREFER_ENV_PATH", "JUPYTER_TOKEN"):
        env.pop(variable, None)
    folders = {
        "JUPYTER_CONFIG_DIR": "config",
        "JUPYTER_DATA_DIR": "data",
        "JUPYTER_RUNTIME_DIR": "runtime",
        "JUPYTERLAB_SETTINGS_DIR": "settings",
        "JUPYTERLAB_WORKSPACES_DIR": "workspaces",
        "IPYTHONDIR": "ipython",
    }
    for variable, name in folders.items():
        (home / name).mkdir(parents=True, exist_ok=True)
        env[variable] = str(home / name)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env["PYTHONUNBUFFERED"] = "1"
    return env


def write_lab_settings(settings_dir: Path) -> None:
    for relative, values in LAB_SETTINGS.items():
        path = settings_dir / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values, indent=2), encoding="utf-8")


def write_disabled_extensions(config_dir: Path, names: tuple[str, ...]) -> None:
    """Disable lab extensions in the throwaway config only (e.g. to compare a chapter with and
    without ``jupyterlab-myst`` while it stays installed in the venv)."""
    if names:
        path = config_dir / "labconfig" / "page_config.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"disabledExtensions": {name: True for name in names}}), encoding="utf-8")


@contextmanager
def lab_server(
    root: Path = ROOT, *, home: Path | None = None, disabled_extensions: tuple[str, ...] = ()
) -> Iterator[LabServer]:
    """Run JupyterLab serving ``root`` until the block ends, then shut it (and its kernels) down.

    ``home`` receives the throwaway Jupyter folders and the server log (default: a new
    temporary folder, removed afterwards). ``disabled_extensions``: lab extensions installed
    in the venv that this Lab must not load."""
    own_home = home is None
    home = Path(tempfile.mkdtemp(prefix="posenc-lab-")) if home is None else home
    home.mkdir(parents=True, exist_ok=True)
    env = lab_environment(home)
    write_lab_settings(Path(env["JUPYTERLAB_SETTINGS_DIR"]))
    write_disabled_extensions(Path(env["JUPYTER_CONFIG_DIR"]), disabled_extensions)
    token = secrets.token_hex(16)
    port = free_port()
    command = lab_command() + [
        "--no-browser",
        "--ip=127.0.0.1",
        f"--port={port}",
        "--port-retries=0",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={root}",
        "--LabApp.news_url=None",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        "--LabApp.extension_manager=readonly",
    ]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        command.append("--allow-root")
    log = home / "server.log"
    with log.open("wb") as log_file:
        process = subprocess.Popen(
            command, cwd=root, env=env, stdin=subprocess.DEVNULL, stdout=log_file, stderr=subprocess.STDOUT
        )
    server = LabServer(f"http://127.0.0.1:{port}/", token, root.resolve(), home, process, log)
    try:
        _wait_until_up(server)
        yield server
    finally:
        _stop(server)
        if own_home:
            shutil.rmtree(home, ignore_errors=True)


def _wait_until_up(server: LabServer) -> None:
    deadline = time.monotonic() + SERVER_START_TIMEOUT_S
    while True:
        if server.process.poll() is not None:
            raise RuntimeError(
                f"jupyter lab exited with status {server.process.returncode}:\n{server.log_tail()}"
            )
        try:
            server.api("GET", "api/status", timeout=5)
            return
        except (URLError, HTTPError, ConnectionError, OSError):
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"jupyter lab did not answer within {SERVER_START_TIMEOUT_S} s:\n{server.log_tail()}"
                ) from None
            time.sleep(0.3)


def _stop(server: LabServer) -> None:
    """Ask the server to shut down (it stops its kernels), then terminate it if it lingers."""
    if server.process.poll() is None:
        try:
            server.api("POST", "api/shutdown", timeout=10)
        except (URLError, HTTPError, ConnectionError, OSError):
            pass
        try:
            server.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.process.terminate()
            try:
                server.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                server.process.kill()
                server.process.wait(timeout=10)


# -- one notebook -----------------------------------------------------------------------------
@dataclass
class LabReport:
    """What Lab showed for one notebook. :meth:`problems` says what is wrong."""

    path: str
    seconds: dict[str, float] = field(default_factory=dict)  # open, run, checks, total
    findings: dict[str, list[str]] = field(default_factory=dict)  # check -> problems
    cells_run: int = 0
    code_cells: int = 0
    explorers: list[dict[str, Any]] = field(default_factory=list)
    stderr: list[str] = field(default_factory=list)  # stderr output that is not a traceback
    console_errors: list[str] = field(default_factory=list)  # recorded, not checked
    blocked_requests: list[str] = field(default_factory=list)  # requests leaving the server (aborted)
    screenshot: str | None = None

    def add(self, check: str, problem: str) -> None:
        self.findings.setdefault(check, []).append(problem)

    def problems(self) -> list[str]:
        """Every problem as ``[check] notebook: text``."""
        return [f"[{check}] {self.path}: {item}" for check, items in self.findings.items() for item in items]

    def describe(self) -> str:
        lines = [
            f"{self.path}: {len(self.problems())} problem(s); {self.cells_run}/{self.code_cells} code cells run, "
            f"{len(self.explorers)} explorer(s), "
            + ", ".join(f"{name} {value:.1f} s" for name, value in self.seconds.items())
        ]
        lines += [
            f"  explorer {ex['id'] + 1} (cell {ex['cell']}, {ex['kind']} {ex['label']!r}): "
            + (f"ok, {ex['moved']}, {ex['why']}" if ex["ok"] else f"FAILED: {ex['why']}")
            for ex in self.explorers
        ]
        lines += [f"  {problem}" for problem in self.problems()]
        lines += [f"  (stderr, not an error) {text}" for text in self.stderr]
        console = list(dict.fromkeys(re.sub(r"\s+", " ", text) for text in self.console_errors))
        lines += [f"  (browser console error, not checked) {text[:200]}" for text in console[:5]]
        lines += [f"  (blocked request, not checked) {url}" for url in self.blocked_requests[:5]]
        if self.screenshot:
            lines.append(f"  screenshot: {self.screenshot}")
        return "\n".join(lines)


_READY = """(panel) => {
  const dialog = document.querySelector('.jp-Dialog');
  if (dialog) return {dialog: dialog.textContent.replace(/\\s+/g, ' ').trim().slice(0, 300)};
  const p = document.querySelector(panel);
  if (!p) return null;
  const kernel = p.querySelector('.jp-KernelName');
  const indicator = p.querySelector('.jp-Notebook-ExecutionIndicator');
  if (kernel && !/No Kernel/.test(kernel.textContent) && indicator && indicator.dataset.status === 'idle')
    return {kernel: kernel.textContent.trim()};
  return null;
}"""

_RUN_STATE = """(panel) => {
  const p = document.querySelector(panel);
  if (!p) return null;
  const indicator = p.querySelector('.jp-Notebook-ExecutionIndicator');
  const prompts = [...p.querySelectorAll('.jp-CodeCell .jp-InputPrompt')].map(e => e.textContent.trim());
  return {status: indicator ? indicator.dataset.status : null,
          running: prompts.filter(t => t.includes('*')).length,
          done: prompts.filter(t => /\\[\\d+\\]/.test(t)).length,
          dialog: (document.querySelector('.jp-Dialog') || {}).textContent || null};
}"""

_WIDGETS_PENDING = """([panel, controls]) => {
  const p = document.querySelector(panel);
  if (!p) return 0;
  let pending = 0;
  for (const out of p.querySelectorAll('.jp-OutputArea-output')) {
    if (out.textContent.includes('Loading widget')) pending++;
    if (out.querySelector(controls) && out.querySelector('.js-plotly-plot') && !out.querySelector('.js-plotly-plot .main-svg')) pending++;
  }
  return pending;
}"""

#: Markdown cells not rendered yet (the condition of ``_COLLECT``'s ``unrendered``): under load the
#: last ones can still be rendering when Run All reports idle.
_UNRENDERED = """(panel) => {
  const p = document.querySelector(panel);
  if (!p) return 0;
  let count = 0;
  for (const cell of p.querySelectorAll('.jp-Notebook-cell.jp-MarkdownCell')) {
    const editor = cell.querySelector('.jp-InputArea-editor');
    const shown = cell.querySelector('.jp-MarkdownOutput, .jp-RenderedMarkdown, .myst');
    if (!(shown && (cell.classList.contains('jp-mod-rendered') || !editor || editor.classList.contains('lm-mod-hidden')))) count++;
  }
  return count;
}"""
_CELL_COUNT = """(panel) => {
  const p = document.querySelector(panel);
  return p ? p.querySelectorAll('.jp-Notebook-cell').length : 0;
}"""
#: Seconds to wait for the last Markdown cells to render before they count as not rendered.
MARKDOWN_TIMEOUT_S = 15.0

#: Everything the checks read, gathered in one pass over the panel.
_COLLECT = """(panel) => {
  const p = document.querySelector(panel);
  const result = {cells: [], outputs: [], widgets: [], markdown: [], unrendered: [], inline: []};
  const cells = [...p.querySelectorAll('.jp-Notebook-cell')];
  cells.forEach((cell, n) => {
    const index = cell.dataset.windowedListIndex !== undefined ? Number(cell.dataset.windowedListIndex) : n;
    const kind = cell.classList.contains('jp-CodeCell') ? 'code' : cell.classList.contains('jp-MarkdownCell') ? 'markdown' : 'raw';
    const prompt = cell.querySelector('.jp-InputPrompt');
    result.cells.push({index, kind, prompt: prompt ? prompt.textContent.trim() : ''});
    // A rendered Markdown cell hides its editor (jupyterlab-myst's cells lack jp-mod-rendered).
    const editor = cell.querySelector('.jp-InputArea-editor');
    const shown = cell.querySelector('.jp-MarkdownOutput, .jp-RenderedMarkdown, .myst');
    if (kind === 'markdown' && !(shown && (cell.classList.contains('jp-mod-rendered') || !editor || editor.classList.contains('lm-mod-hidden'))))
      result.unrendered.push(index);
    for (const out of cell.querySelectorAll('.jp-OutputArea-output')) {
      const mime = out.dataset.mimeType || '';
      if (mime === 'application/vnd.jupyter.stderr' || mime === 'application/vnd.jupyter.error')
        result.outputs.push({index, mime, text: out.textContent});
    }
    const text = cell.querySelector('.jp-Cell-outputWrapper') ? cell.querySelector('.jp-Cell-outputWrapper').textContent : '';
    for (const marker of ['Error displaying widget', 'Loading widget']) {
      let at = text.indexOf(marker);
      if (at >= 0) result.widgets.push({index, what: text.slice(at, at + 160).replace(/\\s+/g, ' ')});
    }
    for (const broken of cell.querySelectorAll('.jupyter-widgets-error-widget')) {
      result.widgets.push({index, what: 'ipywidgets error view: ' + broken.textContent.replace(/\\s+/g, ' ').trim().slice(0, 160)});
    }
    // Lab's own Markdown renderer, or jupyterlab-myst's (a `.myst` widget) when it is installed.
    const rendered = [...cell.querySelectorAll('.jp-RenderedMarkdown, .jp-MarkdownOutput, .myst')]
      .filter((el, i, all) => !all.some(other => other !== el && other.contains(el)));
    for (const md of rendered) {
      const where = md.closest('.jp-OutputArea') ? 'output' : 'markdown';
      const directives = [...md.querySelectorAll('pre code[class*="language-{"]')].map(code =>
        '```' + [...code.classList].find(c => c.startsWith('language-')).slice(9) + ' ' + code.textContent.trim().split('\\n')[0]);
      // jupyterlab-myst shows a failed {eval} inline expression as an error span.
      for (const error of md.querySelectorAll('[data-mime-type="application/vnd.jupyter.stderr"], [data-mime-type="application/vnd.jupyter.error"]'))
        result.inline.push({index, text: error.textContent.replace(/\\s+/g, ' ').trim().slice(0, 200)});
      const copy = md.cloneNode(true);
      // Maths (MathJax in Lab, KaTeX in jupyterlab-myst: its TeX source is in the text) and code blocks.
      copy.querySelectorAll('mjx-container, .MathJax, .MathJax_Display, .MathJax_Preview, .katex, .katex-display, math, script, style, pre, .jp-InternalAnchorLink')
        .forEach(el => el.remove());
      result.markdown.push({index, where, text: copy.textContent, directives});
    }
  });
  return result;
}"""

_FIND_EXPLORERS = """([panel, controls]) => {
  const p = document.querySelector(panel);
  const outputs = [...p.querySelectorAll('.jp-OutputArea-output')].filter(out =>
    out.querySelector(controls) && out.querySelector('.js-plotly-plot') &&
    !(out.parentElement && out.parentElement.closest('.jp-OutputArea-output')));
  return outputs.map((out, id) => {
    out.setAttribute('data-lab-check-explorer', String(id));
    const cell = out.closest('.jp-Notebook-cell');
    const control = out.querySelector(controls);
    const kind = control.classList.contains('widget-slider') ? 'slider'
      : control.classList.contains('widget-dropdown') ? 'dropdown' : 'toggle buttons';
    const label = control.querySelector('.widget-label');
    return {id, cell: cell ? Number(cell.dataset.windowedListIndex) : -1, kind,
            label: label ? label.textContent.trim() : ''};
  });
}"""

#: A fingerprint of an explorer's figure: a hash of its SVG (hover labels left out).
_FIGURE_STATE = """(id) => {
  const out = document.querySelector(`[data-lab-check-explorer="${id}"]`);
  if (!out) return null;
  const plot = out.querySelector('.js-plotly-plot');
  const svgs = plot ? [...plot.querySelectorAll('.main-svg')] : [];
  if (!svgs.length) return {drawn: false, hash: '', title: ''};
  let text = '';
  for (const svg of svgs) {
    let html = svg.outerHTML;
    for (const hover of svg.querySelectorAll('.hoverlayer')) html = html.replace(hover.outerHTML, '');
    text += html;
  }
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) { h ^= text.charCodeAt(i); h = Math.imul(h, 16777619); }
  const title = plot.querySelector('.gtitle');
  return {drawn: true, hash: (h >>> 0).toString(16) + ':' + text.length, title: title ? title.textContent : ''};
}"""


def _raw_myst(text: str) -> list[tuple[str, str]]:
    """(kind, excerpt) of each raw MyST construct in rendered text. A placeholder right after a
    raw role (``{glue:text}gap:.2f``) is reported once, as the role."""
    found = []
    role_ends: set[int] = set()
    for kind, pattern in RAW_MYST:
        for match in pattern.finditer(text):
            if kind == "role":
                role_ends.add(match.end())
            elif kind == "unfilled placeholder" and match.start() in role_ends:
                continue
            start, end = max(0, match.start() - 40), min(len(text), match.end() + 40)
            excerpt = re.sub(r"\s+", " ", text[start:end]).strip()
            found.append((kind, f"{match.group(0).strip()!r} in …{excerpt}…"))
    return found


def _is_traceback(text: str) -> bool:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return bool(TRACEBACK.search(text)) or bool(lines and EXCEPTION_LINE.match(lines[-1].strip()))


def _code_cells_with_source(root: Path, path: str) -> tuple[int, list[int]] | None:
    """(number of cells, indices of the code cells with a non-blank source), read from the
    file Lab opened."""
    try:
        notebook = json.loads((root / path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    indices = []
    for index, cell in enumerate(notebook.get("cells", [])):
        source = cell.get("source", "")
        source = "".join(source) if isinstance(source, list) else source
        if cell.get("cell_type") == "code" and source.strip():
            indices.append(index)
    return len(notebook.get("cells", [])), indices


def _wait(page: Any, script: str, arg: Any, timeout_s: float, until: Any, interval_ms: int = 250) -> Any:
    """Poll ``script`` until ``until(value)`` holds or ``timeout_s`` passes; returns the last value."""
    deadline = time.monotonic() + timeout_s
    value = page.evaluate(script, arg)
    while not until(value) and time.monotonic() < deadline:
        page.wait_for_timeout(interval_ms)
        value = page.evaluate(script, arg)
    return value


def _open(page: Any, lab: LabServer, path: str, report: LabReport) -> bool:
    page.goto(lab.tree_url(path), wait_until="domcontentloaded")
    state = _wait(page, _READY, PANEL, OPEN_TIMEOUT_S, lambda value: value is not None)
    if state is None:
        report.add("open", f"Lab did not show the notebook with an idle kernel within {OPEN_TIMEOUT_S} s")
        return False
    if "dialog" in state:
        report.add("open", f"Lab opened a dialog instead of the notebook: {state['dialog']!r}")
        return False
    tab = page.locator(".lm-DockPanel-tabBar .lm-TabBar-tab.lm-mod-current").first
    title = tab.get_attribute("title") or ""
    if f"Path: {path}" not in title:
        report.add("open", f"the current tab is not the notebook (its title is {title!r})")
        return False
    return True


def _wait_kernel_idle(lab: LabServer, path: str, timeout_s: float, readings: int = 3) -> str | None:
    """Wait until the server reports ``path``'s kernel idle ``readings`` times in a row (0.5 s
    apart) or ``timeout_s`` passes; returns the last state read."""
    deadline = time.monotonic() + timeout_s
    same, state = 0, None
    while time.monotonic() < deadline:
        try:
            state = lab.kernel_state(path)
        except (URLError, HTTPError, OSError):
            state = None
        same = same + 1 if state == "idle" else 0
        if same >= readings:
            break
        time.sleep(0.5)
    return state


def _run_all(page: Any, lab: LabServer, path: str, report: LabReport, timeout_s: float) -> None:
    """Run > Run All Cells, then wait until no prompt shows [*] and the kernel is idle (in the
    page and, since the page's indicators can lag or be absent, on the server)."""
    page.locator(".lm-MenuBar-item", has_text=re.compile(r"^\s*Run\s*$")).click()
    # The Run menu's entry is `runmenu:run-all` (it runs `notebook:run-all-cells` on the notebook).
    page.locator(
        '.lm-Menu-item[data-command="runmenu:run-all"], .lm-Menu-item[data-command="notebook:run-all-cells"]'
    ).first.click()
    page.wait_for_timeout(1000)
    started = time.monotonic()
    stable = 0
    state = None
    while time.monotonic() - started < timeout_s:
        state = page.evaluate(_RUN_STATE, PANEL)
        if state and state["dialog"]:
            report.add("run", f"a dialog opened during Run All: {state['dialog'][:200]!r}")
            return
        idle = state is not None and state["running"] == 0 and state["status"] in ("idle", None)
        stable = stable + 1 if idle else 0
        if stable >= 3:
            left = max(1.0, timeout_s - (time.monotonic() - started))
            state = _wait_kernel_idle(lab, path, left)
            if state != "idle":
                report.add("run", f"Run All: the kernel was still {state!r} on the server after {timeout_s:.0f} s")
            return
        page.wait_for_timeout(500)
    report.add(
        "run",
        f"Run All had not finished after {timeout_s:.0f} s "
        f"({state['running'] if state else '?'} cell(s) still [*], kernel {state['status'] if state else '?'})",
    )


def _check_markdown(page: Any, report: LabReport, cells: int | None = None) -> dict[str, Any]:
    """The ``markdown`` check (every Markdown cell rendered, no raw MyST); returns what
    ``_COLLECT`` gathered, for the checks of a notebook that ran.

    ``cells``: the notebook's number of cells on disk. Lab adds a freshly opened notebook's cells
    to the page a few at a time, so the check first waits until all of them are there."""
    if cells is not None:
        _wait(page, _CELL_COUNT, PANEL, MARKDOWN_TIMEOUT_S, lambda n: n >= cells)
    _wait(page, _UNRENDERED, PANEL, MARKDOWN_TIMEOUT_S, lambda n: n == 0)
    data: dict[str, Any] = page.evaluate(_COLLECT, PANEL)
    for index in data["unrendered"]:
        report.add("markdown", f"cell {index}: Markdown cell not rendered")
    for block in data["markdown"]:
        where = f"cell {block['index']}" + (" (output)" if block["where"] == "output" else "")
        for directive in block["directives"]:
            report.add("markdown", f"{where}: raw directive shown as a code block: {directive[:120]!r}")
        for kind, excerpt in _raw_myst(block["text"]):
            report.add("markdown", f"{where}: raw MyST {kind} {excerpt}")
    return data


def _check_outputs(page: Any, lab: LabServer, path: str, report: LabReport) -> None:
    pending = _wait(page, _WIDGETS_PENDING, [PANEL, CONTROLS], WIDGET_TIMEOUT_S, lambda n: n == 0)
    on_disk = _code_cells_with_source(lab.root, path)
    data = _check_markdown(page, report, on_disk[0] if on_disk else None)
    code = [cell for cell in data["cells"] if cell["kind"] == "code"]
    report.code_cells = len(code)
    report.cells_run = sum(bool(re.search(r"\[\d+\]", cell["prompt"])) for cell in code)
    # (Skipped if the file changed meanwhile: indices would not match.)
    if on_disk is not None and on_disk[0] == len(data["cells"]):
        with_source = on_disk[1]
        not_run = [cell["index"] for cell in code if cell["index"] in with_source and not re.search(r"\[\d+\]", cell["prompt"])]
        if not_run:
            report.add("run", f"{len(not_run)} code cell(s) never ran (Run All stopped?): cells {not_run[:10]}")
    for output in data["outputs"]:
        text = output["text"].strip()
        if output["mime"] == "application/vnd.jupyter.error" or _is_traceback(text):
            last = [line for line in text.splitlines() if line.strip()][-1:] or [""]
            report.add("errors", f"cell {output['index']}: error output: {last[0].strip()[:200]!r}")
        else:
            flat = re.sub(r"\s+", " ", text)
            report.stderr.append(f"cell {output['index']}: {flat[:200]!r}")
    for inline in data["inline"]:
        report.add("errors", f"cell {inline['index']}: inline expression in Markdown failed: {inline['text']!r}")
    for widget in data["widgets"]:
        report.add("widgets", f"cell {widget['index']}: {widget['what']!r}")
    if pending and not data["widgets"]:
        report.add("widgets", f"{pending} widget output(s) still rendering after {WIDGET_TIMEOUT_S} s")


def _figure_state(page: Any, explorer_id: int) -> dict[str, Any] | None:
    state: dict[str, Any] | None = page.evaluate(_FIGURE_STATE, explorer_id)
    return state


def _settled_figure(page: Any, explorer_id: int, timeout_s: float = 10) -> dict[str, Any] | None:
    """The figure's state once it has stopped changing (three equal readings)."""
    deadline = time.monotonic() + timeout_s
    last, same = _figure_state(page, explorer_id), 0
    while time.monotonic() < deadline and same < 3:
        page.wait_for_timeout(250)
        state = _figure_state(page, explorer_id)
        same = same + 1 if state == last else 0
        last = state
    return last


def _move_control(page: Any, explorer: Any, kind: str, *, by_mouse: bool = False) -> str:
    """Move the first control of an explorer one step; returns 'label: before -> after'.

    A slider moves by an arrow key on its handle, or with ``by_mouse`` by a click on its track
    a quarter of the way from the handle (a different path through the widget's events)."""
    if kind == "slider":
        handle = explorer.locator(".widget-slider").first.locator(".noUi-handle").first
        handle.scroll_into_view_if_needed()
        before = handle.get_attribute("aria-valuetext") or handle.get_attribute("aria-valuenow")
        now = float(handle.get_attribute("aria-valuenow") or 0)
        low = float(handle.get_attribute("aria-valuemin") or 0)
        top = float(handle.get_attribute("aria-valuemax") or 0)
        if by_mouse:
            track = explorer.locator(".widget-slider").first.locator(".noUi-base").first
            box = track.bounding_box()
            if box is None:
                raise RuntimeError("the slider's track has no box")
            share = (now - low) / (top - low) if top > low else 0.0
            share = share + 0.25 if share < 0.5 else share - 0.25
            track.click(position={"x": box["width"] * share, "y": box["height"] / 2})
            how = "click on the track"
        else:
            handle.focus()
            handle.press("ArrowRight" if now < top else "ArrowLeft")
            how = "arrow key on the handle"
        after = handle.get_attribute("aria-valuetext") or handle.get_attribute("aria-valuenow")
        return f"{before} -> {after} ({how})"
    if kind == "dropdown":
        select = explorer.locator(".widget-dropdown select").first
        select.scroll_into_view_if_needed()
        options = select.locator("option").all_text_contents()
        current = select.evaluate("el => el.selectedIndex")
        target = (current + (2 if by_mouse and len(options) > 2 else 1)) % len(options)
        select.select_option(index=target)
        return f"{options[current]!r} -> {options[target]!r}"
    buttons = explorer.locator(".widget-toggle-buttons").first.locator("button")
    labels = buttons.all_text_contents()
    active = [i for i in range(buttons.count()) if "mod-active" in (buttons.nth(i).get_attribute("class") or "")]
    current = active[0] if active else -1
    target = (current + 1) % len(labels)
    buttons.nth(target).click()
    return f"{labels[current] if current >= 0 else None!r} -> {labels[target]!r}"


def _wait_for_redraw(page: Any, lab: LabServer, path: str, explorer_id: int, old_hash: str, timeout_s: float) -> Any:
    """Poll the figure until its hash differs from ``old_hash``. Waits ``timeout_s``, and longer
    (up to the Run All timeout) while the server reports the kernel busy: a loaded machine
    may still be computing the redraw."""
    started = time.monotonic()
    while True:
        state = _figure_state(page, explorer_id)
        if state and state["drawn"] and state["hash"] != old_hash:
            return state
        waited = time.monotonic() - started
        if waited >= RUN_TIMEOUT_S:
            return state
        if waited >= timeout_s:
            try:
                busy = lab.kernel_state(path) == "busy"
            except (URLError, HTTPError, OSError):
                busy = False
            if not busy:
                return state
        page.wait_for_timeout(250)


def _check_explorers(page: Any, lab: LabServer, path: str, report: LabReport, timeout_s: float) -> None:
    explorers = page.evaluate(_FIND_EXPLORERS, [PANEL, CONTROLS])
    for found in explorers:
        result = dict(found, ok=False, moved="", why="")
        report.explorers.append(result)
        locator = page.locator(f'[data-lab-check-explorer="{found["id"]}"]')
        where = f"explorer {found['id'] + 1} (cell {found['cell']}, {found['kind']} {found['label']!r})"
        # A widget message waits behind any execution still queued: move only on an idle kernel.
        _wait_kernel_idle(lab, path, RUN_TIMEOUT_S)
        try:
            locator.scroll_into_view_if_needed()
            before = _settled_figure(page, found["id"])
            if not before or not before["drawn"]:
                result["why"] = "its figure was never drawn"
                report.add("explorers", f"{where}: {result['why']}")
                continue
            result["moved"] = _move_control(page, locator, found["kind"])
        except Exception as error:  # noqa: BLE001 - any failure to drive the control is the finding
            result["why"] = f"could not move its control: {str(error).splitlines()[0]}"
            report.add("explorers", f"{where}: {result['why']}")
            continue
        after = _wait_for_redraw(page, lab, path, found["id"], before["hash"], timeout_s)
        if not (after and after["drawn"] and after["hash"] != before["hash"]):
            # On a loaded machine an input can be lost before the widget listens: once more,
            # by another route (a click instead of a key).
            try:
                again = _move_control(page, locator, found["kind"], by_mouse=True)
                result["moved"] = f"{result['moved']}; again: {again}"
            except Exception as error:  # noqa: BLE001 - the finding below reports the unchanged figure
                result["moved"] = f"{result['moved']}; again: failed ({str(error).splitlines()[0]})"
            after = _wait_for_redraw(page, lab, path, found["id"], before["hash"], timeout_s)
        if after and after["drawn"] and after["hash"] != before["hash"]:
            result["ok"] = True
            result["why"] = f"figure changed (title {before['title']!r} -> {after['title']!r})"
        else:
            try:
                kernel = lab.kernel_state(path)
            except (URLError, HTTPError, OSError) as error:
                kernel = f"unknown ({error})"
            drawn = "no figure found" if after is None else "figure drawn" if after["drawn"] else "figure not drawn"
            result["why"] = (
                f"its figure did not change within {timeout_s:.0f} s after {result['moved']} "
                f"(kernel {kernel} on the server, {drawn})"
            )
            report.add("explorers", f"{where}: {result['why']}")


def inspect_notebook(
    context: Any,
    lab: LabServer,
    path: str,
    *,
    run_timeout: float = RUN_TIMEOUT_S,
    explorer_timeout: float = EXPLORER_TIMEOUT_S,
    screenshot: Path | None = None,
    run: bool = True,
) -> LabReport:
    """Open ``path`` (relative to the served root) in a new tab of ``context`` (a Playwright
    ``BrowserContext``), Run All, check it, shut its kernel down and close the tab.

    ``run=False``: open it (with its kernel) and check its Markdown only; no cell runs.

    ``screenshot``: where to save a PNG of the tab after the checks (the first explorer in
    view, if there is one)."""
    from playwright.sync_api import Error as PlaywrightError

    report = LabReport(path=path)
    started = time.perf_counter()
    page = context.new_page()

    def route(route: Any) -> None:
        if route.request.url.startswith(lab.url) or route.request.url.startswith(("data:", "blob:")):
            route.continue_()
        else:
            report.blocked_requests.append(route.request.url)
            route.abort("blockedbyclient")

    page.route("**/*", route)
    page.on("console", lambda message: report.console_errors.append(message.text[:300]) if message.type == "error" else None)
    page.on("pageerror", lambda error: report.console_errors.append(f"uncaught: {str(error)[:300]}"))
    try:
        if _open(page, lab, path, report):
            report.seconds["open"] = time.perf_counter() - started
            mark = time.perf_counter()
            if run:
                _run_all(page, lab, path, report, run_timeout)
                report.seconds["run"] = time.perf_counter() - mark
                mark = time.perf_counter()
                _check_outputs(page, lab, path, report)
                _check_explorers(page, lab, path, report, explorer_timeout)
            else:
                on_disk = _code_cells_with_source(lab.root, path)
                _check_markdown(page, report, on_disk[0] if on_disk else None)
            report.seconds["checks"] = time.perf_counter() - mark
            if screenshot is not None:
                first = page.locator('[data-lab-check-explorer="0"]')
                if first.count():
                    first.scroll_into_view_if_needed()
                    page.wait_for_timeout(500)
                screenshot.parent.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(screenshot))
                report.screenshot = str(screenshot)
    except PlaywrightError as error:
        report.add("run" if run else "open", f"the browser failed: {type(error).__name__}: {str(error).splitlines()[0]}")
    finally:
        try:
            lab.shutdown_kernels(path)
        except (URLError, HTTPError, OSError) as error:
            report.add("run" if run else "open", f"could not shut the kernel down: {error}")
        page.close()
    report.seconds["total"] = time.perf_counter() - started
    return report


def check_notebook(context: Any, lab: LabServer, path: str, **options: Any) -> list[str]:
    """The problems Lab shows for ``path`` (empty when it reads cleanly); see :func:`inspect_notebook`."""
    return inspect_notebook(context, lab, path, **options).problems()


@contextmanager
def lab_browser() -> Iterator[Any]:
    """A headless Chromium context for Lab (the site checks' browser and flags)."""
    with launch_browser() as browser:
        context = new_context(browser, viewport=VIEWPORT)
        try:
            yield context
        finally:
            context.close()


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("notebooks", nargs="*", help="repository-relative notebooks (default: every notebook of the toc)")
    parser.add_argument("--screenshot", type=Path, default=None, help="folder for a PNG of each notebook")
    parser.add_argument("--disable-extension", action="append", default=[], metavar="NAME",
                        help="a lab extension not to load, e.g. jupyterlab-myst (repeatable)")
    args = parser.parse_args(argv)
    notebooks = args.notebooks or toc_notebooks()
    failures = 0
    started = time.perf_counter()
    with lab_server(ROOT, disabled_extensions=tuple(args.disable_extension)) as lab, lab_browser() as context:
        print(f"JupyterLab at {lab.url} with extensions: {', '.join(lab.federated_extensions())}")
        for path in notebooks:
            shot = args.screenshot / (Path(path).stem + ".png") if args.screenshot else None
            report = inspect_notebook(context, lab, path, screenshot=shot)
            failures += bool(report.problems())
            print(report.describe(), flush=True)
    print(f"{len(notebooks)} notebook(s), {failures} with problems, {time.perf_counter() - started:.0f} s")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())


# -- the tests' shared parts: tests/test_lab.py and tests/test_lab_second_half.py each check half of the
# notebooks (one pytest worker each, so the two halves run side by side) ----------------------------------
#: The checks of a notebook run in full: the keys of ``LabReport.findings`` and what each guards.
CHECKS = {
    "open": "Lab opens the notebook and starts its kernel",
    "run": "Run All finishes within the timeout and every code cell runs",
    "errors": "no error output (traceback) in any cell, no failed inline expression in Markdown",
    "widgets": "every widget renders: no 'Error displaying widget', no error view, no 'Loading widget' left",
    "explorers": "in every explorer, moving the first control redraws the figure",
    "markdown": "no raw MyST markup or unfilled placeholder in rendered Markdown",
}
#: The checks of a notebook only opened (see ``RUN_IN_LAB``).
OPEN_CHECKS = {check: CHECKS[check] for check in ("open", "markdown")}

#: The notebooks ``make test`` runs in full in Lab (Run All, every widget, one control moved in
#: each explorer). Between them they drive every kind of live control that an explorer moves
#: first: toggle buttons (chapter 1), integer sliders (chapter 2) and a selection slider over
#: stored steps (chapter 3); all explorers are the one ``posenc.interactive.Explorer`` widget.
#: Every other notebook is opened in Lab with its kernel and its Markdown checked. What a full run
#: would add for them is checked elsewhere on every notebook: the strict build and nbval run each
#: one in a kernel; the build computes every explorer's frames with the update its widget calls
#: (tests/test_interactive.py drives that widget off the grid); the site's browser checks click
#: every static explorer. ``make lab-test`` runs every notebook in full
#: (``POSENC_LAB_RUN=all``).
RUN_IN_LAB = ("book/01_why_order_matters.ipynb", "book/02_sinusoidal.ipynb", "book/03_learned.ipynb")
#: The live control kinds (``_FIND_EXPLORERS``'s names) the full runs must have moved.
CONTROL_KINDS_MOVED = ("slider", "toggle buttons")


def runs_in_lab(path: str) -> bool:
    """Whether the Lab tests run ``path`` in full (``RUN_IN_LAB``, or every notebook when the
    environment sets ``POSENC_LAB_RUN=all``)."""
    choice = os.environ.get("POSENC_LAB_RUN", "")
    if choice not in ("", "all"):
        raise ValueError(f"POSENC_LAB_RUN={choice!r}: expected 'all' (every notebook in full) or unset")
    return choice == "all" or path in RUN_IN_LAB


def lab_checks(paths: list[str]) -> list[tuple[str, str]]:
    """(notebook, check) pairs of the Lab tests: every check of a notebook run in full, the
    open checks of the others."""
    return [(path, check) for path in paths for check in (CHECKS if runs_in_lab(path) else OPEN_CHECKS)]


# Module scope, not session: Playwright allows one sync instance per thread, and the next test
# file on this pytest worker (site checks, the other Lab file) starts its own browser.
@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabServer]:
    require_lab_tools()
    with lab_server(ROOT, home=tmp_path_factory.mktemp("lab-home")) as server:
        yield server


class LabReports:
    """One browser context; runs each notebook once and remembers its report.

    One exception: if the only findings are explorers whose figure did not redraw, the
    notebook is opened once more in a fresh tab with a fresh kernel and that report is kept,
    with the first attempt's findings in ``retried`` (printed by the "run" check). Under a
    loaded CI machine a widget view can die in the browser (seen: an uncaught
    "Cannot read properties of undefined (reading 'node')" while the kernel was idle), which a
    reader would fix by re-running the notebook; an explorer that fails twice still fails.
    """

    def __init__(self, context: Any, lab: LabServer) -> None:
        self.context, self.lab = context, lab
        self.reports: dict[str, LabReport] = {}
        self.retried: dict[str, list[str]] = {}

    def report(self, path: str) -> LabReport:
        if path not in self.reports:
            run = runs_in_lab(path)
            report = inspect_notebook(self.context, self.lab, path, run=run)
            if _only_lost_redraws(report):
                self.retried[path] = list(report.findings["explorers"])
                report = inspect_notebook(self.context, self.lab, path, run=run)
            self.reports[path] = report
        return self.reports[path]


def _only_lost_redraws(report: LabReport) -> bool:
    """True if every finding is an explorer whose figure was drawn but did not change after a move."""
    findings = {check: problems for check, problems in report.findings.items() if problems}
    return set(findings) == {"explorers"} and all("did not change within" in p for p in findings["explorers"])


@pytest.fixture(scope="module")
def reports(lab: LabServer) -> Iterator[LabReports]:
    with lab_browser() as context:
        yield LabReports(context, lab)


def _mentions_explorer(path: str) -> bool:
    notebook = json.loads((ROOT / path).read_text(encoding="utf-8"))
    return any(
        cell["cell_type"] == "code" and "explorer(" in "".join(cell["source"]) for cell in notebook["cells"]
    )


def check_notebook_in_lab(reports: LabReports, path: str, check: str) -> None:
    """One check of one notebook (the body of the tests of tests/test_lab*.py)."""
    report = reports.report(path)
    if check == "open":
        print(report.describe())  # timings, explorers moved, stderr: shown with `pytest -rA`
        if path in reports.retried:
            print(f"first attempt, retried once in a fresh kernel: {reports.retried[path]}")
    if check != "open" and "open" in report.findings:
        pytest.fail(f"the notebook did not open in Lab:\n{report.describe()}", pytrace=False)
    if check not in ("open", "run") and "run" in report.findings and report.cells_run == 0:
        pytest.fail(f"the notebook did not run in Lab:\n{report.describe()}", pytrace=False)
    problems = report.findings.get(check, [])
    if check == "explorers" and not report.explorers and _mentions_explorer(path):
        problems = ["a code cell calls an explorer, but no explorer (controls + figure) was found in Lab"]
    assert not problems, (
        f"{CHECKS[check]}: {len(problems)} problem(s) in {path}\n"
        + "\n".join(f"  {problem}" for problem in problems)
        + f"\n\nfull report:\n{report.describe()}"
    )


