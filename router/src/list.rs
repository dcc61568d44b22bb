//! The published list of mount targets: the JSON that efs-mount-autoscaler writes to SSM
//! Parameter Store and every client reads. Both forms of the contract parse:
//!
//! - the current form: `{"mount_targets":[{"id","ip","az","az_id","subnet_id","root"}],"strategy":"rendezvous"}`
//! - the original two-field form: `{"mount_targets":[{"id","ip"}]}`, read as every entry rooted
//!   at `/` with strategy `modulo-sha256`, which is how that system routed.

use serde::{Deserialize, Serialize};
use std::collections::HashSet;
use std::fmt;

/// How a logical path is sent to a shard. Changing it re-homes most files, so the
/// function never changes the strategy of a list it did not create.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Strategy {
    /// Highest random weight over each shard's `root`: adding or removing a shard moves the minimum.
    #[serde(rename = "rendezvous")]
    Rendezvous,
    /// The original: `int(sha256(path).hexdigest(), 16) % n` over the list's order.
    #[serde(rename = "modulo-sha256")]
    ModuloSha256,
}

impl Strategy {
    pub fn as_str(self) -> &'static str {
        match self {
            Strategy::Rendezvous => "rendezvous",
            Strategy::ModuloSha256 => "modulo-sha256",
        }
    }
}

impl fmt::Display for Strategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One mount target as clients see it. `root` is the shard's directory inside the file
/// system: `/` for the first (the files that were already there), `/shards/<az-id>` for the others.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Target {
    pub id: String,
    pub ip: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub az: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub az_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subnet_id: Option<String>,
    #[serde(default = "default_root")]
    pub root: String,
    /// A target being emptied before removal: it receives no new files, reads still look there.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub draining: bool,
}

fn default_root() -> String {
    "/".to_owned()
}

/// The whole published document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MountTargetList {
    pub mount_targets: Vec<Target>,
    pub strategy: Strategy,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawList {
    mount_targets: Vec<Target>,
    #[serde(default)]
    strategy: Option<Strategy>,
}

/// Why a published list was refused. The message says what is wrong; the caller names the source.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ListError {
    #[error("not a mount target list: {0}")]
    Json(String),
    #[error("mount target {index} has an empty id")]
    EmptyId { index: usize },
    #[error("mount target {id} is listed twice")]
    DuplicateId { id: String },
    #[error("mount target {id} has root {root:?}: a root must be absolute, without '..', '.', empty parts or NUL")]
    BadRoot { id: String, root: String },
}

impl MountTargetList {
    pub fn new(strategy: Strategy) -> Self {
        MountTargetList {
            mount_targets: Vec::new(),
            strategy,
        }
    }

    /// Parses and checks either form. Unknown top-level keys are refused, so that a
    /// hand-edited parameter of another shape is never mistaken for a list and overwritten.
    pub fn from_json(text: &str) -> Result<Self, ListError> {
        let raw: RawList =
            serde_json::from_str(text).map_err(|e| ListError::Json(e.to_string()))?;
        let list = MountTargetList {
            mount_targets: raw.mount_targets,
            strategy: raw.strategy.unwrap_or(Strategy::ModuloSha256),
        };
        list.check()?;
        Ok(list)
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a list of strings always serialises")
    }

    fn check(&self) -> Result<(), ListError> {
        let mut seen = HashSet::new();
        for (index, t) in self.mount_targets.iter().enumerate() {
            if t.id.is_empty() {
                return Err(ListError::EmptyId { index });
            }
            if !seen.insert(t.id.as_str()) {
                return Err(ListError::DuplicateId { id: t.id.clone() });
            }
            if !root_is_valid(&t.root) {
                return Err(ListError::BadRoot {
                    id: t.id.clone(),
                    root: t.root.clone(),
                });
            }
        }
        Ok(())
    }
}

/// `/` or `/a/b`: absolute, no empty, `.` or `..` parts, no NUL, no trailing slash.
pub fn root_is_valid(root: &str) -> bool {
    if root == "/" {
        return true;
    }
    match root.strip_prefix('/') {
        Some(rest) => rest
            .split('/')
            .all(|part| !part.is_empty() && part != "." && part != ".." && !part.contains('\0')),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn original_form_reads_as_modulo_with_root_slash() {
        let list = MountTargetList::from_json(
            r#"{"mount_targets":[{"id":"fsmt-1","ip":"10.0.1.4"},{"id":"fsmt-2","ip":"10.0.2.7"}]}"#,
        )
        .unwrap();
        assert_eq!(list.strategy, Strategy::ModuloSha256);
        assert!(list.mount_targets.iter().all(|t| t.root == "/"));
        assert_eq!(list.mount_targets[1].ip, "10.0.2.7");
    }

    #[test]
    fn current_form_round_trips() {
        let text = r#"{"mount_targets":[{"id":"fsmt-1","ip":"10.0.1.4","az":"us-east-1a","az_id":"use1-az6","subnet_id":"subnet-1","root":"/"},{"id":"fsmt-2","ip":"10.0.2.7","az":"us-east-1b","az_id":"use1-az4","subnet_id":"subnet-2","root":"/shards/use1-az4"}],"strategy":"rendezvous"}"#;
        let list = MountTargetList::from_json(text).unwrap();
        assert_eq!(list.strategy, Strategy::Rendezvous);
        assert_eq!(list.to_json(), text);
    }

    #[test]
    fn refuses_what_is_not_a_list() {
        for bad in [
            "",
            "not json",
            "[]",
            r#"{"targets":[]}"#,
            r#"{"mount_targets":{}}"#,
            r#"{"mount_targets":[{"ip":"10.0.0.1"}]}"#,
            r#"{"mount_targets":[{"id":"","ip":"10.0.0.1"}]}"#,
            r#"{"mount_targets":[{"id":"a","ip":"1"},{"id":"a","ip":"2"}]}"#,
            r#"{"mount_targets":[{"id":"a","ip":"1","root":"shards/x"}]}"#,
            r#"{"mount_targets":[{"id":"a","ip":"1","root":"/shards/../x"}]}"#,
            r#"{"mount_targets":[],"strategy":"consistent"}"#,
            r#"{"mount_targets":[],"extra":1}"#,
        ] {
            assert!(MountTargetList::from_json(bad).is_err(), "accepted {bad:?}");
        }
    }
}
