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
/// Dimension on the per-target [`FILE_COUNT`]: the mount target's id.
///
/// Named `MountTarget`, not `Shard` as before issue 11: the value always was a mount target id,
/// and now that a shard is a directory and a mount target serves several, a `Shard` dimension
/// holding a mount target id would read as one shard's count. CloudWatch cannot rename a
/// dimension: a metric is its name with its dimensions, so the `{FileSystemId, Shard}` series
/// stop receiving data at the stack update that brings this code (they stay viewable, unbilled,
/// until CloudWatch ages them out after 15 months), and the template's dashboard, updated in the
/// same stack update, searches `{FileSystemId, MountTarget}`. No alarm uses `FileCount`.
pub const DIM_MOUNT_TARGET: &str = "MountTarget";
/// Not a dimension: the root of the shard directory that holds the most files, carried on the
/// summary line beside [`LARGEST_SHARD_FILES`] for the logs (a dimension would make each root a
/// metric of its own, billed).
pub const PROP_LARGEST_SHARD_ROOT: &str = "LargestShardRoot";
/// Not a dimension: `FILE_THRESHOLD`, carried on the summary line so that the log shows the
/// largest shard against it (the dashboard draws it from the stack parameter).
pub const PROP_FILE_THRESHOLD: &str = "FileThreshold";

/// Files in all the shards one mount target serves (dimensions `FileSystemId`,
/// `MountTarget`).
///
/// One series per mount target, not per shard: CloudWatch bills every metric (a name with one
/// set of dimension values) by the month — $0.30 a metric a month for the first 10,000 in
/// us-east-1, on AWS's CloudWatch pricing page — so a per-shard series would cost up to
/// `MAX_SHARDS` (1000) x $0.30 = $300 a month for one file system. Mount targets are capped by
/// the AZs (at most 6), so this metric is at most 6 series, and the function's metrics at most
/// 25 (about $7.50 a month) however many shards there are. The fullest shard is
/// [`LARGEST_SHARD_FILES`].
pub const FILE_COUNT: &str = "FileCount";
/// Files in all shards together.
pub const TOTAL_FILES: &str = "TotalFiles";
/// Files in the fullest shard directory (dimension `FileSystemId`; the shard's root is the
/// property [`PROP_LARGEST_SHARD_ROOT`]): what the scale-out compares with `FILE_THRESHOLD`.
/// Absent from a run that counted no shard.
pub const LARGEST_SHARD_FILES: &str = "LargestShardFiles";
/// Shards that take new files once the run's steps have run (and those of targets still
/// creating): the response's `shards`.
pub const SHARDS: &str = "Shards";
/// Shards the file count calls for, after the `MAX_SHARDS` cap.
pub const DESIRED_SHARDS: &str = "DesiredShards";
/// Mount targets creating, available or updating after the run: the response's `total`.
pub const MOUNT_TARGETS: &str = "MountTargets";
/// Mount targets wanted, after the AZ and `MAX_MOUNT_TARGETS` caps.
pub const DESIRED_MOUNT_TARGETS: &str = "DesiredMountTargets";
/// 1 when the file count calls for more shards than `MAX_SHARDS` allows (for a
/// `modulo-sha256` list, more than there can be mount targets: the AZs), else 0. While the
/// list is held at version 1 it is 0: raising `MAX_SHARDS` would do nothing then, and
/// [`LIST_VERSION_HELD`] says what would.
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

/// Live clients (their reports, `.efs-router-clients`) that route by a version 1 list.
///
/// Clients by list version are three metrics of the summary line, not one with a version
/// dimension: the versions are few and fixed, and the dashboard and alarms need no search.
pub const CLIENTS_LIST_V1: &str = "ClientsListV1";
/// Live clients that route by a version 2 list.
pub const CLIENTS_LIST_V2: &str = "ClientsListV2";
/// Live clients that route by a version 3 list (which says where a miss looks).
pub const CLIENTS_LIST_V3: &str = "ClientsListV3";
/// Live report files that cannot be read as reports: clients on an unknown list.
pub const CLIENTS_LIST_UNKNOWN: &str = "ClientsListUnknown";
/// Seconds since the list was published while some live client is behind it (it reports
/// another list, or may), else 0: what the "client behind" alarm compares with 30 minutes.
pub const CLIENTS_BEHIND_LONGEST: &str = "ClientsBehindLongest";
/// 1 when more shards are needed than one per mount target but the list stays version 1,
/// because not every live client reports that it reads version 2 (or none reports), else 0.
pub const LIST_VERSION_HELD: &str = "ListVersionHeld";
/// Tasks ECS wants running, of the named services and `ECS_CLIENT_FAMILIES`, with no live
/// report (`CLIENT_REPORTS=require`): while above 0, no file moves and no target goes.
pub const TASKS_UNREPORTED: &str = "TasksUnreported";

/// A CloudWatch unit, as the `Unit` member of an EMF metric definition spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    Count,
    Milliseconds,
    Seconds,
    /// A unitless value (the 0/1 flag).
    None,
}

impl Unit {
    pub const fn as_str(self) -> &'static str {
        match self {
            Unit::Count => "Count",
            Unit::Milliseconds => "Milliseconds",
            Unit::Seconds => "Seconds",
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
const TARGET_DIMS: &[&str] = &[DIM_FILE_SYSTEM_ID, DIM_MOUNT_TARGET];

/// Every metric the function emits: the one list the template's alarms and dashboard are
/// checked against.
pub const METRICS: &[MetricSpec] = &[
    MetricSpec {
        name: FILE_COUNT,
        unit: Unit::Count,
        dimensions: TARGET_DIMS,
    },
    MetricSpec {
        name: TOTAL_FILES,
        unit: Unit::Count,
        dimensions: FS_DIMS,
    },
    MetricSpec {
        name: LARGEST_SHARD_FILES,
        unit: Unit::Count,
        dimensions: FS_DIMS,
    },
    MetricSpec {
        name: SHARDS,
        unit: Unit::Count,
        dimensions: FS_DIMS,
    },
    MetricSpec {
        name: DESIRED_SHARDS,
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
    MetricSpec {
        name: CLIENTS_LIST_V1,
        unit: Unit::Count,
        dimensions: FS_DIMS,
    },
    MetricSpec {
        name: CLIENTS_LIST_V2,
        unit: Unit::Count,
        dimensions: FS_DIMS,
    },
    MetricSpec {
        name: CLIENTS_LIST_V3,
        unit: Unit::Count,
        dimensions: FS_DIMS,
    },
    MetricSpec {
        name: CLIENTS_LIST_UNKNOWN,
        unit: Unit::Count,
        dimensions: FS_DIMS,
    },
    MetricSpec {
        name: CLIENTS_BEHIND_LONGEST,
        unit: Unit::Seconds,
        dimensions: FS_DIMS,
    },
    MetricSpec {
        name: LIST_VERSION_HELD,
        unit: Unit::None,
        dimensions: FS_DIMS,
    },
    MetricSpec {
        name: TASKS_UNREPORTED,
        unit: Unit::Count,
        dimensions: FS_DIMS,
    },
];

/// What one run observed and decided, for the metrics.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunMetrics {
    pub file_system_id: String,
    /// `(mount target id, files in all the shards it serves)`, in list order.
    pub files_per_target: Vec<(String, u64)>,
    /// The shard directory that holds the most files: `(root, files)`.
    pub largest_shard: Option<(String, u64)>,
    /// `FILE_THRESHOLD`: the line the largest shard is shown against.
    pub threshold: u64,
    pub total_files: u64,
    /// Mount targets creating, available or updating after the run (the plan's `current`,
    /// the response's `total`).
    pub mount_targets: u64,
    /// Mount targets wanted (after the AZ and `MAX_MOUNT_TARGETS` caps).
    pub desired: u64,
    /// Shards that take new files after the run (each a directory; a mount target serves one
    /// or more): the response's `shards`.
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
    /// Live clients by the version of the list they route by (`1`, `2`, `unknown`).
    pub clients_by_version: std::collections::BTreeMap<String, u64>,
    /// Seconds since the publish while some live client is behind (else 0).
    pub clients_behind_secs: u64,
    pub list_version_held: bool,
    pub tasks_unreported: u64,
}

/// Milliseconds since the Unix epoch, for [`emf_lines`]' timestamp.
pub fn timestamp_ms_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// The EMF log lines for one run, each a single-line JSON object.
///
/// The first line carries the file-system-wide metrics (dimension `FileSystemId`), with the
/// fullest shard's root and `FILE_THRESHOLD` as properties; then one line per mount target
/// carries its `FileCount` (dimensions `FileSystemId`, `MountTarget`), since EMF takes a
/// dimension's value from the line's root and each mount target has its own. However many
/// shards there are, the lines (and the metrics CloudWatch bills) are one plus the mount
/// targets.
///
/// CloudWatch drops every metric of a line whose dimension value is not valid (empty, not
/// ASCII, a control character, longer than 1024), so such a mount target gets no line (its
/// files still count in `TotalFiles`), and a file system id that is not valid gives no lines
/// at all. A run without a largest shard (none counted) leaves `LargestShardFiles` out rather
/// than report 0.
pub fn emf_lines(m: &RunMetrics, timestamp_ms: u64) -> Vec<String> {
    if !valid_dimension_value(&m.file_system_id) {
        return Vec::new();
    }
    let mut lines = Vec::with_capacity(1 + m.files_per_target.len());

    let mut summary = Map::new();
    summary.insert(DIM_FILE_SYSTEM_ID.into(), json!(m.file_system_id));
    summary.insert(TOTAL_FILES.into(), json!(m.total_files));
    if let Some((root, files)) = &m.largest_shard {
        summary.insert(LARGEST_SHARD_FILES.into(), json!(files));
        summary.insert(PROP_LARGEST_SHARD_ROOT.into(), json!(root));
    }
    summary.insert(PROP_FILE_THRESHOLD.into(), json!(m.threshold));
    summary.insert(SHARDS.into(), json!(m.shards));
    summary.insert(DESIRED_SHARDS.into(), json!(m.desired_shards));
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
    let clients = |v: &str| m.clients_by_version.get(v).copied().unwrap_or(0);
    summary.insert(CLIENTS_LIST_V1.into(), json!(clients("1")));
    summary.insert(CLIENTS_LIST_V2.into(), json!(clients("2")));
    summary.insert(CLIENTS_LIST_V3.into(), json!(clients("3")));
    summary.insert(CLIENTS_LIST_UNKNOWN.into(), json!(clients("unknown")));
    summary.insert(CLIENTS_BEHIND_LONGEST.into(), json!(m.clients_behind_secs));
    summary.insert(
        LIST_VERSION_HELD.into(),
        json!(u8::from(m.list_version_held)),
    );
    summary.insert(TASKS_UNREPORTED.into(), json!(m.tasks_unreported));
    summary.insert(
        COUNT_DURATION.into(),
        json!(m.count_duration.as_secs_f64() * 1000.0),
    );
    lines.push(document(timestamp_ms, FS_DIMS, summary));

    for (target, files) in &m.files_per_target {
        if !valid_dimension_value(target) {
            continue;
        }
        let mut line = Map::new();
        line.insert(DIM_FILE_SYSTEM_ID.into(), json!(m.file_system_id));
        line.insert(DIM_MOUNT_TARGET.into(), json!(target));
        line.insert(FILE_COUNT.into(), json!(files));
        lines.push(document(timestamp_ms, TARGET_DIMS, line));
    }
    lines
}

/// One EMF document: `root` holds the dimension values, the metric values and any
/// properties; the metrics declared are those of [`METRICS`] whose dimension set is `dims`
/// and whose value `root` holds (a metric left out of a run is not declared).
fn document(timestamp_ms: u64, dims: &[&str], mut root: Map<String, Value>) -> String {
    let metrics: Vec<Value> = METRICS
        .iter()
        .filter(|spec| spec.dimensions == dims && root.contains_key(spec.name))
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

    /// Two mount targets over three shards: `fsmt-1a2b` serves `/` (40,000 files, the
    /// fullest) and `/shards/use1-az1.1` (21,234), `fsmt-3c4d` serves `/shards/use1-az4` (17).
    /// Every count differs from the others, so that a value under the wrong name shows.
    fn sample() -> RunMetrics {
        RunMetrics {
            file_system_id: "fs-0123456789abcdef0".into(),
            files_per_target: vec![("fsmt-1a2b".into(), 61_234), ("fsmt-3c4d".into(), 17)],
            largest_shard: Some(("/".into(), 40_000)),
            threshold: 20_000,
            total_files: 61_251,
            shards: 3,
            desired_shards: 4,
            mount_targets: 2,
            desired: 3,
            at_capacity: false,
            rollouts_failed: 5,
            fleet_not_converged: false,
            unreadable_shards: 6,
            count_duration: Duration::from_micros(1_234_567),
            clients_by_version: [
                ("1".into(), 7),
                ("2".into(), 8),
                ("3".into(), 10),
                ("unknown".into(), 9),
            ]
            .into(),
            clients_behind_secs: 1_801,
            list_version_held: true,
            tasks_unreported: 3,
        }
    }

    #[test]
    fn every_line_is_valid_emf() {
        let lines = emf_lines(&sample(), 1_764_468_900_000);
        assert_eq!(
            lines.len(),
            3,
            "a summary line and one line per mount target"
        );
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
            (LARGEST_SHARD_FILES, "Count", json!(40_000)),
            (SHARDS, "Count", json!(3)),
            (DESIRED_SHARDS, "Count", json!(4)),
            (MOUNT_TARGETS, "Count", json!(2)),
            (DESIRED_MOUNT_TARGETS, "Count", json!(3)),
            (AT_CAPACITY, "None", json!(0)),
            (COUNT_DURATION, "Milliseconds", json!(1234.567)),
            (ROLLOUTS_FAILED, "Count", json!(5)),
            (FLEET_NOT_CONVERGED, "None", json!(0)),
            (UNREADABLE_SHARDS, "Count", json!(6)),
            (RECONCILE_RUNS, "Count", json!(1)),
            (CLIENTS_LIST_V1, "Count", json!(7)),
            (CLIENTS_LIST_V2, "Count", json!(8)),
            (CLIENTS_LIST_V3, "Count", json!(10)),
            (CLIENTS_LIST_UNKNOWN, "Count", json!(9)),
            (CLIENTS_BEHIND_LONGEST, "Seconds", json!(1_801)),
            (LIST_VERSION_HELD, "None", json!(1)),
            (TASKS_UNREPORTED, "Count", json!(3)),
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
    fn the_largest_shard_carries_its_root_and_the_threshold_as_properties_not_dimensions() {
        let doc = check_emf(&emf_lines(&sample(), 1)[0]);
        assert_eq!(doc[PROP_LARGEST_SHARD_ROOT], "/");
        assert_eq!(doc[PROP_FILE_THRESHOLD], 20_000);
        // Properties: neither a dimension (each root would be a metric of its own) nor a
        // metric.
        for (_, dims, name, ..) in metrics_of(&doc) {
            assert_eq!(dims, [DIM_FILE_SYSTEM_ID]);
            assert_ne!(name, PROP_LARGEST_SHARD_ROOT);
            assert_ne!(name, PROP_FILE_THRESHOLD);
        }
    }

    #[test]
    fn without_a_largest_shard_its_metric_is_left_out_not_zero() {
        let m = RunMetrics {
            largest_shard: None,
            ..sample()
        };
        let doc = check_emf(&emf_lines(&m, 1)[0]);
        assert!(doc.get(LARGEST_SHARD_FILES).is_none());
        assert!(doc.get(PROP_LARGEST_SHARD_ROOT).is_none());
        let names: Vec<String> = metrics_of(&doc).into_iter().map(|m| m.2).collect();
        assert!(!names.contains(&LARGEST_SHARD_FILES.to_string()));
        assert_eq!(names.len(), 18, "{names:?}");
    }

    #[test]
    fn one_line_per_mount_target_with_the_files_of_all_its_shards() {
        let lines = emf_lines(&sample(), 1);
        let targets: Vec<Value> = lines[1..].iter().map(|l| check_emf(l)).collect();
        assert_eq!(targets.len(), sample().files_per_target.len());
        let dims = vec![DIM_FILE_SYSTEM_ID.to_string(), DIM_MOUNT_TARGET.to_string()];
        for (doc, (id, files)) in targets.iter().zip(&sample().files_per_target) {
            assert_eq!(doc[DIM_MOUNT_TARGET], id.as_str());
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
            // Nothing else on the line: dimensions, the count, the metadata.
            let mut keys: Vec<&str> = doc
                .as_object()
                .unwrap()
                .keys()
                .map(String::as_str)
                .collect();
            keys.sort_unstable();
            assert_eq!(keys, ["FileCount", "FileSystemId", "MountTarget", "_aws"]);
        }
    }

    /// Each distinct `(metric name, dimension values)` is one metric CloudWatch bills a month:
    /// a thousand shards over six mount targets are still 17 + 6 of them.
    #[test]
    fn the_billed_metrics_are_bounded_by_the_mount_targets_not_the_shards() {
        let m = RunMetrics {
            files_per_target: (1..=6).map(|i| (format!("fsmt-{i}"), 1_000_000)).collect(),
            largest_shard: Some(("/shards/use1-az6.999".into(), 6_100)),
            shards: 1000,
            desired_shards: 1000,
            mount_targets: 6,
            desired: 6,
            total_files: 6_000_000,
            ..sample()
        };
        let lines = emf_lines(&m, 1);
        assert_eq!(lines.len(), 1 + 6);
        let mut series: Vec<(String, Vec<String>)> = Vec::new();
        for line in &lines {
            let doc = check_emf(line);
            for (_, dims, name, ..) in metrics_of(&doc) {
                let values = dims
                    .iter()
                    .map(|d| doc[d].as_str().unwrap().to_string())
                    .collect();
                series.push((name, values));
            }
        }
        series.sort();
        series.dedup();
        assert_eq!(series.len(), 19 + 6, "{series:?}");
    }

    #[test]
    fn at_capacity_is_one() {
        let m = RunMetrics {
            at_capacity: true,
            desired_shards: 1000,
            ..sample()
        };
        let doc = check_emf(&emf_lines(&m, 1)[0]);
        assert_eq!(doc[AT_CAPACITY], 1);
    }

    #[test]
    fn no_mount_target_gives_only_the_summary_line() {
        let m = RunMetrics {
            files_per_target: vec![],
            largest_shard: None,
            total_files: 0,
            shards: 0,
            mount_targets: 0,
            desired: 1,
            ..sample()
        };
        let lines = emf_lines(&m, 1);
        assert_eq!(lines.len(), 1);
        check_emf(&lines[0]);
    }

    #[test]
    fn a_mount_target_with_an_invalid_id_gets_no_line() {
        let mut m = sample();
        m.files_per_target.push((String::new(), 5));
        m.files_per_target.push(("fsmt-\u{e9}".into(), 5));
        m.files_per_target.push(("fsmt-a\nb".into(), 5));
        m.files_per_target.push(("x".repeat(1025), 5));
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
            files_per_target: vec![("fsmt-1".into(), 3)],
            largest_shard: Some(("/".into(), 3)),
            threshold: 50_000,
            total_files: 3,
            shards: 1,
            desired_shards: 1,
            mount_targets: 1,
            desired: 1,
            rollouts_failed: 0,
            unreadable_shards: 0,
            count_duration: Duration::from_millis(2),
            clients_by_version: [("2".into(), 4)].into(),
            clients_behind_secs: 0,
            list_version_held: false,
            tasks_unreported: 0,
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
                            {"Name": "LargestShardFiles", "Unit": "Count"},
                            {"Name": "Shards", "Unit": "Count"},
                            {"Name": "DesiredShards", "Unit": "Count"},
                            {"Name": "MountTargets", "Unit": "Count"},
                            {"Name": "DesiredMountTargets", "Unit": "Count"},
                            {"Name": "AtCapacity", "Unit": "None"},
                            {"Name": "CountDuration", "Unit": "Milliseconds"},
                            {"Name": "RolloutsFailed", "Unit": "Count"},
                            {"Name": "FleetNotConverged", "Unit": "None"},
                            {"Name": "UnreadableShards", "Unit": "Count"},
                            {"Name": "ReconcileRuns", "Unit": "Count"},
                            {"Name": "ClientsListV1", "Unit": "Count"},
                            {"Name": "ClientsListV2", "Unit": "Count"},
                            {"Name": "ClientsListV3", "Unit": "Count"},
                            {"Name": "ClientsListUnknown", "Unit": "Count"},
                            {"Name": "ClientsBehindLongest", "Unit": "Seconds"},
                            {"Name": "ListVersionHeld", "Unit": "None"},
                            {"Name": "TasksUnreported", "Unit": "Count"},
                        ],
                    }]},
                    "FileSystemId": "fs-0123456789abcdef0",
                    "TotalFiles": 3, "LargestShardFiles": 3, "LargestShardRoot": "/",
                    "FileThreshold": 50_000, "Shards": 1, "DesiredShards": 1,
                    "MountTargets": 1, "DesiredMountTargets": 1,
                    "AtCapacity": 0, "CountDuration": 2.0, "RolloutsFailed": 0,
                    "FleetNotConverged": 0, "UnreadableShards": 0, "ReconcileRuns": 1,
                    "ClientsListV1": 0, "ClientsListV2": 4, "ClientsListV3": 0,
                    "ClientsListUnknown": 0,
                    "ClientsBehindLongest": 0, "ListVersionHeld": 0, "TasksUnreported": 0,
                }),
                json!({
                    "_aws": {"Timestamp": 42, "CloudWatchMetrics": [{
                        "Namespace": "EfsMountAutoscaler",
                        "Dimensions": [["FileSystemId", "MountTarget"]],
                        "Metrics": [{"Name": "FileCount", "Unit": "Count"}],
                    }]},
                    "FileSystemId": "fs-0123456789abcdef0",
                    "MountTarget": "fsmt-1", "FileCount": 3,
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
