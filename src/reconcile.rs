//! One invocation: observe → plan → apply, then the response and one summary log event.

use crate::apply::{apply, Applied};
use crate::aws::Aws;
use crate::config::Config;
use crate::error::Error;
use crate::event::Action;
use crate::metrics;
use crate::moves::pass;
use crate::observe::observe;
use crate::plan::{capped, plan, Behind, Homes, MovesWait, OldTask, Plan, Policy, Step, StepKind};
use crate::response::{NewMountTarget, Response};
use std::time::{Duration, Instant, SystemTime};
use tracing::{info, warn};

/// Until when an observation may walk a draining shard's tree: half the time left, so that a
/// tree too large to walk holds its own drain and never the run's other work.
fn walk_until(wait_until: Instant) -> Instant {
    let now = Instant::now();
    now + wait_until.saturating_duration_since(now) / 2
}

/// Time kept back from the Lambda deadline for what follows a wait: observe again,
/// publish, redeploy, respond.
const MARGIN: Duration = Duration::from_secs(20);

/// Names one NFS READDIR reply of 32 KiB holds (measured on nfs-ganesha).
const NAMES_PER_READDIR: u64 = 544;

/// Observe-plan-apply rounds in one run: create (or a few refused subnets, then create), wait,
/// drain, delete, then publish.
const MAX_ROUNDS: usize = 8;

pub fn policy(config: &Config) -> Policy {
    Policy {
        file_threshold: config.file_threshold,
        max_mount_targets: config.max_mount_targets,
        max_shards: config.max_shards,
        migrate: false,
        subnet_ids: config.subnet_ids.clone(),
        security_group_ids: config.security_group_ids.clone(),
        services: config.services.clone(),
        scale_in_ratio: config.scale_in_ratio,
        scale_in_cooldown_secs: config.scale_in_cooldown.as_secs(),
        allow_create: true,
        client_refresh_secs: config.client_refresh.as_secs(),
        client_reports: config.client_reports,
        close_placements: config.close_placements,
        undo: false,
        scope: Some(config.watch_dir.clone()).filter(|w| !w.is_empty()),
    }
}

pub async fn run(
    aws: &Aws,
    config: &Config,
    action: Action,
    deadline: SystemTime,
) -> Result<Response, Error> {
    let wait_until = Instant::now()
        + deadline
            .duration_since(SystemTime::now())
            .unwrap_or_default()
            .saturating_sub(MARGIN);
    let policy = Policy {
        migrate: action == Action::Migrate,
        undo: action == Action::Undo,
        ..policy(config)
    };
    let (observed, count_took) = observe(aws, config, walk_until(wait_until)).await?;
    let first = plan(&observed, &policy);
    for w in &first.warnings {
        warn!(warning = %w, kind = w.kind(), "observed");
    }

    let mut applied = Applied::default();
    let last = match action {
        Action::Plan => {
            applied.actions = first.steps.iter().map(Step::kind).collect();
            None
        }
        Action::Rebalance { max_moves } => {
            pass::saved_first(aws, config, &observed, &first).await?;
            let mut done = pass::run(config, &observed, &first, max_moves, wait_until)?;
            if let Some(state) = done.state.take() {
                pass::save(aws, config, state).await?;
            }
            applied.rebalanced(done);
            None
        }
        Action::Reconcile | Action::Migrate | Action::Undo => Some(
            converge(
                aws,
                config,
                &policy,
                first.clone(),
                wait_until,
                &mut applied,
            )
            .await?,
        ),
    };
    let end = last.as_ref().unwrap_or(&first);
    let dirs_not_made = applied.dirs_not_made;
    let response = respond(config, action, &first, end, applied);
    if matches!(action, Action::Reconcile | Action::Migrate) {
        emit_metrics(config, &first, end, count_took, dirs_not_made);
    }
    log_summary(action, &first, &response, count_took);
    Ok(response)
}

/// The one `run summary` event of an invocation.
fn log_summary(action: Action, first: &Plan, response: &Response, count_took: Duration) {
    info!(
        action = action.as_str(),
        file_count = response.file_count,
        files_per_shard = ?response.files_per_shard,
        count_ms = count_took.as_millis() as u64,
        // The floor of counting over NFS: the shards are read at once, so the largest one's
        // READDIR replies (NAMES_PER_READDIR names each) set it.
        count_floor_round_trips = first
            .files_per_shard
            .values()
            .max()
            .map_or(0, |n| n.div_ceil(NAMES_PER_READDIR)),
        current = first.current,
        desired = response.desired,
        needed = first.needed,
        at_capacity = response.at_capacity,
        total = response.total,
        actions = ?response.actions,
        moved = response.moves.as_ref().map_or(0, |m| m.moved),
        waiting_for = ?response.waiting_for,
        decision = response.decision,
        reason = %response.reason,
        "run summary"
    );
}

/// Applies a plan; after a step that changes what is observed (a target created, available
/// or deleted, files moved, a subnet refused) observes and plans again, so that what is
/// published is what is there. At most `MAX_ROUNDS` rounds; the last only announces.
async fn converge(
    aws: &Aws,
    config: &Config,
    policy: &Policy,
    mut current: Plan,
    wait_until: Instant,
    applied: &mut Applied,
) -> Result<Plan, Error> {
    for round in 1..=MAX_ROUNDS {
        let changing =
            round < MAX_ROUNDS && current.steps.iter().any(|s| s.kind().changes_observed());
        if !changing {
            let rest = only(&current.steps, |s| !s.kind().changes_observed());
            apply(aws, config, &rest, wait_until, applied).await?;
            break;
        }
        let head = only(&current.steps, |s| !s.kind().is_announcement());
        if apply(aws, config, &head, wait_until, applied).await? {
            let (again, _) = observe(aws, config, walk_until(wait_until)).await?;
            // One new mount target a run; after a refused subnet, the next one is tried.
            current = plan(
                &again,
                &Policy {
                    allow_create: applied.created.is_none(),
                    ..policy.clone()
                },
            );
            continue;
        }
        let tail = only(&current.steps, |s| s.kind().is_announcement());
        apply(aws, config, &tail, wait_until, applied).await?;
        break;
    }
    Ok(current)
}

fn only(steps: &[Step], keep: impl Fn(&Step) -> bool) -> Vec<Step> {
    steps.iter().filter(|s| keep(s)).cloned().collect()
}

/// The run's metrics as Embedded Metric Format lines on stdout: CloudWatch Logs makes them
/// metrics, with no API call. Only reconcile runs emit, so each period counts once.
fn emit_metrics(
    config: &Config,
    first: &Plan,
    end: &Plan,
    count_took: Duration,
    dirs_not_made: usize,
) {
    let m = metrics::RunMetrics {
        file_system_id: config.file_system_id.clone(),
        files_per_target: end
            .files_per_target
            .iter()
            .map(|(id, files)| (id.clone(), *files))
            .collect(),
        largest_shard: end
            .files_per_shard
            .iter()
            .max_by_key(|(root, files)| (**files, std::cmp::Reverse(*root)))
            .map(|(root, files)| (root.clone(), *files)),
        threshold: config.file_threshold,
        total_files: first.file_count,
        mount_targets: end.current as u64,
        desired: first.desired as u64,
        shards: end.current_shards as u64,
        desired_shards: first.desired_shards as u64,
        at_capacity: end.at_capacity,
        rollouts_failed: end.rollouts_failed.len() as u64,
        fleet_not_converged: end.fleet_stuck,
        clients_by_version: end.clients_by_version.clone(),
        clients_behind_secs: end.clients_behind_secs,
        list_version_held: end.list_version_held,
        tasks_unreported: end.unreported.len() as u64,
        unreadable_shards: (end.unreadable + dirs_not_made) as u64,
        count_duration: count_took,
    };
    for line in metrics::emf_lines(&m, metrics::timestamp_ms_now()) {
        println!("{line}");
    }
}

/// The ECS tasks a run waited for: a drain's (its decision), or a rebalance's (what holds its
/// moves).
fn tasks_waited_for(action: Action, end: &Plan) -> Vec<OldTask> {
    if !end.waits.tasks.is_empty() {
        return end.waits.tasks.clone();
    }
    match &end.moves_wait {
        Some(MovesWait::Tasks(tasks)) if matches!(action, Action::Rebalance { .. }) => {
            tasks.clone()
        }
        _ => Vec::new(),
    }
}

/// Each item once, in the order first met: a run's holders come from several sources (its
/// rebalance, the plan's wait, the unreported tasks) that may name the same one.
fn once<'a, T: PartialEq + Clone + 'a>(items: impl IntoIterator<Item = &'a T>) -> Vec<T> {
    let mut out: Vec<T> = Vec::new();
    for item in items {
        if !out.contains(item) {
            out.push(item.clone());
        }
    }
    out
}

fn respond(
    config: &Config,
    action: Action,
    first: &Plan,
    end: &Plan,
    applied: Applied,
) -> Response {
    // At most a few of a kind, and a count of the rest: planted names make no flood.
    let warnings = capped(applied.warnings.iter().chain(&end.warnings));
    // A rebalance during a drain is held by the same clients as the drain: each named once.
    // Tasks that report nothing hold every move whatever was decided (on the first day, the
    // app on plain paths): named in every response, a plan's included.
    let clients_behind = once(
        applied
            .clients_behind
            .iter()
            .chain(&end.waits.clients)
            .chain(&end.unreported),
    );
    let moved_files = action != Action::Plan && applied.actions.contains(&StepKind::MoveFiles);
    let tasks = tasks_waited_for(action, end);
    let new_mount_target = applied.created.map(|(t, root)| NewMountTarget {
        // The describe after creating has the address when the create response had none.
        ip: t.ip.clone().or_else(|| {
            end.first_roots
                .iter()
                .find(|s| s.target.id == t.id)
                .and_then(|s| s.target.ip.clone())
        }),
        id: t.id,
        az: t.az,
        subnet_id: t.subnet_id,
        root,
    });
    Response {
        status_code: 200,
        action: action.as_str(),
        file_count: first.file_count,
        files_per_shard: end.files_per_shard.clone(),
        files_per_target: end.files_per_target.clone(),
        threshold: config.file_threshold,
        desired: first.desired,
        shards: end.current_shards,
        desired_shards: first.desired_shards,
        at_capacity: end.at_capacity,
        new_mount_target,
        total: end.current,
        mount_targets: end.list.mount_targets.clone(),
        waiting_for: {
            // Targets still creating, and services a drain or a rebalance waits for.
            let mut w = once(applied.waiting_for.iter().chain(&end.waits.services));
            w.extend(tasks.iter().map(|t| t.id.clone()));
            // Each with its list version and when it was last seen.
            w.extend(clients_behind.iter().map(Behind::to_string));
            w
        },
        waiting_for_tasks: tasks,
        clients_behind,
        actions: applied.actions,
        decision: first.decision.name(),
        reason: first.reason.clone(),
        homes: Some(end.homes.name()).filter(|_| end.homes != Homes::Kept),
        warning_kinds: warnings.iter().map(|w| w.kind()).collect(),
        warnings: warnings.iter().map(|w| w.to_string()).collect(),
        excluded_subnets: end.excluded.clone(),
        moves: moved_files.then_some(applied.moves),
        deleted: applied.deleted,
    }
}
