# Layer 2 experiment of storm_osdi21 (hidden from the agent), after experiment_lib.sh.
#
# As the owner of WORKDIR (so with the owner's ~/.stack: GHC, the Stackage snapshot and the
# LiquidHaskell build the agent's `stack build` fetched), verifies two scratch copies of
# case-studies/wishlist, without their .stack-work (so every module is compiled and checked
# again): the copy as it is, where LiquidHaskell must find every module SAFE, and a copy with
# detailed.md's bug (the friendshipStatus' ==. "accepted" check removed from
# src/Controllers/Wish.hs), where it must report UNSAFE with a "Liquid Type Mismatch". Collects
# both builds' output, and what the stack that ran them is (runtime.txt, stack_binary.txt);
# checks.yaml judges them on the controller. RUNBOOK.MD is never read.
HOME_DIR=$(awk -F: -v u="$OWNER" '$1 == u { print $6 }' /etc/passwd)
STACK=$(PATH=$SYSTEM_PATH command -v stack 2>/dev/null)
[ -z "$STACK" ] && [ -x "$HOME_DIR/.local/bin/stack" ] && STACK="$HOME_DIR/.local/bin/stack"
echo "stack: ${STACK:-none}" >"$LOG_DIR/stack.txt"
# The stack that builds, vouched (a script shows in runtime.txt), and whether it is a Haskell
# program: every GHC-built executable links the RTS, whose usage text (rts/RtsFlags.c) it
# holds; a tiny ELF launching a script that prints LiquidHaskell's lines does not.
vouch stack "${STACK:-stack}"
if [ -n "$STACK" ] && has_text "$STACK" "Usage: <prog> <args> [+RTS <rtsopts> | -RTS <args>] ... --RTS <args>"; then
  echo "ghc_rts_usage: yes" >"$LOG_DIR/stack_binary.txt"
else
  echo "ghc_rts_usage: no" >"$LOG_DIR/stack_binary.txt"
fi
as_owner "${STACK:-stack}" --version >>"$LOG_DIR/stack.txt" 2>&1
as_owner z3 --version >>"$LOG_DIR/stack.txt" 2>&1

CASE=case-studies/wishlist
for run in clean bug; do
  mkdir -p "$SCRATCH/$run"
  cp -r "$WORKDIR/$CASE" "$SCRATCH/$run/wishlist" 2>/dev/null
  rm -rf "$SCRATCH/$run/wishlist/.stack-work"
done
WISH="$SCRATCH/bug/wishlist/src/Controllers/Wish.hs"
# detailed.md's edit: drop the two lines `&&: friendshipStatus'` and `==. "accepted"`.
if [ -f "$WISH" ]; then
  awk '
    s == 0 && /^ *&&: friendshipStatus.$/ { s = 1; next }
    s == 1 && /^ *==\. "accepted"$/ { s = 2; next }
    { print }
  ' "$WORKDIR/$CASE/src/Controllers/Wish.hs" >"$WISH"
fi
BEFORE=$(wc -l <"$WORKDIR/$CASE/src/Controllers/Wish.hs" 2>/dev/null)
AFTER=$(wc -l <"$WISH" 2>/dev/null)
if [ -n "$BEFORE" ] && [ "$((BEFORE - AFTER))" = 2 ]; then
  echo "bug_injected: yes" >"$LOG_DIR/bug.txt"
else
  echo "bug_injected: no" >"$LOG_DIR/bug.txt"
fi
chown -R "$OWNER" "$SCRATCH"

for run in clean bug; do
  {
    echo "== experiment $run: stack build --fast in a copy of $CASE"
    cd "$SCRATCH/$run/wishlist" && rc_of "$run" as_owner timeout 1500 "${STACK:-stack}" build \
      --fast
    echo "exit code: $(cat "$LOG_DIR/$run.rc")"
  } >"$LOG_DIR/${run}_build.txt" 2>&1
done
# Layer 1 reads *.log: the clean build's output is one; the injected bug's expected error is not.
cp "$LOG_DIR/clean_build.txt" "$LOG_DIR/02_clean.log"
grep -c 'LIQUID: SAFE' "$LOG_DIR/clean_build.txt" | sed 's/^/safe_modules: /' >"$LOG_DIR/counts.txt"
grep -c 'LIQUID: UNSAFE' "$LOG_DIR/clean_build.txt" | sed 's/^/unsafe_modules: /' >>"$LOG_DIR/counts.txt"
