# Layer 2 experiment of safehome_eurosys21 (hidden from the agent), after experiment_lib.sh.
#
# Runs the simulator the agent compiled, as the owner of WORKDIR, on the paper's morning scenario
# (Fig 12(a)) with a configuration of the verifier's: the morning.config of the artifact with a
# fixed random seed, 30 samples and its results in a scratch folder. The classes are the ones
# compiled in the checkout: the newest folder holding SafeHomeSimulator/SafeHomeSimulator.class
# (target/classes for Maven, any javac -d folder), never the fat jar the repository ships
# (results/JARs/.../SafeHomeFramework.jar, which also holds them). Its two libraries are looked up
# where a build leaves them: jars in the checkout, the owner's Maven repository, the
# distribution's /usr/share/java, or classes unpacked in the checkout. java runs with
# -verbose:class, so the collected log shows where SafeHomeSimulator's main class was loaded
# from. Collects that, facts on the compiled classes, the summary and the per-metric averages;
# checks.yaml judges them on the controller. RUNBOOK.MD is never read. The java that runs is
# vouched (a wrapper on PATH printing results shows as a script or an unpackaged ELF), the
# sources and the scenario data it reads are pinned, and the compiled classes are searched for
# string constants of their sources (a stand-in main class of an attacker's lacks them).
# Then a second run on a drawn scenario (checks.yaml's variants): the same routines with every
# command's duration drawn anew from $VARIANT_DURATION_SEED, whose latencies a bank compares.
# The simulator's own unseeded generators (it shuffles and spaces the routines) spread GSV's
# latency by about 10% run to run, but weak visibility runs the routines back to back, so its
# latency follows from the durations alone, exactly.
SHIPPED_JAR="$WORKDIR/results/JARs/SafeHomeFramework/SafeHomeFramework.jar"
MAIN_CLASS=SafeHomeSimulator/SafeHomeSimulator.class
SOURCE="$WORKDIR/src/main/java/SafeHomeSimulator/SafeHomeSimulator.java"
OWNER_HOME=$(awk -F: -v u="$OWNER" '$1 == u { print $6 }' /etc/passwd)

# The newest compiled main class in the checkout; its classes folder is two levels up.
MAIN=$(find "$WORKDIR" -path "*/$MAIN_CLASS" -type f 2>/dev/null | while read -r f; do
  echo "$(stat -c %Y "$f") $f"
done | sort -n | tail -n 1 | cut -d' ' -f2-)
CLASSES=""
[ -n "$MAIN" ] && CLASSES=$(dirname "$(dirname "$MAIN")")

# first_jar NAME-GLOB ENTRY: the first jar of that name holding ENTRY where a build leaves it,
# if any (other libraries share the names: json-simple 3 has no org/json/simple).
first_jar() {
  for jar in $(find "$WORKDIR" -name "$1" -type f 2>/dev/null) \
    $(find "$OWNER_HOME/.m2/repository" -name "$1" -type f 2>/dev/null) /usr/share/java/$1; do
    [ -f "$jar" ] && unzip -l "$jar" 2>/dev/null | grep -q " $2\$" && { echo "$jar"; return; }
  done
}
# unpacked ENTRY: the classes folder of an unpacked library class in the checkout, if any.
unpacked() {
  f=$(find "$WORKDIR" -path "*/$1" -type f 2>/dev/null | grep -v "^$CLASSES/" | head -n 1)
  [ -n "$f" ] && echo "${f%/$1}"
}
CP="$CLASSES"
for dep in "commons-math3*.jar org/apache/commons/math3/util/FastMath.class" \
  "json-simple*.jar org/json/simple/JSONObject.class"; do
  set -- $dep
  # Classes the build put beside the simulator's need nothing more.
  [ -n "$CLASSES" ] && [ -f "$CLASSES/$2" ] && continue
  found=$(first_jar "$1" "$2")
  [ -z "$found" ] && found=$(unpacked "$2")
  [ -n "$found" ] && CP="${CP:+$CP:}$found"
done

{
  echo "== compiled classes: ${CLASSES:-none}"
  echo "classes folder: ${CLASSES:-none}"
  echo "class files: $(find "${CLASSES:-/nonexistent}" -name '*.class' -type f 2>/dev/null | wc -l)"
  [ -n "$MAIN" ] && echo "main class: yes" || echo "main class: no"
  [ -n "$MAIN" ] && [ "$MAIN" -nt "$SOURCE" ] && echo "main class newer than its source: yes" ||
    echo "main class newer than its source: no"
  echo "class file version: $(od -An -tu1 -j6 -N2 "$MAIN" 2>/dev/null | tr -s ' ' | sed 's/^ //')"
  # The shipped jar's copy of the main class, byte for byte: a copy is not a build.
  unzip -p "$SHIPPED_JAR" "$MAIN_CLASS" >"$SCRATCH/shipped.class" 2>/dev/null
  if [ -n "$MAIN" ] && [ -s "$SCRATCH/shipped.class" ] && cmp -s "$MAIN" "$SCRATCH/shipped.class"; then
    echo "main class identical to the shipped jar's: yes"
  else
    echo "main class identical to the shipped jar's: no"
  fi
  echo "classpath: $CP"
  # String constants javac keeps in the constant pools (SafeHomeSimulator.java's, Benchmark.java's).
  for probe in "$MAIN|Error: unknown selection.... Terminating..." \
    "$MAIN|MINIMUM_CONCURRENCY_LEVEL_FOR_BENCHMARKING = " \
    "${CLASSES:-/nonexistent}/BenchmarkingTool/Benchmark.class|scn-chaos-morning2.json"; do
    f=${probe%%|*}
    lit=${probe#*|}
    [ -f "$f" ] && has_text "$f" "$lit" && echo "constant '$lit': yes" || echo "constant '$lit': no"
  done
} >"$LOG_DIR/build.txt" 2>&1
cat "$LOG_DIR/build.txt" >"$LOG_DIR/01_build.log"
pinned src/main/java/SafeHomeSimulator/SafeHomeSimulator.java \
  src/main/java/BenchmarkingTool/Benchmark.java \
  src/main/java/BenchmarkingTool/Data/scn-chaos-morning2.json
# The java the run uses, as PATH finds it for the owner, vouched and then run by that path.
JAVA=$(PATH=$SYSTEM_PATH which java 2>/dev/null || echo java)
vouch java "$JAVA"

# The run folder: the verifier's configuration, and the routine data the simulator reads
# relative to its working folder (src/main/java/BenchmarkingTool/Data) from the checkout.
RUN="$SCRATCH/run"
mkdir -p "$RUN/conf" "$RUN/src/main/java/BenchmarkingTool"
cp -r "$WORKDIR/src/main/java/BenchmarkingTool/Data" "$RUN/src/main/java/BenchmarkingTool/" 2>/dev/null
cat >"$RUN/conf/SafeHomeFramework.config" <<'CONFIG'
# verifier: EuroSys'21 Fig 12(a) morning scenario, fixed seed, 30 samples
IS_RUNNING_BENCHMARK = true
bm_setting_type = MATRIX
benchmark_setting = SCENARIO
scenario_type = MORNING_CHAOS
totalSampleCount = 30
isVaryShrinkFactor = false
isVaryCommandCntPerRtn = false
isVaryZipfAlpha = false
isVaryLongRunningPercent = true
isVaryLongRunningDuration = false
isVaryShortRunningDuration = false
isVaryMustCmdPercentage = false
isVaryDevFailureRatio = false
isMeasureEVroutineInsertionTime = false
commaSeprtdVarListString = 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9
commaSeprtdCorrespondingUpperBoundListString = 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9
shrinkFactor = 0.25
minCmdCntPerRtn = 2
maxCmdCntPerRtn = 4
zipF = 0.01
devRegisteredOutOf65Dev = 10
maxConcurrentRtn = 100
longRrtnPcntg = 0.1
isAtleastOneLongRunning = false
minLngRnCmdTimSpn = 2000
maxLngRnCmdTimSpn = 2020
minShrtCmdTimeSpn = 50
maxShrtCmdTimeSpn = 70
devFailureRatio = 0.0
atleastOneDevFail = false
mustCmdPercentage = 1.0
FAILURE_ANALYZER_SAMPLE_COUNT = 100
IS_PRE_LEASE_ALLOWED = true
IS_POST_LEASE_ALLOWED = true
SIMULATION_START_TIME = 0
MAX_DATAPOINT_COLLECTON_SIZE = 2500
RANDOM_SEED = 20210426
MINIMUM_CONCURRENCY_LEVEL_FOR_BENCHMARKING = 5
dataStorageDirectory = ./results/verifier/
CONFIG
chown -R "$OWNER" "$RUN"

{
  echo "== experiment: java -verbose:class -cp <compiled classes>:<libraries> SafeHomeSimulator.SafeHomeSimulator (morning, seed 20210426, 30 samples)"
  if [ -z "$CLASSES" ]; then
    echo "no compiled SafeHomeSimulator/SafeHomeSimulator.class in $WORKDIR"
  fi
  cd "$RUN" && rc_of simulator as_owner timeout 900 "$JAVA" -verbose:class -cp "${CP:-$WORKDIR/target/classes}" \
    SafeHomeSimulator.SafeHomeSimulator >"$SCRATCH/simulator.out" 2>&1
  echo "exit code: $(cat "$LOG_DIR/simulator.rc")"
  # The program's own output without the class-loading trace, its end only.
  grep -v -e '^\[[0-9.]*s\]\[info\]\[class' -e '^\[Loaded ' "$SCRATCH/simulator.out" | tail -n 60
} >"$LOG_DIR/02_simulator.log" 2>&1
grep -e 'SafeHomeSimulator\.SafeHomeSimulator ' "$SCRATCH/simulator.out" >"$SCRATCH/loaded.txt" 2>/dev/null
collect "$SCRATCH/loaded.txt" main_class_loaded.txt
grep -v -e '^\[[0-9.]*s\]\[info\]\[class' -e '^\[Loaded ' "$SCRATCH/simulator.out" | tail -n 200 >"$SCRATCH/tail.txt"
collect "$SCRATCH/tail.txt" simulator_tail.txt
OUT="$RUN/results/verifier"
collect "$OUT/Overallbenchmarking.txt" Overallbenchmarking.txt
for metric in E2E_RTN_TIME PARALLEL_DELTA ORDERR_MISMATCH_BUBBLE ISVLTN5_RTN_LIFESPAN_COLLISION_PERCENT; do
  collect "$OUT/avg/$metric.dat" "$metric.dat"
done

# The drawn scenario: the morning's routines with each command's duration (its third field, in
# simulated ms) drawn by the trusted awk from the seed: one factor for the scenario (0.3 to 3)
# and one per command (0.5 to 1.5). The checkout's scenario is pinned above; this copy is the
# verifier's own, and the simulator reads it where it reads the checkout's.
DURATION_SEED=${VARIANT_DURATION_SEED:-$(($(rand_below 999999) + 1))}
echo "duration_seed: $DURATION_SEED" >"$LOG_DIR/duration_seed.txt"
DRAWN="$SCRATCH/drawn"
mkdir -p "$DRAWN/conf" "$DRAWN/src/main/java/BenchmarkingTool"
cp -r "$RUN/src/main/java/BenchmarkingTool/Data" "$DRAWN/src/main/java/BenchmarkingTool/" 2>/dev/null
cp "$RUN/conf/SafeHomeFramework.config" "$DRAWN/conf/"
SCENARIO=src/main/java/BenchmarkingTool/Data/scn-chaos-morning2.json
awk -v seed="$DURATION_SEED" 'BEGIN { srand(seed); f = 0.3 + 2.7 * rand() }
{
  out = ""
  while (match($0, /"[A-Za-z0-9_]+:[A-Za-z0-9_]+:[0-9]+"/)) {
    n = split(substr($0, RSTART + 1, RLENGTH - 2), part, ":")
    out = out substr($0, 1, RSTART - 1) "\"" part[1] ":" part[2] ":" (int(part[3] * f * (0.5 + rand())) + 1) "\""
    $0 = substr($0, RSTART + RLENGTH)
  }
  print out $0
}' "$RUN/$SCENARIO" >"$DRAWN/$SCENARIO" 2>/dev/null
rm -rf "$DRAWN/results"
chown -R "$OWNER" "$DRAWN"
{
  echo "== drawn scenario (duration seed $DURATION_SEED): the same java and classes"
  cd "$DRAWN" && rc_of drawn_simulator as_owner timeout 900 "$JAVA" -cp "${CP:-$WORKDIR/target/classes}" \
    SafeHomeSimulator.SafeHomeSimulator >"$SCRATCH/drawn.out" 2>&1
  echo "exit code: $(cat "$LOG_DIR/drawn_simulator.rc")"
  tail -n 20 "$SCRATCH/drawn.out"
} >"$LOG_DIR/03_drawn_scenario.log" 2>&1
collect "$DRAWN/results/verifier/avg/E2E_RTN_TIME.dat" drawn_E2E_RTN_TIME.dat
