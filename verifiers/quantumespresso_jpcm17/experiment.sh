# Layer 2 experiment of quantumespresso_jpcm17 (hidden from the agent), after experiment_lib.sh.
#
# Runs the pw.x the agent built in the checkout ($WORKDIR/bin/pw.x, which `make pw` links to
# PW/src/pw.x), as the owner of WORKDIR, in a scratch folder on two silicon SCF inputs of the
# verifier's, both with the Si.bhs pseudopotential that ships in $WORKDIR/pseudo: the
# test-suite's pw_scf/scf.in (diamond Si, celldm 10.20, ecutwfc 12, two special k-points) and a
# variant no published output shows (celldm 10.35, ecutwfc 16, a 4x4x4 shifted grid). Collects
# where bin/pw.x leads and whether the build's objects are beside it, and both outputs;
# checks.yaml judges them on the controller. RUNBOOK.MD is never read.
BIN="$WORKDIR/bin/pw.x"
PSEUDO="$WORKDIR/pseudo"

{
  echo "== binary: $BIN"
  [ -e "$BIN" ] && echo "exists: yes" || echo "exists: no"
  target=$(readlink -f "$BIN" 2>/dev/null)
  echo "resolves to: $target"
  # A pw.x from elsewhere (a distribution's package, a copy) is not the checkout's build.
  case "$target" in
    "$(readlink -f "$WORKDIR")"/*) echo "inside workdir: yes" ;;
    *) echo "inside workdir: no" ;;
  esac
  [ -n "$target" ] && [ -f "$target" ] && echo "regular: yes" || echo "regular: no"
  [ -n "$target" ] && [ -x "$target" ] && echo "executable: yes" || echo "executable: no"
  echo "magic: $(head -c4 "$target" 2>/dev/null | od -An -tx1 | tr -d ' \n')"
  echo "size: $(stat -c %s "$target" 2>/dev/null)"
  # What `make pw` leaves in the checkout: the main program's object and PWscf's library.
  [ -f "$WORKDIR/PW/src/pwscf.o" ] && echo "object PW/src/pwscf.o: yes" || echo "object PW/src/pwscf.o: no"
  [ -f "$WORKDIR/PW/src/libpw.a" ] && echo "library PW/src/libpw.a: yes" || echo "library PW/src/libpw.a: no"
  echo "objects in PW/src: $(ls "$WORKDIR"/PW/src/*.o 2>/dev/null | wc -l)"
} >"$LOG_DIR/binary.txt" 2>&1
cat "$LOG_DIR/binary.txt" >"$LOG_DIR/01_binary.log"

mkdir -p "$SCRATCH/scf" "$SCRATCH/hidden"
# test-suite/pw_scf/scf.in with the shipped Si.bhs for the downloaded Si.pz-vbc.UPF, and the
# pseudopotential and scratch folders given in the input rather than by environment.
cat >"$SCRATCH/scf/scf.in" <<INPUT
 &control
    calculation = 'scf'
    tstress = .true.
    pseudo_dir = '$PSEUDO'
    outdir = '$SCRATCH/scf/out'
 /
 &system
    ibrav = 2, celldm(1) = 10.20,
    nat = 2, ntyp = 1,
    ecutwfc = 12.0
 /
 &electrons
 /
ATOMIC_SPECIES
 Si  28.086  Si.bhs
ATOMIC_POSITIONS (alat)
 Si 0.00 0.00 0.00
 Si 0.25 0.25 0.25
K_POINTS
  2
   0.250000  0.250000  0.250000   1.00
   0.250000  0.250000  0.750000   3.00
INPUT
cat >"$SCRATCH/hidden/scf.in" <<INPUT
 &control
    calculation = 'scf'
    prefix = 'si_verifier'
    pseudo_dir = '$PSEUDO'
    outdir = '$SCRATCH/hidden/out'
 /
 &system
    ibrav = 2, celldm(1) = $VARIANT_CELLDM,
    nat = 2, ntyp = 1,
    ecutwfc = $VARIANT_ECUTWFC
 /
 &electrons
    conv_thr = 1.0d-8
 /
ATOMIC_SPECIES
 Si  28.086  Si.bhs
ATOMIC_POSITIONS (alat)
 Si 0.00 0.00 0.00
 Si 0.25 0.25 0.25
K_POINTS automatic
  4 4 4 1 1 1
INPUT

# run NAME N: pw.x -in scf.in in $SCRATCH/NAME; collects NAME.out and NAME.rc.
run() {
  dir="$SCRATCH/$1"
  chown -R "$OWNER" "$dir"
  {
    echo "== experiment $1: $BIN -in scf.in"
    cd "$dir" && rc_of "$1" as_owner timeout 300 "$BIN" -in scf.in >"$dir/pw.out" 2>&1
    echo "exit code: $(cat "$LOG_DIR/$1.rc")"
    tail -n 40 "$dir/pw.out"
  } >"$LOG_DIR/0$2_$1.log" 2>&1
  collect "$dir/pw.out" "$1.out"
}
run scf 2
run hidden 3
