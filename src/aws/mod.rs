//! One small module per AWS service. Each returns our own types and maps the SDK's typed
//! errors to `crate::error::Error`; no other module imports `aws_sdk_*`.

/// Every AWS API action the function calls, as IAM names it. The template's policy must
/// allow each of these (a test checks it), and nothing more.
pub const CALLED_ACTIONS: &[&str] = &[
    "elasticfilesystem:DescribeFileSystems",
    "elasticfilesystem:DescribeMountTargets",
    "elasticfilesystem:DescribeMountTargetSecurityGroups",
    "elasticfilesystem:CreateMountTarget",
    "elasticfilesystem:DeleteMountTarget",
    "ec2:DescribeSubnets",
    "ssm:GetParameter",
    "ssm:PutParameter",
    "ecs:DescribeServices",
    "ecs:ListTasks",
    "ecs:UpdateService",
    "ecs:ListTasks",
    "ecs:DescribeTasks",
];

pub mod ec2;
pub mod ecs;
pub mod efs;
pub mod ssm;

use crate::config::ApiTimeouts;
use crate::error::Error;
use crate::observed::When;
use aws_config::timeout::TimeoutConfig;
use aws_runtime::retries::classifiers::THROTTLING_ERRORS;
use aws_sdk_efs::error::{ProvideErrorMetadata, SdkError};
use std::time::{Duration, SystemTime};

/// The AWS services' SDK clients, built once per process from one SDK configuration. (Not
/// the routers, which the plan calls clients.)
#[derive(Clone, Debug)]
pub struct Aws {
    pub efs: efs::Efs,
    pub ec2: ec2::Ec2,
    pub ssm: ssm::Ssm,
    pub ecs: ecs::Ecs,
}

impl Aws {
    /// From the environment: region, credentials and `AWS_ENDPOINT_URL` (a local emulator),
    /// with time limits on every call (the SDK's defaults limit only connecting).
    pub async fn from_env(timeouts: ApiTimeouts) -> Self {
        let config = aws_config::defaults(aws_config::BehaviorVersion::latest())
            .timeout_config(
                TimeoutConfig::builder()
                    .connect_timeout(Duration::from_millis(3100))
                    .operation_attempt_timeout(timeouts.attempt)
                    .operation_timeout(timeouts.call)
                    .build(),
            )
            .load()
            .await;
        Aws {
            efs: efs::Efs::new(aws_sdk_efs::Client::new(&config)),
            ec2: ec2::Ec2::new(aws_sdk_ec2::Client::new(&config)),
            ssm: ssm::Ssm::new(aws_sdk_ssm::Client::new(&config)),
            ecs: ecs::Ecs::new(aws_sdk_ecs::Client::new(&config)),
        }
    }
}

/// Maps what no typed variant covers: a call that ran out of time, throttling that outlived
/// the SDK's retries (the codes the SDK's own retry classifier treats as throttling), access
/// denied, or any other failure, keeping the SDK error as the source.
pub(crate) fn sdk_error<E, R>(operation: &'static str, err: SdkError<E, R>) -> Error
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    R: std::fmt::Debug + Send + Sync + 'static,
{
    let code = err.code().unwrap_or_default().to_owned();
    let message = err.message().unwrap_or_default().to_owned();
    if matches!(err, SdkError::TimeoutError(_)) {
        Error::TimedOut {
            operation,
            source: Box::new(err),
        }
    } else if code.starts_with("AccessDenied") || code == "UnauthorizedOperation" {
        Error::Refused {
            operation,
            message,
            code,
            fix: "allow it in the function's IAM role (docs/operations.md, IAM)".into(),
            source: Box::new(err),
        }
    } else if THROTTLING_ERRORS.contains(&code.as_str()) {
        Error::Throttled {
            operation,
            source: Box::new(err),
        }
    } else {
        Error::Aws {
            operation,
            code,
            message,
            source: Box::new(err),
        }
    }
}

/// `NotFound` naming `what` (the resource, and the setting that names it) when `missing`
/// recognises the service's error as "no such resource", else as [`sdk_error`] maps it.
pub(crate) fn missing_or_sdk_error<E, R>(
    operation: &'static str,
    err: SdkError<E, R>,
    missing: impl FnOnce(&E) -> bool,
    what: impl FnOnce() -> String,
) -> Error
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    R: std::fmt::Debug + Send + Sync + 'static,
{
    if err.as_service_error().is_some_and(missing) {
        Error::NotFound {
            operation,
            what: what(),
            source: Box::new(err),
        }
    } else {
        sdk_error(operation, err)
    }
}

pub(crate) fn time(t: Option<&aws_smithy_types::DateTime>) -> Option<When> {
    t.and_then(|t| SystemTime::try_from(*t).ok())
        .and_then(When::from_system)
}
