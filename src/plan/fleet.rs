//! The fleet: which services run the list published last, and why files may not move yet.

use super::policy::Policy;
use crate::observed::Observed;

/// Why files may not move now, whatever moves them (a drain or a rebalance).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MovesWait {
    /// The list the state calls for is not the one published: it goes out first.
    ListPending,
    /// These services do not run the list published last yet.
    Fleet(Vec<String>),
    /// Clients that refresh the list themselves may not have read it: seconds left.
    Refresh(u64),
}

impl std::fmt::Display for MovesWait {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MovesWait::ListPending => write!(
                f,
                "the published list is about to change (a reconcile run publishes it first)"
            ),
            MovesWait::Fleet(services) => write!(
                f,
                "services {} do not run the list published last yet",
                services.join(", ")
            ),
            MovesWait::Refresh(left) => write!(
                f,
                "clients that refresh the list (CLIENT_REFRESH_SECONDS) may not have read the one \
                 published last: {left} s more"
            ),
        }
    }
}

/// How long the fleet may take to run a new list before the run warns that it has not.
pub const FLEET_PATIENCE_SECS: u64 = 1800;

/// Services that do not run the list published last yet: their PRIMARY deployment started
/// before it, another deployment still has running tasks, or the rollout failed. Empty when
/// nothing is published.
pub(super) fn fleet_waiting(obs: &Observed) -> Vec<String> {
    let Some(published_at) = obs.parameter.as_ref().and_then(|p| p.last_modified) else {
        return Vec::new();
    };
    obs.deployments
        .iter()
        .filter(|d| {
            let started_after = d.created_at.is_some_and(|t| t > published_at);
            !started_after || d.others_running > 0 || d.rollout_failed.is_some()
        })
        .map(|d| d.service.clone())
        .collect()
}

pub(super) fn rollouts_failed(obs: &Observed, warnings: &mut Vec<String>) -> Vec<String> {
    let mut failed = Vec::new();
    for d in &obs.deployments {
        if let Some(why) = &d.rollout_failed {
            failed.push(d.service.clone());
            warnings.push(format!(
                "the rollout of service {}'s newest deployment failed ({why}); its tasks still \
                 run the previous deployment and the list it had",
                d.service
            ));
        }
    }
    failed
}

/// Seconds left before clients that re-read the list every `CLIENT_REFRESH_SECONDS` have all
/// read the one published last (0 when they have, or when no client refreshes by itself).
pub(super) fn refresh_left(obs: &Observed, policy: &Policy) -> u64 {
    (published_at(obs).unwrap_or(0) + policy.client_refresh_secs).saturating_sub(obs.now)
}

/// When the list was last published (Unix seconds), if it exists.
pub(super) fn published_at(obs: &Observed) -> Option<u64> {
    obs.parameter
        .as_ref()
        .and_then(|p| p.last_modified)
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| d.as_secs())
}
