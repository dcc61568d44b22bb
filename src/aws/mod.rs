//! One small module per AWS service. Each returns our own types and maps the SDK's typed
//! errors to `crate::error::Error`; no other module imports `aws_sdk_*`.

/// Every AWS API action the function calls, as IAM names it. The template's policy must
/// allow each of these (a test checks it), and nothing more.
pub const CALLED_ACTIONS: &[&str] = &[
    "elasticfilesystem:DescribeMountTargets",
    "elasticfilesystem:DescribeMountTargetSecurityGroups",
    "elasticfilesystem:CreateMountTarget",
    "elasticfilesystem:DeleteMountTarget",
    "ec2:DescribeSubnets",
    "ssm:GetParameter",
    "ssm:PutParameter",
    "ecs:DescribeServices",
    "ecs:UpdateService",
];

pub mod ec2;
pub mod ecs;
pub mod efs;
pub mod ssm;

use crate::error::Error;
use aws_sdk_efs::error::{DisplayErrorContext, ProvideErrorMetadata, SdkError};
use std::time::SystemTime;

/// The service clients, built once per process from one SDK configuration.
#[derive(Clone, Debug)]
pub struct Clients {
    pub efs: efs::Efs,
    pub ec2: ec2::Ec2,
    pub ssm: ssm::Ssm,
    pub ecs: ecs::Ecs,
}

impl Clients {
    /// From the environment: region, credentials and `AWS_ENDPOINT_URL` (a local emulator).
    pub async fn from_env() -> Self {
        let config = aws_config::load_defaults(aws_config::BehaviorVersion::latest()).await;
        Clients {
            efs: efs::Efs::new(aws_sdk_efs::Client::new(&config)),
            ec2: ec2::Ec2::new(aws_sdk_ec2::Client::new(&config)),
            ssm: ssm::Ssm::new(aws_sdk_ssm::Client::new(&config)),
            ecs: ecs::Ecs::new(aws_sdk_ecs::Client::new(&config)),
        }
    }
}

const THROTTLING_CODES: &[&str] = &[
    "Throttling",
    "ThrottlingException",
    "ThrottledException",
    "TooManyRequestsException",
    "RequestLimitExceeded",
    "RequestThrottled",
    "RequestThrottledException",
];

/// Maps what no typed variant covers: throttling that outlived the SDK's retries, or any
/// other failure, keeping the SDK error as the source.
pub(crate) fn sdk_error<E, R>(operation: &'static str, err: SdkError<E, R>) -> Error
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
    R: std::fmt::Debug + Send + Sync + 'static,
{
    let code = err.code().unwrap_or_default().to_owned();
    let message = DisplayErrorContext(&err).to_string();
    if THROTTLING_CODES.contains(&code.as_str()) {
        Error::Throttled {
            operation,
            source: Box::new(err),
        }
    } else {
        Error::Aws {
            operation,
            message,
            source: Box::new(err),
        }
    }
}

pub(crate) fn time(t: Option<&aws_smithy_types::DateTime>) -> Option<SystemTime> {
    t.and_then(|t| SystemTime::try_from(*t).ok())
}
