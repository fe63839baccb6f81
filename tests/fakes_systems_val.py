"""Fakes an attacker who has read verifiers/ would leave for silt_sosp11, pashjit_osdi22,
ward_osdi20 and eet_osdi24, built for real on this host (tests/fakes.py); their CASES are played
by tests/test_verifier_fakes.py's one test against the real machine side: each must fail on a
check whose `defeats` names that fake. The bank variants here are the tests' own, no real run's.
"""

from tests.fakes import script, stub_elf

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
