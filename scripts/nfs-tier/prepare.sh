#!/usr/bin/env bash
# Prepares, once, everything the NFS tier (run.sh) needs, in a cache outside the repository:
#   ${NFS_TIER_CACHE:-$HOME/.cache/efs-mount-autoscaler/nfs-tier}
#
#   scripts/nfs-tier/prepare.sh            # builds what is missing; ~0.01 s when all is cached
#   scripts/nfs-tier/prepare.sh --refresh  # resolves the kernel version anew and rebuilds
#
# Everything comes from Debian's packages, downloaded with `apt-get download` and unpacked with
# `dpkg-deb -x` into the cache: nothing is installed on the host, so a preinstalled newer
# qemu-utils is left alone (installing qemu-system-x86 7.2 would remove it).
#   - qemu-system-x86 (TCG; /dev/kvm exists on these machines but a stock kernel hangs under it),
#     with its virtiofsd, which shares host directories with the guest;
#   - Debian's cloud kernel, whose modules include nfsd, nfsv4, virtiofs and sch_netem (it has no
#     9p; the generic kernel does, but takes ~5 s longer to boot under TCG);
#   - busybox-static, nfs-utils (nfs-kernel-server, nfs-common) and iproute2's `tc`, with the
#     shared libraries they need, in a base initramfs (cache/base.cpio).
# It records what it built in cache/env (sourced by run.sh) and cache/stamp. The stamp holds a
# hash of this script and of init.sh, so editing either rebuilds the initramfs.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache=${NFS_TIER_CACHE:-$HOME/.cache/efs-mount-autoscaler/nfs-tier}
refresh=0
case "${1:-}" in
  --refresh) refresh=1 ;;
  "") ;;
  *) echo "usage: $0 [--refresh]" >&2; exit 2 ;;
esac

mkdir -p "$cache"
# Two runs at once (two terminals, or make -j) must not build over each other.
exec 9>"$cache/.lock"
flock 9

key=$(cat "$here/prepare.sh" "$here/init.sh" | sha256sum | cut -c1-16)
if [[ $refresh == 0 && -f $cache/stamp && $(cat "$cache/stamp") == "$key" && -f $cache/env ]]; then
  exit 0
fi

log() { echo "nfs-tier prepare: $*" >&2; }
die() { echo "nfs-tier prepare: FAILED: $*" >&2; exit 1; }
start=$SECONDS
rm -f "$cache/stamp"

# apt-get download runs as root here; without this it warns that the _apt user cannot write the
# download directory.
apt_get() { apt-get -q -o APT::Sandbox::User=root "$@"; }

# The package lists may be missing on a new machine, or old enough that a download 404s: update
# them when a look-up or a download fails, once.
updated=0
apt_update() {
  [[ $updated == 1 ]] && return 0
  log "apt-get update"
  apt_get update -qq >/dev/null || die "apt-get update"
  updated=1
}

command -v apt-get >/dev/null || die "apt-get not found: this needs a Debian 12 host"
if ! apt-cache show linux-image-cloud-amd64 >/dev/null 2>&1; then apt_update; fi

# The versioned kernel package changes with Debian's point releases: resolve it now (or reuse the
# one recorded, so that a rebuild after editing a script keeps the same kernel).
kpkg=
if [[ $refresh == 0 && -f $cache/env ]]; then
  kpkg=$(sed -n 's/^NFS_TIER_KERNEL_PACKAGE=//p' "$cache/env")
fi
if [[ -z $kpkg ]]; then
  kpkg=$(apt-cache depends linux-image-cloud-amd64 | awk '$1 == "Depends:" && $2 ~ /^linux-image-[0-9]/ { print $2; exit }')
fi
[[ -n $kpkg ]] || die "could not resolve linux-image-cloud-amd64 to a versioned kernel package"
kver=${kpkg#linux-image-}
log "kernel $kver"

# What to download: the packages named here, plus those of their dependencies that this host
# lacks (the simulation lists them; libraries the host has are copied from the host).
wanted=(
  "$kpkg" busybox-static nfs-kernel-server nfs-common libtirpc-common iproute2 netbase
  qemu-system-x86 qemu-system-common qemu-system-data seabios
)
missing=$(apt-get install -s --no-install-recommends "${wanted[@]}" 2>/dev/null | awk '$1 == "Inst" { print $2 }') || true
mapfile -t pkgs < <(printf '%s\n' "${wanted[@]}" $missing | sort -u)

debs=$cache/debs
mkdir -p "$debs"
# The files the candidate versions come in: fetch only those not downloaded yet.
uris() { apt-get download --print-uris "${pkgs[@]}" 2>/dev/null | awk '{ print $2 }'; }
files=$(uris) || true
if [[ -z $files ]]; then
  apt_update
  files=$(uris) || die "apt-get download --print-uris ${pkgs[*]}"
fi
fetch=()
for p in "${pkgs[@]}"; do
  f=$(grep -m1 "^${p}_" <<<"$files") || die "no download found for $p"
  [[ -s $debs/$f ]] || fetch+=("$p")
done
if [[ ${#fetch[@]} -gt 0 ]]; then
  log "downloading ${#fetch[@]} packages"
  (cd "$debs" && apt_get download "${fetch[@]}" >/dev/null) || die "apt-get download ${fetch[*]}"
fi

# Unpack every package into one tree (again only when the set of files changed).
root=$cache/root
if [[ ! -f $root/.files || $(cat "$root/.files") != "$files" ]]; then
  log "unpacking ${#pkgs[@]} packages"
  rm -rf "$root.new" "$root.old"
  mkdir -p "$root.new"
  while read -r f; do dpkg-deb -x "$debs/$f" "$root.new"; done <<<"$files"
  echo "$files" >"$root.new/.files"
  # Swapped in whole: a VM that another run.sh is starting keeps the files it opened.
  if [[ -d $root ]]; then mv "$root" "$root.old"; fi
  mv "$root.new" "$root"
  rm -rf "$root.old"
fi
libpath=$root/usr/lib/x86_64-linux-gnu:$root/lib/x86_64-linux-gnu

qemu=$root/usr/bin/qemu-system-x86_64
virtiofsd=$root/usr/lib/qemu/virtiofsd
kernel=$root/boot/vmlinuz-$kver
moddir=$root/lib/modules/$kver
for f in "$qemu" "$virtiofsd" "$kernel" "$moddir" "$root/bin/busybox"; do
  [[ -e $f ]] || die "$f is missing after unpacking"
done
if LD_LIBRARY_PATH=$libpath ldd "$qemu" "$virtiofsd" | grep -q 'not found'; then
  LD_LIBRARY_PATH=$libpath ldd "$qemu" "$virtiofsd" | grep 'not found' >&2
  die "qemu's shared libraries are incomplete"
fi
bb=$root/bin/busybox

# modules.dep, which the package leaves to its postinst (depmod); busybox's depmod writes it.
"$bb" depmod -b "$root" "$kver" || die "depmod"

# --- the initramfs --------------------------------------------------------------------------
ir=$cache/initramfs
rm -rf "$ir"
mkdir -p "$ir"/{bin,sbin,usr/sbin,etc,lib/x86_64-linux-gnu,lib64,proc,sys,dev,run,tmp,mnt,host,srv}
mkdir -p "$ir"/var/lib/nfs/{sm,sm.bak,v4recovery,rpc_pipefs} "$ir/lib/modules/$kver"
cp "$bb" "$ir/bin/busybox"
for applet in $("$bb" --list); do
  # busybox's own tc has no netem: the real one is usr/sbin/tc, called by its full path.
  [[ $applet == busybox || $applet == tc ]] || ln -s busybox "$ir/bin/$applet"
done

# The kernel modules, in two lists, each in the order to insmod them (every module after those
# it depends on): virtio_pci and virtiofs, to reach the host's files, and the NFS server and
# client with sch_netem, which init.sh loads meanwhile (module loading is slow under TCG).
declare -A seen=()
order=()
visit() {
  local m=$1 d line
  [[ -n ${seen[$m]:-} ]] && return 0
  seen[$m]=1
  line=$(grep -m1 -E "(^|/)${m}\.ko:" "$moddir/modules.dep") || die "module $m not in modules.dep"
  for d in ${line#*:}; do visit "$(basename "$d" .ko)"; done
  order+=("${line%%:*}")
}
modules() { # LIST MODULE...
  local list=$1 rel
  shift
  order=()
  for m in "$@"; do visit "$m"; done
  : >"$ir/lib/modules/$list"
  for rel in "${order[@]}"; do
    mkdir -p "$ir/lib/modules/$kver/$(dirname "$rel")"
    cp "$moddir/$rel" "$ir/lib/modules/$kver/$rel"
    echo "/lib/modules/$kver/$rel" >>"$ir/lib/modules/$list"
  done
}
modules virtiofs.list virtio_pci virtiofs
modules nfs.list nfsd nfsv4 sch_netem
modules net.list virtio_net

# nfs-utils and tc, with the shared libraries ldd finds for them (from the unpacked packages
# first, the host's otherwise). Everything is installed at its usual path.
bins=(sbin/mount.nfs usr/sbin/rpc.nfsd usr/sbin/rpc.mountd usr/sbin/exportfs sbin/tc)
for b in "${bins[@]}"; do
  src=$root/$b
  [[ -e $src ]] || src=$root/usr/$b
  [[ -e $src ]] || die "$b not found in the unpacked packages"
  case $b in sbin/tc) dest=usr/sbin/tc ;; *) dest=$b ;; esac
  mkdir -p "$ir/$(dirname "$dest")"
  cp -L "$src" "$ir/$dest"
  deps=$(LD_LIBRARY_PATH=$libpath ldd "$src") || die "ldd $src"
  if grep -q 'not found' <<<"$deps"; then echo "$deps" >&2; die "libraries of $b are missing"; fi
  while read -r lib; do
    case $lib in
      */ld-linux-x86-64.so.2) cp -L "$lib" "$ir/lib64/ld-linux-x86-64.so.2" ;;
      *) cp -L "$lib" "$ir/lib/x86_64-linux-gnu/$(basename "$lib")" ;;
    esac
  done < <(awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' <<<"$deps" | sort -u)
done
ln -s ../sbin/mount.nfs "$ir/sbin/mount.nfs4"
cp "$root/etc/services" "$root/etc/protocols" "$root/etc/netconfig" "$ir/etc/"
printf 'root:x:0:0:root:/:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n' >"$ir/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' >"$ir/etc/group"
: >"$ir/var/lib/nfs/state"
: >"$ir/etc/fstab"
cp "$here/init.sh" "$ir/init"
chmod 755 "$ir/init"

# Uncompressed: under TCG the kernel unpacks it faster than it gunzips a smaller one, and the
# image is only read from the host's page cache.
(cd "$ir" && find . | "$bb" cpio -o -H newc -R 0:0 2>/dev/null) >"$cache/base.cpio.tmp"
mv "$cache/base.cpio.tmp" "$cache/base.cpio"

cat >"$cache/env" <<EOF
NFS_TIER_KERNEL_PACKAGE=$kpkg
NFS_TIER_KERNEL_VERSION=$kver
NFS_TIER_KERNEL=$kernel
NFS_TIER_INITRD=$cache/base.cpio
NFS_TIER_QEMU=$qemu
NFS_TIER_VIRTIOFSD=$virtiofsd
NFS_TIER_BUSYBOX=$bb
NFS_TIER_LIBPATH=$libpath
NFS_TIER_FIRMWARE=$root/usr/share/qemu:$root/usr/share/seabios:$root/usr/lib/ipxe/qemu
EOF
echo "$key" >"$cache/stamp"
log "ready in $((SECONDS - start)) s: kernel $kver, initramfs $(du -h "$cache/base.cpio" | cut -f1) ($cache)"
