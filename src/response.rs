//! The invocation's answer: a superset of the original `{statusCode, new_mount_target, total}`.

use crate::moves::Moves;
use crate::plan::{Behind, Excluded, OldTask, StepKind};
use efs_router::list::Target;
use serde::Serialize;
use std::collections::BTreeMap;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NewMountTarget {
    pub id: String,
    pub ip: Option<String>,
    pub az: String,
    pub subnet_id: String,
    pub root: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Response {
    #[serde(rename = "statusCode")]
    pub status_code: u16,
    /// `reconcile`, `plan` (which changed nothing; `actions` are what it would do),
    /// `rebalance` or `migrate`.
    pub action: &'static str,
    pub file_count: u64,
    /// Files in each shard directory, by root.
    pub files_per_shard: BTreeMap<String, u64>,
    /// Files in all the shards each mount target serves, by mount target id.
    pub files_per_target: BTreeMap<String, u64>,
    pub threshold: u64,
    /// Mount targets wanted.
    pub desired: usize,
    /// Shards that take new files after this run.
    pub shards: usize,
    /// Shards wanted (within `MAX_SHARDS`).
    pub desired_shards: usize,
    /// More shards are needed than `MAX_SHARDS` (or, for a modulo list, the AZs) allow.
    pub at_capacity: bool,
    pub new_mount_target: Option<NewMountTarget>,
    /// Mount targets creating, available or updating after this run (the original's name;
    /// the plan's `current`, the metric `MountTargets`).
    pub total: usize,
    /// The published list after this run (for a plan: the list it would publish).
    pub mount_targets: Vec<Target>,
    /// Targets still `creating` when the run ended; the next run picks them up.
    pub waiting_for: Vec<String>,
    /// The ECS tasks of `waiting_for` (by id): created before the list was published last,
    /// not stopped yet.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub waiting_for_tasks: Vec<OldTask>,
    /// The live clients that hold the moves (id, list version, last seen), as `waiting_for`
    /// names them (`client <id>`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub clients_behind: Vec<Behind>,
    pub actions: Vec<StepKind>,
    /// What the run decided, by name ([`crate::plan::Decision::name`]); `reason` says it in words.
    pub decision: &'static str,
    pub reason: String,
    /// Present when the homes of the list change ([`crate::plan::Homes::name`]): `announced`
    /// (published with homes unchanged and the next ones announced), `waiting` (for the fleet
    /// to run that), `switched`, `switched_early` (after the fleet's patience).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub homes: Option<&'static str>,
    /// Things an operator should know that changed nothing, in words.
    pub warnings: Vec<String>,
    /// The kind of each of `warnings`, in the same order ([`crate::plan::Warning::kind`]).
    pub warning_kinds: Vec<&'static str>,
    /// Subnets and AZs left out of scale-out after CreateMountTarget refused them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub excluded_subnets: Vec<Excluded>,
    /// Files moved home by a drain or a rebalance.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub moves: Option<Moves>,
    /// Mount targets deleted after their shard was drained.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub deleted: Vec<String>,
}
