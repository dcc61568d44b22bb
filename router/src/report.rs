//! A client's report: which list a router routes by, written to the shared file system so the
//! function can wait for every client before it moves files or removes a target (docs/data-plane.md
//! "The fleet rule", router/REFERENCE.md "Reports").
//!
//! - Where: one file per router, `<file system root>/.efs-router-clients/<client id>.json`, the
//!   client id being 16 lowercase hexadecimal digits. The directory's name is reserved: never
//!   counted, moved or routed.
//! - What: a JSON object of at most [`MAX_BYTES`] bytes, the fields of [`Report`].
//! - When: when a router loads a list, and every [`EVERY_SECS`] seconds while it lives. A
//!   report not rewritten for [`LIFETIME_SECS`] counts as a client that is gone.
//!
//! A report can only delay the function, never permit anything: an unreadable or unknown one
//! counts as a live client on an unknown list until its lifetime ends.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The reports' directory, at the root of the file system (shard `/`).
pub const DIR: &str = ".efs-router-clients";

/// The report format this router writes and reads.
pub const FORMAT: u32 = 1;

/// A report is at most this long; the function reads no more of a file.
pub const MAX_BYTES: usize = 4096;

/// A router rewrites its report this often.
pub const EVERY_SECS: u64 = 60;

/// A report not rewritten for this long is a client that is gone: three missed reports.
pub const LIFETIME_SECS: u64 = 180;

/// The list a report says its router routes by.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListSeen {
    /// SHA-256, lowercase hex, of the exact bytes of the list's JSON as read ([`list_sha256`]).
    pub sha256: String,
    /// The list's own `version` field (1 when absent).
    pub version: u32,
    /// The SSM parameter's version it was read at, when read from SSM.
    #[serde(default)]
    pub parameter_version: Option<i64>,
}

impl ListSeen {
    /// The list `text` (the parameter's value exactly as read) as a report names it: its
    /// digest and its own `version` (1 when absent or null), read at `parameter_version`.
    pub fn of(text: &str, parameter_version: Option<i64>) -> ListSeen {
        #[derive(Deserialize)]
        struct Version {
            #[serde(default)]
            version: Option<u32>,
        }
        let version = serde_json::from_str::<Version>(text)
            .ok()
            .and_then(|v| v.version)
            .unwrap_or(1);
        ListSeen {
            sha256: list_sha256(text),
            version,
            parameter_version,
        }
    }
}

/// One router's report, as written in its file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Report {
    /// [`FORMAT`].
    pub format: u32,
    /// The client id: 16 lowercase hex digits, the file's name without `.json`.
    pub client: String,
    /// Which router and its version, e.g. `efs-router-rust/0.1.0`.
    pub router: String,
    /// The list versions this router can read.
    pub reads: Vec<u32>,
    /// The list it routes by.
    pub list: ListSeen,
    /// Unix seconds: when it loaded that list.
    pub loaded_at: u64,
    /// Unix seconds: its last successful read of the list's source, if it refreshes.
    #[serde(default)]
    pub refreshed_at: Option<u64>,
    /// Unix seconds: its last failed refresh since the last success.
    #[serde(default)]
    pub refresh_failed_at: Option<u64>,
    /// Unix seconds: when this report was written.
    pub written_at: u64,
    /// Seconds between its reports.
    pub every: u64,
    /// The ECS task it runs in (`TaskARN` from the task metadata endpoint), when it does.
    #[serde(default)]
    pub task: Option<String>,
    /// A label the application gave, or the host's name.
    #[serde(default)]
    pub label: Option<String>,
}

/// Why a report file is not a report.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReportError {
    #[error("report is over {MAX_BYTES} bytes")]
    TooLarge,
    #[error("report is not a format-{FORMAT} report: {0}")]
    Malformed(String),
    #[error("report's client {client:?} is not its file's name")]
    WrongName { client: String },
}

impl ReportError {
    /// A stable name for the kind of fault.
    pub fn kind(&self) -> &'static str {
        match self {
            ReportError::TooLarge => "too-large",
            ReportError::Malformed(_) => "malformed",
            ReportError::WrongName { .. } => "wrong-name",
        }
    }
}

impl Report {
    /// The report of `client`, a router `router` that reads list versions `reads`, which
    /// loaded `list` at `now` (Unix seconds) and writes it then: nothing refreshed yet, one
    /// every [`EVERY_SECS`], no task or label (set what differs with `..Report::loaded(…)`).
    pub fn loaded(
        client: impl Into<String>,
        router: impl Into<String>,
        reads: Vec<u32>,
        list: ListSeen,
        now: u64,
    ) -> Report {
        Report {
            format: FORMAT,
            client: client.into(),
            router: router.into(),
            reads,
            list,
            loaded_at: now,
            refreshed_at: None,
            refresh_failed_at: None,
            written_at: now,
            every: EVERY_SECS,
            task: None,
            label: None,
        }
    }

    /// Parses the bytes of the report file named `file_name`.
    pub fn parse(file_name: &str, bytes: &[u8]) -> Result<Report, ReportError> {
        if bytes.len() > MAX_BYTES {
            return Err(ReportError::TooLarge);
        }
        let report: Report =
            serde_json::from_slice(bytes).map_err(|e| ReportError::Malformed(e.to_string()))?;
        if report.format != FORMAT {
            return Err(ReportError::Malformed(format!("format {}", report.format)));
        }
        if !is_client_id(&report.client) || report.list.sha256.len() != 64 {
            return Err(ReportError::Malformed("client or list.sha256".into()));
        }
        if client_of_file(file_name) != Some(report.client.as_str()) {
            return Err(ReportError::WrongName {
                client: report.client,
            });
        }
        Ok(report)
    }

    /// The report as written: compact JSON, fields in their declared order.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a report serializes")
    }

    /// Whether this router can read lists of `version`.
    pub fn can_read(&self, version: u32) -> bool {
        self.reads.contains(&version)
    }
}

/// SHA-256, lowercase hex, of the exact bytes of a list as published (the parameter's value).
pub fn list_sha256(text: &str) -> String {
    let digest = Sha256::digest(text.as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// Whether `id` is a client id: 16 lowercase hexadecimal digits.
pub fn is_client_id(id: &str) -> bool {
    id.len() == 16 && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// The client id of a report file's name (`<id>.json`), if it is one.
pub fn client_of_file(name: &str) -> Option<&str> {
    name.strip_suffix(".json").filter(|id| is_client_id(id))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Report {
        let list = ListSeen {
            sha256: list_sha256("{}"),
            version: 1,
            parameter_version: Some(3),
        };
        Report {
            written_at: 70,
            ..Report::loaded(
                "0123456789abcdef",
                "efs-router-rust/0.1.0",
                vec![1, 2],
                list,
                10,
            )
        }
    }

    #[test]
    fn a_report_reads_back_as_written() {
        let r = sample();
        assert_eq!(
            Report::parse("0123456789abcdef.json", r.to_json().as_bytes()),
            Ok(r)
        );
    }

    #[test]
    fn a_report_under_another_name_is_refused() {
        let err = Report::parse("fedcba9876543210.json", sample().to_json().as_bytes());
        assert_eq!(err.map_err(|e| e.kind()), Err("wrong-name"));
    }

    #[test]
    fn an_oversized_or_malformed_report_is_refused() {
        let big = vec![b' '; MAX_BYTES + 1];
        assert_eq!(
            Report::parse("0123456789abcdef.json", &big),
            Err(ReportError::TooLarge)
        );
        let err = Report::parse("0123456789abcdef.json", b"{\"format\":1}");
        assert_eq!(err.map_err(|e| e.kind()), Err("malformed"));
    }

    #[test]
    fn a_list_is_named_by_its_exact_text_and_its_own_version() {
        let v1 = r#"{"mount_targets":[],"strategy":"rendezvous"}"#;
        let v2 = r#"{"mount_targets":[],"strategy":"rendezvous","version":2}"#;
        let seen = ListSeen::of(v1, Some(7));
        assert_eq!((seen.version, seen.parameter_version), (1, Some(7)));
        assert_eq!(seen.sha256, list_sha256(v1));
        assert_eq!(ListSeen::of(v2, None).version, 2);
        assert_eq!(ListSeen::of(r#"{"version":null}"#, None).version, 1);
    }

    #[test]
    fn client_ids_are_sixteen_lowercase_hex_digits() {
        assert_eq!(
            client_of_file("0123456789abcdef.json"),
            Some("0123456789abcdef")
        );
        assert_eq!(client_of_file("0123456789ABCDEF.json"), None);
        assert_eq!(client_of_file("0123456789abcdef.tmp"), None);
        assert_eq!(client_of_file("../../etc/passwd.json"), None);
    }
}
