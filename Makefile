# The two commands a new machine needs: `make demo` and `make test`.
SHELL := /bin/bash
CARGO ?= cargo
PYTHON ?= python3
# Where pip puts console scripts (moto_server, cfn-lint, sam), whatever Python this is.
export PATH := $(shell $(PYTHON) -c 'import sysconfig; print(sysconfig.get_path("scripts"))' 2>/dev/null):$(HOME)/.local/bin:$(PATH)

.PHONY: test lint unit python-lint python-test template-test demo build bench bench-count bench-routing bench-rebalance-memory tools

## Run every test: format, clippy, Rust unit + end-to-end tests (moto_server), Python client tests, template lint.
test: tools lint unit python-lint python-test template-test

## Install from PyPI what the tests need and is missing: moto_server, cfn-lint, the SAM CLI, mypy, ruff.
tools:
	scripts/ensure-tools.sh moto cfn-lint sam mypy ruff

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

unit:
	$(CARGO) test --workspace

## The Python client: ruff, and mypy --strict on the package and its tests (settings in its pyproject.toml).
python-lint:
	scripts/ensure-tools.sh mypy ruff
	cd clients/python && ruff check && mypy --strict

# The Python client's tests run against the package as pip installs it (not editable), in a
# virtual environment made anew each time that also sees this Python's boto3 and moto, from an
# empty directory outside the clone: `import efs_router` can only find the installed package.
PYTHON_TEST_VENV := $(CURDIR)/.venv-python-test
python-test:
	scripts/ensure-tools.sh moto
	$(PYTHON) -m venv --clear --system-site-packages $(PYTHON_TEST_VENV)
	$(PYTHON_TEST_VENV)/bin/python -m pip install --quiet --disable-pip-version-check './clients/python[ssm]'
	dir=$$(mktemp -d) && trap 'rm -rf "$$dir"' EXIT && cd "$$dir" && \
	  EFS_ROUTER_VECTORS=$(CURDIR)/tests/vectors/routing.json \
	  $(PYTHON_TEST_VENV)/bin/python -m unittest discover -s $(CURDIR)/clients/python/tests -p 'test_*.py' -v

template-test:
	cfn-lint template.yaml
	SAM_CLI_TELEMETRY=0 sam validate --lint --template template.yaml --region us-east-1

## Run the function against moto_server on a generated directory of 60,000 files.
## One cargo invocation builds the binary and the example together, so the AWS SDK is
## compiled once, with the features the tests use too (`make test` after it reuses it).
demo:
	scripts/ensure-tools.sh moto
	$(CARGO) build --bin efs-mount-autoscaler --example demo
	$(CARGO) run --example demo

## A long randomized soak (tests/soak.rs): make soak SEED=<number> STEPS=<number>; the short
## one runs in `make test`. The seed and the step of a failure are printed, with the step log.
.PHONY: soak
soak:
	scripts/ensure-tools.sh moto
	SOAK_SEED=$(SEED) SOAK_STEPS=$(STEPS) $(CARGO) test --test soak -- --nocapture

## The Lambda package: bootstrap for arm64, with cargo-lambda (zig).
build:
	scripts/ensure-tools.sh cargo-lambda
	rustup target add aarch64-unknown-linux-gnu
	cargo lambda build --release --arm64 --bin efs-mount-autoscaler

## Figures for the README: counting against `ls -f`, routing balance and movement.
bench: bench-count bench-routing

bench-count:
	scripts/bench-count.sh

## The function's peak memory in a rebalance that walks N misplaced names (default 500,000).
bench-rebalance-memory:
	scripts/ensure-tools.sh moto
	$(CARGO) build --bin efs-mount-autoscaler --example rebalance_memory
	"$$($(CARGO) metadata --format-version 1 --no-deps | $(PYTHON) -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')/debug/examples/rebalance_memory" $(or $(N),500000)

bench-routing:
	$(CARGO) run --release -p efs-router --example routing_bench

.PHONY: netfs netfs-tools bench-netfs bench-netfs-function

## fusermount3 for the FUSE test bed (netfs/), from Debian's fuse3 when missing. The tests need
## it only when not root: as root they mount without it, and they skip where FUSE cannot mount.
netfs-tools:
	command -v fusermount3 >/dev/null || (apt-get update && apt-get install -y fuse3)

## The network file system test bed on a directory, for manual use; Ctrl-C unmounts.
##   make netfs BACKING=dir MOUNT=dir [RTT_MS=1]; counters: a line `stats` (or `reset`) on the
##   unix socket MOUNT.control.sock answers them as JSON (netfs/src/bin/netfs-sim.rs).
RTT_MS ?= 1
netfs: netfs-tools
	@test -n "$(BACKING)" -a -n "$(MOUNT)" || { echo "usage: make netfs BACKING=dir MOUNT=dir [RTT_MS=1]" >&2; exit 2; }
	$(CARGO) run --release -q -p netfs --bin netfs-sim -- --backing $(BACKING) --mount $(MOUNT) --rtt-ms $(RTT_MS) --control $(MOUNT).control.sock

## Costs over a network file system at 1 ms a round trip (docs/benchmarks.md): about 15 minutes.
bench-netfs: netfs-tools
	RTT_MS=$(RTT_MS) scripts/bench-netfs.sh

## The function's whole reconcile run on the test bed, against moto_server (docs/benchmarks.md):
## a steady run over 150,000 files, and a drain of 30,000 by the function; about 5 minutes.
## One cargo invocation builds the function and the example together, as `make demo` does.
bench-netfs-function: netfs-tools
	scripts/ensure-tools.sh moto
	$(CARGO) build --release -q -p netfs --bin netfs-sim
	$(CARGO) build --bin efs-mount-autoscaler --example reconcile_netfs
	"$$($(CARGO) metadata --format-version 1 --no-deps | $(PYTHON) -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')/debug/examples/reconcile_netfs" --rtt-ms $(RTT_MS)
