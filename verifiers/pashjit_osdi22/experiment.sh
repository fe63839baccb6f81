# Layer 2 experiment of pashjit_osdi22 (hidden from the agent), after experiment_lib.sh.
#
# Runs the agent's PaSh ($WORKDIR/pa.sh, with PASH_TOP=$WORKDIR) as the owner of WORKDIR on a
# spell check of the verifier's own: a dictionary of random words and a text of those words
# (in mixed case, with punctuation) plus misspelled words drawn here, in files named with a
# nonce. The pipeline is demo-spell.sh's, run once with bash and once with `pa.sh -w 2 -d 1`;
# the expected output (the misspelled words, sorted) is computed by the trusted busybox. The
# `-d 1` log shows whether the daemon compiled the region into a parallel dataflow script that
# reads the nonce-named input, or the region fell back to plain bash. That log is PaSh's own
# text, so a pa.sh of the agent's could print it: the scripts and Python the run executes are
# pinned, the interpreters that run them vouched, and the runtime's C programs searched for their
# sources' strings. RUNBOOK.MD is never read.
# A second PaSh run (the variant, a bank's when there is one) compiles the same pipeline with a
# drawn width and splitter: the dataflow script the compiler makes of it, with the run's
# temporary names, the workdir and the nonce put back to placeholders, is one text per variant
# that only PaSh's compiler writes (the same on every run here: fifo numbers and node order are
# the compiler's counters), and its digest is the variant's result.
PASH="$WORKDIR/pa.sh"
NONCE=$(od -An -tx1 -N6 /dev/urandom | tr -d ' \n')
SEED=$(od -An -tu2 -N2 /dev/urandom | tr -d ' ')
RUN="$SCRATCH/spell"
mkdir -p "$RUN/input"

{
  echo "== pa.sh: $PASH"
  [ -f "$PASH" ] && [ ! -L "$PASH" ] && echo "regular: yes" || echo "regular: no"
  [ -x "$PASH" ] && echo "executable: yes" || echo "executable: no"
  LIBDASH="$WORKDIR/compiler/parser/libdash/src/.libs/libdash.so"
  echo "libdash magic: $(head -c4 "$LIBDASH" 2>/dev/null | od -An -tx1 | tr -d ' \n')"
  for b in eager split r_split r_merge; do
    echo "runtime $b magic: $(head -c4 "$WORKDIR/runtime/$b" 2>/dev/null | od -An -tx1 | tr -d ' \n')"
  done
  # The parallel script runs runtime/eager (eager.c, eager_lib.c) and runtime/split (split.c).
  for lit in "Error: Reading was not done when writing was" "could not open output file: %s"; do
    has_text "$WORKDIR/runtime/eager" "$lit" && echo "eager string '$lit': yes" ||
      echo "eager string '$lit': no"
  done
  has_text "$WORKDIR/runtime/split" "missing input!" && echo "split string 'missing input!': yes" ||
    echo "split string 'missing input!': no"
} >"$LOG_DIR/install.txt" 2>&1
cat "$LOG_DIR/install.txt" >"$LOG_DIR/01_install.log"
# What the run executes: pa.sh, the preprocessor, the daemon and its compiler, the runtime's
# wrappers and C sources. Not compiler/config.py: the reference patches it where bash is 5.2.
pinned pa.sh compiler/pash_init_setup.sh compiler/pash.py compiler/pash_runtime_daemon.py \
  compiler/pash_runtime.sh compiler/ast_to_ir.py runtime/auto-split.sh runtime/eager.sh \
  runtime/eager.c runtime/eager_lib.c runtime/split.c
# pa.sh runs `python3 -S` and its scripts run under `#!/usr/bin/env bash`, both from the PATH
# as_owner gives; sort merges the halves. A stub earlier in that PATH shows here.
vouch python3 python3
vouch bash bash
vouch sort sort

# The hidden inputs: 400 dictionary words and 60 misspellings (10-14 letters, never in the
# dictionary), each misspelling used 1 to 3 times among about 40,000 dictionary words.
awk -v seed="$SEED" -v dict="$RUN/input/dict_$NONCE" -v text="$RUN/input/text_$NONCE.txt" \
  -v bad="$SCRATCH/misspelled.txt" '
  function word(lo, hi,   n, s, i) {
    n = lo + int(rand() * (hi - lo + 1)); s = ""
    for (i = 0; i < n; i++) s = s substr("abcdefghijklmnopqrstuvwxyz", 1 + int(rand() * 26), 1)
    return s
  }
  function shown(w) {
    r = rand()
    if (r < 0.1) return toupper(w)
    if (r < 0.3) return toupper(substr(w, 1, 1)) substr(w, 2)
    return w
  }
  BEGIN {
    srand(seed)
    while (nd < 400) { w = word(3, 9); if (!(w in d)) { d[w] = 1; dw[nd++] = w; print w > dict } }
    while (nb < 60) { w = word(10, 14); if (!(w in d) && !(w in b)) { b[w] = 1; bw[nb++] = w; print w > bad } }
    line = ""
    for (i = 0; i < 40000; i++) {
      w = (rand() < 0.003) ? shown(bw[int(rand() * nb)]) : shown(dw[int(rand() * nd)])
      line = (line == "") ? w : line " " w
      if (rand() < 0.05) line = line substr(",.;:!?-()\"", 1 + int(rand() * 10), 1)
      if (i % 12 == 11) { print line > text; line = "" }
    }
    for (j = 0; j < nb; j++) line = (line == "") ? shown(bw[j]) "." : line " " shown(bw[j]) "."
    print line > text
  }'
sort "$RUN/input/dict_$NONCE" >"$RUN/input/sorted_dict_$NONCE"
rm -f "$RUN/input/dict_$NONCE"
sort -u "$SCRATCH/misspelled.txt" >"$LOG_DIR/expected.txt"
echo "input: input/text_$NONCE.txt" >"$LOG_DIR/input_name.txt"

# demo-spell.sh's pipeline with the verifier's file names.
cat >"$RUN/spell.sh" <<SPELL
#!/bin/sh

cd "\$(dirname \$0)"

[ -z \$PASH_TOP ] && {
  echo "PASH_TOP not set"
  exit
}
FILE="input/text_$NONCE.txt"
DICT="input/sorted_dict_$NONCE"

cat "\$FILE" | tr A-Z a-z | tr -cs A-Za-z '\n' | sort | uniq | comm -13 \$DICT -
SPELL
chmod 755 "$RUN/spell.sh"
chown -R "$OWNER" "$RUN"

{
  echo "== pa.sh -c 'echo Hello World!'"
  cd "$WORKDIR" && rc_of hello as_owner env PASH_TOP="$WORKDIR" timeout 120 "$PASH" -c 'echo Hello World!' \
    >"$SCRATCH/hello.txt" 2>"$SCRATCH/hello_stderr.txt"
  collect "$SCRATCH/hello.txt" hello.txt
  cat "$SCRATCH/hello.txt"
  tail -n 20 "$SCRATCH/hello_stderr.txt"
  echo "exit code: $(cat "$LOG_DIR/hello.rc")"
} >"$LOG_DIR/02_hello.log" 2>&1

{
  echo "== bash spell.sh (demo-spell.sh's pipeline on the verifier's input)"
  cd "$RUN" && rc_of bash_spell as_owner env PASH_TOP="$WORKDIR" timeout 300 bash ./spell.sh \
    >"$SCRATCH/bash_spell.txt" 2>"$SCRATCH/bash_spell_stderr.txt"
  collect "$SCRATCH/bash_spell.txt" bash_spell.txt
  tail -n 20 "$SCRATCH/bash_spell_stderr.txt"
  echo "exit code: $(cat "$LOG_DIR/bash_spell.rc")"
} >"$LOG_DIR/03_bash_spell.log" 2>&1

{
  echo "== pa.sh -w 2 -d 1 spell.sh"
  cd "$RUN" && rc_of pash_spell as_owner env PASH_TOP="$WORKDIR" timeout 600 "$PASH" -w 2 -d 1 spell.sh \
    >"$SCRATCH/pash_spell.txt" 2>"$SCRATCH/pash_stderr.txt"
  collect "$SCRATCH/pash_spell.txt" pash_spell.txt
  collect "$SCRATCH/pash_stderr.txt" pash_stderr.txt
  # The daemon's verdicts and errors only (the full -d 1 log is pash_stderr.txt).
  grep -e 'Compiler exited with code' -e 'Daemon crashed' -e 'Error' -e 'Traceback' \
    -e 'No such file' -e 'not found' "$SCRATCH/pash_stderr.txt" | head -n 40
  echo "exit code: $(cat "$LOG_DIR/pash_spell.rc")"
} >"$LOG_DIR/04_pash_spell.log" 2>&1

# Which input the compiled dataflow script read: its first `cat` into a fifo.
sed -n 's/^{ cat "\(input\/[^"]*\)" >"[^"]*#fifo[0-9]*" & }$/input: \1/p' "$SCRATCH/pash_stderr.txt" \
  | head -n 1 >"$LOG_DIR/compiled_input.txt"

# The drawn run: the variant's width and splitter (round robin is --r_split: r_split, r_wrap,
# r_merge instead of auto-split and a merge), the same input.
WIDTH=${VARIANT_WIDTH:-$(($(rand_below 15) + 2))}
SPLIT=${VARIANT_SPLIT:-$([ "$(rand_below 2)" = 0 ] && echo auto || echo round_robin)}
SPLIT_FLAG=""
[ "$SPLIT" = round_robin ] && SPLIT_FLAG="--r_split"
printf 'width: %s\nsplit: %s\n' "$WIDTH" "$SPLIT" >"$LOG_DIR/variant_drawn.txt"
{
  echo "== pa.sh -w $WIDTH $SPLIT_FLAG -d 1 spell.sh (the drawn variant)"
  cd "$RUN" && rc_of pash_variant as_owner env PASH_TOP="$WORKDIR" timeout 600 "$PASH" -w "$WIDTH" $SPLIT_FLAG -d 1 spell.sh \
    >"$SCRATCH/pash_variant.txt" 2>"$SCRATCH/variant_stderr.txt"
  collect "$SCRATCH/pash_variant.txt" pash_variant.txt
  grep -e 'Compiler exited with code' -e 'Daemon crashed' -e 'Error' -e 'Traceback' \
    "$SCRATCH/variant_stderr.txt" | head -n 40
  echo "exit code: $(cat "$LOG_DIR/pash_variant.rc")"
} >"$LOG_DIR/05_pash_variant.log" 2>&1
# The scripts the JIT engine executed (each "(4) Will execute script in" block of the -d 1 log),
# the temporary folder (mktemp's /tmp/pash_XXXXXXX), the graph's folders (uuid4 hex), the
# workdir and the nonce as placeholders.
awk '/^[0-9]+: \(4\) Will execute script in /{ keep = 1; next } /^[0-9]+: \([0-9]+\) /{ keep = 0 } keep' \
  "$SCRATCH/variant_stderr.txt" |
  sed -e 's#/tmp/pash_[A-Za-z0-9]\{7\}/\{1,\}#<tmp>/#g' -e 's#[0-9a-f]\{32\}#<dir>#g' \
    -e "s#$WORKDIR#<pash_top>#g" -e "s#$NONCE#<nonce>#g" >"$SCRATCH/variant_script.txt"
collect "$SCRATCH/variant_script.txt" variant_script.txt
# The shape of the script: how many ways its first splitter divides the input, and which.
awk '/\/runtime\/(auto-split\.sh|r_split) / && !seen { seen = 1
    print "width: " (gsub(/#fifo[0-9]+/, "&") - 1)
    print "split: " (/\/runtime\/r_split / ? "round_robin" : "auto") }' \
  "$SCRATCH/variant_script.txt" >"$LOG_DIR/variant_shape.txt"
echo "compiled_script: $([ -s "$SCRATCH/variant_script.txt" ] && sha256sum <"$SCRATCH/variant_script.txt" | cut -c1-64 || echo none)" \
  >"$LOG_DIR/variant.txt"
