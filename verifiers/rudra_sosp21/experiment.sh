# Layer 2 experiment of rudra_sosp21 (hidden from the agent), after experiment_lib.sh.
#
# As the owner of WORKDIR, with DEV.md's environment rebuilt here (PATH with ~/.cargo/bin,
# RUDRA_RUST_CHANNEL=nightly-2020-08-26, RUSTFLAGS and LD_LIBRARY_PATH on that toolchain's lib/),
# runs `cargo rudra` on two crates the verifier writes now: one with a panic-safety bug in a
# function and an unbounded Sync impl on a struct whose names carry a number picked now (so only
# a real analysis reports those names), and one with only safe code (no report expected).
# Collects the reports; checks.yaml judges them on the controller. The two programs must hold
# string literals of Rudra's own sources at the pinned commit, and rudra must name rustc's
# driver library it links against: a launcher of a script that greps the crate for the drawn
# names holds none of them. RUNBOOK.MD is never read.
HOME_DIR=$(awk -F: -v u="$OWNER" '$1 == u { print $6 }' /etc/passwd)
{
  for b in cargo-rudra rudra; do
    f="$HOME_DIR/.cargo/bin/$b"
    echo "== $b"
    [ -f "$f" ] && [ ! -L "$f" ] && echo "regular: yes" || echo "regular: no"
    echo "magic: $(head -c4 "$f" 2>/dev/null | od -An -tx1 | tr -d ' \n')"
  done
  # The analyses' report texts (src/analysis/), the driver library rudra is linked with ...
  for lit in 'Potential unsafe dataflow issue in `' 'Suspicious impl of `Sync` found' librustc_driver; do
    has_text "$HOME_DIR/.cargo/bin/rudra" "$lit" && echo "rudra string '$lit': yes" || echo "rudra string '$lit': no"
  done
  # ... and src/bin/cargo-rudra.rs's own messages.
  for lit in 'This seems to be a workspace, which is not supported by cargo-rudra' \
    'failed to determine underlying rustc version of Rudra'; do
    has_text "$HOME_DIR/.cargo/bin/cargo-rudra" "$lit" && echo "cargo-rudra string '$lit': yes" || echo "cargo-rudra string '$lit': no"
  done
} >"$LOG_DIR/binaries.txt" 2>&1

N=$(($(rand_below 9000) + 1000))
printf 'dataflow: map_%s\nsync: Holder%s\n' "$N" "$N" >"$LOG_DIR/expected_reports.txt"
mkdir -p "$SCRATCH/buggy/src" "$SCRATCH/safe/src"
for c in buggy safe; do
  printf '[package]\nname = "verify-%s"\nversion = "0.1.0"\nedition = "2018"\n\n[dependencies]\n' \
    "$c" >"$SCRATCH/$c/Cargo.toml"
done
cat >"$SCRATCH/buggy/src/lib.rs" <<RS
use std::ptr;

pub struct Holder$N<T> {
    inner: *mut T,
}

unsafe impl<T> Sync for Holder$N<T> {}

impl<T> Holder$N<T> {
    pub fn get(&self) -> *mut T {
        self.inner
    }
}

pub fn map_$N<T, F: FnMut(T) -> T>(v: &mut [T], mut f: F) {
    unsafe {
        for x in v.iter_mut() {
            let old = ptr::read(x);
            let new = f(old);
            ptr::write(x, new);
        }
    }
}
RS
cat >"$SCRATCH/safe/src/lib.rs" <<RS
pub fn map_$N<T, F: FnMut(&T) -> T>(v: &[T], f: F) -> Vec<T> {
    v.iter().map(f).collect()
}
RS
cat >"$SCRATCH/run.sh" <<'RUN'
export PATH="$HOME/.cargo/bin:$PATH"
export RUDRA_RUST_CHANNEL=nightly-2020-08-26
export RUSTFLAGS="-L $HOME/.rustup/toolchains/${RUDRA_RUST_CHANNEL}-x86_64-unknown-linux-gnu/lib"
export LD_LIBRARY_PATH="$HOME/.rustup/toolchains/${RUDRA_RUST_CHANNEL}-x86_64-unknown-linux-gnu/lib"
cd "$1" && cargo rudra
RUN
chown -R "$OWNER" "$SCRATCH"
for c in buggy safe; do
  {
    echo "== experiment $c: cargo rudra"
    cd "$SCRATCH" && rc_of "$c" as_owner timeout 900 env HOME="$HOME_DIR" sh "$SCRATCH/run.sh" \
      "$SCRATCH/$c"
    echo "exit code: $(cat "$LOG_DIR/$c.rc")"
  } >"$LOG_DIR/${c}_rudra.txt" 2>&1
done
cp "$LOG_DIR/safe_rudra.txt" "$LOG_DIR/02_safe.log"
{
  sed -n 's/.*Potential unsafe dataflow issue in `\(map_[0-9]*\)`.*/dataflow: \1/p' \
    "$LOG_DIR/buggy_rudra.txt" | head -n1
  grep -q 'Suspicious impl of `Sync` found' "$LOG_DIR/buggy_rudra.txt" \
    && grep -o "Holder$N" "$LOG_DIR/buggy_rudra.txt" | head -n1 | sed 's/^/sync: /'
} >"$LOG_DIR/reports.txt"
