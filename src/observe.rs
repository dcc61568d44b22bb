//! Observe everything a plan needs. Reads only; any error here means nothing was changed.

use crate::aws::Aws;
use crate::config::Config;
use crate::error::{ConfigError, Error};
use crate::moves;
use crate::observed::{LifeCycle, MountTarget, Noticed, Observed, Parameter, Subnet, When};
use crate::shard;
use crate::state::{self, State};
use efs_router::dir::count_files_at;
use efs_router::list::az_root;
use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};
use tracing::warn;

/// Shard directories counted at once: enough that over NFS the run takes about as long as its
/// largest shard; few enough for Lambda's limits on threads and open files.
const COUNTING_THREADS: usize = 64;

/// What was observed, and how long counting the files took: AWS and the state first, then
/// the files of every root a shard may have, all shards at once.
pub async fn observe(
    aws: &Aws,
    config: &Config,
    walk_until: Instant,
) -> Result<(Observed, Duration), Error> {
    let (file_system, mount_targets, parameter, stored_state, deployments, tasks) = tokio::try_join!(
        aws.efs.file_system(&config.file_system_id),
        aws.efs.mount_targets(&config.file_system_id),
        aws.ssm.read(&config.parameter_name),
        aws.ssm.read_state(&config.state_parameter_name),
        aws.ecs
            .primary_deployments(&config.cluster, &config.services),
        // Knowing the fleet is needed to move and delete, never to grow: a failure here holds
        // the moves (plan/clients.rs) and the run goes on.
        async {
            let live = aws
                .ecs
                .live_tasks(&config.cluster, &config.services, &config.client_families)
                .await;
            Ok::<_, Error>(live)
        },
    )?;
    let (tasks, tasks_unknown) = match tasks {
        Ok(tasks) => (tasks, None),
        Err(e) => {
            warn!(error = %e, "ECS's tasks could not be listed: files wait to move");
            (Vec::new(), Some(crate::error::chain(&e)))
        }
    };
    if file_system.state != LifeCycle::Available {
        return Err(Error::FileSystemNotAvailable {
            id: file_system.id,
            state: file_system.state.as_str().to_owned(),
        });
    }
    let vpc_id = vpc_of(aws, &mount_targets).await?;
    let (subnets, protected_azs) = subnets_of(aws, config, vpc_id.as_deref()).await?;
    let mut warnings = Vec::new();
    let state_stored = stored_state.is_some();
    let state = match stored_state {
        Some(state) => state,
        None => carried_over(config, state::now(), &mut warnings),
    };
    let parameter = list_since(aws, config, parameter, &state).await?;

    let (roots, draining_roots) = roots_to_count(parameter.as_ref(), &mount_targets, &state);
    let started = Instant::now();
    let counted = count(config, roots, draining_roots, walk_until).await?;
    for root in &counted.walk_cut_short {
        warnings.push(Noticed::DrainWalkCutShort { root: root.clone() });
    }
    let count_took = started.elapsed();
    let reports = read_reports(config).await?;
    warnings.extend(repaired(&reports));
    Ok((
        Observed {
            file_system,
            mount_targets,
            vpc_id,
            subnets,
            parameter,
            deployments,
            tasks,
            tasks_unknown,
            reports,
            files: counted.files,
            unreadable: counted.unreadable,
            tree_has_files: counted.tree_has_files,
            protected_azs,
            state,
            state_stored,
            warnings,
            now: When::now(),
        },
        count_took,
    ))
}

/// The `kind` of the log event of a list read older than the recorded publish.
pub const LIST_OLDER_THAN_PUBLISHED: &str = "list_older_than_published";

/// The list as new as the one the state records as published last: a read older than that
/// lagged SSM's write, and a run that moved files by it would break the fleet rule (nothing
/// moves until the fleet runs the list published last). Read again while it lags; the run
/// stops with [`Error::StaleParameter`] when it still does. A state read that lagged records
/// an older list, and the run's save before any change stops it ([`crate::plan`]).
async fn list_since(
    aws: &Aws,
    config: &Config,
    read: Option<Parameter>,
    state: &State,
) -> Result<Option<Parameter>, Error> {
    let Some(version) = state.published.and_then(|p| read.as_ref()?.lags(p)) else {
        return Ok(read);
    };
    warn!(parameter = %config.parameter_name, read = read.as_ref().map_or(0, |p| p.version), published = version,
          kind = LIST_OLDER_THAN_PUBLISHED, "the list read is older than the one the state records as published last: reading it again");
    aws.ssm.read_since(&config.parameter_name, version).await
}

/// What the reports' directory's repair is for an operator to know, if anything.
fn repaired(reports: &crate::reports::Reports) -> Option<Noticed> {
    match &reports.repaired {
        // Day one's prerequisite, done: nothing to warn of.
        Some(crate::reports::Repair::Made) => {
            tracing::info!("made /.efs-router-clients, mode 1777, for the routers' reports");
            None
        }
        Some(repair) => Some(Noticed::ReportsDirRepaired {
            repair: repair.clone(),
        }),
        None => None,
    }
}

/// The candidate subnets (`SUBNET_IDS`, else the VPC's), and the AZs of the protected ones.
async fn subnets_of(
    aws: &Aws,
    config: &Config,
    vpc_id: Option<&str>,
) -> Result<(Vec<Subnet>, BTreeSet<String>), Error> {
    let subnets = match (&config.subnet_ids, vpc_id) {
        (Some(ids), _) => aws.ec2.subnets_by_id(ids, "SUBNET_IDS").await?,
        (None, Some(vpc)) => aws.ec2.subnets_in_vpc(vpc).await?,
        (None, None) => {
            return Err(Error::Config(ConfigError {
                var: "SUBNET_IDS",
                problem: format!(
                    "required while file system {} has no mount target to take a VPC from",
                    config.file_system_id
                ),
            }))
        }
    };
    let protected_azs = if config.protected_subnet_ids.is_empty() {
        BTreeSet::new()
    } else {
        let subnets = aws
            .ec2
            .subnets_by_id(&config.protected_subnet_ids, "PROTECTED_SUBNET_IDS")
            .await?;
        subnets.into_iter().map(|s| s.az_id).collect()
    };
    Ok((subnets, protected_azs))
}

/// The VPC of the file system's mount targets, if it has any.
async fn vpc_of(aws: &Aws, mount_targets: &[MountTarget]) -> Result<Option<String>, Error> {
    let mut holding = mount_targets.iter().filter(|t| t.occupies_az());
    if let Some(vpc) = holding.clone().find_map(|t| t.vpc_id.clone()) {
        return Ok(Some(vpc));
    }
    // Older API responses carry no VpcId: take it from a target's subnet.
    let Some(t) = holding.next() else {
        return Ok(None);
    };
    let subnets = aws
        .ec2
        .subnets_by_id(
            std::slice::from_ref(&t.subnet_id),
            "the subnet of a mount target",
        )
        .await?;
    Ok(subnets.first().map(|s| s.vpc_id.clone()))
}

/// Every root a shard may have (`/`, those the list names, `/shards/<az-id>` of each target,
/// and those being drained), and those whose whole tree must be walked: the roots of drains
/// (each target's, all the shards a target gone by hand served, each shard's).
fn roots_to_count(
    parameter: Option<&Parameter>,
    mount_targets: &[MountTarget],
    state: &State,
) -> (BTreeSet<String>, BTreeSet<String>) {
    let mut roots: BTreeSet<String> = BTreeSet::from(["/".to_owned()]);
    if let Some(p) = parameter {
        roots.extend(p.list.shards().into_iter().map(|t| t.root));
    }
    let holding = mount_targets.iter().filter(|t| t.occupies_az());
    roots.extend(holding.map(|t| az_root(&t.az_id)));
    let mut draining_roots: BTreeSet<String> = BTreeSet::new();
    for (id, d) in &state.draining {
        draining_roots.insert(d.root.clone());
        let listed = parameter.and_then(|p| p.list.mount_targets.iter().find(|t| &t.id == id));
        if let Some(t) = listed.filter(|t| t.root == d.root) {
            draining_roots.extend(t.shard_roots());
        }
    }
    draining_roots.extend(state.draining_shards.keys().cloned());
    roots.extend(draining_roots.iter().cloned());
    (roots, draining_roots)
}

/// Counts the files of each root, and walks the trees of `draining_roots`. The shards are
/// counted at once (up to [`COUNTING_THREADS`] at a time): over NFS a shard's count is a chain
/// of READDIR round trips, so the run takes as long as its largest shard, not the sum. Results
/// are read in the order of the roots, so the error reported is the same as one by one. Each
/// directory is opened beneath the mount without following a link a task could plant.
async fn count(
    config: &Config,
    roots: BTreeSet<String>,
    draining_roots: BTreeSet<String>,
    walk_until: Instant,
) -> Result<Counted, Error> {
    let dirs: Vec<_> = roots
        .into_iter()
        .map(|r| (config.watch_path(&r), r))
        .collect();
    let config = config.clone();
    tokio::task::spawn_blocking(move || -> Result<Counted, Error> {
        let count = |path: &std::path::Path| -> std::io::Result<Option<u64>> {
            match shard::open_dir(&config, path, false) {
                Ok(fd) => count_files_at(&fd).map(Some),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
                Err(e) => Err(e),
            }
        };
        // A bounded pool: hundreds of shards must not take as many threads and descriptors
        // (Lambda allows 1,024 of each).
        let counted = efs_router::pool::map_all(&dirs, COUNTING_THREADS, |(path, _)| count(path));
        let mut out = Counted::default();
        for ((path, root), counted) in dirs.into_iter().zip(counted) {
            match counted {
                Ok(Some(n)) => {
                    out.files.insert(root, n);
                }
                Ok(None) if root == "/" => return Err(Error::MissingWatchDir { path }),
                Ok(None) => {}
                Err(source) if root == "/" => return Err(Error::ReadDir { path, source }),
                // One bad shard directory stops only itself.
                Err(e) => {
                    out.unreadable
                        .insert(root, format!("cannot read {}: {e}", path.display()));
                }
            }
        }
        // Emptiness of a draining shard is decided from its whole tree, nested files included,
        // walked until `walk_until`: a tree too large to walk in time holds its drain only.
        for root in draining_roots {
            let path = config.watch_path(&root);
            match moves::holds_files(&config, &path, walk_until) {
                Ok(holds) => {
                    if holds == moves::Holds::Unknown {
                        out.walk_cut_short.push(root.clone());
                    }
                    out.tree_has_files
                        .insert(root, holds != moves::Holds::Nothing);
                }
                Err(e) => {
                    out.unreadable
                        .insert(root, format!("cannot walk {}: {e}", path.display()));
                }
            }
        }
        Ok(out)
    })
    .await
    .map_err(|source| Error::TaskFailed {
        task: "counting",
        source,
    })?
}

/// The clients' reports, read after the files: a client that reports the list it loaded
/// while they were counted is seen.
async fn read_reports(config: &Config) -> Result<crate::reports::Reports, Error> {
    let mount = config.mount_path.clone();
    tokio::task::spawn_blocking(move || crate::reports::read(&mount, When::now()))
        .await
        .map_err(|source| Error::TaskFailed {
            task: "reading client reports",
            source,
        })
}

#[derive(Default)]
struct Counted {
    files: BTreeMap<String, u64>,
    unreadable: BTreeMap<String, String>,
    tree_has_files: BTreeMap<String, bool>,
    /// Draining roots whose walk met its time before it could tell.
    walk_cut_short: Vec<String>,
}

/// The state when its parameter does not exist yet: the timers and refused subnets of the old
/// state file on the file system, read once and safely, bounded by now. Its AZs are not
/// carried over: a file any task could have written never decides what the function deletes
/// (an operator adds targets the function created before to `created` by hand).
fn carried_over(config: &Config, now: u64, warnings: &mut Vec<Noticed>) -> State {
    let file = state::old_file_path(&config.mount_path);
    match state::read_old_state_file(&config.mount_path) {
        Ok(None) => State::default(),
        Ok(Some(old)) => {
            let not_after_now = |t: Option<u64>| t.filter(|t| *t <= now);
            let most = now + config.subnet_exclusion.as_secs();
            let mut s = State {
                below_since: not_after_now(old.below_since),
                last_scale_out: not_after_now(old.last_scale_out),
                ..State::default()
            };
            for (key, mut e) in old.excluded {
                e.until = e.until.min(most);
                s.excluded.insert(key, e);
            }
            warnings.push(Noticed::OldStateCarriedOver {
                file: file.display().to_string(),
                parameter: config.state_parameter_name.clone(),
                created_azs: old.created_azs.iter().cloned().collect(),
            });
            s
        }
        Err(problem) => {
            warnings.push(Noticed::OldStateFile { problem });
            State::default()
        }
    }
}
