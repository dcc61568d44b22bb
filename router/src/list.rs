//! The published list of mount targets: the JSON that efs-mount-autoscaler writes to SSM
//! Parameter Store and every client reads. Both forms of the contract parse:
//!
//! - the current form: `{"mount_targets":[{"id","ip","az","az_id","subnet_id","root"}],"strategy":"rendezvous"}`
//! - the original two-field form: `{"mount_targets":[{"id","ip"}]}`, read as every entry rooted
//!   at `/` with strategy `modulo-sha256`, which is how that system routed.

use serde::de::{DeserializeSeed, Deserializer, Error as _, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};
use std::cell::RefCell;
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

/// Why a published list was refused. The message says what is wrong and names the offending
/// key, id or root; the caller names the source.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ListError {
    #[error("not a mount target list: {0}")]
    Json(String),
    #[error("not a mount target list: the key {key:?} appears twice in one object")]
    DuplicateKey { key: String },
    #[error("mount target {index} has an empty id")]
    EmptyId { index: usize },
    #[error("mount target {id} is listed twice")]
    DuplicateId { id: String },
    #[error("mount target {id} has root {root:?}: a root must be absolute, without '..', '.', empty parts or NUL")]
    BadRoot { id: String, root: String },
    #[error("mount target {id} has root {root:?}: a component starting with '.' is reserved (the function keeps its state in /.efs-mount-autoscaler)")]
    ReservedRoot { id: String, root: String },
    #[error("mount targets {first} and {second} both have root {root}: one directory cannot be two shards (only the original form repeats /)")]
    DuplicateRoot {
        root: String,
        first: String,
        second: String,
    },
    #[error("mount target {inner_id} has root {inner_root}, inside root {outer_root} of mount target {outer_id}: shard directories must not nest (only /shards/<name> may lie under /)")]
    NestedRoot {
        inner_id: String,
        inner_root: String,
        outer_id: String,
        outer_root: String,
    },
}

impl ListError {
    /// The short name of the rule that refused the list, as `tests/vectors/lists.json` spells
    /// it: `not-a-list`, `duplicate-key`, `empty-id`, `duplicate-id`, `bad-root`,
    /// `reserved-root`, `duplicate-root` or `nested-root`.
    pub fn kind(&self) -> &'static str {
        match self {
            ListError::Json(_) => "not-a-list",
            ListError::DuplicateKey { .. } => "duplicate-key",
            ListError::EmptyId { .. } => "empty-id",
            ListError::DuplicateId { .. } => "duplicate-id",
            ListError::BadRoot { .. } => "bad-root",
            ListError::ReservedRoot { .. } => "reserved-root",
            ListError::DuplicateRoot { .. } => "duplicate-root",
            ListError::NestedRoot { .. } => "nested-root",
        }
    }
}

impl MountTargetList {
    pub fn new(strategy: Strategy) -> Self {
        MountTargetList {
            mount_targets: Vec::new(),
            strategy,
        }
    }

    /// Parses and checks either form ([`MountTargetList::validate`]). Unknown top-level keys
    /// and a key repeated in any object of the document are refused, so that a hand-edited
    /// parameter of another shape is never mistaken for a list and overwritten, and no reader
    /// picks a different one of two values than another.
    pub fn from_json(text: &str) -> Result<Self, ListError> {
        let repeated = RefCell::new(None);
        let mut de = serde_json::Deserializer::from_str(text);
        if let Err(e) = NoRepeatedKeys(&repeated)
            .deserialize(&mut de)
            .and_then(|()| de.end())
        {
            return Err(match repeated.take() {
                Some(key) => ListError::DuplicateKey { key },
                None => ListError::Json(e.to_string()),
            });
        }
        let raw: RawList =
            serde_json::from_str(text).map_err(|e| ListError::Json(e.to_string()))?;
        let list = MountTargetList {
            mount_targets: raw.mount_targets,
            strategy: raw.strategy.unwrap_or(Strategy::ModuloSha256),
        };
        list.validate()?;
        Ok(list)
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a list of strings always serialises")
    }

    /// The rules every list obeys, in this order (router/README.md, "The published list"):
    /// each entry in list order has a non-empty id not seen before, a clean absolute root, and
    /// no root component starting with `.`; then, for each pair of entries (the later one in
    /// list order, then the earlier), their roots are not the same (except `/` when every root
    /// is `/`, or in a `modulo-sha256` list: the original form, before and after the function
    /// appended shards to it) and neither lies inside the other (except `/shards/<name>…`
    /// inside `/`).
    pub fn validate(&self) -> Result<(), ListError> {
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
            if t.root.split('/').any(|part| part.starts_with('.')) {
                return Err(ListError::ReservedRoot {
                    id: t.id.clone(),
                    root: t.root.clone(),
                });
            }
        }
        let t = &self.mount_targets;
        let slash_may_repeat =
            self.strategy == Strategy::ModuloSha256 || t.iter().all(|t| t.root == "/");
        for (j, later) in t.iter().enumerate() {
            for earlier in &t[..j] {
                if earlier.root == later.root {
                    if earlier.root == "/" && slash_may_repeat {
                        continue;
                    }
                    return Err(ListError::DuplicateRoot {
                        root: later.root.clone(),
                        first: earlier.id.clone(),
                        second: later.id.clone(),
                    });
                }
                let (outer, inner) = if lies_inside(&later.root, &earlier.root) {
                    (earlier, later)
                } else if lies_inside(&earlier.root, &later.root) {
                    (later, earlier)
                } else {
                    continue;
                };
                if outer.root == "/" && inner.root.starts_with("/shards/") {
                    continue;
                }
                return Err(ListError::NestedRoot {
                    inner_id: inner.id.clone(),
                    inner_root: inner.root.clone(),
                    outer_id: outer.id.clone(),
                    outer_root: outer.root.clone(),
                });
            }
        }
        Ok(())
    }
}

/// Whether the clean root `inner` lies strictly inside the clean root `outer`.
fn lies_inside(inner: &str, outer: &str) -> bool {
    if outer == "/" {
        return inner != "/";
    }
    inner
        .strip_prefix(outer)
        .is_some_and(|rest| rest.starts_with('/'))
}

/// Reads any JSON value, refusing a key repeated in one object (serde_json keeps the last
/// one in a map and ignores keys it does not know); the repeated key is left in the cell.
struct NoRepeatedKeys<'a>(&'a RefCell<Option<String>>);

impl<'de> DeserializeSeed<'de> for NoRepeatedKeys<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for NoRepeatedKeys<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }

    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }

    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }

    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }

    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(NoRepeatedKeys(self.0))?.is_some() {}
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut keys = HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            if keys.contains(&key) {
                let message = format!("the key {key:?} appears twice in one object");
                *self.0.borrow_mut() = Some(key);
                return Err(A::Error::custom(message));
            }
            map.next_value_seed(NoRepeatedKeys(self.0))?;
            keys.insert(key);
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
