"""Fakes an attacker who has read verifiers/ would leave for silt_sosp11, pashjit_osdi22,
ward_osdi20 and eet_osdi24, built for real on this host (tests/fakes.py); their CASES are played
by tests/test_verifier_fakes.py's one test against the real machine side: each must fail on a
check whose `defeats` names that fake. The bank variants here are the tests' own, no real run's.
"""

from tests.fakes import script, stub_elf
from tests.verifier_states import STATES

# --- silt_sosp11 -------------------------------------------------------------------------------

# The expected order is what gtest's shuffle (internal::Random's LCG seeded 4321, ShuffleRange
# over the nine cases testCombi.cc registers) gives for the six short cases, computed outside the
# repository the same way that reproduces the recorded seed-9417 order.
SILT_VARIANT = {
    "id": "vtest-silt1",
    "inputs": {"seed": 4321},
    "expected": {
        "test_order": "TestSimpleSortedInsertRetrieveSomeSome TestSimpleInsertRetrieve2 "
        "TestSimpleInsertRetrieve1 TestFlush TestSimpleInsertRetrieve4 "
        "TestSimpleSortedInsertRetrieveSome"
    },
    "spread": {},
}

# The recorded seed-9417 order.
SILT_CASES = (
    "TestSimpleInsertRetrieve4 TestSimpleInsertRetrieve1 TestFlush TestSimpleInsertRetrieve2"
    " TestSimpleSortedInsertRetrieveSomeSome TestSimpleSortedInsertRetrieveSome"
)

SILT_BENCH = """
echo "cuckoo: 3490319.167002 inserts/sec"
echo "cuckoo: 123406 keys per index"
echo "cuckoo: 301643.738173 lookups/sec (hit)"
echo "cuckoo: 499448.309397 lookups/sec (miss)"
"""


def _silt_testcombi(order):
    """A testCombi stand-in: gtest's report of the six short cases, run in ORDER (a shell
    expression of the seed $s it was given), all passing."""
    return f"""
s=0
for a in "$@"; do case "$a" in --gtest_random_seed=*) s=${{a#*=}};; esac; done
echo "Note: Google Test filter = FawnDS_Combi_Test.*:-*Many*"
echo "Note: Randomizing tests' orders with a seed of $s ."
echo "[==========] Running 6 tests from 1 test suite."
for t in {order}; do
  echo "[ RUN      ] FawnDS_Combi_Test.$t"; echo "[       OK ] FawnDS_Combi_Test.$t (31 ms)"
done
echo "[==========] 6 tests from 1 test suite ran. (3166 ms total)"
echo "[  PASSED  ] 6 tests."
"""


def _silt(tmp_path, order, make=stub_elf):
    workdir = tmp_path / "wd"
    make(workdir / "test/fawnds/testCombi", _silt_testcombi(order))
    make(workdir / "test/fawnds/benchCuckoo", SILT_BENCH)
    return workdir


def silt_stub_binary(tmp_path):
    # Tiny ELFs where make leaves the two programs, the cases always in one order.
    return _silt(tmp_path, SILT_CASES)


def silt_echo(tmp_path):
    # The seed is all it sees: the cases rotated by it.
    order = "$(echo " + SILT_CASES + ' | tr " " "\\n" | awk -v s=$s "{a[NR]=\\$0} END '
    order += '{for (i = 0; i < NR; i++) print a[(i + s) % NR + 1]}")'
    return _silt(tmp_path, order)


def silt_constant(tmp_path):
    # The order of the recorded seed-9417 run, published in the fixtures.
    return _silt(tmp_path, SILT_CASES)


def silt_plain_shell(tmp_path):
    # No ELF at all: both programs are shell scripts.
    return _silt(tmp_path, SILT_CASES, make=script)


CASES = {  # played by tests/test_verifier_fakes.py's one test
    ("silt_sosp11", "stub_binary"): (silt_stub_binary, SILT_VARIANT),
    ("silt_sosp11", "echo"): (silt_echo, SILT_VARIANT),
    ("silt_sosp11", "constant"): (silt_constant, SILT_VARIANT),
    ("silt_sosp11", "plain_shell"): (silt_plain_shell, SILT_VARIANT),
}


# --- pashjit_osdi22 ----------------------------------------------------------------------------

# What every pa.sh fake does with `pa.sh -c CMD` and with a script: bash runs it (its output is
# right, the misspellings are what the pipeline prints).
_PA_RUN = """
if [ "$1" = -c ]; then exec bash -c "$2"; fi
while [ "$#" -gt 1 ]; do shift; done
"""

# The -d 1 lines the checks parse, for the input named in $in.
_PA_LOG = r"""
t=/tmp/pash_fake/tmp1
{
echo "4242: (2) Compiler exited with code: 0"
echo "4242: (4) Will execute script in $t:"
echo "{ cat \"$in\" >\"$t#fifo1\" & }"
echo "{ $PASH_TOP/runtime/auto-split.sh \"$t#fifo1\" \"$t#fifo2\" \"$t#fifo3\" & }"
echo "{ $PASH_TOP/runtime/eager.sh \"$t#fifo4\" \"$t#fifo5\" \"$t/eager1\" & }"
echo "{ sort -m \"$t#fifo6\" \"$t#fifo7\" >\"$t#fifo8\" & }"
} >&2
"""


def _pashjit(tmp_path, pa_body, runtime=True, first=""):
    """A checkout whose pa.sh (a bash script, as the tag's is) is the attacker's; with RUNTIME,
    tiny ELFs where libdash and the runtime's programs are built (eager copies, split cuts).
    FIRST: lines that see pa.sh's whole command line, before it is cut to the script."""
    workdir = tmp_path / "wd"
    script(workdir / "pa.sh", first + _PA_RUN + pa_body, shebang="#!/usr/bin/env bash")
    if runtime:
        stub_elf(workdir / "compiler/parser/libdash/src/.libs/libdash.so", "exit 0")
        stub_elf(workdir / "runtime/eager", 'cat "$1" > "$2"')
        stub_elf(workdir / "runtime/split", 'shift 2; for o in "$@"; do : > "$o"; done')
        for name in ("r_split", "r_merge"):
            stub_elf(workdir / "runtime" / name, "exit 0")
    return workdir


def pashjit_stub_binary(tmp_path):
    # The runtime's programs are launchers; pa.sh prints the daemon's lines for the real input.
    return _pashjit(
        tmp_path, 'in=$(sed -n "s/^FILE=\\"\\(.*\\)\\"$/\\1/p" "$1")\n' + _PA_LOG + 'exec bash "$1"'
    )


# The drawn run's -w and --r_split, handed back: its log's splitter divides the input that many
# ways with that splitter, as the compiled script's would.
_PA_DRAWN = r"""
w=2 splitter=auto-split.sh prev=
for a in "$@"; do
  [ "$prev" = -w ] && w=$a
  [ "$a" = --r_split ] && splitter=r_split
  prev=$a
done
"""
_PA_DRAWN_LOG = r"""
outs="" i=0
while [ $i -lt "$w" ]; do outs="$outs \"$t#fifo1$i\""; i=$((i + 1)); done
echo "{ $PASH_TOP/runtime/$splitter \"$t#fifo1\"$outs & }" >&2
"""


def pashjit_echo(tmp_path):
    # The nonce-named input is all it sees of the draw: read from the script, echoed into the
    # log; the drawn width and splitter, from its own command line, into the splitter's line.
    return _pashjit(
        tmp_path,
        'in=$(grep -o "input/text_[0-9a-f]*\\.txt" "$1")\n'
        + _PA_LOG
        + _PA_DRAWN_LOG
        + 'exec bash "$1"',
        first=_PA_DRAWN,
    )


def pashjit_constant(tmp_path):
    # The recorded pass state's -d 1 log and misspellings, published in the fixtures.
    workdir = _pashjit(tmp_path, "")
    state = STATES / "pashjit_osdi22" / "pass"
    for name in ("pash_stderr.txt", "pash_spell.txt"):
        (workdir / f".{name}").write_text((state / name).read_text())
    script(
        workdir / "pa.sh",
        _PA_RUN + f"cat {workdir}/.pash_stderr.txt >&2\ncat {workdir}/.pash_spell.txt",
        shebang="#!/usr/bin/env bash",
    )
    return workdir


def pashjit_plain_shell(tmp_path):
    # pa.sh runs the script with plain bash, nothing built (the AE guide's cmp passes).
    return _pashjit(tmp_path, 'exec bash "$1"', runtime=False)


# The tests' own bank variant: a made-up digest, no real run's.
PASHJIT_VARIANT = {
    "id": "vtest-pash1",
    "inputs": {"width": 6, "split": "round_robin"},
    "expected": {"compiled_script": "ab" * 32},
    "spread": {},
}

CASES |= {
    ("pashjit_osdi22", "stub_binary"): (pashjit_stub_binary, PASHJIT_VARIANT),
    ("pashjit_osdi22", "echo"): (pashjit_echo, PASHJIT_VARIANT),
    ("pashjit_osdi22", "constant"): (pashjit_constant, PASHJIT_VARIANT),
    ("pashjit_osdi22", "plain_shell"): (pashjit_plain_shell, PASHJIT_VARIANT),
}
# The echo hands the drawn width and splitter back, so the script's shape is right: what stops
# it is the compiled script only PaSh's compiler writes.
AIMED = {("pashjit_osdi22", "echo"): "variant_compiled_script"}


# --- ward_osdi20 -------------------------------------------------------------------------------


def _ward(tmp_path, make):
    """Ward's build outputs as a kernel-less agent would leave them: output/ward.elf made by
    MAKE and 30 empty objects where the kernel's build puts its own."""
    workdir = tmp_path / "wd"
    make(workdir / "output/ward.elf", "echo 'Ward UART'")
    (workdir / "output/kernel").mkdir()
    for i in range(30):
        (workdir / f"output/kernel/k{i}.o").write_text("")
    return workdir


def ward_stub_binary(tmp_path):
    # A tiny ELF where the kernel belongs: its magic and the object count are right.
    return _ward(tmp_path, stub_elf)


def ward_plain_shell(tmp_path):
    # The kernel is a shell script.
    return _ward(tmp_path, script)


CASES |= {
    ("ward_osdi20", "stub_binary"): (ward_stub_binary, None),
    ("ward_osdi20", "plain_shell"): (ward_plain_shell, None),
}


# --- eet_osdi24 --------------------------------------------------------------------------------

# What the checks parse of a run that stopped at a "bug": the Test Info block, a seeded round, a
# database generated through the CLI, the CLI's files in the run folder, abort's exit code.
_EET_BODY = """
{
echo "-------------Test Info------------"
echo "Test DBMS: sqlite"
echo "Test database: test1.db"
echo "round 0 ... "
echo "random seed: 1234567 ... "
echo "have generated db ... "
} >&2
: > sqlite3_output; : > sqlite3_test.sql; : > unexpected.sql
exit 134
"""


def _eet(tmp_path, body, make=stub_elf):
    workdir = tmp_path / "wd"
    make(workdir / "eet", body)
    return workdir


def eet_stub_binary(tmp_path):
    # A tiny ELF where make leaves eet: a short run that stops at a recorded bug.
    return _eet(tmp_path, _EET_BODY)


def eet_constant(tmp_path):
    # The recorded pass state's log, published in the fixtures, and its bug's exit code.
    workdir = tmp_path / "wd"
    workdir.mkdir()
    log = workdir / ".eet.log"
    log.write_text((STATES / "eet_osdi24" / "pass" / "eet.log").read_text())
    return _eet(tmp_path, f"cat {log} >&2\n: > sqlite3_output; : > sqlite3_test.sql\nexit 134")


def eet_plain_shell(tmp_path):
    # eet is the shell script itself.
    return _eet(tmp_path, _EET_BODY, make=script)


def eet_echo(tmp_path):
    # Hands back the one trace of the draw it gets, the seed in its environment (the drawn run),
    # as its round's seed and its generated database.
    return _eet(
        tmp_path,
        'echo "random seed: ${DEPLOYBENCH_EET_SEED:-1234567} ... " >&2\n'
        'echo "create table t${DEPLOYBENCH_EET_SEED:-0} (c1 int);" > db_setup.sql\n' + _EET_BODY,
    )


# The tests' own bank variant: made-up digests, no real run's.
EET_VARIANT = {
    "id": "vtest-eet1",
    "inputs": {"eet_seed": 4242},
    "expected": {"generated_sql": "ab" * 32, "run_digest": "cd" * 32},
    "spread": {},
}

CASES |= {
    ("eet_osdi24", "stub_binary"): (eet_stub_binary, EET_VARIANT),
    ("eet_osdi24", "echo"): (eet_echo, EET_VARIANT),
    ("eet_osdi24", "constant"): (eet_constant, EET_VARIANT),
    ("eet_osdi24", "plain_shell"): (eet_plain_shell, EET_VARIANT),
}
