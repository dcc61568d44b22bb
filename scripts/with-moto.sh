#!/usr/bin/env bash
# Runs a command beside a moto_server of its own, on a free port of 127.0.0.1, and stops it
# afterwards. The command gets MOTO_ENDPOINT=http://$MOTO_HOST:<port> (MOTO_HOST defaults to
# 127.0.0.1; 10.0.2.2 for a command in the NFS tier's VM started with --host-net, which passes
# the environment on): the tests' harness then uses that moto instead of starting one, and
# resets it first. Under the VM's TCG moto would take ~80 s to start and answer ~10x slower.
#
#   scripts/with-moto.sh COMMAND [ARGS...]
set -euo pipefail
[[ $# -gt 0 ]] || { echo "usage: $0 COMMAND [ARGS...]" >&2; exit 2; }
command -v moto_server >/dev/null || { echo "with-moto: moto_server is not on PATH (pip install \"moto[server]\")" >&2; exit 2; }
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
log=$(mktemp "${TMPDIR:-/tmp}/moto.XXXXXX.log")
moto_server -H 127.0.0.1 -p "$port" >"$log" 2>&1 &
moto=$!
# shellcheck disable=SC2329 # (the EXIT trap calls it)
stop() {
  kill "$moto" 2>/dev/null || true
  wait "$moto" 2>/dev/null || true
  rm -f "$log"
}
trap stop EXIT
trap 'exit 130' INT TERM
export MOTO_ENDPOINT="http://${MOTO_HOST:-127.0.0.1}:$port"
status=0
"$@" || status=$?
if ! kill -0 "$moto" 2>/dev/null; then
  echo "with-moto: moto_server on port $port ended early; its log:" >&2
  cat "$log" >&2
fi
exit "$status"
