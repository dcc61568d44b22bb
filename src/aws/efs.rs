//! EFS: mount targets of one file system.

use super::sdk_error;
use crate::error::Error;
use crate::observed::{LifeCycle, MountTarget};
use aws_sdk_efs::types::{LifeCycleState, MountTargetDescription};

#[derive(Clone, Debug)]
pub struct Efs {
    client: aws_sdk_efs::Client,
}

impl Efs {
    pub fn new(client: aws_sdk_efs::Client) -> Self {
        Efs { client }
    }

    /// Every mount target of the file system, all pages.
    pub async fn mount_targets(&self, file_system_id: &str) -> Result<Vec<MountTarget>, Error> {
        const OP: &str = "DescribeMountTargets";
        let pages: Result<Vec<MountTargetDescription>, _> = self
            .client
            .describe_mount_targets()
            .file_system_id(file_system_id)
            .into_paginator()
            .items()
            .send()
            .collect()
            .await;
        match pages {
            Ok(items) => Ok(items.iter().map(mount_target).collect()),
            Err(err)
                if err
                    .as_service_error()
                    .is_some_and(|e| e.is_file_system_not_found()) =>
            {
                Err(Error::NotFound {
                    operation: OP,
                    what: format!("file system {file_system_id} (EFS_FILE_SYSTEM_ID)"),
                    source: Box::new(err),
                })
            }
            Err(err) => Err(sdk_error(OP, err)),
        }
    }

    /// One mount target, or `None` once it is gone.
    pub async fn mount_target(&self, mount_target_id: &str) -> Result<Option<MountTarget>, Error> {
        match self
            .client
            .describe_mount_targets()
            .mount_target_id(mount_target_id)
            .send()
            .await
        {
            Ok(out) => Ok(out.mount_targets().first().map(mount_target)),
            Err(err)
                if err
                    .as_service_error()
                    .is_some_and(|e| e.is_mount_target_not_found()) =>
            {
                Ok(None)
            }
            Err(err) => Err(sdk_error("DescribeMountTargets", err)),
        }
    }

    pub async fn security_groups(&self, mount_target_id: &str) -> Result<Vec<String>, Error> {
        let out = self
            .client
            .describe_mount_target_security_groups()
            .mount_target_id(mount_target_id)
            .send()
            .await
            .map_err(|e| sdk_error("DescribeMountTargetSecurityGroups", e))?;
        Ok(out.security_groups().to_vec())
    }

    /// `security_groups: None` lets AWS apply the VPC's default group.
    pub async fn create_mount_target(
        &self,
        file_system_id: &str,
        subnet_id: &str,
        security_groups: Option<Vec<String>>,
    ) -> Result<MountTarget, Error> {
        const OP: &str = "CreateMountTarget";
        let out = self
            .client
            .create_mount_target()
            .file_system_id(file_system_id)
            .subnet_id(subnet_id)
            .set_security_groups(security_groups)
            .send()
            .await;
        match out {
            Ok(out) => Ok(MountTarget {
                id: out.mount_target_id().to_owned(),
                subnet_id: out.subnet_id().to_owned(),
                vpc_id: out.vpc_id().map(str::to_owned),
                az: out.availability_zone_name().unwrap_or_default().to_owned(),
                az_id: out.availability_zone_id().unwrap_or_default().to_owned(),
                ip: out.ip_address().map(str::to_owned),
                state: life_cycle(out.life_cycle_state()),
            }),
            Err(err)
                if err
                    .as_service_error()
                    .is_some_and(|e| e.is_mount_target_conflict()) =>
            {
                Err(Error::MountTargetConflict {
                    operation: OP,
                    source: Box::new(err),
                })
            }
            Err(err) => Err(sdk_error(OP, err)),
        }
    }
}

impl Efs {
    /// Deleting one that is already gone is not an error: a run that died after asking
    /// is finished by the next.
    pub async fn delete_mount_target(&self, mount_target_id: &str) -> Result<(), Error> {
        match self
            .client
            .delete_mount_target()
            .mount_target_id(mount_target_id)
            .send()
            .await
        {
            Ok(_) => Ok(()),
            Err(err)
                if err
                    .as_service_error()
                    .is_some_and(|e| e.is_mount_target_not_found()) =>
            {
                Ok(())
            }
            Err(err) => Err(sdk_error("DeleteMountTarget", err)),
        }
    }
}

fn mount_target(d: &MountTargetDescription) -> MountTarget {
    MountTarget {
        id: d.mount_target_id().to_owned(),
        subnet_id: d.subnet_id().to_owned(),
        vpc_id: d.vpc_id().map(str::to_owned),
        az: d.availability_zone_name().unwrap_or_default().to_owned(),
        az_id: d.availability_zone_id().unwrap_or_default().to_owned(),
        ip: d.ip_address().map(str::to_owned),
        state: life_cycle(d.life_cycle_state()),
    }
}

fn life_cycle(state: &LifeCycleState) -> LifeCycle {
    match state {
        LifeCycleState::Creating => LifeCycle::Creating,
        LifeCycleState::Available => LifeCycle::Available,
        LifeCycleState::Updating => LifeCycle::Updating,
        LifeCycleState::Deleting => LifeCycle::Deleting,
        LifeCycleState::Deleted => LifeCycle::Deleted,
        LifeCycleState::Error => LifeCycle::Error,
        other => LifeCycle::Unknown(other.as_str().to_owned()),
    }
}
