//! What every run does whatever it decided.

use super::list::serving;
use super::policy::Policy;
use super::step::Step;
use crate::observed::{LifeCycle, Observed};
use crate::shard::FirstRoot;
use efs_router::list::MountTargetList;

/// What every run does whatever it decided: make missing shard directories, wait for
/// targets still creating, publish a changed list, redeploy services older than the list.
pub(super) fn upkeep(
    obs: &Observed,
    policy: &Policy,
    shards: &[FirstRoot],
    published: Option<&MountTargetList>,
    (list, next): (&MountTargetList, &MountTargetList),
    steps: &mut Vec<Step>,
) {
    let mut roots: Vec<String> = shards
        .iter()
        .filter(|s| s.target.state.is_active())
        .map(|s| s.root.clone())
        .collect();
    // New shards of a serving target get their directory before the list names them, an
    // announced one's too (the list names it, draining, before homes switch to it).
    for t in next.shards() {
        if serving(shards, &t.id).is_some() && !t.draining && !roots.contains(&t.root) {
            roots.push(t.root);
        }
    }
    for root in roots {
        if !obs.files.contains_key(&root) && !obs.unreadable.contains_key(&root) {
            steps.push(Step::CreateShardDir { root });
        }
    }
    for s in shards
        .iter()
        .filter(|s| s.target.state == LifeCycle::Creating)
    {
        steps.push(Step::Wait {
            mount_target_id: s.target.id.clone(),
        });
    }
    let publish = published != Some(list);
    if publish {
        steps.push(Step::Publish { list: list.clone() });
    }
    let param_time = obs.published_at();
    for service in &policy.services {
        let deployed = obs.deployments.iter().find(|d| &d.service == service);
        let stale = match (param_time, deployed.and_then(|d| d.created_at)) {
            (Some(published_at), Some(deployed_at)) => published_at > deployed_at,
            (Some(_), None) => true,
            (None, _) => false,
        };
        if publish || stale {
            steps.push(Step::ForceDeployment {
                service: service.clone(),
            });
        }
    }
}
