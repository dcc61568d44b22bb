//! A small AWS world in moto, built through the SDK, and the views of it tests assert on.
//!
//! The default world: a VPC 10.0.0.0/16 (not moto's default VPC, which always exists with a
//! subnet in every AZ) with subnets in us-east-1a, a second one in us-east-1a, then
//! us-east-1b and us-east-1c; a security group; an EFS file system with one mount target
//! (in us-east-1a); the published list in SSM in the contract's form; an ECS cluster with one
//! service. The parameter is written before the service, so the service's primary deployment
//! is newer than it (nothing to redeploy), unless `parameter_after_service()`.

use std::time::Duration;

use aws_sdk_ec2::types::{Filter, Tag};
use aws_sdk_ecs::types::ContainerDefinition;
use aws_sdk_ssm::types::ParameterType;
use aws_smithy_types::DateTime;
use serde_json::{json, Value};

use super::aws::Aws;

/// The contract's default `SSM_PARAMETER_NAME`.
pub const PARAMETER_NAME: &str = "/efs-mount-autoscaling/mount-targets";
/// The function's own state (its default `STATE_PARAMETER_NAME`).
pub const STATE_PARAMETER_NAME: &str = "/efs-mount-autoscaling/state";
pub const CLUSTER: &str = "iot-analytics";
pub const SERVICE: &str = "ingest";

/// What the SSM parameter holds when the world is built.
#[derive(Clone, Debug)]
pub enum Seed {
    /// The contract's form: every seeded target, root `/` for the first and
    /// `/shards/<az-id>` for the others, strategy `rendezvous`.
    Contract,
    /// The original function's form: `{"mount_targets":[{"id":…,"ip":…}]}`.
    Original,
    /// This exact text (e.g. corrupt JSON).
    Text(String),
    /// No parameter at all.
    Absent,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Subnet {
    pub id: String,
    pub vpc_id: String,
    pub az: String,
    pub az_id: String,
    pub cidr: String,
}

/// A mount target as `DescribeMountTargets` shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MountTarget {
    pub id: String,
    pub ip: String,
    pub az: String,
    pub az_id: String,
    pub subnet_id: String,
    pub vpc_id: String,
    pub state: String,
}

/// The SSM parameter as `GetParameter` shows it.
#[derive(Clone, Debug, PartialEq)]
pub struct Parameter {
    pub value: String,
    pub version: i64,
    pub last_modified: DateTime,
}

impl Parameter {
    /// The value parsed as JSON (panics with the text when it is not JSON).
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.value)
            .unwrap_or_else(|e| panic!("parameter is not JSON ({e}): {}", self.value))
    }
}

/// An ECS service's PRIMARY deployment.
#[derive(Clone, Debug, PartialEq)]
pub struct Deployment {
    pub id: String,
    pub created_at: DateTime,
}

pub struct WorldBuilder {
    mount_target_azs: Vec<char>,
    seed: Seed,
    parameter_after_service: bool,
    other_vpc: bool,
    services: Vec<String>,
}

impl Default for WorldBuilder {
    fn default() -> Self {
        WorldBuilder {
            mount_target_azs: vec!['a'],
            seed: Seed::Contract,
            parameter_after_service: false,
            other_vpc: true,
            services: vec![SERVICE.to_string()],
        }
    }
}

impl WorldBuilder {
    /// The AZs (letters of us-east-1) that get a mount target, in creation order; default `a`.
    pub fn mount_targets_in(mut self, azs: &[char]) -> Self {
        self.mount_target_azs = azs.to_vec();
        self
    }

    pub fn parameter(mut self, seed: Seed) -> Self {
        self.seed = seed;
        self
    }

    /// Write the parameter after creating the ECS services, as a run that died between
    /// publishing and redeploying leaves things.
    pub fn parameter_after_service(mut self) -> Self {
        self.parameter_after_service = true;
        self
    }

    /// Whether to add a second VPC with a subnet in us-east-1b (default: yes).
    pub fn other_vpc(mut self, yes: bool) -> Self {
        self.other_vpc = yes;
        self
    }

    /// ECS services in the cluster (default: one, `ingest`).
    pub fn services(mut self, names: &[&str]) -> Self {
        self.services = names.iter().map(|s| s.to_string()).collect();
        self
    }

    pub async fn build(self, aws: &Aws) -> World {
        let ec2 = &aws.ec2;

        // A second VPC first, so that a function that does not filter by VPC would see its
        // subnet (in a free AZ) before ours.
        let other_vpc_subnet = if self.other_vpc {
            let vpc = create_vpc(aws, "10.9.0.0/16", "other").await;
            Some(create_subnet(aws, &vpc, "10.9.2.0/24", "us-east-1b", "other-b").await)
        } else {
            None
        };

        let vpc_id = create_vpc(aws, "10.0.0.0/16", "iot-analytics").await;
        // us-east-1a twice, and before b and c: its second subnet must never be chosen.
        let mut subnets = Vec::new();
        for (cidr, az, name) in [
            ("10.0.1.0/24", "us-east-1a", "private-a"),
            ("10.0.4.0/24", "us-east-1a", "private-a2"),
            ("10.0.2.0/24", "us-east-1b", "private-b"),
            ("10.0.3.0/24", "us-east-1c", "private-c"),
        ] {
            subnets.push(create_subnet(aws, &vpc_id, cidr, az, name).await);
        }

        let security_group_id = ec2
            .create_security_group()
            .group_name("efs-mount-targets")
            .description("NFS from the ingest tasks")
            .vpc_id(&vpc_id)
            .send()
            .await
            .expect("CreateSecurityGroup")
            .group_id
            .expect("security group id");

        let file_system_id = aws
            .efs
            .create_file_system()
            .creation_token("iot-analytics")
            .send()
            .await
            .expect("CreateFileSystem")
            .file_system_id;

        let mut world = World {
            aws: aws.clone(),
            vpc_id,
            subnets,
            other_vpc_subnet,
            security_group_id,
            file_system_id,
            cluster: CLUSTER.to_string(),
            services: self.services.clone(),
            parameter_name: PARAMETER_NAME.to_string(),
            seeded_parameter: None,
        };
        for az in &self.mount_target_azs {
            let subnet = world.subnet(*az).id.clone();
            world.create_mount_target(&subnet).await;
        }

        let value = match &self.seed {
            Seed::Contract => Some(contract_json(&world.mount_targets().await)),
            Seed::Original => Some(original_json(&world.mount_targets().await)),
            Seed::Text(text) => Some(text.clone()),
            Seed::Absent => None,
        };
        if !self.parameter_after_service {
            if let Some(value) = &value {
                world.put_parameter(value).await;
                // SSM and ECS times have millisecond precision: keep the order strict.
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
        world.create_services().await;
        if self.parameter_after_service {
            if let Some(value) = &value {
                tokio::time::sleep(Duration::from_millis(50)).await;
                world.put_parameter(value).await;
            }
        }
        world.seeded_parameter = value;
        world
    }
}

/// Ids and views of a built world. Everything here is observed through the SDK, straight
/// from moto (never through a fault-injecting proxy).
pub struct World {
    pub aws: Aws,
    pub vpc_id: String,
    /// Subnets of `vpc_id`: us-east-1a, us-east-1a (second), us-east-1b, us-east-1c.
    pub subnets: Vec<Subnet>,
    /// A subnet in us-east-1b of another VPC, when built with one.
    pub other_vpc_subnet: Option<Subnet>,
    pub security_group_id: String,
    pub file_system_id: String,
    pub cluster: String,
    pub services: Vec<String>,
    pub parameter_name: String,
    /// The parameter's text as seeded, if any.
    pub seeded_parameter: Option<String>,
}

impl World {
    pub fn builder() -> WorldBuilder {
        WorldBuilder::default()
    }

    /// The first subnet of our VPC in us-east-1`az`.
    pub fn subnet(&self, az: char) -> &Subnet {
        let name = format!("us-east-1{az}");
        self.subnets
            .iter()
            .find(|s| s.az == name)
            .unwrap_or_else(|| panic!("no subnet in {name}"))
    }

    /// The second subnet of our VPC in us-east-1a.
    pub fn second_subnet_a(&self) -> &Subnet {
        &self.subnets[1]
    }

    /// The AZ id (e.g. `use1-az6`) of us-east-1`az` in this world.
    pub fn az_id(&self, az: char) -> String {
        self.subnet(az).az_id.clone()
    }

    /// `ECS_SERVICE_NAME` for this world: the services, comma-separated.
    pub fn service_names(&self) -> String {
        self.services.join(",")
    }

    /// Environment of the contract for a function managing this world (not the SDK's own).
    pub fn function_env(&self, mount_path: &std::path::Path) -> Vec<(String, String)> {
        vec![
            ("EFS_FILE_SYSTEM_ID".into(), self.file_system_id.clone()),
            ("ECS_CLUSTER_NAME".into(), self.cluster.clone()),
            ("ECS_SERVICE_NAME".into(), self.service_names()),
            ("EFS_MOUNT_PATH".into(), mount_path.display().to_string()),
        ]
    }

    pub async fn create_mount_target(&self, subnet_id: &str) -> MountTarget {
        let out = self
            .aws
            .efs
            .create_mount_target()
            .file_system_id(&self.file_system_id)
            .subnet_id(subnet_id)
            .security_groups(&self.security_group_id)
            .send()
            .await
            .expect("CreateMountTarget");
        MountTarget {
            id: out.mount_target_id,
            ip: out.ip_address.unwrap_or_default(),
            az: out.availability_zone_name.unwrap_or_default(),
            az_id: out.availability_zone_id.unwrap_or_default(),
            subnet_id: out.subnet_id,
            vpc_id: out.vpc_id.unwrap_or_default(),
            state: out.life_cycle_state.as_str().to_string(),
        }
    }

    /// The file system's mount targets, as `DescribeMountTargets` lists them.
    pub async fn mount_targets(&self) -> Vec<MountTarget> {
        let out = self
            .aws
            .efs
            .describe_mount_targets()
            .file_system_id(&self.file_system_id)
            .send()
            .await
            .expect("DescribeMountTargets");
        out.mount_targets()
            .iter()
            .map(|mt| MountTarget {
                id: mt.mount_target_id().to_string(),
                ip: mt.ip_address().unwrap_or_default().to_string(),
                az: mt.availability_zone_name().unwrap_or_default().to_string(),
                az_id: mt.availability_zone_id().unwrap_or_default().to_string(),
                subnet_id: mt.subnet_id().to_string(),
                vpc_id: mt.vpc_id().unwrap_or_default().to_string(),
                state: mt.life_cycle_state().as_str().to_string(),
            })
            .collect()
    }

    /// The ids of the file system's mount targets.
    pub async fn mount_target_ids(&self) -> std::collections::BTreeSet<String> {
        self.mount_targets()
            .await
            .into_iter()
            .map(|t| t.id)
            .collect()
    }

    pub async fn put_parameter(&self, value: &str) {
        self.aws
            .ssm
            .put_parameter()
            .name(&self.parameter_name)
            .value(value)
            .r#type(ParameterType::String)
            .overwrite(true)
            .send()
            .await
            .expect("PutParameter");
    }

    /// The published parameter, or None when it does not exist.
    pub async fn parameter(&self) -> Option<Parameter> {
        match self
            .aws
            .ssm
            .get_parameter()
            .name(&self.parameter_name)
            .send()
            .await
        {
            Ok(out) => {
                let p = out.parameter.expect("GetParameter without a parameter");
                Some(Parameter {
                    value: p.value.clone().unwrap_or_default(),
                    version: p.version,
                    last_modified: p.last_modified_date.expect("LastModifiedDate"),
                })
            }
            Err(e)
                if e.as_service_error()
                    .is_some_and(|e| e.is_parameter_not_found()) =>
            {
                None
            }
            Err(e) => panic!("GetParameter: {e:?}"),
        }
    }

    /// The function's state parameter as JSON (`{}` when it does not exist yet).
    pub async fn state(&self) -> Value {
        match self
            .aws
            .ssm
            .get_parameter()
            .name(STATE_PARAMETER_NAME)
            .send()
            .await
        {
            Ok(out) => {
                let text = out.parameter.and_then(|p| p.value).unwrap_or_default();
                serde_json::from_str(&text)
                    .unwrap_or_else(|e| panic!("the state is not JSON ({e}): {text}"))
            }
            Err(e)
                if e.as_service_error()
                    .is_some_and(|e| e.is_parameter_not_found()) =>
            {
                serde_json::json!({})
            }
            Err(e) => panic!("GetParameter: {e:?}"),
        }
    }

    /// Writes the function's state parameter (as an operator with access could).
    pub async fn put_state(&self, state: &Value) {
        self.aws
            .ssm
            .put_parameter()
            .name(STATE_PARAMETER_NAME)
            .value(state.to_string())
            .r#type(ParameterType::String)
            .overwrite(true)
            .send()
            .await
            .expect("PutParameter (state)");
    }

    /// The published parameter, which must exist.
    pub async fn published(&self) -> Parameter {
        self.parameter()
            .await
            .unwrap_or_else(|| panic!("parameter {} does not exist", self.parameter_name))
    }

    /// The PRIMARY deployment of one of the world's services.
    pub async fn primary_deployment(&self, service: &str) -> Deployment {
        let out = self
            .aws
            .ecs
            .describe_services()
            .cluster(&self.cluster)
            .services(service)
            .send()
            .await
            .expect("DescribeServices");
        let svc = out
            .services()
            .first()
            .unwrap_or_else(|| panic!("no service {service}"));
        let d = svc
            .deployments()
            .iter()
            .find(|d| d.status() == Some("PRIMARY"))
            .unwrap_or_else(|| panic!("service {service} has no PRIMARY deployment"));
        Deployment {
            id: d.id().unwrap_or_default().to_string(),
            created_at: *d.created_at().expect("deployment createdAt"),
        }
    }

    /// The PRIMARY deployment id of each service, in `services` order.
    pub async fn deployment_ids(&self) -> Vec<String> {
        let mut ids = Vec::new();
        for s in &self.services {
            ids.push(self.primary_deployment(s).await.id);
        }
        ids
    }

    async fn create_services(&self) {
        let ecs = &self.aws.ecs;
        ecs.create_cluster()
            .cluster_name(&self.cluster)
            .send()
            .await
            .expect("CreateCluster");
        ecs.register_task_definition()
            .family("ingest")
            .container_definitions(
                ContainerDefinition::builder()
                    .name("ingest")
                    .image("public.ecr.aws/docker/library/busybox:latest")
                    .memory(128)
                    .essential(true)
                    .build(),
            )
            .send()
            .await
            .expect("RegisterTaskDefinition");
        for name in &self.services {
            ecs.create_service()
                .cluster(&self.cluster)
                .service_name(name)
                .task_definition("ingest")
                .desired_count(1)
                .send()
                .await
                .expect("CreateService");
        }
    }
}

/// The shard root the contract gives a mount target: `/` for the first, `/shards/<az-id>` after.
pub fn shard_root(index: usize, target: &MountTarget) -> String {
    if index == 0 {
        "/".to_string()
    } else {
        format!("/shards/{}", target.az_id)
    }
}

/// The contract's published list for these targets, in this order (first keeps `/`).
pub fn contract_json(targets: &[MountTarget]) -> String {
    let entries: Vec<Value> = targets
        .iter()
        .enumerate()
        .map(|(i, t)| {
            json!({
                "id": t.id,
                "ip": t.ip,
                "az": t.az,
                "az_id": t.az_id,
                "subnet_id": t.subnet_id,
                "root": shard_root(i, t),
            })
        })
        .collect();
    json!({"mount_targets": entries, "strategy": "rendezvous"}).to_string()
}

/// The original function's two-field list for these targets.
pub fn original_json(targets: &[MountTarget]) -> String {
    let entries: Vec<Value> = targets
        .iter()
        .map(|t| json!({"id": t.id, "ip": t.ip}))
        .collect();
    json!({ "mount_targets": entries }).to_string()
}

async fn create_vpc(aws: &Aws, cidr: &str, name: &str) -> String {
    let vpc = aws
        .ec2
        .create_vpc()
        .cidr_block(cidr)
        .send()
        .await
        .expect("CreateVpc")
        .vpc
        .expect("vpc");
    let id = vpc.vpc_id.expect("vpc id");
    tag(aws, &id, name).await;
    id
}

async fn create_subnet(aws: &Aws, vpc_id: &str, cidr: &str, az: &str, name: &str) -> Subnet {
    let subnet = aws
        .ec2
        .create_subnet()
        .vpc_id(vpc_id)
        .cidr_block(cidr)
        .availability_zone(az)
        .send()
        .await
        .expect("CreateSubnet")
        .subnet
        .expect("subnet");
    let id = subnet.subnet_id.expect("subnet id");
    tag(aws, &id, name).await;
    Subnet {
        id,
        vpc_id: vpc_id.to_string(),
        az: subnet.availability_zone.expect("subnet AZ"),
        az_id: subnet.availability_zone_id.expect("subnet AZ id"),
        cidr: cidr.to_string(),
    }
}

async fn tag(aws: &Aws, resource: &str, name: &str) {
    aws.ec2
        .create_tags()
        .resources(resource)
        .tags(Tag::builder().key("Name").value(name).build())
        .send()
        .await
        .expect("CreateTags");
}

/// Subnets of a VPC, as the function would see them (for assertions on eligibility).
pub async fn subnets_of(aws: &Aws, vpc_id: &str) -> Vec<String> {
    let out = aws
        .ec2
        .describe_subnets()
        .filters(Filter::builder().name("vpc-id").values(vpc_id).build())
        .send()
        .await
        .expect("DescribeSubnets");
    out.subnets()
        .iter()
        .filter_map(|s| s.subnet_id().map(str::to_string))
        .collect()
}
