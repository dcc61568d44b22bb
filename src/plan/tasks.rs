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

/// A task that runs in a drained target's AZ (or may: ECS does not say where it runs), and so
/// mounts the file system through that target: deleting the target cuts it off.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskInAz {
    /// The task's id (the last part of its ARN).
    pub id: String,
    /// `service:<name>`, or RunTask's group.
    pub group: String,
    /// Its `availabilityZone`; none when ECS does not say.
    pub az: Option<String>,
}

impl std::fmt::Display for TaskInAz {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let az = self.az.as_deref().unwrap_or("an AZ ECS does not name");
        write!(f, "task {} ({}) in {az}", self.id, self.group)
    }
}

/// Why a drained target may not be deleted now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InUse {
    /// These tasks, not `STOPPED`, run in its AZ (or in an AZ ECS does not name).
    Tasks(Vec<TaskInAz>),
    /// ECS's tasks could not be listed: any may run there.
    TasksUnknown(String),
}

impl std::fmt::Display for InUse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            InUse::Tasks(tasks) => {
                let names: Vec<String> = tasks.iter().map(ToString::to_string).collect();
                f.write_str(&names.join(", "))
            }
            InUse::TasksUnknown(why) => write!(f, "ECS's tasks could not be listed ({why})"),
        }
    }
}

/// What mounts through the target in `az` (an AZ name; empty when unknown, then any task
/// counts): the tasks of the named services and `ECS_CLIENT_FAMILIES` ECS has not stopped
/// that run there, or ECS's tasks unknown. None when nothing does. A task whose AZ ECS does
/// not name counts: what ECS does not say never cuts a mount.
pub(super) fn in_use(obs: &Observed, az: &str) -> Option<InUse> {
    if let Some(why) = &obs.tasks_unknown {
        return Some(InUse::TasksUnknown(why.clone()));
    }
    let there = |t: &&EcsTask| {
        t.last_status != "STOPPED" && (az.is_empty() || t.az.as_deref().is_none_or(|a| a == az))
    };
    let tasks: Vec<TaskInAz> = obs
        .tasks
        .iter()
        .filter(there)
        .map(|t| TaskInAz {
            id: t.id().to_owned(),
            group: t.group.clone(),
            az: t.az.clone(),
        })
        .collect();
    (!tasks.is_empty()).then_some(InUse::Tasks(tasks))
}
