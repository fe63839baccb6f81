# Layer 2 experiment of openfoam_github25 (hidden from the agent), after experiment_lib.sh.
#
# Uses the OpenFOAM the agent built in the workdir (platforms/<options>/bin/foamRun and its
# lib/), with an environment of the verifier's own instead of etc/bashrc (whose handling of the
# checkout's name the agent may have solved in any way): WM_PROJECT_DIR=$WORKDIR, the build's
# bin/ first on PATH and its lib/, lib/openmpi-system and lib/dummy on LD_LIBRARY_PATH, which is
# what etc/bashrc sets for a serial run. As the owner of WORKDIR it runs blockMesh and foamRun on
# a copy of the cavity tutorial whose mesh size the verifier picks now (N x N cells, N from 12 to
# 28) and whose run is shortened to t = 0.25 (deltaT 0.0025, 100 steps). Collects the logs, the
# cell count blockMesh reports beside the expected one, and the listing of the last time folder;
# checks.yaml judges them on the controller. N is the controller's draw ($VARIANT_CELLS): the
# Courant numbers foamRun prints at the last step are what only the real solver gives for it
# (compared with the operator's bank), and string literals of foamRun.C and blockMesh.C are
# looked for in the two programs (a launcher of a script has none). RUNBOOK.MD is never read.
{
  for f in "$WORKDIR"/platforms/*/bin/foamRun "$WORKDIR"/platforms/*/bin/blockMesh; do
    [ -e "$f" ] || continue
    echo "== $f"
    [ -f "$f" ] && [ ! -L "$f" ] && echo "regular: yes" || echo "regular: no"
    echo "magic: $(head -c4 "$f" | od -An -tx1 | tr -d ' \n')"
  done
  ls -d "$WORKDIR"/platforms/*/lib/libfiniteVolume.so 2>/dev/null | sed 's/^/library: /'
  # String literals of foamRun.C and blockMesh.C at the pinned commit, compiled into each.
  f=$(ls -d "$WORKDIR"/platforms/*/bin/foamRun 2>/dev/null | head -n1)
  lit="solver not specified in the controlDict or on the command-line"
  has_text "$f" "$lit" && echo "foamRun string '$lit': yes" || echo "foamRun string '$lit': no"
  f=$(ls -d "$WORKDIR"/platforms/*/bin/blockMesh 2>/dev/null | head -n1)
  for lit in "Dumping block structure as Lightwave obj format" "write block edges and centres as .obj files"; do
    has_text "$f" "$lit" && echo "blockMesh string '$lit': yes" || echo "blockMesh string '$lit': no"
  done
} >"$LOG_DIR/build.txt" 2>&1
cp "$LOG_DIR/build.txt" "$LOG_DIR/01_build.log"

N=${VARIANT_CELLS:-$(($(rand_below 17) + 12))}
echo "nCells: $((N * N))" >"$LOG_DIR/expected_cells.txt"
PLAT=$(ls -d "$WORKDIR"/platforms/*/bin/foamRun 2>/dev/null | head -n1)
PLAT=${PLAT%/bin/foamRun}
CASE="$SCRATCH/cavity"
cp -r "$WORKDIR/tutorials/incompressibleFluid/cavity" "$CASE" 2>/dev/null
sed -i "s/(20 20 1)/($N $N 1)/" "$CASE/system/blockMeshDict" 2>/dev/null
sed -i -e 's/^endTime .*/endTime         0.25;/' -e 's/^deltaT .*/deltaT          0.0025;/' \
  -e 's/^writeInterval .*/writeInterval   20;/' "$CASE/system/controlDict" 2>/dev/null
grep -E '^(endTime|deltaT|writeInterval)' "$CASE/system/controlDict" >"$LOG_DIR/case.txt" 2>&1
grep 'hex' "$CASE/system/blockMeshDict" >>"$LOG_DIR/case.txt" 2>&1
chown -R "$OWNER" "$SCRATCH"

cat >"$SCRATCH/run.sh" <<RUN
export WM_PROJECT=OpenFOAM WM_PROJECT_VERSION=13 WM_PROJECT_DIR="$WORKDIR"
export FOAM_APPBIN="$PLAT/bin" FOAM_LIBBIN="$PLAT/lib" FOAM_MPI=openmpi-system
export PATH="$PLAT/bin:\$PATH"
export LD_LIBRARY_PATH="$PLAT/lib/openmpi-system:$PLAT/lib:$PLAT/lib/dummy"
cd "$CASE" || exit 2
blockMesh > log.blockMesh 2>&1 || exit 3
foamRun > log.foamRun 2>&1
RUN
chmod 644 "$SCRATCH/run.sh"
{
  echo "== experiment: blockMesh and foamRun on a ${N}x${N} cavity"
  cd "$SCRATCH" && rc_of cavity as_owner timeout 600 sh "$SCRATCH/run.sh"
  echo "exit code: $(cat "$LOG_DIR/cavity.rc")"
  tail -n 20 "$CASE/log.foamRun" 2>/dev/null
} >"$LOG_DIR/02_cavity.log" 2>&1
collect "$CASE/log.blockMesh" blockMesh.txt
collect "$CASE/log.foamRun" foamRun.txt
grep -E '^ *nCells: ' "$CASE/log.blockMesh" 2>/dev/null | tr -d ' ' | sed 's/:/: /' \
  >"$LOG_DIR/cells.txt"
ls -1 "$CASE" >"$LOG_DIR/case.files" 2>&1
ls -1 "$CASE/0.25" >"$LOG_DIR/last_time.files" 2>&1
