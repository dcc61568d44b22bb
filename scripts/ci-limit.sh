#!/usr/bin/env bash
# The time limit, in seconds, of a step of `make test` that has one (the NFS tier's VMs):
#
#   scripts/ci-limit.sh DEFAULT KEEP_BACK LEAST
#
# DEFAULT outside CI. Under `.ci/run`, which exports CI_DEADLINE (epoch seconds: its start plus
# its 70 minutes, docs/benchmarks.md), the smaller of DEFAULT and what is left of CI's time once
# KEEP_BACK seconds are kept for the steps after this one: so the whole run is bounded by its
# deadline by construction, however slow its builds were. Fails, naming CI_DEADLINE, when less
# than LEAST seconds would be left, rather than start a step that cannot finish.
set -euo pipefail
default=$1 keep_back=$2 least=$3
if [[ -z "${CI_DEADLINE:-}" ]]; then
  echo "$default"
  exit 0
fi
if ! [[ "$CI_DEADLINE" =~ ^[0-9]+$ ]]; then
  echo "ci-limit: CI_DEADLINE must be epoch seconds, got '$CI_DEADLINE'" >&2
  exit 2
fi
left=$(( CI_DEADLINE - $(date +%s) - keep_back ))
if (( left < least )); then
  echo "ci-limit: $left s of CI's time (CI_DEADLINE) would be left for this step, and it needs at least $least; stopping" >&2
  exit 1
fi
echo $(( left < default ? left : default ))
