//! One invocation: observe → plan → apply, then the response and one summary log event.

use crate::apply::{apply, Applied};
use crate::aws::Clients;
use crate::config::Config;
use crate::error::Error;
use crate::event::Action;
use crate::observe::observe;
use crate::plan::{plan, Plan, Policy, Step};
use crate::response::{NewMountTarget, Response};
use std::time::{Duration, Instant, SystemTime};
use tracing::{info, warn};

/// Time kept back from the Lambda deadline for what follows a wait: observe again,
/// publish, redeploy, respond.
const MARGIN: Duration = Duration::from_secs(20);

pub fn policy(config: &Config) -> Policy {
    Policy {
        file_threshold: config.file_threshold,
        max_mount_targets: config.max_mount_targets,
        subnet_ids: config.subnet_ids.clone(),
        security_group_ids: config.security_group_ids.clone(),
        services: config.services.clone(),
        allow_create: true,
    }
}

pub async fn run(clients: &Clients, config: &Config, action: Action, deadline: SystemTime) -> Result<Response, Error> {
    let wait_until = Instant::now() + deadline.duration_since(SystemTime::now()).unwrap_or_default().saturating_sub(MARGIN);
    let policy = policy(config);
    let (observed, count_took) = observe(clients, config).await?;
    let first = plan(&observed, &policy);
    for w in &first.warnings {
        warn!(warning = %w, "observed");
    }

    let mut applied = Applied::default();
    let last = match action {
        Action::Plan => {
            applied.actions = first.steps.iter().map(Step::name).collect();
            None
        }
        Action::Reconcile if first.steps.iter().any(Step::changes_capacity) => {
            // Create and wait first; then look again, so that what is published is what is there.
            let capacity: Vec<Step> = first
                .steps
                .iter()
                .filter(|s| s.changes_capacity() || matches!(s, Step::CreateShardDir { .. }))
                .cloned()
                .collect();
            apply(clients, config, &capacity, wait_until, &mut applied).await?;
            let (again, _) = observe(clients, config).await?;
            let second = plan(&again, &Policy { allow_create: false, ..policy });
            let rest: Vec<Step> = second.steps.iter().filter(|s| !s.changes_capacity()).cloned().collect();
            apply(clients, config, &rest, wait_until, &mut applied).await?;
            Some(second)
        }
        Action::Reconcile => {
            apply(clients, config, &first.steps, wait_until, &mut applied).await?;
            None
        }
    };
    let end = last.as_ref().unwrap_or(&first);
    let response = respond(config, action, &first, end, applied);
    info!(
        action = action.as_str(),
        file_count = response.file_count,
        files_per_shard = ?response.files_per_shard,
        count_ms = count_took.as_millis() as u64,
        current = first.current,
        desired = response.desired,
        needed = first.needed,
        at_capacity = response.at_capacity,
        total = response.total,
        actions = ?response.actions,
        waiting_for = ?response.waiting_for,
        reason = %response.reason,
        "run summary"
    );
    Ok(response)
}

fn respond(config: &Config, action: Action, first: &Plan, end: &Plan, applied: Applied) -> Response {
    let new_mount_target = applied.created.map(|(t, root)| NewMountTarget {
        // The describe after creating has the address when the create response had none.
        ip: t.ip.clone().or_else(|| {
            end.shards
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
        threshold: config.file_threshold,
        desired: first.desired,
        at_capacity: first.at_capacity,
        new_mount_target,
        total: end.current,
        mount_targets: end.list.mount_targets.clone(),
        waiting_for: applied.waiting_for,
        actions: applied.actions,
        reason: first.reason.clone(),
        warnings: end.warnings.clone(),
    }
}
