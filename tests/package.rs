//! The release `make package` makes (scripts/package.sh), as an operator deploys it with no Rust
//! toolchain: `target/package/<version>/` (or `$PACKAGE_DIR/<version>/`), the version this crate's.
//!
//! These tests read a package that is there; they do not build one (the arm64 build takes
//! minutes). Where there is none they say so and pass, except in CI (`CI` set), where `.ci/run`
//! runs `make package` first and a missing package is a failure.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use support::moto::Moto;

const VERSION: &str = env!("CARGO_PKG_VERSION");
const FUNCTION: &str = "AutoscalerFunction";

fn zip_name() -> String {
    format!("efs-mount-autoscaler-{VERSION}-arm64.zip")
}

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn python() -> String {
    std::env::var("PYTHON").unwrap_or_else(|_| "python3".into())
}

/// The package's directory, or `None` (outside CI) when `make package` has not run.
fn package() -> Option<PathBuf> {
    let base = std::env::var_os("PACKAGE_DIR")
        .filter(|d| !d.is_empty())
        .map_or_else(|| repo().join("target/package"), PathBuf::from);
    let dir = base.join(VERSION);
    if dir.join("template.yaml").is_file() {
        return Some(dir);
    }
    let ci = std::env::var_os("CI").is_some_and(|v| !v.is_empty());
    assert!(
        !ci,
        "no package at {} (CI): run `make package` before the tests",
        dir.display()
    );
    eprintln!(
        "no package at {}: `make package` makes one; not checked",
        dir.display()
    );
    None
}

fn run(cmd: &mut Command) -> String {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8 output")
}

/// A template as JSON, decoded by cfn-lint (short-form tags become `Fn::…`), as tests/template.rs.
fn decode(path: &Path) -> Value {
    let script = "import json, sys\n\
                  from cfnlint.decode import decode\n\
                  tpl, matches = decode(sys.argv[1])\n\
                  if matches or tpl is None:\n\
                  \x20   sys.exit('cannot decode the template: ' + '; '.join(str(m) for m in matches))\n\
                  json.dump(tpl, sys.stdout)\n";
    let out = run(Command::new(python()).args(["-c", script]).arg(path));
    serde_json::from_str(&out).expect("the decoder prints JSON")
}

#[test]
fn the_packaged_template_passes_cfn_lint() {
    let Some(dir) = package() else { return };
    run(Command::new("cfn-lint").arg(dir.join("template.yaml")));
}

#[test]
fn the_functions_code_is_the_zip_beside_the_template_and_nothing_builds() {
    let Some(dir) = package() else { return };
    let packaged = decode(&dir.join("template.yaml"));
    let resources = packaged["Resources"].as_object().unwrap();
    let functions: Vec<_> = resources
        .iter()
        .filter(|(_, r)| r["Type"] == "AWS::Serverless::Function")
        .collect();
    assert_eq!(
        functions
            .iter()
            .map(|(n, _)| n.as_str())
            .collect::<Vec<_>>(),
        [FUNCTION]
    );
    for (name, resource) in &functions {
        assert_eq!(
            resource["Properties"]["CodeUri"],
            zip_name().as_str(),
            "{name}"
        );
        assert!(
            resource["Properties"].get("ImageUri").is_none(),
            "{name}: an image"
        );
    }
    assert!(dir.join(zip_name()).is_file());
    // What makes `sam build` run cargo-lambda: no resource may carry it.
    for (name, resource) in resources {
        let metadata = resource.get("Metadata");
        assert!(
            metadata.is_none_or(|m| m.get("BuildMethod").is_none()),
            "{name}: {metadata:?}"
        );
    }
    // Otherwise the template this checkout deploys: a package made before a change to it is stale.
    let mut source = decode(&repo().join("template.yaml"));
    let function = &mut source["Resources"][FUNCTION];
    function.as_object_mut().unwrap().remove("Metadata");
    function["Properties"]["CodeUri"] = zip_name().into();
    assert!(
        source == packaged,
        "{} differs from template.yaml beyond the function's code: run `make package` again",
        dir.join("template.yaml").display()
    );
}

#[test]
fn the_zip_holds_an_executable_aarch64_bootstrap_alone() {
    let Some(dir) = package() else { return };
    let tmp = tempfile::tempdir().unwrap();
    // Its entries, each with its Unix mode, then extracted (as Lambda does, keeping the mode).
    let script = "import os, sys, zipfile\n\
                  z = zipfile.ZipFile(sys.argv[1])\n\
                  for i in z.infolist():\n\
                  \x20   print(i.filename, oct(i.external_attr >> 16))\n\
                  \x20   p = z.extract(i, sys.argv[2])\n\
                  \x20   os.chmod(p, (i.external_attr >> 16) & 0o777)\n";
    let listing = run(Command::new(python())
        .args(["-c", script])
        .arg(dir.join(zip_name()))
        .arg(tmp.path()));
    assert_eq!(listing.trim(), "bootstrap 0o100755");
    run(Command::new(repo().join("scripts/check-bootstrap.sh")).arg(tmp.path().join("bootstrap")));
}

/// Commands that must not run while deploying: each, when run, leaves its name in `tripped`.
fn tripwires(bin: &Path, tripped: &Path) {
    for name in ["cargo", "cargo-lambda", "rustc", "rustup", "zig"] {
        let path = bin.join(name);
        let script = format!(
            "#!/bin/sh\necho {name} >> '{}'\nexit 1\n",
            tripped.display()
        );
        std::fs::write(&path, script).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
}

/// S3 through boto3 (moto's dependency) against `endpoint`: `mb BUCKET`, or `get BUCKET KEY FILE`.
fn s3(endpoint: &str, args: &[&str]) {
    let script = "import sys, boto3\n\
                  s3 = boto3.client('s3', endpoint_url=sys.argv[1], region_name='us-east-1',\n\
                  \x20   aws_access_key_id='test', aws_secret_access_key='test')\n\
                  if sys.argv[2] == 'mb':\n\
                  \x20   s3.create_bucket(Bucket=sys.argv[3])\n\
                  else:\n\
                  \x20   s3.download_file(sys.argv[3], sys.argv[4], sys.argv[5])\n";
    run(Command::new(python())
        .args(["-c", script, endpoint])
        .args(args));
}

/// `sam package`, what `sam deploy` runs first (and what `aws cloudformation package` does
/// alike), against moto's S3: the code uploaded is the zip, byte for byte, with no Rust toolchain
/// on `PATH` (tripwires in its place, `~/.cargo/bin` left out).
#[test]
fn packaging_for_s3_uploads_the_zip_and_runs_no_rust_toolchain() {
    let Some(dir) = package() else { return };
    let moto = Moto::start();
    let tmp = tempfile::tempdir().unwrap();
    let bin = tmp.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let tripped = tmp.path().join("tripped");
    tripwires(&bin, &tripped);
    let path = std::env::var("PATH").unwrap_or_default();
    let path: Vec<&str> = std::iter::once(bin.to_str().unwrap())
        .chain(path.split(':').filter(|d| !d.contains(".cargo")))
        .collect();
    s3(&moto.endpoint(), &["mb", "releases"]);
    let out = tmp.path().join("packaged.yaml");
    run(Command::new("sam")
        .args([
            "package",
            "--s3-bucket",
            "releases",
            "--region",
            "us-east-1",
        ])
        .arg("--template-file")
        .arg(dir.join("template.yaml"))
        .arg("--output-template-file")
        .arg(&out)
        .env("PATH", path.join(":"))
        .env("AWS_ENDPOINT_URL", moto.endpoint())
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test")
        .env("SAM_CLI_TELEMETRY", "0")
        .current_dir(tmp.path()));
    let code = decode(&out)["Resources"][FUNCTION]["Properties"]["CodeUri"].clone();
    let key = code
        .as_str()
        .and_then(|c| c.strip_prefix("s3://releases/"))
        .unwrap_or_else(|| panic!("CodeUri {code}"));
    let got = tmp.path().join("code.zip");
    s3(
        &moto.endpoint(),
        &["get", "releases", key, got.to_str().unwrap()],
    );
    assert!(
        std::fs::read(&got).unwrap() == std::fs::read(dir.join(zip_name())).unwrap(),
        "sam package uploaded another file than the zip"
    );
    let ran = std::fs::read_to_string(&tripped).unwrap_or_default();
    assert!(ran.is_empty(), "packaging ran: {ran}");
}

#[test]
fn the_release_names_the_version_and_each_files_digest() {
    let Some(dir) = package() else { return };
    let release = std::fs::read_to_string(dir.join("RELEASE")).unwrap();
    assert_eq!(
        release.lines().next(),
        Some(format!("efs-mount-autoscaler {VERSION}").as_str())
    );
    let sums = run(Command::new("sha256sum")
        .args(["--check", "--strict", "SHA256SUMS"])
        .current_dir(&dir));
    for file in [
        zip_name().as_str(),
        "template.yaml",
        "samconfig.toml",
        "RELEASE",
    ] {
        assert!(sums.contains(&format!("{file}: OK")), "{sums}");
    }
}

/// `.ci/run`'s own bound (scripts/ci-limit.sh): a step of the NFS tier gets the smaller of its
/// limit and what is left of `CI_DEADLINE` once the steps after it are kept back, and is not
/// started when less than it needs would be left.
#[test]
fn a_tier_step_gets_at_most_what_is_left_of_cis_deadline() {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let limit = |left: Option<u64>| {
        let mut cmd = Command::new(repo().join("scripts/ci-limit.sh"));
        cmd.args(["1800", "900", "600"]).env_remove("CI_DEADLINE");
        if let Some(left) = left {
            cmd.env("CI_DEADLINE", (now + left).to_string());
        }
        let out = cmd.output().expect("run scripts/ci-limit.sh");
        let text = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        out.status.success().then(|| text.parse::<u64>().unwrap())
    };
    assert_eq!(limit(None), Some(1800));
    assert_eq!(limit(Some(3600)), Some(1800));
    // 2,000 s left, 900 kept back: about 1,100 (the clock may have ticked meanwhile).
    assert!(limit(Some(2000)).is_some_and(|l| (1090..=1100).contains(&l)));
    assert_eq!(limit(Some(1400)), None);
}
