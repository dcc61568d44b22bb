# The two commands a new machine needs: `make demo` and `make test`.
SHELL := /bin/bash
CARGO ?= cargo
PYTHON ?= python3

.PHONY: test lint unit python-test template-test demo build bench bench-count bench-routing tools

## Run every test: format, clippy, Rust unit + end-to-end tests (moto_server), Python client tests, template lint.
test: lint unit python-test template-test

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

unit:
	$(CARGO) test --workspace

python-test:
	$(PYTHON) -m unittest discover -s clients/python -p 'test_*.py' -v

template-test:
	cfn-lint template.yaml
	SAM_CLI_TELEMETRY=0 sam validate --lint --template template.yaml --region us-east-1

## Run the function against moto_server on a generated directory of 60,000 files.
demo:
	$(CARGO) build --bin efs-mount-autoscaler
	$(CARGO) run --example demo

## The Lambda package: bootstrap for arm64, with cargo-lambda (zig).
build:
	@command -v cargo-lambda >/dev/null || { echo "cargo-lambda is missing: pip install cargo-lambda (brings zig)"; exit 1; }
	rustup target add aarch64-unknown-linux-gnu
	cargo lambda build --release --arm64 --bin efs-mount-autoscaler

## Figures for the README: counting against `ls -f`, routing balance and movement.
bench: bench-count bench-routing

bench-count:
	scripts/bench-count.sh

bench-routing:
	$(CARGO) run --release -p efs-router --example routing_bench
