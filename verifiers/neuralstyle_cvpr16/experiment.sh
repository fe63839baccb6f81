# Layer 2 experiment of neuralstyle_cvpr16 (hidden from the agent), after experiment_lib.sh.
#
# Finds the agent's Torch7 `th`: <workdir>/env/torch/install/bin/th, else INSTALL.md's
# ~/torch/install/bin/th of the workdir's owner, else a `th` on the system PATH; when a
# torch-activate script sits beside it, it is sourced first (the paths install.sh records). Then,
# as the owner of WORKDIR, on GPU 0:
#   1. th loads cutorch and cunn, counts the CUDA devices and names the first; loadcaffe loads;
#   2. neural_style.lua -gpu 0 transfers a shipped painting, drawn now from five, onto
#      examples/inputs/tubingen.jpg at 256 px for 50 L-BFGS iterations, printing every 10, with a
#      seed drawn now, into a fresh file in SCRATCH.
# The PNG's width and height are read from its header here (no tool of the agent's). nvidia-smi's
# compute processes are sampled every second meanwhile. checks.yaml judges the collected files
# on the controller. RUNBOOK.MD is never read.
NVSMI_PATH=$SYSTEM_PATH
OWNER_HOME=$(awk -F: -v u="$OWNER" '$1 == u { print $6 }' /etc/passwd)
TH=""
for candidate in "$WORKDIR/env/torch/install/bin/th" "$OWNER_HOME/torch/install/bin/th"; do
  if [ -x "$candidate" ]; then TH=$candidate; break; fi
done
[ -n "$TH" ] || TH=$(PATH=$SYSTEM_PATH command -v th || echo th)
ACTIVATE="$(dirname "$TH")/torch-activate"
[ -f "$ACTIVATE" ] || ACTIVATE=/dev/null
echo "$TH" >"$LOG_DIR/th_path.txt"
# What runs neural_style.lua: install.sh leaves th as luarocks' wrapper of trepl's th, a #!/bin/sh
# script whose `exec '<bin>/luajit' ...` runs the LuaJIT it built. Both are vouched (no package
# lists a Torch build: the luajit ELF is collected), the wrapper is read for the luajit it runs,
# and that luajit is searched for strings of LuaJIT's luajit.c (its version banner and usage):
# a th that is a script printing the log, or a launcher ELF, has neither.
vouch th "$TH"
LUAJIT=$(sed -n "s/^exec '\([^']*\/luajit\)' .*/\1/p" "$TH" 2>/dev/null | head -n 1)
vouch luajit "${LUAJIT:-$(dirname "$TH")/luajit}"
{
  echo "th wraps ${LUAJIT:-no luajit}"
  real=$(readlink -f "${LUAJIT:-/dev/null}" 2>/dev/null)
  echo "luajit ${real:-none} magic $(head -c4 "${real:-/dev/null}" 2>/dev/null | od -An -tx1 | tr -d ' \n')"
  for text in 'Mike Pall' 'usage: %s [options]... [script [args]...].'; do
    if [ -n "$real" ] && has_text "$real" "$text"; then echo "text '$text': yes"; else echo "text '$text': no"; fi
  done
} >"$LOG_DIR/torch_runtime.txt"
# The script the experiment runs, as at the pinned commit.
pinned neural_style.lua
# run_th ARGS...: th with its activation, as the owner, from WORKDIR.
run_th() {
  as_owner "$TOOLS/sh" -c '. "$1"; th=$2; shift 2; exec timeout 480 "$th" "$@"' sh "$ACTIVATE" "$TH" "$@"
}

NONCE=$(head -c 6 /dev/urandom | od -An -tx1 | tr -d ' \n')
SEED=$(od -An -tu2 -N2 /dev/urandom | tr -d ' ')
set -- starry_night.jpg the_scream.jpg picasso_selfport1907.jpg woman-with-hat-matisse.jpg shipwreck.jpg
shift "$(($(od -An -tu1 -N1 /dev/urandom) % 5))"
STYLE=examples/inputs/$1
echo "$STYLE seed=$SEED out=o$NONCE.png" >"$LOG_DIR/draw.txt"
mkdir -p "$SCRATCH/out" && chown "$OWNER" "$SCRATCH/out"

{
  echo "== environment: $TH (activate: $ACTIVATE)"
  cd "$WORKDIR" && rc_of environment run_th -e "require 'cutorch'; require 'cunn'; require 'loadcaffe'; print('cuda devices ' .. cutorch.getDeviceCount()); print('device 1 ' .. cutorch.getDeviceProperties(1).name)" >"$SCRATCH/env.out" 2>&1
  cat "$SCRATCH/env.out"
  echo "exit code: $(cat "$LOG_DIR/environment.rc")"
} >"$LOG_DIR/01_environment.log" 2>&1
collect "$SCRATCH/env.out" environment.txt
PATH=$NVSMI_PATH timeout 30 nvidia-smi -L >"$LOG_DIR/gpus.txt" 2>/dev/null

: >"$SCRATCH/gpu_apps.txt"
sample_gpu() {
  while :; do
    PATH=$NVSMI_PATH timeout 10 nvidia-smi --query-compute-apps=pid,process_name,used_memory \
      --format=csv,noheader >>"$SCRATCH/gpu_apps.txt" 2>/dev/null
    sleep 1
  done
}
sample_gpu &
SAMPLER=$!

{
  echo "== experiment: th neural_style.lua -gpu 0 -style_image $STYLE -content_image examples/inputs/tubingen.jpg -image_size 256 -num_iterations 50 -print_iter 10 -save_iter 0 -seed $SEED"
  cd "$WORKDIR" && rc_of style run_th neural_style.lua -gpu 0 -style_image "$STYLE" \
    -content_image examples/inputs/tubingen.jpg -image_size 256 -num_iterations 50 \
    -print_iter 10 -save_iter 0 -seed "$SEED" -output_image "$SCRATCH/out/o$NONCE.png" >"$SCRATCH/style.out" 2>&1
  collect "$SCRATCH/style.out" style_output.txt
  tail -c 20000 "$SCRATCH/style.out"
  echo "exit code: $(cat "$LOG_DIR/style.rc")"
} >"$LOG_DIR/02_experiment.log" 2>&1

kill "$SAMPLER" 2>/dev/null
wait "$SAMPLER" 2>/dev/null
collect "$SCRATCH/gpu_apps.txt" gpu_apps.txt
# The output's PNG signature and IHDR width and height (big-endian, bytes 16-23).
OUT="$SCRATCH/out/o$NONCE.png"
if [ -f "$OUT" ] && [ "$(od -An -tx1 -N8 "$OUT" | tr -d ' \n')" = 89504e470d0a1a0a ]; then
  set -- $(od -An -tu1 -j16 -N8 "$OUT")
  echo "png o$NONCE.png $(($1 * 16777216 + $2 * 65536 + $3 * 256 + $4)) $(($5 * 16777216 + $6 * 65536 + $7 * 256 + $8))"
else
  echo "no png o$NONCE.png"
fi >"$LOG_DIR/output_image.txt"
