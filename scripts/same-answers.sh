#!/usr/bin/env bash
# Whether two commits give the same answers: every answer the function gives across the host
# test suite (all but the soak), recorded at each and compared by scripts/transcript.py.
# For a change meant to keep behaviour, a rename or a move of code:
#
#   scripts/same-answers.sh <base> [<head>]     (head: HEAD)
#
# Each commit is checked out in a worktree of its own; one target directory serves both, so
# each is built just before its tests run (the tests start the function binary by its path).
# A test whose answers differ is run four times more at each commit: if its answers also differ
# within one commit, it is unsettled (its answers rest on timing) and told apart from a change.
# More than 10 tests differing is a change: none is run again.
# Exit 1 when some test's answers differ between the commits and are settled within each.
# OUT (default a new temporary directory) keeps the answers; CARGO_TARGET_DIR the build.
set -euo pipefail

repo=$(git rev-parse --show-toplevel)
base=$(git -C "$repo" rev-parse --verify "${1:?usage: $0 <base> [<head>]}^{commit}")
head=$(git -C "$repo" rev-parse --verify "${2:-HEAD}^{commit}")
out=${OUT:-$(mktemp -d)}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$HOME/.cache/efs-mount-autoscaler/same-answers}
transcript=$repo/scripts/transcript.py
# The commit that gave the tests EFS_TRANSCRIPT: put into an older commit's worktree.
hook=$(git -C "$repo" log --format=%H --reverse -S EFS_TRANSCRIPT -- tests/support/function.rs | head -n1)
work=$(mktemp -d)
trap 'for w in "$work"/*; do git -C "$repo" worktree remove --force "$w" 2>/dev/null || true; done; rm -rf "$work"' EXIT

# build <commit>: checks it out (with the hook) and builds its tests; prints the test binaries.
build() {
  local c=$1 w=$work/$1
  if [[ ! -d $w ]]; then
    git -C "$repo" worktree add --quiet --detach "$w" "$c"
    if ! grep -q EFS_TRANSCRIPT "$w/tests/support/function.rs"; then
      [[ -n $hook ]] || { echo "no commit adds EFS_TRANSCRIPT to tests/support/function.rs" >&2; exit 2; }
      git -C "$repo" show "$hook" -- tests/support/function.rs | git -C "$w" apply ||
        { echo "cannot add the transcript hook ($hook) to $c's tests/support/function.rs" >&2; exit 2; }
    fi
  fi
  (cd "$w" && cargo test --tests --no-run --message-format=json 2>"$out/$c.build.log") |
    python3 -c 'import json, sys
print(*[m["executable"] for m in map(json.loads, sys.stdin)
        if m.get("executable") and m["target"]["kind"] == ["test"] and "/tests/" in m["target"]["src_path"]])'
}

mkdir -p "$out"
for c in "$base" "$head"; do
  echo "building $c ($(git -C "$repo" log -1 --format=%s "$c"))"
  bins=$(build "$c")
  [[ -n $bins ]] || { echo "$c does not build: $out/$c.build.log" >&2; exit 2; }
  # shellcheck disable=SC2086
  python3 "$transcript" record "$out/$c/1" $bins > "$out/$c.record.log"
  echo "  $(grep -c '^passed' "$out/$c.record.log" || true) tests passed," \
    "$(grep -c '^FAILED' "$out/$c.record.log" || true) failed"
done

if python3 "$transcript" compare "$out/$base/1" "$out/$head/1" > "$out/compare.log"; then
  tail -n1 "$out/compare.log"
  echo "the same answers: $out"
  exit 0
fi
differing=$(sed -n 's/^differs: \([^ ]*\) .*/\1/p' "$out/compare.log")
count=$(echo "$differing" | wc -l)
if (( count > 10 )); then
  # Timing moves a few tests' answers, not this many: a change, with no runs again.
  cat "$out/compare.log"
  echo "$count tests differ, too many to be timing: the answers changed ($out)"
  exit 1
fi
echo "$count tests differ; each run four times more at both commits"
# Head first: its build is the one in the target directory, so only the base is built again.
for c in "$head" "$base"; do
  bins=$(build "$c")
  for n in 2 3 4 5; do
    # shellcheck disable=SC2086
    python3 "$transcript" record "$out/$c/$n" --only "$differing" $bins > /dev/null
  done
done
python3 "$transcript" settle "$out/$base" "$out/$head" $differing
