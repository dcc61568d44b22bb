//! The room: where a new mount target may go, and what bounds their number.

use super::policy::Policy;
use super::step::{NewTarget, SecurityGroups};
use super::warning::Warning;
use crate::observed::{Observed, Subnet};
use crate::shard::FirstRoot;
use efs_router::list::az_root;
use std::collections::BTreeSet;

/// A subnet (by id) or an AZ (by AZ id) left out of scale-out after CreateMountTarget refused it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Excluded {
    #[serde(rename = "subnet_or_az")]
    pub key: String,
    pub until: u64,
    pub reason: String,
}

/// Where a new mount target may go.
pub(super) struct Room<'a> {
    /// Subnets in the file system's VPC (and `SUBNET_IDS`), in AZs without a target, that the
    /// file system's type allows and AWS has not refused: lowest AZ id first.
    pub(super) eligible: Vec<&'a Subnet>,
    pub(super) usable_azs: usize,
    pub(super) excluded: Vec<Excluded>,
}

impl<'a> Room<'a> {
    pub(super) fn of(obs: &'a Observed, policy: &Policy, warnings: &mut Vec<Warning>) -> Room<'a> {
        let vpc = obs
            .vpc_id
            .clone()
            .or_else(|| obs.subnets.first().map(|s| s.vpc_id.clone()));
        let used_azs: BTreeSet<&str> = obs
            .mount_targets
            .iter()
            .filter(|t| t.occupies_az())
            .map(|t| t.az_id.as_str())
            .collect();
        let mut eligible: Vec<&Subnet> = obs
            .subnets
            .iter()
            .filter(|s| vpc.as_deref() == Some(s.vpc_id.as_str()))
            .filter(|s| {
                policy
                    .subnet_ids
                    .as_ref()
                    .is_none_or(|ids| ids.contains(&s.id))
            })
            .filter(|s| !used_azs.contains(s.az_id.as_str()))
            .filter(|s| obs.file_system.allows_az(&s.az, &s.az_id))
            .filter(|s| {
                obs.state
                    .exclusion(&s.id, &s.az_id, obs.now.secs())
                    .is_none()
            })
            .collect();
        eligible.sort_by(|a, b| (&a.az_id, &a.id).cmp(&(&b.az_id, &b.id)));
        for s in obs
            .subnets
            .iter()
            .filter(|s| vpc.as_deref() != Some(s.vpc_id.as_str()))
        {
            warnings.push(Warning::OtherVpc {
                subnet: s.id.clone(),
                vpc: s.vpc_id.clone(),
                file_system_vpc: vpc.clone().unwrap_or_else(|| "?".to_owned()),
            });
        }
        // Refused subnets still left out: said on every run, so the reason for a capacity
        // shortfall is in each response.
        let excluded: Vec<Excluded> = obs
            .state
            .excluded
            .iter()
            .filter(|(_, e)| e.until > obs.now.secs())
            .map(|(key, e)| Excluded {
                key: key.clone(),
                until: e.until,
                reason: e.reason.clone(),
            })
            .collect();
        for e in &excluded {
            warnings.push(Warning::Excluded {
                key: e.key.clone(),
                until: e.until,
                reason: e.reason.clone(),
            });
        }
        let free_azs: BTreeSet<&str> = eligible.iter().map(|s| s.az_id.as_str()).collect();
        // An AZ held by a target that cannot serve (`deleting`, `error`) holds no shard and
        // takes no new target until that one is gone: counting it would keep a place for a
        // target that is not coming, and the shards the files need would never be added.
        let serving_azs: BTreeSet<&str> = obs
            .mount_targets
            .iter()
            .filter(|t| t.occupies_az() && t.state.is_active())
            .map(|t| t.az_id.as_str())
            .collect();
        Room {
            usable_azs: serving_azs.len() + free_azs.len(),
            eligible,
            excluded,
        }
    }

    /// The new mount target this room allows, if any: in the first eligible subnet, with the
    /// security groups given, else those of a target that serves.
    pub(super) fn next_target(&self, policy: &Policy, shards: &[FirstRoot]) -> Option<NewTarget> {
        let subnet = self.eligible.first()?;
        let serving = shards.iter().find(|s| s.target.state.is_active());
        Some(NewTarget {
            subnet_id: subnet.id.clone(),
            az: subnet.az.clone(),
            az_id: subnet.az_id.clone(),
            root: az_root(&subnet.az_id),
            security_groups: match (&policy.security_group_ids, serving) {
                (Some(ids), _) => SecurityGroups::Given(ids.clone()),
                (None, Some(s)) => SecurityGroups::SameAs(s.target.id.clone()),
                (None, None) => SecurityGroups::VpcDefault,
            },
        })
    }
}
