#!/bin/bash
# Boots a Theseus ISO in QEMU without a display and types bm commands into its shell, as a person
# would at the QEMU window: the monitor's sendkey does the typing. bm prints its results to the
# graphical terminal only, so at the end the guest's RAM is saved (pmemsave) and the terminal's
# scrollback text is cut out of it (the longest printable run that holds "BM-INFO").
#
# usage: bm_headless.sh ISO OUTDIR ACCEL TIMEOUT "bm --null" "bm --spawn" ...
# writes OUTDIR/bm-serial.log (serial console) and OUTDIR/bm-terminal.txt (the terminal's text).
set -euo pipefail
iso=$(realpath "$1") out=$(realpath "$2") accel=$3 limit=$4
shift 4
mem_mb=512
run=$(mktemp -d)
trap 'rm -rf "$run"' EXIT
mkfifo "$run/mon.in" "$run/mon.out"
: >"$out/bm-serial.log"
cd "$run"

qemu-system-x86_64 -cdrom "$iso" -no-reboot -no-shutdown -m "$mem_mb" -smp 4 $accel \
  -net none -display none -vga std -serial "file:$out/bm-serial.log" -monitor "pipe:$run/mon" &
qemu=$!
exec 3<>"$run/mon.in"
cat "$run/mon.out" >/dev/null &

keys() { # the sendkey names of a command line's characters, then Enter
  local line=$1 i c
  for ((i = 0; i < ${#line}; i++)); do
    c=${line:i:1}
    case "$c" in
      [a-z0-9]) echo "$c" ;;
      ' ') echo spc ;;
      -) echo minus ;;
      _) echo shift-minus ;;
      *) echo "cannot type '$c'" >&2; exit 2 ;;
    esac
  done
  echo ret
}
exits() { grep -c 'returned exit value' "$out/bm-serial.log" || true; }

# The shell is the first application; wait for it, then give it time to draw its prompt.
for ((t = 0; t < limit; t += 5)); do
  grep -q 'Starting first application' "$out/bm-serial.log" && break
  sleep 5
done
grep -q 'Starting first application' "$out/bm-serial.log" || { echo "Theseus did not start its shell" >&2; kill $qemu; exit 1; }
sleep 30

for cmd in "$@"; do
  before=$(exits)
  for k in $(keys "$cmd"); do
    echo "sendkey $k" >&3
    sleep 0.15
  done
  for ((t = 0; t < limit; t += 3)); do
    [ "$(exits)" -gt "$before" ] && break
    sleep 3
  done
  echo "$cmd: ended after about $t s"
  sleep 3
done

# relative to QEMU's folder: the monitor reads a "/" after the size as a division
echo "pmemsave 0 $((mem_mb << 20)) guest.mem" >&3
for ((t = 0; t < 300; t += 2)); do
  [ "$(stat -c %s "$run/guest.mem" 2>/dev/null || echo 0)" -ge $((mem_mb << 20)) ] && break
  sleep 2
done
sleep 2
echo quit >&3
wait $qemu || true
tr '\n' '\036' <"$run/guest.mem" | tr -c '\036\040-\176' '\n' | grep 'BM-INFO' |
  awk 'length($0) > length(best) { best = $0 } END { print best }' | tr '\036' '\n' >"$out/bm-terminal.txt"
