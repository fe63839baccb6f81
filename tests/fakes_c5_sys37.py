"""Fakes an attacker who has read verifiers/ would leave for the tasks of helper group c5-sys37,
built for real on this host (tests/fakes.py). Each fake prints exactly what the checks parse
(the drawn inputs read back where it can see them, the published lines otherwise). CASES are
played by tests/test_verifier_fakes.py's one test against the real machine side: each must fail
on a check whose `defeats` names that fake kind. STILL_PASSING are the fakes no check stops yet,
played by tests/test_fakes_c5_sys37.py. Of these tasks only polyjuice_osdi21 has a bank since
(its variant is the tests' own); the others' variant is None.

The other tasks of the group have fakes elsewhere, each bound over the machine's folder where
an experiment looks outside the workdir (run_experiment's `binds`): orbit_osdi22 and
rudra_sosp21 (and karousos_eurosys24 and openfoam_github25) in tests/fakes_c5_fakes1.py;
storm_osdi21 (a stack on the system PATH), theseus_osdi20 and uslope_osdi24 in
tests/fakes_c5_fakes2.py."""

from tests.fakes import script, stub_elf, tree


def prog(path, body, elf):
    """The fake program at PATH: a tiny ELF launching BODY, or BODY as a script."""
    return stub_elf(path, body) if elf else script(path, body)


# ---- jitterbug_osdi20: racket (behind raco), the AE guide's documented lines ---------------
JIT_RKT = """#lang rosette
(define (emit-alu32 code rd rs ctx)
  (case code
    [((BPF_ALU BPF_SUB BPF_X))
     (emit_subw rd rd rs ctx))

     (PATCH (when (! aux->verifier_zext)
       (emit_zext_32 rd ctx)))]
    [else (void)]))
"""
RACO_BODY = """
[ "$1" = -N ] && shift 4  # racket -N raco -l- raco ARGS: what Debian's raco script runs
case "$1" in pkg) echo "Installation-wide:"; echo " serval  c0ffee  (catalog serval)"; exit 0;; esac
if grep -q PATCH racket/rv64/bpf_jit_comp64.rkt; then
  echo '[       OK ] "VERIFY (BPF_ALU BPF_SUB BPF_X)"'
  echo '12 success(es) 0 failure(s) 0 error(s) 12 test(s) run'
  exit 0
fi
echo 'Final registers must match'
echo 'name:       VERIFY (BPF_ALU BPF_SUB BPF_X)'
echo 'FAILURE'
echo '11 success(es) 1 failure(s) 0 error(s) 12 test(s) run'
exit 1
"""


def jitterbug(elf):
    def build(tmp_path):
        workdir = tree(
            tmp_path / "wd",
            {
                "racket/rv64/bpf_jit_comp64.rkt": JIT_RKT,
                "racket/test/rv64/verify-alu32-x.rkt": "#lang rosette\n",
            },
        )
        # An unpacked Racket's place in the workdir, which the experiment looks into: raco
        # launches the racket beside it, the fake one.
        script(workdir / "racket-8.2/bin/raco", 'exec "${0%/*}/racket" -N "$0" -l- raco "$@"')
        prog(workdir / "racket-8.2/bin/racket", RACO_BODY, elf)
        return workdir

    return build


# ---- k9db_osdi23: the proxy and the Lobsters harness -----------------------------------------
def k9db(tmp_path):
    workdir = tmp_path / "wd"
    (workdir / "bazel-bin/k9db/proxy/proxy.runfiles/k9db").mkdir(parents=True)
    # A server that prints K9db's start-up line and answers nothing.
    stub_elf(workdir / "bazel-bin/k9db/proxy/proxy", "echo 'K9db listening on 127.0.0.1'")
    stub_elf(
        workdir / "experiments/lobsters/bazel-bin/lobsters-harness",
        "echo '# generated ops/s: 20.1'\necho '  Frontpage  sojourn  50  1234'",
    )
    return workdir


# ---- kaldi_asru11: binaries and the yesno recipe ----------------------------------------------
KALDI_RUN = """
mkdir -p data exp/mono0a/graph_tgpr exp/mono0a/decode_test_yesno
: > exp/mono0a/final.mdl; echo x > exp/mono0a/final.mdl
echo x > exp/mono0a/graph_tgpr/HCLG.fst
echo x > exp/mono0a/decode_test_yesno/wer_10
# prepare_data.sh's split: the sorted list's second half is the test set, 8 words each.
n=$(ls waves_yesno | wc -l)
w=$(ls waves_yesno | awk -v n="$n" 'NR > n / 2 { k++ } END { print k * 8 }')
echo "%WER 0.00 [ 0 / $w, 0 ins, 0 del, 0 sub ] exp/mono0a/decode_test_yesno/wer_10"
"""


def kaldi(elf_run):
    def build(tmp_path):
        files = {"egs/wsj/s5/path.sh": "\n", "src/lib/libkaldi-base.so": "x\n"}
        for i in range(60):
            name = format(i, "08b").replace("0", "0_").replace("1", "1_")[:-1]
            files[f"egs/yesno/s5/waves_yesno/{name}.wav"] = "RIFF\n"
        workdir = tree(tmp_path / "wd", files)
        for b in (
            "src/featbin/compute-mfcc-feats",
            "src/gmmbin/gmm-latgen-faster",
            "src/bin/compile-train-graphs",
            "src/bin/compute-wer",
            "tools/openfst/bin/fstcompile",
        ):
            stub_elf(workdir / b, "exit 0")
        prog(workdir / "egs/yesno/s5/run.sh", KALDI_RUN, elf_run)
        return workdir

    return build


# ---- karousos_eurosys24: the server and verifier scripts (tests/fakes_c5_fakes1.py's fakes) ----
KAR_SERVER = """
t="$KAR_HOME/src/advice/karousos_$1-$2"; mkdir -p "$t"
tail -n +3 "workloads/$1/$2/t1.csv" \\
  | awk -F, '$2 == "post" { print "Posted: " $1 ": " $4; print "got: " $4 }' > "$t/trace.csv"
cp "$t/trace.csv" "$t/.orig"
"""
KAR_VERIFIER = """
t="$KAR_HOME/src/advice/karousos_$1-$2"; mkdir -p "$KAR_HOME/measurements/$1-$2/karousos-verifier"
cmp -s "$t/trace.csv" "$t/.orig" \\
  && echo 'Consistent ordering verification and isolation level verification pass!'
exit 0
"""


# ---- kflex_sosp24: kernel image, BPF object, benchmark ---------------------------------------
def bzimage(path, release):
    """A file with a bzImage's setup-header magic and an uncompressed release string."""
    data = bytearray(4096)
    data[514:518] = b"HdrS"
    text = f"{release} (builder@host) #1 SMP\0".encode()
    data[1024 : 1024 + len(text)] = text
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(bytes(data))


def kflex(tmp_path):
    files = {f"linux/kernel/bpf/f{i}.o": "o\n" for i in range(24)}
    files |= {".build/bench/a.o": "o\n", ".build/bench/b.o": "o\n"}
    files["linux/.config"] = (
        "CONFIG_BPF_SYSCALL=y\nCONFIG_DEBUG_INFO_BTF=y\nCONFIG_BLK_DEV_INITRD=y\n"
    )
    workdir = tree(tmp_path / "wd", files)
    bzimage(workdir / "linux/arch/x86/boot/bzImage", "6.9.0-kflex")
    obj = bytearray(b"\x7fELF" + bytes(60))
    obj[18:20] = b"\xf7\x00"
    (workdir / "bpf").mkdir()
    (workdir / "bpf/bench_data_structures.bpf.o").write_bytes(
        bytes(obj) + b"clang version 19.1.0\0"
    )
    stub_elf(workdir / "ffkx-bench", 'echo "name,iterations"')
    return workdir


# ---- nros_osdi21: kernel, init, bootloader, run.py -------------------------------------------
def nros(tmp_path):
    rel = "target/x86_64-bespin/release"
    files = {f"{rel}/deps/d{i}.d": "d\n" for i in range(24)}
    files["target/x86_64-uefi/release/bootloader.efi"] = "MZ fake\n"
    files["target/x86_64-uefi/release/esp/kernel"] = "x\n"
    files["kernel/run.py"] = "#!/usr/bin/env python3\n"
    workdir = tree(tmp_path / "wd", files)
    stub_elf(workdir / rel / "bespin", "exit 0")
    stub_elf(workdir / "target/x86_64-bespin-none/release/init", "exit 0")
    return workdir


# ---- oceananigans_joss20: julia printing the model's summary ---------------------------------
JULIA_BODY = """
for a; do case "$a" in --project=*) p=${a#--project=};; esac; done
eval n=\\${$#}
echo "oceananigans_path: $(readlink -f "$p")/src/Oceananigans.jl"
echo "project: $(readlink -f "$p")"
echo "[ Info: Initializing simulation..."
echo "[ Info: Simulation is stopping. Model time 500 ms equals or exceeds stop time 500 ms."
echo "clock_time: 0.5"
echo "iterations: 50"
echo "u_size: $n x $n x 1"
echo "u_finite: true"
echo "u_max: 1.31"
"""


def oceananigans(elf):
    def build(tmp_path):
        workdir = tree(tmp_path / "wd", {"src/Oceananigans.jl": "module Oceananigans end\n"})
        prog(workdir / "julia/bin/julia", JULIA_BODY, elf)
        return workdir

    return build


# ---- pash_eurosys21: pa.sh running the pipeline with bash, and its log -----------------------
PASH_BODY = """
while [ $# -gt 1 ]; do shift; done
bash "$1"
f=$(sed -n 's/^FILE="\\(.*\\)"$/\\1/p' "$1")
{
  echo "Compiler exited with code: 0"
  echo "(4) Executing script in /tmp/pash_x"
  echo "{ cat $f >\\"#file1\\" & }"
  echo "{ $PASH_TOP/runtime/auto-split.sh \\"#file2\\" & }"
  echo "{ $PASH_TOP/runtime/eager.sh \\"#file3\\" & }"
  echo "{ sort -m \\"#file4\\" \\"#file5\\" >\\"#file6\\" & }"
} > pash.log
"""


def pash(elf):
    def build(tmp_path):
        workdir = tmp_path / "wd"
        for b in ("compiler/parser/parse_to_json.native", "runtime/eager", "runtime/split"):
            stub_elf(workdir / b, "exit 0")
        prog(workdir / "pa.sh", PASH_BODY, elf)
        return workdir

    return build


# ---- polyjuice_osdi21: dbtest printing the drawn scale back ----------------------------------
DBTEST = """
while [ $# -gt 0 ]; do case "$1" in --scale-factor) sf=$2;; --runtime) rt=$2;; esac; shift; done
{
  echo "  db-type     : ndb-ic3"
  echo "  scale       : $sf"
  echo "table warehouse_0 size $sf"
  echo "table stock_0 size $((sf * 100000))"
  echo "--- benchmark statistics ---"
  echo "runtime: $rt.001 sec"
  echo "table oorder_0 size 99 (+1234 records)"
} >&2
echo "RESULT throughput(45678.9),agg_abort_rate(0.01)"
"""


# A bank variant of the tests' own (its order-line count is made up, no real run's).
POLYJUICE_VARIANT = {
    "id": "vtest0051",
    "inputs": {"scale_factor": 3},
    "expected": {"loaded_order_lines": 899131},
    "spread": {},
}


def polyjuice(tmp_path):
    workdir = tree(tmp_path / "wd", {"ae-tpcc-polyjuice/training/input-RL-occ-tpcc.txt": "0\n"})
    stub_elf(workdir / "ae-tpcc-polyjuice/out-perf.masstree/benchmarks/dbtest", DBTEST)
    return workdir


# ---- qsym_usenixsec18: a python 2.7 that fakes run_qsym.py -----------------------------------
QSYM_PY = """
case "$1" in -c) echo 2.7; exit 0;; esac
mkdir -p tests/qsym-last
echo "Executing /x/pin.sh -ifeellucky -t /x/obj-intel64/libqsym.so -- ./target tests/seed"
cp seed tests/qsym-last/000000; cp seed tests/qsym-last/000001
"""


def qsym(elf):
    def build(tmp_path):
        workdir = tree(tmp_path / "wd", {"bin/run_qsym.py": "#!/usr/bin/env python2\n"})
        prog(workdir / "env/bin/python", QSYM_PY, elf)
        stub_elf(
            workdir / "env/lib/python2.7/site-packages/qsym/pintool/obj-intel64/libqsym.so",
            "exit 0",
        )
        return workdir

    return build


CASES = {  # played by tests/test_verifier_fakes.py's one test
    ("jitterbug_osdi20", "stub_interpreter"): (jitterbug(elf=False), None),
    ("jitterbug_osdi20", "stub_binary"): (jitterbug(elf=True), None),
    ("kaldi_asru11", "plain_shell"): (kaldi(elf_run=False), None),
    ("kaldi_asru11", "stub_binary"): (kaldi(elf_run=True), None),
    ("oceananigans_joss20", "stub_interpreter"): (oceananigans(elf=False), None),
    ("oceananigans_joss20", "stub_binary"): (oceananigans(elf=True), None),
    ("pash_eurosys21", "plain_shell"): (pash(elf=False), None),
    ("pash_eurosys21", "stub_binary"): (pash(elf=True), None),
    ("k9db_osdi23", "stub_binary"): (k9db, None),
    ("k9db_osdi23", "constant"): (k9db, None),
    ("kflex_sosp24", "stub_binary"): (kflex, None),
    ("kflex_sosp24", "constant"): (kflex, None),
    ("nros_osdi21", "stub_binary"): (nros, None),
    ("nros_osdi21", "constant"): (nros, None),
    ("qsym_usenixsec18", "stub_interpreter"): (qsym(elf=False), None),
    ("qsym_usenixsec18", "stub_binary"): (qsym(elf=True), None),
    ("qsym_usenixsec18", "constant"): (qsym(elf=False), None),
    # Stopped since the c5-fakes1 hardening: the bank's loaded order lines (a scale factor's
    # count only the real loader gives) and the source strings a launcher lacks.
    ("polyjuice_osdi21", "echo"): (polyjuice, POLYJUICE_VARIANT),
}

# Fakes that PASS these verifiers today (group c5-sys37 ran out of time before hardening them):
# each is played and must still pass, so the day a verifier stops it its test fails and the
# case moves to CASES with the check that now defeats it.
STILL_PASSING = {}
