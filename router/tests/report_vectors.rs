//! The client report against `tests/vectors/reports.json` (shared with the Python client): the
//! SHA-256 of list texts, the exact JSON a report is written as, and what parsing report files
//! gives.

use efs_router::report::{list_sha256, Report};
use serde_json::Value;
use std::path::PathBuf;

/// The crate's directory: the one `cargo test` names when it runs the test, else the
/// compile-time one (a shared target directory may keep a binary built in another clone).
fn crate_dir() -> PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")), PathBuf::from)
}

fn vectors() -> Value {
    let file = crate_dir().join("../tests/vectors/reports.json");
    let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    serde_json::from_str(&text).expect("reports.json is JSON")
}

/// A file case's bytes: its text (UTF-8) or hex, then spaces up to `pad_to`.
fn bytes_of(case: &Value) -> Vec<u8> {
    let mut bytes = match (case["text"].as_str(), case["hex"].as_str()) {
        (Some(text), _) => text.as_bytes().to_vec(),
        (None, Some(hex)) => (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
            .collect(),
        _ => panic!("a case without text or hex: {case}"),
    };
    if let Some(pad) = case["pad_to"].as_u64() {
        bytes.resize(usize::try_from(pad).unwrap(), b' ');
    }
    bytes
}

#[test]
fn report_vectors_are_the_generators_output() {
    let dir = crate_dir().join("../tests/vectors");
    let out = std::process::Command::new("python3")
        .arg(dir.join("generate_reports.py"))
        .output()
        .expect("python3, to run tests/vectors/generate_reports.py");
    assert!(out.status.success(), "{out:?}");
    let file = std::fs::read(dir.join("reports.json")).unwrap();
    assert!(
        out.stdout == file,
        "tests/vectors/reports.json differs from what generate_reports.py writes: regenerate it"
    );
}

#[test]
fn list_digests_are_of_the_exact_text() {
    let v = vectors();
    let lists = v["lists"].as_array().unwrap();
    assert!(lists.len() >= 4);
    for case in lists {
        assert_eq!(
            list_sha256(case["text"].as_str().unwrap()),
            case["sha256"].as_str().unwrap(),
            "{case}"
        );
    }
}

#[test]
fn a_report_is_written_exactly_as_the_vectors_say() {
    let v = vectors();
    for case in v["serialised"].as_array().unwrap() {
        let report: Report = serde_json::from_value(case["report"].clone()).unwrap();
        let json = case["json"].as_str().unwrap();
        assert_eq!(report.to_json(), json);
        let name = format!("{}.json", report.client);
        assert_eq!(Report::parse(&name, json.as_bytes()), Ok(report));
    }
}

#[test]
fn report_files_parse_as_the_vectors_say() {
    let v = vectors();
    let files = v["files"].as_array().unwrap();
    let mut outcomes = std::collections::BTreeSet::new();
    for case in files {
        let name = case["name"].as_str().unwrap();
        let got = Report::parse(name, &bytes_of(case));
        let want = case["outcome"].as_str().unwrap();
        outcomes.insert(want);
        match got {
            Ok(report) => {
                assert_eq!(want, "ok", "{case}");
                let expected: Report = serde_json::from_value(case["report"].clone()).unwrap();
                assert_eq!(report, expected, "{case}");
            }
            Err(e) => assert_eq!(e.kind(), want, "{case}: {e}"),
        }
    }
    assert_eq!(
        outcomes.into_iter().collect::<Vec<_>>(),
        ["malformed", "ok", "too-large", "wrong-name"]
    );
}
