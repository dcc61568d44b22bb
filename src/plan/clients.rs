//! The clients as their reports show them (docs/data-plane.md, "The fleet rule"): which live ones
//! do not route by the published list yet, and whether all of them can read a version 2 list.
//! A report can only hold something back: one that cannot be read, or was not read, counts
//! as a client on an unknown list that reads version 1 only.

use super::policy::{ClientReports, Policy};
use super::warning::Warning;
use crate::observed::Observed;
use serde::Serialize;
use std::collections::BTreeMap;

/// Why a client holds the moves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Why {
    /// Its live report names another list than the published one.
    OldList,
    /// A live file named like a report that is none (`fault` says why).
    Unreadable,
    /// A task ECS wants running, of a named service or `ECS_CLIENT_FAMILIES`, with no live
    /// report naming it (`CLIENT_REPORTS=require`).
    Unreported,
    /// Entries of the reports' directory that were not read (past the bound or the time, or
    /// the directory cannot be read).
    Unread,
    /// ECS's tasks could not be listed: any of them may run an older list, or no router.
    TasksUnknown,
}

/// A client that holds the moves, as `waiting_for` names it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Behind {
    /// The client id; the file's name for an unreadable one, the task's ARN for an unreported
    /// one, the number of entries for unread ones.
    pub client: String,
    pub why: Why,
    /// The version of the list it routes by, when its report says.
    pub list_version: Option<u32>,
    /// The parameter version it read that list at, when its report says.
    pub parameter_version: Option<i64>,
    /// Unix seconds: when it was last seen (its report's time).
    pub last_seen: Option<u64>,
    /// For an unreadable report: the kind of fault.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fault: Option<&'static str>,
}

impl std::fmt::Display for Behind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let seen = |f: &mut std::fmt::Formatter<'_>| match self.last_seen {
            Some(t) => write!(f, ", last seen at {t}"),
            None => Ok(()),
        };
        match self.why {
            Why::OldList => {
                let version = self.list_version.unwrap_or(1);
                write!(f, "client {} (list version {version}", self.client)?;
                if let Some(p) = self.parameter_version {
                    write!(f, ", parameter version {p}")?;
                }
                seen(f)?;
                write!(f, ")")
            }
            Why::Unreadable => {
                let fault = self.fault.unwrap_or("unreadable");
                write!(f, "report {} ({fault}, list unknown", self.client)?;
                seen(f)?;
                write!(f, ")")
            }
            Why::Unreported => write!(f, "task {} (no report)", self.client),
            Why::Unread => write!(f, "{} report entries not read", self.client),
            Why::TasksUnknown => write!(f, "{} (could not be listed)", self.client),
        }
    }
}

/// The live clients, as the plan needs them.
#[derive(Debug, Clone, Default)]
pub(super) struct Clients {
    /// Those that hold the moves, in file order.
    pub(super) behind: Vec<Behind>,
    /// Every live client reports that it reads version 2, and at least one reports (routers
    /// older than reports write none, and may not read it).
    pub(super) read_v2: bool,
    /// The same for version 3 (a list that says which placements are open).
    pub(super) read_v3: bool,
    /// Live clients by the version of the list they route by (`unknown` for a report that
    /// cannot be read).
    pub(super) by_version: BTreeMap<String, u64>,
    /// Live clients that cannot read version 2 (or may not), by id or file.
    pub(super) v1_only: Vec<String>,
    /// Seconds since the list was published, while some client is behind (else 0).
    pub(super) behind_secs: u64,
}

impl Clients {
    pub(super) fn of(obs: &Observed, policy: &Policy, warnings: &mut Vec<Warning>) -> Clients {
        let now = obs.now.secs();
        let current = obs.parameter.as_ref().map(|p| p.sha256.as_str());
        let mut out = Clients::default();
        let mut reported_tasks = Vec::new();
        let mut live = 0usize;
        let mut not_v3 = false;
        for f in obs.reports.files.iter().filter(|f| f.is_live(now)) {
            live += 1;
            let last_seen = Some(f.last_seen());
            match &f.read {
                Ok(r) => {
                    *out.by_version
                        .entry(r.list.version.to_string())
                        .or_default() += 1;
                    if !r.can_read(2) {
                        out.v1_only.push(r.client.clone());
                    }
                    not_v3 |= !r.can_read(3);
                    reported_tasks.extend(r.task.clone());
                    if current.is_some_and(|sha| sha != r.list.sha256) {
                        out.behind.push(Behind {
                            client: r.client.clone(),
                            why: Why::OldList,
                            list_version: Some(r.list.version),
                            parameter_version: r.list.parameter_version,
                            last_seen,
                            fault: None,
                        });
                    }
                }
                Err(kind) => {
                    *out.by_version.entry("unknown".into()).or_default() += 1;
                    out.v1_only.push(f.file.clone());
                    warnings.push(Warning::ReportUnreadable {
                        file: f.file.clone(),
                        kind,
                    });
                    out.behind.push(Behind {
                        client: f.file.clone(),
                        why: Why::Unreadable,
                        list_version: None,
                        parameter_version: None,
                        last_seen,
                        fault: Some(kind),
                    });
                }
            }
        }
        out.unread(obs, warnings);
        if let Some(why) = &obs.tasks_unknown {
            // Whatever CLIENT_REPORTS says: the task rule needs the tasks too.
            warnings.push(Warning::TasksUnknown { why: why.clone() });
            out.behind.push(Behind {
                client: "ECS tasks".into(),
                why: Why::TasksUnknown,
                list_version: None,
                parameter_version: None,
                last_seen: None,
                fault: None,
            });
        }
        if policy.client_reports == ClientReports::Require {
            out.require_reports(obs, &reported_tasks, warnings);
        }
        let unknown =
            |b: &Behind| matches!(b.why, Why::Unread | Why::Unreported | Why::TasksUnknown);
        out.read_v2 = live > 0 && out.v1_only.is_empty() && !out.behind.iter().any(unknown);
        out.read_v3 = out.read_v2 && !not_v3;
        if !out.behind.is_empty() {
            out.behind_secs = obs.published_at().map_or(0, |t| obs.now.since(t).as_secs());
        }
        out
    }

    /// Every task ECS wants running, of the named services and `ECS_CLIENT_FAMILIES` (the
    /// tasks observed), must have a live report naming its ARN: one that has none may run an
    /// app on plain paths, which a moved file would be hidden from. A group (service or
    /// family) none of whose tasks reports is said once: on the first day, that is the app
    /// that runs no router yet. A stopping task is held by the task rule instead.
    fn require_reports(
        &mut self,
        obs: &Observed,
        reported: &[String],
        warnings: &mut Vec<Warning>,
    ) {
        let mut groups: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
        for t in obs.tasks.iter().filter(|t| t.desired_status == "RUNNING") {
            let (running, silent) = groups.entry(t.group.as_str()).or_default();
            *running += 1;
            if reported.contains(&t.arn) {
                continue;
            }
            *silent += 1;
            self.behind.push(Behind {
                client: t.arn.clone(),
                why: Why::Unreported,
                list_version: None,
                parameter_version: None,
                last_seen: None,
                fault: None,
            });
        }
        for (group, (tasks, silent)) in groups {
            if silent == tasks {
                warnings.push(Warning::ServiceUnreported {
                    group: group.to_owned(),
                    tasks,
                });
            }
        }
    }

    /// The tasks ECS wants running with no live report naming them.
    pub(super) fn unreported(&self) -> Vec<Behind> {
        let silent = self.behind.iter().filter(|b| b.why == Why::Unreported);
        silent.cloned().collect()
    }

    /// Entries not read, and a directory that cannot be read: clients that may be behind.
    fn unread(&mut self, obs: &Observed, warnings: &mut Vec<Warning>) {
        let r = &obs.reports;
        if r.unread == 0 && r.dir_problem.is_none() {
            return;
        }
        warnings.push(Warning::ReportsUnread {
            entries: r.unread,
            problem: r.dir_problem.clone(),
        });
        self.behind.push(Behind {
            client: r.unread.max(1).to_string(),
            why: Why::Unread,
            list_version: None,
            parameter_version: None,
            last_seen: None,
            fault: None,
        });
    }
}
