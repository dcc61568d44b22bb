#!/usr/bin/env bash
# Installs, from PyPI, each named tool that is not on PATH yet:
#   scripts/ensure-tools.sh moto cfn-lint sam mypy ruff
set -euo pipefail
python=${PYTHON:-python3}
for tool in "$@"; do
  case "$tool" in
    moto) command=moto_server; package="moto[server]" ;;
    cfn-lint) command=cfn-lint; package=cfn-lint ;;
    sam) command=sam; package=aws-sam-cli ;;
    mypy) command=mypy; package=mypy ;;
    ruff) command=ruff; package=ruff ;;
    cargo-lambda) command=cargo-lambda; package=cargo-lambda ;;
    *) echo "ensure-tools: unknown tool $tool" >&2; exit 2 ;;
  esac
  command -v "$command" >/dev/null 2>&1 && continue
  echo "installing $package (for $command)"
  "$python" -m pip install --quiet --disable-pip-version-check "$package"
  # pyenv puts console scripts on PATH through shims made by `rehash`.
  if command -v pyenv >/dev/null 2>&1; then pyenv rehash; fi
  command -v "$command" >/dev/null 2>&1 || { echo "ensure-tools: $command is still not on PATH after installing $package" >&2; exit 1; }
done
