"""The helpers of verifiers/global/experiment_lib.sh, run for real under the controller's static
busybox on this host: has_text on a compiled ELF, blob_of against git's own blob ids, vouch on a
packaged binary, a script and an ELF no package knows."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from deploybench.verify import toolkit
from tests.conftest import REPO, require

LIB = REPO / "verifiers" / "global" / "experiment_lib.sh"


def run_lib(tmp_path: Path, body: str) -> tuple[str, Path]:
    """Run `body` after the preamble; its stdout (the preamble sends the rest to the log) and
    the log folder."""
    workdir, logs, scratch, tools = (tmp_path / n for n in ("wd", "logs", "scratch", "tools"))
    for d in (workdir, logs, scratch, tools):
        d.mkdir(exist_ok=True)
    shutil.copy(toolkit.busybox(), tools / "busybox")
    (tools / "sh").symlink_to("busybox")
    script = tmp_path / "script.sh"
    script.write_text(LIB.read_text() + "\nexec >&3\n" + body)
    done = subprocess.run(
        [str(tools / "busybox"), "sh", "-c", f'exec 3>&1; . "{script}"'],
        env={"WORKDIR": str(workdir), "LOG_DIR": str(logs), "SCRATCH": str(scratch),
             "TOOLS": str(tools), "PATH": f"{tools}:/usr/bin:/bin", "DEPLOYBENCH_OWNER": "root"},
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, (
        done.stdout,
        done.stderr,
        (logs / "verifier_stdout.log").read_text(),
    )
    return done.stdout, logs


def test_has_text_finds_a_literal_of_a_compiled_elf_where_grep_does_not(tmp_path):
    require(shutil.which("cc") is not None, "a C compiler (cc)")
    src = tmp_path / "prog.c"
    # Literals side by side in .rodata: NULs between them, as in every real binary.
    src.write_text(
        '#include <stdio.h>\nconst char *a = "alpha-first";\n'
        'const char *b = "[INFO] finished loading stock";\n'
        "int main(void) { puts(a); puts(b); return 0; }\n"
    )
    subprocess.run(["cc", "-O0", "-o", tmp_path / "wd_prog", src], check=True)
    out, _ = run_lib(
        tmp_path,
        f"""
bin={tmp_path}/wd_prog
has_text "$bin" "[INFO] finished loading stock" && echo found || echo absent
has_text "$bin" "not in it at all" && echo found || echo absent
has_text /nonexistent "x" && echo found || echo absent
grep -q -F -e "[INFO] finished loading stock" "$bin" && echo grep-found || echo grep-absent
""",
    )
    lines = out.split()
    assert lines[:3] == ["found", "absent", "absent"], out
    # Why has_text exists: busybox grep stops each line at its first NUL (seen 2026-12-05 on a
    # real silo build, whose dbtest held every literal the verifier looked for).
    print("plain busybox grep on the ELF:", lines[3])


def test_blob_of_is_gits_blob_id(tmp_path):
    require(shutil.which("git") is not None, "git")
    wd = tmp_path / "wd"
    wd.mkdir()
    (wd / "a.py").write_bytes(b"print('x')\n\x00binary\xff tail\n")
    (wd / "empty").write_bytes(b"")
    (wd / "link").symlink_to("a.py")
    out, logs = run_lib(tmp_path, "pinned a.py empty link missing.py\n")
    want = {
        name: subprocess.run(
            ["git", "hash-object", str(wd / name)], capture_output=True, text=True, check=True
        ).stdout.strip()
        for name in ("a.py", "empty")
    }
    rows = dict(line.split() for line in (logs / "pinned.txt").read_text().splitlines())
    assert rows == {**want, "link": "missing", "missing.py": "missing"}


@pytest.mark.parametrize("kind", ["dpkg", "script", "elf"])
def test_vouch_says_what_a_runtime_is(kind, tmp_path):
    if kind == "dpkg":
        path = "/bin/ls"  # coreutils
    elif kind == "script":
        path = str(tmp_path / "python")
        Path(path).write_text("#!/bin/sh\necho 3.11\n")
        Path(path).chmod(0o755)
    else:
        require(shutil.which("cc") is not None, "a C compiler (cc)")
        (tmp_path / "m.c").write_text("int main(void) { return 0; }\n")
        path = str(tmp_path / "launcher")
        subprocess.run(["cc", "-o", path, tmp_path / "m.c"], check=True)
    _, logs = run_lib(tmp_path, f"vouch py {path}\n")
    line = (logs / "runtime.txt").read_text().strip()
    if kind == "dpkg":
        assert line.endswith(" dpkg coreutils"), line
    elif kind == "script":
        assert f"-> {path} script #!/bin/sh" in line, line
    else:
        assert f"-> {path} elf " in line and (logs / "runtime_py.elf").is_file(), line


def test_py_hooks_vouches_an_installers_pth_and_names_a_planted_or_edited_one(tmp_path):
    # A venv of Debian's python with its bundled setuptools: distutils-precedence.pth is in
    # setuptools' RECORD. A .pth added beside it, a sitecustomize and the same .pth with an
    # import line appended (its RECORD unchanged) are nobody's.
    py = Path("/usr/bin/python3")
    require(py.exists() and Path("/var/lib/dpkg/info").is_dir(), "Debian's python3")
    env = tmp_path / "env"
    made = subprocess.run([py, "-m", "venv", env], capture_output=True, check=False)
    require(made.returncode == 0, "python3 -m venv with ensurepip (python3-venv)")
    site = next(env.glob("lib/python3*/site-packages"))
    body = f'py_hooks_of {env}/bin/python; cat "$LOG_DIR/hooks.txt"'
    (tmp_path / "before").mkdir()
    out, _ = run_lib(tmp_path / "before", body)
    assert out.splitlines()[-1] == "end"
    assert f"hook {site}/distutils-precedence.pth record setuptools-" in out
    assert " none " not in out
    stdlib = [line for line in out.splitlines() if "sitecustomize" in line]
    assert all(" dpkg " in line for line in stdlib), stdlib
    (site / "zz_fast.pth").write_text("import zz_fast\n")
    (site / "sitecustomize.py").write_text("print('hooked')\n")
    with (site / "distutils-precedence.pth").open("a") as f:
        f.write("import zz_fast\n")
    (tmp_path / "after").mkdir()
    out, _ = run_lib(tmp_path / "after", body)
    for name in ("zz_fast.pth", "sitecustomize.py", "distutils-precedence.pth"):
        assert f"hook {site}/{name} none " in out, out


def test_py_hooks_names_a_pth_of_folders_paths_and_lists_the_customize_modules_they_hold(tmp_path):
    # What `pip install -e` of a setup.py project leaves (setup.py develop's easy-install.pth,
    # no RECORD lists it) runs nothing: `paths`, with its folder count. A sitecustomize in a
    # folder it names could be imported at start-up: listed on a line of its own, nobody's.
    # A line starting "import " makes the .pth code again; an indented one is a folder.
    py = Path("/usr/bin/python3")
    require(py.exists() and Path("/var/lib/dpkg/info").is_dir(), "Debian's python3")
    env = tmp_path / "env"
    subprocess.run([py, "-m", "venv", "--without-pip", env], capture_output=True, check=True)
    site = next(env.glob("lib/python3*/site-packages")).resolve()
    checkout = tmp_path / "checkout"
    (checkout / "pkg").mkdir(parents=True)
    (site / "easy-install.pth").write_text(f"# editable\n{checkout}\n\n../../../../relative  \n")
    (site / "indented.pth").write_text(" import os\n")
    body = f'py_hooks_of {env}/bin/python; cat "$LOG_DIR/hooks.txt"'
    (tmp_path / "before").mkdir()
    out, _ = run_lib(tmp_path / "before", body)
    assert f"hook {site}/easy-install.pth paths 2\n" in out, out
    assert f"hook {site}/indented.pth paths 1\n" in out, out
    assert " none " not in out, out
    (checkout / "sitecustomize.py").write_text("print('hooked')\n")
    (site / "zz_code.pth").write_text("import os; os.environ\n")
    (tmp_path / "after").mkdir()
    out, _ = run_lib(tmp_path / "after", body)
    assert f"hook {checkout}/sitecustomize.py none " in out, out
    assert f"hook {site}/zz_code.pth none " in out, out
    assert out.splitlines()[-1] == "end"
