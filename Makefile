# The two commands a new machine needs: `make demo` and `make test`.
SHELL := /bin/bash
CARGO ?= cargo
PYTHON ?= python3
# Where pip puts console scripts (moto_server, cfn-lint, sam), whatever Python this is.
export PATH := $(shell $(PYTHON) -c 'import sysconfig; print(sysconfig.get_path("scripts"))' 2>/dev/null):$(HOME)/.local/bin:$(PATH)

# Steps of the soak on the NFS tier in `make test` (400 run on the host, in `unit`).
TIER_SOAK_STEPS ?= 400

.PHONY: test lint unit python-lint python-test template-test nfs-test demo build bench bench-count bench-routing bench-rebalance-memory bench-rebalance tools

## Run every test: format, clippy, Rust unit + end-to-end tests (moto_server), Python client tests, template
## lint, and the data plane on a real NFSv4.1 client (the NFS tier, a small VM).
test: tools lint unit python-lint python-test template-test nfs-test

## Install what the tests need and is missing: from PyPI moto_server, cfn-lint, the SAM CLI, mypy, ruff;
## fuse3 for the FUSE test bed (Debian). The NFS tier installs its own (scripts/nfs-tier/prepare.sh).
tools: netfs-tools
	scripts/ensure-tools.sh moto cfn-lint sam mypy ruff

## The size rules (docs/code.md): plan() within 80 lines, no function over 80 in src/ or 100 in router/src/.
lint:
	$(PYTHON) scripts/fn-sizes.py
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

unit:
	$(CARGO) test --workspace

## The Python client: ruff, and mypy --strict on the package and its tests (settings in its pyproject.toml).
# pytest too: mypy reads its types to check the fsspec suites' fixtures.
python-lint:
	scripts/ensure-tools.sh mypy ruff pytest
	cd clients/python && ruff check && mypy --strict

# The Python client's tests run against the package as pip installs it (not editable): maturin builds its native
# module (the Rust router, clients/python/native) in release, in Cargo's target directory. The virtual environment
# is made anew each time and also sees this Python's boto3, moto, pytest, fsspec, pandas, pyarrow and dask; the
# tests run from an empty directory outside the clone, so `import efs_router` can only find the installed package.
# Then fsspec's own suites for implementations (fsspec.tests.abstract, written for pytest) on the efs-router file system,
# tests/fsspec_suites.py, the same way. The NFS tier's Python tests and bench run this environment's Python too.
PYTHON_TEST_VENV := $(CURDIR)/.venv-python-test
.PHONY: python-install
python-install:
	scripts/ensure-tools.sh moto pytest fsspec pandas pyarrow dask
	$(PYTHON) -m venv --clear --system-site-packages $(PYTHON_TEST_VENV)
	$(PYTHON_TEST_VENV)/bin/python -m pip install --quiet --disable-pip-version-check './clients/python[ssm,fsspec,test]'

python-test: python-install
	dir=$$(mktemp -d) && trap 'rm -rf "$$dir"' EXIT && cd "$$dir" && \
	  EFS_ROUTER_VECTORS=$(CURDIR)/tests/vectors/routing.json \
	  $(PYTHON_TEST_VENV)/bin/python -m unittest discover -s $(CURDIR)/clients/python/tests -p 'test_*.py' -v && \
	  $(PYTHON_TEST_VENV)/bin/python -m pytest -p no:cacheprovider -q -rs $(CURDIR)/clients/python/tests/fsspec_suites.py

## Wheels of the Python client for what Fargate runs, x86_64 and aarch64 (manylinux2014, one per platform for
## every CPython from 3.9: abi3), into target/wheels; built with zig, as the Lambda package is (cargo-lambda's).
.PHONY: wheels
wheels:
	scripts/ensure-tools.sh maturin cargo-lambda
	rustup target add x86_64-unknown-linux-gnu aarch64-unknown-linux-gnu
	for t in x86_64-unknown-linux-gnu aarch64-unknown-linux-gnu; do \
	  (cd clients/python && maturin build --release --zig --target $$t --out $(CURDIR)/target/wheels) || exit 1; done

template-test:
	cfn-lint template.yaml
	SAM_CLI_TELEMETRY=0 sam validate --lint --template template.yaml --region us-east-1

# The tests that need a real NFS client (router/tests/nfs.rs, clients/python/tests_nfs/): ignored on the host,
# run here inside the NFS tier's VM, one boot for all, each actor through its own mount. The VM sees the host's
# files read-only, so the test binary runs from the target directory and Python from this checkout.
# The executable of one test target: $(call test_bin,<cargo test's arguments>).
test_bin = $(CARGO) test $(1) --no-run --message-format=json 2>/dev/null | $(PYTHON) -c 'import json,sys; \
  print(*[m["executable"] for m in map(json.loads, sys.stdin) if m.get("executable") and "test" in m["target"]["kind"]])'
NFS_TEST_BIN = $(call test_bin,-p efs-router --test nfs)
SOAK_BIN = $(call test_bin,--test soak)

## NFS calls per operation and moves per second on the NFS tier (docs/benchmarks.md): NFS_DELAY_MS=1 adds
## 1 ms to every packet (2 ms a round trip); BENCH_FILES=200 files per figure; BENCH_SHARDS=3,21,64 the
## shard counts of the client's operations (default 3); BENCH_MOVES=0 leaves the moves out; BENCH_OPS=create,list
## some of the operations (bench.py); BENCH_LIST_NAMES=10000 names in the listed directory, BENCH_LIST_REPEATS=3 listings.
# The Rust movers (the function's relocate_many, a plain link+unlink) run as router/examples/nfs_moves.rs,
# the Rust client's operations as router/examples/nfs_ops.rs.
nfs_example_bin = $(CARGO) build --release -p efs-router --example $(1) --message-format=json 2>/dev/null | \
  $(PYTHON) -c 'import json,sys; print(*[m["executable"] for m in map(json.loads, sys.stdin) if m.get("executable")])'
## The function's own reads on the NFS tier (docs/operations-reference.md, "What it costs"): NFS calls and bytes of one count
## of a directory of BENCH_READ_FILES files (default 100000,1000000), through scripts/nfs-tier/reads.py.
.PHONY: bench-nfs-reads
bench-nfs-reads:
	$(CARGO) build --release -p efs-router --example count_bench
	bin=$$($(CARGO) metadata --format-version 1 --no-deps | $(PYTHON) -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')/release/examples/count_bench && \
	shares=$$($(NFS_SHARES)) && scripts/nfs-tier/run.sh $$shares --memory $(or $(BENCH_MEMORY),4096) --timeout 3600 \
	  --env EFS_NFS_COUNT_BIN=$$bin $(if $(BENCH_READ_FILES),--env BENCH_READ_FILES=$(BENCH_READ_FILES)) \
	  $(if $(BENCH_READ_AS),--env BENCH_READ_AS=$(BENCH_READ_AS)) -- \
	  $(PYTHON) $(CURDIR)/scripts/nfs-tier/reads.py

.PHONY: bench-nfs-tier
bench-nfs-tier: python-install
	$(CARGO) build --release -p efs-router --example nfs_moves --example nfs_ops
	bin=$$($(call nfs_example_bin,nfs_moves)) && ops=$$($(call nfs_example_bin,nfs_ops)) && test -x "$$bin" && \
	test -x "$$ops" && shares=$$($(NFS_SHARES)) && \
	scripts/nfs-tier/run.sh $$shares --delay-ms $(or $(NFS_DELAY_MS),0) --env NFS_DELAY_MS=$(or $(NFS_DELAY_MS),0) \
	  --env BENCH_FILES=$(or $(BENCH_FILES),200) --env BENCH_SHARDS=$(or $(BENCH_SHARDS),3) \
	  --env BENCH_MOVES=$(or $(BENCH_MOVES),1) $(if $(BENCH_OPS),--env BENCH_OPS=$(BENCH_OPS)) \
	  $(if $(BENCH_LIST_NAMES),--env BENCH_LIST_NAMES=$(BENCH_LIST_NAMES)) \
	  $(if $(BENCH_LIST_REPEATS),--env BENCH_LIST_REPEATS=$(BENCH_LIST_REPEATS)) \
	  $(if $(BENCH_REPLAY),--env BENCH_REPLAY=$(BENCH_REPLAY)) $(if $(BENCH_REPLAY_FILES),--env BENCH_REPLAY_FILES=$(BENCH_REPLAY_FILES)) \
	  --env EFS_NFS_MOVES_BIN=$$bin --env EFS_NFS_OPS_BIN=$$ops -- \
	  sh -c "$(PYTHON_TEST_VENV)/bin/python $(CURDIR)/scripts/nfs-tier/bench.py"

## The NFS tier alone: NFS_DELAY_MS=1 adds a round-trip delay; RACE_SEED= reproduces a race test's draws.
## The soak there (`make soak`) boots first, then the router's and the Python client's tests, in a second boot.
# The VM has its own /tmp, /run and /mnt: a checkout or target directory there is shared into it by name.
# The VM of the router's and the Python client's tests is killed after NFS_TEST_TIMEOUT s: they take about
# 2 minutes (docs/benchmarks.md#on-a-real-nfs-client), 5 beside other builds.
NFS_TEST_TIMEOUT ?= $(or $(NFS_TIER_TIMEOUT),600)
NFS_SHARES = for d in $(CURDIR) "$$(dirname "$$(dirname "$$bin")")"; do case "$$d" in /tmp/*|/run/*|/mnt/*|/dev/shm/*) \
  printf ' --rw %s' "$$d";; esac; done
nfs-test: python-install
	$(MAKE) --no-print-directory soak
	$(CARGO) test -p efs-router --test nfs --no-run
	bin=$$($(NFS_TEST_BIN)) && test -x "$$bin" && shares=$$($(NFS_SHARES)) && \
	limit=$$(scripts/ci-limit.sh $(NFS_TEST_TIMEOUT) 300 240) && \
	scripts/nfs-tier/run.sh $$shares --delay-ms $(or $(NFS_DELAY_MS),0) $(if $(RACE_SEED),--env NFS_RACE_SEED=$(RACE_SEED)) \
	  --timeout $$limit -- \
	  sh -c "$(PYTHON_TEST_VENV)/bin/python -m unittest discover -v \
	      -s $(CURDIR)/clients/python/tests_nfs -p 'test_*.py' && \
	    cd $(CURDIR)/router && $$bin --ignored --skip crash_child --test-threads 1 --color never"

## The long soaks, with a record (docs/testing.md): 10 seeds of 2,000 steps on the host, then 3 on the NFS tier,
## taken in turn from scripts/soak-seeds.txt; their tables replace a section of docs/benchmarks.md. A failure
## prints the command that runs it again. Smaller: SOAK_LONG_HOST=N SOAK_LONG_TIER=N SOAK_LONG_STEPS=N;
## SOAK_LONG_JOBS=2 runs two host seeds at a time.
.PHONY: soak-long
soak-long:
	scripts/ensure-tools.sh moto
	$(PYTHON) scripts/soak-long.py

## Run the function against moto_server on a generated directory of 60,000 files.
## One cargo invocation builds the binary and the example together, so the AWS SDK is
## compiled once, with the features the tests use too (`make test` after it reuses it).
demo:
	scripts/ensure-tools.sh moto
	$(CARGO) build --bin efs-mount-autoscaler --example demo
	$(CARGO) run --example demo

## The randomized soak (tests/soak.rs) on the NFS tier: the function, moto and the clients in the VM, the
## function on its own NFS mount and the clients on two others. make soak SEED=<number> STEPS=<number>
## (default: the seed and steps `make test` runs). A failure prints its seed, its step and the step log.
# The VM is killed after SOAK_TIER_TIMEOUT s; the soak has a budget of its own below that (the VM's
# boot, one last step and the log's printing fit in the difference): past it, it fails with its step
# log instead of being killed with nothing to show. The default seed took 931 s of steps there
# (2026-12-02; its wind-down 856 steps), and on 2026-12-03 1,248 s on an idle machine, then in two CI
# runs of one course (145 runs) 1,075 s and 1,864 s: the VM's speed varies that much. Since the
# function's crate and the crates hot in its runs are optimised in the dev profile (Cargo.toml), a
# run costs less than half the CPU it did; the VM gets 1,800 s and the soak 1,600, which keeps
# `.ci/run` within 70 minutes from an empty target directory (docs/benchmarks.md).
.PHONY: soak soak-local
SOAK_TIER_TIMEOUT ?= $(or $(NFS_TIER_TIMEOUT),1800)
SOAK_DEADLINE_SECS ?= $(shell echo $$(( $(SOAK_TIER_TIMEOUT) - 200 )))
# Under .ci/run (CI_DEADLINE), the soak's VM gets at most what is left of CI's 70 minutes once the tier
# tests' VM (NFS_TEST_TIMEOUT) and the arm64 build of efs-route after them (5 minutes) are kept back
# (scripts/ci-limit.sh); the soak's own budget stays 200 s under its VM's limit.
SOAK_KEEP_BACK = $(shell echo $$(( $(NFS_TEST_TIMEOUT) + 300 )))
soak:
	scripts/ensure-tools.sh moto
	$(CARGO) test --test soak --no-run
	bin=$$($(SOAK_BIN)) && test -x "$$bin" && shares=$$($(NFS_SHARES)) && \
	limit=$$(scripts/ci-limit.sh $(SOAK_TIER_TIMEOUT) $(SOAK_KEEP_BACK) 600) && \
	MOTO_HOST=10.0.2.2 scripts/with-moto.sh scripts/nfs-tier/run.sh --host-net $$shares \
	  --delay-ms $(or $(NFS_DELAY_MS),0) --env SOAK_SEED=$(SEED) --env SOAK_STEPS=$(or $(STEPS),$(TIER_SOAK_STEPS)) \
	  --timeout $$limit --env SOAK_DEADLINE_SECS=$$(( limit - $(SOAK_TIER_TIMEOUT) + $(SOAK_DEADLINE_SECS) )) \
	  --env CARGO_MANIFEST_DIR=$(CURDIR) -- $$bin --test-threads 1 --nocapture --color never

## The same soak on one local directory (one cache: every client agrees), as `cargo test` runs it.
soak-local:
	scripts/ensure-tools.sh moto
	SOAK_SEED=$(SEED) SOAK_STEPS=$(STEPS) $(CARGO) test --test soak -- --nocapture

## Whether a change meant to keep behaviour (a rename, a move of code) kept every answer the function gives
## across the host tests (all but the soak): make same-answers BASE=<commit> [HEAD=<commit>] (docs/testing.md).
.PHONY: same-answers
same-answers:
	scripts/ensure-tools.sh moto
	scripts/same-answers.sh $(or $(BASE),$(error BASE=<commit> is needed)) $(or $(HEAD),HEAD)

## The Lambda package: bootstrap for arm64, with cargo-lambda (zig).
build:
	scripts/ensure-tools.sh cargo-lambda
	rustup target add aarch64-unknown-linux-gnu
	cargo lambda build --release --arm64 --bin efs-mount-autoscaler

## The release operators keep and deploy with no Rust toolchain: the bootstrap zip and a template that takes it,
## in target/package/<version>/, and that directory as target/package/efs-mount-autoscaler-<version>.tar.gz
## (scripts/package.sh; how to deploy it: docs/operations.md). tests/package.rs checks it.
.PHONY: package
package: build
	scripts/package.sh

## Figures for the README: counting against `ls -f`, routing balance and movement.
bench: bench-count bench-routing

bench-count:
	scripts/bench-count.sh

## The function's peak memory in a rebalance that walks N misplaced names (default 500,000).
bench-rebalance-memory:
	scripts/ensure-tools.sh moto
	$(CARGO) build --bin efs-mount-autoscaler --example rebalance_memory
	"$$($(CARGO) metadata --format-version 1 --no-deps | $(PYTHON) -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')/debug/examples/rebalance_memory" $(or $(N),500000)

## A rebalance's walk after one shard was added to SHARDS (default 40) over N files (default
## 2,000,000, made once on local disk): CPU per file, full against added-shard comparison.
bench-rebalance:
	$(CARGO) run --release --example rebalance_bench -- $(or $(N),2000000) $(or $(SHARDS),40)

bench-routing:
	$(CARGO) run --release -p efs-router --example routing_bench

.PHONY: netfs netfs-tools bench-netfs bench-netfs-function

## fusermount3 for the FUSE test bed (netfs/), from Debian's fuse3 when missing. The tests need
## it only when not root: as root they mount without it. Where FUSE cannot mount they skip, but
## fail in CI (CI set): a test that cannot run there is a failure.
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
