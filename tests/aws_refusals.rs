//! What real AWS refuses that moto allows, played by the proxy: a subnet CreateMountTarget
//! refuses, a One Zone file system, a stalled call, an ECS service run by another deployment
//! controller, a service that is not there, a failed rollout, a file system not available.
//! Each scenario asserts what AWS would have seen (the calls through the proxy) and what is
//! left in AWS and on the file system.
//!
//! Needs `moto_server` on PATH (`pip install "moto[server]"`).

#[macro_use]
mod support;

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{json, Value};

use support::{event, has_action, has_warning, Testbed, World};

const BIN: &str = env!("CARGO_BIN_EXE_efs-mount-autoscaler");
const THRESHOLD: usize = 500;

async fn testbed(world: support::world::WorldBuilder, files: usize) -> Testbed {
    let mut tb = Testbed::new(BIN, world).await;
    tb.trust_ecs_alone();
    tb.mount.generate(files);
    tb.env("FILE_THRESHOLD", THRESHOLD.to_string());
    tb
}

/// The subnet ids the response says are left out.
fn excluded(r: &Value) -> Vec<String> {
    r["excluded_subnets"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|e| e["subnet_or_az"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_full_subnet_is_passed_over_in_the_same_run_and_left_out_after() {
    let tb = testbed(World::builder(), 2 * THRESHOLD + 100).await;
    // Every client reads version 2, so the list may grow past one shard a target.
    tb.fleet_reports(&[1, 2]).await;
    let full = tb.world.subnet('b').id.clone();
    tb.proxy.refuse_subnet(
        &full,
        409,
        "NoFreeAddressesInSubnet",
        "The subnet has no free IP addresses",
    );

    let inv = tb.invoke(&event("scheduled")).await;
    let r = inv.response();
    // The refused subnet, then the next free AZ, in the same run: one target created.
    check_eq!(inv, tb.proxy.count("CreateMountTarget"), 2);
    let targets = tb.world.mount_targets().await;
    let azs: Vec<&str> = targets.iter().map(|t| t.az.as_str()).collect();
    check_eq!(inv, targets.len(), 2, "{targets:#?}");
    check!(inv, azs.contains(&"us-east-1c"), "{azs:?}");
    check_eq!(
        inv,
        r["new_mount_target"]["subnet_id"],
        json!(tb.world.subnet('c').id)
    );
    check_eq!(inv, excluded(r), vec![full.clone()]);
    check!(inv, has_warning(r, "subnet_refused"));
    check!(
        inv,
        inv.logs.contains(&full) && inv.logs.contains("NoFreeAddressesInSubnet")
    );
    // The exclusion is kept; only the accepted create counts as the function's own.
    let state = tb.world.state().await;
    assert!(state["excluded"][&full]["until"].is_u64(), "{state}");
    let created = state["created"].as_object().cloned().unwrap_or_default();
    let new_id = r["new_mount_target"]["id"].as_str().unwrap_or_default();
    assert_eq!(created.len(), 1, "{state}");
    assert_eq!(
        created[new_id]["az_id"],
        json!(tb.world.az_id('c')),
        "{state}"
    );

    // The next run: the refused subnet is not tried again. The third shard the 1,100 files
    // need went on a serving target (no AZ was left for a third): nothing is at capacity.
    tb.proxy.reset_counts();
    let inv = tb.invoke(&event("scheduled")).await;
    let r = inv.response();
    check_eq!(inv, tb.proxy.count("CreateMountTarget"), 0);
    check_eq!(inv, r["at_capacity"], json!(false));
    check_eq!(
        inv,
        (
            r["shards"].clone(),
            r["desired_shards"].clone(),
            r["total"].clone()
        ),
        (json!(1), json!(3), json!(2))
    );
    // Announced by the first run (the new target and the new shard): they take files once
    // the fleet runs that list.
    check_eq!(inv, r["homes"], json!("waiting"));
    check_eq!(inv, excluded(r), vec![full]);
    assert_eq!(tb.world.mount_targets().await.len(), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn refusals_everywhere_record_no_target_and_the_shards_grow_on_the_one_there() {
    let tb = testbed(World::builder(), 2 * THRESHOLD + 100).await;
    // Every client reads version 2, so the list may grow past one shard a target.
    tb.fleet_reports(&[1, 2]).await;
    let b = tb.world.subnet('b').id.clone();
    let c = tb.world.subnet('c').id.clone();
    tb.proxy
        .refuse_subnet(&b, 409, "NoFreeAddressesInSubnet", "no free addresses");
    tb.proxy.refuse_subnet(
        &c,
        400,
        "UnsupportedAvailabilityZone",
        "EFS is not supported in this Availability Zone",
    );

    let inv = tb.invoke(&event("scheduled")).await;
    let r = inv.response();
    check_eq!(inv, tb.proxy.count("CreateMountTarget"), 2);
    assert_eq!(tb.world.mount_targets().await.len(), 1);
    check!(inv, r["new_mount_target"].is_null());
    // 1,100 files at 500 a shard: three shards, all on the one target AWS left us.
    check_eq!(inv, r["at_capacity"], json!(false));
    check!(inv, has_action(r, "publish"));
    let list = tb.world.published().await.json();
    assert_eq!(list["version"], json!(2), "{list}");
    assert_eq!(list["mount_targets"][0]["shards"], json!(3), "{list}");
    let mut left_out = excluded(r);
    left_out.sort();
    // A subnet error leaves the subnet out; an AZ error leaves its AZ out.
    let mut want = vec![b, tb.world.az_id('c')];
    want.sort();
    check_eq!(inv, left_out, want);
    let state = tb.world.state().await;
    assert!(
        state.get("created").is_none(),
        "a refused create makes no target the function's own: {state}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_one_zone_file_system_serves_its_shards_from_one_target_and_never_asks_for_another() {
    let tb = testbed(World::builder(), 4 * THRESHOLD).await;
    // Every client reads version 2, so the list may grow past one shard a target.
    tb.fleet_reports(&[1, 2]).await;
    let (b, c) = (
        tb.world.subnet('b').id.clone(),
        tb.world.subnet('c').id.clone(),
    );
    tb.proxy.one_zone(
        "us-east-1a",
        &tb.world.az_id('a'),
        &[b.as_str(), c.as_str()],
    );

    let inv = tb.invoke(&event("scheduled")).await;
    check_eq!(inv, inv.response()["homes"], json!("announced"));
    tb.converge(&[1, 2]).await;
    let inv = tb.invoke(&event("scheduled")).await;
    let r = inv.response();
    check_eq!(inv, r["homes"], json!("switched"));
    // 2,000 files at 500 a shard: five shards, all on the One Zone AZ's one target.
    check_eq!(inv, r["at_capacity"], json!(false));
    check_eq!(
        inv,
        (
            r["desired"].clone(),
            r["desired_shards"].clone(),
            r["shards"].clone()
        ),
        (json!(1), json!(5), json!(5))
    );
    check_eq!(inv, tb.proxy.count("CreateMountTarget"), 0);
    assert_eq!(tb.proxy.count("DescribeFileSystems"), 2, "read once a run");
    assert_eq!(tb.world.mount_targets().await.len(), 1);
    let list = tb.world.published().await.json();
    assert_eq!(list["mount_targets"][0]["shards"], json!(5), "{list}");

    // Under a modulo list one target is one shard: at capacity (the reason names the migrate
    // event, which lifts it); nothing is asked of AWS.
    let a = &list["mount_targets"][0];
    tb.world
        .put_parameter(&json!({"mount_targets": [{"id": a["id"], "ip": a["ip"]}]}).to_string())
        .await;
    let inv = tb.invoke(&event("scheduled")).await;
    let r = inv.response();
    check_eq!(inv, r["at_capacity"], json!(true));
    check_eq!(inv, r["decision"], json!("at_capacity"));
    check_eq!(inv, tb.proxy.count("CreateMountTarget"), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stalled_call_ends_the_run_in_bounded_time_naming_it_with_nothing_changed() {
    let mut tb = testbed(World::builder(), 2 * THRESHOLD).await;
    tb.env("API_ATTEMPT_TIMEOUT_SECONDS", "1");
    tb.env("API_CALL_TIMEOUT_SECONDS", "3");
    tb.proxy.stall("DescribeMountTargets", usize::MAX);
    let parameter = tb.world.published().await;

    let deadline = Duration::from_secs(60);
    let inv = tb.invoke_with_deadline(&event("scheduled"), deadline).await;
    let message = inv.error_text();
    check!(
        inv,
        message.starts_with("TimedOut: ") && message.contains("DescribeMountTargets"),
        "{message}"
    );
    // The function answered by itself, long before Lambda would have killed it.
    check!(inv, inv.within_deadline());
    assert!(tb.proxy.count("DescribeMountTargets") >= 1);
    tb.assert_nothing_changed(&inv);
    assert_eq!(tb.world.published().await, parameter);
    assert_eq!(tb.world.mount_targets().await.len(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_code_deploy_service_is_an_error_naming_it_and_no_service_is_updated() {
    let tb = testbed(
        World::builder().services(&["ingest", "billing"]),
        2 * THRESHOLD,
    )
    .await;
    tb.proxy.deployment_controller("billing", "CODE_DEPLOY");

    let inv = tb.invoke(&event("scheduled")).await;
    let message = inv.error_text();
    check!(
        inv,
        message.starts_with("DeploymentController: ")
            && message.contains("billing")
            && message.contains("CODE_DEPLOY"),
        "{message}"
    );
    check_eq!(inv, tb.proxy.count("UpdateService"), 0);
    tb.assert_nothing_changed(&inv);
    assert_eq!(tb.world.mount_targets().await.len(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_proxy_refuses_to_force_a_code_deploy_deployment_as_ecs_does() {
    // The behaviour the test above guards against: AWS refuses, moto would not.
    let tb = testbed(World::builder(), 0).await;
    tb.proxy.deployment_controller("ingest", "CODE_DEPLOY");
    let ecs = aws_sdk_ecs::Client::from_conf(
        tb.aws
            .ecs
            .config()
            .to_builder()
            .endpoint_url(tb.proxy.endpoint())
            .build(),
    );
    let err = ecs
        .update_service()
        .cluster(&tb.world.cluster)
        .service("ingest")
        .force_new_deployment(true)
        .send()
        .await
        .expect_err("UpdateService must be refused");
    assert!(
        err.as_service_error()
            .is_some_and(|e| e.is_invalid_parameter_exception()),
        "{err:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_service_that_does_not_exist_is_an_error_naming_it() {
    let mut tb = testbed(World::builder(), 2 * THRESHOLD).await;
    tb.env("ECS_SERVICE_NAME", "ingest,ghost");
    let inv = tb.invoke(&event("scheduled")).await;
    let message = inv.error_text();
    check!(
        inv,
        message.starts_with("NotFound: ")
            && message.contains("ghost")
            && message.contains("ECS_SERVICE_NAME"),
        "{message}"
    );
    tb.assert_nothing_changed(&inv);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_deleted_service_is_an_error_naming_it() {
    let tb = testbed(World::builder().services(&["ingest", "old"]), 2 * THRESHOLD).await;
    tb.world
        .aws
        .ecs
        .delete_service()
        .cluster(&tb.world.cluster)
        .service("old")
        .force(true)
        .send()
        .await
        .expect("DeleteService");
    let inv = tb.invoke(&event("scheduled")).await;
    let message = inv.error_text();
    check!(
        inv,
        message.starts_with("NotFound: ") && message.contains("old"),
        "{message}"
    );
    tb.assert_nothing_changed(&inv);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failed_rollout_is_a_warning_and_a_metric() {
    let tb = testbed(World::builder(), 100).await;
    tb.proxy.rollout_failed(
        "ingest",
        "ECS deployment circuit breaker: tasks failed to start.",
    );
    let inv = tb.invoke(&event("scheduled")).await;
    let r = inv.response();
    check!(inv, has_warning(r, "rollout_failed"));
    let metrics: BTreeMap<String, Value> = inv
        .logs
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v.get("_aws").is_some() && v.get("RolloutsFailed").is_some())
        .filter_map(|v| v.as_object().cloned())
        .flat_map(|o| o.into_iter())
        .collect();
    check_eq!(inv, metrics.get("RolloutsFailed"), Some(&json!(1)));
    tb.assert_nothing_changed(&inv);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_file_system_that_is_not_available_is_an_error_naming_it() {
    let tb = testbed(World::builder(), 2 * THRESHOLD).await;
    tb.proxy.file_system_state("deleting");
    let inv = tb.invoke(&event("scheduled")).await;
    let message = inv.error_text();
    check!(
        inv,
        message.starts_with("FileSystemNotAvailable: ")
            && message.contains(&tb.world.file_system_id)
            && message.contains("deleting"),
        "{message}"
    );
    tb.assert_nothing_changed(&inv);
}
