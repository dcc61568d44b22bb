//! The room: where a new mount target may go, and what bounds their number.

use super::decision::Bound;
use super::policy::Policy;
use crate::observed::{Observed, Subnet};
use efs_router::list::MAX_LIST_SHARDS;
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
    pub(super) az_capacity: usize,
    pub(super) excluded: Vec<Excluded>,
}

impl<'a> Room<'a> {
    pub(super) fn of(obs: &'a Observed, policy: &Policy, warnings: &mut Vec<String>) -> Room<'a> {
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
            .filter(|s| obs.state.exclusion(&s.id, &s.az_id, obs.now).is_none())
            .collect();
        eligible.sort_by(|a, b| (&a.az_id, &a.id).cmp(&(&b.az_id, &b.id)));
        for s in obs
            .subnets
            .iter()
            .filter(|s| vpc.as_deref() != Some(s.vpc_id.as_str()))
        {
            warnings.push(format!(
                "subnet {} is in {}, not the file system's VPC {}; ignored",
                s.id,
                s.vpc_id,
                vpc.as_deref().unwrap_or("?")
            ));
        }
        // Refused subnets still left out: said on every run, so the reason for a capacity
        // shortfall is in each response.
        let excluded: Vec<Excluded> = obs
            .state
            .excluded
            .iter()
            .filter(|(_, e)| e.until > obs.now)
            .map(|(key, e)| Excluded {
                key: key.clone(),
                until: e.until,
                reason: e.reason.clone(),
            })
            .collect();
        for e in &excluded {
            warnings.push(format!(
                "{} is left out of scale-out until {} (Unix time): {}",
                e.key, e.until, e.reason
            ));
        }
        let free_azs: BTreeSet<&str> = eligible.iter().map(|s| s.az_id.as_str()).collect();
        Room {
            az_capacity: used_azs.len() + free_azs.len(),
            eligible,
            excluded,
        }
    }

    /// What bounds the number of shards: `MAX_SHARDS`; for a modulo list, whatever bounds
    /// the number of mount targets.
    pub(super) fn bound(&self, obs: &Observed, policy: &Policy, modulo: bool) -> Bound {
        if !modulo {
            return Bound::MaxShards(policy.max_shards.min(MAX_LIST_SHARDS));
        }
        let fs = &obs.file_system;
        if fs.is_one_zone() {
            return Bound::OneZone {
                az: fs
                    .one_zone_az
                    .clone()
                    .or_else(|| fs.one_zone_az_id.clone())
                    .unwrap_or_default(),
            };
        }
        match policy.max_mount_targets {
            Some(m) if m < self.az_capacity => Bound::MaxMountTargets(m),
            _ => Bound::Azs {
                usable: self.az_capacity,
                excluded: self.excluded.len(),
            },
        }
    }
}
