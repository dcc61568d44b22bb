//! The steps a plan asks `apply` to carry out.

use crate::state::State;
use efs_router::list::MountTargetList;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SecurityGroups {
    Given(Vec<String>),
    /// Those of this existing mount target (looked up when the step runs).
    SameAs(String),
    /// None given and no target to copy: AWS applies the VPC's default group.
    VpcDefault,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewTarget {
    pub subnet_id: String,
    pub az: String,
    pub az_id: String,
    pub root: String,
    pub security_groups: SecurityGroups,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    CreateShardDir {
        root: String,
    },
    CreateMountTarget(NewTarget),
    Wait {
        mount_target_id: String,
    },
    /// Keep the function's state (timers, drains, missing targets) in its parameter.
    SaveState(State),
    /// Move the files of a draining shard to their homes.
    MoveFiles {
        root: String,
        list: MountTargetList,
    },
    DeleteMountTarget {
        mount_target_id: String,
    },
    Publish {
        list: MountTargetList,
    },
    ForceDeployment {
        service: String,
    },
}

impl Step {
    /// The name used in the response's `actions` and in logs.
    pub fn name(&self) -> &'static str {
        match self {
            Step::CreateShardDir { .. } => "create_shard_directory",
            Step::CreateMountTarget(_) => "create_mount_target",
            Step::Wait { .. } => "wait_mount_target",
            Step::SaveState(_) => "save_state",
            Step::MoveFiles { .. } => "move_files",
            Step::DeleteMountTarget { .. } => "delete_mount_target",
            Step::Publish { .. } => "publish",
            Step::ForceDeployment { .. } => "force_deployment",
        }
    }

    /// Steps that change what a run observes; after them it observes again before it publishes.
    pub fn changes_state(&self) -> bool {
        matches!(
            self,
            Step::CreateMountTarget(_)
                | Step::Wait { .. }
                | Step::MoveFiles { .. }
                | Step::DeleteMountTarget { .. }
        )
    }

    /// Publishing and redeploying: done once what is observed has settled.
    pub fn is_announcement(&self) -> bool {
        matches!(self, Step::Publish { .. } | Step::ForceDeployment { .. })
    }
}
