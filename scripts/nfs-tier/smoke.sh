#!/usr/bin/env bash
# Shows, in the NFS tier, the client caching that the tests rely on, with EFS's default
# attribute-cache settings (acdirmin=30 s, acregmin=3 s, lookupcache=all):
#   scripts/nfs-tier/run.sh --mounts a,b -- scripts/nfs-tier/smoke.sh
# Mount A and mount B are two NFS clients of the same export (the first two of EFS_NFS_MOUNTS).
#   1. stale negative entry: A looks a name up (ENOENT, cached); B creates it (temp + rename); A
#      still gets ENOENT; A opens the directory (close-to-open revalidates it), then finds it.
#   2. stale positive entry: B replaces the file by a rename; A still sees the old inode until it
#      opens the directory.
#   3. a name B removed: A's stat still succeeds; A's open (which revalidates) fails with ENOENT.
# Prints what it observes, and exits 1 if any of it is not what is described above.
set -euo pipefail

IFS=, read -r A B _ <<<"${EFS_NFS_MOUNTS:?run this inside scripts/nfs-tier/run.sh}"
[[ -n ${B:-} ]] || { echo "smoke: needs two mounts (--mounts a,b)" >&2; exit 2; }
backing=${EFS_NFS_BACKING:?}
dir=smoke.$$
mkdir "$A/$dir"
ls "$B/$dir" >/dev/null # B knows the (empty) directory too

fails=0
# "inode N" or "ENOENT"; stat(2) goes through the dentry cache, it opens nothing.
look() { stat -c 'inode %i' "$1" 2>/dev/null || echo ENOENT; }
check() { # WHAT GOT EXPECTED
  if [[ $2 == "$3" ]]; then
    printf '  %-62s %s\n' "$1" "$2"
  else
    printf '  %-62s %s   <-- UNEXPECTED, expected %s\n' "$1" "$2" "$3"
    fails=$((fails + 1))
  fi
}
opendir() { ls "$1" >/dev/null; } # opendir(3): open(dir, O_RDONLY|O_DIRECTORY)
create() { printf '%s' "$2" >"$1.tmp" && mv "$1.tmp" "$1"; } # write a temp file, rename over

echo "1. stale negative lookup (A=$A, B=$B)"
check "A: stat name (missing)" "$(look "$A/$dir/name")" ENOENT
create "$B/$dir/name" one
check "B: created it (temp + rename); B: stat" "$(look "$B/$dir/name")" "inode $(stat -c %i "$backing/$dir/name")"
check "A: stat again, at once" "$(look "$A/$dir/name")" ENOENT
sleep 3
check "A: stat again, 3 s later (still within acdirmin=30 s)" "$(look "$A/$dir/name")" ENOENT
opendir "$A/$dir"
check "A: after opendir of the directory, stat" "$(look "$A/$dir/name")" "inode $(stat -c %i "$backing/$dir/name")"

echo "2. stale positive lookup"
old=$(look "$A/$dir/name")
create "$B/$dir/name" two
new="inode $(stat -c %i "$backing/$dir/name")"
check "B: replaced it by a rename: new inode on the server" "$new" "$new"
check "A: stat, at once (the old inode)" "$(look "$A/$dir/name")" "$old"
opendir "$A/$dir"
check "A: after opendir, stat (the new inode)" "$(look "$A/$dir/name")" "$new"
check "A: read it" "$(cat "$A/$dir/name")" two

echo "3. a name removed by the other client"
rm "$B/$dir/name"
check "B: removed it; server side" "$(look "$backing/$dir/name")" ENOENT
check "A: stat, at once (cached positive entry)" "$(look "$A/$dir/name")" "$new"
check "A: open it for reading" "$(cat "$A/$dir/name" 2>/dev/null || echo ENOENT)" ENOENT
check "A: stat after the failed open" "$(look "$A/$dir/name")" ENOENT

rm -rf "${A:?}/$dir"
if [[ $fails == 0 ]]; then
  echo "smoke: all as expected: a second mount does see stale negative and positive entries"
else
  echo "smoke: $fails observation(s) differ from the expected caching (see UNEXPECTED above)"
  exit 1
fi
