//! The tasks ECS hides from DescribeServices: a replaced task is `DEACTIVATING`, then
//! `STOPPING`, while no deployment counts it, and a task started by RunTask is in no service.
//! Either may still route by the list it read when it started.

use crate::observed::{EcsTask, Observed};

/// A task that may still run an older list than the one published last: ECS created it no
/// later than that publish, and has not stopped it yet.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct OldTask {
    /// The task's id (the last part of its ARN).
    pub id: String,
    /// `service:<name>`, or RunTask's group.
    pub group: String,
    /// Where ECS has it: `RUNNING`, `DEACTIVATING`, `STOPPING`…
    pub last_status: String,
}

impl std::fmt::Display for OldTask {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "task {} ({}, {})", self.id, self.group, self.last_status)
    }
}

/// The tasks that hold moves and deletions, in ECS's order. None when nothing is published. A
/// task's creation time is the earliest moment its containers could have read the list, so
/// it is the one compared (its start comes later, once the containers run); a task with no
/// time at all counts as old: what ECS does not say never lets a file move.
pub(super) fn old_tasks(obs: &Observed) -> Vec<OldTask> {
    let Some(published) = obs.published_at() else {
        return Vec::new();
    };
    let old = |t: &&EcsTask| {
        t.last_status != "STOPPED" && t.created_at.or(t.started_at).is_none_or(|c| c <= published)
    };
    obs.tasks
        .iter()
        .filter(old)
        .map(|t| OldTask {
            id: t.id().to_owned(),
            group: t.group.clone(),
            last_status: t.last_status.clone(),
        })
        .collect()
}
