//! A drain under way that waits: nothing moves or goes until the fleet, its tasks and its
//! clients run the list published last (and that list is the one that says so).

use crate::plan::clients::Behind;
use crate::plan::effect::{Effect, EffectInputs};
use crate::plan::fleet::MovesWait;
use crate::plan::reason::Words;
use crate::plan::tasks::OldTask;

#[derive(Debug, Clone, PartialEq)]
pub enum Wait {
    /// A target is draining (or unlisted), but not every service runs the list published last
    /// yet: nothing moves or goes until they do.
    ForFleet { id: String, services: Vec<String> },
    /// A target is draining (or unlisted), and every service's deployment runs the list
    /// published last, but ECS still shows tasks created before it that it has not stopped
    /// (replaced ones, `DEACTIVATING` or `STOPPING`; RunTask's): nothing moves or goes yet.
    ForTasks { id: String, tasks: Vec<OldTask> },
    /// A target is draining (or unlisted), but live clients report another list than the one
    /// published (or may): nothing moves or goes until they run it.
    ForClients { id: String, clients: Vec<Behind> },
    /// A target is draining (or unlisted), but the list that says so is not the one published
    /// (a run died, or its publish failed, after the state was saved): the list goes out
    /// first, and nothing moves or goes until the services run it.
    PublishFirst { id: String },
    /// A target is draining, but clients that refresh the list themselves may not have read
    /// the list that marks it draining yet: nothing moves or goes for `left` seconds.
    ForRefresh { id: String, left: u64 },
}

impl Wait {
    /// The drain of `id` waits for what holds the moves.
    pub(super) fn of(id: String, wait: &MovesWait) -> Wait {
        match wait {
            // The clients run the published list, not the one the state implies.
            MovesWait::ListPending => Wait::PublishFirst { id },
            MovesWait::Fleet(services) => Wait::ForFleet {
                id,
                services: services.clone(),
            },
            MovesWait::Tasks(tasks) => Wait::ForTasks {
                id,
                tasks: tasks.clone(),
            },
            MovesWait::Clients(clients) => Wait::ForClients {
                id,
                clients: clients.clone(),
            },
            MovesWait::Refresh(left) => Wait::ForRefresh { id, left: *left },
        }
    }

    pub(super) fn name(&self) -> &'static str {
        match self {
            Wait::ForFleet { .. } => "wait_for_fleet",
            Wait::ForTasks { .. } => "wait_for_tasks",
            Wait::ForClients { .. } => "wait_for_clients",
            Wait::PublishFirst { .. } => "publish_first",
            Wait::ForRefresh { .. } => "wait_for_refresh",
        }
    }

    /// Nothing changes until the wait is over; the response names what it waits for.
    pub(in crate::plan) fn effect(&self, _: &EffectInputs, out: &mut Effect) {
        match self {
            Wait::ForFleet { services, .. } => out.waits.services = services.clone(),
            Wait::ForTasks { tasks, .. } => out.waits.tasks = tasks.clone(),
            Wait::ForClients { clients, .. } => out.waits.clients = clients.clone(),
            Wait::PublishFirst { .. } | Wait::ForRefresh { .. } => {}
        }
    }

    pub(in crate::plan) fn words(&self, at: &Words) -> String {
        let need = at.need;
        match self {
            Wait::ForFleet { id, services } => {
                let waited = services.join(", ");
                format!(
                    "{need}; {}",
                    nothing_moves(id, "every service runs", &waited)
                )
            }
            Wait::ForTasks { id, tasks } => {
                let waited = joined(tasks);
                let until = "ECS has stopped every task created before";
                format!("{need}; {}", nothing_moves(id, until, &waited))
            }
            Wait::ForClients { id, clients } => {
                let waited = joined(clients);
                format!(
                    "{need}; {}",
                    nothing_moves(id, "every live client runs", &waited)
                )
            }
            Wait::PublishFirst { id } => format!(
                "{need}; draining {id}: the list that says so goes out first (the one published \
                 is not it); nothing moves or goes until every service runs it"
            ),
            Wait::ForRefresh { id, left } => format!(
                "{need}; draining {id}: its files move (and it goes) once clients that refresh \
                 the list have read it ({left} s more, CLIENT_REFRESH_SECONDS)"
            ),
        }
    }
}

/// A drain that waits: nothing moves or goes `until` the list published last (for `waited`).
fn nothing_moves(id: &str, until: &str, waited: &str) -> String {
    format!(
        "draining {id}: nothing moves or goes until {until} the list published last (waiting \
         for {waited})"
    )
}

fn joined<T: ToString>(items: &[T]) -> String {
    let names: Vec<String> = items.iter().map(ToString::to_string).collect();
    names.join(", ")
}

/// One of each, for [`super::Decision::NAMES`]' test: the match fails to compile until a new one is
/// here.
#[cfg(test)]
pub(super) fn examples() -> Vec<super::Decision> {
    let id = || "fsmt-1".to_owned();
    let all = [
        Wait::ForFleet {
            id: id(),
            services: vec![],
        },
        Wait::ForTasks {
            id: id(),
            tasks: vec![],
        },
        Wait::ForClients {
            id: id(),
            clients: vec![],
        },
        Wait::PublishFirst { id: id() },
        Wait::ForRefresh { id: id(), left: 1 },
    ];
    all.iter().for_each(|w| match w {
        Wait::ForFleet { .. }
        | Wait::ForTasks { .. }
        | Wait::ForClients { .. }
        | Wait::PublishFirst { .. }
        | Wait::ForRefresh { .. } => {}
    });
    all.into_iter().map(super::Decision::Wait).collect()
}
