# Pack the verifier's logs for the controller: run by the trusted busybox (applets, not the
# machine's tar or base64). Each file is capped (its last MiB kept), links are dropped, and the
# tar.gz is printed base64-encoded on stdout, which is how it reaches the controller without a
# module on the machine; then the trusted tools' folder is removed. Usage: pack_logs.sh DIR
# (DIR is the /.deploybench-verify.* folder; its logs/ are packed).
set -u
d=$1
logs=$d/logs
cap=1048576
find "$logs" -type l -exec rm -f {} +
find "$logs" -type f | while IFS= read -r f; do
  if [ "$(stat -c %s "$f")" -gt "$cap" ]; then
    tail -c "$cap" "$f" >"$f.capped" && mv "$f.capped" "$f"
  fi
done
tar -C "$logs" -czf - . | base64
case "$d" in /.deploybench-verify.*) rm -rf "$d" ;; esac
