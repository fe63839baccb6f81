# The README's first model (two-dimensional turbulence on the CPU), run with the checkout's
# Oceananigans (julia --project=<workdir>). Usage: julia --project=. readme_model.jl N STOP
using Oceananigans
n = parse(Int, ARGS[1])
stop = parse(Float64, ARGS[2])
println("oceananigans_path: ", pathof(Oceananigans))
grid = RectilinearGrid(CPU(), size=(n, n), x=(0, 2π), y=(0, 2π), topology=(Periodic, Periodic, Flat))
model = NonhydrostaticModel(grid; advection=WENO())
ϵ(x, y) = 2rand() - 1
set!(model, u=ϵ, v=ϵ)
simulation = Simulation(model; Δt=0.01, stop_time=stop)
run!(simulation)
u = interior(model.velocities.u)
println("clock_time: ", model.clock.time)
println("iterations: ", model.clock.iteration)
println("u_size: ", join(size(u), " x "))
println("u_finite: ", all(isfinite, u))
println("u_max: ", maximum(abs, u))
