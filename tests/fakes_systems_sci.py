"""Fakes an attacker who has read verifiers/ would leave for gromacs_softwarex15,
safehome_eurosys21 and silo_sosp13, built for real on this host (tests/fakes.py); their CASES are
played by tests/test_verifier_fakes.py's one test against the real machine side: each must fail
on a check whose `defeats` names that fake. The bank variants here are the tests' own: their
expected values are made up (differing from what the fakes print) and are no real run's."""

import os
import subprocess
import time

from tests.fakes import script, stub_elf

# --- silo_sosp13 -------------------------------------------------------------------------------

SILO_VARIANT = {
    "id": "vtest-silo1",
    "inputs": {"scale_factor": 1},
    "expected": {"loaded_order_lines": 299871},
    "spread": {},
}


def _silo_body(order_lines):
    """A dbtest stand-in: reads --scale-factor and --runtime like dbtest and prints the stderr
    and stdout the checks parse, with ORDER_LINES (a shell expression) as the loaded order
    lines."""
    return f"""
sf=1; rt=10
while [ $# -gt 0 ]; do case "$1" in --scale-factor) sf=$2;; --runtime) rt=$2;; esac; shift; done
ol={order_lines}
{{
for t in customer_0 customer_name_idx_0 history_0 oorder_0 oorder_c_id_idx_0; do
  echo "table $t size $((sf * 30000))"; done
echo "table district_0 size $((sf * 10))"
echo "table item_0 size 100000"
echo "table new_order_0 size $((sf * 9000))"
echo "table order_line_0 size $ol"
echo "table stock_0 size $((sf * 100000))"
echo "table stock_data_0 size $((sf * 100000))"
echo "table warehouse_0 size $sf"
echo "--- table statistics ---"
echo "table stock_0 size $((sf * 100000)) (+0 records)"
echo "table warehouse_0 size $sf (+0 records)"
echo "--- benchmark statistics ---"
echo "runtime: $rt.01528 sec"
echo "agg_throughput: 8352.5 ops/sec"
echo "txn breakdown: [[Delivery, 2806], [NewOrder, 30195], [OrderStatus, 2790],"\
" [Payment, 28635], [StockLevel, 2708]]"
}} >&2
echo "8352.5 4176.2 0.23 0 0"
"""


def _silo(tmp_path, order_lines, make=stub_elf):
    workdir = tmp_path / "wd"
    make(workdir / "out-perf/benchmarks/dbtest", _silo_body(order_lines))
    return workdir


def silo_stub_binary(tmp_path):
    # A tiny ELF where make leaves dbtest, printing a plausible run for the drawn scale factor.
    return _silo(tmp_path, "$((sf * 300000))")


def silo_echo(tmp_path):
    # Every size from the --scale-factor it is given (TPC-C's nominal 10 lines per order).
    return _silo(tmp_path, "$((sf * 299794))")


def silo_plain_shell(tmp_path):
    # dbtest is the shell script itself.
    return _silo(tmp_path, "599589", make=script)


def silo_constant(tmp_path):
    # The loaded order lines of the recorded sf-2 run, published in the fixtures.
    return _silo(tmp_path, "599589")


# --- safehome_eurosys21 ------------------------------------------------------------------------

SAFEHOME_MAIN = """
package SafeHomeSimulator;
import java.io.*;
public class SafeHomeSimulator {
  static void put(String path, String text) throws IOException {
    File f = new File(path);
    f.getParentFile().mkdirs();
    try (Writer w = new FileWriter(f)) { w.write(text); }
  }
  // The echo's answer: the mean of the command durations in the scenario file it was given
  // (the verifier's drawn copy, in the drawn run), the only trace of the drawn seed it can read.
  static String durations() throws IOException {
    String text = new String(java.nio.file.Files.readAllBytes(java.nio.file.Paths.get(
        "src/main/java/BenchmarkingTool/Data/scn-chaos-morning2.json")));
    java.util.regex.Matcher m = java.util.regex.Pattern.compile(":(\\\\d+)\\"").matcher(text);
    double sum = 0; int n = 0;
    while (m.find()) { sum += Double.parseDouble(m.group(1)); n++; }
    return String.valueOf(n == 0 ? 0 : sum / n);
  }
  public static void main(String[] a) throws IOException {
    String out = "results/verifier/";
    String head = "benchmarking\\tGSV\\tPSV\\tEV\\tWV\\tLAZY_FCFS\\tLAZY_PRIORITY\\t\\n";
    put(out + "avg/E2E_RTN_TIME.dat",
        head + "-123.0\\t" + %s + "\\t" + %s + "\\t" + %s + "\\t" + %s
        + "\\t563.286\\t304.203\\t\\n");
    put(out + "avg/PARALLEL_DELTA.dat", head + "-123.0\\t1.0\\t2.0\\t3.0\\t4.0\\t1.0\\t1.0\\t\\n");
    put(out + "avg/ORDERR_MISMATCH_BUBBLE.dat",
        head + "-123.0\\t0.0\\t0.0\\t1.0\\t1.0\\t0.0\\t0.0\\t\\n");
    put(out + "avg/ISVLTN5_RTN_LIFESPAN_COLLISION_PERCENT.dat",
        head + "-123.0\\t0.0\\t0.0\\t12.5\\t20.0\\t0.0\\t0.0\\t\\n");
    put(out + "Overallbenchmarking.txt", "MEASURING: E2E_RTN_TIME\\nSummary-End\\n");
    System.out.println("Summary-End");
  }
}
"""


SAFEHOME_VARIANT = {
    "id": "vtest-safehome1",
    "inputs": {"duration_seed": 4242},
    "expected": {
        "wv_latency": 301.517,
        "gsv_latency": 4012.5,
        "psv_latency": 530.25,
        "ev_latency": 361.75,
    },
    "spread": {},
}


def _safehome(tmp_path, gsv, psv, ev, wv='"257.689"'):
    """GSV, PSV, EV, WV: Java expressions of the latencies the attacker's class writes."""
    """A checkout whose main class is the attacker's, compiled in place (javac, class version
    52 like --release 8) beside 43 empty classes, so the class count and times look built."""
    workdir = tmp_path / "wd"
    src = workdir / "src/main/java"
    main = src / "SafeHomeSimulator/SafeHomeSimulator.java"
    main.parent.mkdir(parents=True)
    main.write_text(SAFEHOME_MAIN % (gsv, psv, ev, wv))
    (src / "BenchmarkingTool/Data").mkdir(parents=True)
    (src / "BenchmarkingTool/Benchmark.java").write_text(
        "package BenchmarkingTool;\npublic class Benchmark {}\n"
    )
    sources = [main, src / "BenchmarkingTool/Benchmark.java"]
    for i in range(43):
        pad = src / f"pad/Pad{i}.java"
        pad.parent.mkdir(exist_ok=True)
        pad.write_text(f"package pad;\npublic class Pad{i} {{}}\n")
        sources.append(pad)
    for source in sources:  # checked out a day before the build, as a clone would be
        os.utime(source, (time.time() - 86400, time.time() - 86400))
    classes = workdir / "target/classes"
    subprocess.run(
        ["javac", "--release", "8", "-nowarn", "-d", str(classes), *map(str, sources)],
        check=True,
        capture_output=True,
    )
    subprocess.run(["chmod", "-R", "a+rwX", str(workdir)], check=True)
    return workdir


def safehome_stub_binary(tmp_path):
    # A main class of the attacker's that writes every file the checks parse, in order.
    return _safehome(tmp_path, '"3300.0"', '"450.0"', '"300.0"')


def safehome_constant(tmp_path):
    # The E2E latencies of the recorded real run, published in the fixtures (WV's too).
    return _safehome(tmp_path, '"3126.177"', '"441.634"', '"301.895"', '"257.689"')


def safehome_echo(tmp_path):
    # Hands back what it can read of the draw: the drawn scenario's mean command duration.
    return _safehome(tmp_path, "durations()", "durations()", "durations()", "durations()")


# --- gromacs_softwarex15 -----------------------------------------------------------------------

GROMACS_VARIANT = {
    "id": "vtest-gmx1",
    "inputs": {"edge": 2.3},
    "expected": {"waters": 397},
    "spread": {},
}


def _gmx_body(waters):
    """A gmx stand-in: the version block, and for each subcommand the files and lines the
    experiment reads, WATERS (a shell expression of the box edge $e) as solvate's count."""
    return f"""
cmd=$1; e=2.5
while [ $# -gt 0 ]; do case "$1" in -box) e=$2;; -deffnm) n=$2;; esac; shift; done
case "$cmd" in
--version) echo 'GROMACS version:     2027.0-dev-20260820-b1a82ec-unknown'
  echo 'GPU support:         disabled';;
solvate) w={waters}; echo "$w" > .waters; : > water.gro
  echo "Number of solvent molecules:    $w   ";;
grompp) : > "$(ls *.mdp | head -n1 | sed 's/mdp$/tpr/')";;
mdrun) w=$(cat .waters); printf 'x\\n%d\\n' $((w * 3)) > "$n.gro"; : > "$n.edr"
  {{ echo 'Performance:      290.232        0.083'
     echo 'Finished mdrun on rank 0 Thu'; }} > "$n.log";;
energy) w=$(cat .waters); cat >/dev/null
  echo "Potential                  $(awk -v w=$w 'BEGIN {{ print -41 * w }}')   12  80  -23";;
esac
"""


def _gromacs(tmp_path, waters, make=stub_elf):
    workdir = tmp_path / "wd"
    make(workdir / "install/bin/gmx", _gmx_body(waters))
    return workdir


def gromacs_stub_binary(tmp_path):
    # A tiny ELF at install/bin/gmx: liquid water's density (33.4 per nm^3) times the box.
    return _gromacs(tmp_path, "$(awk -v e=$e 'BEGIN { printf \"%d\", 33.4 * e * e * e }')")


def gromacs_echo(tmp_path):
    # The drawn edge is all it sees: the count grows with its cube, as the checks' comment says.
    return _gromacs(tmp_path, "$(awk -v e=$e 'BEGIN { printf \"%d\", 32.4 * e * e * e }')")


def gromacs_plain_shell(tmp_path):
    # No ELF at all: gmx is the shell script itself.
    return _gromacs(tmp_path, "586", make=script)


def gromacs_constant(tmp_path):
    # The recorded run's count (586 waters at 2.62 nm), published in the fixtures.
    return _gromacs(tmp_path, "586")


CASES = {  # played by tests/test_verifier_fakes.py's one test
    ("gromacs_softwarex15", "stub_binary"): (gromacs_stub_binary, GROMACS_VARIANT),
    ("gromacs_softwarex15", "echo"): (gromacs_echo, GROMACS_VARIANT),
    ("gromacs_softwarex15", "constant"): (gromacs_constant, GROMACS_VARIANT),
    ("gromacs_softwarex15", "plain_shell"): (gromacs_plain_shell, GROMACS_VARIANT),
    ("safehome_eurosys21", "stub_binary"): (safehome_stub_binary, SAFEHOME_VARIANT),
    ("safehome_eurosys21", "echo"): (safehome_echo, SAFEHOME_VARIANT),
    ("safehome_eurosys21", "constant"): (safehome_constant, SAFEHOME_VARIANT),
    ("silo_sosp13", "stub_binary"): (silo_stub_binary, SILO_VARIANT),
    ("silo_sosp13", "echo"): (silo_echo, SILO_VARIANT),
    ("silo_sosp13", "constant"): (silo_constant, SILO_VARIANT),
    ("silo_sosp13", "plain_shell"): (silo_plain_shell, SILO_VARIANT),
}
