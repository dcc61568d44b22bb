//! The fleet: which services run the list published last, and why files may not move yet.

use super::clients::{Behind, Clients};
use super::policy::Policy;
use super::tasks::{old_tasks, OldTask};
use super::warning::Warning;
use crate::observed::{Observed, When};

/// Why files may not move now, whatever moves them (a drain or a rebalance).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MovesWait {
    /// The list the state calls for is not the one published: it goes out first.
    ListPending,
    /// These services do not run the list published last yet.
    Fleet(Vec<String>),
    /// ECS shows these tasks, created before the list was published, not stopped yet.
    Tasks(Vec<OldTask>),
    /// These live clients report another list than the one published (or may).
    Clients(Vec<Behind>),
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
            MovesWait::Tasks(tasks) => {
                let tasks: Vec<String> = tasks.iter().map(ToString::to_string).collect();
                write!(
                    f,
                    "{} started before the list published last and ECS has not stopped them yet",
                    tasks.join(", ")
                )
            }
            MovesWait::Clients(clients) => {
                write!(f, "clients do not run the list published last yet: ")?;
                let names: Vec<String> = clients.iter().map(Behind::to_string).collect();
                f.write_str(&names.join(", "))
            }
            MovesWait::Refresh(left) => write!(
                f,
                "clients that refresh the list (CLIENT_REFRESH_SECONDS) may not have read the one \
                 published last: {left} s more"
            ),
        }
    }
}

/// How long the fleet may take to run a new list before the run warns that it has not.
pub(super) const FLEET_PATIENCE_SECS: u64 = 1800;

/// The fleet as a plan sees it.
pub(super) struct Fleet {
    /// Services that do not run the list published last yet: their PRIMARY deployment started
    /// before it, another deployment still has running tasks, or the rollout failed. Empty
    /// when nothing is published.
    pub(super) waiting: Vec<String>,
    /// They have not for more than [`FLEET_PATIENCE_SECS`].
    pub(super) stuck: bool,
    /// Services whose newest deployment failed to roll out.
    pub(super) rollouts_failed: Vec<String>,
    /// Tasks that may still run an older list (`tasks.rs`).
    pub(super) old_tasks: Vec<OldTask>,
    /// Seconds before clients that refresh the list themselves have read the one published last.
    refresh_left: u64,
    /// The clients as their reports show them.
    pub(super) clients: Clients,
}

impl Fleet {
    pub(super) fn of(obs: &Observed, policy: &Policy, warnings: &mut Vec<Warning>) -> Fleet {
        let published = obs.published_at();
        let waiting: Vec<String> = obs
            .deployments
            .iter()
            .filter(|_| published.is_some())
            .filter(|d| {
                let started_after = d.created_at.is_some_and(|t| Some(t) > published);
                !started_after || d.others_running > 0 || d.rollout_failed.is_some()
            })
            .map(|d| d.service.clone())
            .collect();
        let mut rollouts_failed = Vec::new();
        for d in &obs.deployments {
            if let Some(why) = &d.rollout_failed {
                rollouts_failed.push(d.service.clone());
                warnings.push(Warning::RolloutFailed {
                    service: d.service.clone(),
                    why: why.clone(),
                });
            }
        }
        let old_tasks = old_tasks(obs);
        // What has not converged: the services, then the groups of the old tasks.
        let mut behind = waiting.clone();
        for t in &old_tasks {
            if !behind.contains(&t.group) {
                behind.push(t.group.clone());
            }
        }
        let age = published.map(|t| obs.now.since(t).as_secs());
        let stuck = !behind.is_empty() && age.is_some_and(|a| a > FLEET_PATIENCE_SECS);
        if stuck {
            warnings.push(Warning::FleetNotConverged {
                services: behind,
                age: age.unwrap_or_default(),
            });
        }
        let clients = Clients::of(obs, policy, warnings);
        if clients.behind_secs > FLEET_PATIENCE_SECS {
            warnings.push(Warning::ClientsNotConverged {
                clients: clients.behind.iter().map(|b| b.client.clone()).collect(),
                age: clients.behind_secs,
            });
        }
        Fleet {
            waiting,
            // Clients behind have their own metric and alarm (ClientsBehindLongest).
            stuck,
            rollouts_failed,
            old_tasks,
            refresh_left: refresh_left(obs, policy),
            clients,
        }
    }

    /// Why no file may move now (a drain and a rebalance alike), checked in this order.
    pub(super) fn moves_wait(&self, list_pending: bool) -> Option<MovesWait> {
        if list_pending {
            Some(MovesWait::ListPending)
        } else if !self.waiting.is_empty() {
            Some(MovesWait::Fleet(self.waiting.clone()))
        } else if !self.old_tasks.is_empty() {
            Some(MovesWait::Tasks(self.old_tasks.clone()))
        } else if !self.clients.behind.is_empty() {
            Some(MovesWait::Clients(self.clients.behind.clone()))
        } else {
            Some(self.refresh_left)
                .filter(|left| *left > 0)
                .map(MovesWait::Refresh)
        }
    }
}

impl Fleet {
    /// Why the homes an announcement names may not switch yet: what holds moves, but a task
    /// that reports nothing. ECS's task rule already holds every task started before the
    /// announcement's publish, so one ECS shows that reports nothing started after it read
    /// that list, or runs on plain paths, to which homes never mattered (day one).
    pub(super) fn homes_wait(&self) -> Option<MovesWait> {
        match self.moves_wait(false) {
            Some(MovesWait::Clients(clients)) => {
                let behind: Vec<Behind> = clients
                    .into_iter()
                    .filter(|c| c.why != super::clients::Why::Unreported)
                    .collect();
                match behind.is_empty() {
                    true => Some(self.refresh_left)
                        .filter(|l| *l > 0)
                        .map(MovesWait::Refresh),
                    false => Some(MovesWait::Clients(behind)),
                }
            }
            other => other,
        }
    }
}

/// Seconds left before clients that re-read the list every `CLIENT_REFRESH_SECONDS` have all
/// read the one published last (0 when they have, or when no client refreshes by itself).
fn refresh_left(obs: &Observed, policy: &Policy) -> u64 {
    let read_by = obs.published_at().map_or(0, When::secs) + policy.client_refresh_secs;
    read_by.saturating_sub(obs.now.secs())
}
