//! What a run observes, as plain data: the input of `plan`.

use crate::reports::Reports;
use crate::state::{Published, State};
pub use crate::when::When;
use efs_router::list::MountTargetList;
use std::collections::{BTreeMap, BTreeSet};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LifeCycle {
    Creating,
    Available,
    Updating,
    Deleting,
    Deleted,
    Error,
    Unknown(String),
}

impl LifeCycle {
    pub fn as_str(&self) -> &str {
        match self {
            LifeCycle::Creating => "creating",
            LifeCycle::Available => "available",
            LifeCycle::Updating => "updating",
            LifeCycle::Deleting => "deleting",
            LifeCycle::Deleted => "deleted",
            LifeCycle::Error => "error",
            LifeCycle::Unknown(s) => s,
        }
    }

    /// Serves, or soon will: counts toward the current number of mount targets.
    pub fn is_active(&self) -> bool {
        matches!(
            self,
            LifeCycle::Creating | LifeCycle::Available | LifeCycle::Updating
        )
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MountTarget {
    pub id: String,
    pub subnet_id: String,
    pub vpc_id: Option<String>,
    pub az: String,
    pub az_id: String,
    pub ip: Option<String>,
    pub state: LifeCycle,
}

impl MountTarget {
    /// Holds its AZ: AWS refuses a second mount target there until this one is gone.
    /// A target without an id is an API artefact, not a target (never waited on).
    pub fn occupies_az(&self) -> bool {
        !self.id.is_empty() && self.state != LifeCycle::Deleted
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subnet {
    pub id: String,
    pub vpc_id: String,
    pub az: String,
    pub az_id: String,
}

/// The published parameter, parsed.
#[derive(Debug, Clone, PartialEq)]
pub struct Parameter {
    pub list: MountTargetList,
    /// SSM's version of the parameter, as read (0 when not known).
    pub version: i64,
    pub last_modified: Option<When>,
    /// `efs_router::report::list_sha256` of the value as read: the identity clients report.
    pub sha256: String,
}

impl Parameter {
    /// The parameter holding `list` as the function writes it.
    pub fn new(list: MountTargetList, last_modified: Option<When>) -> Parameter {
        let sha256 = efs_router::report::list_sha256(&list.to_json());
        Parameter {
            list,
            version: 0,
            last_modified,
            sha256,
        }
    }

    /// The version the state records as published last, when this read is older: SSM's read
    /// lagged that write. A parameter written since (by hand, or made again) is newer whatever
    /// its version.
    pub fn lags(&self, published: Published) -> Option<i64> {
        let written_since = self.last_modified.is_some_and(|t| t.secs() > published.at);
        (self.version < published.version && !written_since).then_some(published.version)
    }
}

/// The file system, as DescribeFileSystems shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileSystem {
    pub id: String,
    pub state: LifeCycle,
    /// Set for a One Zone file system: the one AZ that may hold its (one) mount target.
    pub one_zone_az: Option<String>,
    pub one_zone_az_id: Option<String>,
}

impl FileSystem {
    pub fn is_one_zone(&self) -> bool {
        self.one_zone_az.is_some() || self.one_zone_az_id.is_some()
    }

    /// Whether a One Zone file system's AZ is this one (any AZ for a Regional one).
    pub fn allows_az(&self, az: &str, az_id: &str) -> bool {
        match (&self.one_zone_az_id, &self.one_zone_az) {
            (Some(id), _) => id == az_id,
            (None, Some(name)) => name == az,
            (None, None) => true,
        }
    }
}

/// The primary deployment of one ECS service.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Deployment {
    pub service: String,
    pub id: Option<String>,
    pub created_at: Option<When>,
    /// The primary deployment's rollout failed (`rolloutState` `FAILED`): its reason. The
    /// tasks still run the previous deployment, and so the previous list.
    pub rollout_failed: Option<String>,
    /// Tasks still running in the service's other (older) deployments.
    pub others_running: i64,
}

/// A task ECS shows in the cluster (ListTasks, DescribeTasks) and has not stopped yet, whatever
/// a deployment counts: a service's task being replaced, or one started by RunTask.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EcsTask {
    pub arn: String,
    /// `service:<name>` for a service's task; RunTask's group otherwise (`family:<family>`
    /// unless its caller named one).
    pub group: String,
    /// `RUNNING`, `DEACTIVATING`, `STOPPING`, `DEPROVISIONING`…, never `STOPPED`.
    pub last_status: String,
    pub desired_status: String,
    /// When ECS created it: before its containers start and read the list.
    pub created_at: Option<When>,
    pub started_at: Option<When>,
    /// Where it runs (`availabilityZone`, the AZ name): a task mounts the file system through
    /// the mount target of its own AZ, whatever the list says. None when ECS does not say (a
    /// task it could not describe, one on an external instance).
    pub az: Option<String>,
}

impl EcsTask {
    /// The task's id: the last part of its ARN.
    pub fn id(&self) -> &str {
        self.arn.rsplit('/').next().unwrap_or(&self.arn)
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Observed {
    pub file_system: FileSystem,
    pub mount_targets: Vec<MountTarget>,
    /// The VPC of the file system's mount targets, if it has any.
    pub vpc_id: Option<String>,
    /// Candidate subnets: `SUBNET_IDS`, or every subnet of the VPC.
    pub subnets: Vec<Subnet>,
    /// `None` when the parameter does not exist.
    pub parameter: Option<Parameter>,
    pub deployments: Vec<Deployment>,
    /// Tasks of the services (and of `ECS_CLIENT_FAMILIES`) that ECS has not stopped yet.
    pub tasks: Vec<EcsTask>,
    /// Why ECS's tasks could not be listed (throttled, refused, too many): then `tasks` is
    /// empty and every move and deletion waits, while growth goes on.
    pub tasks_unknown: Option<String>,
    /// The clients' reports (`.efs-router-clients`), as read.
    pub reports: Reports,
    /// Files per shard root; a root whose watch directory does not exist is absent.
    pub files: BTreeMap<String, u64>,
    /// Shard roots whose directory could not be read, and why: skipped, not failed.
    pub unreadable: BTreeMap<String, String>,
    /// For each draining shard: whether its whole tree still holds a file.
    pub tree_has_files: BTreeMap<String, bool>,
    /// AZ ids of `PROTECTED_SUBNET_IDS`: their mount targets are never removed.
    pub protected_azs: BTreeSet<String>,
    pub state: State,
    /// The state parameter exists (else the state is new or carried over and must be saved).
    pub state_stored: bool,
    /// Observed things an operator should know (the old state file, say).
    pub warnings: Vec<Noticed>,
    /// When it was observed.
    pub now: When,
}

/// What a run's reading found that an operator should know: data here, a warning of the same
/// name in the plan's answer (`Warning`, which words it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Noticed {
    /// The state file of earlier versions was read once into the state parameter.
    OldStateCarriedOver {
        file: String,
        parameter: String,
        /// AZs it names as the function's own, which are not carried over.
        created_azs: Vec<String>,
    },
    /// The state file of earlier versions could not be read safely.
    OldStateFile { problem: String },
    /// The reports' directory was missing, or not open to every router: made, or its mode set.
    ReportsDirRepaired { repair: crate::reports::Repair },
    /// The walk of a draining shard's tree met its time before it could tell whether the tree
    /// is empty.
    DrainWalkCutShort { root: String },
}

impl Observed {
    /// When the list was last published, if it is: the one reading of that time.
    pub fn published_at(&self) -> Option<When> {
        self.parameter.as_ref().and_then(|p| p.last_modified)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(version: i64, at: u64) -> Parameter {
        let list =
            MountTargetList::from_json(r#"{"mount_targets":[{"id":"fsmt-1","ip":"10.0.1.4"}]}"#);
        Parameter {
            version,
            ..Parameter::new(list.expect("a list"), Some(When::from_secs(at)))
        }
    }

    #[test]
    fn a_read_older_than_the_recorded_publish_lags_unless_written_since() {
        let published = Published {
            version: 5,
            at: 1_000,
        };
        // Version 4, written before the publish: SSM's read lagged it.
        assert_eq!(read(4, 990).lags(published), Some(5));
        assert_eq!(read(5, 1_000).lags(published), None);
        assert_eq!(read(6, 1_100).lags(published), None);
        // Made again by hand after the publish: its versions start over, and it is newer.
        assert_eq!(read(1, 1_200).lags(published), None);
    }
}
