//! ECS: the services whose tasks read the published list.

use super::{sdk_error, time};
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

    /// The primary deployment of each service. A service that does not exist is an error
    /// naming it (ECS_SERVICE_NAME).
    pub async fn primary_deployments(
        &self,
        cluster: &str,
        services: &[String],
    ) -> Result<Vec<Deployment>, Error> {
        const OP: &str = "DescribeServices";
        let mut found = Vec::with_capacity(services.len());
        // DescribeServices takes at most 10 services a call.
        for chunk in services.chunks(10) {
            let out = match self
                .client
                .describe_services()
                .cluster(cluster)
                .set_services(Some(chunk.to_vec()))
                .send()
                .await
            {
                Ok(out) => out,
                Err(err)
                    if err
                        .as_service_error()
                        .is_some_and(|e| e.is_cluster_not_found_exception()) =>
                {
                    return Err(Error::NotFound {
                        operation: OP,
                        what: format!("cluster {cluster} (ECS_CLUSTER_NAME)"),
                        source: Box::new(err),
                    })
                }
                Err(err) => return Err(sdk_error(OP, err)),
            };
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
                let primary = service
                    .deployments()
                    .iter()
                    .find(|d| d.status() == Some("PRIMARY"));
                found.push(Deployment {
                    service: service.service_name().unwrap_or_default().to_owned(),
                    id: primary.and_then(|d| d.id()).map(str::to_owned),
                    created_at: time(primary.and_then(|d| d.created_at())),
                });
            }
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
