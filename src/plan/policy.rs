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
}

/// What the fleet rule asks of the clients' reports (`CLIENT_REPORTS`). Every live report
/// holds the moves while it names another list, either way.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ClientReports {
    /// ECS's deployments and tasks, and the reports there are: a task without one (a router
    /// older than reports) is not waited for.
    #[default]
    Ecs,
    /// Also: every running task of the named services has a live report naming its ARN.
    Require,
}
