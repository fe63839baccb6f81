# Layer 2 experiment of qlora_neurips23 (hidden from the agent), after experiment_lib.sh.
#
# Runs scripts/finetune_guanaco_7b.sh's recipe (huggyllama/llama-7b in 4-bit NF4 with double
# quantization, LoRA r=64 alpha=16 on all linear layers, OASST1, bf16) cut to ten steps without
# evaluation, with the agent's environment ($WORKDIR/env/bin/python qlora.py), as the owner of
# WORKDIR, with a seed drawn here, into a fresh --output_dir in SCRATCH (only this run's
# completed, metrics.json, trainer_state.json and checkpoint-10/adapter_model/ are seen). The
# model and the data come from the Hugging Face hub or the agent's cache. 4-bit layers are
# bitsandbytes' CUDA kernels: there is no CPU path. While it trains, nvidia-smi's compute
# processes are sampled every 2 s.
# checks.yaml judges the collected files on the controller. RUNBOOK.MD is never read.
PY_ENV="$WORKDIR/env/bin/python"
# What runs is what is judged: the interpreter, vouched (a wrapper script, or a launcher ELF in its
# place, shows as such in runtime.txt), and the repository's files the run executes, pinned to
# their blobs (an entry script rewritten to print the expected lines shows in pinned.txt).
vouch python "$PY_ENV"
# A .pth or sitecustomize no installer made can swap the run under the vouched python and the
# pinned files: the start-up hooks that python reads, and who vouches for each (hooks.txt).
py_hooks_of "$PY_ENV"
pinned qlora.py
OUT="$SCRATCH/guanaco-7b"
SEED=$(($(od -An -N2 -tu2 /dev/urandom | tr -d ' ') % 1000 + 1))

{
  echo "== environment: $PY_ENV"
  cd "$WORKDIR" && rc_of environment as_owner "$PY_ENV" -c 'import sys, torch, transformers, peft, accelerate, bitsandbytes, datasets; print(sys.version.split()[0], "torch", torch.__version__, "transformers", transformers.__version__, "peft", peft.__version__, "bitsandbytes", bitsandbytes.__version__); print("cuda_available", torch.cuda.is_available()); print("device", torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none")' >"$SCRATCH/env.out" 2>&1
  cat "$SCRATCH/env.out"
  echo "exit code: $(cat "$LOG_DIR/environment.rc")"
} >"$LOG_DIR/01_environment.log" 2>&1
collect "$SCRATCH/env.out" torch_device.txt
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
  echo "== experiment: python qlora.py --model_name_or_path huggyllama/llama-7b --dataset oasst1 --do_train --bits 4 --quant_type nf4 --double_quant --lora_r 64 --lora_alpha 16 --lora_modules all --bf16 --max_steps 10 --seed $SEED"
  cd "$WORKDIR" && rc_of train as_owner timeout 2400 "$PY_ENV" qlora.py \
    --model_name_or_path huggyllama/llama-7b --dataset oasst1 --output_dir "$OUT" --do_train \
    --bits 4 --quant_type nf4 --double_quant --lora_r 64 --lora_alpha 16 --lora_modules all \
    --lora_dropout 0.1 --bf16 --source_max_len 16 --target_max_len 512 \
    --per_device_train_batch_size 1 --gradient_accumulation_steps 1 --gradient_checkpointing \
    --learning_rate 0.0002 --lr_scheduler_type constant --max_grad_norm 0.3 --max_steps 10 \
    --logging_steps 1 --save_strategy steps --save_steps 10 --remove_unused_columns False \
    --report_to none --seed "$SEED" --data_seed "$SEED" >"$SCRATCH/train.out" 2>&1
  collect "$SCRATCH/train.out" train_output.txt
  tail -c 20000 "$SCRATCH/train.out"
  echo "exit code: $(cat "$LOG_DIR/train.rc")"
} >"$LOG_DIR/02_experiment.log" 2>&1

kill "$SAMPLER" 2>/dev/null
wait "$SAMPLER" 2>/dev/null
collect "$SCRATCH/gpu_apps.txt" gpu_apps.txt
collect "$OUT/metrics.json" metrics.json
collect "$OUT/trainer_state.json" trainer_state.json
collect "$OUT/checkpoint-10/adapter_model/adapter_config.json" adapter_config.json
(cd "$OUT" 2>/dev/null && find . -type f -exec ls -l {} \;) >"$LOG_DIR/output_files.txt" 2>&1
