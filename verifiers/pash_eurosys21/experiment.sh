# Layer 2 experiment of pash_eurosys21 (hidden from the agent), after experiment_lib.sh.
#
# Runs the agent's PaSh ($WORKDIR/pa.sh, with PASH_TOP=$WORKDIR) as the owner of WORKDIR on a
# spell check of the verifier's own: a dictionary of random words and a text of those words
# (in mixed case, with punctuation) plus misspelled words drawn here, in files named with a
# nonce. The pipeline is evaluation/demo-spell.sh's, run once with bash and once with
# docs/eval.md's `pa.sh -w 2 -d 1 --log_file pash.log`; the expected output (the misspelled
# words, sorted) is computed by the trusted busybox. pash.log must hold the parallel script that
# read the nonce-named input. RUNBOOK.MD is never read.
PASH="$WORKDIR/pa.sh"
NONCE=$(od -An -tx1 -N6 /dev/urandom | tr -d ' \n')
SEED=$(od -An -tu2 -N2 /dev/urandom | tr -d ' ')
RUN="$SCRATCH/spell"
mkdir -p "$RUN/input"

{
  echo "== pa.sh: $PASH"
  [ -f "$PASH" ] && [ ! -L "$PASH" ] && echo "regular: yes" || echo "regular: no"
  [ -x "$PASH" ] && echo "executable: yes" || echo "executable: no"
  PARSER="$WORKDIR/compiler/parser/parse_to_json.native"
  echo "parser magic: $(head -c4 "$PARSER" 2>/dev/null | od -An -tx1 | tr -d ' \n')"
  for b in eager split; do
    echo "runtime $b magic: $(head -c4 "$WORKDIR/runtime/$b" 2>/dev/null | od -An -tx1 | tr -d ' \n')"
  done
} >"$LOG_DIR/install.txt" 2>&1
cat "$LOG_DIR/install.txt" >"$LOG_DIR/01_install.log"
# pa.sh, the compiler it hands the script to and the runtime scripts the compiled dataflow runs,
# as at the pinned commit: a pa.sh that runs the script with bash is not PaSh.
pinned pa.sh compiler/pash.py compiler/pash_runtime.py compiler/pash_runtime.sh \
  runtime/auto-split.sh runtime/eager.sh
# pa.sh is `#!/usr/bin/env bash` and runs `python3 compiler/pash.py`: both as the owner's PATH
# finds them.
vouch bash bash
vouch python3 python3

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

echo "input: $RUN/input/text_$NONCE.txt" >"$LOG_DIR/input_name.txt"

# evaluation/demo-spell.sh's pipeline with the verifier's (absolute) file names.
cat >"$RUN/spell.sh" <<SPELL
#!/bin/bash

FILE="$RUN/input/text_$NONCE.txt"
DICT="$RUN/input/sorted_dict_$NONCE"

cat "\$FILE" | tr A-Z a-z | tr -cs A-Za-z '\n' | sort | uniq | comm -13 \$DICT -
SPELL
chmod 755 "$RUN/spell.sh"
chown -R "$OWNER" "$RUN"

{
  echo "== bash spell.sh (demo-spell.sh's pipeline on the verifier's input)"
  cd "$RUN" && rc_of bash_spell as_owner env PASH_TOP="$WORKDIR" timeout 300 bash ./spell.sh \
    >"$SCRATCH/bash_spell.txt" 2>"$SCRATCH/bash_spell_stderr.txt"
  collect "$SCRATCH/bash_spell.txt" bash_spell.txt
  tail -n 20 "$SCRATCH/bash_spell_stderr.txt"
  echo "exit code: $(cat "$LOG_DIR/bash_spell.rc")"
} >"$LOG_DIR/02_bash_spell.log" 2>&1

{
  echo "== pa.sh -w 2 -d 1 --log_file pash.log spell.sh"
  cd "$RUN" && rc_of pash_spell as_owner env PASH_TOP="$WORKDIR" timeout 600 "$PASH" -w 2 -d 1 \
    --log_file "$RUN/pash.log" spell.sh >"$SCRATCH/pash_spell.txt" 2>"$SCRATCH/pash_stderr.txt"
  collect "$SCRATCH/pash_spell.txt" pash_spell.txt
  collect "$RUN/pash.log" pash_log.txt
  collect "$SCRATCH/pash_stderr.txt" pash_stderr.txt
  # The compiler's verdicts and errors only (the full log is pash_log.txt).
  [ -f "$RUN/pash.log" ] || echo "(pa.sh wrote no pash.log)"
  touch "$RUN/pash.log"
  grep -h -e 'Compiler exited with code' -e 'Error' -e 'Traceback' -e 'No such file' \
    -e 'not found' "$RUN/pash.log" "$SCRATCH/pash_stderr.txt" | head -n 40
  echo "exit code: $(cat "$LOG_DIR/pash_spell.rc")"
} >"$LOG_DIR/03_pash_spell.log" 2>&1

# Which input the compiled dataflow script read: its first `cat` into a fifo.
sed -n -E 's/^\{ cat "?([^" ]*)"? >"#file[0-9]+" & \}$/input: \1/p' "$RUN/pash.log" \
  | head -n 1 >"$LOG_DIR/compiled_input.txt"
