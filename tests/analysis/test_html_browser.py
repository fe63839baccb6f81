"""The HTML page in a real headless Chromium: no console message of any kind, every plot drawn
(the page's own script counts them into the title), and a screenshot a person can look at."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import matplotlib.image
import pytest

from deploybench.analysis.report import write_report
from deploybench.analysis.synthetic import generate
from tests.analysis import handmade

pytestmark = pytest.mark.slow

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
CONSOLE = re.compile(r":CONSOLE[:(]|Uncaught")


@pytest.fixture(scope="module")
def browser():
    if CHROMIUM is None:
        pytest.fail("chromium is not installed (.ci/apt-packages-report.txt lists it)")
    return CHROMIUM


def open_page(browser: str, page: Path, tmp: Path, *extra: str) -> subprocess.CompletedProcess:
    profile = tmp / f"profile-{len(list(tmp.glob('profile-*')))}"
    return subprocess.run(
        [browser, *FLAGS, f"--user-data-dir={profile}", *extra, page.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
    )


def check_page(browser: str, page: Path, tmp: Path, shot: Path) -> None:
    dom = open_page(browser, page, tmp, "--dump-dom")
    assert dom.returncode == 0, dom.stderr[-2000:]
    title = re.search(r"<title>([^<]*)</title>", dom.stdout).group(1)
    assert title == "DeployBench report (plots drawn: 5/5)"
    run = open_page(
        browser,
        page,
        tmp,
        "--enable-logging=stderr",
        "--v=0",
        f"--screenshot={shot}",
        "--window-size=1400,4000",
    )
    assert run.returncode == 0, run.stderr[-2000:]
    console = [line for line in run.stderr.splitlines() if CONSOLE.search(line)]
    assert console == []
    pixels = matplotlib.image.imread(shot)
    assert pixels.shape[:2] == (4000, 1400)
    # something is drawn: far from a blank page
    assert pixels[..., :3].std() > 0.05


def test_page_of_synthetic_runs(browser, tmp_path):
    run_dir, catalog = generate(tmp_path / "synthetic", n_attempts=40, n_commands=30)
    result = write_report([run_dir], tmp_path / "out", catalog)
    shot = Path(os.environ.get("DEPLOYBENCH_SCREENSHOT", tmp_path / "report.png"))
    check_page(browser, result.html, tmp_path, shot)


def test_page_of_the_hand_made_run(browser, tmp_path):
    run_dir, catalog = handmade.build(tmp_path)
    result = write_report([run_dir], tmp_path / "out", catalog)
    check_page(browser, result.html, tmp_path, tmp_path / "hand.png")


def test_the_console_check_catches_errors(browser, tmp_path):
    # The check above must be able to fail: a page with a console error and an exception.
    page = tmp_path / "bad.html"
    page.write_text(
        "<!DOCTYPE html><title>x</title><script>console.error('boom'); missing();</script>"
    )
    run = open_page(browser, page, tmp_path, "--enable-logging=stderr", "--v=0", "--dump-dom")
    console = [line for line in run.stderr.splitlines() if CONSOLE.search(line)]
    assert len(console) == 2 and "Uncaught ReferenceError" in console[1]


def test_page_of_the_demo_run(browser, tmp_path):
    demo = Path(__file__).parent / "fixtures" / "demo_run"
    result = write_report([demo], tmp_path / "out")
    check_page(browser, result.html, tmp_path, tmp_path / "demo.png")
