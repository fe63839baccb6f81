# Layer 2 experiment of jitterbug_osdi20 (hidden from the agent), after experiment_lib.sh.
#
# As the owner of WORKDIR (so with the owner's Racket packages: serval and rosette), runs the AE
# guide's RV64 test on two scratch copies of the workdir's racket/ folder: the copy as it is, where
# every BPF_ALU BPF_X instruction must verify, and a copy with the AE guide's bug injected into
# racket/rv64/bpf_jit_comp64.rkt (the zero-extension after subw removed), where the verifier must
# find the counterexample for (BPF_ALU BPF_SUB BPF_X). A stub that prints the documented success
# lines cannot do both. Collects both outputs; checks.yaml judges them on the controller.
# RUNBOOK.MD is never read.
HOME_DIR=$(awk -F: -v u="$OWNER" '$1 == u { print $6 }' /etc/passwd)
RACO=$(PATH=$SYSTEM_PATH command -v raco 2>/dev/null)
# Else a Racket the agent unpacked: in its home, /usr/local, /opt or the workdir (racket-8.x/).
for c in "$HOME_DIR/racket/bin/raco" /usr/local/racket/bin/raco /opt/racket/bin/raco \
  "$WORKDIR"/*/bin/raco; do
  [ -n "$RACO" ] && break
  [ -x "$c" ] && RACO=$c
done
# raco is only a launcher (Debian's is a shell script), so the experiment runs the racket beside
# it, as raco would (`racket -N raco -l- raco ...`), and vouches that: a raco script or ELF that
# prints the guide's lines is never run.
RACKET=
[ -n "$RACO" ] && [ -x "$(dirname "$RACO")/racket" ] && RACKET="$(dirname "$RACO")/racket"
[ -n "$RACKET" ] || RACKET=$(PATH=$SYSTEM_PATH command -v racket 2>/dev/null)
vouch racket "${RACKET:-racket}"
# A Racket CS runtime (Debian's or racket-lang.org's) exports its boot and Chez Scheme entry
# points by name; a launcher of a script holds neither. Read where vouch resolved it.
REAL_RACKET=$(readlink -f "${RACKET:-/nonexistent}" 2>/dev/null)
{
  echo "racket: ${RACKET:-none}"
  for sym in racket_boot Sbuild_heap racket_embedded_load_file; do
    has_text "$REAL_RACKET" "$sym" && echo "symbol '$sym': yes" || echo "symbol '$sym': no"
  done
} >"$LOG_DIR/racket.txt" 2>&1
raco() {
  as_owner "${RACKET:-racket}" -N raco -l- raco "$@"
}
echo "raco: ${RACO:-none}" >"$LOG_DIR/raco.txt"
raco pkg show serval >>"$LOG_DIR/raco.txt" 2>&1
# What the AE guide's test loads from the repository (serval is the owner's linked package).
pinned racket/test/rv64/verify-alu32-x.rkt racket/lib/tests.rkt racket/lib/patch.rkt \
  racket/rv64/spec.rkt racket/rv64/bpf_jit_comp64.rkt racket/lib/linux.rkt \
  racket/lib/hybrid-memory.rkt racket/lib/bpf-common.rkt racket/lib/riscv-common.rkt \
  racket/lib/spec/riscv.rkt racket/lib/spec/bpf.rkt

mkdir -p "$SCRATCH/clean" "$SCRATCH/bug"
cp -r "$WORKDIR/racket" "$SCRATCH/clean/racket" 2>/dev/null
cp -r "$WORKDIR/racket" "$SCRATCH/bug/racket" 2>/dev/null
# Racket loads a compiled/*.zo newer than its source instead of the source: the agent's bytecode
# could be anything, so both copies compile the pinned sources afresh.
find "$SCRATCH/clean" "$SCRATCH/bug" -type d -name compiled -prune -exec rm -rf {} \; 2>/dev/null
JIT="$SCRATCH/bug/racket/rv64/bpf_jit_comp64.rkt"
# The AE guide's bug: in the first (BPF_ALU BPF_SUB BPF_X) case, drop the PATCH form that emits
# the zero-extension after subw.
if [ -f "$JIT" ]; then
  awk '
    s == 0 && /\(emit_subw rd rd rs ctx\)\)$/ { print $0 "]"; s = 1; next }
    s == 1 && /^[ \t]*$/ { next }
    s == 1 && /\(PATCH \(when/ { s = 2; next }
    s == 2 { s = 3; next }
    { print }
  ' "$WORKDIR/racket/rv64/bpf_jit_comp64.rkt" >"$JIT"
fi
BEFORE=$(wc -l <"$WORKDIR/racket/rv64/bpf_jit_comp64.rkt" 2>/dev/null)
AFTER=$(wc -l <"$JIT" 2>/dev/null)
if [ -n "$BEFORE" ] && [ "$((BEFORE - AFTER))" = 3 ]; then
  echo "bug_injected: yes" >"$LOG_DIR/bug.txt"
else
  echo "bug_injected: no" >"$LOG_DIR/bug.txt"
fi
chown -R "$OWNER" "$SCRATCH"

for run in clean bug; do
  {
    echo "== experiment $run: raco test racket/test/rv64/verify-alu32-x.rkt"
    cd "$SCRATCH/$run" && rc_of "$run" as_owner timeout 1500 "${RACKET:-racket}" -N raco -l- raco \
      test racket/test/rv64/verify-alu32-x.rkt
    echo "exit code: $(cat "$LOG_DIR/$run.rc")"
  } >"$LOG_DIR/0${run}_test.txt" 2>&1
done
mv "$LOG_DIR/0clean_test.txt" "$LOG_DIR/clean.txt"
mv "$LOG_DIR/0bug_test.txt" "$LOG_DIR/bug_run.txt"
# Layer 1 reads *.log: the clean run's output is one; the injected bug's expected FAILURE is not.
cp "$LOG_DIR/clean.txt" "$LOG_DIR/02_clean.log"
