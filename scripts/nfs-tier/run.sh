#!/usr/bin/env bash
# Runs a command in a small qemu VM (TCG) that has a real Linux NFSv4.1 server and several NFS
# mounts of its one export, each with its own caches (nosharecache), as each ECS task or Lambda
# has its own NFS client to EFS. One boot runs one command: use `sh -c '...'` for several.
# (The mounts share one NFSv4 client ID, session and TCP connection: Linux keeps one per server.)
#
#   scripts/nfs-tier/run.sh [OPTIONS] -- COMMAND [ARGS...]
#
# Options:
#   --mounts A,B,...    the NFS mounts, each at /mnt/<name> (default fn,t1,t2; [A-Za-z0-9_.-])
#   --delay-ms N        netem delay on the VM's lo, added to every packet, so the round trip of
#                       an NFS call grows by 2*N ms (default 0)
#   --nfs-opts OPTS     more mount options, appended to EFS's (e.g. lookupcache=positive)
#   --rw DIR            also share host directory DIR writable, at the same path (repeatable;
#                       created if missing): the way to get result files out. The guest caches
#                       it as it does the host's root: nothing on the host may write there
#                       while the VM runs
#   --env NAME=VALUE    set an environment variable for the command (repeatable)
#   --host-net          a network card whose gateway, 10.0.2.2, is the host's own 127.0.0.1
#                       (qemu's user networking): the way to reach a server the host runs, such
#                       as moto_server, which takes ~80 s to start under TCG. NFS stays on lo.
#   --timeout SECS      kill the VM after SECS seconds (default $NFS_TIER_TIMEOUT or 1200)
#   --cpus N            vCPUs (default 2);  --memory MIB  guest memory (default 2048)
#   --verbose           copy the VM's console (kernel log, setup steps) to stderr afterwards
#
# Inside the VM the command runs in the host's own root filesystem, shared read-only (virtiofs),
# chrooted: the same paths, binaries, libraries, Python and repository checkout as on the host,
# in the directory run.sh was started from, with run.sh's environment, plus
#   EFS_NFS_MOUNTS=/mnt/A,/mnt/B,...    the mounts, in the order given
#   EFS_NFS_BACKING=/run/nfs-tier/export  the exported directory itself (server-side, no NFS)
# and the server's state under /proc/fs/nfsd. TMPDIR is not passed on (the VM's /tmp is writable).
# /tmp, /run, /mnt and /dev/shm are the VM's own tmpfs; the rest of the host is read-only, except
# the --rw directories. The command runs as root, with stdin from /dev/null; its stdout and
# stderr both come out on run.sh's stdout, as they are written.
# Everything runs ~10x slower than on the host (TCG: under /dev/kvm here a stock kernel does not
# boot). Start Python by its real path (sys.executable), not through pyenv's shims, which are
# shell scripts that take ~40 s in the VM.
#
# Exit status: the command's; 124 when the timeout killed the VM; 125 when the tier itself failed
# (the VM did not boot, or a step of the NFS setup failed: the message on stderr names it);
# 2 for a usage error. It never asks for anything and never skips: a failure is a failure.
#
# It runs prepare.sh first (about 20 s on a new machine, ~0.02 s after). Environment:
#   NFS_TIER_CACHE    where prepare.sh keeps its downloads and builds
#                     (default $HOME/.cache/efs-mount-autoscaler/nfs-tier)
#   NFS_TIER_TIMEOUT  the default of --timeout
#   NFS_TIER_CPU      qemu's -cpu (default max), NFS_TIER_APPEND  more kernel command line
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
usage() { sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}" >&2; exit 2; }
die() { echo "nfs-tier: $*" >&2; exit 125; }

mounts=fn,t1,t2 delay=0 nfs_opts='' timeout_s=${NFS_TIER_TIMEOUT:-1200} cpus=2 memory=2048 verbose=0 host_net=0
rw=() envs=()
while [[ $# -gt 0 ]]; do
  case $1 in
    --mounts) mounts=${2?}; shift 2 ;;
    --delay-ms) delay=${2?}; shift 2 ;;
    --nfs-opts) nfs_opts=${2?}; shift 2 ;;
    --rw) rw+=("${2?}"); shift 2 ;;
    --env) envs+=("${2?}"); shift 2 ;;
    --timeout) timeout_s=${2?}; shift 2 ;;
    --cpus) cpus=${2?}; shift 2 ;;
    --memory) memory=${2?}; shift 2 ;;
    --verbose) verbose=1; shift ;;
    --host-net) host_net=1; shift ;;
    --) shift; break ;;
    -h | --help) usage ;;
    *) echo "nfs-tier: unknown option $1 (the command goes after --)" >&2; usage ;;
  esac
done
[[ $# -gt 0 ]] || { echo "nfs-tier: no command given" >&2; usage; }
[[ $mounts =~ ^[A-Za-z0-9_.-]+(,[A-Za-z0-9_.-]+)*$ ]] || { echo "nfs-tier: bad --mounts $mounts" >&2; exit 2; }
IFS=, read -ra names <<<"$mounts"
[[ ${#names[@]} -le 200 ]] || { echo "nfs-tier: at most 200 mounts" >&2; exit 2; }
[[ $(printf '%s\n' "${names[@]}" | sort | uniq -d) == "" ]] || { echo "nfs-tier: a mount name is repeated in $mounts" >&2; exit 2; }
for n in delay timeout_s cpus memory; do
  [[ ${!n} =~ ^[0-9]+$ ]] || { echo "nfs-tier: --${n%_s} needs a whole number" >&2; exit 2; }
done
[[ $nfs_opts =~ ^[A-Za-z0-9_.=,-]*$ ]] || { echo "nfs-tier: bad --nfs-opts $nfs_opts" >&2; exit 2; }

"$here/prepare.sh" || die "prepare.sh failed"
cache=${NFS_TIER_CACHE:-$HOME/.cache/efs-mount-autoscaler/nfs-tier}
# shellcheck source=/dev/null
. "$cache/env"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/nfs-tier.XXXXXX")
pids=()
# shellcheck disable=SC2329 # (the EXIT trap calls it)
cleanup() {
  local p
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf --one-file-system "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Single-quotes a word for sh.
q() { printf "'%s'" "${1//\'/\'\\\'\'}"; }

# --- what the VM is told: /nfs-tier/{conf,env,cmd} in a cpio appended to the base initramfs ---
mkdir -p "$tmp/extra/nfs-tier"
{
  # The command's environment: this one's, less what names this shell rather than a setting.
  while IFS= read -r -d '' kv; do
    name=${kv%%=*}
    [[ $name =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] || continue
    # (TMPDIR too: the VM's /tmp is writable, the host's other directories are not.)
    case $name in PWD | OLDPWD | SHLVL | _ | TMPDIR | EFS_NFS_MOUNTS | EFS_NFS_BACKING) continue ;; esac
    echo "export $name=$(q "${kv#*=}")"
  done < <(env -0)
  for kv in "${envs[@]}"; do
    [[ $kv == *=* && ${kv%%=*} =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] || { echo "nfs-tier: bad --env $kv" >&2; exit 2; }
    echo "export ${kv%%=*}=$(q "${kv#*=}")"
  done
} >"$tmp/extra/nfs-tier/env"
{
  echo "cd $(q "$PWD") 2>/dev/null || { echo $(q "nfs-tier: $PWD is not visible in the VM, running in /") >&2; cd /; }"
  printf 'exec'
  for a in "$@"; do printf ' %s' "$(q "$a")"; done
  echo
} >"$tmp/extra/nfs-tier/cmd"

# virtiofsd serves one directory each: the host's root, read-only (a read-only bind mount in a
# mount namespace of its own, so a test can't write to the host by mistake; being
# non-recursive, it also leaves out /proc, /sys, /dev and every other mount), and each --rw one.
mkdir -p "$tmp/rootview"
shares='' qemu_fs=()
start_virtiofsd() { # TAG SOURCE ro|rw
  local sock=$tmp/$1.sock
  # cache=always: the guest keeps what it has read (it saves many round trips under TCG). For a
  # --rw one too: the command in the VM is its only writer while the VM runs, and under
  # cache=auto the guest drops a file's pages at each open, so each start of a test's binary
  # there read it again (6.4 s a start of the function's debug binary, against 1.8 s).
  if [[ $3 == ro ]]; then
    unshare -m --propagation private sh -c 'mount --bind -o ro / "$1" && shift && exec "$@"' sh "$2" \
      "$NFS_TIER_VIRTIOFSD" --socket-path="$sock" -o source="$2" -o cache=always -o sandbox=chroot \
      -o log_level=warn >>"$tmp/virtiofsd.log" 2>&1 &
  else
    "$NFS_TIER_VIRTIOFSD" --socket-path="$sock" -o source="$2" -o cache=always -o sandbox=chroot \
      -o log_level=warn >>"$tmp/virtiofsd.log" 2>&1 &
  fi
  pids+=($!)
  qemu_fs+=(-chardev "socket,id=$1,path=$sock" -device "vhost-user-fs-pci,chardev=$1,tag=$1")
}
export LD_LIBRARY_PATH=$NFS_TIER_LIBPATH
start_virtiofsd hostroot "$tmp/rootview" ro
i=0
for d in "${rw[@]}"; do
  mkdir -p "$d"
  d=$(realpath "$d")
  [[ $d != *[[:space:]]* ]] || die "--rw $d: a path with white space is not supported"
  start_virtiofsd "rw$i" "$d" rw
  shares+=" rw$i=$d"
  i=$((i + 1))
done
for ((t = 0; t < 100; t++)); do
  ready=1
  for s in "${qemu_fs[@]}"; do
    [[ $s == socket,id=*,path=* ]] && { [[ -S ${s##*path=} ]] || ready=0; }
  done
  [[ $ready == 1 ]] && break
  sleep 0.05
done
[[ $ready == 1 ]] || { cat "$tmp/virtiofsd.log" >&2; die "virtiofsd did not start"; }

cat >"$tmp/extra/nfs-tier/conf" <<EOF
MOUNTS='${mounts//,/ }'
DELAY_MS=$delay
MOUNT_OPTS_EXTRA='${nfs_opts:+,$nfs_opts}'
SHARES='$shares'
VERBOSE=$verbose
HOST_NET=$host_net
EOF
(cd "$tmp/extra" && find . | "$NFS_TIER_BUSYBOX" cpio -o -H newc -R 0:0 2>/dev/null) >"$tmp/extra.cpio"
# The kernel unpacks concatenated cpio archives one after the other.
cat "$NFS_TIER_INITRD" "$tmp/extra.cpio" >"$tmp/initrd"

net=()
[[ $host_net == 0 ]] || net=(-netdev user,id=net0 -device virtio-net-pci,netdev=net0,romfile=)
firmware=()
IFS=: read -ra fw <<<"$NFS_TIER_FIRMWARE"
for d in "${fw[@]}"; do firmware+=(-L "$d"); done

# ttyS0 is the kernel's console, to a file (shown on failure, or with --verbose); ttyS1 carries
# the command's output to our stdout, through a cat of its own: qemu makes the descriptors it
# writes to non-blocking, which would then be ours too. qemu runs in the background so that a
# signal to this script (Ctrl-C, a CI's kill) ends the VM at once, through cleanup and timeout.
: >"$tmp/console.log"
exec 3> >(exec cat)
cat_pid=$!
timeout -k 10 "$timeout_s" "$NFS_TIER_QEMU" "${firmware[@]}" \
  -M q35 -accel tcg -cpu "${NFS_TIER_CPU:-max}" -smp "$cpus" -m "$memory" \
  -object "memory-backend-memfd,id=mem,size=${memory}M,share=on" -numa node,memdev=mem \
  -nodefaults -no-user-config -display none -no-reboot \
  -chardev "file,id=console,path=$tmp/console.log" -serial chardev:console \
  -chardev stdio,id=out,signal=off -serial chardev:out \
  "${qemu_fs[@]}" "${net[@]}" \
  -kernel "$NFS_TIER_KERNEL" -initrd "$tmp/initrd" \
  -append "console=ttyS0 quiet panic=-1 rdinit=/init cryptomgr.notests ${NFS_TIER_APPEND:-}" \
  </dev/null >&3 &
vm_pid=$!
pids+=("$vm_pid")
exec 3>&-
qemu_status=0
wait "$vm_pid" || qemu_status=$?
# All of the command's output is out before anything else is said.
while kill -0 "$cat_pid" 2>/dev/null; do sleep 0.02; done

[[ $verbose == 1 ]] && { echo "--- nfs-tier: VM console ---" >&2; cat "$tmp/console.log" >&2; }
tail_console() { echo "--- nfs-tier: last lines of the VM console ---" >&2; tail -n 40 "$tmp/console.log" >&2; }
if [[ $qemu_status == 124 || $qemu_status == 137 ]]; then
  [[ $verbose == 1 ]] || tail_console
  if grep -q 'running the command$' "$tmp/console.log"; then
    what="the command did not finish"
  else
    what="the VM's setup did not finish (last step: $(sed -n 's/^nfs-tier: \[[0-9.]*\] //p' "$tmp/console.log" | tail -1))"
  fi
  echo "nfs-tier: TIMEOUT: $what; the VM was killed after $timeout_s s (--timeout, NFS_TIER_TIMEOUT)" >&2
  exit 124
fi
rc=$(sed -n 's/^NFS-TIER-RC=\([0-9]*\).*/\1/p' "$tmp/console.log" | tail -1)
if [[ -z $rc ]]; then
  [[ $verbose == 1 ]] || tail_console
  # (virtiofsd says "fv_remove_watch: TODO!" and "Unexpected poll revents" at every disconnect.)
  if grep -qv -e 'fv_remove_watch: TODO' -e 'Unexpected poll revents' "$tmp/virtiofsd.log"; then
    echo "--- nfs-tier: virtiofsd ---" >&2
    cat "$tmp/virtiofsd.log" >&2
  fi
  failed=$(sed -n 's/^NFS-TIER-FAILED: //p' "$tmp/console.log" | tail -1)
  [[ -n $failed ]] && die "FAILED to set up the NFS tier: $failed"
  die "FAILED: the VM ended (qemu status $qemu_status) without running the command"
fi
exit "$rc"
