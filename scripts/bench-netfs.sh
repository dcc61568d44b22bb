#!/usr/bin/env bash
# Costs over a network file system, on the netfs FUSE test bed at a round trip of RTT_MS
# (default 1 ms): counting (150,000 and 1,000,000 files), 10,000 moves and a drain of 30,000
# with relocate_many, the Rust and Python clients, and the naive count. Prints the Markdown
# of docs/benchmarks.md, "Over a network file system".
#   scripts/bench-netfs.sh            (RTT_MS=1; about 10 minutes on 2 cores)
set -euo pipefail
cd "$(dirname "$0")/.."
rtt=${RTT_MS:-1}
if [ ! -e /dev/fuse ]; then echo "SKIP bench-netfs: no /dev/fuse"; exit 0; fi
cargo build --release -q -p netfs -p efs-router --example netfs_bench --bin netfs-sim
target_dir=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')
echo "Machine: $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB, Linux $(uname -r); backing directory on $(df -T "${TMPDIR:-/tmp}" | awk 'NR==2{print $2}'); $(rustc --version | cut -d' ' -f1-2), $(python3 --version)."
echo
echo "Rust figures: \`$target_dir/release/examples/netfs_bench --rtt-ms $rtt\` (\`cargo run --release -p efs-router --example netfs_bench -- --rtt-ms $rtt\`)" | sed "s|$target_dir|target|"
echo
"$target_dir/release/examples/netfs_bench" --rtt-ms "$rtt"
echo "Python figures: \`scripts/bench-netfs-python.py --sim target/release/netfs-sim --rtt-ms $rtt\`"
echo
# The Python client binds the Rust router: it runs installed (make python-install), not from its source.
python=${PYTHON_CLIENT:-.venv-python-test/bin/python}
[ -x "$python" ] || make --no-print-directory python-install
"$python" scripts/bench-netfs-python.py --sim "$target_dir/release/netfs-sim" --rtt-ms "$rtt"
