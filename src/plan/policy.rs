//! The settings that shape a plan.

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

/// What the fleet rule asks of the clients' reports (`CLIENT_REPORTS`). Every live report
/// holds the moves while it names another list, either way.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ClientReports {
    /// Every task ECS wants running in the named services and `ECS_CLIENT_FAMILIES` has a live
    /// report naming its ARN before a file moves, a target goes or the list needs version 2:
    /// a task on plain paths (no router) would lose sight of a moved file.
    #[default]
    Require,
    /// ECS's deployments and tasks, and the reports there are: a task without one is not
    /// waited for. Safe only once every reader and writer routes through a router.
    EcsMayHideFiles,
}

impl ClientReports {
    pub const REQUIRE: &'static str = "require";
    pub const ECS_MAY_HIDE_FILES: &'static str = "ecs-may-hide-files";
}

/// When a clean rebalance pass closes the placements (`CLOSE_PLACEMENTS`). Once they are
/// closed a miss looks at home alone, so a file a writer puts away from home is hidden until a
/// rebalance moves it: only a writer the fleet rule sees is sure to put it where a miss looks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ClosePlacements {
    /// Only while every writer ECS shows is seen: `CLIENT_REPORTS=require`, every task
    /// reporting and ECS's tasks listed.
    #[default]
    WhenEveryWriterReports,
    /// Whatever the writers: a task without a report (under `ecs-may-hide-files`, or not
    /// reporting) may write a file that no miss finds until the rebalance moves it home.
    UnseenWritersMayHideFiles,
}

impl ClosePlacements {
    pub const WHEN_EVERY_WRITER_REPORTS: &'static str = "when-every-writer-reports";
    pub const UNSEEN_WRITERS_MAY_HIDE_FILES: &'static str = "unseen-writers-may-hide-files";
}
