"""Opening a report page in Debian's headless Chromium, as a reader would: the page must
load every image and its plots (the reports' script marks `data-images` and `data-plots`
on `<body>`) with no error on the console. Skips the test where Chromium is absent."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest


def chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


def check_page_in_browser(index: Path, images: int) -> None:
    """Opens `index` headless and checks that its `images` images and plots loaded."""
    browser = chromium()
    if browser is None:
        pytest.skip(
            "no Chromium: install Debian's `chromium` (scripts/install-deps.sh does) to open "
            "the report in a headless browser"
        )
    result = subprocess.run(
        [
            browser,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--allow-file-access-from-files",
            "--enable-logging=stderr",
            "--v=0",
            "--virtual-time-budget=10000",
            "--dump-dom",
            index.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    dom = result.stdout
    assert f'data-images="{images}"' in dom, dom[:500]
    assert 'data-plots="ok"' in dom, re.findall(r'data-plots="[^"]*"', dom)
    console = [line for line in result.stderr.splitlines() if "CONSOLE" in line]
    errors = [line for line in console if "ERROR" in line or "error" in line.lower()]
    assert not errors, errors
