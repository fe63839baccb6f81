# Layer 2 experiment of timemixer_iclr24 (hidden from the agent), after experiment_lib.sh.
#
# Runs the first block of scripts/long_term_forecast/ETT_script/TimeMixer_ETTh1_unify.sh
# (ETTh1, seq_len 96, pred_len 96, d_model 16, 3 down-sampling layers) for one epoch with the
# agent's environment ($WORKDIR/env/bin/python run.py), as the owner of WORKDIR, on an ETTh1 of
# the verifier's own: the real file's header and 17,420 hourly rows from 2016-07-01, written here
# by the trusted awk from the drawn seed (daily and weekly load cycles, a yearly drift, noise), so
# the split sizes are the real ones and nothing the agent prepared is read. The model id carries a fresh nonce, so
# only the checkpoint, metrics and result line of this run are collected. checks.yaml judges them
# on the controller. RUNBOOK.MD is never read.
PY_ENV="$WORKDIR/env/bin/python"
NONCE=$(head -c 8 /proc/sys/kernel/random/uuid)
MODEL_ID="ETTh1_96_96_v$NONCE"
# Recorded for checks.yaml, which holds the result entry to it.
echo "$NONCE" >"$LOG_DIR/model_nonce.txt"
DATA="$SCRATCH/ETT-small"
mkdir -p "$DATA"

# The series is the controller's draw ($VARIANT_DATA_SEED; checks.yaml's variants): awk's seed,
# from which each column's level, daily and weekly swing, phase and noise, the yearly drift and
# OT's dependence are drawn before the noise itself, so each variant is a series of its own whose
# test error the operator's bank holds. Without the controller's draw, picked here.
DATA_SEED=${VARIANT_DATA_SEED:-$(($(rand_below 999999) + 1))}
echo "data_seed: $DATA_SEED" >"$LOG_DIR/data_seed.txt"
# Busybox awk has no sin(): the cycles come from tables (one day in 24 steps, one week in 7).
TZ=UTC0 awk -v seed="$DATA_SEED" 'BEGIN {
  split("0 26 50 71 87 97 100 97 87 71 50 26 0 -26 -50 -71 -87 -97 -100 -97 -87 -71 -50 -26", day, " ")
  split("4 6 5 7 3 -10 -15", week, " ")
  split("5.8 2.1 3.9 1.1 2.9 1.3", level, " ")
  split("3.2 0.9 2.4 0.5 1.3 0.5", swing, " ")
  srand(seed)
  for (c = 1; c <= 6; c++) {
    lv[c] = level[c] * (0.7 + 0.6 * rand()); sw[c] = swing[c] * (0.5 + rand())
    ph[c] = int(24 * rand()); nz[c] = 0.15 + 0.5 * rand(); wk[c] = (0.5 + rand()) / 40
  }
  drift = 0.8 + 1.4 * rand(); otdrift = 12 + 12 * rand(); otnoise = 1 + rand()
  print "date,HUFL,HULL,MUFL,MULL,LUFL,LULL,OT"
  for (i = 0; i < 17420; i++) {
    y = (i % 8760) / 4380; if (y > 1) y = 2 - y
    line = strftime("%Y-%m-%d %H:%M:%S", 1467331200 + 3600 * i)
    for (c = 1; c <= 6; c++) {
      v[c] = lv[c] + sw[c] * day[(i + ph[c]) % 24 + 1] / 100 + sw[c] * week[int(i / 24) % 7 + 1] * wk[c] + drift * y + (rand() - 0.5) * nz[c] * sw[c]
      line = line sprintf(",%.3f", v[c])
    }
    print line sprintf(",%.3f", 8 + otdrift * y + 0.9 * v[1] + (rand() - 0.5) * otnoise)
  }
}' >"$DATA/ETTh1.csv"
chown -R "$OWNER" "$DATA"
# The python that forecasts, vouched (a wrapper script, or an ELF no Debian package lists, shows
# in runtime.txt), and the start-up hooks it would run (a .pth or sitecustomize swapping the
# run leaves the python and the repository as they were): hooks.txt.
vouch python "$PY_ENV"
py_hooks_of "$PY_ENV"
# run.py and every module of the checkout it imports (the reference runs them unchanged): the
# long-term forecast's path first, then the other experiments run.py imports at its start.
pinned run.py exp/exp_basic.py exp/exp_long_term_forecasting.py models/TimeMixer.py \
  layers/Autoformer_EncDec.py layers/Embed.py layers/StandardNorm.py \
  data_provider/data_factory.py data_provider/data_loader.py utils/tools.py utils/metrics.py \
  utils/timefeatures.py exp/exp_anomaly_detection.py exp/exp_classification.py \
  exp/exp_imputation.py exp/exp_short_term_forecasting.py data_provider/m4.py data_provider/uea.py \
  utils/losses.py utils/m4_summary.py
head -3 "$DATA/ETTh1.csv" >"$LOG_DIR/data_head.txt"
wc -l <"$DATA/ETTh1.csv" >>"$LOG_DIR/data_head.txt"

{
  echo "== environment: $PY_ENV"
  cd "$WORKDIR" && rc_of environment as_owner "$PY_ENV" -c 'import sys, numpy, pandas, sklearn, torch; from sktime.datasets import load_from_tsfile_to_dataframe; print(sys.version.split()[0], "numpy", numpy.__version__, "pandas", pandas.__version__, "torch", torch.__version__)'
  echo "exit code: $(cat "$LOG_DIR/environment.rc")"
} >"$LOG_DIR/01_environment.log" 2>&1

{
  echo "== experiment: env/bin/python -u run.py (TimeMixer_ETTh1_unify.sh, first block) --model_id $MODEL_ID --root_path <verifier ETTh1> --train_epochs 1 --num_workers 0"
  cd "$WORKDIR" && rc_of run as_owner timeout 1500 "$PY_ENV" -u run.py --task_name long_term_forecast \
    --is_training 1 --root_path "$DATA/" --data_path ETTh1.csv --model_id "$MODEL_ID" \
    --model TimeMixer --data ETTh1 --features M --seq_len 96 --label_len 0 --pred_len 96 \
    --e_layers 2 --enc_in 7 --c_out 7 --des Exp --itr 1 --d_model 16 --d_ff 32 \
    --learning_rate 0.01 --train_epochs 1 --patience 10 --batch_size 128 \
    --down_sampling_layers 3 --down_sampling_method avg --down_sampling_window 2 \
    --num_workers 0 >"$SCRATCH/run.out" 2>&1
  collect "$SCRATCH/run.out" run_output.txt
  tail -c 20000 "$SCRATCH/run.out"
  echo "exit code: $(cat "$LOG_DIR/run.rc")"
} >"$LOG_DIR/02_experiment.log" 2>&1

# What this run (its nonce) wrote: the entry appended to result_long_term_forecast.txt, the
# checkpoint and the metrics array (size and .npy magic; the bytes stay on the machine).
grep -A 1 "^long_term_forecast_${MODEL_ID}_" "$WORKDIR/result_long_term_forecast.txt" >"$LOG_DIR/result_entry.txt" 2>&1
{
  for f in "$WORKDIR"/checkpoints/long_term_forecast_"${MODEL_ID}"_*/checkpoint.pth \
    "$WORKDIR"/results/long_term_forecast_"${MODEL_ID}"_*/metrics.npy; do
    [ -f "$f" ] && [ ! -L "$f" ] || continue
    echo "$(basename "$f") size $(stat -c %s "$f") magic $(head -c 6 "$f" | od -An -tx1 | tr -d ' \n')"
  done
} >"$LOG_DIR/artifacts.txt" 2>&1
