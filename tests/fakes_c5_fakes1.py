"""Fakes an attacker who has read verifiers/ would leave for karousos_eurosys24,
openfoam_github25, orbit_osdi22, rudra_sosp21 and polyjuice_osdi21 (helper group c5-fakes1),
built for real on this host (tests/fakes.py) and played by tests/test_verifier_fakes.py's one
test against the real machine side: each must fail on a check whose `defeats` names that fake
kind, and AIMED names the check each was built to meet. The bank variants here are the tests'
own: their expected values are made up (no real run's), so a fake that prints a formula's value
or echoes its input cannot match them.

Where an experiment looks outside the workdir, the fake is left there as an attacker with root
would leave it, and the run sees it through a mount namespace of its own (run_experiment's
BINDS, util-linux's unshare): the test's folder is bound over the machine's folder, the host's
stays untouched. So:
- rudra_sosp21 looks for cargo-rudra and rudra in the owner's ~/.cargo/bin; the owner here is
  root, whose home /root is bound to the test's folder (with its own cargo, which an attacker
  leaves beside the stubs: rustup's proxy is not on this host).
- orbit_osdi22 boots kernel/bzImage-ddcd247b with the system's qemu-system-x86_64, which this
  host lacks (no QEMU here, and no orbit kernel: its build takes hours). The closest real run is
  the attacker's own: a fake qemu in /usr/local/bin (first on the system PATH), bound to the
  test's folder, that reads the verifier's run script off the ext2 disk the experiment really
  makes and loop-mounts (busybox mke2fs, mount -o loop: both work here as root) and prints the
  serial lines it asks for. What a real QEMU would boot is not run.
- karousos_eurosys24's node is the one on the system PATH: the stub interpreter is a script in a
  bound /usr/local/bin. The rest of Karousos (MySQL 8.0.19, Node 12.16.1, wrk) is not on this
  host; the fakes stand in for all of it.
- openfoam_github25's programs are the workdir's (OpenFOAM-13's build takes hours here)."""

import os
import pwd

from tests.fakes import script, stub_elf, tree
from tests.fakes_c5_sys37 import KAR_SERVER, KAR_VERIFIER, POLYJUICE_VARIANT, bzimage, prog

# ---- polyjuice_osdi21 ------------------------------------------------------------------------
# dbtest printing what TPC-C's rules give for the drawn scale: 3,000 orders per district, ten
# districts a warehouse, 5 to 15 order lines each (10 on average), and the stock and warehouses.
DBTEST_BY_THE_RULES = """
while [ $# -gt 0 ]; do case "$1" in --scale-factor) sf=$2;; --runtime) rt=$2;; esac; shift; done
{
  echo "  db-type     : ndb-ic3"
  echo "  scale       : $sf"
  echo "[INFO] finished loading stock"
  echo "table order_line_0 size $((sf * 300000))"
  echo "table stock_0 size $((sf * 100000))"
  echo "table warehouse_0 size $sf"
  echo "--- benchmark statistics ---"
  echo "runtime: $rt.001 sec"
  echo "table oorder_0 size 99 (+1234 records)"
} >&2
echo "RESULT throughput(45678.9),agg_abort_rate(0.01)"
"""


def polyjuice_by_the_rules(tmp_path):
    workdir = tree(tmp_path / "wd", {"ae-tpcc-polyjuice/training/input-RL-occ-tpcc.txt": "0\n"})
    stub_elf(workdir / "ae-tpcc-polyjuice/out-perf.masstree/benchmarks/dbtest", DBTEST_BY_THE_RULES)
    return workdir


# ---- karousos_eurosys24 ----------------------------------------------------------------------
# The server's script writes the drawn workload's messages into the trace (posted, then read
# back), the verifier's script accepts a trace equal to the copy it kept: no Node, no MySQL.
def karousos_scripts(tmp_path):
    workdir = tree(
        tmp_path / "wd",
        {
            "mysql/bin/mysqld_safe": "#!/bin/sh\nexit 0\n",
            "src/apps/message-prover/index.js": "\n",
            "src/apps/message-verifier/index.js": "\n",
            "src/runServer.sh": "#!/bin/sh\n" + KAR_SERVER,
            "src/runVerifier.sh": "#!/bin/sh\n" + KAR_VERIFIER,
        },
    )
    # mysqld's version line as MySQL prints it, its own path first (a launcher of a script).
    stub_elf(
        workdir / "mysql/bin/mysqld",
        f'echo "{workdir}/mysql/bin/mysqld  Ver 8.0.19 for Linux on x86_64 (Source distribution)"',
    )
    return workdir


def karousos_node_script(tmp_path):
    # ... and a node in /usr/local/bin (first on the system PATH) that says v12.16.1 and hands
    # everything else to the machine's node.
    workdir = karousos_scripts(tmp_path)
    bin_dir = tmp_path / "usr-local-bin"
    script(
        bin_dir / "node",
        'case "$1" in --version|-v) echo v12.16.1; exit 0;; esac\nexec /usr/bin/node "$@"',
    )
    return workdir, {"/usr/local/bin": bin_dir}


# ---- openfoam_github25 -----------------------------------------------------------------------
OPENFOAM_VARIANT = {
    "id": "vtest0052",
    "inputs": {"cells": 17},
    "expected": {"courant_mean": 0.2371, "courant_max": 0.8817},
    "spread": {},
}
PLAT = "platforms/linux64GccDPInt32Opt"
# blockMesh reading the verifier's N back from the dictionary; foamRun printing a Courant number
# worked out from it (lid speed 1 m/s x deltaT / cell width 0.1/N) and writing the last time.
READ_N = r"n=$(sed -n 's/.*hex ([0-9 ]*) (\([0-9]*\) [0-9]* 1).*/\1/p' system/blockMeshDict)"
BLOCKMESH_ECHO = READ_N + '\necho "  nCells: $((n * n))"\necho End\n'
FOAMRUN_LOG = """
cat <<EOF
Version:  13
Selecting solver incompressibleFluid
Courant Number mean: MEAN max: MAX
time step continuity errors : sum local = 3.1e-09, global = 1e-19, cumulative = 1e-18
Time = 0.25s
End
EOF
mkdir -p 0.25 && : > 0.25/U && : > 0.25/p
"""
FOAMRUN_ECHO = (
    READ_N
    + '\nco=$(awk -v n="$n" \'BEGIN { printf "%.6g", 0.0025 * n / 0.1 * 0.9 }\')'
    + "\nmean=$(awk -v c=\"$co\" 'BEGIN { print c / 4 }')"
    + FOAMRUN_LOG.replace("MEAN", "$mean").replace("MAX", "$co")
)
# The tutorial's own 20 x 20 run, as a documented log shows it: the constant.
BLOCKMESH_TUTORIAL = 'echo "  nCells: 400"\necho End\n'
FOAMRUN_TUTORIAL = FOAMRUN_LOG.replace("MEAN", "0.222").replace("MAX", "0.852")


def openfoam(blockmesh, foamrun):
    def build(tmp_path):
        workdir = tree(
            tmp_path / "wd",
            {
                f"{PLAT}/lib/libfiniteVolume.so": "x\n",
                "tutorials/incompressibleFluid/cavity/system/blockMeshDict": (
                    "blocks\n(\n    hex (0 1 2 3 4 5 6 7) (20 20 1) simpleGrading (1 1 1)\n);\n"
                ),
                "tutorials/incompressibleFluid/cavity/system/controlDict": (
                    "endTime         0.5;\ndeltaT          0.005;\nwriteInterval   20;\n"
                ),
            },
        )
        stub_elf(workdir / PLAT / "bin/blockMesh", blockmesh)
        stub_elf(workdir / PLAT / "bin/foamRun", foamrun)
        return workdir

    return build


# ---- rudra_sosp21 ----------------------------------------------------------------------------
# cargo-rudra as grep: on a crate with unsafe code it reports the function that reads through a
# pointer and the struct with an unbounded Sync impl, by the names the verifier drew.
CARGO_RUDRA_GREP = r"""
name=$(sed -n 's/^name = "\(.*\)"/\1/p' Cargo.toml)
echo "[rudra-progress] Running cargo rudra"
echo "[rudra-progress] Running rudra for target lib:$name"
if grep -q 'ptr::read' src/lib.rs; then
  f=$(sed -n 's/^pub fn \(map_[0-9]*\).*/\1/p' src/lib.rs)
  h=$(sed -n 's/^unsafe impl<T> Sync for \(Holder[0-9]*\)<T>.*/\1/p' src/lib.rs)
  echo "Warning (UnsafeDataflow:/ReadFlow): Potential unsafe dataflow issue in \`$f\`"
  echo "Error (SendSyncVariance:/ApiSyncForSync): Suspicious impl of \`Sync\` found"
  echo "unsafe impl<T> Sync for $h<T> {}"
fi
echo "[rudra-progress] cargo rudra finished"
"""


def rudra(elf):
    def build(tmp_path):
        workdir = tree(tmp_path / "wd", {"README.md": "# Rudra\n"})
        # The owner's home as the experiment finds it (/etc/passwd's), bound to this folder.
        home_of_owner = pwd.getpwuid(os.stat(workdir).st_uid).pw_dir
        home = tmp_path / "home"
        bin_dir = home / ".cargo/bin"
        # `cargo rudra` runs cargo-rudra beside it, as cargo does with a subcommand.
        script(bin_dir / "cargo", 'sub=$1; shift; exec "${0%/*}/cargo-$sub" "$@"')
        if elf:
            stub_elf(bin_dir / "cargo-rudra", CARGO_RUDRA_GREP)
            stub_elf(bin_dir / "rudra", "exit 0")
        else:
            script(bin_dir / "cargo-rudra", CARGO_RUDRA_GREP)
            script(bin_dir / "rudra", "exit 0")
        return workdir, {home_of_owner: home}

    return build


# ---- orbit_osdi22 ----------------------------------------------------------------------------
# A QEMU that boots nothing: it reads the verifier's run script off the disk the experiment made
# (debugfs, e2fsprogs'), and writes the serial lines the checks cut: the 5.4.91 banner, the
# marker worked out from the script, the release, three snap rows for each drawn size with a
# time that grows with the size, then exits 0 as a guest powering off does.
QEMU_ECHO = r"""
for a; do
  case "$a" in
    file:*) serial=${a#file:};;
    file=*verifier.img*) disk=${a#file=}; disk=${disk%%,*};;
  esac
done
run=$(/usr/sbin/debugfs -R 'cat /run.sh' "$disk" 2>/dev/null)
set -- $(echo "$run" | sed -n 's/.*orbit-verifier-\$((\([0-9]*\) \* \([0-9]*\))).*/\1 \2/p')
sizes=$(echo "$run" | sed -n 's/^for s in \(.*\); do$/\1/p')
{
  echo "[    0.000000] Linux version 5.4.91+ (builder@host) (gcc version 12.2.0) #1 SMP"
  echo "ORBIT-MARKER orbit-verifier-$(($1 * $2))"
  echo "ORBIT-RELEASE 5.4.91+"
  for s in $sizes; do for i in 1 2 3; do echo "ORBIT-CSV $s,$((s / 8 + 1000 + i))"; done; done
  echo ORBIT-DONE
} > "$serial"
"""


def orbit(elf):
    def build(tmp_path):
        files = {f"kernel/kernel/k{i}.o": "o\n" for i in range(60)}
        files["kernel/.config"] = (
            "CONFIG_MEMCG=y\nCONFIG_CFS_BANDWIDTH=y\n# CONFIG_COMPACTION is not set\n"
        )
        files["kernel/vmlinux"] = "\x7fELF\n"
        workdir = tree(tmp_path / "wd", files)
        bzimage(workdir / "kernel/bzImage-ddcd247b", "5.4.91+")
        image = bytearray(4096)
        image[1080:1082] = b"\x53\xef"  # ext4's magic
        (workdir / "qemu-image.img").write_bytes(bytes(image))
        bin_dir = tmp_path / "usr-local-bin"
        prog(bin_dir / "qemu-system-x86_64", QEMU_ECHO, elf)
        return workdir, {"/usr/local/bin": bin_dir}

    return build


CASES = {  # played by tests/test_verifier_fakes.py's one test
    ("polyjuice_osdi21", "stub_binary"): (polyjuice_by_the_rules, POLYJUICE_VARIANT),
    ("polyjuice_osdi21", "plain_shell"): (polyjuice_by_the_rules, POLYJUICE_VARIANT),
    ("karousos_eurosys24", "plain_shell"): (karousos_scripts, None),
    ("karousos_eurosys24", "echo"): (karousos_scripts, None),
    ("karousos_eurosys24", "stub_binary"): (karousos_scripts, None),
    ("karousos_eurosys24", "stub_interpreter"): (karousos_node_script, None),
    ("openfoam_github25", "echo"): (openfoam(BLOCKMESH_ECHO, FOAMRUN_ECHO), OPENFOAM_VARIANT),
    ("openfoam_github25", "stub_binary"): (
        openfoam(BLOCKMESH_ECHO, FOAMRUN_ECHO),
        OPENFOAM_VARIANT,
    ),
    ("openfoam_github25", "constant"): (
        openfoam(BLOCKMESH_TUTORIAL, FOAMRUN_TUTORIAL),
        OPENFOAM_VARIANT,
    ),
    ("rudra_sosp21", "stub_binary"): (rudra(elf=True), None),
    ("rudra_sosp21", "echo"): (rudra(elf=True), None),
    ("rudra_sosp21", "plain_shell"): (rudra(elf=False), None),
    ("orbit_osdi22", "stub_binary"): (orbit(elf=True), None),
    ("orbit_osdi22", "echo"): (orbit(elf=False), None),
}

# (task, fake) -> the check that fake was built to meet (it must be among its stoppers).
AIMED = {
    ("polyjuice_osdi21", "stub_binary"): "binary_holds_source_strings",
    ("polyjuice_osdi21", "plain_shell"): "variant_loaded_order_lines",
    ("karousos_eurosys24", "plain_shell"): "pinned_sources",
    ("karousos_eurosys24", "echo"): "pinned_sources",
    ("karousos_eurosys24", "stub_binary"): "mysqld_holds_source_strings",
    ("karousos_eurosys24", "stub_interpreter"): "node_vouched",
    ("openfoam_github25", "echo"): "variant_courant_max",
    ("openfoam_github25", "stub_binary"): "programs_hold_source_strings",
    ("openfoam_github25", "constant"): "hidden_mesh_size",
    ("rudra_sosp21", "stub_binary"): "cargo_rudra_holds_source_strings",
    ("rudra_sosp21", "echo"): "rudra_holds_source_strings",
    ("rudra_sosp21", "plain_shell"): "rudra_installed",
    ("orbit_osdi22", "stub_binary"): "qemu_holds_version_text",
    ("orbit_osdi22", "echo"): "qemu_vouched",
}
