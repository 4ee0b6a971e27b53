"""Headless Chromium and a local server for the built site: shared by ``make pdf``, the benchmarks
and the site and JupyterLab checks of the tests.

Chromium is Debian's ``chromium`` package (``make browser-deps``), driven by Playwright's
Python package; nothing is downloaded.
"""

from __future__ import annotations

import functools
import os
import shutil
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
#: Set to another build (e.g. one made with ``make pages``) to check or print it instead of ``_build/html``.
SITE_ENV = "POSENC_SITE"
#: Set to a Chromium binary to use it instead of the ``chromium`` on PATH.
CHROMIUM_ENV = "POSENC_CHROMIUM"
#: Chromium flags known to work on these machines (no sandbox as root, nothing from the network); headless is
#: Playwright's.
CHROMIUM_FLAGS = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
)
#: How long a page may take to load (Playwright's default timeout for a checking context).
PAGE_TIMEOUT_MS = 30_000


def site_dir() -> Path:
    """The built site: ``$POSENC_SITE`` or ``_build/html`` of the repository."""
    return Path(os.environ.get(SITE_ENV) or ROOT / "_build" / "html").resolve()


def site_is_partial() -> bool:
    """True when ``POSENC_SITE`` points at another build (e.g. ``make pages``): pages of the
    table of contents that it lacks are skipped instead of failing."""
    return bool(os.environ.get(SITE_ENV))


def chromium_path() -> str | None:
    """The Chromium binary to drive: ``$POSENC_CHROMIUM`` or Debian's ``chromium`` on PATH."""
    return os.environ.get(CHROMIUM_ENV) or shutil.which("chromium") or shutil.which("chromium-browser")


def missing_chromium() -> str | None:
    """Why no browser can be started here (a message for ``pytest.skip``), or None.

    Chromium is a Debian package that ``make test`` installs only as root; everything else the
    browser needs is a pinned Python package."""
    if chromium_path() is None:
        return ("Chromium not found: install Debian's `chromium` (`make browser-deps` does it as root), "
                f"or set {CHROMIUM_ENV} to a Chromium binary")
    return None


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        pass


@contextmanager
def serve(directory: Path) -> Iterator[str]:
    """Serve ``directory`` on 127.0.0.1 at a free port; yields the base URL (ending in /)."""
    handler = functools.partial(_QuietHandler, directory=str(directory))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, name="site-server", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@contextmanager
def launch_browser() -> Iterator[Any]:
    """One headless Chromium (Playwright ``Browser``) for many pages."""
    from playwright.sync_api import sync_playwright

    executable = chromium_path()
    if executable is None:
        raise RuntimeError(missing_chromium())
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, headless=True, args=list(CHROMIUM_FLAGS))
        try:
            yield browser
        finally:
            browser.close()


def new_context(browser: Any, viewport: tuple[int, int] = (1280, 900), **options: Any) -> Any:
    """A browser context for checking pages (desktop viewport unless given, no service workers).

    ``options`` go to Playwright's ``Browser.new_context`` (e.g. ``has_touch=True``,
    ``color_scheme="dark"``).
    """
    context = browser.new_context(viewport={"width": viewport[0], "height": viewport[1]}, service_workers="block",
                                  **options)
    context.set_default_timeout(PAGE_TIMEOUT_MS)
    return context
