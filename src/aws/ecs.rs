//! ECS: the services whose tasks read the published list.

use super::{missing_or_sdk_error, sdk_error, time};
use crate::error::Error;
use crate::observed::{Deployment, EcsTask};
use aws_sdk_ecs::types::DesiredStatus;
use futures_util::StreamExt;
use std::collections::BTreeSet;

/// DescribeTasks takes at most 100 tasks a call; ListTasks pages at most 100.
const TASKS_A_CALL: usize = 100;

/// Task listings (one a service or family) a run makes at once: few, for ECS's rate limits.
const LISTINGS_AT_ONCE: usize = 4;

/// The most tasks one listing (a service's or a family's, by desired status) may hold: past
/// it the fleet counts as unknown this run (moves wait, growth goes on), and the listing's
/// pages stay bounded at 50 calls.
pub const MOST_TASKS: usize = 5_000;

/// Which tasks of the cluster a ListTasks asks for.
#[derive(Clone, Copy, Debug)]
enum TaskFilter<'a> {
    /// A service's tasks (`serviceName`).
    Service(&'a str),
    /// A task definition family's tasks, whatever started them (`family`).
    Family(&'a str),
}

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

impl Ecs {
    /// The tasks of these services and task definition families that ECS has not stopped yet,
    /// whatever a deployment counts: those it wants stopped (`desiredStatus` `STOPPED`, still
    /// `DEACTIVATING`, `STOPPING`, `DEPROVISIONING` or even `RUNNING`) and those it keeps
    /// running. DescribeServices' counts leave the first out, and know nothing of tasks started
    /// by RunTask. A task ECS lists but no longer describes (`MISSING`) is gone; one it cannot
    /// describe for another reason is kept with that reason for its status and no times.
    pub async fn live_tasks(
        &self,
        cluster: &str,
        services: &[String],
        families: &[String],
    ) -> Result<Vec<EcsTask>, Error> {
        let filters = services
            .iter()
            // A service may be given by ARN; ListTasks takes its name.
            .map(|s| TaskFilter::Service(s.rsplit('/').next().unwrap_or(s)))
            .chain(families.iter().map(|f| TaskFilter::Family(f)));
        // A filter's pages come one after another, and stopped tasks stay listed for an hour:
        // the filters are listed side by side, so a run waits for the longest, not the sum.
        let mut listings = futures_util::stream::iter(filters)
            .map(|filter| self.filter_arns(cluster, filter))
            .buffer_unordered(LISTINGS_AT_ONCE);
        let mut arns = BTreeSet::new();
        while let Some(listed) = listings.next().await {
            arns.extend(listed?);
        }
        let arns: Vec<String> = arns.into_iter().collect();
        let mut tasks = Vec::with_capacity(arns.len());
        for chunk in arns.chunks(TASKS_A_CALL) {
            tasks.extend(self.describe_tasks(cluster, chunk).await?);
        }
        Ok(tasks)
    }

    /// The tasks of one filter, RUNNING first: a task's desired status only ever goes from
    /// RUNNING to STOPPED, so one that changes between the two listings is in the second.
    async fn filter_arns(
        &self,
        cluster: &str,
        filter: TaskFilter<'_>,
    ) -> Result<Vec<String>, Error> {
        let mut arns = self
            .task_arns(cluster, filter, DesiredStatus::Running)
            .await?;
        arns.extend(
            self.task_arns(cluster, filter, DesiredStatus::Stopped)
                .await?,
        );
        Ok(arns)
    }

    /// Every page of ListTasks for one filter and desired status.
    async fn task_arns(
        &self,
        cluster: &str,
        filter: TaskFilter<'_>,
        desired: DesiredStatus,
    ) -> Result<Vec<String>, Error> {
        const OP: &str = "ListTasks";
        let request = self
            .client
            .list_tasks()
            .cluster(cluster)
            .desired_status(desired);
        let request = match filter {
            TaskFilter::Service(name) => request.service_name(name),
            TaskFilter::Family(family) => request.family(family),
        };
        let mut items = request
            .into_paginator()
            .page_size(TASKS_A_CALL as i32)
            .items()
            .send();
        let mut arns = Vec::new();
        while let Some(item) = items.next().await {
            let arn = item.map_err(|err| {
                missing_or_sdk_error(
                    OP,
                    err,
                    |e| e.is_cluster_not_found_exception() || e.is_service_not_found_exception(),
                    || match filter {
                        TaskFilter::Service(name) => format!(
                            "service {name} in cluster {cluster} (ECS_CLUSTER_NAME, ECS_SERVICE_NAME)"
                        ),
                        TaskFilter::Family(_) => format!("cluster {cluster} (ECS_CLUSTER_NAME)"),
                    },
                )
            })?;
            // Bounded: a listing that never ends must not hold the run to its deadline.
            if arns.len() == MOST_TASKS {
                return Err(Error::TooManyTasks {
                    operation: OP,
                    most: MOST_TASKS,
                });
            }
            arns.push(arn);
        }
        Ok(arns)
    }

    /// At most [`TASKS_A_CALL`] tasks, described; those already `STOPPED` left out.
    async fn describe_tasks(&self, cluster: &str, arns: &[String]) -> Result<Vec<EcsTask>, Error> {
        let out = self
            .client
            .describe_tasks()
            .cluster(cluster)
            .set_tasks(Some(arns.to_vec()))
            .send()
            .await
            .map_err(|e| sdk_error("DescribeTasks", e))?;
        let described = out.tasks().iter().map(|t| EcsTask {
            arn: t.task_arn().unwrap_or_default().to_owned(),
            group: t.group().unwrap_or_default().to_owned(),
            last_status: t.last_status().unwrap_or_default().to_owned(),
            desired_status: t.desired_status().unwrap_or_default().to_owned(),
            created_at: time(t.created_at()),
            started_at: time(t.started_at()),
            az: t.availability_zone().map(str::to_owned),
        });
        let undescribed = out
            .failures()
            .iter()
            .filter(|f| f.reason() != Some("MISSING"))
            .map(|f| EcsTask {
                arn: f.arn().unwrap_or_default().to_owned(),
                group: String::new(),
                last_status: format!("UNDESCRIBED ({})", f.reason().unwrap_or("no reason")),
                desired_status: String::new(),
                created_at: None,
                started_at: None,
                az: None,
            });
        Ok(described
            .chain(undescribed)
            .filter(|t| t.last_status != "STOPPED")
            .collect())
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

    /// A listing bounded at MOST_TASKS: ListTasks whose pages never end.
    #[tokio::test]
    async fn a_listing_that_never_ends_stops_at_its_bound() {
        use aws_sdk_ecs::operation::list_tasks::ListTasksOutput;
        use aws_smithy_mocks::RuleMode;
        // Every page full, and always another one after it.
        let list = mock!(Client::list_tasks).then_compute_output(|input| {
            let page: usize = input.next_token().map_or(0, |t| t.parse().unwrap());
            ListTasksOutput::builder()
                .set_task_arns(Some((0..100).map(|i| format!("t-{page}-{i}")).collect()))
                .next_token((page + 1).to_string())
                .build()
        });
        let ecs = Ecs::new(mock_client!(aws_sdk_ecs, RuleMode::MatchAny, [&list]));
        let err = ecs.live_tasks("c", &["app".into()], &[]).await.unwrap_err();
        assert!(
            matches!(
                err,
                Error::TooManyTasks {
                    most: MOST_TASKS,
                    ..
                }
            ),
            "{err:?}"
        );
        // The pages one more task needs, and not one page more.
        assert_eq!(list.num_calls(), MOST_TASKS / TASKS_A_CALL + 1);
    }

    /// ListTasks in pages of 100 (the STOPPED-desired ones 150, the RUNNING one 1), and
    /// DescribeTasks of at most 100: `t-0` is STOPPED, `t-7` MISSING, `t-8` cannot be described.
    #[tokio::test]
    async fn every_page_is_read_and_only_tasks_not_stopped_are_kept() {
        use aws_sdk_ecs::operation::describe_tasks::DescribeTasksOutput;
        use aws_sdk_ecs::operation::list_tasks::ListTasksOutput;
        use aws_sdk_ecs::types::Task;
        use aws_smithy_mocks::RuleMode;
        let list = mock!(Client::list_tasks).then_compute_output(|input| {
            assert_eq!(input.service_name(), Some("app"));
            let (arns, next): (Vec<String>, _) = match (input.desired_status(), input.next_token())
            {
                (Some(DesiredStatus::Running), _) => (vec!["run-1".into()], None),
                (_, None) => ((0..100).map(|i| format!("t-{i}")).collect(), Some("p2")),
                (_, Some(_)) => ((100..150).map(|i| format!("t-{i}")).collect(), None),
            };
            assert!(input.max_results().is_none_or(|n| n <= 100));
            ListTasksOutput::builder()
                .set_task_arns(Some(arns))
                .set_next_token(next.map(String::from))
                .build()
        });
        let describe = mock!(Client::describe_tasks).then_compute_output(|input| {
            assert!(input.tasks().len() <= 100, "{}", input.tasks().len());
            let mut out = DescribeTasksOutput::builder();
            for arn in input.tasks() {
                match arn.as_str() {
                    "t-7" | "t-8" => {
                        let reason = if arn == "t-7" { "MISSING" } else { "TIMEOUT" };
                        out = out.failures(Failure::builder().arn(arn).reason(reason).build());
                    }
                    _ => {
                        out = out.tasks(
                            Task::builder()
                                .task_arn(format!("arn:aws:ecs:us-east-1:1:task/c/{arn}"))
                                .group("service:app")
                                .last_status(if arn == "t-0" { "STOPPED" } else { "STOPPING" })
                                .desired_status("STOPPED")
                                .created_at(aws_smithy_types::DateTime::from_secs(10))
                                .build(),
                        )
                    }
                }
            }
            out.build()
        });
        let ecs = Ecs::new(mock_client!(
            aws_sdk_ecs,
            RuleMode::MatchAny,
            [&list, &describe]
        ));
        let tasks = ecs.live_tasks("c", &["app".into()], &[]).await.unwrap();
        assert_eq!(list.num_calls(), 3);
        assert_eq!(describe.num_calls(), 2, "151 tasks, 100 a call");
        assert_eq!(tasks.len(), 151 - 2);
        assert!(tasks.iter().all(|t| t.last_status != "STOPPED"));
        let ids: Vec<&str> = tasks.iter().map(EcsTask::id).collect();
        assert!(!ids.contains(&"t-0") && !ids.contains(&"t-7"));
        assert!(ids.contains(&"run-1") && ids.contains(&"t-149"));
        let t8 = tasks.iter().find(|t| t.id() == "t-8").unwrap();
        assert_eq!(t8.last_status, "UNDESCRIBED (TIMEOUT)");
        assert_eq!(t8.created_at, None);
        let t1 = tasks.iter().find(|t| t.id() == "t-1").unwrap();
        assert_eq!(t1.created_at, Some(crate::observed::When::from_secs(10)));
    }

    /// More filters than are listed at once, sharing tasks: each filter lists RUNNING before
    /// STOPPED, every task is described once, and each filter's tasks are all there.
    #[tokio::test]
    async fn filters_listed_side_by_side_keep_running_before_stopped_and_lose_no_task() {
        use aws_sdk_ecs::operation::describe_tasks::DescribeTasksOutput;
        use aws_sdk_ecs::operation::list_tasks::ListTasksOutput;
        use aws_sdk_ecs::types::Task;
        use aws_smithy_mocks::RuleMode;
        use std::sync::{Arc, Mutex};
        let calls: Arc<Mutex<Vec<(String, bool)>>> = Arc::default();
        let seen = calls.clone();
        let list = mock!(Client::list_tasks).then_compute_output(move |input| {
            let filter = input.service_name().or(input.family()).unwrap().to_owned();
            let running = input.desired_status() == Some(&DesiredStatus::Running);
            seen.lock().unwrap().push((filter.clone(), running));
            // Each filter has a task of its own; every one shares `shared`.
            let own = format!("{filter}-{}", if running { "run" } else { "stop" });
            ListTasksOutput::builder()
                .set_task_arns(Some(vec![own, "shared".into()]))
                .build()
        });
        let describe = mock!(Client::describe_tasks).then_compute_output(|input| {
            let mut out = DescribeTasksOutput::builder();
            for arn in input.tasks() {
                out = out.tasks(
                    Task::builder()
                        .task_arn(format!("arn:aws:ecs:us-east-1:1:task/c/{arn}"))
                        .last_status("RUNNING")
                        .build(),
                );
            }
            out.build()
        });
        let ecs = Ecs::new(mock_client!(
            aws_sdk_ecs,
            RuleMode::MatchAny,
            [&list, &describe]
        ));
        let services: Vec<String> = (0..LISTINGS_AT_ONCE + 2).map(|i| format!("s{i}")).collect();
        let tasks = ecs
            .live_tasks("c", &services, &["fam".into()])
            .await
            .unwrap();
        let filters: Vec<String> = services.iter().cloned().chain(["fam".into()]).collect();
        let calls = calls.lock().unwrap().clone();
        assert_eq!(calls.len(), 2 * filters.len());
        for f in &filters {
            let order: Vec<bool> = calls.iter().filter(|(g, _)| g == f).map(|c| c.1).collect();
            assert_eq!(order, [true, false], "{f}: RUNNING, then STOPPED");
        }
        let mut ids: Vec<&str> = tasks.iter().map(EcsTask::id).collect();
        ids.sort_unstable();
        let mut want: Vec<String> = filters
            .iter()
            .flat_map(|f| [format!("{f}-run"), format!("{f}-stop")])
            .chain(["shared".into()])
            .collect();
        want.sort_unstable();
        assert_eq!(ids, want);
    }

    #[tokio::test]
    async fn tasks_of_a_missing_service_are_an_error_naming_it() {
        use aws_sdk_ecs::operation::list_tasks::ListTasksError;
        use aws_sdk_ecs::types::error::ServiceNotFoundException;
        let rule = mock!(Client::list_tasks).then_error(|| {
            ListTasksError::ServiceNotFoundException(ServiceNotFoundException::builder().build())
        });
        let ecs = Ecs::new(mock_client!(aws_sdk_ecs, [&rule]));
        let err = ecs
            .live_tasks("c", &["ghost".into()], &[])
            .await
            .unwrap_err();
        assert!(
            matches!(
                &err,
                Error::NotFound {
                    operation: "ListTasks",
                    what,
                    ..
                } if what.contains("ghost")
            ),
            "{err}"
        );
    }

    #[tokio::test]
    async fn families_are_listed_by_family() {
        use aws_sdk_ecs::operation::list_tasks::ListTasksOutput;
        let rule = mock!(Client::list_tasks).then_compute_output(|input| {
            assert_eq!(
                (input.family(), input.service_name()),
                (Some("batch"), None)
            );
            ListTasksOutput::builder().build()
        });
        let ecs = Ecs::new(mock_client!(
            aws_sdk_ecs,
            aws_smithy_mocks::RuleMode::MatchAny,
            [&rule]
        ));
        assert!(ecs
            .live_tasks("c", &[], &["batch".into()])
            .await
            .unwrap()
            .is_empty());
        assert_eq!(rule.num_calls(), 2, "desired RUNNING, then STOPPED");
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
