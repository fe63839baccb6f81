# Layer 2 experiment of bertscore_iclr20 (hidden from the agent), after experiment_lib.sh.
#
# Scores, with the agent's bert-score command ($WORKDIR/env/bin/bert-score, --lang en: roberta-large
# layer 17) and as the owner of WORKDIR, the three sentence pairs of the repository's
# tests/test_score_function.py, written here into SCRATCH (so an edited copy in the workdir does
# not matter), with -s (one "P<TAB>R<TAB>F1" line per pair); and the shipped example with
# --rescale_with_baseline (the README's second figure). The model comes from the Hugging Face hub
# or the agent's cache. While it scores, nvidia-smi's compute processes are sampled every 2 s.
# checks.yaml compares the scores with the test's figures on the controller.
# RUNBOOK.MD is never read.
PY_ENV="$WORKDIR/env/bin/python"
# What runs is what is judged: the interpreter, vouched (a wrapper script, or a launcher ELF in its
# place, shows as such in runtime.txt), and the repository's files the run executes, pinned to
# their blobs (an entry script rewritten to print the expected lines shows in pinned.txt).
vouch python "$PY_ENV"
# A .pth or sitecustomize no installer made can swap the run under the vouched python and the
# pinned files: the start-up hooks that python reads, and who vouches for each (hooks.txt).
py_hooks_of "$PY_ENV"
BERT_SCORE="$WORKDIR/env/bin/bert-score"

cat >"$SCRATCH/cands.txt" <<'CANDS'
28-year-old chef found dead in San Francisco mall
A 28-year-old chef who recently moved to San Francisco was found dead in the staircase of a local shopping center.
The victim's brother said he cannot imagine anyone who would want to harm him,"Finally, it went uphill again at him."
CANDS
cat >"$SCRATCH/refs.txt" <<'REFS'
28-Year-Old Chef Found Dead at San Francisco Mall
A 28-year-old chef who had recently moved to San Francisco was found dead in the stairwell of a local mall this week.
But the victim's brother says he can't think of anyone who would want to hurt him, saying, "Things were finally going well for him."
REFS
chmod 644 "$SCRATCH/cands.txt" "$SCRATCH/refs.txt"

{
  echo "== environment: $PY_ENV"
  cd "$WORKDIR" && rc_of environment as_owner "$PY_ENV" -c 'import sys, torch, transformers, bert_score; print(sys.version.split()[0], "torch", torch.__version__, "transformers", transformers.__version__, "bert_score", bert_score.__version__); print("cuda_available", torch.cuda.is_available()); print("device", torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none")' >"$SCRATCH/env.out" 2>&1
  cat "$SCRATCH/env.out"
  echo "exit code: $(cat "$LOG_DIR/environment.rc")"
} >"$LOG_DIR/01_environment.log" 2>&1
collect "$SCRATCH/env.out" torch_device.txt
# bert-score is pip's console script (its first line the env's python, its body an import of
# bert_score_cli.score); a shell script or a launcher in its place shows. The modules it runs are
# pinned where the vouched interpreter finds them from SCRATCH (pip install . copies them into
# site-packages byte for byte; an editable install leaves them in the checkout): a rewritten
# score.py that prints the published figures shows.
vouch bert_score "$BERT_SCORE"
collect "$BERT_SCORE" bert_score_script.txt
cd "$SCRATCH" && as_owner "$PY_ENV" -c 'import bert_score.score as s, bert_score.utils as u, bert_score_cli.score as c; print(s.__file__); print(u.__file__); print(c.__file__)' >"$SCRATCH/modules.txt" 2>/dev/null
for rel in bert_score/score.py bert_score/utils.py bert_score_cli/score.py; do
  echo "$rel $(blob_of "$(grep -m 1 "/$rel\$" "$SCRATCH/modules.txt")")"
done >>"$LOG_DIR/pinned.txt"
# Only nvidia-smi's standard output is kept: a missing nvidia-smi leaves these files empty.
PATH=$SYSTEM_PATH timeout 30 nvidia-smi -L >"$LOG_DIR/gpus.txt" 2>/dev/null

: >"$SCRATCH/gpu_apps.txt"
sample_gpu() {
  while :; do
    PATH=$SYSTEM_PATH timeout 10 nvidia-smi --query-compute-apps=pid,process_name,used_memory \
      --format=csv,noheader >>"$SCRATCH/gpu_apps.txt" 2>/dev/null
    sleep 2
  done
}
sample_gpu &
SAMPLER=$!

{
  echo "== experiment: bert-score -r refs.txt -c cands.txt --lang en -s (the test's three pairs)"
  cd "$SCRATCH" && rc_of score as_owner timeout 900 "$BERT_SCORE" -r refs.txt -c cands.txt \
    --lang en -s >"$SCRATCH/score.out" 2>"$SCRATCH/score.err"
  cat "$SCRATCH/score.out" "$SCRATCH/score.err"
  echo "exit code: $(cat "$LOG_DIR/score.rc")"
  echo "== experiment: bert-score -r example/refs.txt -c example/hyps.txt --lang en --rescale_with_baseline"
  cd "$WORKDIR" && rc_of rescaled as_owner timeout 900 "$BERT_SCORE" -r example/refs.txt \
    -c example/hyps.txt --lang en --rescale_with_baseline >"$SCRATCH/rescaled.out" 2>"$SCRATCH/rescaled.err"
  cat "$SCRATCH/rescaled.out" "$SCRATCH/rescaled.err"
  echo "exit code: $(cat "$LOG_DIR/rescaled.rc")"
} >"$LOG_DIR/02_experiment.log" 2>&1

kill "$SAMPLER" 2>/dev/null
wait "$SAMPLER" 2>/dev/null
collect "$SCRATCH/gpu_apps.txt" gpu_apps.txt
collect "$SCRATCH/score.out" score_output.txt
collect "$SCRATCH/rescaled.out" rescaled_output.txt
