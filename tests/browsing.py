"""The HTML report in a real headless Chromium (the system's, driven by playwright): a page opened
from disk, what it said on its console and every request it made. ``CTXGATE_SCREENSHOTS=DIR`` keeps
each view's screenshot there as a small PNG (the README's images come from it)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        pytest.skip("no Chromium: bash scripts/browser.sh (apt-get install chromium) installs it")
    return found


def launch() -> Iterator[Any]:
    """One browser for a module's tests (the fixture's body: ``yield from launch()``)."""
    executable = chromium()
    sync_api = pytest.importorskip(
        "playwright.sync_api", reason="pip install playwright (the dev extra)"
    )
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        yield b
        b.close()


class Opened:
    """A page opened from disk, with what it said on its console and every request it made."""

    def __init__(self, browser: Any, path: Path, shots: Path) -> None:
        self.page = browser.new_page(viewport={"width": 1280, "height": 900})
        self.errors: list[str] = []
        self.requests: list[str] = []
        self.shots = shots
        self.page.on(
            "console",
            lambda m: self.errors.append(m.text) if m.type in ("error", "warning") else None,
        )
        self.page.on("pageerror", lambda exc: self.errors.append(str(exc)))
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.url = path.resolve().as_uri()
        self.page.goto(self.url)

    def shot(self, name: str, selector: str | None = None) -> None:
        target = self.shots / f"{name}.png"
        if selector:
            self.page.locator(selector).first.screenshot(path=str(target))
        else:
            self.page.screenshot(path=str(target))
        keep = os.environ.get("CTXGATE_SCREENSHOTS")
        if keep:  # for the README: small, 256 colours
            from PIL import Image

            Path(keep).mkdir(parents=True, exist_ok=True)
            Image.open(target).convert("RGB").quantize(256).save(
                Path(keep) / target.name, optimize=True
            )

    def clean(self) -> None:
        assert self.errors == []
        assert {r.split("#")[0] for r in self.requests} == {self.url}  # nothing but the file itself
