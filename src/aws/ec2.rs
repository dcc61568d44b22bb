//! EC2: the subnets a mount target may go in, with their VPC and AZ.

use super::{missing_or_sdk_error, sdk_error};
use crate::error::Error;
use crate::observed::Subnet;
use aws_sdk_ec2::types::Filter;

#[derive(Clone, Debug)]
pub struct Ec2 {
    client: aws_sdk_ec2::Client,
}

impl Ec2 {
    pub fn new(client: aws_sdk_ec2::Client) -> Self {
        Ec2 { client }
    }

    /// These subnets; an id that does not exist is an error naming `variable`.
    pub async fn subnets_by_id(
        &self,
        ids: &[String],
        variable: &str,
    ) -> Result<Vec<Subnet>, Error> {
        const OP: &str = "DescribeSubnets";
        let out = self
            .client
            .describe_subnets()
            .set_subnet_ids(Some(ids.to_vec()))
            .send()
            .await
            .map_err(|err| {
                missing_or_sdk_error(
                    OP,
                    err,
                    |e| e.meta().code() == Some("InvalidSubnetID.NotFound"),
                    || format!("a subnet of {} ({variable})", ids.join(",")),
                )
            })?;
        Ok(out.subnets().iter().filter_map(subnet).collect())
    }

    /// Every subnet of the VPC, all pages.
    pub async fn subnets_in_vpc(&self, vpc_id: &str) -> Result<Vec<Subnet>, Error> {
        let items: Result<Vec<_>, _> = self
            .client
            .describe_subnets()
            .filters(Filter::builder().name("vpc-id").values(vpc_id).build())
            .into_paginator()
            .items()
            .send()
            .collect()
            .await;
        let items = items.map_err(|e| sdk_error("DescribeSubnets", e))?;
        Ok(items.iter().filter_map(subnet).collect())
    }
}

fn subnet(s: &aws_sdk_ec2::types::Subnet) -> Option<Subnet> {
    Some(Subnet {
        id: s.subnet_id()?.to_owned(),
        vpc_id: s.vpc_id()?.to_owned(),
        az: s.availability_zone()?.to_owned(),
        az_id: s.availability_zone_id()?.to_owned(),
    })
}
