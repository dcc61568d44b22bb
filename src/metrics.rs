//! CloudWatch metrics in the Embedded Metric Format (EMF): JSON lines on stdout that
//! CloudWatch Logs turns into metrics, with no API call and no extra IAM permission.
//!
//! The function builds one [`RunMetrics`] per invocation and prints each line of
//! [`emf_lines`] with `println!`. Lambda sends every stdout line to CloudWatch Logs as one
//! log event; a log event that is an EMF document becomes metrics in [`NAMESPACE`].
//!
//! The template's alarms and dashboard name the same namespace, metrics and dimensions
//! (`tests/template.rs` checks it against [`METRICS`]).
//!
//! Format: <https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch_Embedded_Metric_Format_Specification.html>.
//! A small writer rather than a crate: the crates on crates.io either pull in the `metrics`
//! facade with a global recorder and a Lambda layer of their own (`metrics_cloudwatch_embedded`)
//! or are unmaintained; ours is a handful of `json!` objects, tested against the specification.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{json, Map, Value};

/// The CloudWatch namespace of every metric the function emits.
pub const NAMESPACE: &str = "EfsMountAutoscaler";

/// Dimension on every metric: the managed file system's id.
pub const DIM_FILE_SYSTEM_ID: &str = "FileSystemId";
/// Dimension on the per-shard metric: the shard's id, which is its mount target's id.
pub const DIM_SHARD: &str = "Shard";
/// Not a dimension: the shard's root directory, carried on the per-shard line for the logs.
pub const PROP_SHARD_ROOT: &str = "ShardRoot";

/// Files in one shard's watched directory (dimensions `FileSystemId`, `Shard`).
pub const FILE_COUNT: &str = "FileCount";
/// Files in all shards together.
pub const TOTAL_FILES: &str = "TotalFiles";
/// Mount targets of the file system, as observed.
pub const MOUNT_TARGETS: &str = "MountTargets";
/// Mount targets the file count calls for, after the AZ and `MAX_MOUNT_TARGETS` caps.
pub const DESIRED_MOUNT_TARGETS: &str = "DesiredMountTargets";
/// 1 when the file count calls for more mount targets than the AZs (or the cap) allow, else 0.
pub const AT_CAPACITY: &str = "AtCapacity";
/// How long counting the files took.
pub const COUNT_DURATION: &str = "CountDuration";
/// Services whose newest deployment failed to roll out (`rolloutState` `FAILED`): their tasks
/// still run the previous list.
pub const ROLLOUTS_FAILED: &str = "RolloutsFailed";
/// 1 when some service has not run the list published more than half an hour ago (files
/// wait to move), else 0.
pub const FLEET_NOT_CONVERGED: &str = "FleetNotConverged";
/// Shard directories that could not be read or made this run (each skipped, the run went on).
pub const UNREADABLE_SHARDS: &str = "UnreadableShards";
/// 1 for each reconcile run that finished: what the "no successful run" alarm counts, so that
/// other invocations (a rebalance) cannot hide a failing schedule.
pub const RECONCILE_RUNS: &str = "ReconcileRuns";

/// A CloudWatch unit, as the `Unit` member of an EMF metric definition spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    Count,
    Milliseconds,
    /// A unitless value (the 0/1 flag).
    None,
}

impl Unit {
    pub const fn as_str(self) -> &'static str {
        match self {
            Unit::Count => "Count",
            Unit::Milliseconds => "Milliseconds",
            Unit::None => "None",
        }
    }
}

/// One metric the function emits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MetricSpec {
    pub name: &'static str,
    pub unit: Unit,
    /// The dimension names, in the order of the EMF dimension set.
    pub dimensions: &'static [&'static str],
}

const FS_DIMS: &[&str] = &[DIM_FILE_SYSTEM_ID];
const SHARD_DIMS: &[&str] = &[DIM_FILE_SYSTEM_ID, DIM_SHARD];

/// Every metric the function emits: the one list the template's alarms and dashboard are
/// checked against.
pub const METRICS: &[MetricSpec] = &[
    MetricSpec {
        name: FILE_COUNT,
        unit: Unit::Count,
        dimensions: SHARD_DIMS,
    },
    MetricSpec {
        name: TOTAL_FILES,
        unit: Unit::Count,
        dimensions: FS_DIMS,
    },
    MetricSpec {
        name: MOUNT_TARGETS,
        unit: Unit::Count,
        dimensions: FS_DIMS,
    },
    MetricSpec {
        name: DESIRED_MOUNT_TARGETS,
        unit: Unit::Count,
        dimensions: FS_DIMS,
    },
    MetricSpec {
        name: AT_CAPACITY,
        unit: Unit::None,
        dimensions: FS_DIMS,
    },
    MetricSpec {
        name: COUNT_DURATION,
        unit: Unit::Milliseconds,
        dimensions: FS_DIMS,
    },
    MetricSpec {
        name: ROLLOUTS_FAILED,
        unit: Unit::Count,
        dimensions: FS_DIMS,
    },
    MetricSpec {
        name: FLEET_NOT_CONVERGED,
        unit: Unit::None,
        dimensions: FS_DIMS,
    },
    MetricSpec {
        name: UNREADABLE_SHARDS,
        unit: Unit::Count,
        dimensions: FS_DIMS,
    },
    MetricSpec {
        name: RECONCILE_RUNS,
        unit: Unit::Count,
        dimensions: FS_DIMS,
    },
];

/// What one run observed and decided, for the metrics.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunMetrics {
    pub file_system_id: String,
    /// `(shard id = mount target id, shard root, files)` for each counted shard.
    /// TODO(helper): replaced by `files_per_target`.
    pub files_per_shard: Vec<(String, String, u64)>,
    /// `(mount target id, files in all the shards it serves)`, in list order.
    pub files_per_target: Vec<(String, u64)>,
    /// The shard directory that holds the most files: `(root, files)`.
    pub largest_shard: Option<(String, u64)>,
    /// `FILE_THRESHOLD`: the line the largest shard is shown against.
    pub threshold: u64,
    pub total_files: u64,
    pub mount_targets: u64,
    /// Mount targets wanted (after the AZ and `MAX_MOUNT_TARGETS` caps).
    pub desired: u64,
    /// Shards listed (each a directory; a mount target serves one or more).
    pub shards: u64,
    /// Shards the file count calls for, after `MAX_SHARDS`.
    pub desired_shards: u64,
    /// The file count calls for more shards than `MAX_SHARDS` allows (or, for a
    /// `modulo-sha256` list, than there can be mount targets).
    pub at_capacity: bool,
    pub rollouts_failed: u64,
    pub fleet_not_converged: bool,
    pub unreadable_shards: u64,
    pub count_duration: Duration,
}

/// Milliseconds since the Unix epoch, for [`emf_lines`]' timestamp.
pub fn timestamp_ms_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// The EMF log lines for one run, each a single-line JSON object.
///
/// The first line carries the file-system-wide metrics (dimension `FileSystemId`); then one
/// line per shard carries its `FileCount` (dimensions `FileSystemId`, `Shard`), since EMF
/// takes a dimension's value from the line's root and each shard has its own.
///
/// CloudWatch drops every metric of a line whose dimension value is not valid (empty, not
/// ASCII, a control character, longer than 1024), so such a shard gets no line (its files
/// still count in `TotalFiles`), and a file system id that is not valid gives no lines at
/// all.
pub fn emf_lines(m: &RunMetrics, timestamp_ms: u64) -> Vec<String> {
    if !valid_dimension_value(&m.file_system_id) {
        return Vec::new();
    }
    let mut lines = Vec::with_capacity(1 + m.files_per_shard.len());

    let mut summary = Map::new();
    summary.insert(DIM_FILE_SYSTEM_ID.into(), json!(m.file_system_id));
    summary.insert(TOTAL_FILES.into(), json!(m.total_files));
    summary.insert(MOUNT_TARGETS.into(), json!(m.mount_targets));
    summary.insert(DESIRED_MOUNT_TARGETS.into(), json!(m.desired));
    summary.insert(AT_CAPACITY.into(), json!(u8::from(m.at_capacity)));
    summary.insert(ROLLOUTS_FAILED.into(), json!(m.rollouts_failed));
    summary.insert(
        FLEET_NOT_CONVERGED.into(),
        json!(u8::from(m.fleet_not_converged)),
    );
    summary.insert(UNREADABLE_SHARDS.into(), json!(m.unreadable_shards));
    summary.insert(RECONCILE_RUNS.into(), json!(1));
    summary.insert(
        COUNT_DURATION.into(),
        json!(m.count_duration.as_secs_f64() * 1000.0),
    );
    lines.push(document(timestamp_ms, FS_DIMS, summary));

    for (shard, root, files) in &m.files_per_shard {
        if !valid_dimension_value(shard) {
            continue;
        }
        let mut line = Map::new();
        line.insert(DIM_FILE_SYSTEM_ID.into(), json!(m.file_system_id));
        line.insert(DIM_SHARD.into(), json!(shard));
        line.insert(PROP_SHARD_ROOT.into(), json!(root));
        line.insert(FILE_COUNT.into(), json!(files));
        lines.push(document(timestamp_ms, SHARD_DIMS, line));
    }
    lines
}

/// One EMF document: `root` holds the dimension values and metric values; the metrics
/// declared are those of [`METRICS`] whose dimension set is `dims` (all of them are in
/// `root`, by construction).
fn document(timestamp_ms: u64, dims: &[&str], mut root: Map<String, Value>) -> String {
    let metrics: Vec<Value> = METRICS
        .iter()
        .filter(|spec| spec.dimensions == dims)
        .map(|spec| json!({"Name": spec.name, "Unit": spec.unit.as_str()}))
        .collect();
    root.insert(
        "_aws".into(),
        json!({
            "Timestamp": timestamp_ms,
            "CloudWatchMetrics": [{
                "Namespace": NAMESPACE,
                "Dimensions": [dims],
                "Metrics": metrics,
            }],
        }),
    );
    Value::Object(root).to_string()
}

/// CloudWatch's rule for a dimension value: 1 to 1024 ASCII characters, not only
/// whitespace, no control characters.
fn valid_dimension_value(v: &str) -> bool {
    !v.trim().is_empty() && v.len() <= 1024 && v.bytes().all(|b| (0x20..0x7f).contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The units CloudWatch accepts (`MetricDatum.Unit` in the CloudWatch API reference; the
    /// EMF specification points there for `Unit`).
    const CLOUDWATCH_UNITS: &[&str] = &[
        "Seconds",
        "Microseconds",
        "Milliseconds",
        "Bytes",
        "Kilobytes",
        "Megabytes",
        "Gigabytes",
        "Terabytes",
        "Bits",
        "Kilobits",
        "Megabits",
        "Gigabits",
        "Terabits",
        "Percent",
        "Count",
        "Bytes/Second",
        "Kilobytes/Second",
        "Megabytes/Second",
        "Gigabytes/Second",
        "Terabytes/Second",
        "Bits/Second",
        "Kilobits/Second",
        "Megabits/Second",
        "Gigabits/Second",
        "Terabits/Second",
        "Count/Second",
        "None",
    ];

    /// Checks one log line against the EMF specification and returns the parsed document.
    ///
    /// - The log event is one valid JSON object with nothing before or after it (one line).
    /// - Root member `_aws` (the metadata object) holds exactly `Timestamp` (a number: ms since
    ///   the epoch) and `CloudWatchMetrics` (an array of metric directives); the objects the
    ///   specification defines must not contain other members.
    /// - A metric directive holds `Namespace` (string), `Dimensions` (array of dimension sets)
    ///   and `Metrics` (array of at most 100 metric definitions).
    /// - A dimension set is an array of at most 30 strings, each naming a root member whose
    ///   value is a string (the dimension value).
    /// - A metric definition holds `Name` (naming a root member whose value is a number, or an
    ///   array of at most 100 numbers) and optionally `Unit` (a CloudWatch unit) and
    ///   `StorageResolution` (1 or 60).
    /// - An event is at most 256 KB (the CloudWatch Logs event limit).
    fn check_emf(line: &str) -> Value {
        assert!(!line.contains('\n'), "one log event is one line: {line}");
        assert!(line.len() <= 256 * 1024, "EMF event over 256 KB");
        let doc: Value = serde_json::from_str(line).expect("an EMF line is JSON");
        let root = doc.as_object().expect("root is an object");
        let aws = root["_aws"].as_object().expect("_aws is an object");
        let mut aws_keys: Vec<&str> = aws.keys().map(String::as_str).collect();
        aws_keys.sort_unstable();
        assert_eq!(aws_keys, ["CloudWatchMetrics", "Timestamp"]);
        assert!(aws["Timestamp"].is_u64(), "Timestamp is ms since the epoch");
        let directives = aws["CloudWatchMetrics"].as_array().expect("an array");
        assert!(!directives.is_empty());
        for d in directives {
            let d = d.as_object().expect("a directive is an object");
            let mut keys: Vec<&str> = d.keys().map(String::as_str).collect();
            keys.sort_unstable();
            assert_eq!(keys, ["Dimensions", "Metrics", "Namespace"]);
            let ns = d["Namespace"].as_str().expect("Namespace is a string");
            assert!(!ns.is_empty() && ns.len() <= 255 && !ns.starts_with(':'));
            for set in d["Dimensions"].as_array().expect("Dimensions is an array") {
                let set = set.as_array().expect("a dimension set is an array");
                assert!(set.len() <= 30, "at most 30 dimensions in a set");
                for name in set {
                    let name = name.as_str().expect("a dimension name is a string");
                    let value = root
                        .get(name)
                        .unwrap_or_else(|| panic!("dimension {name} is a root member"));
                    let value = value.as_str().expect("a dimension value is a string");
                    assert!(valid_dimension_value(value), "dimension value {value:?}");
                }
            }
            let metrics = d["Metrics"].as_array().expect("Metrics is an array");
            assert!(!metrics.is_empty() && metrics.len() <= 100);
            for m in metrics {
                let m = m.as_object().expect("a metric definition is an object");
                for key in m.keys() {
                    assert!(
                        ["Name", "Unit", "StorageResolution"].contains(&key.as_str()),
                        "unknown member {key} in a metric definition"
                    );
                }
                let name = m["Name"].as_str().expect("Name is a string");
                assert!(!name.is_empty() && name.len() <= 255);
                let value = root
                    .get(name)
                    .unwrap_or_else(|| panic!("metric {name} is a root member"));
                match value {
                    Value::Number(_) => {}
                    Value::Array(values) => {
                        assert!(values.len() <= 100 && values.iter().all(Value::is_number))
                    }
                    other => panic!("metric {name} has a value that is not a number: {other}"),
                }
                if let Some(unit) = m.get("Unit") {
                    let unit = unit.as_str().expect("Unit is a string");
                    assert!(CLOUDWATCH_UNITS.contains(&unit), "unit {unit}");
                }
                if let Some(r) = m.get("StorageResolution") {
                    assert!(r == 1 || r == 60);
                }
            }
        }
        doc
    }

    /// `(namespace, dimension set, metric name, unit, value)` of every metric in a line.
    fn metrics_of(doc: &Value) -> Vec<(String, Vec<String>, String, String, Value)> {
        let mut out = Vec::new();
        for d in doc["_aws"]["CloudWatchMetrics"].as_array().unwrap() {
            for set in d["Dimensions"].as_array().unwrap() {
                let set: Vec<String> = set
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|s| s.as_str().unwrap().to_string())
                    .collect();
                for m in d["Metrics"].as_array().unwrap() {
                    let name = m["Name"].as_str().unwrap().to_string();
                    out.push((
                        d["Namespace"].as_str().unwrap().to_string(),
                        set.clone(),
                        name.clone(),
                        m["Unit"].as_str().unwrap_or("None").to_string(),
                        doc[&name].clone(),
                    ));
                }
            }
        }
        out
    }

    fn sample() -> RunMetrics {
        RunMetrics {
            file_system_id: "fs-0123456789abcdef0".into(),
            files_per_shard: vec![
                ("fsmt-1a2b".into(), "/".into(), 61_234),
                ("fsmt-3c4d".into(), "/shards/use1-az4".into(), 17),
            ],
            files_per_target: vec![],
            largest_shard: None,
            threshold: 50_000,
            shards: 2,
            desired_shards: 2,
            total_files: 61_251,
            mount_targets: 2,
            desired: 2,
            at_capacity: false,
            rollouts_failed: 0,
            fleet_not_converged: false,
            unreadable_shards: 0,
            count_duration: Duration::from_micros(1_234_567),
        }
    }

    #[test]
    fn every_line_is_valid_emf() {
        let lines = emf_lines(&sample(), 1_764_468_900_000);
        assert_eq!(lines.len(), 3, "a summary line and one line per shard");
        for line in &lines {
            check_emf(line);
        }
    }

    #[test]
    fn summary_line_carries_the_run_metrics_with_their_units() {
        let lines = emf_lines(&sample(), 1_764_468_900_000);
        let doc = check_emf(&lines[0]);
        assert_eq!(doc["_aws"]["Timestamp"], 1_764_468_900_000u64);
        assert_eq!(doc[DIM_FILE_SYSTEM_ID], "fs-0123456789abcdef0");
        let fs = vec![DIM_FILE_SYSTEM_ID.to_string()];
        let got = metrics_of(&doc);
        let want = [
            (TOTAL_FILES, "Count", json!(61_251)),
            (MOUNT_TARGETS, "Count", json!(2)),
            (DESIRED_MOUNT_TARGETS, "Count", json!(2)),
            (AT_CAPACITY, "None", json!(0)),
            (COUNT_DURATION, "Milliseconds", json!(1234.567)),
            (ROLLOUTS_FAILED, "Count", json!(0)),
            (FLEET_NOT_CONVERGED, "None", json!(0)),
            (UNREADABLE_SHARDS, "Count", json!(0)),
            (RECONCILE_RUNS, "Count", json!(1)),
        ];
        assert_eq!(got.len(), want.len());
        for (name, unit, value) in want {
            let (ns, dims, _, u, v) = got
                .iter()
                .find(|m| m.2 == name)
                .unwrap_or_else(|| panic!("{name} missing"));
            assert_eq!(ns, NAMESPACE);
            assert_eq!(dims, &fs);
            assert_eq!(u, unit, "{name}");
            if name == COUNT_DURATION {
                assert!((v.as_f64().unwrap() - 1234.567).abs() < 1e-6, "{v}");
            } else {
                assert_eq!(v, &value, "{name}");
            }
        }
    }

    #[test]
    fn one_line_per_shard_with_its_file_count() {
        let lines = emf_lines(&sample(), 1);
        let shards: Vec<Value> = lines[1..].iter().map(|l| check_emf(l)).collect();
        let dims = vec![DIM_FILE_SYSTEM_ID.to_string(), DIM_SHARD.to_string()];
        for (doc, (id, root, files)) in shards.iter().zip(&sample().files_per_shard) {
            assert_eq!(doc[DIM_SHARD], id.as_str());
            assert_eq!(doc[PROP_SHARD_ROOT], root.as_str());
            assert_eq!(doc[DIM_FILE_SYSTEM_ID], "fs-0123456789abcdef0");
            let got = metrics_of(doc);
            assert_eq!(
                got,
                [(
                    NAMESPACE.to_string(),
                    dims.clone(),
                    FILE_COUNT.to_string(),
                    "Count".to_string(),
                    json!(files)
                )]
            );
        }
    }

    #[test]
    fn at_capacity_is_one() {
        let m = RunMetrics {
            at_capacity: true,
            desired: 3,
            ..sample()
        };
        let doc = check_emf(&emf_lines(&m, 1)[0]);
        assert_eq!(doc[AT_CAPACITY], 1);
    }

    #[test]
    fn no_shard_gives_only_the_summary_line() {
        let m = RunMetrics {
            files_per_shard: vec![],
            total_files: 0,
            mount_targets: 0,
            desired: 1,
            ..sample()
        };
        let lines = emf_lines(&m, 1);
        assert_eq!(lines.len(), 1);
        check_emf(&lines[0]);
    }

    #[test]
    fn a_shard_with_an_invalid_id_gets_no_line() {
        let mut m = sample();
        m.files_per_shard.push((String::new(), "/x".into(), 5));
        m.files_per_shard
            .push(("fsmt-\u{e9}".into(), "/y".into(), 5));
        m.files_per_shard.push(("fsmt-a\nb".into(), "/z".into(), 5));
        let lines = emf_lines(&m, 1);
        assert_eq!(lines.len(), 3);
        for line in &lines {
            check_emf(line);
        }
    }

    #[test]
    fn an_invalid_file_system_id_gives_no_line() {
        let m = RunMetrics {
            file_system_id: " ".into(),
            ..sample()
        };
        assert!(emf_lines(&m, 1).is_empty());
    }

    #[test]
    fn every_declared_metric_is_emitted_and_nothing_else() {
        let mut emitted: Vec<(String, String, Vec<String>)> = emf_lines(&sample(), 1)
            .iter()
            .flat_map(|l| metrics_of(&check_emf(l)))
            .map(|(_, dims, name, unit, _)| (name, unit, dims))
            .collect();
        emitted.sort();
        emitted.dedup();
        let mut declared: Vec<(String, String, Vec<String>)> = METRICS
            .iter()
            .map(|s| {
                (
                    s.name.to_string(),
                    s.unit.as_str().to_string(),
                    s.dimensions.iter().map(|d| d.to_string()).collect(),
                )
            })
            .collect();
        declared.sort();
        assert_eq!(emitted, declared);
    }

    #[test]
    fn exact_document() {
        let m = RunMetrics {
            files_per_shard: vec![("fsmt-1".into(), "/".into(), 3)],
            total_files: 3,
            mount_targets: 1,
            desired: 1,
            count_duration: Duration::from_millis(2),
            ..sample()
        };
        let lines: Vec<Value> = emf_lines(&m, 42)
            .iter()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(
            lines,
            [
                json!({
                    "_aws": {"Timestamp": 42, "CloudWatchMetrics": [{
                        "Namespace": "EfsMountAutoscaler",
                        "Dimensions": [["FileSystemId"]],
                        "Metrics": [
                            {"Name": "TotalFiles", "Unit": "Count"},
                            {"Name": "MountTargets", "Unit": "Count"},
                            {"Name": "DesiredMountTargets", "Unit": "Count"},
                            {"Name": "AtCapacity", "Unit": "None"},
                            {"Name": "CountDuration", "Unit": "Milliseconds"},
                            {"Name": "RolloutsFailed", "Unit": "Count"},
                            {"Name": "FleetNotConverged", "Unit": "None"},
                            {"Name": "UnreadableShards", "Unit": "Count"},
                            {"Name": "ReconcileRuns", "Unit": "Count"},
                        ],
                    }]},
                    "FileSystemId": "fs-0123456789abcdef0",
                    "TotalFiles": 3, "MountTargets": 1, "DesiredMountTargets": 1,
                    "AtCapacity": 0, "CountDuration": 2.0, "RolloutsFailed": 0,
                    "FleetNotConverged": 0, "UnreadableShards": 0, "ReconcileRuns": 1,
                }),
                json!({
                    "_aws": {"Timestamp": 42, "CloudWatchMetrics": [{
                        "Namespace": "EfsMountAutoscaler",
                        "Dimensions": [["FileSystemId", "Shard"]],
                        "Metrics": [{"Name": "FileCount", "Unit": "Count"}],
                    }]},
                    "FileSystemId": "fs-0123456789abcdef0",
                    "Shard": "fsmt-1", "ShardRoot": "/", "FileCount": 3,
                }),
            ]
        );
    }

    #[test]
    fn timestamp_now_is_plausible() {
        // After 2025-01-01 and in milliseconds, not seconds.
        assert!(timestamp_ms_now() > 1_735_689_600_000);
    }
}
