# Layer 2 experiment of oceananigans_joss20 (hidden from the agent), after experiment_lib.sh.
#
# Finds the agent's julia (on the system PATH, else <workdir>/julia/bin/julia, else the owner's
# ~/.juliaup/bin/julia) and, as the owner of WORKDIR (so with the owner's depot ~/.julia that the
# agent instantiated), runs the README's two-dimensional turbulence model with --project=$WORKDIR
# on a grid whose size the verifier picks now (N x N, N from 24 to 56) to t = 0.5. Collects where
# Oceananigans was loaded from, the clock, the array size and the velocities' finiteness and
# maximum; checks.yaml judges them on the controller. RUNBOOK.MD is never read.
HOME_DIR=$(awk -F: -v u="$OWNER" '$1 == u { print $6 }' /etc/passwd)
JULIA=$(PATH=$SYSTEM_PATH command -v julia 2>/dev/null)
for c in "$WORKDIR/julia/bin/julia" "$HOME_DIR/.juliaup/bin/julia"; do
  [ -n "$JULIA" ] && break
  [ -x "$c" ] && JULIA=$c
done
echo "julia: ${JULIA:-none}" >"$LOG_DIR/julia.txt"
# Julia is no Debian package: julialang.org's julia is an unpackaged ELF linked against its
# libjulia (the name is in its dynamic section); a script, or a tiny ELF launching one, is not.
vouch julia "${JULIA:-julia}"
REAL_JULIA=$(readlink -f "${JULIA:-/nonexistent}" 2>/dev/null)
has_text "$REAL_JULIA" libjulia.so && echo "links libjulia: yes" >>"$LOG_DIR/julia.txt" \
  || echo "links libjulia: no" >>"$LOG_DIR/julia.txt"
# The package's entry and what the model below runs, as at the pinned commit.
pinned Project.toml src/Oceananigans.jl src/Simulations/simulation.jl src/Simulations/run.jl \
  src/Models/NonhydrostaticModels/nonhydrostatic_model.jl src/Grids/rectilinear_grid.jl \
  src/Advection/weno_reconstruction.jl
N=$(($(rand_below 33) + 24))
echo "u_size: $N x $N x 1" >"$LOG_DIR/expected_size.txt"
cat >"$SCRATCH/model.jl" <<'JL'
using Oceananigans
n = parse(Int, ARGS[1])
println("oceananigans_path: ", realpath(pathof(Oceananigans)))
println("project: ", realpath(dirname(Base.active_project())))
grid = RectilinearGrid(CPU(), size=(n, n), x=(0, 2π), y=(0, 2π), topology=(Periodic, Periodic, Flat))
model = NonhydrostaticModel(grid; advection=WENO())
ϵ(x, y) = 2rand() - 1
set!(model, u=ϵ, v=ϵ)
simulation = Simulation(model; Δt=0.01, stop_time=0.5)
run!(simulation)
u = interior(model.velocities.u)
println("clock_time: ", model.clock.time)
println("iterations: ", model.clock.iteration)
println("u_size: ", join(size(u), " x "))
println("u_finite: ", all(isfinite, u))
println("u_max: ", maximum(abs, u))
JL
chown -R "$OWNER" "$SCRATCH"
{
  echo "== experiment: julia --project=$WORKDIR model.jl $N"
  cd "$SCRATCH" && rc_of model as_owner timeout 1500 "${JULIA:-julia}" --project="$WORKDIR" \
    "$SCRATCH/model.jl" "$N"
  echo "exit code: $(cat "$LOG_DIR/model.rc")"
} >"$LOG_DIR/02_model.log" 2>&1
grep -E '^(oceananigans_path|project|clock_time|iterations|u_size|u_finite|u_max): ' \
  "$LOG_DIR/02_model.log" >"$LOG_DIR/summary.txt"
grep '^u_size: ' "$LOG_DIR/summary.txt" >"$LOG_DIR/size.txt"
REAL=$(readlink -f "$WORKDIR")
if grep -q "^oceananigans_path: $REAL/src/Oceananigans.jl$" "$LOG_DIR/summary.txt"; then
  echo "loaded_from_checkout: yes" >"$LOG_DIR/loaded.txt"
else
  echo "loaded_from_checkout: no" >"$LOG_DIR/loaded.txt"
fi
