# Layer 2 experiment of wannier90_jpcm20 (hidden from the agent), after experiment_lib.sh.
#
# Runs the wannier90.x the agent built ($WORKDIR/wannier90.x, where `make` puts it), as the owner
# of WORKDIR, in scratch folders on the GaAs inputs of example 01 (gaas.amn and gaas.mmn from
# the workdir): once with the example's own gaas.win (4 Wannier functions, Omega Total
# 4.466880976 Ang^2) and once with a gaas.win of the verifier's: the cell's lattice parameter
# and the number of minimisation steps are the controller's draw ($VARIANT_ALAT,
# $VARIANT_NUM_ITER), so the spread it gives is known only to the operator's bank of real runs.
# Collects the .wout files and a listing of what each run wrote; checks.yaml judges them on the
# controller. RUNBOOK.MD is never read.
BIN="$WORKDIR/wannier90.x"
EXAMPLE="$WORKDIR/examples/example01"

{
  echo "== binary: $BIN"
  [ -f "$BIN" ] && [ ! -L "$BIN" ] && echo "regular: yes" || echo "regular: no"
  [ -x "$BIN" ] && echo "executable: yes" || echo "executable: no"
  echo "magic: $(head -c4 "$BIN" 2>/dev/null | od -An -tx1 | tr -d ' \n')"
  echo "size: $(stat -c %s "$BIN" 2>/dev/null)"
} >"$LOG_DIR/binary.txt" 2>&1
cat "$LOG_DIR/binary.txt" >"$LOG_DIR/01_binary.log"

# run NAME: wannier90.x on seedname gaas in $SCRATCH/NAME (prepared by the caller); collects
# NAME.wout, NAME.rc and NAME.files (what the run left; a gaas.werr there means it stopped on
# an error, which wannier90.x does with exit code 0).
run() {
  dir="$SCRATCH/$1"
  chown -R "$OWNER" "$dir"
  {
    echo "== experiment $1: $BIN gaas (in a scratch copy of examples/example01)"
    cd "$dir" && rc_of "$1" as_owner timeout 300 "$BIN" gaas
    echo "exit code: $(cat "$LOG_DIR/$1.rc")"
    tail -n 25 "$dir/gaas.wout" 2>/dev/null
    cat "$dir/gaas.werr" 2>/dev/null
  } >"$LOG_DIR/0$2_$1.log" 2>&1
  collect "$dir/gaas.wout" "$1.wout"
  ls -1 "$dir" >"$LOG_DIR/$1.files" 2>&1
}

mkdir -p "$SCRATCH/example01" "$SCRATCH/iter0"
for f in gaas.win gaas.amn gaas.mmn; do
  cp "$EXAMPLE/$f" "$SCRATCH/example01/$f" 2>/dev/null
done
run example01 2

# The verifier's own input: example 01's system and projections, no minimisation step.
A=$VARIANT_ALAT
cat >"$SCRATCH/iter0/gaas.win" <<WIN
! verifier: GaAs of example 01 on the cell and iterations the controller drew
num_wann = 4
num_iter = $VARIANT_NUM_ITER
wvfn_formatted = .true.
begin unit_cell_cart
bohr
-$A  0.000  $A
 0.000  $A  $A
-$A  $A  0.000
end unit_cell_cart
begin atoms_frac
Ga 0.00 0.00 0.00
As 0.25 0.25 0.25
end atoms_frac
begin projections
As:sp3
end projections
mp_grid : 2 2 2
begin kpoints
0.0 0.0 0.0
0.0 0.0 0.5
0.0 0.5 0.0
0.0 0.5 0.5
0.5 0.0 0.0
0.5 0.0 0.5
0.5 0.5 0.0
0.5 0.5 0.5
end kpoints
WIN
for f in gaas.amn gaas.mmn; do
  cp "$EXAMPLE/$f" "$SCRATCH/iter0/$f" 2>/dev/null
done
run iter0 3
