# Layer 2 experiment of uslope_osdi24 (hidden from the agent), after experiment_lib.sh.
#
# Runs the clp-s the agent built (components/core/build/clp-s), as the owner of WORKDIR, on a
# newline-delimited JSON log the verifier writes now (N events, N from 20000 to 40000, with a
# message field salted by a number picked now): compress with --timestamp-key, search with a KQL
# query on a code picked now, decompress. The expected counts are computed here by the trusted
# busybox awk from the same input: the number of matches, and the number of events and the sum of
# their code fields, which the decompressed output must give back. Collects the counts, the
# sizes of input and archives and the first matches, the archive's files by name and magic and
# which of clp-s's source literals the binary holds; checks.yaml judges them on the controller.
# RUNBOOK.MD is never read.
BIN="$WORKDIR/components/core/build/clp-s"
{
  echo "== binary: $BIN"
  [ -f "$BIN" ] && [ ! -L "$BIN" ] && echo "regular: yes" || echo "regular: no"
  echo "magic: $(head -c4 "$BIN" 2>/dev/null | od -An -tx1 | tr -d ' \n')"
} >"$LOG_DIR/binary.txt" 2>&1
cp "$LOG_DIR/binary.txt" "$LOG_DIR/01_binary.log"
# Literals of clp-s's own source at the pinned commit (its CLI's help in CommandLineArguments.cpp,
# boost::program_options descriptions kept whole in the binary): a tiny ELF launching a script,
# or a system tool renamed, has none of them.
for s in "COMMAND is one of:" \
  "Path (e.g. x.y) for the field containing the log event's timestamp." \
  "Print statistics (json) about the archive after it's compressed."; do
  has_text "$BIN" "$s" && echo "literal: $s"
done >"$LOG_DIR/literals.txt" 2>&1
echo "literals_found: $(grep -c '^literal: ' "$LOG_DIR/literals.txt")" >>"$LOG_DIR/literals.txt"

N=$(($(rand_below 20000) + 20000))
K=$(rand_below 13)
SALT=$(rand_below 1000000)
D="$SCRATCH/run"
mkdir -p "$D"
awk -v n="$N" -v salt="$SALT" 'BEGIN {
  split("INFO WARN ERROR DEBUG INFO INFO WARN", lv, " ");
  for (i = 0; i < n; i++) {
    printf "{\"ts\":%.0f,\"level\":\"%s\",\"svc\":\"svc-%d\",\"msg\":\"req %d-%d took %d ms\",\"code\":%d}\n",
      1700000000000 + i * 37, lv[i % 7 + 1], i % 5, salt, i, (i * 7919 + salt) % 1000, i % 13
  }
}' >"$D/logs.ndjson"
# Expected: matches of level ERROR (i % 7 == 2) with code K, events, sum of codes.
awk -v k="$K" '/"level":"ERROR"/ && $0 ~ ("\"code\":" k "}$") { m++ } END { print "matches: " m + 0 }' \
  "$D/logs.ndjson" >"$LOG_DIR/expected_matches.txt"
awk '{ if (match($0, /"code": *[0-9]+/)) { s += substr($0, RSTART + 7, RLENGTH - 7) + 0 }; n++ }
  END { printf "events: %d\ncode_sum: %d\n", n, s }' "$D/logs.ndjson" >"$LOG_DIR/expected_restored.txt"
chown -R "$OWNER" "$SCRATCH"

{
  echo "== compress: clp-s c --timestamp-key ts archives logs.ndjson ($N events)"
  cd "$D" && rc_of compress as_owner timeout 600 "$BIN" c --timestamp-key ts "$D/archives" \
    "$D/logs.ndjson"
  echo "exit code: $(cat "$LOG_DIR/compress.rc")"
  echo "== search: level: ERROR AND code: $K"
  rc_of search as_owner timeout 300 "$BIN" s "$D/archives" "level: ERROR AND code: $K" \
    >"$D/search.ndjson"
  echo "exit code: $(cat "$LOG_DIR/search.rc")"
  echo "== decompress: clp-s x archives out"
  rc_of decompress as_owner timeout 600 "$BIN" x "$D/archives" "$D/out"
  echo "exit code: $(cat "$LOG_DIR/decompress.rc")"
} >"$LOG_DIR/02_clp_s.log" 2>&1
head -n 20 "$D/search.ndjson" >"$LOG_DIR/search_head.txt" 2>/dev/null
# Matches: lines of the search output that are ERROR events with code K.
awk -v k="$K" '/"level": *"ERROR"/ && $0 ~ ("\"code\": *" k "[,}]") { m++ } END { print "matches: " m + 0 }' \
  "$D/search.ndjson" >"$LOG_DIR/matches.txt" 2>/dev/null
LINES=$(wc -l <"$D/search.ndjson" 2>/dev/null || echo 0)
M=$(sed -n 's/^matches: //p' "$LOG_DIR/matches.txt")
echo "extra_lines: $((LINES - ${M:-0}))" >"$LOG_DIR/search_lines.txt"
cat "$D"/out/* 2>/dev/null | awk '{ if (match($0, /"code": *[0-9]+/)) { v = substr($0, RSTART, RLENGTH); sub(/"code": */, "", v); s += v }; n++ }
  END { printf "events: %d\ncode_sum: %d\n", n, s }' >"$LOG_DIR/restored.txt"
{
  echo "input_kb: $(du -sk "$D/logs.ndjson" | cut -f1)"
  echo "archives_kb: $(du -sk "$D/archives" 2>/dev/null | cut -f1)"
  echo "archive_files: $(find "$D/archives" -type f 2>/dev/null | wc -l)"
} >"$LOG_DIR/sizes.txt"
# The archive's files by name and first four bytes: clp-s writes, in a folder per archive, the
# dictionaries (var.dict, log.dict, array.dict, timestamp.dict), the schema tree and map, and the
# encoded tables with their metadata as zstd streams (ArchiveWriter.cpp): a gzip of the input, or
# a copy, is not that.
find "$D/archives" -type f 2>/dev/null | sort | while IFS= read -r f; do
  echo "file: ${f##*/} $(head -c4 "$f" | od -An -tx1 | tr -d ' \n')"
done >"$LOG_DIR/archive_files.txt" 2>&1
awk '/^input_kb:/ { i = $2 } /^archives_kb:/ { a = $2 } END { if (i > 0 && a > 0) printf "ratio: %.4f\n", a / i; else print "ratio: none" }' \
  "$LOG_DIR/sizes.txt" >>"$LOG_DIR/sizes.txt"
