//! The published list of mount targets: the JSON that efs-mount-autoscaler writes to SSM
//! Parameter Store and every client reads. Both forms of the contract parse:
//!
//! - the current form: `{"mount_targets":[{"id","ip","az","az_id","subnet_id","root"}],"strategy":"rendezvous"}`
//! - the original two-field form: `{"mount_targets":[{"id","ip"}]}`, read as every entry rooted
//!   at `/` with strategy `modulo-sha256`, which is how that system routed.
//! - version 2, `{"mount_targets":[{…,"shards":5,"draining_shards":1}],"strategy":"rendezvous","version":2}`:
//!   a mount target serves several shards, its `root` and then `/shards/<az_id>.<k>` for
//!   k = 1 … shards − 1 ([`MountTargetList::shards`]). Its size does not grow with the shards.
//!   A list is written as version 2 only when some target serves more than one shard; clients
//!   older than version 2 refuse the `version` key, so no two clients route one list differently.

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
    /// How many shards this target serves (version 2): `root`, then `/shards/<az_id>.<k>`
    /// for k = 1 … shards − 1. 1 in the earlier forms.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub shards: u32,
    /// The last this many of its shards are draining (version 2); fewer than `shards` (the
    /// whole target drains with `draining`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub draining_shards: u32,
}

fn default_root() -> String {
    "/".to_owned()
}

fn one() -> u32 {
    1
}

fn is_one(n: &u32) -> bool {
    *n == 1
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// The most shards one list may describe: the list's own checks are quadratic in it, and
/// every shard is a directory a client may probe for a file that is not at home.
pub const MAX_LIST_SHARDS: usize = 1000;

/// The root of a mount target's `k`-th shard (k ≥ 1; its first is its `root`).
pub fn extra_root(az_id: &str, k: u32) -> String {
    format!("/shards/{az_id}.{k}")
}

impl Target {
    /// The roots of this target's shards: `root`, then `/shards/<az_id>.<k>` for k = 1 … shards − 1.
    pub fn shard_roots(&self) -> Vec<String> {
        let az_id = self.az_id.as_deref().unwrap_or_default();
        (0..self.shards.max(1))
            .map(|k| {
                if k == 0 {
                    self.root.clone()
                } else {
                    extra_root(az_id, k)
                }
            })
            .collect()
    }

    /// Whether its `k`-th shard is draining: the whole target is, or k is among its last
    /// `draining_shards`.
    pub fn shard_draining(&self, k: u32) -> bool {
        self.draining || k >= self.shards.saturating_sub(self.draining_shards)
    }
}

/// The whole published document.
#[derive(Debug, Clone, PartialEq, Eq)]
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
    #[serde(default)]
    version: Option<u32>,
}

/// The document as written: `version` only when it is 2.
#[derive(Serialize)]
struct OutList<'a> {
    mount_targets: &'a [Target],
    strategy: Strategy,
    #[serde(skip_serializing_if = "Option::is_none")]
    version: Option<u32>,
}

/// Why a published list was refused. The message says what is wrong and names the offending
/// key, id or root; the caller names the source.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ListError {
    #[error("not a mount target list: {0}")]
    Json(String),
    #[error("not a mount target list: the key {key:?} appears twice in one object")]
    DuplicateKey { key: String },
    #[error("not a mount target list: version {found} is not 1 or 2")]
    BadVersion { found: u32 },
    #[error("mount target {id} has \"shards\" or \"draining_shards\", which only a version 2 list may have (clients before version 2 would route by its root alone)")]
    ShardsNeedVersion { id: String },
    #[error("mount target {id}: {why}")]
    BadShards { id: String, why: String },
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
    /// it: `not-a-list`, `duplicate-key`, `bad-version`, `shards-need-version`, `bad-shards`,
    /// `empty-id`, `duplicate-id`, `bad-root`, `reserved-root`, `duplicate-root` or `nested-root`.
    pub fn kind(&self) -> &'static str {
        match self {
            ListError::Json(_) => "not-a-list",
            ListError::DuplicateKey { .. } => "duplicate-key",
            ListError::BadVersion { .. } => "bad-version",
            ListError::ShardsNeedVersion { .. } => "shards-need-version",
            ListError::BadShards { .. } => "bad-shards",
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
        match raw.version {
            None | Some(1) => {
                if let Some(t) = raw
                    .mount_targets
                    .iter()
                    .find(|t| t.shards != 1 || t.draining_shards != 0)
                {
                    return Err(ListError::ShardsNeedVersion { id: t.id.clone() });
                }
            }
            Some(2) => {}
            Some(found) => return Err(ListError::BadVersion { found }),
        }
        let list = MountTargetList {
            mount_targets: raw.mount_targets,
            strategy: raw.strategy.unwrap_or(Strategy::ModuloSha256),
        };
        list.validate()?;
        Ok(list)
    }

    /// The document: version 2 only when some target serves more than one shard, so that a
    /// list today's clients can route is always written in the form they read.
    pub fn to_json(&self) -> String {
        serde_json::to_string(&OutList {
            mount_targets: &self.mount_targets,
            strategy: self.strategy,
            version: self.needs_version_2().then_some(2),
        })
        .expect("a list of strings always serialises")
    }

    /// Some target serves more than one shard, or drains some of them.
    pub fn needs_version_2(&self) -> bool {
        self.mount_targets
            .iter()
            .any(|t| t.shards != 1 || t.draining_shards != 0)
    }

    /// Every shard, in list order (each target's `root` first, then its `/shards/<az_id>.<k>`):
    /// each a copy of its target's entry with the shard's root, `draining` when that shard
    /// drains, and one shard. Routing, layouts and moves all work on this form.
    pub fn shards(&self) -> Vec<Target> {
        let mut out = Vec::with_capacity(self.shard_count());
        for t in &self.mount_targets {
            for (k, root) in (0u32..).zip(t.shard_roots()) {
                out.push(Target {
                    root,
                    draining: t.shard_draining(k),
                    shards: 1,
                    draining_shards: 0,
                    ..t.clone()
                });
            }
        }
        out
    }

    /// How many shards the list describes.
    pub fn shard_count(&self) -> usize {
        self.mount_targets
            .iter()
            .map(|t| t.shards.max(1) as usize)
            .sum()
    }

    /// The rules every list obeys, in this order (router/README.md, "The published list"):
    /// each entry in list order has a non-empty id not seen before and sane shard counts
    /// (`shards` ≥ 1; `draining_shards` < `shards`; more than one shard needs an `az_id` and
    /// `rendezvous`; at most [`MAX_LIST_SHARDS`] in all); then each shard in list order
    /// ([`MountTargetList::shards`]) has a clean absolute root with no component starting
    /// with `.`; then, for each pair of shards (the later one in list order, then the
    /// earlier), their roots are not the same (except `/` when every root is `/`, or in a
    /// `modulo-sha256` list: the original form, before and after the function appended shards
    /// to it) and neither lies inside the other (except `/shards/<name>…` inside `/`).
    pub fn validate(&self) -> Result<(), ListError> {
        let mut seen = HashSet::new();
        let mut total = 0usize;
        for (index, t) in self.mount_targets.iter().enumerate() {
            if t.id.is_empty() {
                return Err(ListError::EmptyId { index });
            }
            if !seen.insert(t.id.as_str()) {
                return Err(ListError::DuplicateId { id: t.id.clone() });
            }
            let bad = |why: &str| {
                Err(ListError::BadShards {
                    id: t.id.clone(),
                    why: why.to_owned(),
                })
            };
            if t.shards == 0 {
                return bad("\"shards\" is 0: a mount target in the list serves at least one shard");
            }
            if t.draining_shards >= t.shards {
                return bad("\"draining_shards\" must be fewer than \"shards\" (a whole target drains with \"draining\")");
            }
            if t.shards > 1 && t.az_id.as_deref().is_none_or(str::is_empty) {
                return bad("more than one shard needs an \"az_id\": its shards are /shards/<az_id>.<k>");
            }
            if t.shards > 1 && self.strategy != Strategy::Rendezvous {
                return bad("more than one shard needs strategy rendezvous");
            }
            total += t.shards as usize;
            if total > MAX_LIST_SHARDS {
                return bad(&format!(
                    "the list has more than {MAX_LIST_SHARDS} shards"
                ));
            }
        }
        let shards = self.shards();
        for t in &shards {
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
        let t = &shards;
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
