//! The published list of mount targets: the JSON that efs-mount-autoscaler writes to SSM
//! Parameter Store and every client reads. Every form of the contract parses:
//!
//! - the current form: `{"mount_targets":[{"id","ip","az","az_id","subnet_id","root"}],"strategy":"rendezvous"}`
//! - the original two-field form: `{"mount_targets":[{"id","ip"}]}`, read as every entry rooted
//!   at `/` with strategy `modulo-sha256`, which is how that system routed.
//! - version 2, `{"mount_targets":[{…,"shards":5,"draining_shards":1}],"strategy":"rendezvous","version":2}`:
//!   a mount target serves several shards, its `root` and then `/shards/<az_id>.<k>` for
//!   k = 1 … shards − 1 ([`MountTargetList::shards`]). Its size does not grow with the shards.
//!   A list is written as version 2 only when some target serves more than one shard; clients
//!   older than version 2 refuse the `version` key, so no two clients route one list differently.

use crate::path::LogicalPath;
use crate::placement::{Open, Placement};
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

/// The first root of a mount target added in AZ `az_id` (the first target keeps `/`): a key
/// that survives re-creating the target in that AZ.
pub fn az_root(az_id: &str) -> String {
    format!("/shards/{az_id}")
}

/// The root of a mount target's `k`-th shard (k ≥ 1; its first is its `root`).
pub fn extra_root(az_id: &str, k: u32) -> String {
    format!("{}.{k}", az_root(az_id))
}

/// One shard: a directory of the file system (`root`) that one mount target serves. A list
/// entry ([`Target`]) serves one or more; [`MountTargetList::shards`] gives them in order, and
/// routing, layouts and moves work on them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shard {
    pub root: String,
    /// This shard drains (its target, or the last of its target's shards): it receives no new
    /// files, reads still look there.
    pub draining: bool,
    /// The mount target that serves it: its entry's id, address and place.
    pub id: String,
    pub ip: String,
    pub az: Option<String>,
    pub az_id: Option<String>,
    pub subnet_id: Option<String>,
}

impl Shard {
    /// A shard at `root`, not draining, nothing else known: how shards are built in tests.
    pub fn new(id: impl Into<String>, ip: impl Into<String>, root: impl Into<String>) -> Shard {
        Target::new(id, ip, root).first_shard()
    }
}

impl Target {
    /// An entry that serves one shard at `root`, not draining, nothing else known: how a list
    /// is built in code.
    pub fn new(id: impl Into<String>, ip: impl Into<String>, root: impl Into<String>) -> Target {
        Target {
            id: id.into(),
            ip: ip.into(),
            az: None,
            az_id: None,
            subnet_id: None,
            root: root.into(),
            draining: false,
            shards: 1,
            draining_shards: 0,
        }
    }

    /// Its first shard, at `root`.
    pub fn first_shard(&self) -> Shard {
        self.shard(0, self.root.clone())
    }

    /// Its `k`-th shard, at `root`.
    fn shard(&self, k: u32, root: String) -> Shard {
        Shard {
            root,
            draining: self.shard_draining(k),
            id: self.id.clone(),
            ip: self.ip.clone(),
            az: self.az.clone(),
            az_id: self.az_id.clone(),
            subnet_id: self.subnet_id.clone(),
        }
    }

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

    /// The root of its last shard when it serves more than one (and has an AZ id): the shard
    /// that goes first when the target serves fewer.
    pub fn last_extra_root(&self) -> Option<String> {
        let az_id = self.az_id.as_deref().filter(|_| self.shards > 1)?;
        Some(extra_root(az_id, self.shards - 1))
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
    /// Version 3: the earlier placements whose files may still be away from home
    /// ([`crate::placement`]). `None` in the earlier forms, whose misses look everywhere.
    pub open: Option<Open>,
    /// Version 3: the tree (relative to each shard's root) whose files the function walks and
    /// moves home, and so the only one `open` speaks for. A path outside it may be away from
    /// home anywhere the list names: its miss looks in every shard. `None`: the whole tree.
    pub scope: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawList {
    mount_targets: Vec<Target>,
    #[serde(default)]
    strategy: Option<Strategy>,
    #[serde(default)]
    version: Option<u32>,
    #[serde(default)]
    open: Option<Open>,
    #[serde(default)]
    scope: Option<String>,
}

/// The document as written: `version` only when it is 2 or 3.
#[derive(Serialize)]
struct OutList<'a> {
    mount_targets: &'a [Target],
    #[serde(skip_serializing_if = "Option::is_none")]
    open: Option<&'a Open>,
    #[serde(skip_serializing_if = "Option::is_none")]
    scope: Option<&'a str>,
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
    #[error("not a mount target list: version {found} is not 1, 2 or 3")]
    BadVersion { found: u32 },
    #[error("\"open\" is in a list exactly when it is version 3 (clients before version 3 would look for a missing file in every shard, and a version 3 list must say where)")]
    OpenNeedsVersion,
    #[error("\"open\" names shard root {root:?}, which is not one of the list's shards")]
    BadOpen { root: String },
    #[error("\"scope\" is {scope:?}: a version 3 list's scope is a clean relative path (no leading '/', '.', '..' or empty parts)")]
    BadScope { scope: String },
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
    #[error("{}", duplicate_root(first, second, root))]
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
    /// it: `not-a-list`, `duplicate-key`, `bad-version`, `open-needs-version`, `bad-open`, `bad-scope`,
    /// `shards-need-version`, `bad-shards`,
    /// `empty-id`, `duplicate-id`, `bad-root`, `reserved-root`, `duplicate-root` or `nested-root`.
    pub fn kind(&self) -> &'static str {
        match self {
            ListError::Json(_) => "not-a-list",
            ListError::DuplicateKey { .. } => "duplicate-key",
            ListError::BadVersion { .. } => "bad-version",
            ListError::OpenNeedsVersion => "open-needs-version",
            ListError::BadOpen { .. } => "bad-open",
            ListError::BadScope { .. } => "bad-scope",
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
            open: None,
            scope: None,
        }
    }

    /// Parses and checks every form ([`MountTargetList::validate`]). Unknown top-level keys
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
            Some(2 | 3) => {}
            Some(found) => return Err(ListError::BadVersion { found }),
        }
        if (raw.version == Some(3)) != raw.open.is_some() {
            return Err(ListError::OpenNeedsVersion);
        }
        if let Some(scope) = &raw.scope {
            let parsed = LogicalPath::parse(scope);
            let clean = raw.open.is_some() && parsed.is_ok_and(|p| p.as_str() == scope);
            if !clean {
                return Err(ListError::BadScope {
                    scope: scope.clone(),
                });
            }
        }
        let list = MountTargetList {
            mount_targets: raw.mount_targets,
            strategy: raw.strategy.unwrap_or(Strategy::ModuloSha256),
            open: raw.open,
            scope: raw.scope,
        };
        list.validate()?;
        Ok(list)
    }

    /// The document: version 3 when it says which placements are open, else version 2 only
    /// when some target serves more than one shard, so that a list today's clients can route
    /// is always written in the form they read.
    pub fn to_json(&self) -> String {
        let version = match (&self.open, self.needs_version_2()) {
            (Some(_), _) => Some(3),
            (None, true) => Some(2),
            (None, false) => None,
        };
        serde_json::to_string(&OutList {
            mount_targets: &self.mount_targets,
            open: self.open.as_ref(),
            scope: self.scope.as_deref().filter(|_| self.open.is_some()),
            strategy: self.strategy,
            version,
        })
        .expect("a list of strings always serialises")
    }

    /// Its version as written: 1, 2 or 3.
    pub fn version(&self) -> u32 {
        match (&self.open, self.needs_version_2()) {
            (Some(_), _) => 3,
            (None, true) => 2,
            (None, false) => 1,
        }
    }

    /// What `open` says for `logical`: itself within the list's `scope`, and outside it
    /// [`Open::Everywhere`] (the function never walks there, so never closed a placement over it).
    pub fn open_for(&self, logical: &LogicalPath) -> Option<&Open> {
        static EVERYWHERE: Open = Open::Everywhere(crate::placement::Everywhere::Everywhere);
        match &self.scope {
            Some(scope) if self.open.is_some() && !logical.is_at_or_under(scope) => {
                Some(&EVERYWHERE)
            }
            _ => self.open.as_ref(),
        }
    }

    /// The placement of this list ([`Placement::of`]).
    pub fn placement(&self) -> Placement {
        Placement::of(self.strategy, &self.mount_targets)
    }

    /// Some target serves more than one shard, or drains some of them.
    pub fn needs_version_2(&self) -> bool {
        self.mount_targets
            .iter()
            .any(|t| t.shards != 1 || t.draining_shards != 0)
    }

    /// Every shard, in list order (each target's `root` first, then its `/shards/<az_id>.<k>`),
    /// `draining` when that shard drains. Routing, layouts and moves all work on this form.
    pub fn shards(&self) -> Vec<Shard> {
        let mut out = Vec::with_capacity(self.shard_count());
        for t in &self.mount_targets {
            for (k, root) in (0u32..).zip(t.shard_roots()) {
                out.push(t.shard(k, root));
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

    /// The rules every list obeys, in this order (router/REFERENCE.md, "The published list"):
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
                return bad(
                    "\"shards\" is 0: a mount target in the list serves at least one shard",
                );
            }
            if t.draining_shards >= t.shards {
                return bad("\"draining_shards\" must be fewer than \"shards\" (a whole target drains with \"draining\")");
            }
            if t.shards > 1 && t.az_id.as_deref().is_none_or(str::is_empty) {
                return bad(
                    "more than one shard needs an \"az_id\": its shards are /shards/<az_id>.<k>",
                );
            }
            if t.shards > 1 && self.strategy != Strategy::Rendezvous {
                return bad("more than one shard needs strategy rendezvous");
            }
            total += t.shards as usize;
            if total > MAX_LIST_SHARDS {
                return bad(&format!("the list has more than {MAX_LIST_SHARDS} shards"));
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
        self.validate_open(&shards)
    }

    /// Every open placement has shards, each of them one of the list's own (a miss looks in
    /// the directories the list names, never another).
    fn validate_open(&self, shards: &[Shard]) -> Result<(), ListError> {
        let Some(Open::Placements(placements)) = &self.open else {
            return Ok(());
        };
        for p in placements {
            let bad = |root: &str| {
                Err(ListError::BadOpen {
                    root: root.to_owned(),
                })
            };
            if p.targets.is_empty() {
                return bad("(none: a placement of no shard)");
            }
            for t in &p.targets {
                if t.shards == 0 || (t.shards > 1 && t.az_id.as_deref().is_none_or(str::is_empty)) {
                    return bad(&t.root);
                }
            }
            if let Some(root) = p
                .roots()
                .into_iter()
                .find(|r| !shards.iter().any(|t| &t.root == r))
            {
                return bad(&root);
            }
        }
        Ok(())
    }
}

/// The message of [`ListError::DuplicateRoot`]: two entries, or one entry twice (its root
/// and one of its derived roots).
fn duplicate_root(first: &str, second: &str, root: &str) -> String {
    if first == second {
        format!(
            "mount target {first} has root {root} twice (its root and one of its \
             /shards/<az_id>.<k>): one directory cannot be two shards"
        )
    } else {
        format!(
            "mount targets {first} and {second} both have root {root}: one directory cannot be \
             two shards (only the original form repeats /)"
        )
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
    fn a_targets_roots_are_named_after_its_az() {
        let mut t = Target {
            az_id: Some("use1-az2".into()),
            ..Target::new("fsmt-b", "10.0.2.4", az_root("use1-az2"))
        };
        assert_eq!(t.root, "/shards/use1-az2");
        assert_eq!(t.last_extra_root(), None, "one shard: none extra");
        t.shards = 3;
        assert_eq!(t.last_extra_root().as_deref(), Some("/shards/use1-az2.2"));
        assert_eq!(t.shard_roots().last(), t.last_extra_root().as_ref());
        t.az_id = None;
        assert_eq!(
            t.last_extra_root(),
            None,
            "no AZ id: no extra shard can be named"
        );
    }

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

    const V2: &str = r#"{"mount_targets":[{"id":"fsmt-a","ip":"10.0.1.4","az":"us-east-1a","az_id":"use1-az1","subnet_id":"subnet-1","root":"/","shards":3},{"id":"fsmt-b","ip":"10.0.2.7","az":"us-east-1b","az_id":"use1-az2","subnet_id":"subnet-2","root":"/shards/use1-az2","shards":4,"draining_shards":1}],"strategy":"rendezvous","version":2}"#;

    /// The kind of error `text` is refused with, and its message.
    fn refused(text: &str) -> (&'static str, String) {
        match MountTargetList::from_json(text) {
            Ok(l) => panic!("accepted {text}: {l:?}"),
            Err(e) => (e.kind(), e.to_string()),
        }
    }

    /// A version 2 document of these entries (each a JSON object's contents).
    fn v2(entries: &[&str]) -> String {
        let entries: Vec<String> = entries.iter().map(|e| format!("{{{e}}}")).collect();
        format!(
            r#"{{"mount_targets":[{}],"strategy":"rendezvous","version":2}}"#,
            entries.join(",")
        )
    }

    #[test]
    fn version_2_round_trips() {
        let list = MountTargetList::from_json(V2).unwrap();
        assert!(list.needs_version_2());
        assert_eq!(list.mount_targets.len(), 2);
        assert_eq!(list.shard_count(), 7);
        assert_eq!(list.to_json(), V2);
        assert_eq!(MountTargetList::from_json(&list.to_json()), Ok(list));
    }

    #[test]
    fn one_shard_per_target_is_written_in_the_current_form() {
        let current = r#"{"mount_targets":[{"id":"fsmt-a","ip":"10.0.1.4","az_id":"use1-az1","root":"/"},{"id":"fsmt-b","ip":"10.0.2.7","az_id":"use1-az2","root":"/shards/use1-az2","draining":true}],"strategy":"rendezvous"}"#;
        for text in [
            current.to_owned(),
            current.replace(r#""rendezvous"}"#, r#""rendezvous","version":2}"#),
            current.replace(r#""rendezvous"}"#, r#""rendezvous","version":1}"#),
            current.replace(
                r#""root":"/","#,
                r#""root":"/","shards":1,"draining_shards":0,"#,
            ),
        ] {
            let list = MountTargetList::from_json(&text).unwrap_or_else(|e| panic!("{text}: {e}"));
            assert!(!list.needs_version_2(), "{text}");
            assert_eq!(list.to_json(), current, "{text}");
            let firsts: Vec<Shard> = list.mount_targets.iter().map(Target::first_shard).collect();
            assert_eq!(list.shards(), firsts, "{text}");
        }
        // Built in code: version 2 exactly when a target has more than one shard or drains some.
        let mut list = MountTargetList::from_json(current).unwrap();
        list.mount_targets[1].shards = 2;
        assert!(list
            .to_json()
            .ends_with(r#""shards":2}],"strategy":"rendezvous","version":2}"#));
        list.mount_targets[1].shards = 1;
        list.mount_targets[0].draining_shards = 1;
        assert!(list.needs_version_2());
    }

    #[test]
    fn shards_expand_in_list_order_with_their_roots_and_draining() {
        let mut list = MountTargetList::from_json(V2).unwrap();
        let shards = list.shards();
        let got: Vec<(&str, &str, bool)> = shards
            .iter()
            .map(|s| (s.id.as_str(), s.root.as_str(), s.draining))
            .collect();
        assert_eq!(
            got,
            [
                ("fsmt-a", "/", false),
                ("fsmt-a", "/shards/use1-az1.1", false),
                ("fsmt-a", "/shards/use1-az1.2", false),
                ("fsmt-b", "/shards/use1-az2", false),
                ("fsmt-b", "/shards/use1-az2.1", false),
                ("fsmt-b", "/shards/use1-az2.2", false),
                ("fsmt-b", "/shards/use1-az2.3", true),
            ]
        );
        for s in &shards {
            let t = list.mount_targets.iter().find(|t| t.id == s.id).unwrap();
            assert_eq!(
                (&s.ip, &s.az, &s.az_id, &s.subnet_id),
                (&t.ip, &t.az, &t.az_id, &t.subnet_id)
            );
        }
        assert_eq!(
            list.mount_targets[1].shard_roots(),
            [
                "/shards/use1-az2",
                "/shards/use1-az2.1",
                "/shards/use1-az2.2",
                "/shards/use1-az2.3"
            ]
        );
        let b = &list.mount_targets[1];
        assert_eq!(
            (0..4).map(|k| b.shard_draining(k)).collect::<Vec<_>>(),
            [false, false, false, true]
        );
        // A draining target drains every one of its shards.
        list.mount_targets[1].draining = true;
        assert!(list.shards()[3..].iter().all(|s| s.draining));
        assert!(list.shards()[..3].iter().all(|s| !s.draining));
        assert_eq!(extra_root("use1-az9", 12), "/shards/use1-az9.12");
    }

    #[test]
    fn version_3_says_which_placements_are_open_and_names_only_its_shards() {
        let v3 = r#"{"mount_targets":[{"id":"fsmt-a","ip":"10.0.1.4","az_id":"use1-az1","root":"/","shards":2},{"id":"fsmt-b","ip":"10.0.2.7","az_id":"use1-az2","root":"/shards/use1-az2"}],"open":[{"strategy":"rendezvous","targets":[{"root":"/"}]}],"strategy":"rendezvous","version":3}"#;
        let list = MountTargetList::from_json(v3).unwrap();
        assert_eq!(list.version(), 3);
        assert_eq!(list.to_json(), v3);
        let everywhere = v3.replace(
            r#"[{"strategy":"rendezvous","targets":[{"root":"/"}]}]"#,
            r#""everywhere""#,
        );
        assert_eq!(
            MountTargetList::from_json(&everywhere).unwrap().to_json(),
            everywhere
        );
        let none = v3.replace(
            r#"[{"strategy":"rendezvous","targets":[{"root":"/"}]}]"#,
            "[]",
        );
        assert_eq!(
            MountTargetList::from_json(&none).unwrap().open,
            Some(Open::Placements(vec![]))
        );
        // "open" exactly in version 3.
        for text in [
            v3.replace(r#","version":3"#, "")
                .replace(r#","shards":2"#, ""),
            v3.replace(r#","version":3"#, r#","version":2"#),
            none.replace(r#""open":[],"#, ""),
        ] {
            assert_eq!(refused(&text).0, "open-needs-version", "{text}");
        }
        // A placement names the list's shards only, with the counts a list entry has.
        for (placement, root) in [
            (r#"{"root":"/shards/use1-az9"}"#, "/shards/use1-az9"),
            (
                r#"{"root":"/","az_id":"use1-az1","shards":3}"#,
                "/shards/use1-az1.2",
            ),
            (r#"{"root":"/","shards":2}"#, "/"),
            (r#"{"root":"/","shards":0}"#, "/"),
        ] {
            let text = v3.replace(r#"{"root":"/"}"#, placement);
            let (kind, message) = refused(&text);
            assert_eq!(kind, "bad-open", "{text}");
            assert!(message.contains(root), "{message}");
        }
        let empty = v3.replace(r#"[{"root":"/"}]"#, "[]");
        assert_eq!(refused(&empty).0, "bad-open");
        // A list built in code is version 3 exactly when it says what is open.
        let mut built = list.clone();
        built.open = None;
        assert_eq!(built.version(), 2);
    }

    #[test]
    fn version_must_be_1_2_or_3_and_shards_need_2() {
        for (version, kind) in [
            ("0", "bad-version"),
            ("4", "bad-version"),
            ("4294967295", "bad-version"),
        ] {
            let text =
                format!(r#"{{"mount_targets":[],"strategy":"rendezvous","version":{version}}}"#);
            let (got, message) = refused(&text);
            assert_eq!(got, kind, "{text}");
            assert!(
                message.contains(&format!("version {version} ")),
                "{message}"
            );
        }
        // Not a number a version can be: not a list at all.
        for version in ["\"2\"", "2.0", "-1", "-0", "true", "4294967296"] {
            let text = format!(r#"{{"mount_targets":[],"version":{version}}}"#);
            assert_eq!(refused(&text).0, "not-a-list", "{text}");
        }
        assert!(MountTargetList::from_json(r#"{"mount_targets":[],"version":null}"#).is_ok());
        let entry = r#"{"id":"fsmt-a","ip":"1","az_id":"use1-az1","root":"/","#;
        for (rest, version) in [
            (r#""shards":2}"#, ""),
            (r#""shards":2}"#, r#","version":1"#),
            (r#""shards":3,"draining_shards":1}"#, ""),
            // Even a count that is wrong in version 2: the version is looked at first.
            (r#""shards":0}"#, ""),
            (r#""shards":1,"draining_shards":1}"#, r#","version":1"#),
        ] {
            let text = format!(
                r#"{{"mount_targets":[{{"id":"fsmt-0","ip":"1","root":"/shards/x"}},{entry}{rest}],"strategy":"rendezvous"{version}}}"#
            );
            let (kind, message) = refused(&text);
            assert_eq!(kind, "shards-need-version", "{text}");
            assert!(
                message.contains("fsmt-a") && message.contains("version 2"),
                "{message}"
            );
        }
    }

    #[test]
    fn shard_counts_are_checked() {
        let cases = [
            (v2(&[r#""id":"a","ip":"1","az_id":"z","shards":0"#]), "a", "is 0"),
            (v2(&[r#""id":"a","ip":"1","az_id":"z","shards":2,"draining_shards":2"#]), "a", "fewer than"),
            (v2(&[r#""id":"a","ip":"1","az_id":"z","draining_shards":1"#]), "a", "fewer than"),
            (v2(&[r#""id":"a","ip":"1","shards":2"#]), "a", "az_id"),
            (v2(&[r#""id":"a","ip":"1","az_id":null,"shards":2"#]), "a", "az_id"),
            (v2(&[r#""id":"a","ip":"1","az_id":"","shards":2"#]), "a", "az_id"),
            (
                r#"{"mount_targets":[{"id":"a","ip":"1","az_id":"z","shards":2}],"strategy":"modulo-sha256","version":2}"#.to_owned(),
                "a",
                "rendezvous",
            ),
            // No strategy is modulo-sha256.
            (
                r#"{"mount_targets":[{"id":"a","ip":"1","az_id":"z","shards":2}],"version":2}"#.to_owned(),
                "a",
                "rendezvous",
            ),
            (
                v2(&[
                    r#""id":"a","ip":"1","az_id":"x","shards":600"#,
                    r#""id":"b","ip":"1","az_id":"y","root":"/shards/y","shards":401"#,
                ]),
                "b",
                "more than 1000 shards",
            ),
            (v2(&[r#""id":"a","ip":"1","az_id":"x","shards":4294967295"#]), "a", "more than 1000 shards"),
        ];
        for (text, id, why) in cases {
            let (kind, message) = refused(&text);
            assert_eq!(kind, "bad-shards", "{text}: {message}");
            assert!(
                message.contains(&format!("mount target {id}:")),
                "{message}"
            );
            assert!(message.contains(why), "{message}");
        }
        // Exactly the most is fine; a modulo-sha256 list of one-shard targets needs no az_id.
        let most = v2(&[
            r#""id":"a","ip":"1","az_id":"x","shards":600"#,
            r#""id":"b","ip":"1","az_id":"y","root":"/shards/y","shards":400"#,
        ]);
        assert_eq!(
            MountTargetList::from_json(&most).unwrap().shard_count(),
            MAX_LIST_SHARDS
        );
        // Counts that are not a u32 are not a list.
        for n in [
            "-1",
            "-0",
            "1.0",
            "1e0",
            "\"2\"",
            "null",
            "true",
            "4294967296",
        ] {
            for key in ["shards", "draining_shards"] {
                let text = v2(&[&format!(r#""id":"a","ip":"1","az_id":"z","{key}":{n}"#)]);
                assert_eq!(refused(&text).0, "not-a-list", "{text}");
            }
        }
    }

    #[test]
    fn entries_are_checked_in_order_then_the_expanded_shards() {
        // A repeated id comes before a later entry's bad count; a bad count before any root.
        let text = v2(&[
            r#""id":"a","ip":"1","az_id":"x","root":"relative""#,
            r#""id":"a","ip":"1""#,
            r#""id":"b","ip":"1","shards":0"#,
        ]);
        assert_eq!(refused(&text).0, "duplicate-id");
        let text = v2(&[
            r#""id":"a","ip":"1","az_id":"x","root":"relative""#,
            r#""id":"b","ip":"1","shards":0"#,
        ]);
        assert_eq!(refused(&text).0, "bad-shards");
        let text = v2(&[
            r#""id":"a","ip":"1","az_id":"x","shards":0"#,
            r#""id":"","ip":"1""#,
        ]);
        assert_eq!(refused(&text).0, "bad-shards");
    }

    #[test]
    fn derived_roots_are_checked_like_roots() {
        for (entries, kind, mentions) in [
            // Another entry's root is one of this target's derived roots.
            (
                vec![
                    r#""id":"a","ip":"1","az_id":"z","root":"/","shards":2"#,
                    r#""id":"b","ip":"1","root":"/shards/z.1""#,
                ],
                "duplicate-root",
                vec!["a", "b", "/shards/z.1"],
            ),
            // Its own root is one of its derived roots.
            (
                vec![r#""id":"a","ip":"1","az_id":"z","root":"/shards/z.1","shards":2"#],
                "duplicate-root",
                vec!["a", "/shards/z.1"],
            ),
            // Two targets of one az_id.
            (
                vec![
                    r#""id":"a","ip":"1","az_id":"z","root":"/","shards":2"#,
                    r#""id":"b","ip":"1","az_id":"z","root":"/shards/z","shards":2"#,
                ],
                "duplicate-root",
                vec!["a", "b", "/shards/z.1"],
            ),
            (
                vec![r#""id":"a","ip":"1","az_id":"a//b","root":"/","shards":2"#],
                "bad-root",
                vec!["a", "/shards/a//b.1"],
            ),
            (
                vec![r#""id":"a","ip":"1","az_id":"x/../y","root":"/","shards":2"#],
                "bad-root",
                vec!["/shards/x/../y.1"],
            ),
            (
                vec![r#""id":"a","ip":"1","az_id":"z/","root":"/","shards":2"#],
                "reserved-root",
                vec!["a", "/shards/z/.1"],
            ),
            (
                vec![r#""id":"a","ip":"1","az_id":"..","root":"/","shards":2"#],
                "reserved-root",
                vec!["/shards/...1"],
            ),
            // A derived root inside another entry's root.
            (
                vec![
                    r#""id":"a","ip":"1","az_id":"z.1","root":"/","shards":1"#,
                    r#""id":"b","ip":"1","az_id":"y/q","root":"/shards/y","shards":2"#,
                ],
                "nested-root",
                vec!["b", "/shards/y/q.1", "/shards/y"],
            ),
        ] {
            let text = v2(&entries);
            let (got, message) = refused(&text);
            assert_eq!(got, kind, "{text}: {message}");
            for m in mentions {
                assert!(message.contains(m), "{text}: {message}");
            }
        }
        // Derived roots under / are shards, like /shards/<name>: not nested.
        let ok = v2(&[
            r#""id":"a","ip":"1","az_id":"x","root":"/","shards":3"#,
            r#""id":"b","ip":"1","az_id":"y","root":"/shards/y","shards":2"#,
        ]);
        assert_eq!(MountTargetList::from_json(&ok).unwrap().shard_count(), 5);
    }
}
