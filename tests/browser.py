"""A real headless Chromium (Debian's, with its chromedriver) driven by Selenium, for the
inspector's tests: nothing is downloaded, and the browser is started with the flags this
closed network needs."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.chrome.service import Service as DriverService
from selenium.webdriver.support.ui import WebDriverWait

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
# Without the background-networking flags Chromium keeps trying to reach Google's hosts,
# which this network refuses.
FLAGS = (
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--window-size=1400,1000",
)
# Where the tests' screenshots go: the docs' own folder when INSPECTOR_SCREENSHOTS names it
# (docs/screenshots), else a temporary one.
SCREENSHOTS = os.environ.get("INSPECTOR_SCREENSHOTS", "")

T = TypeVar("T")


@contextmanager
def chromium() -> Iterator[webdriver.Chrome]:
    """A headless Chromium session with a fresh profile.

    Fails (not skips) without the browser: scripts/test installs it (scripts/install_browser).
    """
    missing = [p for p in (CHROMIUM, CHROMEDRIVER) if not os.access(p, os.X_OK)]
    if missing:
        raise RuntimeError(f"{', '.join(missing)} missing: run scripts/install_browser (as root)")
    profile = tempfile.mkdtemp(prefix="contextwm-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={profile}")
    driver = webdriver.Chrome(options=options, service=DriverService(CHROMEDRIVER))
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def wait(driver: webdriver.Chrome, until: Callable[[Any], T], seconds: float = 15.0) -> T:
    """until(driver)'s first truthy value, tried until seconds pass; an element the page
    replaced meanwhile counts as not yet."""
    waiting = WebDriverWait(
        driver, seconds, poll_frequency=0.05, ignored_exceptions=[StaleElementReferenceException]
    )
    return waiting.until(until)


def screenshot(driver: webdriver.Chrome, name: str, fallback: Path) -> Path:
    """Saves the page as name.png in the screenshots folder (or fallback)."""
    folder = Path(SCREENSHOTS) if SCREENSHOTS else fallback
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.png"
    driver.save_screenshot(str(path))
    return path
