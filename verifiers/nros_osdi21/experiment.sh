# Layer 2 experiment of nros_osdi21 (hidden from the agent), after experiment_lib.sh.
#
# Checks what the agent's `python3 ./run.py --release` left (the kernel, the UEFI bootloader and
# init in target/, with their build's dependency files), then rebuilds in the agent's toolchain
# (~/.cargo/bin of the workdir's owner) with init's vmops micro-benchmark in its smoke form
# (`run.py --norun`, as s06_vmops_benchmark builds it), copies the ESP into SCRATCH, writes a
# kernel command line of its own (testcmd = the number of cores the benchmark uses, drawn here)
# and boots it with the machine's QEMU and the repository's OVMF, KVM when /dev/kvm is usable and
# TCG otherwise, with the guest's real-time clock set to a date drawn here (the kernel prints
# it as "Started at ..."). No tap device and no sudo: the guest gets a user-mode NIC. It collects
# the serial log and the vmops rows cut from it; checks.yaml judges them on the controller.
# When there is no kernel, a diagnostic build in a scratch copy of the tree shows in the logs why
# (Layer 1 classifies its errors). RUNBOOK.MD is never read.
REL="$WORKDIR/target"
ESP="$REL/x86_64-uefi/release/esp"
HOME_OWNER=$(awk -F: -v u="$OWNER" '$1 == u { print $6 }' /etc/passwd)
BUILD_PATH="$HOME_OWNER/.cargo/bin:$SYSTEM_PATH"

magic() { head -c4 "$1" 2>/dev/null | od -An -tx1 | tr -d ' \n'; }
# The QEMU that boots the guest, as the owner's PATH finds it: the reference installs Debian's
# qemu-system-x86; a script or an ELF of the agent's that writes a serial log shows here.
vouch qemu qemu-system-x86_64
{
  echo "== build outputs in $REL"
  for f in x86_64-bespin/release/bespin x86_64-bespin-none/release/init; do
    [ -f "$REL/$f" ] && [ ! -L "$REL/$f" ] && echo "$f: $(magic "$REL/$f")" || echo "$f: missing"
  done
  f=x86_64-uefi/release/bootloader.efi
  [ -f "$REL/$f" ] && [ ! -L "$REL/$f" ] && echo "$f: $(head -c2 "$REL/$f")" || echo "$f: missing"
  # Dependency files the kernel's xargo build writes (a kernel from elsewhere has none).
  echo "kernel deps: $(find "$REL/x86_64-bespin/release/deps" -name '*.d' -type f 2>/dev/null | wc -l)"
  echo "toolchain: $(PATH=$BUILD_PATH rustc --version 2>&1 | head -n 1)"
  echo "xargo: $(PATH=$BUILD_PATH command -v xargo)"
} >"$LOG_DIR/binary.txt" 2>&1
cat "$LOG_DIR/binary.txt" >"$LOG_DIR/01_kernel.log"

if ! grep -q '^x86_64-bespin/release/bespin: 7f454c46$' "$LOG_DIR/binary.txt"; then
  # Diagnosis only (kernel_built fails anyway): the AE guide's build in this environment.
  {
    echo "== diagnostic build: python3 ./run.py --release --norun (in a scratch copy of the tree)"
    mkdir -p "$SCRATCH/build"
    cp -a "$WORKDIR/." "$SCRATCH/build/"
    chown -R "$OWNER" "$SCRATCH/build"
    cd "$SCRATCH/build/kernel" && as_owner env PATH="$BUILD_PATH" timeout 120 python3 ./run.py --release --norun
    echo "run.py exit code: $?"
  } >"$LOG_DIR/02_build.log" 2>&1
  exit 0
fi

# The hidden inputs: the benchmark's cores and the guest's clock.
r() { od -An -tu2 -N2 /dev/urandom | tr -d ' '; }
CORES=$(($(r) % 2 + 1))
DATE=$(printf '%04d-%02d-%02d %02d' $(($(r) % 20 + 2010)) $(($(r) % 12 + 1)) $(($(r) % 28 + 1)) $(($(r) % 24)))
MIN=$(printf '%02d' $(($(r) % 40)))
echo "$CORES" >"$LOG_DIR/cores_drawn.txt"
echo "$DATE" >"$LOG_DIR/clock_drawn.txt"

{
  echo "== rebuild: python3 ./run.py --release --norun --kfeatures test-userspace-smp --mods init --ufeatures bench-vmops smoke"
  cd "$WORKDIR/kernel" && rc_of build as_owner env PATH="$BUILD_PATH" timeout 1200 python3 ./run.py \
    --release --norun --kfeatures test-userspace-smp --mods init --ufeatures bench-vmops smoke
  echo "run.py exit code: $(cat "$LOG_DIR/build.rc")"
} >"$LOG_DIR/02_build.log" 2>&1

mkdir -p "$SCRATCH/esp"
cp -a "$ESP/." "$SCRATCH/esp/" 2>/dev/null
printf './kernel log=info testcmd=%s' "$CORES" >"$SCRATCH/esp/cmdline.in"
cp "$WORKDIR/bootloader/OVMF_CODE.fd" "$WORKDIR/bootloader/OVMF_VARS.fd" "$SCRATCH/" 2>/dev/null
chown -R "$OWNER" "$SCRATCH/esp" "$SCRATCH"/OVMF_*.fd 2>/dev/null
if [ -w /dev/kvm ] && as_owner test -w /dev/kvm; then
  ACCEL="-enable-kvm -cpu host,migratable=no,+invtsc,+tsc,+x2apic,+fsgsbase"
else
  ACCEL="-M accel=tcg -cpu max,+tsc,+x2apic,+fsgsbase"
fi
{
  echo "== experiment: qemu-system-x86_64 $ACCEL (OVMF, ESP of the rebuild, 2 CPUs, 1 GiB) testcmd=$CORES, clock $DATE:$MIN"
  cd "$SCRATCH" && rc_of qemu as_owner timeout 900 qemu-system-x86_64 -no-reboot $ACCEL \
    -display none -monitor none -serial "file:$SCRATCH/serial.txt" \
    -drive "if=pflash,format=raw,file=$SCRATCH/OVMF_CODE.fd,readonly=on" \
    -drive "if=pflash,format=raw,file=$SCRATCH/OVMF_VARS.fd,readonly=on" \
    -device ahci,id=ahci,multifunction=on \
    -drive "if=none,format=raw,file=fat:rw:$SCRATCH/esp,id=esp" -device ide-hd,bus=ahci.0,drive=esp \
    -device isa-debug-exit,iobase=0xf4,iosize=0x04 -nic user,model=e1000 \
    -smp 2,sockets=1 -m 1024 -rtc "base=$(echo "$DATE" | tr ' ' T):$MIN:00"
  # isa-debug-exit makes QEMU exit with (code << 1) | 1: 1 is the kernel's exit code 0.
  echo "qemu exit code: $(cat "$LOG_DIR/qemu.rc")"
  echo "== serial console (the verifier's lines)"
  tr -d '\r' <"$SCRATCH/serial.txt" | grep -e 'Started at' -e 'cmdline=' -e 'init::vmops:' -e 'Done with init'
} >"$LOG_DIR/03_qemu.log" 2>&1

collect "$SCRATCH/serial.txt" serial.txt
tr -d '\r' <"$SCRATCH/serial.txt" 2>/dev/null | sed -n 's/.*Started at \([0-9]*-[0-9]*-[0-9]* [0-9]*\):.*/\1/p' | head -n 1 >"$LOG_DIR/clock_seen.txt"
tr -d '\r' <"$SCRATCH/serial.txt" 2>/dev/null | sed -n 's/.*binary=init cmdline=\([0-9]*\) .*/\1/p' | head -n 1 >"$LOG_DIR/cores_seen.txt"
# Rows `<core>,maponly,<ncores>,4096,<total ms>,<ms>,<operations>`, one per core and second.
tr -d '\r' <"$SCRATCH/serial.txt" 2>/dev/null | sed -n 's/.*init::vmops: \([0-9]*,maponly,[0-9]*,4096,[0-9]*,[0-9]*,[0-9]*\)$/\1/p' >"$LOG_DIR/vmops.csv"
cut -d, -f3 "$LOG_DIR/vmops.csv" | sort -u >"$LOG_DIR/vmops_ncores.txt"
{
  echo "rows $(wc -l <"$LOG_DIR/vmops.csv")"
  awk -F, -v c="$CORES" '{ n++; if (min == "" || $7 < min) min = $7 }
    END { if (n) { printf "rows_per_core %d\nmin_ops %d\n", n / c, min } }' "$LOG_DIR/vmops.csv"
} >"$LOG_DIR/vmops_summary.txt" 2>&1
exit 0
