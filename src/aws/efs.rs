//! EFS: mount targets of one file system.

use super::{missing_or_sdk_error, sdk_error};
use crate::error::Error;
use crate::observed::{FileSystem, LifeCycle, MountTarget};
use aws_sdk_efs::error::ProvideErrorMetadata;
use aws_sdk_efs::operation::create_mount_target::CreateMountTargetError;
use aws_sdk_efs::types::{LifeCycleState, MountTargetDescription};

#[derive(Clone, Debug)]
pub struct Efs {
    client: aws_sdk_efs::Client,
}

impl Efs {
    pub fn new(client: aws_sdk_efs::Client) -> Self {
        Efs { client }
    }

    /// The file system: its state, and its AZ when it is One Zone.
    pub async fn file_system(&self, file_system_id: &str) -> Result<FileSystem, Error> {
        const OP: &str = "DescribeFileSystems";
        let out = self
            .client
            .describe_file_systems()
            .file_system_id(file_system_id)
            .send()
            .await
            .map_err(|err| {
                missing_or_sdk_error(
                    OP,
                    err,
                    |e| e.is_file_system_not_found(),
                    || format!("file system {file_system_id} (EFS_FILE_SYSTEM_ID)"),
                )
            })?;
        let Some(d) = out.file_systems().first() else {
            return Err(Error::NotFound {
                operation: OP,
                what: format!("file system {file_system_id} (EFS_FILE_SYSTEM_ID)"),
                source: "DescribeFileSystems answered no file system".into(),
            });
        };
        Ok(FileSystem {
            id: d.file_system_id().to_owned(),
            state: life_cycle(d.life_cycle_state()),
            one_zone_az: d.availability_zone_name().map(str::to_owned),
            one_zone_az_id: d.availability_zone_id().map(str::to_owned),
        })
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
        let items = pages.map_err(|err| {
            missing_or_sdk_error(
                OP,
                err,
                |e| e.is_file_system_not_found(),
                || format!("file system {file_system_id} (EFS_FILE_SYSTEM_ID)"),
            )
        })?;
        Ok(items.iter().map(mount_target).collect())
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

    /// `security_groups: None` lets AWS apply the VPC's default group. What AWS refuses is
    /// sorted by who can mend it: the subnet or AZ (`SubnetRefused`: try another), the
    /// settings, quotas or IAM (`Refused`: an operator must), another run (`MountTargetConflict`).
    pub async fn create_mount_target(
        &self,
        file_system_id: &str,
        subnet_id: &str,
        security_groups: Option<Vec<String>>,
    ) -> Result<MountTarget, Error> {
        let groups_given = security_groups.is_some();
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
            Err(err) => Err(create_error(subnet_id, groups_given, err)),
        }
    }
}

fn create_error(
    subnet_id: &str,
    groups_given: bool,
    err: aws_sdk_efs::error::SdkError<
        CreateMountTargetError,
        aws_sdk_efs::config::http::HttpResponse,
    >,
) -> Error {
    const OP: &str = "CreateMountTarget";
    let Some(service) = err.as_service_error() else {
        return sdk_error(OP, err);
    };
    let code = service.code().unwrap_or_default().to_owned();
    let message = service.message().unwrap_or_default().to_owned();
    use CreateMountTargetError as E;
    let refused = |whole_az: bool, err| Error::SubnetRefused {
        subnet_id: subnet_id.to_owned(),
        code: code.clone(),
        message: message.clone(),
        whole_az,
        source: Box::new(err),
    };
    let operator = |fix: &str, err| Error::Refused {
        operation: OP,
        code: code.clone(),
        message: message.clone(),
        fix: fix.to_owned(),
        source: Box::new(err),
    };
    let groups = if groups_given {
        "SECURITY_GROUP_IDS, or the security groups of the mount target they are copied from"
    } else {
        "the VPC's default security group (set SECURITY_GROUP_IDS)"
    };
    match service {
        E::MountTargetConflict(_) => Error::MountTargetConflict {
            operation: OP,
            source: Box::new(err),
        },
        // About this subnet: another subnet may do.
        E::NoFreeAddressesInSubnet(_) | E::SubnetNotFound(_) | E::IpAddressInUse(_) => {
            refused(false, err)
        }
        // About the subnet's AZ (a Local Zone, an Outpost, a One Zone file system's other AZs).
        E::UnsupportedAvailabilityZone(_) | E::AvailabilityZonesMismatch(_) => refused(true, err),
        // The account's ENIs per Region: every subnet would be refused alike.
        E::NetworkInterfaceLimitExceeded(_) => operator(
            "raise the account's quota of network interfaces per Region (Service Quotas, \
             VPC), or delete unused ones",
            err,
        ),
        E::SecurityGroupLimitExceeded(_) | E::SecurityGroupNotFound(_) => operator(groups, err),
        _ => sdk_error(OP, err),
    }
}

impl Efs {
    /// Deleting one that is already gone, or going, is not an error: a run that died after
    /// asking is finished by the next, and a delete the SDK retried after a lost answer finds
    /// the target gone (`MountTargetNotFound`) or still `deleting`. AWS answers the latter
    /// `IncorrectMountTargetState`, which DeleteMountTarget's model does not list: the target
    /// is described to tell "going" from a state that refuses a delete.
    pub async fn delete_mount_target(&self, mount_target_id: &str) -> Result<(), Error> {
        const OP: &str = "DeleteMountTarget";
        let err = match self
            .client
            .delete_mount_target()
            .mount_target_id(mount_target_id)
            .send()
            .await
        {
            Ok(_) => return Ok(()),
            Err(err) => err,
        };
        let service = err.as_service_error();
        if service.is_some_and(|e| e.is_mount_target_not_found()) {
            return Ok(());
        }
        if service.is_some_and(|e| e.code() == Some("IncorrectMountTargetState")) {
            let now = self.mount_target(mount_target_id).await?;
            if now.is_none_or(|t| matches!(t.state, LifeCycle::Deleting | LifeCycle::Deleted)) {
                return Ok(());
            }
        }
        Err(sdk_error(OP, err))
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

#[cfg(test)]
mod tests {
    use super::*;
    use aws_sdk_efs::error::ErrorMetadata;
    use aws_sdk_efs::operation::create_mount_target::{
        CreateMountTargetError, CreateMountTargetOutput,
    };
    use aws_sdk_efs::operation::delete_mount_target::DeleteMountTargetError;
    use aws_sdk_efs::operation::describe_mount_targets::{
        DescribeMountTargetsError, DescribeMountTargetsOutput,
    };
    use aws_sdk_efs::types::error::{FileSystemNotFound, MountTargetConflict, MountTargetNotFound};
    use aws_sdk_efs::Client;
    use aws_smithy_mocks::{mock, mock_client};

    #[tokio::test]
    async fn a_conflict_is_its_own_error() {
        let rule = mock!(Client::create_mount_target).then_error(|| {
            CreateMountTargetError::MountTargetConflict(
                MountTargetConflict::builder()
                    .error_code("MountTargetConflict")
                    .message("mount target already exists in this AZ")
                    .build()
                    .unwrap(),
            )
        });
        let efs = Efs::new(mock_client!(aws_sdk_efs, [&rule]));
        let err = efs
            .create_mount_target("fs-1", "subnet-b", None)
            .await
            .unwrap_err();
        assert!(matches!(err, Error::MountTargetConflict { .. }), "{err:?}");
    }

    /// An EFS whose CreateMountTarget fails with this error code and message.
    async fn create_failing_with(code: &'static str, message: &'static str) -> Error {
        let rule = mock!(Client::create_mount_target).then_error(move || {
            CreateMountTargetError::generic(
                ErrorMetadata::builder().code(code).message(message).build(),
            )
        });
        let efs = Efs::new(mock_client!(aws_sdk_efs, [&rule]));
        efs.create_mount_target("fs-1", "subnet-b", None)
            .await
            .unwrap_err()
    }

    #[tokio::test]
    async fn throttling_past_the_retries_is_throttled_naming_the_operation() {
        let err = create_failing_with("ThrottlingException", "Rate exceeded").await;
        assert!(
            matches!(
                err,
                Error::Throttled {
                    operation: "CreateMountTarget",
                    ..
                }
            ),
            "{err:?}"
        );
    }

    /// An EFS whose CreateMountTarget fails with this typed error.
    async fn create_refused(error: fn() -> CreateMountTargetError, groups: bool) -> Error {
        let rule = mock!(Client::create_mount_target).then_error(error);
        let efs = Efs::new(mock_client!(aws_sdk_efs, [&rule]));
        efs.create_mount_target("fs-1", "subnet-b", groups.then(|| vec!["sg-1".to_owned()]))
            .await
            .unwrap_err()
    }

    #[tokio::test]
    async fn refusals_are_sorted_by_who_can_mend_them() {
        use aws_sdk_efs::types::error::{
            AvailabilityZonesMismatch, NetworkInterfaceLimitExceeded, NoFreeAddressesInSubnet,
            SecurityGroupNotFound,
        };
        let full = || {
            CreateMountTargetError::NoFreeAddressesInSubnet(
                NoFreeAddressesInSubnet::builder()
                    .error_code("NoFreeAddressesInSubnet")
                    .message("subnet is full")
                    // What the SDK's deserializer fills in from the response.
                    .meta(
                        ErrorMetadata::builder()
                            .code("NoFreeAddressesInSubnet")
                            .message("subnet is full")
                            .build(),
                    )
                    .build()
                    .unwrap(),
            )
        };
        match create_refused(full, false).await {
            Error::SubnetRefused {
                subnet_id,
                code,
                message,
                whole_az: false,
                ..
            } => assert_eq!(
                (subnet_id.as_str(), code.as_str(), message.as_str()),
                ("subnet-b", "NoFreeAddressesInSubnet", "subnet is full")
            ),
            other => panic!("{other:?}"),
        }
        let one_zone = || {
            CreateMountTargetError::AvailabilityZonesMismatch(
                AvailabilityZonesMismatch::builder()
                    .error_code("AvailabilityZonesMismatch")
                    .build(),
            )
        };
        let err = create_refused(one_zone, false).await;
        assert!(
            matches!(err, Error::SubnetRefused { whole_az: true, .. }),
            "{err:?}"
        );
        let enis = || {
            CreateMountTargetError::NetworkInterfaceLimitExceeded(
                NetworkInterfaceLimitExceeded::builder()
                    .error_code("NetworkInterfaceLimitExceeded")
                    .build()
                    .unwrap(),
            )
        };
        match create_refused(enis, false).await {
            Error::Refused { fix, .. } => assert!(fix.contains("quota"), "{fix}"),
            other => panic!("{other:?}"),
        }
        let no_group = || {
            CreateMountTargetError::SecurityGroupNotFound(
                SecurityGroupNotFound::builder()
                    .error_code("SecurityGroupNotFound")
                    .build()
                    .unwrap(),
            )
        };
        match create_refused(no_group, true).await {
            Error::Refused { fix, .. } => assert!(fix.contains("SECURITY_GROUP_IDS"), "{fix}"),
            other => panic!("{other:?}"),
        }
    }

    #[tokio::test]
    async fn access_denied_names_the_role() {
        match create_failing_with("AccessDeniedException", "not authorized").await {
            Error::Refused { code, fix, .. } => {
                assert_eq!(code, "AccessDeniedException");
                assert!(fix.contains("IAM role"), "{fix}");
            }
            other => panic!("{other:?}"),
        }
    }

    #[tokio::test]
    async fn other_errors_keep_the_api_message() {
        match create_failing_with("InternalServerError", "something broke").await {
            Error::Aws {
                operation, message, ..
            } => {
                assert_eq!(operation, "CreateMountTarget");
                assert!(message.contains("something broke"), "{message}");
            }
            other => panic!("{other:?}"),
        }
    }

    #[tokio::test]
    async fn a_missing_file_system_names_the_variable() {
        let rule = mock!(Client::describe_mount_targets).then_error(|| {
            DescribeMountTargetsError::FileSystemNotFound(
                FileSystemNotFound::builder()
                    .error_code("FileSystemNotFound")
                    .build()
                    .unwrap(),
            )
        });
        let efs = Efs::new(mock_client!(aws_sdk_efs, [&rule]));
        let err = efs.mount_targets("fs-404").await.unwrap_err().to_string();
        assert!(
            err.contains("fs-404") && err.contains("EFS_FILE_SYSTEM_ID"),
            "{err}"
        );
    }

    #[tokio::test]
    async fn a_target_already_gone_is_not_an_error() {
        let not_found = || {
            MountTargetNotFound::builder()
                .error_code("MountTargetNotFound")
                .build()
                .unwrap()
        };
        let describe = mock!(Client::describe_mount_targets)
            .then_error(move || DescribeMountTargetsError::MountTargetNotFound(not_found()));
        let delete = mock!(Client::delete_mount_target)
            .then_error(move || DeleteMountTargetError::MountTargetNotFound(not_found()));
        let efs = Efs::new(mock_client!(aws_sdk_efs, [&describe, &delete]));
        assert_eq!(efs.mount_target("fsmt-gone").await.unwrap(), None);
        efs.delete_mount_target("fsmt-gone").await.unwrap();
    }

    /// A delete refused with `IncorrectMountTargetState`, then a describe showing `state`.
    async fn delete_refused_while(state: LifeCycleState) -> Result<(), Error> {
        let refused = mock!(Client::delete_mount_target).then_error(|| {
            DeleteMountTargetError::generic(
                ErrorMetadata::builder()
                    .code("IncorrectMountTargetState")
                    .message("mount target is deleting")
                    .build(),
            )
        });
        let described = mock!(Client::describe_mount_targets).then_output(move || {
            DescribeMountTargetsOutput::builder()
                .mount_targets(
                    MountTargetDescription::builder()
                        .mount_target_id("fsmt-c")
                        .file_system_id("fs-1")
                        .subnet_id("subnet-c")
                        .life_cycle_state(state.clone())
                        .build()
                        .unwrap(),
                )
                .build()
        });
        let efs = Efs::new(mock_client!(aws_sdk_efs, [&refused, &described]));
        efs.delete_mount_target("fsmt-c").await
    }

    #[tokio::test]
    async fn a_delete_refused_while_deleting_is_done_and_otherwise_an_error() {
        delete_refused_while(LifeCycleState::Deleting)
            .await
            .unwrap();
        let err = delete_refused_while(LifeCycleState::Creating)
            .await
            .unwrap_err();
        assert!(
            matches!(&err, Error::Aws { operation: "DeleteMountTarget", code, .. } if code == "IncorrectMountTargetState"),
            "{err:?}"
        );
    }

    #[tokio::test]
    async fn a_created_target_becomes_our_type() {
        let rule = mock!(Client::create_mount_target).then_output(|| {
            CreateMountTargetOutput::builder()
                .mount_target_id("fsmt-new")
                .file_system_id("fs-1")
                .subnet_id("subnet-b")
                .life_cycle_state(LifeCycleState::Creating)
                .ip_address("10.0.2.7")
                .availability_zone_id("use1-az4")
                .availability_zone_name("us-east-1b")
                .build()
                .unwrap()
        });
        let efs = Efs::new(mock_client!(aws_sdk_efs, [&rule]));
        let t = efs
            .create_mount_target("fs-1", "subnet-b", Some(vec!["sg-1".into()]))
            .await
            .unwrap();
        assert_eq!(
            (t.id.as_str(), t.az_id.as_str(), t.ip.as_deref(), t.state),
            (
                "fsmt-new",
                "use1-az4",
                Some("10.0.2.7"),
                LifeCycle::Creating
            )
        );
    }
}
