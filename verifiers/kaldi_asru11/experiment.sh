# Layer 2 experiment of kaldi_asru11 (hidden from the agent), after experiment_lib.sh.
#
# Re-runs the yesno recipe with the agent's build (src/ and tools/ of the workdir) in a scratch
# Kaldi tree: $SCRATCH/kaldi/{src,tools,egs/wsj} are links into the workdir, egs/yesno/s5 a copy.
# The corpus is the agent's egs/yesno/s5/waves_yesno (run.sh downloads it there) or, missing that,
# run.sh's own download. The hidden input: the verifier drops 1 to 6 recordings it picks now, so
# the half/half train/test split of local/prepare_data.sh, and the number of test words in the
# WER line, differ from any published or earlier run; the expected count is computed here the way
# the recipe splits (sorted list, second half is the test set, 8 words per recording). Collects the
# recipe's output, the best WER, the expected and reported word counts and the facts of the
# binaries; checks.yaml judges them on the controller. RUNBOOK.MD is never read.
{
  for b in src/featbin/compute-mfcc-feats src/gmmbin/gmm-latgen-faster src/bin/compile-train-graphs \
    tools/openfst/bin/fstcompile; do
    f="$WORKDIR/$b"
    echo "== $b"
    [ -f "$f" ] && [ ! -L "$f" ] && echo "regular: yes" || echo "regular: no"
    echo "magic: $(head -c4 "$f" 2>/dev/null | od -An -tx1 | tr -d ' \n')"
  done
  ls "$WORKDIR"/src/lib/libkaldi-base.so 2>/dev/null | sed 's/^/library: /'
} >"$LOG_DIR/build.txt" 2>&1
cp "$LOG_DIR/build.txt" "$LOG_DIR/01_build.log"

K="$SCRATCH/kaldi"
mkdir -p "$K/egs/yesno"
for d in src tools; do ln -s "$WORKDIR/$d" "$K/$d"; done
ln -s "$WORKDIR/egs/wsj" "$K/egs/wsj"
cp -r "$WORKDIR/egs/yesno/s5" "$K/egs/yesno/s5" 2>/dev/null
S5="$K/egs/yesno/s5"
rm -rf "$S5/data" "$S5/exp" "$S5/mfcc" "$S5/waves_yesno" "$S5/waves_yesno.tar.gz"
if [ -d "$WORKDIR/egs/yesno/s5/waves_yesno" ]; then
  cp -r "$WORKDIR/egs/yesno/s5/waves_yesno" "$S5/waves_yesno"
  echo "corpus: the agent's waves_yesno" >"$LOG_DIR/corpus.txt"
else
  echo "corpus: none in the workdir; run.sh downloads it" >"$LOG_DIR/corpus.txt"
  (cd "$S5" && as_owner timeout 300 wget -q http://www.openslr.org/resources/1/waves_yesno.tar.gz \
    && as_owner tar -xzf waves_yesno.tar.gz) >>"$LOG_DIR/corpus.txt" 2>&1
fi
# Drop 1 to 6 recordings at random, then count the test words as the recipe will split them.
DROP=$(awk 'BEGIN { srand(); print 1 + int(rand() * 6) }')
if [ -d "$S5/waves_yesno" ]; then
  ls -1 "$S5/waves_yesno" | grep '\.wav$' | awk -v n="$DROP" 'BEGIN { srand() } { print rand(), $0 }' \
    | sort -n | head -n "$DROP" | while read -r _ f; do rm -f "$S5/waves_yesno/$f"; done
  NOL=$(ls -1 "$S5/waves_yesno" | wc -l)
  WORDS=$(ls -1 "$S5/waves_yesno" | awk -v nol="$NOL" 'NR > nol / 2 && /\.wav$/ { n++ } END { print n * 8 }')
  echo "dropped: $DROP" >>"$LOG_DIR/corpus.txt"
else
  WORDS=0
fi
echo "test_words: $WORDS" >"$LOG_DIR/expected_words.txt"
chown -R "$OWNER" "$SCRATCH"
{
  echo "== experiment: egs/yesno/s5/run.sh in a scratch tree with the agent's src/ and tools/"
  cd "$S5" && rc_of recipe as_owner timeout 1200 ./run.sh
  echo "exit code: $(cat "$LOG_DIR/recipe.rc")"
} >"$LOG_DIR/02_recipe.log" 2>&1
grep '%WER' "$LOG_DIR/02_recipe.log" | tail -n1 >"$LOG_DIR/best_wer.txt"
sed -n 's/.*%WER [0-9.]* \[ [0-9]* \/ \([0-9]*\),.*/test_words: \1/p' "$LOG_DIR/best_wer.txt" \
  >"$LOG_DIR/reported_words.txt"
{
  for f in exp/mono0a/final.mdl exp/mono0a/graph_tgpr/HCLG.fst; do
    [ -s "$S5/$f" ] && echo "$f: $(stat -c %s "$S5/$f")"
  done
  ls "$S5"/exp/mono0a/decode_test_yesno/wer_* 2>/dev/null | sed 's#.*/#wer file: #'
} >"$LOG_DIR/outputs.txt" 2>&1
