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
    /// Keep the function's state (timers, drains, missing targets) in its parameter (boxed:
    /// by far the largest step).
    SaveState(Box<State>),
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
    /// Remove the shards' directories that are empty, once only `/` is listed (the undo):
    /// those of `roots`, then every empty one under `/shards`.
    RemoveShardDirs {
        roots: Vec<String>,
    },
}

/// What a step is, without its data: the response's `actions`, the logs, and the one
/// statement of the order steps run in. A plan's steps are sorted by it (stably), so each
/// part of the plan adds its steps without knowing where the others go.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum StepKind {
    /// First: what the rest of the run decided is kept even if the run dies next.
    SaveState,
    /// Before anything names the directory (a new target, a list).
    CreateShardDir,
    /// At most one of these three a run (the decision's own step).
    CreateMountTarget,
    MoveFiles,
    DeleteMountTarget,
    Wait,
    /// Last: the list goes out once what it names is there, then the fleet picks it up.
    Publish,
    ForceDeployment,
    /// After all: the undo's last step, once the list without the shard runs everywhere.
    RemoveShardDirs,
}

impl StepKind {
    /// The name used in the response's `actions` and in logs (part of the contract).
    pub fn name(self) -> &'static str {
        match self {
            StepKind::CreateShardDir => "create_shard_directory",
            StepKind::CreateMountTarget => "create_mount_target",
            StepKind::Wait => "wait_mount_target",
            StepKind::SaveState => "save_state",
            StepKind::MoveFiles => "move_files",
            StepKind::DeleteMountTarget => "delete_mount_target",
            StepKind::Publish => "publish",
            StepKind::ForceDeployment => "force_deployment",
            StepKind::RemoveShardDirs => "remove_shard_directories",
        }
    }

    /// Steps that change what a run observes; after them it observes again before it publishes.
    pub fn changes_observed(self) -> bool {
        matches!(
            self,
            StepKind::CreateMountTarget
                | StepKind::Wait
                | StepKind::MoveFiles
                | StepKind::DeleteMountTarget
        )
    }

    /// Steps that change something outside the state: a plan with one saves the state first.
    /// A shard directory made, or a wait, changes no file's place: no list names it yet. A
    /// create saves its intent in the state itself, before it asks AWS.
    pub fn changes_outside_state(self) -> bool {
        match self {
            StepKind::SaveState
            | StepKind::CreateShardDir
            | StepKind::Wait
            | StepKind::CreateMountTarget => false,
            StepKind::MoveFiles
            | StepKind::DeleteMountTarget
            | StepKind::Publish
            | StepKind::ForceDeployment
            | StepKind::RemoveShardDirs => true,
        }
    }

    /// Publishing and redeploying: done once what is observed has settled.
    pub fn is_announcement(self) -> bool {
        matches!(self, StepKind::Publish | StepKind::ForceDeployment)
    }
}

impl serde::Serialize for StepKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl std::fmt::Display for StepKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl Step {
    pub fn kind(&self) -> StepKind {
        match self {
            Step::CreateShardDir { .. } => StepKind::CreateShardDir,
            Step::CreateMountTarget(_) => StepKind::CreateMountTarget,
            Step::Wait { .. } => StepKind::Wait,
            Step::SaveState(_) => StepKind::SaveState,
            Step::MoveFiles { .. } => StepKind::MoveFiles,
            Step::DeleteMountTarget { .. } => StepKind::DeleteMountTarget,
            Step::Publish { .. } => StepKind::Publish,
            Step::ForceDeployment { .. } => StepKind::ForceDeployment,
            Step::RemoveShardDirs { .. } => StepKind::RemoveShardDirs,
        }
    }
}
