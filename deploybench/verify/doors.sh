#!/bin/sh
# The doors' digests (deploybench/verify/doors.py): usage doors.sh USER PATTERN...
# One line per file a pattern matches: "<sha256 of its content> <path as hex>" ("link:<sha256
# of its target>" for a link, "dir" or "other" for the rest), and "<sha256> <hex of 'passwd'>"
# for USER's line of /etc/passwd. Paths travel as hex: a name the agent chose cannot start a
# line of its own.
user=$1
shift
hex() { printf %s "$1" | od -An -tx1 | tr -d ' \n'; }
line=$(grep "^$user:" /etc/passwd | sha256sum | cut -c1-64)
printf '%s %s\n' "$line" "$(hex passwd)"
for pattern in "$@"; do
  for f in $pattern; do
    if [ -L "$f" ]; then d="link:$(readlink -- "$f" | sha256sum | cut -c1-64)"
    elif [ -f "$f" ]; then d=$(sha256sum < "$f" | cut -c1-64)
    elif [ -d "$f" ]; then d=dir
    elif [ -e "$f" ]; then d=other
    else continue
    fi
    printf '%s %s\n' "$d" "$(hex "$f")"
  done
done
