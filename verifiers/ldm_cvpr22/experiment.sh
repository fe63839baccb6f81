# Layer 2 experiment of ldm_cvpr22 (hidden from the agent), after experiment_lib.sh.
#
# Samples from the agent's unconditional pretrained LDM (the first of models/ldm/{celeba256,
# ffhq256,lsun_churches256,lsun_beds256}/model.ckpt that exists, as scripts/download_models.sh
# lays them out) with the README's "Unconditional Models" command and the agent's environment
# ($WORKDIR/env/bin/python scripts/sample_diffusion.py -n 4 --batch_size 4 -c 20 -e 0.0), as the
# owner of WORKDIR, into a fresh -l logdir in SCRATCH (only this run's PNGs and .npz are seen).
# sample_diffusion.py calls model.cuda() unconditionally. While it samples, nvidia-smi's compute
# processes are sampled every 2 s. checks.yaml judges the collected files on the controller.
# RUNBOOK.MD is never read.
PY_ENV="$WORKDIR/env/bin/python"
OUT="$SCRATCH/samples"
CKPT=
for m in celeba256 ffhq256 lsun_churches256 lsun_beds256; do
  if [ -f "$WORKDIR/models/ldm/$m/model.ckpt" ] && [ -z "$CKPT" ]; then CKPT="models/ldm/$m/model.ckpt"; fi
done
echo "${CKPT:-no unconditional model under models/ldm}" >"$LOG_DIR/model.txt"

# The python that samples, vouched: a wrapper script or an ELF no Debian package lists, printing
# sample_diffusion.py's lines, shows in runtime.txt (the reference's env is `python3 -m venv`).
vouch python "$PY_ENV"
# A .pth or sitecustomize no installer made can swap the run under the vouched python and the
# pinned files: the start-up hooks that python reads, and who vouches for each (hooks.txt).
py_hooks_of "$PY_ENV"
# The sampling script and the ldm modules it runs (pip install -e . imports them from the
# workdir): the DDIM sampler, the latent diffusion model, its UNet and autoencoder.
pinned scripts/sample_diffusion.py ldm/models/diffusion/ddim.py ldm/models/diffusion/ddpm.py \
  ldm/modules/diffusionmodules/openaimodel.py ldm/models/autoencoder.py ldm/util.py

{
  echo "== environment: $PY_ENV"
  cd "$WORKDIR" && rc_of environment as_owner "$PY_ENV" -c 'import sys, torch, pytorch_lightning, omegaconf, taming, ldm.models.diffusion.ddpm; print(sys.version.split()[0], "torch", torch.__version__, "lightning", pytorch_lightning.__version__); print("cuda_available", torch.cuda.is_available()); print("device", torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none")' >"$SCRATCH/env.out" 2>&1
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
  echo "== experiment: python scripts/sample_diffusion.py -r ${CKPT:-?} -l <scratch> -n 4 --batch_size 4 -c 20 -e 0.0"
  cd "$WORKDIR" && rc_of sample as_owner timeout 1500 "$PY_ENV" scripts/sample_diffusion.py \
    -r "${CKPT:-models/ldm/celeba256/model.ckpt}" -l "$OUT" -n 4 --batch_size 4 -c 20 -e 0.0 \
    >"$SCRATCH/sample.out" 2>&1
  collect "$SCRATCH/sample.out" sample_output.txt
  tail -c 20000 "$SCRATCH/sample.out"
  echo "exit code: $(cat "$LOG_DIR/sample.rc")"
} >"$LOG_DIR/02_experiment.log" 2>&1

kill "$SAMPLER" 2>/dev/null
wait "$SAMPLER" 2>/dev/null
collect "$SCRATCH/gpu_apps.txt" gpu_apps.txt
# <logdir>/<model folder>/samples/<global step>/<time>/{img,numpy}/: sizes and names.
(cd "$OUT" 2>/dev/null && find . -type f -exec ls -l {} \;) >"$LOG_DIR/sample_files.txt" 2>&1
