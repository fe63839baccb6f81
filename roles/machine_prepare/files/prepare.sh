#!/bin/sh
# Give a fresh machine the agent's user with passwordless sudo and the agent's folders, in one
# go (one connection instead of one per step). Usage: prepare.sh USER WORKDIR CONTROL LOGIN_USER
# Fails (non-zero, one line) when the workdir exists already (the machine is not fresh) or the
# machine has no python3 that can run Ansible's modules.
set -eu
user=$1 workdir=$2 control=$3 login=$4
if ! python3 -c 'import sys; sys.exit(sys.version_info < (3, 8))' 2>/dev/null; then
  echo "the machine's python3 is missing or older than 3.8: Ansible needs 3.8+" >&2
  exit 4
fi
if [ -e "$workdir" ]; then
  echo "$workdir exists already: this machine is not fresh" >&2
  exit 3
fi
id -u "$user" >/dev/null 2>&1 || useradd --create-home --shell /bin/bash "$user"
home=$(getent passwd "$user" | cut -d: -f6)
sudoers=/etc/sudoers.d/$user
printf '%s ALL=(ALL) NOPASSWD:ALL\n' "$user" > "$sudoers.new"
chmod 0440 "$sudoers.new"
visudo -cf "$sudoers.new" >/dev/null
mv "$sudoers.new" "$sudoers"
install -d -m 0755 -o "$user" -g "$user" "$home/Desktop" "$control"
# Cloud machines log in as another user (the harness's own, whose key sshd reads from a
# root-owned file outside its home: deploybench/verify/harness_login.py): let the login key reach the
# agent's user too.
if [ "$login" != "$user" ]; then
  src=/etc/deploybench/authorized_keys/$login
  [ -f "$src" ] || src=$(getent passwd "$login" | cut -d: -f6)/.ssh/authorized_keys
  install -d -m 0700 -o "$user" -g "$user" "$home/.ssh"
  install -m 0600 -o "$user" -g "$user" "$src" "$home/.ssh/authorized_keys"
fi
echo "prepared $user"
