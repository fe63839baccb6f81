"""The drill-down: each mark of the outcome matrix links to its attempt's page inside the report
folder, which shows the verdict with its checks, the trajectory, the runbook, the diagnosis and
the verifier log's end; checked in headless Chromium at desktop and phone widths (a link from
the matrix lands on the attempt's first command), and against an agent that writes HTML and
template syntax into everything it controls."""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from pathlib import Path

import matplotlib.image
import pytest

from deploybench import runfolder
from deploybench.analysis.report import write_report
from tests.analysis.test_html_browser import (
    DEMO,
    DESKTOP,
    FLAGS,
    PHONE,
    console_lines,
    framed,
    open_page,
    shots_dir,
)

# Added to a copy of an attempt page: where the browser put the page for its #fragment, and
# whether anything is wider than the window.
PROBE = r"""
<script>
window.addEventListener("load", function () {
  var target = document.querySelector(":target");
  var doc = window.parent.document;
  var out = doc.createElement("pre");
  out.id = "probe";
  out.textContent = JSON.stringify({
    target: target ? target.id : null,
    top: target ? Math.round(target.getBoundingClientRect().top) : null,
    scrolled: Math.round(window.scrollY),
    width: innerWidth,
    overflow: document.documentElement.scrollWidth - innerWidth,
    scripts: document.scripts.length,
    checks: document.querySelectorAll("#verdict ~ table tbody tr").length,
    commands: document.querySelectorAll("ol.timeline li").length
  });
  doc.body.appendChild(out);
});
</script>
"""


def probe(browser, page: Path, tmp: Path, fragment: str = "", width: int = DESKTOP) -> dict:
    """Open a copy of the page (at its #fragment) and read back what PROBE found."""
    copy = page.with_name(f"{page.stem}-probe.html")
    copy.write_text(page.read_text().replace("</body>", PROBE + "</body>"))
    if width == DESKTOP:
        profile = tmp / f"profile-probe-{len(list(tmp.glob('profile-*')))}"
        run = subprocess.run(
            [browser, *FLAGS, f"--user-data-dir={profile}", "--dump-dom",
             f"--window-size={width},700", copy.as_uri() + fragment],
            capture_output=True, text=True, timeout=180,
        )  # fmt: skip
    else:  # narrower than Chromium's smallest window: inside a frame of that width
        narrow = framed(copy.read_text(), copy.with_name(f"{page.stem}-{width}.html"), width, 700)
        run = open_page(browser, narrow, tmp, "--dump-dom", "--window-size=500,700")
    assert run.returncode == 0, run.stderr[-2000:]
    found = re.search(r'<pre id="probe">(.*?)</pre>', run.stdout, re.S)
    assert found, run.stdout[-2000:]
    return json.loads(html.unescape(found.group(1)))


def test_every_mark_links_to_its_attempts_page(tmp_path):
    result = write_report([DEMO], tmp_path / "out")
    page = result.html.read_text()
    links = re.findall(
        r'<a class="chip [^"]*" title="[^"]*" href="(attempts/\d+\.html)#first-command">', page
    )
    assert len(links) == 9 and len(set(links)) == 9
    for link in links:
        assert (result.out / link).is_file()
    rows = [json.loads(x) for x in (DEMO / "results.jsonl").read_text().splitlines()]
    # The nop attempt of legacycalc: its verdict's checks and its two events, on its page.
    n = next(
        i
        for i, r in enumerate(rows, 1)
        if (r["task_id"], r["agent"]) == ("legacycalc_demo24", "nop")
    )
    text = (result.out / f"attempts/{n}.html").read_text()
    verdict = json.loads((DEMO / "legacycalc_demo24/nop/1" / runfolder.VERDICT).read_text())
    for check in verdict["layer2"]["checks"]:
        assert f"<code>{check['name']}</code>" in text
    assert "scripted agent: 0 commands" in text and "FAIL" in text


def _hostile_run(tmp_path: Path) -> Path:
    run = tmp_path / "hostile"
    shutil.copytree(DEMO, run)
    attempt = run / "legacycalc_demo24/nop/1"
    evil = "<script>alert(1)</script>{{ 7*7 }}{% raw %}<img src=x onerror=alert(2)>"
    events = [
        {"step": 0, "kind": "message", "output": evil, "t": 0.0},
        {"step": 1, "kind": "command", "command": evil, "exit_code": 1, "soft_timeout": False,
         "output": evil * 2, "t": 1.0},
        {"step": 2, "kind": "file_edit", "path": evil, "t": 2.0},
        {"step": 3, "kind": "finish", "output": "done", "t": 3.0},
    ]  # fmt: skip
    (attempt / runfolder.TRAJECTORY).write_text("".join(json.dumps(e) + "\n" for e in events))
    (attempt / runfolder.RUNBOOK).write_text(f"STATUS: SUCCESS\n{evil}\n")
    (attempt / runfolder.DIAGNOSIS).write_text(json.dumps({"root_cause": evil}))
    return run


def test_an_agents_html_and_templates_are_shown_as_text(tmp_path):
    result = write_report([_hostile_run(tmp_path)], tmp_path / "out")
    pages = sorted((result.out / "attempts").glob("*.html"))
    hostile = next(p for p in pages if "alert(1)" in p.read_text())
    text = hostile.read_text()
    assert "<script" not in text and "<img" not in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;{{ 7*7 }}" in text  # escaped, not evaluated
    assert "49" not in re.sub(r"\d{3,}", "", text.split("<body>")[1])


@pytest.mark.slow
def test_a_click_from_the_matrix_lands_on_the_first_command(tmp_path):
    from tests.analysis.test_html_browser import CHROMIUM

    assert CHROMIUM, "chromium is not installed (.ci/apt-packages-report.txt lists it)"
    result = write_report([_hostile_run(tmp_path)], tmp_path / "out")
    page = result.html.read_text()
    # The reference attempt of legacycalc: many commands, so landing on the first one shows.
    rows = [json.loads(x) for x in (DEMO / "results.jsonl").read_text().splitlines()]
    n = next(
        i for i, r in enumerate(rows, 1)
        if (r["task_id"], r["agent"]) == ("legacycalc_demo24", "reference")
    )  # fmt: skip
    href = f"attempts/{n}.html#first-command"
    assert f'href="{href}"' in page
    target = result.out / href.split("#")[0]
    desk = probe(CHROMIUM, target, tmp_path, "#first-command")
    assert desk["target"] == "first-command" and desk["commands"] > 3, desk
    assert desk["scrolled"] > 0 and abs(desk["top"]) < 5, desk  # scrolled to it
    assert desk["overflow"] <= 0 and desk["checks"] > 0, desk
    # The hostile page: no script of the agent's runs; at a phone's width nothing is wider.
    hostile = next(
        p
        for p in (result.out / "attempts").glob("*.html")
        if "alert(1)" in p.read_text() and "probe" not in p.name
    )
    for width in (DESKTOP, PHONE):
        got = probe(CHROMIUM, hostile, tmp_path, "", width)
        assert got["scripts"] == 1 and got["overflow"] <= 0, (width, got)  # the probe's own
    # Screenshots of the landing, desktop and phone.
    for width in (DESKTOP, PHONE):
        shot = shots_dir(tmp_path) / f"attempt-{'desktop' if width == DESKTOP else 'phone'}.png"
        whole = framed(target.read_text(), tmp_path / f"attempt-{width}.html", width, 1400)
        run = open_page(
            CHROMIUM, whole, tmp_path, "--enable-logging=stderr", "--v=0",
            f"--screenshot={shot}", f"--window-size={max(width, 500)},1400",
        )  # fmt: skip
        assert run.returncode == 0 and console_lines(run) == [], run.stderr[-2000:]
        pixels = matplotlib.image.imread(shot)[:, :width]
        assert pixels[..., :3].std() > 0.05


def test_an_event_without_tokens_says_nothing_of_tokens(tmp_path):
    result = write_report([DEMO], tmp_path / "out")
    for page in (result.out / "attempts").glob("*.html"):
        text = page.read_text()
        assert "/ tokens" not in text and "None tokens" not in text and "stop None" not in text
