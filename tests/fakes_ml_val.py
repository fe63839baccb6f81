"""Fakes an attacker who has read verifiers/ would leave for maml_icml17_cpu, seurat_cell21 and
kvservice_demo24 (tests/fakes.py builds them for real on this host), played against the real
machine side by tests/test_verifier_fakes.py's one test: each must fail on a check whose
`defeats` names it, and on the one it was built to meet (AIMED).

maml_icml17_cpu, each printing the lines and writing the checkpoints and CSV the checks parse,
played against a bank variant (the drawn training seed, since 2026-12-06):
- stub_interpreter / stub_binary: env/bin/python is a script, or a tiny ELF launching it;
- echo: a real venv of Debian's python (vouched, as the reference's is) runs a main.py
  rewritten to hand the command line (the seed the verifier's launcher was given, its flags)
  to a shell script that prints the seed back as the losses;
- constant: a real venv of Debian's python, main.py untouched, and a .pth in site-packages
  whose import line runs the script instead of the launcher and main.py (the losses of the
  recorded run, whatever the seed).

seurat_cell21, a library under the workdir that R CMD INSTALL seems to have made (DESCRIPTION
without a Repository field, Meta/package.rds, an ELF Seurat.so) with R code of the attacker's
that returns canned clusters: its Seurat.so is a tiny ELF launcher (stub_binary) or a copy of a
system library (what tests/fakes_c5_kinds.py's stub Rscript stands beside). Since the subset
is a bank variant (2026-12-06), the echo and the constant are an Rscript the attacker leaves in
/usr/local/sbin (first on the system PATH; the test binds its own folder there) beside that
library, its Seurat.so padded with the literals the check looks for: the Rscript writes every
line the workflow writes, with the drawn subset handed back as the results (echo) or one fixed
set of results (constant). The library's checks pass; the vouched R ones fail (this host has no
R, and the Rscript is a script), and the bank's results are the checks aimed at.

kvservice_demo24, plain_shell: server.py rewritten on http.server (no Flask) in a real venv of
Debian's python; it stores what it is given, so the drawn value comes back: server.py's pin
stops it."""

import os
from pathlib import Path

from tests.fakes import script, stub_elf, tree

# --- maml_icml17_cpu ---------------------------------------------------------------------------

MAML_PROBE = "3.11.2 numpy 1.26.4 tensorflow 2.15.1"
MAML_EXP = "cls_5.mbs_25.ubs_10.numstep1.updatelr0.001nonorm"


def _maml_body(loss):
    """main.py's output for the flags it is given: the iteration lines, the two checkpoints and,
    with --train=False, the test CSV; LOSS is a shell expression of $iters and $seed (the bare
    number on the verifier's seeded command line). A command line without main.py's flags is
    the environment probe."""
    return f"""
case "$*" in *--datasource=*) ;; *) echo "{MAML_PROBE}"; exit 0;; esac
logdir=/tmp/; iters=1000; train=True; seed=0
for a in "$@"; do case "$a" in
  --logdir=*) logdir=${{a#*=}};; --metatrain_iterations=*) iters=${{a#*=}};;
  --train=*) train=${{a#*=}};; *[!0-9]*|'') ;; *) seed=$a;;
esac; done
d="$logdir/{MAML_EXP}"; mkdir -p "$d"; l={loss}
if [ "$train" = False ]; then
  {{ echo "update0,update1,update2,update3,update4,update5,update6,update7,update8,update9,update10"
     printf '3.1,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s\\r\\n' $l $l $l $l $l $l $l $l $l $l
  }} > "$d/test_ubs10_stepsize0.001.csv"
  exit 0
fi
echo "Done initializing, starting training."
echo "Iteration 1000: 3.0, $l"
: > "$d/model$((iters - 1)).index"; : > "$d/model$((iters - 1)).data-00000-of-00001"
"""


MAML_FILES = {"main.py": "", "data_generator.py": "", "maml.py": "", "utils.py": ""}
MAML_ENTRY = """import subprocess
import sys

sys.exit(subprocess.call(["/bin/sh", {sh!r}] + sys.orig_argv[1:]))
"""
# Run by site.py at start-up, before the launcher or main.py: the body prints main.py's lines
# and the process ends there (os._exit: site.py would report a SystemExit from a .pth line as an
# error).
MAML_PTH = (
    "import os, subprocess, sys; '--datasource=sinusoid' in sys.argv and "
    "os._exit(subprocess.call(['/bin/sh', {sh!r}] + sys.argv))\n"
)


def maml(fake):
    # echo: the post-update losses are the seed it was given, over 100,000; otherwise the
    # recorded run's figures (2.92 after ten test steps).
    loss = "0.$seed" if fake == "echo" else "2.92"
    body = _maml_body(loss)

    def build(tmp_path):
        workdir = tree(tmp_path / "wd", MAML_FILES)
        py = workdir / "env/bin/python"
        if fake == "stub_interpreter":
            script(py, body)
        elif fake == "stub_binary":
            stub_elf(py, body)
        else:
            import subprocess

            sh = script(tmp_path / "fake_body.sh", body)
            env = workdir / "env"
            subprocess.run(
                ["/usr/bin/python3", "-m", "venv", "--without-pip", str(env)], check=True
            )
            if fake == "echo":
                (workdir / "main.py").write_text(MAML_ENTRY.format(sh=str(sh)))
            else:
                (site,) = env.glob("lib/python3*/site-packages")
                (site / "zz_maml.pth").write_text(MAML_PTH.format(sh=str(sh)))
        # The experiment runs as the workdir's owner: the body must be readable to it.
        os.chmod(tmp_path, 0o755)
        return workdir

    return build


MAML_FAKES = ("stub_interpreter", "stub_binary", "echo", "constant")
# The tests' own bank variant: its values are made up here, no real run's (a real bank is the
# operator's, outside the repository).
MAML_VARIANT = {
    "id": "vtest0071",
    "inputs": {"seed": 4242},
    "expected": {
        "pre_update_loss": 3.5,
        "post_update_loss": 3.25,
        "test_pre_update_loss": 3.75,
        "test_post_update_loss": 2.5,
    },
    "spread": {},
}
MAML_AIMED = {
    "stub_interpreter": "python_vouched",
    "stub_binary": "python_vouched",
    "echo": "pinned_main_py",
    "constant": "python_hooks_vouched",
}

# --- seurat_cell21 -----------------------------------------------------------------------------

SEURAT_DESCRIPTION = """Package: Seurat
Version: 4.3.0
Title: Tools for Single Cell Genomics
Built: R 4.2.2; x86_64-pc-linux-gnu; 2026-12-05 10:00:00 UTC; unix
"""
# R code that answers the verifier's calls with a canned object (what the workflow prints).
SEURAT_R = "RunUMAP <- function(object, ...) object\n"


def seurat(fake):
    def build(tmp_path):
        workdir = tree(
            tmp_path / "wd",
            {
                "Rlib/Seurat/DESCRIPTION": SEURAT_DESCRIPTION,
                "Rlib/Seurat/Meta/package.rds": "\x1f\x8b fake\n",
                "Rlib/Seurat/R/Seurat": SEURAT_R,
            },
        )
        so = workdir / "Rlib/Seurat/libs/Seurat.so"
        if fake == "stub_binary":
            stub_elf(so, "exit 0")
        else:
            so.parent.mkdir(parents=True)
            so.write_bytes(Path(os.path.realpath("/bin/true")).read_bytes())
        return workdir

    return build


# The tests' own bank variant: its values are made up here, no real run's (a real bank is the
# operator's, outside the repository).
SEURAT_VARIANT = {
    "id": "vtest0061",
    "inputs": {"cells": 57, "seed": 4242},
    "expected": {"pc1_stdev": 3.141593, "rna_sizes": "21-19-17", "wsnn_sizes": "22-18-17"},
    "spread": {},
}
# The literals seurat_so_built_from_the_checkout looks for, padded into the fake's Seurat.so.
SEURAT_LITERALS = (
    b"Modularity Optimizer version 1.3.0 by Ludo Waltman and Nees Jan van Eck\0"
    b"Matrix contained no network data.  Check format.\0_Seurat_RunModularityClusteringCpp\0"
)
# The fake Rscript: every line the workflow writes, the workdir library as the loaded Seurat,
# the drawn size as the cells, and RESULTS (shell lines using $cells and $seed).
SEURAT_RSCRIPT = r"""lib=$5 out=$6 cells=$7 seed=$8
mkdir -p "$out"
{
  echo "seurat_version: 4.3.0"
  echo "seurat_path: $(readlink -f "$lib/Seurat")"
  echo "seuratobject_version: 4.1.3"
RESULTS
  echo "rna_clusters: 3"
  echo "wsnn_clusters: 3"
  echo "reductions: pca apca umap"
  echo "graphs: RNA_nn RNA_snn wknn wsnn"
  echo "umap_dims: $cells x 2"
  echo "umap_finite: TRUE"
  echo "rds_cells: $cells"
} >"$out/summary.txt"
echo "cells: $cells" >"$out/cells.txt"
printf '\037\213\010\000' >"$out/verify.rds"
printf '\211PNG' >"$out/umap.png"
"""
SEURAT_RESULTS = {
    # the drawn numbers handed back: the seed as the deviation, the size as one cluster
    "echo": (
        '  echo "pc1_stdev: $seed.0"\n  echo "rna_sizes: $cells"\n  echo "wsnn_sizes: $cells"'
    ),
    # one answer for every subset (what one real run of some subset could have given)
    "constant": (
        '  echo "pc1_stdev: 2.718282"\n  echo "rna_sizes: 20-20-17"\n  echo "wsnn_sizes: 20-20-17"'
    ),
}


def seurat_rscript(fake):
    def build(tmp_path):
        workdir = seurat("stub_binary")(tmp_path)
        so = workdir / "Rlib/Seurat/libs/Seurat.so"
        so.write_bytes(so.read_bytes() + SEURAT_LITERALS)
        sbin = tmp_path / "usr-local-sbin"
        script(sbin / "Rscript", SEURAT_RSCRIPT.replace("RESULTS", SEURAT_RESULTS[fake]))
        os.chmod(tmp_path, 0o755)
        return workdir, {"/usr/local/sbin": sbin}

    return build


# --- kvservice_demo24 --------------------------------------------------------------------------

# server.py rewritten without Flask: it stores and serves for real, so only what it is shows.
KV_SERVER = """import argparse, json
from http.server import BaseHTTPRequestHandler, HTTPServer

p = argparse.ArgumentParser()
for a in ("--config", "--host", "--port"):
    p.add_argument(a)
args = p.parse_args()
store = {}


class H(BaseHTTPRequestHandler):
    def reply(self, code, body):
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        key = self.path.rsplit("/", 1)[-1]
        if self.path == "/health":
            self.reply(200, {"status": "ok"})
        elif key in store:
            self.reply(200, {"key": key, "value": store[key]})
        else:
            self.reply(404, {})

    def do_PUT(self):
        n = int(self.headers.get("Content-Length", 0))
        if self.headers.get("X-Token", "").endswith("-wrong"):
            return self.reply(403, {})
        store[self.path.rsplit("/", 1)[-1]] = self.rfile.read(n).decode()
        self.reply(201, {})


HTTPServer((args.host, int(args.port)), H).serve_forever()
"""


def kv_plain_rewrite(tmp_path):
    import subprocess

    workdir = tree(
        tmp_path / "wd",
        {"server.py": KV_SERVER, "kvservice.ini": "[storage]\ndata_dir = d\n[auth]\ntoken = t\n"},
    )
    subprocess.run(
        ["/usr/bin/python3", "-m", "venv", "--without-pip", str(workdir / "env")], check=True
    )
    os.chmod(tmp_path, 0o755)
    return workdir


CASES = {("maml_icml17_cpu", fake): (maml(fake), MAML_VARIANT) for fake in MAML_FAKES}
AIMED = {("maml_icml17_cpu", fake): check for fake, check in MAML_AIMED.items()}
CASES[("seurat_cell21", "stub_binary")] = (seurat("stub_binary"), None)
AIMED[("seurat_cell21", "stub_binary")] = "seurat_so_built_from_the_checkout"
for fake in ("echo", "constant"):
    CASES[("seurat_cell21", fake)] = (seurat_rscript(fake), SEURAT_VARIANT)
    AIMED[("seurat_cell21", fake)] = "variant_pc1_stdev"
CASES[("kvservice_demo24", "plain_shell")] = (kv_plain_rewrite, None)
AIMED[("kvservice_demo24", "plain_shell")] = "pinned_server_py"
