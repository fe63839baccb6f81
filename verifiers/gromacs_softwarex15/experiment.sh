# Layer 2 experiment of gromacs_softwarex15 (hidden from the agent), after experiment_lib.sh.
#
# Finds the gmx the agent built (<workdir>/install/bin/gmx, else <workdir>/build/bin/gmx, else
# the first gmx found up to four levels below the workdir), then, as the owner of WORKDIR, builds
# a water box of an edge the controller drew ($VARIANT_EDGE, 2.2 to 2.9 nm, so no recorded output
# fits; the waters solvate places for it are compared with the operator's bank of real runs),
# writes the topology with the number of waters solvate placed, relaxes the box with a short
# steepest-descent minimisation (solvate leaves overlapping waters at some edges, which blow up
# an unminimised md: seen at 3 of 24 edges with Debian's gmx 2022.5), runs grompp and a
# 1000-step PME mdrun from the minimised frame, and reads the average potential energy with gmx
# energy. Collects the log, the energy
# table and the facts (waters, atoms in the final frame, potential per water); checks.yaml
# judges them on the controller. RUNBOOK.MD is never read. The gmx found is only a launcher of
# libgromacs (built shared by default): string literals of solvate.cpp are looked for in the
# library beside it (or in gmx, for a static build), which a stub ELF or a wrapper lacks, and
# the sources and force-field files the run reads are pinned.
BIN=""
for c in "$WORKDIR/install/bin/gmx" "$WORKDIR/build/bin/gmx"; do
  if [ -f "$c" ]; then BIN=$c; break; fi
done
if [ -z "$BIN" ]; then
  BIN=$(find "$WORKDIR" -maxdepth 4 -name gmx -type f 2>/dev/null | sort | head -n1)
fi
{
  echo "== binary: ${BIN:-none}"
  [ -n "$BIN" ] && [ -f "$BIN" ] && [ ! -L "$BIN" ] && echo "regular: yes" || echo "regular: no"
  [ -n "$BIN" ] && [ -x "$BIN" ] && echo "executable: yes" || echo "executable: no"
  echo "magic: $(head -c4 "$BIN" 2>/dev/null | od -An -tx1 | tr -d ' \n')"
  # The library the build installs or leaves beside bin/ (lib or lib64), else gmx itself.
  LIB=""
  [ -n "$BIN" ] && LIB=$(find "$(dirname "$BIN")/.." -maxdepth 2 -name 'libgromacs*.so*' -type f \
    2>/dev/null | sort | head -n1)
  # Counted only when the library is an ELF that gmx names (its DT_NEEDED string).
  if [ -n "$LIB" ] && [ "$(head -c4 "$LIB" | od -An -tx1 | tr -d ' \n')" = 7f454c46 ] &&
    has_text "$BIN" libgromacs; then
    echo "library: yes"
  else
    LIB=""
    echo "library: no"
  fi
  # Literals of solvate.cpp and the version the build's CMake compiles in (Debian's
  # libgromacs, copied beside a wrapper, says 2022.5).
  for lit in "Number of solvent molecules:  %5d" "These coordinates can also be used" \
    "2027.0-dev"; do
    if [ -n "$LIB" ] && has_text "$LIB" "$lit"; then
      echo "string '$lit': lib"
    elif [ -n "$BIN" ] && has_text "$BIN" "$lit"; then
      echo "string '$lit': gmx"
    else
      echo "string '$lit': no"
    fi
  done
} >"$LOG_DIR/binary.txt" 2>&1
cp "$LOG_DIR/binary.txt" "$LOG_DIR/01_binary.log"
pinned src/programs/gmx.cpp src/gromacs/gmxpreprocess/solvate.cpp share/top/spc216.gro \
  share/top/oplsaa.ff/spc.itp
# gmx finds spc216.gro and oplsaa.ff itself (share/gromacs/top beside an installed bin/, the
# source tree's share/top for build/bin/gmx).
BIN=${BIN:-$WORKDIR/install/bin/gmx}

as_owner timeout 60 "$BIN" --version >"$LOG_DIR/version.txt" 2>&1

# The hidden input: the box edge in nm, the controller's draw (variants in checks.yaml).
EDGE=${VARIANT_EDGE:-2.62}
RUN="$SCRATCH/run"
mkdir -p "$RUN"
cat >"$RUN/em.mdp" <<'MDP'
integrator      = steep
emtol           = 1000
nsteps          = 500
cutoff-scheme   = Verlet
coulombtype     = PME
rcoulomb        = 1.0
rvdw            = 1.0
MDP
cat >"$RUN/md.mdp" <<'MDP'
integrator      = md
dt              = 0.002
nsteps          = 1000
nstenergy       = 50
nstlog          = 250
cutoff-scheme   = Verlet
coulombtype     = PME
rcoulomb        = 1.0
rvdw            = 1.0
tcoupl          = v-rescale
tc-grps         = System
tau_t           = 0.1
ref_t           = 300
gen_vel         = yes
gen_temp        = 300
gen_seed        = 1993
constraints     = h-bonds
MDP
chown -R "$OWNER" "$SCRATCH"
{
  echo "== solvate: box $EDGE nm"
  cd "$RUN" && rc_of solvate as_owner timeout 120 "$BIN" solvate -cs spc216.gro \
    -box "$EDGE" "$EDGE" "$EDGE" -o water.gro
} >"$LOG_DIR/02_solvate.log" 2>&1
SOL=$(sed -n 's/.*Number of solvent molecules: *\([0-9][0-9]*\).*/\1/p' "$LOG_DIR/02_solvate.log" | tail -n1)
cat >"$RUN/topol.top" <<TOP
#include "oplsaa.ff/forcefield.itp"
#include "oplsaa.ff/spc.itp"

[ system ]
verifier water box

[ molecules ]
SOL ${SOL:-0}
TOP
chown -R "$OWNER" "$RUN"
{
  echo "== grompp (minimisation)"
  cd "$RUN" && rc_of em_grompp as_owner timeout 120 "$BIN" grompp -f em.mdp -c water.gro \
    -p topol.top -o em.tpr
  echo "== mdrun (steepest descent, at most 500 steps)"
  cd "$RUN" && rc_of em_mdrun as_owner timeout 300 "$BIN" mdrun -deffnm em -ntmpi 1 -ntomp 2
} >"$LOG_DIR/03_minimise.log" 2>&1
{
  echo "== grompp"
  cd "$RUN" && rc_of grompp as_owner timeout 120 "$BIN" grompp -f md.mdp -c em.gro \
    -p topol.top -o bench.tpr
} >"$LOG_DIR/03_grompp.log" 2>&1
{
  echo "== mdrun -nsteps 1000"
  cd "$RUN" && rc_of mdrun as_owner timeout 900 "$BIN" mdrun -deffnm bench -ntmpi 1 -ntomp 2
} >"$LOG_DIR/04_mdrun.log" 2>&1
collect "$RUN/bench.log" bench.log
{
  echo "== energy"
  cd "$RUN" && echo Potential | rc_of energy as_owner timeout 120 "$BIN" energy -f bench.edr \
    -o potential.xvg
} >"$LOG_DIR/05_energy.log" 2>&1
ls -1 "$RUN" >"$LOG_DIR/run.files" 2>&1

# Facts for the checks: waters placed, atoms in the final frame (3 per SPC water), the average
# potential energy per water (liquid SPC at 300 K: about -41 kJ/mol).
{
  echo "edge_nm: $EDGE"
  echo "waters: ${SOL:-0}"
  ATOMS=$(sed -n '2p' "$RUN/bench.gro" 2>/dev/null | tr -d ' ')
  echo "final_atoms: ${ATOMS:-0}"
  if [ -n "$SOL" ] && [ "${ATOMS:-0}" = "$((SOL * 3))" ]; then
    echo "atoms_match: yes"
  else
    echo "atoms_match: no"
  fi
  POT=$(awk '$1 == "Potential" { print $2 }' "$LOG_DIR/05_energy.log" | tail -n1)
  if [ -n "$POT" ] && [ -n "$SOL" ] && [ "$SOL" -gt 0 ]; then
    echo "potential_per_water: $(awk -v p="$POT" -v n="$SOL" 'BEGIN { printf "%.3f", p / n }')"
  else
    echo "potential_per_water: none"
  fi
} >"$LOG_DIR/facts.txt" 2>&1
