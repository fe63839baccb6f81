"""The HTML page in a real headless Chromium (Debian's `chromium`, listed in
.ci/apt-packages-report.txt), at desktop and at phone width: no console message of any kind,
every plot drawn, no two pieces of text overlapping (their boxes measured by the browser), a
count or share written on every bar, "no attempts" drawn unlike a 0 bar, the table of contents
and the outcome matrix in place and its sort buttons working; and a screenshot of each.

The measuring is done by a script this test adds to a copy of the page: it writes what it
found into the DOM, which `--dump-dom` prints. Set DEPLOYBENCH_SCREENSHOTS=DIR to keep the
screenshots."""

from __future__ import annotations

import html
import json
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
    "--hide-scrollbars",
]
CONSOLE = re.compile(r":CONSOLE[:(]|Uncaught")
DESKTOP, PHONE = 1400, 390
DEMO = Path(__file__).parent / "fixtures" / "demo_run"

# Added before </body> of a copy of the page. Text boxes: every non-blank text node (its line
# boxes, from a Range) and every SVG <text>; two boxes of different nodes that intersect by more
# than a pixel each way are an overlap. Then the sort buttons are pressed and the row orders
# read back.
MEASURE = r"""
<script>
(function () {
  var boxes = [];
  var walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  var node, id = 0;
  while ((node = walker.nextNode())) {
    var parent = node.parentElement;
    if (!node.nodeValue.trim() || parent.closest("script, style, title, #layout-check")) continue;
    id++;
    var rects = parent.namespaceURI === "http://www.w3.org/2000/svg"
      ? [parent.getBoundingClientRect()]
      : Array.prototype.slice.call((function () {
          var r = document.createRange(); r.selectNodeContents(node); return r.getClientRects();
        })());
    rects.forEach(function (b) {
      if (b.width > 0 && b.height > 0) {
        boxes.push({id: id, text: node.nodeValue.trim().slice(0, 40), x: b.left + scrollX,
                    y: b.top + scrollY, w: b.width, h: b.height});
      }
    });
  }
  boxes.sort(function (a, b) { return a.y - b.y; });
  var overlaps = [];
  for (var i = 0; i < boxes.length; i++) {
    var a = boxes[i];
    for (var j = i + 1; j < boxes.length && boxes[j].y < a.y + a.h; j++) {
      var b = boxes[j];
      if (a.id === b.id) continue;
      var dx = Math.min(a.x + a.w, b.x + b.w) - Math.max(a.x, b.x);
      var dy = Math.min(a.y + a.h, b.y + b.h) - Math.max(a.y, b.y);
      if (dx > 1 && dy > 1) overlaps.push([a.text, b.text]);
    }
  }
  var bars = document.querySelectorAll("svg.plot g.bar");
  var unlabelled = 0, none = 0, noneDashed = 0, zero = 0, zeroFilled = 0;
  bars.forEach(function (g) {
    var label = g.querySelector("text");
    if (!label || !label.textContent.trim()) unlabelled++;
    if (g.classList.contains("none")) {
      none++;
      var frame = g.querySelector("rect");
      var dashed = frame.getAttribute("stroke-dasharray");
      if (frame.getAttribute("fill") === "none" && dashed) noneDashed++;
    }
    var stub = g.querySelector("rect.zero");
    if (stub) { zero++; if (stub.getAttribute("fill") !== "none") zeroFilled++; }
  });
  var links = Array.prototype.map.call(document.querySelectorAll("nav.toc a"), function (a) {
    return a.getAttribute("href").slice(1);
  });
  var body = document.querySelector("table.matrix tbody");
  function order(key) {
    var button = document.querySelector('.sorter button[data-sort="' + key + '"]');
    if (!button) return [];
    button.click();
    return Array.prototype.map.call(body.rows, function (r) {
      return [r.dataset.task, r.dataset.domain, Number(r.dataset.rank)];
    });
  }
  var result = {
    width: innerWidth,
    height: document.documentElement.scrollHeight,
    texts: boxes.length,
    overlaps: overlaps.slice(0, 20),
    overlap_count: overlaps.length,
    bars: bars.length, unlabelled: unlabelled,
    none: none, none_dashed: noneDashed, zero: zero, zero_filled: zeroFilled,
    links: links,
    missing_targets: links.filter(function (id) { return !document.getElementById(id); }),
    sections_with_plot: Array.prototype.map.call(document.querySelectorAll("section"),
      function (s) { return s.querySelector("svg.plot") ? s.querySelector("h2").id : null; }
    ).filter(Boolean),
    chips: document.querySelectorAll("table.matrix .chip").length,
    by_difficulty: order("difficulty"),
    by_domain: order("domain"),
    by_task: order("task")
  };
  var top = window.parent.document;  // the page runs in a frame of the wanted width
  var out = top.createElement("pre");
  out.id = "layout-check";
  out.textContent = JSON.stringify(result);
  top.body.appendChild(out);
})();
</script>
"""


@pytest.fixture(scope="module")
def browser():
    if CHROMIUM is None:
        pytest.fail("chromium is not installed (.ci/apt-packages-report.txt lists it)")
    return CHROMIUM


def shots_dir(tmp: Path) -> Path:
    folder = Path(os.environ.get("DEPLOYBENCH_SCREENSHOTS", tmp))
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def open_page(browser: str, page: Path, tmp: Path, *extra: str) -> subprocess.CompletedProcess:
    profile = tmp / f"profile-{len(list(tmp.glob('profile-*')))}"  # a new empty one each time
    return subprocess.run(
        [browser, *FLAGS, f"--user-data-dir={profile}", *extra, page.as_uri()],
        capture_output=True,
        text=True,
        timeout=180,
    )


def console_lines(run: subprocess.CompletedProcess) -> list[str]:
    return [line for line in run.stderr.splitlines() if CONSOLE.search(line)]


def framed(page_text: str, out: Path, width: int, height: int) -> Path:
    """The page inside a frame of exactly `width` px: headless Chromium keeps its window at
    least 500 px wide, and a phone is narrower. A srcdoc frame shares its parent's origin, so
    the measuring script inside can write into the parent, which --dump-dom prints."""
    out.write_text(
        '<!DOCTYPE html><html><head><meta charset="utf-8"><title>frame</title></head>'
        '<body style="margin:0"><iframe style="border:0;display:block" '
        f'width="{width}" height="{height}" srcdoc="{html.escape(page_text, quote=True)}">'
        "</iframe></body></html>"
    )
    return out


def measure(browser: str, page: Path, tmp: Path, width: int) -> dict:
    text = page.read_text().replace("</body>", MEASURE + "</body>")
    probe = framed(text, page.with_name(f"{page.stem}-measure-{width}.html"), width, 900)
    run = open_page(browser, probe, tmp, "--dump-dom", f"--window-size={max(width, 500)},900")
    assert run.returncode == 0, run.stderr[-2000:]
    found = re.search(r'<pre id="layout-check">(.*?)</pre>', run.stdout, re.S)
    assert found, run.stdout[-2000:]
    return json.loads(html.unescape(found.group(1)))


def check_page(browser: str, page: Path, tmp: Path, name: str) -> dict[int, dict]:
    """Both widths: console, plots, text boxes, bar labels, links; returns the measurements."""
    dom = open_page(browser, page, tmp, "--dump-dom")
    assert dom.returncode == 0, dom.stderr[-2000:]
    title = re.search(r"<title>([^<]*)</title>", dom.stdout).group(1)
    assert title == "DeployBench report (plots drawn: 5/5)"
    found = {}
    for width in (DESKTOP, PHONE):
        m = measure(browser, page, tmp, width)
        assert m["width"] == width  # the layout really is at this width
        assert m["texts"] > 100
        assert m["overlaps"] == [], f"{m['overlap_count']} overlapping texts at {width} px"
        assert m["bars"] > 0 and m["unlabelled"] == 0
        assert m["none_dashed"] == m["none"] and m["zero_filled"] == m["zero"]
        assert m["missing_targets"] == [] and len(m["links"]) >= 15
        # each plot sits in the section of its table
        assert m["sections_with_plot"] == [
            "1_success",
            "2_cost_time",
            "5_phases",
            "7_recovery",
            "8_completion",
        ]
        shot = shots_dir(tmp) / f"{name}-{'desktop' if width == DESKTOP else 'phone'}.png"
        height = min(m["height"], 16000)
        whole = framed(page.read_text(), tmp / f"{name}-{width}.html", width, height)
        run = open_page(
            browser,
            whole,
            tmp,
            "--enable-logging=stderr",
            "--v=0",
            f"--screenshot={shot}",
            f"--window-size={max(width, 500)},{height}",
        )
        assert run.returncode == 0, run.stderr[-2000:]
        assert console_lines(run) == []
        pixels = matplotlib.image.imread(shot)[:, :width]  # the frame alone
        matplotlib.image.imsave(shot, pixels)
        assert pixels.shape[:2] == (height, width)
        assert pixels[..., :3].std() > 0.05  # something is drawn: far from a blank page
        found[width] = m
    return found


def sorted_as(rows: list, key) -> bool:
    return rows == sorted(rows, key=key)


def test_page_of_the_demo_run(browser, tmp_path):
    result = write_report([DEMO], tmp_path / "out")
    found = check_page(browser, result.html, tmp_path, "demo")
    m = found[DESKTOP]
    # Domain: Scientific and Difficulty: hard have no task in the demo: "no attempts" frames
    # (3 agents each); every other group of the pass-rate plot has its bars, 0% ones included
    assert m["none"] >= 6 and m["zero"] >= 6
    # the matrix: three tasks, one attempt per agent each
    assert len(m["by_task"]) == 3 and m["chips"] == 9
    assert sorted_as(m["by_difficulty"], lambda r: (r[2], r[1], r[0]))
    assert sorted_as(m["by_domain"], lambda r: (r[1], r[2], r[0]))
    assert sorted_as(m["by_task"], lambda r: r[0])
    assert m["by_difficulty"] != m["by_task"]  # the demo's orders differ, so sorting shows


def test_page_of_synthetic_runs(browser, tmp_path):
    # four agents (one without a model name), 20 tasks of every domain and difficulty
    run_dir, catalog = generate(tmp_path / "synthetic", n_attempts=160, n_commands=30, n_tasks=20)
    result = write_report([run_dir], tmp_path / "out", catalog)
    found = check_page(browser, result.html, tmp_path, "synthetic")
    m = found[PHONE]
    assert len(m["by_task"]) == 20 and m["chips"] == 160
    assert sorted_as(m["by_difficulty"], lambda r: (r[2], r[1], r[0]))
    assert sorted_as(m["by_domain"], lambda r: (r[1], r[2], r[0]))


def test_page_of_the_hand_made_run(browser, tmp_path):
    run_dir, catalog = handmade.build(tmp_path)
    result = write_report([run_dir], tmp_path / "out", catalog)
    found = check_page(browser, result.html, tmp_path, "handmade")
    # the infra_error attempt is in the matrix (and in no table)
    assert 'class="chip infra"' in result.html.read_text().split('id="outcomes"')[1]
    assert found[DESKTOP]["chips"] == found[PHONE]["chips"]


def test_the_console_check_catches_errors(browser, tmp_path):
    # The check above must be able to fail: a page with a console error and an exception.
    page = tmp_path / "bad.html"
    page.write_text(
        "<!DOCTYPE html><title>x</title><script>console.error('boom'); missing();</script>"
    )
    run = open_page(browser, page, tmp_path, "--enable-logging=stderr", "--v=0", "--dump-dom")
    console = console_lines(run)
    assert len(console) == 2 and "Uncaught ReferenceError" in console[1]


def test_the_overlap_check_catches_overlapping_text(browser, tmp_path):
    # ...and so must the text-box measurement: a legend drawn over a bar's label, as SVG text
    # and as HTML text, is found at both widths; text side by side is not.
    page = tmp_path / "overlap.html"
    page.write_text(
        "<!DOCTYPE html><html><body>"
        '<svg width="300" height="60"><text x="10" y="20">40% (2/5)</text>'
        '<text x="30" y="24">legend: nop</text><text x="200" y="50">apart</text></svg>'
        '<p style="position:relative">a note<span style="position:absolute;left:8px;top:4px">'
        "over it</span></p><p>beside <b>each</b> other</p></body></html>"
    )
    for width in (DESKTOP, PHONE):
        m = measure(browser, page, tmp_path, width)
        assert sorted(map(sorted, m["overlaps"])) == [
            ["40% (2/5)", "legend: nop"],
            ["a note", "over it"],
        ]
