# Layer 2 experiment of orbit_osdi22 (hidden from the agent), after experiment_lib.sh.
#
# Boots the orbit kernel the agent built ($WORKDIR/kernel/bzImage-ddcd247b) on the guest image
# it made ($WORKDIR/qemu-image.img, opened with snapshot=on so nothing is written back), with the
# machine's QEMU under TCG and the serial console in a file, as run-kernel.sh does but without
# KVM. The guest runs no init system: the kernel starts /bin/sh on a script from a second, small
# disk made here (ext2, busybox mke2fs): it prints a marker computed in the guest, uname -r,
# builds experiments/micro-call with the userlib module as run.sh does, and runs ./snap on three
# orbit-area sizes drawn here (small, middle, large; three times each), then powers off. The
# CSV rows and the kernel release are cut from the serial log by the trusted busybox; checks.yaml
# judges them on the controller. When there is no kernel, a diagnostic `make` of the kernel tree
# in a scratch copy shows in the logs why (Layer 1 classifies its errors). What the run rests on
# is vouched for first: the build's vmlinux must hold orbit's system calls (kernel/orbit.c's
# SYSCALL_DEFINEs: a stock kernel renamed, or a file with a setup header, has none), and the
# machine's qemu-system-x86_64 must be a package's file or an ELF holding QEMU's own version
# text, not a program of the agent's that writes the serial lines it reads off the verifier disk.
# RUNBOOK.MD is never read.
KERN="$WORKDIR/kernel/bzImage-ddcd247b"
IMG="$WORKDIR/qemu-image.img"

{
  echo "== kernel: $KERN"
  [ -f "$KERN" ] && [ ! -L "$KERN" ] && echo "regular: yes" || echo "regular: no"
  # A bzImage's setup header has "HdrS" at byte 514 and its release string uncompressed.
  echo "bzimage: $(dd if="$KERN" bs=1 skip=514 count=4 2>/dev/null)"
  echo "release: $(strings -n 8 "$KERN" 2>/dev/null | grep -m1 -o '^5\.[0-9]*\.[0-9]*[^ ]*')"
  # The build's own output in the kernel tree (a kernel from elsewhere has none) and its config.
  echo "vmlinux: $([ -f "$WORKDIR/kernel/vmlinux" ] && echo yes || echo no)"
  # orbit's system calls in the linked kernel (their symbols, kernel/orbit.c's SYSCALL_DEFINEs).
  for lit in sys_orbit_create sys_orbit_call; do
    has_text "$WORKDIR/kernel/vmlinux" "$lit" && echo "vmlinux string '$lit': yes" || echo "vmlinux string '$lit': no"
  done
  echo "kernel objects: $(find "$WORKDIR/kernel/kernel" -name '*.o' -type f 2>/dev/null | wc -l)"
  grep -h -e '^CONFIG_MEMCG=y' -e '^CONFIG_CFS_BANDWIDTH=y' -e '^# CONFIG_COMPACTION is not set' \
    "$WORKDIR/kernel/.config" 2>/dev/null | sed 's/^/config: /'
  echo "== image: $IMG"
  [ -f "$IMG" ] && [ ! -L "$IMG" ] && echo "image regular: yes" || echo "image regular: no"
  # ext4's magic 0xEF53 at byte 1080.
  echo "image magic: $(dd if="$IMG" bs=1 skip=1080 count=2 2>/dev/null | od -An -tx1 | tr -d ' \n')"
} >"$LOG_DIR/binary.txt" 2>&1
cat "$LOG_DIR/binary.txt" >"$LOG_DIR/01_kernel.log"

if ! grep -q '^bzimage: HdrS$' "$LOG_DIR/binary.txt"; then
  # Diagnosis only (kernel_built fails anyway): the kernel's make in this environment.
  {
    echo "== diagnostic build: make bzImage in a scratch copy of kernel/"
    mkdir -p "$SCRATCH/build"
    cp -a "$WORKDIR/kernel/." "$SCRATCH/build/" 2>/dev/null
    chown -R "$OWNER" "$SCRATCH/build"
    cd "$SCRATCH/build" && as_owner timeout 120 make -j2 bzImage
    echo "make exit code: $?"
  } >"$LOG_DIR/02_build.log" 2>&1
  exit 0
fi

# The QEMU that boots the kernel: who vouches for it, and QEMU's version text (vl.c's
# "QEMU emulator version " and its copyright line) in it.
vouch qemu qemu-system-x86_64
{
  Q=$(PATH=$SYSTEM_PATH command -v qemu-system-x86_64)
  echo "== qemu: ${Q:-none}"
  for lit in "QEMU emulator version" "Fabrice Bellard"; do
    has_text "$Q" "$lit" && echo "qemu string '$lit': yes" || echo "qemu string '$lit': no"
  done
} >"$LOG_DIR/qemu.txt" 2>&1

# The hidden inputs: three sizes (4 KiB..32 KiB, 256 KiB..2 MiB, 16 MiB..128 MiB) and a marker.
r() { od -An -tu2 -N2 /dev/urandom | tr -d ' '; }
SMALL=$((4096 << ($(r) % 4)))
MID=$((262144 << ($(r) % 4)))
LARGE=$((16777216 << ($(r) % 4)))
M1=$(($(r) % 900 + 100))
M2=$(($(r) % 900 + 100))
echo "orbit-verifier-$((M1 * M2))" >"$LOG_DIR/marker_drawn.txt"
printf '%s\n' "$SMALL" "$MID" "$LARGE" >"$LOG_DIR/drawn_sizes.txt"

{
  echo "== verifier disk: ext2 with run.sh"
  dd if=/dev/zero of="$SCRATCH/verifier.img" bs=1M count=8 2>&1
  mke2fs -q -F "$SCRATCH/verifier.img"
  mkdir -p "$SCRATCH/mnt"
  mount -o loop "$SCRATCH/verifier.img" "$SCRATCH/mnt" && cat >"$SCRATCH/mnt/run.sh" <<RUN
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -o remount,rw /
echo "ORBIT-MARKER orbit-verifier-\$(($M1 * $M2))"
echo "ORBIT-RELEASE \$(uname -r)"
export HOME=/root MODULEPATH=/root/orbit/modulefiles
. /usr/share/modules/init/sh
module load userlib/plain
cd /root/orbit/experiments/micro-call && make 2>&1 | sed 's/^/ORBIT-MAKE /'
for s in $SMALL $MID $LARGE; do
  for i in 1 2 3; do ./snap \$s | sed 's/^/ORBIT-CSV /'; done
done
echo ORBIT-DONE
sync
echo o >/proc/sysrq-trigger
RUN
  umount "$SCRATCH/mnt"
  chown "$OWNER" "$SCRATCH/verifier.img"
} >"$LOG_DIR/02_disk.log" 2>&1

{
  echo "== experiment: qemu-system-x86_64 -kernel kernel/bzImage-ddcd247b -hda qemu-image.img (snapshot) (TCG, 4 CPUs, 4 GiB), snap on sizes $SMALL $MID $LARGE"
  cd "$SCRATCH" && rc_of qemu as_owner timeout 1500 qemu-system-x86_64 -kernel "$KERN" \
    -drive "file=$IMG,format=raw,if=ide,index=0,snapshot=on" \
    -drive "file=$SCRATCH/verifier.img,format=raw,if=ide,index=1" \
    -append 'root=/dev/sda console=ttyS0 nokaslr cgroup_enable=memory loglevel=6 init=/bin/sh -- -c "mount -t ext2 /dev/sdb /mnt && . /mnt/run.sh"' \
    -M accel=tcg -smp cores=4 -m 4G -display none -monitor none -no-reboot \
    -serial "file:$SCRATCH/serial.txt"
  echo "qemu exit code: $(cat "$LOG_DIR/qemu.rc")"
  echo "== serial console (the verifier's lines)"
  tr -d '\r' <"$SCRATCH/serial.txt" | grep '^ORBIT-'
} >"$LOG_DIR/03_qemu.log" 2>&1

collect "$SCRATCH/serial.txt" serial.txt
tr -d '\r' <"$SCRATCH/serial.txt" 2>/dev/null | sed -n 's/^ORBIT-MARKER //p' | head -n 1 >"$LOG_DIR/marker_seen.txt"
tr -d '\r' <"$SCRATCH/serial.txt" 2>/dev/null | sed -n 's/^ORBIT-RELEASE //p' | head -n 1 >"$LOG_DIR/guest_release.txt"
tr -d '\r' <"$SCRATCH/serial.txt" 2>/dev/null | sed -n 's/^ORBIT-CSV \([0-9]*,[0-9]*\)$/\1/p' >"$LOG_DIR/snap.csv"
cut -d, -f1 "$LOG_DIR/snap.csv" | uniq >"$LOG_DIR/seen_sizes.txt"
# Each size's median time (ns) and the large size's over the small size's.
awk -F, '{ t[$1] = t[$1] " " $2; n[$1]++ }
  END { for (s in t) { split(t[s], v, " "); for (i = 1; i <= n[s]; i++) for (j = i + 1; j <= n[s]; j++) if (v[j] < v[i]) { x = v[i]; v[i] = v[j]; v[j] = x }
        print s, v[int((n[s] + 1) / 2)], n[s] } }' "$LOG_DIR/snap.csv" 2>/dev/null | sort -n >"$SCRATCH/medians.txt"
{
  awk '{ print "median " $1 " " $2; print "runs " $1 " " $3 }' "$SCRATCH/medians.txt"
  awk -v s="$SMALL" -v l="$LARGE" '$1 == s { a = $2 } $1 == l { b = $2 } END { if (a > 0) printf "large_over_small %.2f\n", b / a }' "$SCRATCH/medians.txt"
  awk -v s="$SMALL" '$1 == s { print "small_median " $2 }' "$SCRATCH/medians.txt"
  awk -v l="$LARGE" '$1 == l { print "large_median " $2 }' "$SCRATCH/medians.txt"
  echo "rows $(wc -l <"$LOG_DIR/snap.csv")"
} >"$LOG_DIR/snap_summary.txt" 2>&1
exit 0
