#!/usr/bin/env bash
# Counting benchmark: the function's counter against `ls -f | wc -l` on the same directory,
# in the same run, with the stat calls each makes (strace -c -f) and the counter's peak memory.
#   scripts/bench-count.sh [N ...]      (default: 150000 1000000)
set -euo pipefail
cd "$(dirname "$0")/.."
sizes=("${@:-150000}")
[ $# -gt 0 ] || sizes=(150000 1000000)
cargo build --release -q -p efs-router --example count_bench
target_dir=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
bench="$target_dir/release/examples/count_bench"
work=$(mktemp -d "${TMPDIR:-/tmp}/count-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
command -v strace >/dev/null || { echo "strace is needed: apt-get install strace" >&2; exit 1; }

best() { sort -n | head -1; }
echo "machine: $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB, $(uname -r); file system: $(df -T "$work" | awk 'NR==2{print $2}')"
printf '%-9s | %-22s | %-22s | %-7s | %-24s | %-16s\n' files "count_files (best of 5)" "ls -f | wc -l (best of 5)" ratio "stat calls: counter / ls" "counter peak RSS"
for n in "${sizes[@]}"; do
  dir="$work/d$n"; mkdir -p "$dir"
  python3 - "$dir" "$n" <<'PY'
import os, sys
d, n = sys.argv[1], int(sys.argv[2])
for i in range(n):
    open(os.path.join(d, f"device-{i % 5000:05d}-{1700000000 + i}.json"), "wb").close()
PY
  "$bench" "$dir" 1 >/dev/null; ls -f "$dir" >/dev/null   # warm the cache for both
  ours=$(for _ in 1 2 3 4 5; do "$bench" "$dir" 1 | awk '{print $4}'; done | best)
  ls_t=$(for _ in 1 2 3 4 5; do s=$(date +%s.%N); ls -f "$dir" | wc -l >/dev/null; e=$(date +%s.%N); awk -v a="$s" -v b="$e" 'BEGIN{print b-a}'; done | best)
  count=$("$bench" "$dir" 1 | awk '{print $1}')
  [ "$count" = "$n" ] || { echo "counted $count, expected $n" >&2; exit 1; }
  stats() { grep -E ' (stat|lstat|fstat|newfstatat|statx|fstatat64)$' "$1" | awk '{s+=$4} END{print s+0}'; }
  strace -c -f -o "$work/ours.strace" "$bench" "$dir" 1 >/dev/null
  strace -c -f -o "$work/ls.strace" sh -c "ls -f '$dir' | wc -l" >/dev/null
  rss=$( { /usr/bin/time -f '%M' "$bench" "$dir" 1 >/dev/null; } 2>&1 | tail -1)
  printf '%-9s | %-22s | %-22s | %-7s | %-24s | %-16s\n' "$n" "$(printf '%.3f s' "$ours")" "$(printf '%.3f s' "$ls_t")" \
    "$(awk -v a="$ours" -v b="$ls_t" 'BEGIN{printf "%.2f", a/b}')" "$(stats "$work/ours.strace") / $(stats "$work/ls.strace")" "${rss} KiB"
  rm -rf "$dir"
done
