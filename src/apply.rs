//! Carry out a plan's steps. Each step is idempotent, so a run that dies between two of
//! them leaves a state the next run's plan finishes.

use crate::aws::{ssm, Aws};
use crate::config::Config;
use crate::error::Error;
use crate::moves::pass::Rebalanced;
use crate::moves::{self, Moves};
use crate::observed::{LifeCycle, MountTarget};
use crate::plan::{NewTarget, SecurityGroups, Step, StepKind, Warning};
use crate::state::{Published, State};
use efs_router::list::MountTargetList;
use std::time::{Duration, Instant};
use tracing::{info, warn};

/// What applying did, for the response and the summary log.
#[derive(Debug, Default)]
pub struct Applied {
    pub actions: Vec<StepKind>,
    pub created: Option<(MountTarget, String)>,
    pub waiting_for: Vec<String>,
    /// Live clients a rebalance waited for.
    pub clients_behind: Vec<crate::plan::Behind>,
    pub moves: Moves,
    pub deleted: Vec<String>,
    /// A step of the current `apply` changed what the next observation will see (a target
    /// created, available, deleted, files moved, a subnet left out).
    progressed: bool,
    /// What happened that an operator should know (a subnet AWS refused).
    pub warnings: Vec<Warning>,
    /// Shard directories that could not be made (each skipped; the run went on).
    pub dirs_not_made: usize,
}

impl Applied {
    /// Folds in what a rebalance run did: its warnings and what it waited for; its moves and
    /// the step they were, when it walked.
    pub fn rebalanced(&mut self, done: Rebalanced) {
        self.warnings.extend(done.warnings);
        self.waiting_for.extend(done.waiting_for);
        self.clients_behind.extend(done.clients_behind);
        if let Some(moves) = done.moves {
            self.moves = moves;
            self.actions.push(StepKind::MoveFiles);
        }
    }
}

/// Makes the shard directory of `root`: answers whether it is there. One that cannot be made
/// stops only itself: the shard is not published until it exists, and the next run tries again.
fn make_shard_dir(config: &Config, root: &str, applied: &mut Applied) -> bool {
    let path = config.watch_path(root);
    if let Err(source) = crate::shard::open_dir(config, &path, true) {
        let e = Error::CreateShardDir { path, source };
        warn!(root = %root, error = %crate::error::chain(&e), "shard directory skipped");
        applied.warnings.push(Warning::ShardDirNotMade {
            error: crate::error::chain(&e),
        });
        applied.dirs_not_made += 1;
        return false;
    }
    info!(root = %root, path = %path.display(), "shard directory ready");
    true
}

/// Drains the shard rooted at `root` (a `MoveFiles` step). A drain is bounded by the time left
/// only: it is what stands between the run and removing the target.
fn drain(
    config: &Config,
    root: &String,
    list: &MountTargetList,
    wait_until: Instant,
    applied: &mut Applied,
) -> Result<(), Error> {
    let budget = moves::Budget {
        max_moves: u64::MAX,
        until: wait_until,
        concurrency: config.move_concurrency,
    };
    let roots = std::slice::from_ref(root);
    let moves = moves::drain_shards(config, list, roots, budget, &mut applied.warnings)?;
    applied.progressed |= moves.moved + moves.dropped_older > 0;
    applied.moves.then(moves);
    Ok(())
}

/// First and longest pause between two looks at a creating mount target.
const FIRST_POLL: Duration = Duration::from_secs(1);
const LONGEST_POLL: Duration = Duration::from_secs(10);

/// Runs `steps` in order and returns whether any of them changed what the next observation
/// sees (the run then observes and plans again).
pub async fn apply(
    aws: &Aws,
    config: &Config,
    steps: &[Step],
    wait_until: Instant,
    applied: &mut Applied,
) -> Result<bool, Error> {
    applied.progressed = false;
    fits(config, steps)?;
    for step in steps {
        match step {
            Step::CreateShardDir { root } => {
                if !make_shard_dir(config, root, applied) {
                    continue;
                }
            }
            Step::CreateMountTarget(new) => {
                applied.progressed = true;
                if let Some(target) = create(aws, config, new, applied).await? {
                    applied.created = Some((target.clone(), new.root.clone()));
                    applied.actions.push(step.kind());
                    wait(aws, &target.id, wait_until, applied).await?;
                    applied.actions.push(StepKind::Wait);
                    continue;
                }
            }
            Step::Wait { mount_target_id } => {
                wait(aws, mount_target_id, wait_until, applied).await?
            }
            Step::SaveState(state) => {
                aws.ssm
                    .write_state(&config.state_parameter_name, state)
                    .await?;
                info!(parameter = %config.state_parameter_name, state = %state.to_json(), "state saved");
            }
            Step::MoveFiles { root, list } => drain(config, root, list, wait_until, applied)?,
            Step::DeleteMountTarget { mount_target_id } => {
                aws.efs.delete_mount_target(mount_target_id).await?;
                applied.deleted.push(mount_target_id.clone());
                applied.progressed = true;
                info!(mount_target = %mount_target_id, "deleted a drained mount target");
            }
            Step::Publish { list } => publish(aws, config, list).await?,
            Step::RemoveShardDirs { roots } => {
                // What is not empty stays, named, and the next run's undo says so again.
                for (path, error) in crate::shard::remove_empty_shard_dirs(config, roots) {
                    warn!(path = %path.display(), error = %error, "shard directory left");
                    applied.warnings.push(Warning::ShardDirLeft {
                        path: path.display().to_string(),
                        error,
                    });
                }
            }
            Step::ForceDeployment { service } => {
                let id = aws
                    .ecs
                    .force_new_deployment(&config.cluster, service)
                    .await?;
                info!(cluster = %config.cluster, service = %service, deployment = id.as_deref().unwrap_or("?"), "forced a new deployment");
            }
        }
        applied.actions.push(step.kind());
    }
    Ok(applied.progressed)
}

/// Publishes `list`, then records it in the state: a later run whose read of the list lags
/// this write reads it again rather than move files by an older list ([`State::published`]).
/// A run that dies between the two leaves the record one publish behind.
async fn publish(aws: &Aws, config: &Config, list: &MountTargetList) -> Result<(), Error> {
    let version = aws.ssm.write(&config.parameter_name, list).await?;
    info!(parameter = %config.parameter_name, version, targets = list.mount_targets.len(), list = %list.to_json(), "published");
    // SSM's answer names the version it made; without one there is nothing to record.
    if version > 0 {
        let at = crate::state::now();
        update_state(aws, config, |s| {
            s.published = Some(Published { version, at })
        })
        .await?;
    }
    Ok(())
}

/// Every list and state the steps would write fits its parameter: checked before the first
/// step, so a value SSM would refuse stops the run before it changed anything (no state saved
/// for a list that cannot go out, no target created for a state that cannot record it).
fn fits(config: &Config, steps: &[Step]) -> Result<(), Error> {
    for step in steps {
        match step {
            Step::Publish { list } => ssm::list_fits(&config.parameter_name, list)?,
            Step::SaveState(state) => ssm::state_fits(&config.state_parameter_name, state)?,
            _ => {}
        }
    }
    Ok(())
}

/// The target AWS accepted, recorded in the scale state as the function's own. `None` when
/// AWS refused this subnet or its AZ (left out for `SUBNET_EXCLUSION_SECONDS`, kept in the
/// state, so the run's next round and later runs try another) or when another run created a
/// target in that AZ first (`MountTargetConflict`): the run observes again instead of failing.
async fn create(
    aws: &Aws,
    config: &Config,
    new: &NewTarget,
    applied: &mut Applied,
) -> Result<Option<MountTarget>, Error> {
    let groups = match &new.security_groups {
        SecurityGroups::Given(ids) => Some(ids.clone()),
        SecurityGroups::SameAs(id) => Some(aws.efs.security_groups(id).await?),
        SecurityGroups::VpcDefault => None,
    };
    // Saved first: AWS may make the target and the answer never come.
    let subnet = &new.subnet_id;
    update_state(aws, config, |s| {
        s.intend_create(subnet, &new.az_id, crate::state::now())
    })
    .await?;
    match aws
        .efs
        .create_mount_target(&config.file_system_id, &new.subnet_id, groups.clone())
        .await
    {
        Ok(target) => {
            info!(mount_target = %target.id, az = %new.az, az_id = %new.az_id, subnet = %new.subnet_id,
                  root = %new.root, security_groups = ?groups, state = target.state.as_str(), "created a mount target");
            update_state(aws, config, |s| {
                s.record_created(&target.id, &new.az_id, crate::state::now());
                s.creating.remove(subnet);
            })
            .await?;
            Ok(Some(target))
        }
        Err(Error::SubnetRefused {
            code,
            message,
            whole_az,
            ..
        }) => {
            let now = crate::state::now();
            let until = now + config.subnet_exclusion.as_secs();
            let key = if whole_az { &new.az_id } else { &new.subnet_id };
            let reason = format!(
                "CreateMountTarget refused subnet {} in {} ({}): {code}: {message}",
                new.subnet_id, new.az, new.az_id
            );
            warn!(subnet = %new.subnet_id, az = %new.az, az_id = %new.az_id, code = %code, message = %message,
                  left_out = %key, until, "AWS refused the subnet; leaving it out and trying another");
            update_state(aws, config, |s| {
                s.exclude(key, until, reason.clone(), now);
                s.creating.remove(subnet);
            })
            .await?;
            applied.warnings.push(Warning::SubnetRefused {
                reason,
                key: key.clone(),
                until,
            });
            Ok(None)
        }
        // AWS also answers MountTargetConflict for a subnet of another VPC: the message says
        // which, and the next observation shows whether a target now holds the AZ (one in the
        // subnet is the function's own: a retry of a create whose answer was lost).
        Err(e @ Error::MountTargetConflict { .. }) => {
            warn!(az = %new.az, subnet = %new.subnet_id, error = %crate::error::chain(&e),
                  "MountTargetConflict: another run may have got there first; observing again");
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

/// Reads the state parameter, changes it and writes it back (one run at a time, so no other
/// writer races it; a read that lagged SSM is checked at the write, [`crate::aws::ssm::Ssm::update_state`]).
async fn update_state(
    aws: &Aws,
    config: &Config,
    change: impl Fn(&mut State),
) -> Result<(), Error> {
    aws.ssm
        .update_state(&config.state_parameter_name, change)
        .await
}

/// Polls with backoff until the target is available or `until` comes. A target still
/// creating then is left to the next run; one that failed is reported, never waited on.
async fn wait(aws: &Aws, id: &str, until: Instant, applied: &mut Applied) -> Result<(), Error> {
    let mut pause = FIRST_POLL;
    loop {
        let state = aws.efs.mount_target(id).await?.map(|t| t.state);
        match state {
            Some(LifeCycle::Available) => {
                applied.progressed = true;
                info!(mount_target = %id, "mount target available");
                return Ok(());
            }
            Some(LifeCycle::Creating | LifeCycle::Updating) => {}
            Some(other) => {
                warn!(mount_target = %id, state = other.as_str(), "mount target will not become available; not waiting for it");
                return Ok(());
            }
            None => {
                warn!(mount_target = %id, "mount target is gone");
                return Ok(());
            }
        }
        if Instant::now() + pause > until {
            info!(mount_target = %id, "still creating at the time limit; the next run picks it up");
            applied.waiting_for.push(id.to_owned());
            return Ok(());
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(LONGEST_POLL);
    }
}
