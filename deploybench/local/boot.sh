#!/bin/bash
# Runs as PID 1's parent inside fresh mount/PID/UTS/IPC namespaces (see machine.py).
# Everything mounted here lives only in this mount namespace, so it all goes away
# with the machine's last process; nothing needs unmounting on the host.
set -euo pipefail
lower=$1 upper=$2 work=$3 root=$4 name=$5 port=$6 gpu=$7

mount --make-rprivate /
mount -t overlay overlay -o "lowerdir=$lower,upperdir=$upper,workdir=$work" "$root"
mount -t proc proc "$root/proc"
mount -t sysfs -o ro,nosuid,nodev,noexec sysfs "$root/sys"
mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs "$root/tmp"
mount -t tmpfs -o mode=755,nosuid,nodev tmpfs "$root/run"
mkdir -p "$root/run/sshd" "$root/run/lock"
chmod 1777 "$root/run/lock"

# A minimal /dev: the usual character devices bound from the host, a private devpts.
mount -t tmpfs -o mode=755,nosuid tmpfs "$root/dev"
for d in null zero full random urandom tty; do
  touch "$root/dev/$d"
  mount --bind "/dev/$d" "$root/dev/$d"
done
mkdir -p "$root/dev/pts" "$root/dev/shm" "$root/dev/mqueue"
mount -t devpts -o newinstance,ptmxmode=0666,mode=620,gid=5 devpts "$root/dev/pts"
ln -s pts/ptmx "$root/dev/ptmx"
mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs "$root/dev/shm"
mount -t mqueue mqueue "$root/dev/mqueue"
ln -s /proc/self/fd "$root/dev/fd"
ln -s /proc/self/fd/0 "$root/dev/stdin"
ln -s /proc/self/fd/1 "$root/dev/stdout"
ln -s /proc/self/fd/2 "$root/dev/stderr"
if [ "$gpu" = 1 ]; then
  for d in /dev/nvidia* /dev/dri; do
    [ -e "$d" ] || continue
    if [ -d "$d" ]; then mkdir -p "$root$d"; else touch "$root$d"; fi
    mount --bind "$d" "$root$d"
  done
fi

hostname "$name"
exec chroot "$root" /usr/sbin/sshd -D -e -p "$port" -o ListenAddress=127.0.0.1
