#!/usr/bin/env bash
# The release an operator keeps and deploys with no Rust toolchain (`make package`, docs/operations.md):
# from the arm64 bootstrap `make build` made, target/package/<version>/ (the version in Cargo.toml) holds
#   efs-mount-autoscaler-<version>-arm64.zip   the function's code: `bootstrap` alone, mode 0755
#   template.yaml                              template.yaml with CodeUri on that zip and no build metadata
#   samconfig.toml                             the stack name and deploy settings, for `sam deploy` here
#   events/                                    the events the docs invoke the function with
#   RELEASE                                    the version and the commit it was built from
#   SHA256SUMS                                 each file's SHA-256 (`sha256sum --check SHA256SUMS`)
# and target/package/efs-mount-autoscaler-<version>.tar.gz is that directory, to keep.
#   scripts/package.sh [PATH/TO/bootstrap]   (default: Cargo's target directory's lambda/efs-mount-autoscaler/)
# PACKAGE_DIR moves target/package elsewhere.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}

meta=$(cargo metadata --format-version 1 --no-deps)
read -r version target_dir < <($PYTHON -c 'import json, sys
m = json.load(sys.stdin)
(p,) = [p for p in m["packages"] if p["name"] == "efs-mount-autoscaler"]
print(p["version"], m["target_directory"])' <<<"$meta")
bootstrap=${1:-$target_dir/lambda/efs-mount-autoscaler/bootstrap}
scripts/check-bootstrap.sh "$bootstrap"

base=${PACKAGE_DIR:-$PWD/target/package}
name=efs-mount-autoscaler-$version
out=$base/$version
mkdir -p "$base"
# Made beside, then put in place: a package directory is whole or absent.
work=$(mktemp -d "$base/.$version.XXXXXX")
trap 'rm -rf "$work"' EXIT

# The zip as Lambda takes it: `bootstrap` at the top, executable. Fixed dates, so that the same bootstrap
# gives the same zip (and SAM's upload, keyed by the file's MD5, is skipped when nothing changed).
$PYTHON - "$bootstrap" "$work/$name-arm64.zip" <<'EOF'
import sys, zipfile
src, dst = sys.argv[1], sys.argv[2]
info = zipfile.ZipInfo("bootstrap", date_time=(1980, 1, 1, 0, 0, 0))
info.external_attr = (0o100755 << 16)
info.compress_type = zipfile.ZIP_DEFLATED
info.create_system = 3  # Unix: the mode above is read
with open(src, "rb") as f, zipfile.ZipFile(dst, "w") as z:
    z.writestr(info, f.read())
EOF

# The template: the function's code is the zip beside it (a path relative to the template, which `sam deploy`
# and `aws cloudformation package` upload to S3 and replace by its S3 location), and the function has no
# `BuildMethod` (what makes `sam build` run cargo-lambda). Exact edits: if template.yaml changed shape, this
# fails rather than ship a template that still builds from source.
$PYTHON - template.yaml "$work/template.yaml" "$name-arm64.zip" <<'EOF'
import sys
src, dst, zip_name = sys.argv[1:]
text = open(src).read()
edits = [
    ("    Metadata:\n      BuildMethod: rust-cargolambda\n      BuildProperties:\n        Binary: efs-mount-autoscaler\n", ""),
    ("      CodeUri: .\n", "      CodeUri: %s\n" % zip_name),
]
for old, new in edits:
    if text.count(old) != 1:
        sys.exit("package: template.yaml: expected exactly one %r" % old)
    text = text.replace(old, new)
open(dst, "w").write(text)
EOF

cat >"$work/samconfig.toml" <<'EOF'
# `sam deploy --template-file template.yaml` in this directory reads this file (SAM looks beside the template).
# Add your parameters under [default.deploy.parameters] as parameter_overrides, or pass --parameter-overrides.
version = 0.1

[default.global.parameters]
stack_name = "efs-mount-autoscaler"

[default.deploy.parameters]
capabilities = "CAPABILITY_IAM"
confirm_changeset = true
fail_on_empty_changeset = false
resolve_s3 = true
s3_prefix = "efs-mount-autoscaler"
EOF
mkdir "$work/events"
cp events/*.json "$work/events/"

commit=$(git rev-parse HEAD 2>/dev/null || echo unknown)
git diff --quiet HEAD 2>/dev/null || commit="$commit (with uncommitted changes)"
printf 'efs-mount-autoscaler %s\ncommit %s\nbuilt %s\n' "$version" "$commit" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
  >"$work/RELEASE"
(cd "$work" && find . -type f ! -name SHA256SUMS | sort | sed 's|^\./||' | xargs sha256sum) >"$work/SHA256SUMS"
chmod -R a+rX "$work"

rm -rf "$out"
mv "$work" "$out"
trap - EXIT
tar -C "$base" --sort=name --owner=0 --group=0 --numeric-owner -czf "$base/$name.tar.gz" \
  --transform "s|^$version|$name|" "$version"
echo "package: $out ($(wc -c <"$out/$name-arm64.zip") bytes zipped); to keep: $base/$name.tar.gz"
