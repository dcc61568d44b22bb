#!/bin/sh
# PID 1 of the NFS tier's VM (busybox sh; prepare.sh copies this file to the initramfs' /init).
# run.sh appends a second cpio with /nfs-tier/{conf,env,cmd}. This script:
#   1. loads the modules, brings up lo, mounts the host's root (virtiofs, read-only) at /host;
#   2. makes /host a usable root: /proc, /sys, /dev, /dev/shm, tmpfs on /tmp, /run and /mnt,
#      and the writable shares at their host paths;
#   3. starts knfsd (NFSv4.1 only, no delegations, no grace period) exporting a tmpfs mounted
#      at /host/run/nfs-tier/export, and mounts it once per name at /host/mnt/<name>;
#   4. runs the command chrooted in /host (the host's own userland: its Python, its binaries,
#      the repository at its own path), with its output on ttyS1, which run.sh streams;
#   5. writes "NFS-TIER-RC=<status>" (or "NFS-TIER-FAILED: <step>") to the console (ttyS0, a
#      log file on the host) and powers off.
# It must never exit (the kernel would panic): every failure goes through fail().
export PATH=/bin:/sbin:/usr/sbin
R=/host

/bin/busybox mount -t proc proc /proc
/bin/busybox mount -t sysfs sysfs /sys
/bin/busybox mount -t devtmpfs devtmpfs /dev 2>/dev/null

say() { echo "nfs-tier: [$(cut -d' ' -f1 /proc/uptime)] $*" >/dev/console; }
fail() {
  say "FAILED: $*"
  echo "NFS-TIER-FAILED: $*" >/dev/console
  sync
  poweroff -f
  sleep 60
}
step() { say "$*"; }
# Each setup command gets a minute: a mount that cannot reach the server retries for minutes.
t() { timeout -s KILL 60 "$@"; }
load() { # LIST: insmod each module of /lib/modules/LIST, in order
  while read -r ko; do
    insmod "$ko" || { echo "insmod $ko" >/tmp/insmod-failed; return 1; }
    if [ "${VERBOSE:-0}" = 1 ]; then say "  insmod ${ko##*/}"; fi
  done </lib/modules/$1
}

# (A missing file given to "." would end this shell, so check first.)
[ -f /nfs-tier/conf ] || fail "no /nfs-tier/conf in the initramfs (start the VM with run.sh)"
. /nfs-tier/conf

# The command's output: raw, so that "\n" is not turned into "\r\n".
stty -F /dev/ttyS1 raw -echo 2>/dev/null || fail "serial port ttyS1 (the command's output)"

step "loading kernel modules"
# The NFS modules load while the host's root is mounted and prepared.
load nfs.list &
nfs_modules=$!
load virtiofs.list || fail "$(cat /tmp/insmod-failed)"
ip link set lo up || fail "bringing up lo"

step "mounting the host's root (virtiofs, read-only)"
t mount -t virtiofs -o ro hostroot $R || fail "mounting the host's root (virtiofs tag hostroot)"
for d in proc sys dev tmp run mnt; do
  [ -d $R/$d ] || fail "the host has no /$d to mount over"
done
mount -t proc proc $R/proc &&
  mount -t sysfs sysfs $R/sys &&
  mount -t devtmpfs devtmpfs $R/dev &&
  mkdir -p $R/dev/shm $R/dev/pts &&
  mount -t tmpfs -o mode=1777 tmpfs $R/dev/shm &&
  mount -t devpts devpts $R/dev/pts &&
  mount -t tmpfs -o mode=1777 tmpfs $R/tmp &&
  mount -t tmpfs -o mode=755 tmpfs $R/run &&
  mount -t tmpfs -o mode=755 tmpfs $R/mnt ||
  fail "mounting /proc, /sys, /dev, /tmp, /run, /mnt in the host's root"

# Writable shares, "tag=path" each, mounted at the host's path.
for share in $SHARES; do
  tag=${share%%=*}
  path=${share#*=}
  step "mounting $path (virtiofs, writable)"
  # (Under /tmp, /run or /mnt, the VM's own tmpfs, the directory is not there yet.)
  [ -d "$R$path" ] || mkdir -p "$R$path" || fail "mkdir $path"
  t mount -t virtiofs "$tag" "$R$path" || fail "mounting the writable share $path"
done

wait $nfs_modules || fail "$(cat /tmp/insmod-failed)"
if [ "${HOST_NET:-0}" = 1 ]; then
  # qemu's user networking: its gateway 10.0.2.2 is the host's own 127.0.0.1.
  step "bringing up eth0 (the host at 10.0.2.2)"
  load net.list || fail "$(cat /tmp/insmod-failed)"
  ip link set eth0 up && ip addr add 10.0.2.15/24 dev eth0 && ip route add default via 10.0.2.2 ||
    fail "bringing up eth0"
fi
step "starting the NFS server"
export_dir=$R/run/nfs-tier/export
mkdir -p $export_dir && mount -t tmpfs -o mode=755 tmpfs $export_dir || fail "the export's tmpfs"
mkdir -p /proc/fs/nfsd && mount -t nfsd nfsd /proc/fs/nfsd || fail "mounting the nfsd filesystem"
# Before nfsd starts: knfsd otherwise caps rsize/wsize at 128 KiB; EFS grants no delegations.
echo 1048576 >/proc/fs/nfsd/max_block_size || fail "setting nfsd's max_block_size"
echo 0 >/proc/sys/fs/leases-enable || fail "turning off leases (delegations)"
# A tmpfs has no UUID, hence fsid=0 (it is then also the NFSv4 pseudo-root, mounted as "/").
echo "$export_dir 127.0.0.1(rw,sync,no_root_squash,no_subtree_check,insecure,fsid=0)" >/etc/exports
t exportfs -r || fail "exportfs -r"
# NFSv4.1 only, as EFS (which also serves 4.0; the mounts ask for 4.1). No rpcbind is needed.
t rpc.mountd -N 2 -N 3 --no-udp || fail "rpc.mountd"
t rpc.nfsd -N 3 -N 4.0 -N 4.2 --no-udp -p 2049 8 || fail "rpc.nfsd"
# The server has just started, there is no state to recover: skip the grace period.
echo Y >/proc/fs/nfsd/v4_end_grace || fail "ending nfsd's grace period"

# EFS's recommended mount options, plus nosharecache: each mount has its own superblock, so its
# own dentry, inode and attribute caches, as each ECS task or Lambda has. Attribute-cache
# settings are left at their defaults (acregmin=3, acregmax=60, acdirmin=30, acdirmax=60,
# lookupcache=all), as on EFS. What the mounts do share is the NFSv4 client: one client ID,
# session and TCP connection (Linux keeps one per server and network namespace, and detects by
# session trunking that 127.0.0.2 would be the same server): all mounts' open and lock state is
# held under one client ID and lease, where each ECS task has its own.
opts=nfsvers=4.1,rsize=1048576,wsize=1048576,hard,timeo=600,retrans=2,noresvport,nosharecache
step "mounting $MOUNTS (NFSv4.1)"
mounts='' pids=''
for name in $MOUNTS; do
  mkdir -p $R/mnt/$name || fail "mkdir /mnt/$name"
  t mount.nfs 127.0.0.1:/ $R/mnt/$name -o $opts$MOUNT_OPTS_EXTRA &
  pids="$pids $!:$name"
  mounts=${mounts:+$mounts,}/mnt/$name
done
for p in $pids; do
  wait ${p%%:*} || fail "mounting /mnt/${p#*:} over NFS"
done

if [ "${DELAY_MS:-0}" != 0 ]; then
  step "netem delay ${DELAY_MS}ms on lo"
  t /usr/sbin/tc qdisc add dev lo root netem delay "${DELAY_MS}ms" || fail "tc netem on lo"
fi

# The server's state, for a test that wants to look (e.g. /proc/fs/nfsd/clients).
mount -t nfsd nfsd $R/proc/fs/nfsd 2>/dev/null
mkdir -p $R/run/nfs-tier && cp /nfs-tier/env /nfs-tier/cmd $R/run/nfs-tier/ || fail "copying the command in"
{
  echo "export EFS_NFS_MOUNTS='$mounts'"
  echo "export EFS_NFS_BACKING='/run/nfs-tier/export'"
} >>$R/run/nfs-tier/env

step "running the command"
chroot $R /bin/sh -c '. /run/nfs-tier/env; exec /bin/sh /run/nfs-tier/cmd' </dev/null >/dev/ttyS1 2>&1
rc=$?
say "command exited with status $rc"
echo "NFS-TIER-RC=$rc" >/dev/console
sync
poweroff -f
sleep 60
