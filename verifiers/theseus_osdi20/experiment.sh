# Layer 2 experiment of theseus_osdi20 (hidden from the agent), after experiment_lib.sh.
#
# Boots the ISO the agent built ($WORKDIR/build/theseus-x86_64.iso) with the machine's QEMU, as
# the owner of WORKDIR, headless under TCG (the Makefile's -cpu Broadwell and 512 MiB, 4 CPUs, the
# serial console in a file, the monitor on a pair of FIFOs), waits for the shell, then types four of the
# paper's Table 3 benchmarks into the Theseus shell through the monitor's sendkey, in an order
# drawn here (so a replayed log or a canned image shows):
#   bm --null, bm --spawn, bm --memory_map (needs bm_map), bm --ipc -a -p -b (needs bm_ipc).
# bm prints its results only to the graphical terminal, not to the serial console (which only
# gets the shell's "returned exit value" lines, and bm returns 0 without measuring when its core
# is busy). So after the last benchmark the guest's RAM is saved with pmemsave and the trusted
# busybox cuts the terminal's scrollback text (the longest printable run holding "BM-INFO") out
# of it: the text a person would read on the screen. From it come the benchmarks' order and
# means, judged by checks.yaml on the controller. When there is no ISO, a diagnostic `make iso`
# in a scratch copy shows in the logs why (Layer 1 classifies its errors).
# RUNBOOK.MD is never read.
ISO="$WORKDIR/build/theseus-x86_64.iso"
MODS="$WORKDIR/build/grub-isofiles/modules"
MEM_MB=512
# The QEMU that boots the guest, as the owner's PATH finds it: the reference installs Debian's
# qemu-system-x86; a script or an ELF of the agent's that writes a serial log shows here.
vouch qemu qemu-system-x86_64

{
  echo "== image: $ISO"
  [ -f "$ISO" ] && [ ! -L "$ISO" ] && echo "regular: yes" || echo "regular: no"
  # An ISO 9660 image has "CD001" at byte 32769 (its primary volume descriptor).
  echo "iso9660: $(dd if="$ISO" bs=1 skip=32769 count=5 2>/dev/null)"
  echo "size: $(stat -c %s "$ISO" 2>/dev/null)"
  # The crates the build compiled, one object file each (a loadable image is made of them);
  # an image fetched from elsewhere has none beside it.
  echo "crate objects: $(find "$MODS" -name '*.o' -type f 2>/dev/null | wc -l)"
  echo "captain objects: $(find "$MODS" -name 'k#captain-*.o' -type f 2>/dev/null | wc -l)"
  echo "bm objects: $(find "$MODS" -name 'a#bm-*.o' -type f 2>/dev/null | wc -l)"
  # The repository ships prebuilt ISOs under osdi20ae/; the image must not be one of them.
  prebuilt=no
  for p in $(find "$WORKDIR/osdi20ae" -name '*.iso' -type f 2>/dev/null); do
    cmp -s "$p" "$ISO" && prebuilt="yes ($p)"
  done
  echo "prebuilt copy: $prebuilt"
  # The image holds its files as they are (grub-mkrescue compresses none of them): the
  # nano_core's kernel.bin and the crates' objects keep their string literals. Three of the
  # source's, one each from nano_core (loadable mode), captain and bm: a file made to look
  # like an ISO holds none of them.
  n=0
  for s in "The nano_core (in loadable mode) is invoking the captain" \
    "captain::init(): initialization done!" "cannot run on a busy core"; do
    has_text "$ISO" "$s" && n=$((n + 1))
  done
  echo "theseus literals: $n"
} >"$LOG_DIR/binary.txt" 2>&1
cat "$LOG_DIR/binary.txt" >"$LOG_DIR/01_image.log"

if ! grep -q '^iso9660: CD001$' "$LOG_DIR/binary.txt"; then
  # Diagnosis only (image_built fails anyway): the README's `make iso` in this environment,
  # with the owner's rustup/cargo on PATH; its errors are what Layer 1 classifies.
  {
    echo "== diagnostic build: make iso THESEUS_CONFIG='bm_map bm_ipc loadable' (in a scratch copy of the workdir)"
    mkdir -p "$SCRATCH/build"
    cp -a "$WORKDIR/." "$SCRATCH/build/"
    chown -R "$OWNER" "$SCRATCH/build"
    home=$(awk -F: -v u="$OWNER" '$1 == u { print $6 }' /etc/passwd)
    cd "$SCRATCH/build" && SYSTEM_PATH="$home/.cargo/bin:$SYSTEM_PATH" as_owner timeout 120 \
      make iso "THESEUS_CONFIG=bm_map bm_ipc loadable"
    echo "make exit code: $?"
  } >"$LOG_DIR/02_build.log" 2>&1
  exit 0
fi
# An ISO without Theseus's literals would only keep QEMU at its firmware until every wait
# below ran out: it is not booted (booted and the rest fail on the missing console).
if ! grep -q '^theseus literals: 3$' "$LOG_DIR/binary.txt"; then
  echo "== not booted: the image holds none of, or only some of, Theseus's literals" >"$LOG_DIR/03_qemu.log"
  exit 0
fi
# A copy of a prebuilt image fails not_a_prebuilt_image whatever it prints; booted, the real
# one would hold the verifier for QEMU's whole run (and a fake one until every wait ran out).
if ! grep -q '^prebuilt copy: no$' "$LOG_DIR/binary.txt"; then
  echo "== not booted: the image is a copy of a prebuilt one under osdi20ae/" >"$LOG_DIR/03_qemu.log"
  exit 0
fi

# The hidden input: the order of the four benchmarks.
printf '%s\n' null spawn memory_map ipc_async | shuf >"$LOG_DIR/drawn_order.txt"

# keys LINE: the monitor's sendkey names for LINE's characters, then Enter.
keys() {
  printf '%s\n' "$1" | fold -w1 | while IFS= read -r c; do
    case "$c" in
      [a-z0-9]) echo "$c" ;;
      ' ') echo spc ;;
      -) echo minus ;;
      _) echo shift-minus ;;
    esac
  done
  echo ret
}

# exits: how many applications the shell saw end (its log line on the serial console).
exits() {
  n=$(grep -c 'returned exit value' "$SCRATCH/serial.txt" 2>/dev/null)
  echo "${n:-0}"
}

{
  echo "== experiment: qemu-system-x86_64 -cdrom build/theseus-x86_64.iso (TCG, -cpu Broadwell, 4 CPUs, ${MEM_MB} MiB, headless), bm in the drawn order: $(tr '\n' ' ' <"$LOG_DIR/drawn_order.txt")"
  mkfifo -m 666 "$SCRATCH/mon.in" "$SCRATCH/mon.out"
  : >"$SCRATCH/serial.txt"
  chown "$OWNER" "$SCRATCH/serial.txt"
  cd "$SCRATCH" || exit 0
  as_owner timeout 2400 qemu-system-x86_64 -cdrom "$ISO" -no-reboot -no-shutdown \
    -m "$MEM_MB" -smp 4 -cpu Broadwell -M accel=tcg -net none -display none -vga std \
    -serial "file:$SCRATCH/serial.txt" -monitor "pipe:$SCRATCH/mon" &
  qemu=$!
  # Opened read-write, the FIFOs never block, whether or not QEMU came up.
  exec 3<>"$SCRATCH/mon.in"
  cat "$SCRATCH/mon.out" >"$SCRATCH/monitor.txt" &
  drain=$!

  # The shell starts after the captain and the crates it loads; under TCG this takes minutes.
  waited=0
  until grep -q 'Starting first application' "$SCRATCH/serial.txt" || [ $waited -ge 900 ]; do
    kill -0 $qemu 2>/dev/null || break
    sleep 5
    waited=$((waited + 5))
  done
  echo "shell started after about ${waited} s"
  kill -0 $qemu 2>/dev/null && sleep 30

  while read -r b; do
    case "$b" in
      null) cmd="bm --null" ;;
      spawn) cmd="bm --spawn" ;;
      memory_map) cmd="bm --memory_map" ;;
      ipc_async) cmd="bm --ipc -a -p -b" ;;
    esac
    before=$(exits)
    for k in $(keys "$cmd"); do
      echo "sendkey $k" >&3
      usleep 150000
    done
    t=0
    while [ "$(exits)" -le "$before" ] && [ $t -lt 900 ]; do
      kill -0 $qemu 2>/dev/null || break
      sleep 3
      t=$((t + 3))
    done
    echo "$cmd: the shell saw it end after about ${t} s"
    sleep 3
  done <"$LOG_DIR/drawn_order.txt"

  # A relative name (QEMU runs in SCRATCH): the monitor reads a "/" after the size as a division.
  echo "pmemsave 0 $((MEM_MB * 1024 * 1024)) guest.mem" >&3
  t=0
  until [ "$(stat -c %s "$SCRATCH/guest.mem" 2>/dev/null || echo 0)" -ge $((MEM_MB * 1024 * 1024)) ] || [ $t -ge 300 ]; do
    kill -0 $qemu 2>/dev/null || break
    sleep 2
    t=$((t + 2))
  done
  sleep 2
  echo quit >&3
  wait $qemu
  echo "$?" >"$LOG_DIR/qemu.rc"
  exec 3>&-
  kill $drain 2>/dev/null
  echo "qemu exit code: $(cat "$LOG_DIR/qemu.rc")"
  echo "== serial console (last lines)"
  tr -d '\033' <"$SCRATCH/serial.txt" | tail -n 20
} >"$LOG_DIR/03_qemu.log" 2>&1

collect "$SCRATCH/serial.txt" serial.txt
collect "$SCRATCH/monitor.txt" monitor.txt
grep -c 'returned exit value: Some(0)' "$SCRATCH/serial.txt" >"$LOG_DIR/zero_exits.txt" 2>&1

# The terminal's text from the guest's RAM: newlines kept as \036, every other unprintable byte
# ends a run; the longest run that holds bm's output is the live scrollback buffer.
if [ -f "$SCRATCH/guest.mem" ]; then
  tr '\n' '\036' <"$SCRATCH/guest.mem" | tr -c '\036\040-\176' '\n' | grep 'BM-INFO' |
    awk 'length($0) > length(best) { best = $0 } END { print best }' | tr '\036' '\n' \
      >"$SCRATCH/terminal.txt"
  rm -f "$SCRATCH/guest.mem"
fi
collect "$SCRATCH/terminal.txt" terminal.txt
# The benchmarks in the order their results appear, and each one's mean (bm's unit).
awk '
  /BM-INFO: .* result/ { n = "other" }
  /BM-INFO: NULL result/ { n = "null" }
  /BM-INFO: SPAWN result/ { n = "spawn" }
  /BM-INFO: MEMORY MAP result/ { n = "memory_map" }
  /BM-INFO: IPC ASYNC result/ { n = "ipc_async" }
  /BM-INFO: .* result/ { print n >> order; unit = $0; sub(/.*[(]/, "", unit); sub(/[)].*/, "", unit); print n "_unit " unit >> means }
  /^ *mean: / && n != "" { print n " " $2 >> means; n = "" }
' order="$LOG_DIR/results_order.txt" means="$LOG_DIR/means.txt" "$SCRATCH/terminal.txt" 2>/dev/null
# Creating a process costs far more than the null call (the paper: over four orders of magnitude).
awk '$1 == "null" { z = $2 } $1 == "spawn" { s = $2 } END { if (z > 0 && s > 0) printf "spawn_over_null %.1f\n", s / z }' \
  "$LOG_DIR/means.txt" >>"$LOG_DIR/means.txt" 2>/dev/null
exit 0
