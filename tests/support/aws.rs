//! SDK clients pointed at an emulator endpoint: region us-east-1, dummy static keys.

use aws_config::{BehaviorVersion, Region};

/// The region every test world lives in.
pub const REGION: &str = "us-east-1";

/// One client per service the function uses, all on one endpoint (moto answers them all).
#[derive(Clone)]
pub struct Aws {
    pub efs: aws_sdk_efs::Client,
    pub ec2: aws_sdk_ec2::Client,
    pub ssm: aws_sdk_ssm::Client,
    pub ecs: aws_sdk_ecs::Client,
}

impl Aws {
    /// Clients for `endpoint` (e.g. `Moto::endpoint()`), as `AWS_ENDPOINT_URL` would set them up.
    pub async fn at(endpoint: &str) -> Aws {
        let config = aws_config::defaults(BehaviorVersion::latest())
            .region(Region::new(REGION))
            .endpoint_url(endpoint)
            .test_credentials()
            .load()
            .await;
        Aws {
            efs: aws_sdk_efs::Client::new(&config),
            ec2: aws_sdk_ec2::Client::new(&config),
            ssm: aws_sdk_ssm::Client::new(&config),
            ecs: aws_sdk_ecs::Client::new(&config),
        }
    }
}
