# Layer 2 experiment of ward_osdi20 (hidden from the agent), after experiment_lib.sh.
#
# Boots the kernel the agent built ($WORKDIR/output/ward.elf) with the machine's QEMU, as the
# owner of WORKDIR, under TCG with the Makefile's CPU model and two NUMA nodes with memory, the
# serial console in a file, and a kernel command line of its own: a marker the guest's shell
# computes from two numbers drawn here (so a replayed log shows), then lebench, then halt. QEMU
# and the plot's python3 are vouched (a QEMU of the agent's that prints a log would boot
# nothing), the kernel is searched for its sources' strings (a launcher ELF boots nothing
# either, but holds none), and the sources are pinned. It collects the serial log,
# the lebench CSV cut from it, the getpid row's Fast/On ratio (computed by the trusted busybox
# awk) and the result of tools/lebench-plot.py on that CSV; checks.yaml judges them on the
# controller. When there is no kernel, a diagnostic `make` in a scratch copy shows in the logs
# why (Layer 1 classifies its errors). RUNBOOK.MD is never read.
KERN="$WORKDIR/output/ward.elf"

{
  echo "== kernel: $KERN"
  [ -f "$KERN" ] && [ ! -L "$KERN" ] && echo "regular: yes" || echo "regular: no"
  echo "magic: $(head -c4 "$KERN" 2>/dev/null | od -An -tx1 | tr -d ' \n')"
  echo "size: $(stat -c %s "$KERN" 2>/dev/null)"
  # Objects of the kernel's own build in the workdir (a kernel from elsewhere has none).
  echo "kernel objects: $(find "$WORKDIR/output/kernel" -name '*.o' -type f 2>/dev/null | wc -l)"
  # String literals of kernel/main.cc, cmdline.cc and syscall.cc (the user programs are in the
  # gzipped fs.part, so none of theirs). cmdline.cc's is the part two of its messages share:
  # the real build of 2026-12-05 held no "ERROR: cmdline: unrecognized value" (the real
  # reference failed on it), so either message of the two counts.
  for lit in "but QEMU paravirtualization not detected" "keep_retpolines" \
    "cmdline: unrecognized value" "fetchmem_ncli: interrupts enabled"; do
    has_text "$KERN" "$lit" && echo "string '$lit': yes" || echo "string '$lit': no"
  done
} >"$LOG_DIR/binary.txt" 2>&1
cat "$LOG_DIR/binary.txt" >"$LOG_DIR/01_kernel.log"
pinned kernel/main.cc kernel/cmdline.cc kernel/syscall.cc kernel/uart.cc bin/init.cc \
  bin/lebench.cc tools/lebench-plot.py
vouch qemu qemu-system-x86_64
vouch python3 python3
# The marker: 1000*A+B, computed by the guest's shell and here by the trusted busybox.
A=$(($(od -An -tu2 -N2 /dev/urandom | tr -d ' ') % 90 + 10))
B=$(($(od -An -tu2 -N2 /dev/urandom | tr -d ' ') % 900 + 100))
echo "marker: ward-verifier-$((1000 * A + B))" >"$LOG_DIR/marker.txt"

if ! grep -q '^magic: 7f454c46$' "$LOG_DIR/binary.txt"; then
  # Diagnosis only (kernel_built fails anyway): what ARTIFACT-README.md's `make` says in this
  # environment; its errors are what Layer 1 classifies.
  {
    echo "== diagnostic build: make (in a scratch copy of the workdir)"
    mkdir -p "$SCRATCH/build"
    cp -a "$WORKDIR/." "$SCRATCH/build/"
    chown -R "$OWNER" "$SCRATCH/build"
    cd "$SCRATCH/build" && as_owner timeout 120 make -j2
    echo "make exit code: $?"
  } >"$LOG_DIR/02_build.log" 2>&1
  exit 0
fi

{
  echo "== experiment: qemu-system-x86_64 (TCG, 2 CPUs, 2 NUMA nodes) -kernel output/ward.elf -append '%<marker>; lebench - 5; halt'"
  cd "$WORKDIR" && rc_of qemu as_owner timeout 900 qemu-system-x86_64 \
    -cpu Skylake-Client,+spec-ctrl,+md-clear -nographic -device sga -monitor none \
    -smp 2 -m 1024 -M accel=tcg \
    -object memory-backend-ram,id=m0,size=512M -object memory-backend-ram,id=m1,size=512M \
    -numa node,memdev=m0 -numa node,memdev=m1 \
    -net user -net nic,model=e1000 -serial "file:$SCRATCH/serial.log" \
    -kernel "$KERN" -append "%echo ward-verifier-\$((1000*$A+$B)); lebench - 5; halt" -no-reboot
  echo "exit code: $(cat "$LOG_DIR/qemu.rc")"
} >"$LOG_DIR/03_qemu.log" 2>&1

collect "$SCRATCH/serial.log" serial.log
# The marker line the guest printed (the shell's prompt may precede it).
tr -d '\r' <"$SCRATCH/serial.log" 2>/dev/null | sed -n 's|^\(/ \$ \)\{0,1\}\(ward-verifier-[0-9]*\)$|marker: \2|p' |
  head -n 1 >"$LOG_DIR/seen_marker.txt"
# The CSV lebench printed, as ARTIFACT-README.md step 4 saves it (the interactive shell's
# prompt, printed at the same time, may precede one of its lines), and the getpid row's columns.
tr -d '\r' <"$SCRATCH/serial.log" 2>/dev/null | sed 's|^/ \$ ||' | sed -n 's/^.*\(Benchmark (ward),\)/\1/p; /^[a-z][a-z -]*, *[0-9]*, *[0-9]*, *[0-9]*,$/p' >"$SCRATCH/lebench-results.csv"
collect "$SCRATCH/lebench-results.csv" lebench-results.csv
awk -F', *' '$1 == "getpid" { printf "off %d\non %d\nfast %d\n", $2, $3, $4; if ($3 > 0) printf "fast_over_on %.6f\n", $4 / $3 }' \
  "$SCRATCH/lebench-results.csv" >"$LOG_DIR/getpid.txt" 2>&1
chown "$OWNER" "$SCRATCH/lebench-results.csv"

{
  echo "== plot: python3 tools/lebench-plot.py lebench-results.csv lebench-plot.pdf"
  cd "$WORKDIR" && rc_of plot as_owner timeout 300 python3 tools/lebench-plot.py \
    "$SCRATCH/lebench-results.csv" "$SCRATCH/lebench-plot.pdf"
  echo "exit code: $(cat "$LOG_DIR/plot.rc")"
} >"$LOG_DIR/04_plot.log" 2>&1
[ -f "$SCRATCH/lebench-plot.pdf" ] && head -c 8 "$SCRATCH/lebench-plot.pdf" >"$LOG_DIR/plot_head.txt"
exit 0
