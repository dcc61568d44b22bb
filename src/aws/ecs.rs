//! ECS: the services whose tasks read the published list.

use super::{missing_or_sdk_error, sdk_error, time};
use crate::error::Error;
use crate::observed::Deployment;

#[derive(Clone, Debug)]
pub struct Ecs {
    client: aws_sdk_ecs::Client,
}

impl Ecs {
    pub fn new(client: aws_sdk_ecs::Client) -> Self {
        Ecs { client }
    }

    /// The primary deployment of each service. A service that does not exist (or no longer:
    /// AWS keeps describing a deleted service as `INACTIVE` for a while) is an error naming it
    /// (ECS_SERVICE_NAME), as is one whose deployments another controller than ECS's rolling
    /// update runs: UpdateService cannot force a deployment there. Both come before any
    /// mutating call of the run.
    pub async fn primary_deployments(
        &self,
        cluster: &str,
        services: &[String],
    ) -> Result<Vec<Deployment>, Error> {
        const OP: &str = "DescribeServices";
        let mut found = Vec::with_capacity(services.len());
        // DescribeServices takes at most 10 services a call.
        for chunk in services.chunks(10) {
            let out = self
                .client
                .describe_services()
                .cluster(cluster)
                .set_services(Some(chunk.to_vec()))
                .send()
                .await
                .map_err(|err| {
                    missing_or_sdk_error(
                        OP,
                        err,
                        |e| e.is_cluster_not_found_exception(),
                        || format!("cluster {cluster} (ECS_CLUSTER_NAME)"),
                    )
                })?;
            if let Some(failure) = out.failures().first() {
                return Err(Error::NotFound {
                    operation: OP,
                    what: format!(
                        "service {} in cluster {cluster} (ECS_SERVICE_NAME): {}",
                        failure.arn().unwrap_or("?"),
                        failure.reason().unwrap_or("?")
                    ),
                    source: format!("{failure:?}").into(),
                });
            }
            for service in out.services() {
                found.push(deployment(service, cluster)?);
            }
        }
        // Every service asked for is described or failed; anything else is not there.
        if let Some(absent) = services
            .iter()
            // A service may be given by name or by ARN (`…:service/<cluster>/<name>`).
            .find(|s| {
                !found
                    .iter()
                    .any(|d| s.rsplit('/').next() == Some(d.service.as_str()))
            })
        {
            return Err(Error::NotFound {
                operation: OP,
                what: format!("service {absent} in cluster {cluster} (ECS_SERVICE_NAME)"),
                source: "DescribeServices did not describe it".into(),
            });
        }
        Ok(found)
    }

    /// Starts a new deployment with the same task definition; returns its id.
    pub async fn force_new_deployment(
        &self,
        cluster: &str,
        service: &str,
    ) -> Result<Option<String>, Error> {
        let out = self
            .client
            .update_service()
            .cluster(cluster)
            .service(service)
            .force_new_deployment(true)
            .send()
            .await
            .map_err(|e| sdk_error("UpdateService", e))?;
        let primary = out
            .service()
            .and_then(|s| {
                s.deployments()
                    .iter()
                    .find(|d| d.status() == Some("PRIMARY"))
            })
            .and_then(|d| d.id());
        Ok(primary.map(str::to_owned))
    }
}

/// What a run needs of one described service: its primary deployment, when that started,
/// whether its rollout failed, and the tasks older deployments still run. A service that is
/// not `ACTIVE`, or whose deployments another controller than ECS's runs, is an error.
fn deployment(service: &aws_sdk_ecs::types::Service, cluster: &str) -> Result<Deployment, Error> {
    const OP: &str = "DescribeServices";
    let name = service.service_name().unwrap_or_default().to_owned();
    let status = service.status().unwrap_or_default();
    if status != "ACTIVE" {
        return Err(Error::NotFound {
            operation: OP,
            what: format!("service {name} in cluster {cluster} (ECS_SERVICE_NAME)"),
            source: format!("its status is {status}").into(),
        });
    }
    if let Some(controller) = service
        .deployment_controller()
        .map(|c| c.r#type().as_str())
        .filter(|c| *c != "ECS")
    {
        return Err(Error::DeploymentController {
            cluster: cluster.to_owned(),
            service: name,
            controller: controller.to_owned(),
        });
    }
    let primary = service
        .deployments()
        .iter()
        .find(|d| d.status() == Some("PRIMARY"));
    let rollout_failed = primary
        .filter(|d| d.rollout_state().is_some_and(|s| s.as_str() == "FAILED"))
        .map(|d| {
            d.rollout_state_reason()
                .unwrap_or("no reason given")
                .to_owned()
        });
    let others_running = service
        .deployments()
        .iter()
        .filter(|d| d.status() != Some("PRIMARY"))
        .map(|d| i64::from(d.running_count()))
        .sum();
    Ok(Deployment {
        service: name,
        id: primary.and_then(|d| d.id()).map(str::to_owned),
        created_at: time(primary.and_then(|d| d.created_at())),
        rollout_failed,
        others_running,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_sdk_ecs::operation::describe_services::{
        DescribeServicesError, DescribeServicesOutput,
    };
    use aws_sdk_ecs::types::error::ClusterNotFoundException;
    use aws_sdk_ecs::types::{Deployment as EcsDeployment, Failure, Service};
    use aws_sdk_ecs::Client;
    use aws_smithy_mocks::{mock, mock_client};

    #[tokio::test]
    async fn a_missing_service_is_named() {
        let rule = mock!(Client::describe_services).then_output(|| {
            DescribeServicesOutput::builder()
                .failures(
                    Failure::builder()
                        .arn("arn:aws:ecs:us-east-1:1:service/c/ghost")
                        .reason("MISSING")
                        .build(),
                )
                .build()
        });
        let ecs = Ecs::new(mock_client!(aws_sdk_ecs, [&rule]));
        let err = ecs
            .primary_deployments("c", &["ghost".into()])
            .await
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("ghost") && err.contains("MISSING") && err.contains("ECS_SERVICE_NAME"),
            "{err}"
        );
    }

    #[tokio::test]
    async fn a_missing_cluster_is_named() {
        let rule = mock!(Client::describe_services).then_error(|| {
            DescribeServicesError::ClusterNotFoundException(
                ClusterNotFoundException::builder().build(),
            )
        });
        let ecs = Ecs::new(mock_client!(aws_sdk_ecs, [&rule]));
        let err = ecs
            .primary_deployments("nope", &["s".into()])
            .await
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("nope") && err.contains("ECS_CLUSTER_NAME"),
            "{err}"
        );
    }

    #[tokio::test]
    async fn the_primary_deployment_is_the_one_read() {
        let rule = mock!(Client::describe_services).then_output(|| {
            DescribeServicesOutput::builder()
                .services(
                    Service::builder()
                        .service_name("app")
                        .status("ACTIVE")
                        .deployments(
                            EcsDeployment::builder()
                                .id("ecs-svc/old")
                                .status("ACTIVE")
                                .created_at(aws_smithy_types::DateTime::from_secs(10))
                                .build(),
                        )
                        .deployments(
                            EcsDeployment::builder()
                                .id("ecs-svc/new")
                                .status("PRIMARY")
                                .created_at(aws_smithy_types::DateTime::from_secs(20))
                                .build(),
                        )
                        .build(),
                )
                .build()
        });
        let ecs = Ecs::new(mock_client!(aws_sdk_ecs, [&rule]));
        let d = ecs.primary_deployments("c", &["app".into()]).await.unwrap();
        assert_eq!(d[0].id.as_deref(), Some("ecs-svc/new"));
        assert_eq!(d[0].created_at, Some(crate::observed::When::from_secs(20)));
    }
}
