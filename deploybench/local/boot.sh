#!/bin/bash
# Boots one machine (see machine.py), or, after its agent, the container that runs its verifier
# (mode verify, see after_agent.py). Runs in a fresh mount namespace of its own (unshare
# --mount), so the overlay mounted here lives only there and goes away with the machine's last
# process: nothing needs unmounting on the host, even after a crash.
set -euo pipefail
lower=$1 upper=$2 work=$3 root=$4 name=$5 port=$6 gpu=$7 uid_base=$8 cgroup=$9
mode=${10:-boot} memory_bytes=${11:-0} max_pids=${12:-0} cpu_ms=${13:-0}

VERIFY_CPU_SHARES=4096 # a machine's: the kernel's default, 1024

mount --make-rprivate /
cgroup_hierarchies=()
if [ ! -e /sys/fs/cgroup/cgroup.procs ]; then
  for procs in /sys/fs/cgroup/*/cgroup.procs; do
    [ "$procs" = /sys/fs/cgroup/cpuset/cgroup.procs ] || cgroup_hierarchies+=("${procs%/cgroup.procs}")
  done
fi
# nodev: no device node of the overlay opens a device (only /dev, made by nspawn, does).
# The lower layers (the image, and over it any read-only layer the machine was given: a
# scaffold's cached prefix, "layer:image") are never written through an overlay; the machine
# reaches only this mount.
mount -t overlay overlay -o "lowerdir=$lower,upperdir=$upper,workdir=$work,nodev" "$root"

# A cgroup of its own per machine in each of the host's cgroup v1/hybrid hierarchies (systemd
# is not PID 1 on every host, so nobody else gives it one): nspawn makes its payload/supervisor
# cgroups under it, so two machines never share a cgroup nor see each other's through their
# cgroup namespace, and destroy can end whatever is left in it. cpuset is left alone: a new
# cpuset cgroup holds no CPU until one is written into it. (On a cgroup v2 host that runs
# systemd, nspawn's own cgroup handling applies; see README.)
# The task's limits are the cgroup's (memory includes the page cache of what the machine
# writes; swap is not given): past them the machine's own processes fail or are killed, and
# neither the host nor other machines notice.
for hierarchy in "${cgroup_hierarchies[@]}"; do
  mkdir -p "$hierarchy/$cgroup"
  if [ "$memory_bytes" -gt 0 ] && [ -e "$hierarchy/$cgroup/memory.limit_in_bytes" ]; then
    echo "$memory_bytes" >"$hierarchy/$cgroup/memory.limit_in_bytes"
    [ ! -e "$hierarchy/$cgroup/memory.memsw.limit_in_bytes" ] ||
      echo "$memory_bytes" >"$hierarchy/$cgroup/memory.memsw.limit_in_bytes" 2>/dev/null || true
  fi
  if [ "$max_pids" -gt 0 ] && [ -e "$hierarchy/$cgroup/pids.max" ]; then
    echo "$max_pids" >"$hierarchy/$cgroup/pids.max"
  fi
  # The task's CPUs as CFS bandwidth: cpu_ms of CPU time per 100 ms period.
  if [ "$cpu_ms" -gt 0 ] && [ -e "$hierarchy/$cgroup/cpu.cfs_quota_us" ]; then
    echo 100000 >"$hierarchy/$cgroup/cpu.cfs_period_us"
    echo $((cpu_ms * 1000)) >"$hierarchy/$cgroup/cpu.cfs_quota_us"
  fi
  # A verifier runs under a fixed wall-clock limit (the task's verify_minutes) while the agents
  # of the same run's other machines may be compiling beside it: its container gets four times
  # a machine's CPU share, so a loaded host does not turn a verdict into a FAIL by time. (The
  # share weighs against the other machines of the same state folder, its cgroup's siblings.)
  if [ "$mode" = verify ] && [ -e "$hierarchy/$cgroup/cpu.shares" ]; then
    # A host that refuses the write still runs the verifier, at the default share.
    echo "$VERIFY_CPU_SHARES" >"$hierarchy/$cgroup/cpu.shares" 2>/dev/null || true
  fi
  echo $$ >"$hierarchy/$cgroup/cgroup.procs"
done

binds=()
if [ "$gpu" = 1 ]; then
  for d in /dev/nvidia* /dev/dri; do
    [ -e "$d" ] && binds+=("--bind=$d")
  done
fi

# Why each flag:
#   --private-users=BASE:65536  root inside is host uid BASE, an unprivileged user on the host;
#     --private-users-ownership=off  the image was shifted to that range once, when it was built.
#   --register=no --keep-unit   systemd is not PID 1 on every host (not here: no system bus),
#     so nspawn must neither ask machined to register the machine nor ask systemd for a scope.
#   --settings=no               no .nspawn file next to the tree may change these options.
#   no --as-pid2                sshd is the container's PID 1, as on the earlier chroot machines:
#     a PID 1 cannot be SIGKILLed from inside its namespace, so `kill -9 -1` or `pkill -9 sshd`
#     as root inside leaves the machine reachable (under nspawn's stub init, sshd would be PID 2
#     and die), and sshd's SIGCHLD handler reaps every child, orphans reparented to it too.
#   --resolv-conf/--timezone=off, --link-journal=no  nspawn writes nothing into the machine:
#     machine.py wrote its resolv.conf, and the overlay's upper layer stays the agent's doing.
#   --console=read-only         no host file descriptor reaches the machine; output is logged.
#   --private-network           a network namespace of its own: machine.py attaches slirp4netns
#     (user-mode networking: egress through the host's sockets, no route to the host's loopback
#     nor to another machine) and forwards the host's 127.0.0.1:PORT to the machine's sshd.
common=(
  --quiet
  --register=no --keep-unit
  --settings=no
  --directory="$root"
  --private-users="$uid_base:65536" --private-users-ownership=off
  --resolv-conf=off --timezone=off --link-journal=no
)
if [ "$mode" = verify ]; then
  # The verifier's container (after_agent.py): the same layers, none of the machine's programs
  # started (nspawn's own stub init is PID 1, no sshd, no login, no PAM), no network, and
  # no_new_privileges for every process in it. Its folder (${14}, on the host: the trusted
  # busybox, the script, the logs) is bound at /.deploybench-verify; the command comes from
  # after_agent.py on the command line below, in a clean environment.
  exec systemd-nspawn "${common[@]}" --machine="$name-verify" \
    --as-pid2 --no-new-privileges=yes --private-network --console=pipe \
    --bind="${14}:/.deploybench-verify" \
    "${binds[@]}" \
    "${@:15}"
fi
exec systemd-nspawn "${common[@]}" --machine="$name" \
  --console=read-only --private-network \
  "${binds[@]}" \
  /bin/sh -c "mkdir -p /run/sshd /run/lock && chmod 1777 /run/lock &&
    exec /usr/sbin/sshd -D -e -p $port"
