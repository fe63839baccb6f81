# Layer 2 experiment of adalora_iclr23 (hidden from the agent), after experiment_lib.sh.
#
# Fine-tunes DeBERTaV3-base with AdaLoRA on GLUE CoLA with the agent's environment
# ($WORKDIR/env/bin/python -m torch.distributed.launch NLU/examples/text-classification/run_glue.py),
# as the owner of WORKDIR, with NLU/scripts/run_debertav3_cola.sh's flags cut to 60 steps (budget
# schedule 10 + 20 warmup steps, as RankAllocator asserts) and a seed drawn here, into a fresh
# --root_output_dir in SCRATCH (only this run's log.txt, rank_pattern.json and
# model/Eval_cola_results.json are seen). The model and CoLA come from the Hugging Face hub (or
# the agent's cache). While it trains, nvidia-smi's compute processes are sampled every 2 s.
# checks.yaml judges the collected files on the controller. RUNBOOK.MD is never read.
PY_ENV="$WORKDIR/env/bin/python"
# What runs is what is judged: the interpreter, vouched (a wrapper script, or a launcher ELF in its
# place, shows as such in runtime.txt), and the repository's files the run executes, pinned to
# their blobs (an entry script rewritten to print the expected lines shows in pinned.txt).
vouch python "$PY_ENV"
# A .pth or sitecustomize no installer made can swap the run under the vouched python and the
# pinned files: the start-up hooks that python reads, and who vouches for each (hooks.txt).
py_hooks_of "$PY_ENV"
pinned NLU/examples/text-classification/run_glue.py loralib/loralib/adalora.py loralib/loralib/layers.py NLU/src/transformers/trainer.py
OUT="$SCRATCH/cola"
SEED=$(($(od -An -N2 -tu2 /dev/urandom | tr -d ' ') % 1000 + 1))

{
  echo "== environment: $PY_ENV"
  cd "$WORKDIR/NLU" && rc_of environment as_owner "$PY_ENV" -c 'import sys, torch, transformers, loralib, datasets; print(sys.version.split()[0], "torch", torch.__version__, "transformers", transformers.__version__); print("cuda_available", torch.cuda.is_available()); print("device", torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none")' >"$SCRATCH/env.out" 2>&1
  cat "$SCRATCH/env.out"
  echo "exit code: $(cat "$LOG_DIR/environment.rc")"
} >"$LOG_DIR/01_environment.log" 2>&1
collect "$SCRATCH/env.out" torch_device.txt
# Where the run's modules come from, as the vouched interpreter resolves them in NLU/ (where the
# launch runs): loralib and transformers' Trainer from the checkout (the editable installs of
# loralib/ and NLU/, whose files are pinned above), the launcher from torch in env/. A package
# put in their place (a torch/ in NLU/, a second loralib) shows here. WORKDIR/ stands for the path.
cd "$WORKDIR/NLU" && as_owner "$PY_ENV" -c 'import torch.distributed.launch as l, loralib, transformers.trainer as t; print("launch", l.__file__); print("loralib", loralib.__file__); print("trainer", t.__file__)' 2>/dev/null |
  sed "s#^\([a-z]*\) $WORKDIR/#\1 WORKDIR/#" >"$LOG_DIR/module_paths.txt"
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
  echo "== experiment: run_glue.py --task_name cola --apply_lora --apply_adalora --max_steps 60 --seed $SEED"
  echo "seed $SEED"
  cd "$WORKDIR/NLU" && rc_of train as_owner timeout 1500 "$PY_ENV" -m torch.distributed.launch \
    --master_port=8679 --nproc_per_node=1 examples/text-classification/run_glue.py \
    --model_name_or_path microsoft/deberta-v3-base --task_name cola \
    --apply_lora --apply_adalora --lora_type svd --target_rank 1 --lora_r 3 \
    --reg_orth_coef 0.1 --init_warmup 10 --final_warmup 20 --mask_interval 10 \
    --beta1 0.85 --beta2 0.85 \
    --lora_module query,key,value,intermediate,layer.output,attention.output --lora_alpha 32 \
    --do_train --do_eval --max_seq_length 64 --per_device_train_batch_size 32 \
    --learning_rate 8e-4 --max_steps 60 --warmup_steps 10 --cls_dropout 0.10 \
    --weight_decay 0.00 --evaluation_strategy no --save_strategy no --logging_steps 10 \
    --tb_writter_loginterval 10 \
    --seed "$SEED" --root_output_dir "$OUT" --overwrite_output_dir >"$SCRATCH/train.out" 2>&1
  collect "$SCRATCH/train.out" train_output.txt
  tail -c 20000 "$SCRATCH/train.out"
  echo "exit code: $(cat "$LOG_DIR/train.rc")"
} >"$LOG_DIR/02_experiment.log" 2>&1

kill "$SAMPLER" 2>/dev/null
wait "$SAMPLER" 2>/dev/null
collect "$SCRATCH/gpu_apps.txt" gpu_apps.txt
collect "$OUT/log.txt" run_log.txt
collect "$OUT/rank_pattern.json" rank_pattern.json
collect "$OUT/model/Eval_cola_results.json" eval_results.json
