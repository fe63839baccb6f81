# Layer 2 experiment of kflex_sosp24 (hidden from the agent), after experiment_lib.sh.
#
# Checks what the agent's build left (ffkx-bench from build.sh, the BPF object and the clang
# that compiled it, the KFlex kernel built in linux/), then boots that kernel
# (linux/arch/x86/boot/bzImage) in the machine's QEMU, KVM when /dev/kvm is usable and TCG
# otherwise, on an initramfs made here: the trusted busybox, the agent's ffkx-bench and the
# shared libraries the machine's loader resolves for it. Its /init prints a marker computed in
# the guest and uname -r, lists the KFlex kfuncs in /proc/kallsyms, runs one data-structure
# benchmark drawn here (distribution, structure, operation) as bench.sh does (taskset -c 0,
# --benchmark_format=csv) and the kernel's guard lines from dmesg, then powers off. The rows
# are cut from the serial log by the trusted busybox; checks.yaml judges them on the controller.
# The guest image the agent made is not used: the verifier's guest is its own.
# When there is no kernel, a diagnostic `make bzImage` in a scratch copy of linux/ shows in the
# logs why (Layer 1 classifies its errors). RUNBOOK.MD is never read.
KERN="$WORKDIR/linux/arch/x86/boot/bzImage"
BENCH="$WORKDIR/ffkx-bench"
BPFOBJ="$WORKDIR/bpf/bench_data_structures.bpf.o"

magic() { head -c4 "$1" 2>/dev/null | od -An -tx1 | tr -d ' \n'; }
# The QEMU that boots the guest, as the owner's PATH finds it: the reference installs Debian's
# qemu-system-x86; a script or an ELF of the agent's that writes a serial log shows here.
vouch qemu qemu-system-x86_64
{
  echo "== build outputs"
  [ -f "$BENCH" ] && [ ! -L "$BENCH" ] && echo "ffkx-bench: $(magic "$BENCH")" || echo "ffkx-bench: missing"
  # ELF e_machine 247 (0xf7) is BPF; the object's .comment names the clang that made it.
  echo "bpf object machine: $(dd if="$BPFOBJ" bs=1 skip=18 count=2 2>/dev/null | od -An -tx1 | tr -d ' \n')"
  echo "bpf object compiler: $(strings "$BPFOBJ" 2>/dev/null | grep -m1 -o 'clang version [0-9][0-9.]*')"
  # The object files of build.sh's CMake build (a binary from elsewhere has none).
  echo "bench objects: $(find "$WORKDIR/.build/bench" -name '*.o' -type f 2>/dev/null | wc -l)"
  echo "== kernel: $KERN"
  [ -f "$KERN" ] && [ ! -L "$KERN" ] && echo "regular: yes" || echo "regular: no"
  # A bzImage's setup header has "HdrS" at byte 514; its release string is uncompressed.
  echo "bzimage: $(dd if="$KERN" bs=1 skip=514 count=4 2>/dev/null)"
  echo "release: $(strings -n 8 "$KERN" 2>/dev/null | grep -m1 -o '^[3-9]\.[0-9]*\.[0-9]*[^ ]* (')"
  echo "kernel bpf objects: $(find "$WORKDIR/linux/kernel/bpf" -name '*.o' -type f 2>/dev/null | wc -l)"
  grep -h -e '^CONFIG_DEBUG_INFO_BTF=y' -e '^CONFIG_BPF_SYSCALL=y' -e '^CONFIG_BLK_DEV_INITRD=y' \
    "$WORKDIR/linux/.config" 2>/dev/null | sed 's/^/config: /'
} >"$LOG_DIR/binary.txt" 2>&1
cat "$LOG_DIR/binary.txt" >"$LOG_DIR/01_kernel.log"

if ! grep -q '^bzimage: HdrS$' "$LOG_DIR/binary.txt"; then
  # Diagnosis only (kernel_built fails anyway): the kernel's make in this environment.
  {
    echo "== diagnostic build: make bzImage in a scratch copy of linux/"
    mkdir -p "$SCRATCH/build"
    cp -a "$WORKDIR/linux/." "$SCRATCH/build/" 2>/dev/null
    chown -R "$OWNER" "$SCRATCH/build"
    cd "$SCRATCH/build" && as_owner timeout 120 make -j2 bzImage
    echo "make exit code: $?"
  } >"$LOG_DIR/02_build.log" 2>&1
  exit 0
fi

# The hidden inputs: one benchmark of the ffkx data structures and a marker.
r() { od -An -tu2 -N2 /dev/urandom | tr -d ' '; }
pick() { shift $(($(r) % $# + 1)); echo "$1"; }
DIST=$(pick _ Uniform Zipfian)
DS=$(pick _ ffkx_hashmap ffkx_rbtree ffkx_linked_list ffkx_skiplist)
OP=$(pick _ update lookup delete)
M1=$(($(r) % 900 + 100))
M2=$(($(r) % 900 + 100))
echo "kflex-verifier-$((M1 * M2))" >"$LOG_DIR/marker_drawn.txt"
echo "$DIST/${DS}_$OP" >"$LOG_DIR/bench_drawn.txt"

{
  echo "== verifier initramfs: busybox, ffkx-bench and its libraries"
  R="$SCRATCH/root"
  mkdir -p "$R/bin" "$R/kflex/lib" "$R/lib64" "$R/proc" "$R/sys" "$R/dev" "$R/tmp"
  cp "$TOOLS/busybox" "$R/bin/busybox"
  cp "$BENCH" "$R/kflex/ffkx-bench"
  # The machine's loader resolves the libraries (what the agent installed is what is run).
  as_owner ldd "$BENCH" | tee "$SCRATCH/ldd.txt"
  for lib in $(sed -n 's/.*=> \(\/[^ ]*\) (.*/\1/p' "$SCRATCH/ldd.txt"); do cp -L "$lib" "$R/kflex/lib/"; done
  cp -L /lib64/ld-linux-x86-64.so.2 "$R/lib64/"
  cat >"$R/init" <<INIT
#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
echo "KFLEX-MARKER kflex-verifier-\$(($M1 * $M2))"
echo "KFLEX-RELEASE \$(uname -r)"
grep -o -w -e bpf_register_heap -e bpf_scalar_cast /proc/kallsyms | sort -u | sed 's/^/KFLEX-KSYM /'
ulimit -l unlimited
cd /kflex && LD_LIBRARY_PATH=/kflex/lib taskset -c 0 ./ffkx-bench \
  --benchmark_filter='^$DIST/${DS}_$OP/' --benchmark_format=csv 2>&1 | sed 's/^/KFLEX-BENCH /'
dmesg | grep 'prog=bench_ffkx_' | sed 's/^.*prog=/KFLEX-GUARD prog=/'
echo KFLEX-DONE
poweroff -f
INIT
  chmod 755 "$R/init"
  cd "$R" && find . | cpio -o -H newc >"$SCRATCH/initramfs.cpio"
  echo "initramfs bytes: $(wc -c <"$SCRATCH/initramfs.cpio")"
  chown "$OWNER" "$SCRATCH/initramfs.cpio"
} >"$LOG_DIR/02_initramfs.log" 2>&1

if [ -w /dev/kvm ] && as_owner test -w /dev/kvm; then ACCEL="-enable-kvm -cpu host"; else ACCEL="-M accel=tcg -cpu max"; fi
{
  echo "== experiment: qemu-system-x86_64 $ACCEL -kernel linux/arch/x86/boot/bzImage (verifier initramfs, 2 CPUs, 4 GiB), $DIST/${DS}_$OP"
  cd "$SCRATCH" && rc_of qemu as_owner timeout 1500 qemu-system-x86_64 $ACCEL -kernel "$KERN" \
    -initrd "$SCRATCH/initramfs.cpio" -append 'console=ttyS0 panic=-1 loglevel=6 rdinit=/init' \
    -smp 2 -m 4G -display none -monitor none -no-reboot -serial "file:$SCRATCH/serial.txt"
  echo "qemu exit code: $(cat "$LOG_DIR/qemu.rc")"
  echo "== serial console (the verifier's lines)"
  tr -d '\r' <"$SCRATCH/serial.txt" | grep '^KFLEX-'
} >"$LOG_DIR/03_qemu.log" 2>&1

collect "$SCRATCH/serial.txt" serial.txt
S() { tr -d '\r' <"$SCRATCH/serial.txt" 2>/dev/null; }
S | sed -n 's/^KFLEX-MARKER //p' | head -n 1 >"$LOG_DIR/marker_seen.txt"
S | sed -n 's/^KFLEX-RELEASE //p' | head -n 1 >"$LOG_DIR/guest_release.txt"
S | sed -n 's/^KFLEX-KSYM //p' >"$LOG_DIR/kfuncs.txt"
S | sed -n 's/^KFLEX-GUARD //p' >"$LOG_DIR/guards.txt"
# Google Benchmark's CSV rows: "name",iterations,real_time,cpu_time,time_unit,...,items_per_second,...
S | sed -n 's/^KFLEX-BENCH \("[A-Za-z]*\/[a-z_]*\/[^"]*",[0-9]*,.*\)$/\1/p' >"$LOG_DIR/bench.csv"
sed -n 's/^"\([A-Za-z]*\/[a-z_]*\)\/.*/\1/p' "$LOG_DIR/bench.csv" | sort -u >"$LOG_DIR/bench_seen.txt"
awk -F, '{ n++; it = $2; t = $3; u = $5; ips = $7 }
  END { printf "rows %d\n", n; if (n) { f = (u == "us") ? 1000 : (u == "ms") ? 1000000 : (u == "s") ? 1000000000 : 1
        printf "iterations %d\nns_per_op %d\nitems_per_second %d\n", it, t * f, ips } }' \
  "$LOG_DIR/bench.csv" >"$LOG_DIR/bench_summary.txt" 2>&1
echo "guard_lines $(grep -c 'range_analysis_call=[0-9]* elided=[0-9]*' "$LOG_DIR/guards.txt")" >>"$LOG_DIR/bench_summary.txt"
exit 0
