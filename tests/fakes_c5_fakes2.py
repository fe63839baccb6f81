"""Fakes an attacker who has read verifiers/ would leave for storm_osdi21, theseus_osdi20 and
uslope_osdi24, built for real on this host (tests/fakes.py); their CASES are played by
tests/test_verifier_fakes.py's one test against the real machine side: each must fail on a check
whose `defeats` names that fake, and on the one it was built to meet (AIMED).

storm_osdi21: `stack`, where the experiment looks it up, prints LiquidHaskell's documented lines
(eight modules SAFE, Controllers.Wish with detailed.md's 1510 constraints) for the clean copy,
and "UNSAFE" with a "Liquid Type Mismatch" when a grep of Wish.hs misses the friendship check
the verifier removes: a shell script (plain_shell: the verification done by grep) or a tiny ELF
launching it (stub_binary). The experiment looks for stack on the machine's system PATH (the
reference installs it in /usr/local/bin), then in the owner's ~/.local/bin: outside every test
folder. The cases run the experiment unchanged in a mount namespace of their own where the
test's folder is bind-mounted on /usr/local/sbin, the first folder of the system PATH (the builder's
binds: run_experiment's `binds`); the host's own folders are not touched.

theseus_osdi20: an image at build/theseus-x86_64.iso with the crate objects touched beside it:
40 kB with CD001 at byte 32769 and no Theseus in it (stub_binary), or a copy of the image the
repository ships prebuilt under osdi20ae/ (replay: an earlier real build's output, here a file
holding the literals a real build's has). No QEMU is installed on this host: the replayed image
passes the literal checks and its boot fails at once (QEMU not found), as the verifier's waits
now stop when QEMU is gone.

uslope_osdi24: clp-s's compress, search and decompress done by gzip and grep (the verifier's
counts are then right by construction) behind a tiny ELF (stub_binary), or behind a tiny ELF with
clp-s's CLI literals appended (plain_shell: what stops it is the archive, a gzip of the input)."""

import os

from tests.fakes import script, stub_elf, tree

# ---- storm_osdi21 -------------------------------------------------------------------------------
WISH_HS = """module Controllers.Wish where

  friends  <- selectFirst
    (   friendshipUser1'
    ==. owner
    &&: friendshipUser2'
    ==. viewerId
    &&: friendshipStatus'
    ==. "accepted"
    )
"""
STORM_MODULES = (
    "Model",
    "Controllers",
    "Controllers.User",
    "Controllers.Wish",
    "Controllers.Invitation",
    "Controllers.Friendship",
    "Frankie.Auth",
    "Server",
)
# The documented output (detailed.md): SAFE everywhere; the bug reported in Wish.hs.
STACK_BODY = (
    """
case "$1" in --version) echo "Version 2.5.1, Git revision d6ab861 x86_64"; exit 0;; esac
if grep -q "friendshipStatus'" src/Controllers/Wish.hs; then
  for m in """
    + " ".join(STORM_MODULES)
    + """; do
    n=532; [ "$m" = Controllers.Wish ] && n=1510
    echo "[3 of 8] Compiling $m ( src/$m.hs, .stack-work/$m.o )"
    echo ""
    echo "**** LIQUID: SAFE ($n constraints checked) *****************************"
  done
  exit 0
fi
echo "[4 of 8] Compiling Controllers.Wish ( src/Controllers/Wish.hs, .stack-work/Wish.o )"
echo ""
echo "**** LIQUID: UNSAFE ************************************************************"
echo ""
echo "$PWD/src/Controllers/Wish.hs:37:5: error:"
echo "    Liquid Type Mismatch"
exit 1
"""
)


def storm(elf):
    def build(tmp_path):
        workdir = tree(tmp_path / "wd", {"case-studies/wishlist/src/Controllers/Wish.hs": WISH_HS})
        sbin = tmp_path / "sbin"
        (stub_elf if elf else script)(sbin / "stack", STACK_BODY)
        os.chmod(tmp_path, 0o755)
        return workdir, {"/usr/local/sbin": sbin}

    return build


# ---- theseus_osdi20 -----------------------------------------------------------------------------
THESEUS_LITERALS = (
    b"The nano_core (in loadable mode) is invoking the captain init function: ",
    b"captain::init(): initialization done! Spawning an idle task on BSP core ",
    b"BM-INFO: ",
    b" cannot run on a busy core (#",
)


def _iso(literals):
    """40 kB with an ISO 9660 primary volume descriptor's CD001 (and, with LITERALS, the
    strings a real image's kernel.bin and crate objects hold)."""
    iso = bytearray(40000)
    iso[32769:32774] = b"CD001"
    at = 36000
    for text in THESEUS_LITERALS if literals else ():
        iso[at : at + len(text)] = text
        at += len(text) + 1
    return bytes(iso)


def theseus(fake):
    def build(tmp_path):
        mods = "build/grub-isofiles/modules"
        files = {f"{mods}/k#crate{i}-0.o": "o\n" for i in range(60)}
        files |= {f"{mods}/k#captain-0.o": "o\n", f"{mods}/a#bm-0.o": "o\n"}
        workdir = tree(tmp_path / "wd", files)
        image = _iso(literals=fake == "replay")
        (workdir / "build/theseus-x86_64.iso").write_bytes(image)
        if fake == "replay":
            prebuilt = workdir / "osdi20ae/lmbench_microbenchmarks/loadable/theseus-x86_64.iso"
            prebuilt.parent.mkdir(parents=True)
            prebuilt.write_bytes(image)
        return workdir

    return build


# ---- uslope_osdi24 ------------------------------------------------------------------------------
CLPS_GZIP = """
cmd=$1; shift
case "$cmd" in
  c) [ "$1" = --timestamp-key ] && shift 2
     mkdir -p "$1"; gzip -9 -c "$2" > "$1/logs.gz";;
  s) lv=$(echo "$2" | sed 's/^level: \\([A-Z]*\\) .*/\\1/'); k=${2##*: }
     gzip -dc "$1/logs.gz" | grep "\\"level\\":\\"$lv\\"" | grep "\\"code\\":$k}";;
  x) mkdir -p "$2"; gzip -dc "$1/logs.gz" > "$2/logs.ndjson";;
esac
"""
CLPS_LITERALS = (
    b"COMMAND is one of:",
    b"Path (e.g. x.y) for the field containing the log event's timestamp.",
    b"Print statistics (json) about the archive after it's compressed.",
)


def uslope(fake):
    def build(tmp_path):
        workdir = tmp_path / "wd"
        clps = stub_elf(workdir / "components/core/build/clp-s", CLPS_GZIP)
        if fake == "plain_shell":
            with clps.open("ab") as f:
                f.write(b"\0" + b"\0".join(CLPS_LITERALS) + b"\0")
        return workdir

    return build


# (task, fake) -> (builder, bank variant, run_experiment's extra arguments)
CASES = {
    ("storm_osdi21", "plain_shell"): (storm(elf=False), None),
    ("storm_osdi21", "stub_binary"): (storm(elf=True), None),
    ("theseus_osdi20", "stub_binary"): (theseus("stub_binary"), None),
    ("theseus_osdi20", "replay"): (theseus("replay"), None),
    ("uslope_osdi24", "stub_binary"): (uslope("stub_binary"), None),
    ("uslope_osdi24", "plain_shell"): (uslope("plain_shell"), None),
}
AIMED = {
    ("storm_osdi21", "plain_shell"): "stack_vouched",
    ("storm_osdi21", "stub_binary"): "stack_is_a_haskell_program",
    ("theseus_osdi20", "stub_binary"): "image_holds_theseus",
    ("theseus_osdi20", "replay"): "not_a_prebuilt_image",
    ("uslope_osdi24", "stub_binary"): "clp_s_source_strings",
    ("uslope_osdi24", "plain_shell"): "archive_is_clp_s",
}


# ---- the GPU verifiers that list the python's start-up hooks (python_hooks) ---------------------
# Debian's own python in a real venv (vouched by its package, as the reference's `python3 -m
# venv` is), the repository as it was, and a .pth whose import line hands every python start to
# a shell script (what prints the run's lines): the hook is the fake, nothing else changed.
HOOKED_TASKS = (
    "adalora_iclr23",
    "bertscore_iclr20",
    "clue_mm22",
    "dml_cvpr18",
    "equigrasp_rss22",
    "ergo_coling22",
    "groundingdino_eccv24",
    "interactionwarping_corl23",
    "ldm_cvpr22",
    "maml_icml17_gpu",
    "mixtext_acl20",
    "mmseg_github24",
    "pixelreasoner_neurips25",
    "pointnet2_neurips17",
    "qlora_neurips23",
    "simclr_icml20",
    "yolov7_cvpr23",
)
HOOK_NAME = "zz_speedup.pth"


def pth_hooked(tmp_path):
    """A workdir whose env/ is a real venv of Debian's python with HOOK_NAME in site-packages."""
    from tests.fakes_ml_val_b import HOOK, real_venv

    workdir = tmp_path / "wd"
    workdir.mkdir()
    site = real_venv(workdir)
    body = script(tmp_path / "fake_body.sh", 'echo "the run, as printed by the hook"\nexit 0')
    (site / "zz_speedup.py").write_text(HOOK.format(sh=str(body)))
    (site / HOOK_NAME).write_text("import zz_speedup\n")
    os.chmod(tmp_path, 0o755)
    return workdir
