"""The fakes of the four kinds issue 33 names (stub_binary, stub_interpreter, echo, constant)
that the other fakes files left unplayed for a verifier, built for real on this host
(tests/fakes.py) and played by tests/test_verifier_fakes.py's one test against the real machine
side: each must fail on a check whose `defeats` names its kind, and on the one it was built to
meet (AIMED). A kind that cannot apply to a verifier is declared in its checks.yaml
(`fakes_not_applicable`), and tests/test_fake_kinds.py holds every verifier to one or the other.

Stub interpreters the experiment finds on the system PATH (sqlite3, bash, python3, java,
Rscript, QEMU) are scripts in a folder of the test's, bound over /usr/local/sbin (the first
folder of the system PATH, empty on this host) in the run's own mount namespace
(run_experiment's BINDS). The sqlite3, bash, python3 and java there hand their work to the
host's real program, so what they change is only who answers first; Rscript and QEMU are not on
this host, and theirs print what the experiment reads. Where a fake of another file already is
of a kind (a program printing a documented, fixed output is a constant), it is played again
under that kind here."""

import os
import subprocess

from tests import (
    fakes_c5_fakes1,
    fakes_c5_fakes2,
    fakes_c5_sys37,
    fakes_ml_val,
    fakes_systems_sci,
    fakes_systems_val,
)
from tests.fakes import script, stub_elf, tree

SBIN = "/usr/local/sbin"


def wrapper(real):
    """The body of a stub on the system PATH that hands everything to the REAL program."""
    return f'exec {real} "$@"'


def on_path(build, programs):
    """BUILD's workdir, with PROGRAMS {name: script body} in a folder bound over /usr/local/sbin."""

    def built(tmp_path):
        workdir = build(tmp_path)
        workdir, binds = workdir if isinstance(workdir, tuple) else (workdir, {})
        sbin = tmp_path / "sbin"
        for name, body in programs.items():
            script(sbin / name, body)
        os.chmod(tmp_path, 0o755)
        return workdir, {**binds, SBIN: sbin}

    return built


# ---- stub interpreters on the system PATH -----------------------------------------------------
CASES = {
    # eet drives the sqlite3 CLI (the SQL interpreter it tests): a wrapper answers first.
    ("eet_osdi24", "stub_interpreter"): (
        on_path(fakes_systems_val.eet_stub_binary, {"sqlite3": wrapper("/usr/bin/sqlite3")}),
        fakes_systems_val.EET_VARIANT,
    ),
    # Kaldi's recipe is bash scripts: `env bash` finds a wrapper of the attacker's.
    ("kaldi_asru11", "stub_interpreter"): (
        on_path(fakes_c5_sys37.kaldi(elf_run=True), {"bash": wrapper("/usr/bin/bash")}),
        None,
    ),
    # PaSh's compiler is Python: a python3 wrapper on the PATH.
    ("pash_eurosys21", "stub_interpreter"): (
        on_path(fakes_c5_sys37.pash(elf=True), {"python3": wrapper("/usr/bin/python3")}),
        None,
    ),
    ("pashjit_osdi22", "stub_interpreter"): (
        on_path(fakes_systems_val.pashjit_stub_binary, {"python3": wrapper("/usr/bin/python3")}),
        None,
    ),
    # The simulator's JVM: a java wrapper on the PATH that runs the host's.
    ("safehome_eurosys21", "stub_interpreter"): (
        on_path(fakes_systems_sci.safehome_stub_binary, {"java": wrapper("/usr/bin/java")}),
        None,
    ),
    # Seurat's workflow runs under Rscript: a script in its place (no R on this host at all).
    ("seurat_cell21", "stub_interpreter"): (
        on_path(fakes_ml_val.seurat("constant"), {"Rscript": "echo 'R scripting front-end'"}),
        None,
    ),
    # Ward's plot is drawn by python3: a wrapper on the PATH.
    ("ward_osdi20", "stub_interpreter"): (
        on_path(fakes_systems_val.ward_stub_binary, {"python3": wrapper("/usr/bin/python3")}),
        None,
    ),
}
AIMED = {
    ("eet_osdi24", "stub_interpreter"): "sqlite3_vouched",
    ("kaldi_asru11", "stub_interpreter"): "bash_vouched",
    ("pash_eurosys21", "stub_interpreter"): "python3_vouched",
    ("pashjit_osdi22", "stub_interpreter"): "python_vouched",
    ("safehome_eurosys21", "stub_interpreter"): "java_vouched",
    ("seurat_cell21", "stub_interpreter"): "rscript_vouched",
    ("ward_osdi20", "stub_interpreter"): "python_vouched",
}


# ---- tinytrain_demo24: env/bin/python a tiny ELF ----------------------------------------------
TINYTRAIN_VARIANT = {
    "id": "vtest0061",
    "inputs": {"draw": 11, "columns": 2, "signs": 3, "labels": 4, "epochs": 3, "train_seed": 5},
    "expected": {"loss": 0.58, "accuracy": 0.83},
    "spread": {},
}
# train.py's metrics for the epochs it is asked, and the probe's versions: no numpy behind it.
TINYTRAIN_PY = """
out=; epochs=1
while [ $# -gt 0 ]; do case "$1" in --out) out=$2;; --epochs) epochs=$2;; esac; shift; done
[ -n "$out" ] || { echo 3.11.2 /x numpy 1.23.5; exit 0; }
mkdir -p "$out"
m="\\"loss\\": 0.5, \\"accuracy\\": 0.9, \\"n_train\\": 90"
echo "{\\"epoch\\": $epochs, $m}" > "$out/metrics.json"
"""


def tinytrain_stub_binary(tmp_path):
    from tests.test_demo_tasks import stage

    workdir = stage("tinytrain_demo24", tmp_path / "wd")
    (workdir / "env/bin/python").unlink(missing_ok=True)
    stub_elf(workdir / "env/bin/python", TINYTRAIN_PY)
    return workdir


# ---- kaldi_asru11: run.sh counting the words it sees, or printing the README's WER ------------
KALDI_CONSTANT = """
mkdir -p exp/mono0a/graph_tgpr exp/mono0a/decode_test_yesno
echo x > exp/mono0a/final.mdl; echo x > exp/mono0a/graph_tgpr/HCLG.fst
echo x > exp/mono0a/decode_test_yesno/wer_10
echo "%WER 0.00 [ 0 / 232, 0 ins, 0 del, 0 sub ] exp/mono0a/decode_test_yesno/wer_10"
"""


def kaldi_constant(tmp_path):
    workdir = fakes_c5_sys37.kaldi(elf_run=False)(tmp_path)
    script(workdir / "egs/yesno/s5/run.sh", KALDI_CONSTANT)
    return workdir


# ---- oceananigans_joss20: julia printing the summary for a fixed grid -------------------------
JULIA_CONSTANT = fakes_c5_sys37.JULIA_BODY.replace("u_size: $n x $n x 1", "u_size: 32 x 32 x 1")


def oceananigans_constant(tmp_path):
    workdir = tree(tmp_path / "wd", {"src/Oceananigans.jl": "module Oceananigans end\n"})
    stub_elf(workdir / "julia/bin/julia", JULIA_CONSTANT)
    return workdir


# ---- jitterbug_osdi20: racket printing the AE guide's all-verified lines, bug or no bug -------
RACO_CONSTANT = """
[ "$1" = -N ] && shift 4
case "$1" in pkg) echo "Installation-wide:"; echo " serval  c0ffee  (catalog serval)"; exit 0;; esac
echo '[       OK ] "VERIFY (BPF_ALU BPF_SUB BPF_X)"'
echo '12 success(es) 0 failure(s) 0 error(s) 12 test(s) run'
"""


def jitterbug_constant(tmp_path):
    workdir = fakes_c5_sys37.jitterbug(elf=True)(tmp_path)
    stub_elf(workdir / "racket-8.2/bin/racket", RACO_CONSTANT)
    return workdir


# ---- storm_osdi21: stack printing detailed.md's SAFE lines, bug or no bug ---------------------
STACK_CONSTANT = fakes_c5_fakes2.STACK_BODY.replace(
    """if grep -q "friendshipStatus'" src/Controllers/Wish.hs; then""", "if true; then"
)


def storm_constant(tmp_path):
    workdir, binds = fakes_c5_fakes2.storm(elf=True)(tmp_path)
    stub_elf(binds[SBIN] / "stack", STACK_CONSTANT)
    return workdir, binds


# ---- uslope_osdi24: clp-s (with its CLI's literals) echoing the query, or printing a fixed hit -
CLPS_ECHO = """
cmd=$1; shift
case "$cmd" in
  c) [ "$1" = --timestamp-key ] && shift 2; mkdir -p "$1"; echo x > "$1/var.dict";;
  s) k=${2##*: }; echo "{\\"level\\":\\"ERROR\\",\\"code\\":$k}";;
  x) mkdir -p "$2";;
esac
"""
CLPS_CONSTANT = CLPS_ECHO.replace(
    'k=${2##*: }; echo "{\\"level\\":\\"ERROR\\",\\"code\\":$k}"',
    'echo "{\\"ts\\":1700000000111,\\"level\\":\\"ERROR\\",\\"code\\":5}"',
)


def uslope(body):
    def build(tmp_path):
        clps = stub_elf(tmp_path / "wd/components/core/build/clp-s", body)
        with clps.open("ab") as f:
            f.write(b"\0" + b"\0".join(fakes_c5_fakes2.CLPS_LITERALS) + b"\0")
        return tmp_path / "wd"

    return build


# ---- polyjuice_osdi21: dbtest printing the loaded tables of scale factor 2 --------------------
DBTEST_CONSTANT = fakes_c5_fakes1.DBTEST_BY_THE_RULES.replace("$((sf * 300000))", "600121")
DBTEST_CONSTANT = DBTEST_CONSTANT.replace("$((sf * 100000))", "200000").replace("$sf", "2")


def polyjuice_constant(tmp_path):
    workdir = fakes_c5_fakes1.polyjuice_by_the_rules(tmp_path)
    stub_elf(workdir / "ae-tpcc-polyjuice/out-perf.masstree/benchmarks/dbtest", DBTEST_CONSTANT)
    return workdir


# ---- rudra_sosp21: cargo-rudra printing the README's report, whatever the crate --------------
CARGO_RUDRA_CONSTANT = r"""
echo "[rudra-progress] Running cargo rudra"
echo "Warning (UnsafeDataflow:/ReadFlow): Potential unsafe dataflow issue in \`map_1234\`"
echo "Error (SendSyncVariance:/ApiSyncForSync): Suspicious impl of \`Sync\` found"
echo "unsafe impl<T> Sync for Holder1234<T> {}"
echo "[rudra-progress] cargo rudra finished"
"""


def rudra_constant(tmp_path):
    workdir, binds = fakes_c5_fakes1.rudra(elf=True)(tmp_path)
    (home,) = binds.values()
    stub_elf(home / ".cargo/bin/cargo-rudra", CARGO_RUDRA_CONSTANT)
    return workdir, binds


# ---- orbit_osdi22: a QEMU printing fixed serial lines -----------------------------------------
QEMU_CONSTANT = r"""
for a; do case "$a" in file:*) serial=${a#file:};; esac; done
{
  echo "[    0.000000] Linux version 5.4.91+ (builder@host) (gcc version 12.2.0) #1 SMP"
  echo "ORBIT-MARKER orbit-verifier-1234"
  echo "ORBIT-RELEASE 5.4.91+"
  for s in 4096 262144 16777216; do
    for i in 1 2 3; do echo "ORBIT-CSV $s,$((s / 8 + 1000))"; done
  done
  echo ORBIT-DONE
} > "$serial"
"""


def orbit_constant(tmp_path):
    workdir, binds = fakes_c5_fakes1.orbit(elf=True)(tmp_path)
    (bin_dir,) = binds.values()
    stub_elf(bin_dir / "qemu-system-x86_64", QEMU_CONSTANT)
    return workdir, binds


CASES |= {
    ("tinytrain_demo24", "stub_binary"): (tinytrain_stub_binary, TINYTRAIN_VARIANT),
    ("kaldi_asru11", "echo"): (fakes_c5_sys37.kaldi(elf_run=False), None),
    ("kaldi_asru11", "constant"): (kaldi_constant, None),
    ("oceananigans_joss20", "echo"): (fakes_c5_sys37.oceananigans(elf=True), None),
    ("oceananigans_joss20", "constant"): (oceananigans_constant, None),
    ("jitterbug_osdi20", "constant"): (jitterbug_constant, None),
    ("storm_osdi21", "constant"): (storm_constant, None),
    ("uslope_osdi24", "echo"): (uslope(CLPS_ECHO), None),
    ("uslope_osdi24", "constant"): (uslope(CLPS_CONSTANT), None),
    ("polyjuice_osdi21", "constant"): (polyjuice_constant, fakes_c5_sys37.POLYJUICE_VARIANT),
    ("rudra_sosp21", "constant"): (rudra_constant, None),
    ("orbit_osdi22", "stub_interpreter"): (fakes_c5_fakes1.orbit(elf=False), None),
    ("orbit_osdi22", "constant"): (orbit_constant, None),
}
AIMED |= {
    ("tinytrain_demo24", "stub_binary"): "numpy_computes",
    ("kaldi_asru11", "echo"): "pinned_sources",
    ("kaldi_asru11", "constant"): "pinned_sources",
    ("oceananigans_joss20", "echo"): "julia_links_libjulia",
    ("oceananigans_joss20", "constant"): "julia_links_libjulia",
    ("jitterbug_osdi20", "constant"): "bug_found",
    ("storm_osdi21", "constant"): "bug_found",
    ("uslope_osdi24", "echo"): "search_matches",
    ("uslope_osdi24", "constant"): "decompressed_equals_input",
    ("polyjuice_osdi21", "constant"): "drawn_scale_loaded",
    ("rudra_sosp21", "constant"): "hidden_bugs_reported",
    ("orbit_osdi22", "stub_interpreter"): "qemu_vouched",
    ("orbit_osdi22", "constant"): "guest_ran_the_verifier_script",
}


# ---- QEMU of the attacker's on the system PATH: kflex, nros, theseus, ward --------------------
def with_qemu(build, body, elf):
    """BUILD's workdir with a qemu-system-x86_64 in the bound /usr/local/sbin: BODY as a script
    (the stub interpreter: a script where the emulator belongs) or behind a tiny ELF."""

    def built(tmp_path):
        workdir = build(tmp_path)
        sbin = tmp_path / "sbin"
        (stub_elf if elf else script)(sbin / "qemu-system-x86_64", body)
        os.chmod(tmp_path, 0o755)
        return workdir, {SBIN: sbin}

    return built


# kflex: the marker's factors and the drawn benchmark read off the verifier's initramfs (its
# /init is stored uncompressed in the cpio), printed as the guest would print them.
QEMU_KFLEX_ECHO = r"""
prev=
for a; do
  case "$a" in file:*) serial=${a#file:};; esac
  [ "$prev" = -initrd ] && initrd=$a
  prev=$a
done
set -- $(grep -a 'KFLEX-MARKER' "$initrd" | sed -n 's/.*\$((\([0-9]*\) \* \([0-9]*\))).*/\1 \2/p')
b=$(grep -a -o "benchmark_filter='^[^/]*/[^/]*/" "$initrd" | sed "s/.*'^//; s|/$||")
{
  echo "[    0.000000] Linux version 6.9.0-kflex (builder@host) (clang version 19.1.0) #1 SMP"
  echo "KFLEX-MARKER kflex-verifier-$(($1 * $2))"
  echo "KFLEX-RELEASE 6.9.0-kflex"
  echo "KFLEX-KSYM bpf_register_heap"
  echo "KFLEX-KSYM bpf_scalar_cast"
  echo "KFLEX-BENCH \"$b/1024\",1000000,212,211,ns,,4730000,"
  echo "KFLEX-GUARD prog=bench_ffkx_x range_analysis_call=12 elided=40"
  echo KFLEX-DONE
} > "$serial"
"""
# nros: the drawn cores read off the ESP's cmdline.in, the drawn clock off -rtc.
QEMU_NROS_ECHO = r"""
for a; do
  case "$a" in
    file:*) serial=${a#file:};;
    *fat:rw:*) esp=${a#*fat:rw:}; esp=${esp%%,*};;
    base=*) clock=${a#base=};;
  esac
done
c=$(sed -n 's/.*testcmd=\([0-9]*\).*/\1/p' "$esp/cmdline.in")
d=$(echo "$clock" | sed 's/T/ /; s/:00$//')
{
  echo "[ INFO] - bespin: Started at $d:07 UTC with 2.71s since CPU startup"
  echo "[ INFO] - bespin::process: binary=init cmdline=$c module=Module { name: \"init\" }"
  i=0
  while [ $i -lt "$c" ]; do
    echo "[ INFO] - init::vmops: $i,maponly,$c,4096,1000,0,41877"
    i=$((i + 1))
  done
  echo "[ INFO] - init: Done with init tests, if we came here probably everything is good."
} > "$serial"
exit 3
"""
# ward: the marker worked out from -append, as the guest's shell would, and lebench's rows.
QEMU_WARD_ECHO = r"""
prev=
for a; do
  case "$a" in file:*) serial=${a#file:};; esac
  [ "$prev" = -append ] && line=$a
  prev=$a
done
m=$(echo "$line" | sed -n 's/^%echo \(ward-verifier-\$((.*))\);.*/\1/p')
{
  echo "Ward UART"
  echo "init complete at 1234567"
  eval "echo $m"
  echo "Benchmark (ward),   Off Best,   On Best,   Fast Best,"
  echo "getpid,   320,   2100,   360,"
  echo "context switch,   1800,   5200,   2000,"
  echo "small page fault,   2500,   6400,   2700,"
  echo "huge page fault,   90000,   98000,   91000,"
} > "$serial"
"""
QEMU_WARD_CONSTANT = QEMU_WARD_ECHO.replace('eval "echo $m"', "echo ward-verifier-42424")
# theseus: the shell starts, four applications end, and the RAM QEMU saves holds bm's results in
# the paper's order (null, spawn, memory map, async IPC), whatever order the verifier drew.
THESEUS_TERMINAL = "".join(
    f"BM-INFO: {name} result: (nano sec)\\036        mean:    {mean} \\036"
    for name, mean in (
        ("NULL", "20.3"),
        ("SPAWN", "311521.6"),
        ("MEMORY MAP", "9421.7"),
        ("IPC ASYNC", "3812.2"),
    )
)
QEMU_THESEUS_CONSTANT = rf"""
for a; do case "$a" in file:*) serial=${{a#file:}};; esac; done
{{
  echo "[I] kernel/first_application/src/lib.rs:31: Starting first application: crate"
  for t in 31 38 45 52; do
    echo "[I] applications/shell/src/lib.rs:1073: terminal: task [$t] returned exit value: Some(0)"
  done
}} > "$serial"
printf '\000{THESEUS_TERMINAL}\000' | tr '\036' '\n' > guest.mem
"""


def theseus_image(tmp_path):
    """An ISO with the literals of a real image's crates (so the experiment boots it), and no
    prebuilt copy beside it: what a QEMU of the attacker's is then handed."""
    import shutil

    workdir = fakes_c5_fakes2.theseus("replay")(tmp_path)
    shutil.rmtree(workdir / "osdi20ae")
    return workdir


CASES |= {
    ("kflex_sosp24", "stub_interpreter"): (
        with_qemu(fakes_c5_sys37.kflex, QEMU_KFLEX_ECHO, elf=False),
        None,
    ),
    ("kflex_sosp24", "echo"): (with_qemu(fakes_c5_sys37.kflex, QEMU_KFLEX_ECHO, elf=True), None),
    ("nros_osdi21", "stub_interpreter"): (
        with_qemu(fakes_c5_sys37.nros, QEMU_NROS_ECHO, elf=False),
        None,
    ),
    ("nros_osdi21", "echo"): (with_qemu(fakes_c5_sys37.nros, QEMU_NROS_ECHO, elf=True), None),
    ("ward_osdi20", "echo"): (
        with_qemu(fakes_systems_val.ward_stub_binary, QEMU_WARD_ECHO, elf=True),
        None,
    ),
    ("ward_osdi20", "constant"): (
        with_qemu(fakes_systems_val.ward_stub_binary, QEMU_WARD_CONSTANT, elf=True),
        None,
    ),
    ("theseus_osdi20", "stub_interpreter"): (
        with_qemu(theseus_image, QEMU_THESEUS_CONSTANT, elf=False),
        None,
    ),
    ("theseus_osdi20", "constant"): (
        with_qemu(theseus_image, QEMU_THESEUS_CONSTANT, elf=True),
        None,
    ),
}
AIMED |= {
    ("kflex_sosp24", "stub_interpreter"): "qemu_vouched",
    ("kflex_sosp24", "echo"): "qemu_vouched",
    ("nros_osdi21", "stub_interpreter"): "qemu_vouched",
    ("nros_osdi21", "echo"): "qemu_vouched",
    ("ward_osdi20", "echo"): "qemu_vouched",
    ("ward_osdi20", "constant"): "ran_verifier_command_line",
    ("theseus_osdi20", "stub_interpreter"): "qemu_vouched",
}


# ---- pash_eurosys21: pa.sh printing the demo's misspellings, and a log naming the input it saw -
PASH_CONSTANT = """
while [ $# -gt 1 ]; do shift; done
f=$(sed -n 's/^FILE="\\(.*\\)"$/\\1/p' "$1")
printf '%s\\n' accomodate recieve seperate definately
{
  echo "Compiler exited with code: 0"
  echo "{ cat $f >\\"#file1\\" & }"
  echo "{ $PASH_TOP/runtime/eager.sh \\"#file3\\" & }"
} > pash.log
"""


def pash_constant(tmp_path):
    workdir = fakes_c5_sys37.pash(elf=False)(tmp_path)
    script(workdir / "pa.sh", PASH_CONSTANT)
    return workdir


CASES |= {
    # pa.sh (the stub_binary fake's) names the nonce-named input it was handed in its log and
    # runs the pipeline with bash: it echoes what the verifier drew.
    ("pash_eurosys21", "echo"): (fakes_c5_sys37.pash(elf=True), None),
    ("pash_eurosys21", "constant"): (pash_constant, None),
    # python copying the seed it was handed into the test cases: all QSYM's target shows it.
    ("qsym_usenixsec18", "echo"): (fakes_c5_sys37.qsym(elf=True), None),
    # seurat_cell21's echo (its Rscript handing the drawn subset back) is played against a bank
    # variant in tests/fakes_ml_val.py.
}
AIMED |= {
    ("pash_eurosys21", "echo"): "pinned_sources",
    ("pash_eurosys21", "constant"): "pash_output_correct",
    ("qsym_usenixsec18", "echo"): "drawn_branches_solved",
}


# ---- kvservice_demo24: server.py on http.server, behind a python of each kind ----------------
# The rewrite answers a GET with what the last PUT sent, kept in a file so a restart keeps it:
# the drawn value echoed back (it never parses or stores anything as the artifact does).
KV_ECHO = fakes_ml_val.KV_SERVER.replace(
    "store = {}\n",
    "import os\nSAVED = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'echo.json')\n"
    "store = json.load(open(SAVED)) if os.path.exists(SAVED) else {}\n",
).replace(
    "        self.reply(201, {})\n",
    "        json.dump(store, open(SAVED, 'w'))\n        self.reply(201, {})\n",
)
# ... or with the value the verifier's experiment.sh shows, whatever was sent.
KV_CONSTANT = fakes_ml_val.KV_SERVER.replace(
    '"value": store[key]', '"value": "pH 6.82 @ 14:05, site B, sample 1234"'
)


def kvservice(server, python=None):
    """kv_plain_rewrite's real venv with SERVER as server.py; PYTHON (make, body): the venv's
    env/bin/python link replaced by a stub that hands the rest to Debian's python (the link
    alone is removed: the python it points to is the host's and stays where it is)."""

    def build(tmp_path):
        workdir = fakes_ml_val.kv_plain_rewrite(tmp_path)
        (workdir / "server.py").write_text(server)
        if python:
            make, first = python
            link = workdir / "env/bin/python"
            assert link.is_symlink()
            link.unlink()
            make(link, f'{first}\nexec /usr/bin/python3 "$@"')
        subprocess.run(["chmod", "-R", "a+rwX", str(workdir)], check=True)
        return workdir

    return build


CASES |= {
    ("kvservice_demo24", "stub_interpreter"): (kvservice(KV_ECHO, (script, "")), None),
    ("kvservice_demo24", "stub_binary"): (kvservice(KV_ECHO, (stub_elf, "")), None),
    ("kvservice_demo24", "echo"): (kvservice(KV_ECHO), None),
    ("kvservice_demo24", "constant"): (kvservice(KV_CONSTANT), None),
}
AIMED |= {
    ("kvservice_demo24", "stub_interpreter"): "python_vouched",
    ("kvservice_demo24", "stub_binary"): "python_vouched",
    ("kvservice_demo24", "echo"): "pinned_server_py",
    ("kvservice_demo24", "constant"): "value_read_back_is_this_attempts",
}


# ---- karousos_eurosys24: runServer.sh writing the README's example trace, whatever was drawn --
KAR_CONSTANT = """
t="$KAR_HOME/src/advice/karousos_$1-$2"; mkdir -p "$t"
for m in helloworldab karousosdemo; do echo "Posted: 1: $m"; echo "got: $m"; done > "$t/trace.csv"
cp "$t/trace.csv" "$t/.orig"
"""


def karousos_constant(tmp_path):
    workdir = fakes_c5_fakes1.karousos_scripts(tmp_path)
    script(workdir / "src/runServer.sh", KAR_CONSTANT)
    return workdir


CASES[("karousos_eurosys24", "constant")] = (karousos_constant, None)
AIMED[("karousos_eurosys24", "constant")] = "drawn_requests_served"


# ---- k9db_osdi23: a MariaDB client on the system PATH that echoes the rows it was sent --------
# The proxy (the stub_binary fake's) never listens; the client the experiment finds first keeps
# the INSERTs of load.sql and answers GDPR GET and FORGET with the drawn rows of the drawn user:
# every count the verifier drew comes back.
MARIADB_ECHO = r"""
rows="${0%/*}/.rows"
sql=$(cat)
row="s/^INSERT INTO p[^ ]* VALUES ([0-9]*, \([0-9]*\), '\(.*\)');$/\1 \2/p"
case "$sql" in
  *"CREATE DATA_SUBJECT"*) echo "$sql" | sed -n "$row" > "$rows";;
  *"GDPR GET"*) awk '$1 == 11 { print $2 }' "$rows";;
  *"GDPR FORGET"*) awk '$1 != 11 { print $2 }' "$rows";;
  *"SHOW MEMORY"*) echo "total 1024";;
esac
"""

CASES[("k9db_osdi23", "echo")] = (
    on_path(fakes_c5_sys37.k9db, {"mariadb": MARIADB_ECHO}),
    None,
)
AIMED[("k9db_osdi23", "echo")] = "listener_is_the_build"


# ---- theseus_osdi20: a QEMU that reads the keys the verifier types on its monitor -------------
# The shell "starts" at once; each command typed (sendkey lines on the monitor's pipe) ends with
# an application's exit on the serial console, and the RAM saved at pmemsave holds a result for
# each command in the order it was typed: the drawn order, echoed.
QEMU_THESEUS_ECHO = r"""
for a; do
  case "$a" in file:*) serial=${a#file:};; pipe:*) mon=${a#pipe:};; esac
done
echo "[I] kernel/first_application/src/lib.rs:31: Starting first application: crate" > "$serial"
exec 4<"$mon.in"
cmd=; task=30; : > terminal
while read -r verb key <&4; do
  case "$verb $key" in
    "sendkey ret")
      case "$cmd" in
        "bm --null") n=NULL; m=20.3;;
        "bm --spawn") n=SPAWN; m=311521.6;;
        "bm --memory_map") n="MEMORY MAP"; m=9421.7;;
        *) n="IPC ASYNC"; m=3812.2;;
      esac
      printf 'BM-INFO: %s result: (nano sec)\n        mean:    %s \n' "$n" "$m" >> terminal
      task=$((task + 7))
      echo "[I] shell: terminal: task [$task] returned exit value: Some(0)" >> "$serial"
      cmd=;;
    "sendkey spc") cmd="$cmd ";;
    "sendkey minus") cmd="$cmd-";;
    "sendkey shift-minus") cmd="${cmd}_";;
    sendkey*) cmd="$cmd$key";;
    pmemsave*) { printf '\000'; cat terminal; printf '\000'; } > guest.mem; exit 0;;
  esac
done
"""

CASES[("theseus_osdi20", "echo")] = (
    with_qemu(theseus_image, QEMU_THESEUS_ECHO, elf=True),
    None,
)
AIMED[("theseus_osdi20", "echo")] = "qemu_vouched"
