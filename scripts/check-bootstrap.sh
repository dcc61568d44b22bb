#!/usr/bin/env bash
# Checks that the Lambda package's binary is what provided.al2023 on arm64 runs: a file named
# `bootstrap` that is an ELF executable for aarch64 (no `file` command needed: the ELF header).
#   scripts/check-bootstrap.sh PATH/TO/bootstrap
set -euo pipefail
f=${1:?usage: scripts/check-bootstrap.sh PATH/TO/bootstrap}
[ "$(basename "$f")" = bootstrap ] || { echo "check-bootstrap: $f: not named bootstrap" >&2; exit 1; }
[ -f "$f" ] || { echo "check-bootstrap: $f: no such file (did the arm64 build run?)" >&2; exit 1; }
[ -x "$f" ] || { echo "check-bootstrap: $f: not executable" >&2; exit 1; }
# Bytes 0-3 the ELF magic, 4 the class (2: 64-bit), 5 the byte order (1: little-endian),
# 16-17 e_type (2: executable, 3: position-independent executable), 18-19 e_machine (183: aarch64).
read -r -a b <<<"$(od -An -v -tu1 -N20 "$f" | tr -s "\n" " ")"
[ "${#b[@]}" -eq 20 ] || { echo "check-bootstrap: $f: shorter than an ELF header" >&2; exit 1; }
[ "${b[0]} ${b[1]} ${b[2]} ${b[3]}" = "127 69 76 70" ] || { echo "check-bootstrap: $f: not an ELF file" >&2; exit 1; }
[ "${b[4]} ${b[5]}" = "2 1" ] || { echo "check-bootstrap: $f: not 64-bit little-endian" >&2; exit 1; }
type=$((b[16] + 256 * b[17])) machine=$((b[18] + 256 * b[19]))
[ "$machine" -eq 183 ] || { echo "check-bootstrap: $f: ELF machine $machine, not aarch64 (183)" >&2; exit 1; }
[ "$type" -eq 2 ] || [ "$type" -eq 3 ] || { echo "check-bootstrap: $f: ELF type $type, not an executable" >&2; exit 1; }
echo "check-bootstrap: $f: aarch64 ELF executable, $(wc -c <"$f") bytes"
