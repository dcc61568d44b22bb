//! Things an operator should know that change nothing: one type for every warning a run gives,
//! whoever finds it (observe, plan, apply, a rebalance). The response and the logs carry the
//! text ([`Display`](std::fmt::Display)); tests and anything else that must tell warnings
//! apart use [`Warning::kind`].

use super::fleet::MovesWait;
use super::tasks::InUse;
use crate::observed::Noticed;
use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Warning {
    /// The state file of earlier versions was read once into the state parameter.
    OldStateCarriedOver {
        file: String,
        parameter: String,
        /// AZs it names as the function's own, which are not carried over.
        created_azs: Vec<String>,
    },
    /// The state file of earlier versions could not be read safely.
    OldStateFile { problem: String },
    /// The migrate event on a list that is rendezvous already (or none).
    NothingToMigrate,
    /// The migrate event cannot name a listed target's shard: its AZ is unknown.
    MigrateAzUnknown { id: String },
    /// The migrate event's list would be refused by the list's own rules.
    MigrateInvalid { problem: String },
    /// A shard directory that could not be read (skipped; the run went on).
    ShardSkipped { root: String, why: String },
    /// A shard directory that could not be made (the shard is not published until it is).
    ShardDirNotMade { error: String },
    /// The undo left a shard's directory: something is in it, or it could not be removed.
    ShardDirLeft { path: String, error: String },
    /// Files under a root no mount target owns: not counted.
    Uncounted { root: String, files: u64 },
    /// A target that holds its AZ but serves nothing (`error`, `deleting`, unknown state).
    TargetNotServing {
        id: String,
        az: String,
        state: String,
    },
    /// A candidate subnet outside the file system's VPC.
    OtherVpc {
        subnet: String,
        vpc: String,
        file_system_vpc: String,
    },
    /// A subnet or AZ AWS refused before, still left out.
    Excluded {
        key: String,
        until: u64,
        reason: String,
    },
    /// AWS refused a subnet (or its AZ) in this run: it is left out from now.
    SubnetRefused {
        reason: String,
        key: String,
        until: u64,
    },
    /// A service's newest deployment failed to roll out.
    RolloutFailed { service: String, why: String },
    /// Services have not run the list for longer than the fleet's patience.
    FleetNotConverged { services: Vec<String>, age: u64 },
    /// A listed target deleted outside this function: its root drains home.
    TargetGone { id: String, root: String },
    /// A target's drain that no rule allows any more.
    DrainStopped { id: String },
    /// A shard's drain whose shard is no longer its target's last.
    ShardDrainStopped { root: String, target: String },
    /// The list marks a target draining, and this function did not.
    ForeignDrainMark { id: String },
    /// The list marks shards of a target draining, and this function did not.
    ForeignShardDrainMark { id: String, shards: u32 },
    /// A rebalance that moves nothing, and why.
    MovesWait(MovesWait),
    /// A mover died holding the only copy of a version under a private name.
    CutShortMove { path: String },
    /// The reports' directory was missing, or not open to every router: made, or its mode set
    /// back to 1777.
    ReportsDirRepaired { repair: crate::reports::Repair },
    /// The walk of a draining shard's tree met its time before it could tell whether the tree
    /// is empty: the drain holds, the rest of the run goes on.
    DrainWalkCutShort { root: String },
    /// A drain's walk met an entry it will never move (a link, a FIFO, a directory it cannot
    /// walk, a name no router routes): the shard keeps it, so its drain holds.
    DrainHeldByEntry { path: String, what: &'static str },
    /// A drain's walk met a move's private name not abandoned yet: it may hold the only copy
    /// of a file, so the drain waits until it is given back.
    DrainHeldByMove { path: String, after: u64 },
    /// A live file named like a client's report that is none: it holds the moves.
    ReportUnreadable { file: String, kind: &'static str },
    /// Entries of the reports' directory not read (a flood, or out of time), or the directory
    /// cannot be read: they hold the moves.
    ReportsUnread {
        entries: usize,
        problem: Option<String>,
    },
    /// More shards are needed than one per mount target, but not every live client reports
    /// that it reads a version 2 list (or none reports): the list stays version 1.
    ListVersionHeld {
        needed: usize,
        most: usize,
        clients: Vec<String>,
    },
    /// Clients have not run the list for longer than the fleet's patience.
    ClientsNotConverged { clients: Vec<String>, age: u64 },
    /// None of the running tasks of a service (or task definition family) reports a list:
    /// it may run on plain paths, so no file moves, no target goes and the list stays
    /// version 1 (`CLIENT_REPORTS=require`).
    ServiceUnreported { group: String, tasks: usize },
    /// ListTasks or DescribeTasks failed (throttled, refused, out of time): no file moves and
    /// no target goes this run; growth goes on.
    TasksUnknown { why: String },
    /// Homes switched after the fleet's patience though it did not run the list that
    /// announced them: what is named here misses what the new homes receive until replaced.
    HomesSwitchedEarly(MovesWait),
    /// A drained target is not deleted: tasks run in its AZ, and each mounts the file system
    /// through its own AZ's target (or ECS's tasks could not be listed).
    TargetInUse {
        id: String,
        az: String,
        in_use: InUse,
    },
    /// More warnings of `kind` than one response names ([`WARNINGS_PER_KIND`]): `left_out`
    /// of them are not in it (logged, where they were found, or named by a later run).
    WarningsCapped { kind: &'static str, left_out: u64 },
}

impl From<Noticed> for Warning {
    fn from(n: Noticed) -> Warning {
        match n {
            Noticed::OldStateCarriedOver {
                file,
                parameter,
                created_azs,
            } => Warning::OldStateCarriedOver {
                file,
                parameter,
                created_azs,
            },
            Noticed::OldStateFile { problem } => Warning::OldStateFile { problem },
            Noticed::ReportsDirRepaired { repair } => Warning::ReportsDirRepaired { repair },
            Noticed::DrainWalkCutShort { root } => Warning::DrainWalkCutShort { root },
        }
    }
}

/// Warnings of one kind a response names at most: a flood of planted names makes a count,
/// not a response of millions of lines.
pub const WARNINGS_PER_KIND: usize = 10;

/// `warnings` with at most [`WARNINGS_PER_KIND`] of each kind, the first ones, in their
/// order; then, for each kind that had more (or a `warnings_capped` among them already,
/// summed by kind), one `warnings_capped` that counts what is left out.
pub fn capped<'a>(warnings: impl IntoIterator<Item = &'a Warning>) -> Vec<Warning> {
    let mut kept = Vec::new();
    let mut seen: Vec<(&'static str, usize)> = Vec::new();
    let mut left_out: Vec<(&'static str, u64)> = Vec::new();
    let count = |left_out: &mut Vec<(&'static str, u64)>, kind, n| match left_out
        .iter_mut()
        .find(|(k, _)| *k == kind)
    {
        Some((_, total)) => *total += n,
        None => left_out.push((kind, n)),
    };
    for w in warnings {
        let kind = match w {
            Warning::WarningsCapped { kind, left_out: n } => {
                count(&mut left_out, *kind, *n);
                continue;
            }
            w => w.kind(),
        };
        let i = seen
            .iter()
            .position(|(k, _)| *k == kind)
            .unwrap_or_else(|| {
                seen.push((kind, 0));
                seen.len() - 1
            });
        seen[i].1 += 1;
        match seen[i].1 <= WARNINGS_PER_KIND {
            true => kept.push(w.clone()),
            false => count(&mut left_out, kind, 1),
        }
    }
    let capped = left_out
        .into_iter()
        .map(|(kind, left_out)| Warning::WarningsCapped { kind, left_out });
    kept.extend(capped);
    kept
}

impl Warning {
    /// The warning's name, for the response's `warning_kinds` and for tests.
    pub fn kind(&self) -> &'static str {
        match self {
            Warning::OldStateCarriedOver { .. } => "old_state_carried_over",
            Warning::OldStateFile { .. } => "old_state_file",
            Warning::NothingToMigrate => "nothing_to_migrate",
            Warning::MigrateAzUnknown { .. } => "migrate_az_unknown",
            Warning::MigrateInvalid { .. } => "migrate_invalid",
            Warning::ShardSkipped { .. } => "shard_skipped",
            Warning::ShardDirNotMade { .. } => "shard_dir_not_made",
            Warning::ShardDirLeft { .. } => "shard_dir_left",
            Warning::Uncounted { .. } => "uncounted",
            Warning::TargetNotServing { .. } => "target_not_serving",
            Warning::OtherVpc { .. } => "other_vpc",
            Warning::Excluded { .. } => "excluded",
            Warning::SubnetRefused { .. } => "subnet_refused",
            Warning::RolloutFailed { .. } => "rollout_failed",
            Warning::FleetNotConverged { .. } => "fleet_not_converged",
            Warning::TargetGone { .. } => "target_gone",
            Warning::DrainStopped { .. } => "drain_stopped",
            Warning::ShardDrainStopped { .. } => "shard_drain_stopped",
            Warning::ForeignDrainMark { .. } => "foreign_drain_mark",
            Warning::ForeignShardDrainMark { .. } => "foreign_shard_drain_mark",
            Warning::MovesWait(_) => "moves_wait",
            Warning::CutShortMove { .. } => "cut_short_move",
            Warning::ReportsDirRepaired { .. } => "reports_dir_repaired",
            Warning::DrainWalkCutShort { .. } => "drain_walk_cut_short",
            Warning::DrainHeldByMove { .. } => "drain_held_by_move",
            Warning::DrainHeldByEntry { .. } => "drain_held_by_entry",
            Warning::ReportUnreadable { .. } => "report_unreadable",
            Warning::ReportsUnread { .. } => "reports_unread",
            Warning::ListVersionHeld { .. } => "list_version_held",
            Warning::ClientsNotConverged { .. } => "clients_not_converged",
            Warning::ServiceUnreported { .. } => "service_unreported",
            Warning::TasksUnknown { .. } => "tasks_unknown",
            Warning::HomesSwitchedEarly(_) => "homes_switched_early",
            Warning::TargetInUse { .. } => "target_in_use",
            Warning::WarningsCapped { .. } => "warnings_capped",
        }
    }
}

impl fmt::Display for Warning {
    // One line an arm: the longer texts are the named functions below.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Warning::OldStateCarriedOver {
                file,
                parameter,
                created_azs,
            } => carried_over(f, file, parameter, created_azs),
            Warning::OldStateFile { problem } => write!(f, "old state file: {problem}"),
            Warning::NothingToMigrate => f.write_str(NOTHING_TO_MIGRATE),
            Warning::MigrateAzUnknown { id } => migrate_az_unknown(f, id),
            Warning::MigrateInvalid { problem } => migrate_invalid(f, problem),
            Warning::ShardSkipped { root, why } => write!(f, "shard {root} skipped: {why}"),
            Warning::ShardDirNotMade { error } => f.write_str(error),
            Warning::ShardDirLeft { path, error } => shard_dir_left(f, path, error),
            Warning::Uncounted { root, files } => uncounted(f, root, *files),
            Warning::TargetNotServing { id, az, state } => target_not_serving(f, id, az, state),
            Warning::OtherVpc {
                subnet,
                vpc,
                file_system_vpc,
            } => other_vpc(f, subnet, vpc, file_system_vpc),
            Warning::Excluded { key, until, reason } => excluded(f, key, *until, reason),
            Warning::SubnetRefused { reason, key, until } => {
                write!(f, "{reason}; {key} is left out until {until} (Unix time)")
            }
            Warning::RolloutFailed { service, why } => rollout_failed(f, service, why),
            Warning::FleetNotConverged { services, age } => not_converged(
                f,
                "services",
                services,
                *age,
                "old tasks still run, or the rollout is stuck",
            ),
            Warning::TargetGone { id, root } => target_gone(f, id, root),
            Warning::DrainStopped { id } => drain_stopped(f, id),
            Warning::ShardDrainStopped { root, target } => shard_drain_stopped(f, root, target),
            Warning::ForeignDrainMark { id } => foreign_mark(f, id, None),
            Warning::ForeignShardDrainMark { id, shards } => foreign_mark(f, id, Some(*shards)),
            Warning::MovesWait(wait) => write!(f, "{wait}: no file moves"),
            Warning::DrainHeldByEntry { path, what } => drain_held_by_entry(f, path, what),
            Warning::DrainHeldByMove { path, after } => drain_held_by_move(f, path, *after),
            Warning::DrainWalkCutShort { root } => drain_walk_cut_short(f, root),
            Warning::ReportsDirRepaired { repair } => reports_dir_repaired(f, repair),
            Warning::CutShortMove { path } => cut_short_move(f, path),
            Warning::ReportUnreadable { file, kind } => report_unreadable(f, file, kind),
            Warning::ReportsUnread { entries, problem } => {
                reports_unread(f, *entries, problem.as_deref())
            }
            Warning::ListVersionHeld {
                needed,
                most,
                clients,
            } => list_version_held(f, *needed, *most, clients),
            Warning::ClientsNotConverged { clients, age } => {
                not_converged(f, "clients", clients, *age, "")
            }
            Warning::ServiceUnreported { group, tasks } => service_unreported(f, group, *tasks),
            Warning::TasksUnknown { why } => tasks_unknown(f, why),
            Warning::HomesSwitchedEarly(wait) => homes_switched_early(f, wait),
            Warning::TargetInUse { id, az, in_use } => target_in_use(f, id, az, in_use),
            Warning::WarningsCapped { kind, left_out } => write!(
                f,
                "{left_out} more warnings of kind {kind} are not in this response (logged; \
                 at most {WARNINGS_PER_KIND} of a kind are)"
            ),
        }
    }
}

const NOTHING_TO_MIGRATE: &str = "the migrate event asks for rendezvous, and the list already is \
    (or none is published): nothing to migrate";

fn migrate_az_unknown(f: &mut fmt::Formatter<'_>, id: &str) -> fmt::Result {
    write!(
        f,
        "cannot migrate: the AZ of listed mount target {id} is known neither from the \
         list nor from AWS, so its shard cannot be named; nothing changed"
    )
}

fn migrate_invalid(f: &mut fmt::Formatter<'_>, problem: &str) -> fmt::Result {
    write!(
        f,
        "cannot migrate: the list under rendezvous would be refused ({problem}); nothing \
         changed"
    )
}

fn shard_dir_left(f: &mut fmt::Formatter<'_>, path: &str, error: &str) -> fmt::Result {
    write!(f, "{path}: left ({error}); remove it by hand once empty")
}

fn uncounted(f: &mut fmt::Formatter<'_>, root: &str, files: u64) -> fmt::Result {
    write!(
        f,
        "{files} files under {root} belong to no mount target and are not counted"
    )
}

fn target_not_serving(f: &mut fmt::Formatter<'_>, id: &str, az: &str, state: &str) -> fmt::Result {
    write!(
        f,
        "mount target {id} in {az} is {state}; it holds its AZ but serves no shard"
    )
}

fn other_vpc(f: &mut fmt::Formatter<'_>, subnet: &str, vpc: &str, fs_vpc: &str) -> fmt::Result {
    write!(
        f,
        "subnet {subnet} is in {vpc}, not the file system's VPC {fs_vpc}; ignored"
    )
}

fn excluded(f: &mut fmt::Formatter<'_>, key: &str, until: u64, reason: &str) -> fmt::Result {
    write!(
        f,
        "{key} is left out of scale-out until {until} (Unix time): {reason}"
    )
}

fn rollout_failed(f: &mut fmt::Formatter<'_>, service: &str, why: &str) -> fmt::Result {
    write!(
        f,
        "the rollout of service {service}'s newest deployment failed ({why}); its tasks \
         still run the previous deployment and the list it had"
    )
}

/// Services (`why`: what may hold them) or clients that have not run the list for `age` s.
fn not_converged(
    f: &mut fmt::Formatter<'_>,
    who: &str,
    names: &[String],
    age: u64,
    why: &str,
) -> fmt::Result {
    write!(
        f,
        "{who} {} have not run the list published {age} s ago",
        names.join(", ")
    )?;
    if !why.is_empty() {
        write!(f, " ({why})")?;
    }
    f.write_str(": files wait to move")
}

fn target_gone(f: &mut fmt::Formatter<'_>, id: &str, root: &str) -> fmt::Result {
    write!(
        f,
        "mount target {id} ({root}) is gone; its root {root} stays listed, draining, \
         until its files are home"
    )
}

fn drain_stopped(f: &mut fmt::Formatter<'_>, id: &str) -> fmt::Result {
    write!(
        f,
        "the drain of {id} stopped: a target that was there before this function, the \
         first shard `/`, a protected AZ or a modulo list never goes"
    )
}

fn shard_drain_stopped(f: &mut fmt::Formatter<'_>, root: &str, target: &str) -> fmt::Result {
    write!(
        f,
        "the drain of shard {root} stopped: it is no longer the last shard of {target} \
         (the list was changed by hand?)"
    )
}

/// The list marks a target (or `shards` of its shards) draining, and this function did not.
fn foreign_mark(f: &mut fmt::Formatter<'_>, id: &str, shards: Option<u32>) -> fmt::Result {
    match shards {
        None => write!(f, "the list marks {id} draining"),
        Some(shards) => write!(f, "the list marks {shards} shard(s) of {id} draining"),
    }?;
    f.write_str(", but this function did not: the mark is removed")
}

fn drain_held_by_entry(f: &mut fmt::Formatter<'_>, path: &str, what: &str) -> fmt::Result {
    write!(
        f,
        "{path}: {what}, never moved: the draining shard keeps it, so the drain holds \
         until a person moves or removes it"
    )
}

fn drain_held_by_move(f: &mut fmt::Formatter<'_>, path: &str, after: u64) -> fmt::Result {
    write!(
        f,
        "{path}: a move's private name, which may hold the only copy of a file, holds \
         the drain; once unchanged for {after} s (ABANDONED_AFTER_SECONDS) the drain \
         gives it back and goes on"
    )
}

fn drain_walk_cut_short(f: &mut fmt::Formatter<'_>, root: &str) -> fmt::Result {
    write!(
        f,
        "the tree of draining shard {root} could not be walked in the time this run had: \
         its drain holds, and the next run walks it again"
    )
}

fn reports_dir_repaired(
    f: &mut fmt::Formatter<'_>,
    repair: &crate::reports::Repair,
) -> fmt::Result {
    use crate::reports::Repair;
    match repair {
        Repair::Made => f.write_str("/.efs-router-clients was missing: made, mode 1777"),
        Repair::ModeRestored { was } => write!(
            f,
            "/.efs-router-clients had mode {was:o}, which locks routers out of their \
             reports: set back to 1777"
        ),
        Repair::Displaced { what, to } => write!(
            f,
            "{what} had the name /.efs-router-clients, which locks routers out of their \
             reports: renamed to /{to} (neither followed nor removed), and the \
             directory made, mode 1777"
        ),
    }
}

fn cut_short_move(f: &mut fmt::Formatter<'_>, path: &str) -> fmt::Result {
    write!(
        f,
        "{path} looks like a move that died with the only copy of a version: left for \
         a person to look at"
    )
}

fn report_unreadable(f: &mut fmt::Formatter<'_>, file: &str, kind: &str) -> fmt::Result {
    write!(
        f,
        "client report {file} is not one ({kind}): it counts as a client on an unknown \
         list until its lifetime ends"
    )
}

fn reports_unread(
    f: &mut fmt::Formatter<'_>,
    entries: usize,
    problem: Option<&str>,
) -> fmt::Result {
    write!(f, "{entries} entries of the client reports were not read")?;
    if let Some(p) = problem {
        write!(f, " (the directory: {p})")?;
    }
    write!(f, ": files wait to move")
}

fn service_unreported(f: &mut fmt::Formatter<'_>, group: &str, tasks: usize) -> fmt::Result {
    write!(
        f,
        "none of the {tasks} running tasks of {group} reports a list (no router, or one \
         older than reports): no file moves and no mount target goes until each does"
    )
}

fn tasks_unknown(f: &mut fmt::Formatter<'_>, why: &str) -> fmt::Result {
    write!(
        f,
        "ECS's tasks could not be listed ({why}): no file moves and no mount target goes \
         this run"
    )
}

fn homes_switched_early(f: &mut fmt::Formatter<'_>, wait: &MovesWait) -> fmt::Result {
    write!(
        f,
        "homes switched after the fleet's patience ({} s) though the list that announced \
         them is not run everywhere: {wait}; until they are replaced, they do not find files \
         written at the new homes",
        super::fleet::FLEET_PATIENCE_SECS
    )
}

fn target_in_use(f: &mut fmt::Formatter<'_>, id: &str, az: &str, in_use: &InUse) -> fmt::Result {
    write!(f, "drained mount target {id} in {az} is not deleted: ")?;
    match in_use {
        InUse::Tasks(_) => write!(f, "{in_use} mount(s) the file system through it")?,
        InUse::TasksUnknown(_) => write!(f, "{in_use}, and any may run there")?,
    }
    f.write_str(" (a task mounts through its own AZ's target); it goes once none runs there")
}

fn list_version_held(
    f: &mut fmt::Formatter<'_>,
    needed: usize,
    most: usize,
    clients: &[String],
) -> fmt::Result {
    write!(
        f,
        "{needed} shards are needed but the list stays version 1 ({most} shards, one per mount \
         target) until every live client reports that it reads version 2: "
    )?;
    match clients.is_empty() {
        true => write!(f, "no client reports (routers older than reports may not)"),
        false => write!(f, "{} do not", clients.join(", ")),
    }
}

fn carried_over(
    f: &mut fmt::Formatter<'_>,
    file: &str,
    parameter: &str,
    created_azs: &[String],
) -> fmt::Result {
    write!(
        f,
        "the timers of {file} were carried over to the parameter {parameter} (read once; the \
         file is no longer used)"
    )?;
    if !created_azs.is_empty() {
        write!(
            f,
            "; the AZs it names as created by this function ({}) were not: add those targets \
             to `created` in the parameter if they are",
            created_azs.join(", ")
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cut_short(i: usize) -> Warning {
        Warning::CutShortMove {
            path: format!("/mnt/efs/{i}"),
        }
    }

    #[test]
    fn warnings_of_one_kind_are_capped_with_a_count_of_the_rest() {
        let mut warnings: Vec<Warning> = (0..WARNINGS_PER_KIND + 3).map(cut_short).collect();
        warnings.insert(2, Warning::NothingToMigrate);
        // One found capped already, where it was found: its count adds up.
        warnings.push(Warning::WarningsCapped {
            kind: "cut_short_move",
            left_out: 100,
        });
        let capped = capped(&warnings);
        let kinds: Vec<_> = capped.iter().map(Warning::kind).collect();
        let mut wanted = vec!["cut_short_move"; 2];
        wanted.push("nothing_to_migrate");
        wanted.extend(vec!["cut_short_move"; WARNINGS_PER_KIND - 2]);
        wanted.push("warnings_capped");
        assert_eq!(kinds, wanted);
        assert_eq!(capped[..3], warnings[..3]);
        assert_eq!(
            capped.last(),
            Some(&Warning::WarningsCapped {
                kind: "cut_short_move",
                left_out: 103
            })
        );
        // At the cap, nothing is left out, and nothing is added.
        let few: Vec<Warning> = (0..WARNINGS_PER_KIND).map(cut_short).collect();
        assert_eq!(super::capped(&few), few);
    }
}
