#!/usr/bin/env bash
# Installs, from PyPI, each named tool that is not on PATH yet (a library: that this Python cannot import yet):
#   scripts/ensure-tools.sh moto cfn-lint sam mypy ruff pytest fsspec pandas pyarrow dask
set -euo pipefail
python=${PYTHON:-python3}
for tool in "$@"; do
  command="" module=""
  case "$tool" in
    moto) command=moto_server; package="moto[server]" ;;
    cfn-lint) command=cfn-lint; package=cfn-lint ;;
    sam) command=sam; package=aws-sam-cli ;;
    mypy) command=mypy; package=mypy ;;
    ruff) command=ruff; package=ruff ;;
    pytest) command=pytest; package=pytest ;;
    cargo-lambda) command=cargo-lambda; package=cargo-lambda ;;
    maturin) command=maturin; package=maturin ;;
    # Libraries (the Python client's fsspec tests): installed into this Python, so that the test environment,
    # which sees its packages, is not given them anew each time it is made.
    fsspec) module=fsspec; package=fsspec ;;
    pandas) module=pandas; package=pandas ;;
    # The data stack's paths through fsspec (tests/test_fsspec.py): pyarrow's datasets, dask's read_json.
    pyarrow) module=pyarrow; package=pyarrow ;;
    dask) module=dask.dataframe; package="dask[dataframe]" ;;
    *) echo "ensure-tools: unknown tool $tool" >&2; exit 2 ;;
  esac
  if [ -n "$module" ]; then
    "$python" -c "import $module" >/dev/null 2>&1 && continue
    echo "installing $package (the module $module)"
    "$python" -m pip install --quiet --disable-pip-version-check "$package"
    "$python" -c "import $module" >/dev/null 2>&1 || { echo "ensure-tools: $python still cannot import $module after installing $package" >&2; exit 1; }
    continue
  fi
  command -v "$command" >/dev/null 2>&1 && continue
  echo "installing $package (for $command)"
  "$python" -m pip install --quiet --disable-pip-version-check "$package"
  # pyenv puts console scripts on PATH through shims made by `rehash`.
  if command -v pyenv >/dev/null 2>&1; then pyenv rehash; fi
  command -v "$command" >/dev/null 2>&1 || { echo "ensure-tools: $command is still not on PATH after installing $package" >&2; exit 1; }
done
