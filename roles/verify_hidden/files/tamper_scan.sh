# Tamper scan of the machine the agent left, before the verifier runs. Run by the controller's
# static busybox (`busybox sh`, whose applets run without a PATH lookup), never by the machine's
# shell: `md5sum`, `awk`, `cat` below are busybox's own. It prints raw facts only; the judgment
# is made on the controller (deploybench/verify/integrity.py documents the lines).
#
# Packages checked: the essential and required ones, and those the harness or the experiment
# leans on (the shells, sudo, sshd, python3's interpreter and standard library). A file of theirs
# whose content differs from dpkg's checksum (dpkg --verify's test) is CHANGED, a file that is
# gone is MISSING. Configuration files (/etc) are not in dpkg's checksum lists: editing them is
# the agent's job.
set -u
db=/var/lib/dpkg
status=$db/status

packages=$(awk '
  /^Package: / { p = $2; ess = 0; prio = ""; inst = 0; next }
  /^Essential: yes/ { ess = 1 }
  /^Priority: / { prio = $2 }
  /^Status: .* installed$/ { inst = 1 }
  /^$/ {
    if (p != "" && inst && (ess || prio == "required" || p ~ /^(bash|dash|sudo|coreutils|util-linux|openssh-server|openssh-sftp-server|libc6|libc-bin|python3|python3-minimal|python3\.[0-9]+|python3\.[0-9]+-minimal|libpython3\.[0-9]+-minimal|libpython3\.[0-9]+-stdlib)$/)) print p
    p = ""
  }
  END { if (p != "" && inst && (ess || prio == "required")) print p }
' "$status" 2>/dev/null | sort -u)

files=0
npkg=0
commands=""
libraries=""
for pkg in $packages; do
  list=""
  for f in "$db/info/$pkg.md5sums" "$db/info/$pkg:"*.md5sums; do
    [ -f "$f" ] && list=$f && break
  done
  [ -n "$list" ] || continue
  npkg=$((npkg + 1))
  files=$((files + $(wc -l <"$list")))
  # busybox md5sum -c names each failing file "path: FAILED"; a missing file fails too.
  (cd / && md5sum -c "$list" 2>/dev/null) | sed -n 's/: FAILED$//p' | while IFS= read -r path; do
    if [ -e "/$path" ] || [ -L "/$path" ]; then echo "CHANGED $pkg /$path"; else echo "MISSING $pkg /$path"; fi
  done
  # Its commands (links included: /usr/bin/python3 is one), from dpkg's list of its paths.
  for f in "$db/info/$pkg.list" "$db/info/$pkg:"*.list; do
    [ -f "$f" ] || continue
    commands="$commands
$(sed -n 's#^\(/usr\)\{0,1\}/s\{0,1\}bin/\([^/]*\)$#\2#p' "$f")"
    libraries="$libraries
$(sed -n 's#^\(/usr\)\{0,1\}/lib\(/[^/]*-linux-gnu[^/]*\)\{0,1\}/\([^/]*\.so[^/]*\)$#\3#p' "$f")"
    break
  done
done

if [ -e /etc/ld.so.preload ] || [ -L /etc/ld.so.preload ]; then
  if [ -s /etc/ld.so.preload ]; then
    head -c 4096 /etc/ld.so.preload | while IFS= read -r line; do echo "PRELOAD $line"; done
  fi
  echo "PRELOAD (the file /etc/ld.so.preload exists)"
fi

# A command of a checked package, shadowed by a file of the same name earlier on the PATH.
for dir in /usr/local/bin /usr/local/sbin; do
  [ -d "$dir" ] || continue
  for f in "$dir"/* "$dir"/.[!.]*; do
    [ -e "$f" ] || [ -L "$f" ] || continue
    name=${f##*/}
    if printf '%s\n' "$commands" | grep -qxF -- "$name"; then echo "SHADOW $f $name"; fi
  done
done

# A library of a checked package (libc.so.6 ...), shadowed in a folder the loader searches first.
for dir in /usr/local/lib /usr/local/lib/*-linux-gnu*; do
  [ -d "$dir" ] || continue
  for f in "$dir"/*.so*; do
    [ -e "$f" ] || [ -L "$f" ] || continue
    name=${f##*/}
    if printf '%s\n' "$libraries" | grep -qxF -- "$name"; then echo "SHADOW $f $name"; fi
  done
done

# The folders the verifier is put under must be root's alone, and real folders.
for dir in / /root; do
  if [ -L "$dir" ] || [ ! -d "$dir" ]; then echo "UNSAFE $dir not a folder"; continue; fi
  set -- $(stat -c '%u %a' "$dir")
  case "$2" in
    *[2367]? | *[2367]) echo "UNSAFE $dir writable by others (mode $2)" ;;
  esac
  [ "$1" = 0 ] || echo "UNSAFE $dir owned by uid $1"
done

echo "CHECKED $files $npkg"
