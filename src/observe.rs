//! Observe everything a plan needs. Reads only; any error here means nothing was changed.

use crate::aws::Clients;
use crate::config::Config;
use crate::error::{ConfigError, Error};
use crate::observed::{LifeCycle, Observed};
use crate::scale_state;
use crate::shard::root_for_az;
use efs_router::dir::count_files;
use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant, SystemTime};

/// What was observed, and how long counting the files took.
pub async fn observe(clients: &Clients, config: &Config) -> Result<(Observed, Duration), Error> {
    let (file_system, mount_targets, parameter, deployments) = tokio::try_join!(
        clients.efs.file_system(&config.file_system_id),
        clients.efs.mount_targets(&config.file_system_id),
        clients.ssm.read(&config.parameter_name),
        clients
            .ecs
            .primary_deployments(&config.cluster, &config.services),
    )?;
    if file_system.state != LifeCycle::Available {
        return Err(Error::FileSystemNotAvailable {
            id: file_system.id,
            state: file_system.state.as_str().to_owned(),
        });
    }

    let holding: Vec<_> = mount_targets.iter().filter(|t| t.occupies_az()).collect();
    let vpc_id = match holding.iter().find_map(|t| t.vpc_id.clone()) {
        Some(vpc) => Some(vpc),
        // Older API responses carry no VpcId: take it from a target's subnet.
        None => match holding.first() {
            Some(t) => clients
                .ec2
                .subnets_by_id(
                    std::slice::from_ref(&t.subnet_id),
                    "the subnet of a mount target",
                )
                .await?
                .first()
                .map(|s| s.vpc_id.clone()),
            None => None,
        },
    };
    let subnets = match (&config.subnet_ids, &vpc_id) {
        (Some(ids), _) => clients.ec2.subnets_by_id(ids, "SUBNET_IDS").await?,
        (None, Some(vpc)) => clients.ec2.subnets_in_vpc(vpc).await?,
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
        let subnets = clients
            .ec2
            .subnets_by_id(&config.protected_subnet_ids, "PROTECTED_SUBNET_IDS")
            .await?;
        subnets.into_iter().map(|s| s.az_id).collect()
    };
    let scale_state = scale_state::load(&config.mount_path)?;

    // Every root a shard may have: `/`, those the list names, and `/shards/<az-id>` of each target.
    let mut roots: BTreeSet<String> = BTreeSet::from(["/".to_owned()]);
    if let Some(p) = &parameter {
        roots.extend(p.list.mount_targets.iter().map(|t| t.root.clone()));
    }
    roots.extend(holding.iter().map(|t| root_for_az(&t.az_id)));
    let started = Instant::now();
    let dirs: Vec<_> = roots
        .into_iter()
        .map(|r| (config.watch_path(&r), r))
        .collect();
    // The shards are counted at once, one thread each: over NFS a shard's count is a chain of
    // READDIR round trips, so the run takes as long as its largest shard, not the sum.
    // Results are read in the order of `dirs`, so the error reported is the same as one by one.
    let files = tokio::task::spawn_blocking(move || -> Result<BTreeMap<String, u64>, Error> {
        let counted: Vec<_> = std::thread::scope(|s| {
            let counting: Vec<_> = dirs
                .iter()
                .map(|(path, _)| s.spawn(move || count_files(path)))
                .collect();
            counting
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
                .collect()
        });
        let mut files = BTreeMap::new();
        for ((path, root), counted) in dirs.into_iter().zip(counted) {
            match counted {
                Ok(Some(n)) => {
                    files.insert(root, n);
                }
                Ok(None) if root == "/" => return Err(Error::MissingWatchDir { path }),
                Ok(None) => {}
                Err(source) => return Err(Error::ReadDir { path, source }),
            }
        }
        Ok(files)
    })
    .await
    .map_err(|e| Error::Inconsistent(format!("counting task failed: {e}")))??;
    let count_took = started.elapsed();

    Ok((
        Observed {
            file_system,
            mount_targets,
            vpc_id,
            subnets,
            parameter,
            deployments,
            files,
            protected_azs,
            scale_state,
            now: SystemTime::now()
                .duration_since(SystemTime::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
        },
        count_took,
    ))
}
