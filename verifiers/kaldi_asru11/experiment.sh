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
# A program's usage text (the first line of its `usage` literal in src/) is compiled into its
# binary; a launcher of a script holds none. The binaries may be static and large: has_text, not
# a copy.
{
  while read -r b lit; do
    has_text "$WORKDIR/$b" "$lit" && echo "$b '$lit': yes" || echo "$b '$lit': no"
  done <<'LITERALS'
src/featbin/compute-mfcc-feats Create MFCC feature files.
src/gmmbin/gmm-latgen-faster Generate lattices using GMM-based model.
src/bin/compile-train-graphs Creates training graphs (without transition-probabilities, by default)
LITERALS
} >"$LOG_DIR/binary_strings.txt" 2>&1
# The recipe and the steps it runs, as at the pinned commit: a run.sh that prints a WER line is
# not the recipe. (local/score.sh, steps/score_kaldi.sh and utils/run.pl are links: not pinned.)
pinned egs/yesno/s5/run.sh egs/yesno/s5/path.sh egs/yesno/s5/local/prepare_data.sh \
  egs/yesno/s5/local/prepare_dict.sh egs/yesno/s5/local/prepare_lm.sh \
  egs/wsj/s5/steps/make_mfcc.sh egs/wsj/s5/steps/train_mono.sh egs/wsj/s5/steps/decode.sh \
  egs/wsj/s5/utils/mkgraph.sh egs/wsj/s5/utils/best_wer.sh
# run.sh and the steps are bash scripts (#!/usr/bin/env bash): the bash the owner's PATH finds.
vouch bash bash

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
DROP=$(($(rand_below 6) + 1))
if [ -d "$S5/waves_yesno" ]; then
  ls -1 "$S5/waves_yesno" | grep '\.wav$' | awk -v seed="$(rand_below 2147483647)" 'BEGIN { srand(seed) } { print rand(), $0 }' \
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
