//! The settings that shape a plan.

pub use crate::config::{ClientReports, ClosePlacements};

/// The settings that shape a plan.
#[derive(Debug, Clone, PartialEq)]
pub struct Policy {
    pub file_threshold: u64,
    pub max_mount_targets: Option<usize>,
    /// `MAX_SHARDS`: the most shards (directories) the list may have.
    pub max_shards: usize,
    /// The migrate event: a `modulo-sha256` list is published again under `rendezvous`.
    pub migrate: bool,
    pub subnet_ids: Option<Vec<String>>,
    pub security_group_ids: Option<Vec<String>>,
    pub services: Vec<String>,
    pub scale_in_ratio: f64,
    pub scale_in_cooldown_secs: u64,
    /// False once a run has created a target: one new target a run.
    pub allow_create: bool,
    /// How often clients that refresh the list themselves re-read it (`CLIENT_REFRESH_SECONDS`):
    /// no file moves until that long after the list was last published.
    pub client_refresh_secs: u64,
    /// `CLIENT_REPORTS`: what a running task of a named service without a report means.
    pub client_reports: ClientReports,
    /// `CLOSE_PLACEMENTS`: whether a clean pass closes the placements while a writer may be
    /// one the function cannot see.
    pub close_placements: ClosePlacements,
    /// The undo event: one shard, `/`, whatever the files need; every other shard drains
    /// home, a target this function created then goes, any other target is kept, idle.
    pub undo: bool,
    /// The tree, relative to each shard's root, that the rebalance walks (`WATCH_DIR`): what a
    /// version 3 list's placements speak for (its `scope`). `None`: the whole tree.
    pub scope: Option<String>,
}
