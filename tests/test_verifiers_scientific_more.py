"""Verifiers of seurat_cell21 and the other scientific tasks of issue C3 (TASKS below): their checks
judged on recorded final states (tests/fixtures/verifier_states/<id>/{pass,untouched, shallow}/,
each with a README saying how it was made: seurat's and gromacs's from real runs here, the others'
pass states by hand), the machine side run on this host against cheating workdirs (what every
verifier and reference role must have is tested in test_verifiers_all.py)."""

import re
import shutil

import pytest
import yaml

from deploybench.catalog import checks
from deploybench.verify import verification
from tests.conftest import REPO
from tests.verifier_states import (
    STATES,
    copy_state,
    edit,
    failed,
    judged,
    run_experiment,
)

TASKS = [
    "seurat_cell21",
    "gromacs_softwarex15",
    "openfoam_github25",
    "kaldi_asru11",
    "oceananigans_joss20",
    "jitterbug_osdi20",
    "storm_osdi21",
    "rudra_sosp21",
    "uslope_osdi24",
]
# What a verifier cut down to "the entry point exists" would still ask.
ENTRY_POINT_EXISTS = {
    "seurat_cell21": {"file": "02_workflow.log", "pattern": r"^== experiment: Rscript "},
    "gromacs_softwarex15": {"file": "binary.txt", "pattern": "^regular: yes$"},
    "openfoam_github25": {"file": "build.txt", "pattern": r"^== .*/bin/foamRun$"},
    "kaldi_asru11": {"file": "02_recipe.log", "pattern": "^exit code: 0$"},
    "oceananigans_joss20": {"file": "julia.txt", "pattern": "^julia: /"},
    "jitterbug_osdi20": {"file": "raco.txt", "pattern": "^raco: /"},
    "storm_osdi21": {"file": "stack.txt", "pattern": "^stack: /"},
    "rudra_sosp21": {"file": "binaries.txt", "pattern": "^== cargo-rudra\\nregular: yes$"},
    "uslope_osdi24": {"file": "binary.txt", "pattern": "^regular: yes$"},
}
# What each shallow state fails on.
SHALLOW_FAILS_ON = {
    "seurat_cell21": ["built_from_the_checkout"],
    "gromacs_softwarex15": [
        "binary_built",
        "binary_holds_source_strings",
        "final_frame_has_every_atom",
        "potential_per_water",
        "waters_for_the_hidden_box",
    ],
    "openfoam_github25": [
        "hidden_mesh_size",
        "library_built",
        "programs_hold_source_strings",
        "solver_built",
    ],
    "kaldi_asru11": [
        "binaries_built",
        "binaries_hold_source_strings",
        "hidden_test_set_decoded",
        "pinned_sources",
        "shared_library_built",
    ],
    "oceananigans_joss20": [
        "hidden_grid_size",
        "julia_links_libjulia",
        "julia_vouched",
        "loaded_from_checkout",
    ],
    "jitterbug_osdi20": [
        "bug_found",
        "bug_one_failure",
        "racket_runtime_symbols",
        "racket_vouched",
    ],
    "storm_osdi21": [
        "bug_build_fails",
        "bug_found",
        "stack_is_a_haskell_program",
        "stack_vouched",
    ],
    "rudra_sosp21": [
        "cargo_rudra_holds_source_strings",
        "hidden_bugs_reported",
        "rudra_holds_source_strings",
        "rudra_installed",
    ],
    "uslope_osdi24": [
        "archive_is_clp_s",
        "archives_smaller",
        "binary_built",
        "clp_s_source_strings",
        "search_only_matches",
    ],
}


@pytest.mark.parametrize("task_id", TASKS)
def test_checks_weakened_to_the_entry_point_exists_pass_the_shallow_state(task_id):
    # The shallow states have their entry point: a verifier cut down to "it exists" would pass
    # them, and test_recorded_failing_states_fail would then fail.
    weak = [{"name": "entry_point_exists", "kind": "contains", **ENTRY_POINT_EXISTS[task_id]}]
    assert all(r["passed"] for r in checks.judge_all(weak, STATES / task_id / "shallow"))
    assert all(r["passed"] for r in checks.judge_all(weak, STATES / task_id / "pass"))
    verdict = verification.verdict_from_logs(STATES / task_id / "shallow", 1.0, weak)
    assert verdict["layer2"]["passed"] is True


@pytest.mark.parametrize("task_id", TASKS)
def test_shallow_states_fail_on_what_makes_them_shallow(task_id):
    assert failed(judged(task_id, STATES / task_id / "shallow")) == SHALLOW_FAILS_ON[task_id]


def test_seurat_judges_where_seurat_came_from(tmp_path):
    # The distribution's Seurat copied into the workdir: its DESCRIPTION says Repository: CRAN.
    copied = copy_state("seurat_cell21", "pass", tmp_path / "copied")
    edit(copied / "library.txt", "repository_field: none", "repository_field: Repository: CRAN")
    assert failed(judged("seurat_cell21", copied)) == ["built_from_the_checkout"]
    # R loaded Seurat from /usr/lib/R/site-library, not from the agent's library.
    system = copy_state("seurat_cell21", "pass", tmp_path / "system")
    edit(system / "loaded.txt", "loaded_from_agent_library: yes", "loaded_from_agent_library: no")
    assert failed(judged("seurat_cell21", system)) == ["loaded_from_agent_library"]
    # Seurat 5 with SeuratObject 5 (what CRAN serves today).
    v5 = copy_state("seurat_cell21", "pass", tmp_path / "v5")
    edit(v5 / "summary.txt", "seurat_version: 4.3.0", "seurat_version: 5.1.0")
    edit(v5 / "summary.txt", "seuratobject_version: 4.1.3", "seuratobject_version: 5.0.2")
    assert failed(judged("seurat_cell21", v5)) == ["seurat_version", "seuratobject_v4"]


def test_seurat_judges_the_hidden_subset_and_the_clusters(tmp_path):
    # A canned result of the full 80 cells, not of the subset the verifier picked.
    canned = copy_state("seurat_cell21", "pass", tmp_path / "canned")
    (canned / "cells.txt").write_text("cells: 80\n")
    assert failed(judged("seurat_cell21", canned)) == ["hidden_subset_used"]
    # One cluster only (a graph that joins every cell).
    one = copy_state("seurat_cell21", "pass", tmp_path / "one")
    text = (one / "summary.txt").read_text()
    (one / "summary.txt").write_text(re.sub(r"(?m)^wsnn_clusters: \d+$", "wsnn_clusters: 1", text))
    assert failed(judged("seurat_cell21", one)) == ["wsnn_clusters"]
    # No UMAP computed.
    no_umap = copy_state("seurat_cell21", "pass", tmp_path / "no_umap")
    edit(no_umap / "summary.txt", "reductions: pca apca umap", "reductions: pca apca")
    assert "umap_reduction" in failed(judged("seurat_cell21", no_umap))


def test_seurat_fake_library_fails_on_this_host(tmp_path):
    # An "installed" Seurat that is only files: a DESCRIPTION copied from a CRAN build, an empty
    # Meta/package.rds and a shell script as Seurat.so. Whether or not R is on this host, the
    # verifier's run cannot load it from the agent's library.
    lib = tmp_path / "wd" / "Rlib" / "Seurat"
    (lib / "Meta").mkdir(parents=True)
    (lib / "libs").mkdir()
    (lib / "DESCRIPTION").write_text("Package: Seurat\nVersion: 4.3.0\nRepository: CRAN\n")
    (lib / "Meta" / "package.rds").write_bytes(b"")
    (lib / "libs" / "Seurat.so").write_text("#!/bin/sh\n")
    verdict = run_experiment("seurat_cell21", tmp_path / "wd", tmp_path / "logs")
    assert verdict["passed"] is False
    # (With R and Debian's Seurat on the host, R skips the broken package and loads the
    # distribution's: the workflow runs, but not from the agent's library.)
    assert {
        "compiled_here",
        "built_from_the_checkout",
        "loaded_from_agent_library",
    } <= set(failed(verdict["layer2"]["checks"]))
    assert "in_workdir: yes" in (tmp_path / "logs" / "library.txt").read_text()


def test_gromacs_stub_binary_fails_on_this_host(tmp_path):
    # A gmx that is a script: it prints the right banner and writes a bench.log with a
    # Performance line, so the version and log checks pass; the physics does not.
    gmx = tmp_path / "wd" / "install" / "bin" / "gmx"
    gmx.parent.mkdir(parents=True)
    gmx.write_text(
        "#!/bin/sh\n"
        'case "$1" in\n'
        "  --version) printf 'GROMACS version:    2027.0-dev\\n"
        "GPU support:        disabled\\n' ;;\n"
        "  mdrun) printf 'Performance:       41.9        0.57\\n"
        "Finished mdrun on rank 0 Tue Dec  1 21:00:00 2026\\n' > bench.log ;;\n"
        "esac\n"
    )
    gmx.chmod(0o755)
    verdict = run_experiment("gromacs_softwarex15", tmp_path / "wd", tmp_path / "logs")
    assert verdict["passed"] is False
    # Its workdir holds no checkout, so the pinned sources are missing too.
    expected = sorted(SHALLOW_FAILS_ON["gromacs_softwarex15"] + ["pinned_sources"])
    assert failed(verdict["layer2"]["checks"]) == expected


def test_gromacs_judges_the_energy(tmp_path):
    hot = copy_state("gromacs_softwarex15", "pass", tmp_path / "hot")
    edit(hot / "facts.txt", "potential_per_water: -40.994", "potential_per_water: -12.030")
    assert failed(judged("gromacs_softwarex15", hot)) == ["potential_per_water"]
    gpu = copy_state("gromacs_softwarex15", "pass", tmp_path / "gpu")
    edit(gpu / "version.txt", "GPU support:         disabled", "GPU support:         CUDA")
    assert failed(judged("gromacs_softwarex15", gpu)) == ["cpu_only_build"]
    packaged = copy_state("gromacs_softwarex15", "pass", tmp_path / "packaged")
    edit(packaged / "version.txt", "GROMACS version:     2027.0-dev", "GROMACS version:     2022.5")
    assert failed(judged("gromacs_softwarex15", packaged)) == ["built_version"]


@pytest.mark.slow
def test_gromacs_experiment_with_a_real_gmx_judges_the_physics(tmp_path):
    # Debian's gmx 2022.5 is a real GROMACS, not this commit's build: the experiment runs it
    # end to end (solvate, minimisation, md, energy) under the trusted shell, and every check
    # but the version passes. This is the physics path the hand-made pass state cannot test.
    gmx = shutil.which("gmx")
    assert gmx, "Debian's gromacs is a test dependency (.ci/apt-packages.txt)"
    binary = tmp_path / "wd" / "install" / "bin" / "gmx"
    binary.parent.mkdir(parents=True)
    shutil.copy(gmx, binary)
    verdict = run_experiment("gromacs_softwarex15", tmp_path / "wd", tmp_path / "logs")
    # potential_per_water among the passing checks: the energy is in checks.yaml's band. Not
    # the checkout's build: no libgromacs of 2027.0-dev beside it, no pinned sources.
    assert failed(verdict["layer2"]["checks"]) == [
        "binary_holds_source_strings",
        "built_version",
        "pinned_sources",
    ]


def test_openfoam_judges_the_run(tmp_path):
    unfinished = copy_state("openfoam_github25", "pass", tmp_path / "unfinished")
    edit(unfinished / "foamRun.txt", "Time = 0.25s", "Time = 0.125s")
    assert failed(judged("openfoam_github25", unfinished)) == ["reached_end_time"]
    diverged = copy_state("openfoam_github25", "pass", tmp_path / "diverged")
    edit(diverged / "foamRun.txt", "sum local = 4.29311e-09", "sum local = 3.1e+02")
    edit(diverged / "foamRun.txt", "max: 0.585607", "max: 48.2")
    assert failed(judged("openfoam_github25", diverged)) == [
        "continuity_small",
        "courant_plausible",
    ]
    other = copy_state("openfoam_github25", "pass", tmp_path / "other")
    edit(other / "foamRun.txt", "Version:  13", "Version:  12")
    assert failed(judged("openfoam_github25", other)) == ["version_13"]


def test_openfoam_role_patch_matches_the_pinned_foametcfile():
    # The role's replace task must match bin/foamEtcFile as the repository has it at the pin (the
    # block is copied here from that file) and turn it into the WM_PROJECT_VERSION fallback.
    tasks = yaml.safe_load(
        (REPO / "reference_setups" / "openfoam_github25" / "tasks" / "main.yml").read_text()
    )
    (task,) = [t for t in tasks if "ansible.builtin.replace" in t]
    spec = task["ansible.builtin.replace"]
    original = (
        "        app) # flatpak naming convention\n"
        '            version="${FLATPAK_ID##OpenFOAM-}"\n'
        "            ;;\n"
        "        *)\n"
        '            echo "Error : unknown/unsupported naming convention"\n'
        "            exit 1\n"
        "            ;;\n"
        "esac\n"
    )
    patched, count = re.subn(spec["regexp"], spec["replace"], original, flags=re.MULTILINE)
    assert count == 1
    assert 'version="$WM_PROJECT_VERSION"' in patched
    assert "        *)\n" in patched and patched.endswith("            ;;\nesac\n")
    assert re.subn(spec["regexp"], spec["replace"], patched, flags=re.MULTILINE)[1] == 0


def test_kaldi_judges_the_wer(tmp_path):
    untrained = copy_state("kaldi_asru11", "pass", tmp_path / "untrained")
    edit(
        untrained / "best_wer.txt",
        "%WER 0.00 [ 0 / 224, 0 ins, 0 del, 0 sub ]",
        "%WER 48.21 [ 108 / 224, 0 ins, 0 del, 108 sub ]",
    )
    assert failed(judged("kaldi_asru11", untrained)) == ["best_wer_low"]
    canned = copy_state("kaldi_asru11", "pass", tmp_path / "canned")
    (canned / "reported_words.txt").write_text("test_words: 232\n")
    assert failed(judged("kaldi_asru11", canned)) == ["hidden_test_set_decoded"]


def test_oceananigans_judges_the_simulation(tmp_path):
    blown = copy_state("oceananigans_joss20", "pass", tmp_path / "blown")
    edit(blown / "summary.txt", "u_finite: true", "u_finite: false")
    edit(blown / "summary.txt", "u_max: 0.8412", "u_max: NaN")
    assert failed(judged("oceananigans_joss20", blown)) == [
        "velocities_bounded",
        "velocities_finite",
    ]
    short = copy_state("oceananigans_joss20", "pass", tmp_path / "short")
    edit(short / "summary.txt", "clock_time: 0.5000000000000002", "clock_time: 0.25")
    edit(short / "summary.txt", "iterations: 50", "iterations: 25")
    assert failed(judged("oceananigans_joss20", short)) == ["clock_at_stop_time", "iterations"]


def test_jitterbug_judges_both_runs(tmp_path):
    # The clean run fails one instruction: the JIT (or the solver setup) is broken.
    broken = copy_state("jitterbug_osdi20", "pass", tmp_path / "broken")
    text = (broken / "clean.txt").read_text()
    text = text.replace("12 success(es) 0 failure(s)", "11 success(es) 1 failure(s)")
    (broken / "clean.txt").write_text(text)
    assert failed(judged("jitterbug_osdi20", broken)) == ["clean_all_verified", "clean_test_count"]
    # The injection did not apply (a changed JIT file): the bug run proves nothing.
    missed = copy_state("jitterbug_osdi20", "pass", tmp_path / "missed")
    (missed / "bug.txt").write_text("bug_injected: no\n")
    assert failed(judged("jitterbug_osdi20", missed)) == ["bug_injected"]


def test_jitterbug_injects_the_ae_guides_bug(tmp_path):
    # The experiment's awk edit against the pinned JIT's SUB X case as the repository has it.
    case = (
        "    [((BPF_ALU BPF_SUB BPF_X)\n"
        "      (BPF_ALU64 BPF_SUB BPF_X))\n"
        "\n"
        "      (if is64\n"
        "        (emit_sub rd rd rs ctx)\n"
        "        (emit_subw rd rd rs ctx))\n"
        "\n"
        "      (PATCH (when (&& (! is64) (! (->prog->aux->verifier_zext ctx)))\n"
        "        (emit_zext_32 rd ctx)))]\n"
        "\n"
        "    [((BPF_ALU BPF_AND BPF_X)\n"
    )
    workdir = tmp_path / "wd"
    (workdir / "racket" / "rv64").mkdir(parents=True)
    (workdir / "racket" / "rv64" / "bpf_jit_comp64.rkt").write_text(case)
    run_experiment("jitterbug_osdi20", workdir, tmp_path / "logs")
    assert (tmp_path / "logs" / "bug.txt").read_text() == "bug_injected: yes\n"
    edited = tmp_path / "logs-scratch" / "bug" / "racket" / "rv64" / "bpf_jit_comp64.rkt"
    assert edited.read_text() == (
        "    [((BPF_ALU BPF_SUB BPF_X)\n"
        "      (BPF_ALU64 BPF_SUB BPF_X))\n"
        "\n"
        "      (if is64\n"
        "        (emit_sub rd rd rs ctx)\n"
        "        (emit_subw rd rd rs ctx))]\n"
        "\n"
        "    [((BPF_ALU BPF_AND BPF_X)\n"
    )


def test_storm_judges_both_builds(tmp_path):
    unsafe = copy_state("storm_osdi21", "pass", tmp_path / "unsafe")
    (unsafe / "counts.txt").write_text("safe_modules: 7\nunsafe_modules: 1\n")
    assert failed(judged("storm_osdi21", unsafe)) == [
        "clean_eight_modules_safe",
        "clean_nothing_unsafe",
    ]
    missed = copy_state("storm_osdi21", "pass", tmp_path / "missed")
    (missed / "bug.txt").write_text("bug_injected: no\n")
    assert failed(judged("storm_osdi21", missed)) == ["bug_injected"]


def test_storm_injects_detailed_mds_bug(tmp_path):
    query = (
        "  friends  <- selectFirst\n"
        "    (   friendshipUser1'\n"
        "    ==. owner\n"
        "    &&: friendshipUser2'\n"
        "    ==. viewerId\n"
        "    &&: friendshipStatus'\n"
        '    ==. "accepted"\n'
        "    )\n"
    )
    source = tmp_path / "wd" / "case-studies" / "wishlist" / "src" / "Controllers"
    source.mkdir(parents=True)
    (source / "Wish.hs").write_text(query)
    run_experiment("storm_osdi21", tmp_path / "wd", tmp_path / "logs")
    assert (tmp_path / "logs" / "bug.txt").read_text() == "bug_injected: yes\n"
    edited = tmp_path / "logs-scratch" / "bug" / "wishlist" / "src" / "Controllers" / "Wish.hs"
    assert edited.read_text() == (
        "  friends  <- selectFirst\n"
        "    (   friendshipUser1'\n"
        "    ==. owner\n"
        "    &&: friendshipUser2'\n"
        "    ==. viewerId\n"
        "    )\n"
    )


def test_rudra_judges_the_reports(tmp_path):
    # A false positive on the safe crate.
    noisy = copy_state("rudra_sosp21", "pass", tmp_path / "noisy")
    text = (noisy / "safe_rudra.txt").read_text()
    text = text.replace(
        "finished\n    Finished",
        "finished\nWarning (UnsafeDataflow:/ReadFlow): Potential unsafe dataflow issue in "
        "`map_6181`\n    Finished",
    )
    (noisy / "safe_rudra.txt").write_text(text)
    assert failed(judged("rudra_sosp21", noisy)) == ["safe_crate_no_dataflow_report"]
    # Only one of the two bugs found.
    half = copy_state("rudra_sosp21", "pass", tmp_path / "half")
    (half / "reports.txt").write_text("dataflow: map_6181\n")
    assert failed(judged("rudra_sosp21", half)) == ["hidden_bugs_reported"]


def test_uslope_judges_the_round_trip(tmp_path):
    lossy = copy_state("uslope_osdi24", "pass", tmp_path / "lossy")
    text = (lossy / "restored.txt").read_text()
    (lossy / "restored.txt").write_text(text.replace("events: ", "events: 1"))
    assert failed(judged("uslope_osdi24", lossy)) == ["decompressed_equals_input"]
    missed = copy_state("uslope_osdi24", "pass", tmp_path / "missed")
    (missed / "matches.txt").write_text("matches: 12\n")
    assert failed(judged("uslope_osdi24", missed)) == ["search_matches"]
