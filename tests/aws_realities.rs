//! What AWS does that moto does not, played by the proxy, and what the function does about it:
//! a deleted mount target stays `deleting` for a while and a retried delete is refused; pages
//! of mount targets and subnets; DescribeServices takes at most 10 services; several old
//! deployments at once; the 4,096-character limit of a Standard parameter; SSM reads that lag
//! a write (the previous version, or "not found" for a new parameter). Each scenario runs
//! the function binary against moto through the proxy and asserts on what AWS would have seen
//! and what is left.
//!
//! Needs `moto_server` on PATH (`pip install "moto[server]"`).

#[macro_use]
mod support;

use std::collections::BTreeSet;

use aws_sdk_efs::error::ProvideErrorMetadata;
use serde_json::json;

use support::world::{contract_json, shard_root, MountTarget};
use support::{event, has_action, has_warning, strings, Testbed, World};

const BIN: &str = env!("CARGO_BIN_EXE_efs-mount-autoscaler");
const THRESHOLD: usize = 500;

async fn testbed(world: support::world::WorldBuilder, files: usize) -> Testbed {
    let mut tb = Testbed::new(BIN, world).await;
    tb.trust_ecs_alone();
    tb.mount.generate(files);
    tb.env("FILE_THRESHOLD", THRESHOLD.to_string());
    tb
}

/// The ids the published list names.
async fn listed(tb: &Testbed) -> BTreeSet<String> {
    let list = tb.world.published().await.json();
    let entries = list["mount_targets"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let ids = entries.iter().filter_map(|e| e["id"].as_str());
    ids.map(str::to_owned).collect()
}

fn error_type(inv: &support::Invocation) -> String {
    match &inv.result {
        Ok(_) => String::new(),
        Err(e) => e["errorType"].as_str().unwrap_or_default().to_owned(),
    }
}

// ----------------------------------------------------------------------------- EFS deleting

/// Targets in a, b and c, the list naming a and b only, and the state saying c (the
/// function's own) was drained and unlisted: the next run whose fleet runs that list deletes
/// c. The service was deployed before that list, so the first run redeploys and waits.
async fn drained_c(files: usize) -> (Testbed, MountTarget) {
    let mut tb = testbed(World::builder().mount_targets_in(&['a', 'b', 'c']), files).await;
    let targets = tb.world.mount_targets().await;
    let c = targets[2].clone();
    tb.world.put_parameter(&contract_json(&targets[..2])).await;
    let root = shard_root(2, &c);
    std::fs::create_dir_all(tb.mount.dir_of_root(&root)).expect("c's shard directory");
    tb.world
        .put_state(&json!({
            "created": {&c.id: {"az_id": c.az_id, "at": 1}},
            "draining": {&c.id: {"root": root, "since": 1, "unlisted": true}},
        }))
        .await;
    tb.env("SCALE_IN_COOLDOWN_SECONDS", "0");
    let inv = tb.invoke(&event("reconcile")).await;
    check_eq!(inv, inv.response()["decision"], json!("wait_for_fleet"));
    check!(inv, has_action(inv.response(), "force_deployment"));
    tb.proxy.reset_counts();
    (tb, c)
}

/// The delete's answer is lost; the SDK's retry finds the target `deleting`, refused with
/// `code`. The run counts it deleted, and the target that is `deleting` is neither listed,
/// nor serving, nor its AZ free.
async fn a_retried_delete_finds_the_target_going(status: u16, code: &str) -> (Testbed, String) {
    let (mut tb, c) = drained_c(100).await;
    tb.env("API_ATTEMPT_TIMEOUT_SECONDS", "1");
    tb.env("API_CALL_TIMEOUT_SECONDS", "6");
    tb.proxy.delete_slowly(1000, status, code);
    tb.proxy.lose_answer("DeleteMountTarget", 1);

    let inv = tb.invoke(&event("reconcile")).await;
    check_eq!(inv, error_type(&inv), "", "the run failed");
    let r = inv.response();
    check_eq!(inv, strings(r, "deleted"), vec![c.id.clone()]);
    check_eq!(
        inv,
        tb.proxy.count("DeleteMountTarget"),
        2,
        "the SDK retried"
    );
    check_eq!(inv, tb.proxy.shown_deleting(), vec![c.id.clone()]);
    check_eq!(
        inv,
        r["total"],
        json!(2),
        "a deleting target does not serve"
    );
    check!(inv, !listed(&tb).await.contains(&c.id));
    check_eq!(inv, tb.proxy.count("CreateMountTarget"), 0);
    (tb, c.id)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_delete_retried_while_deleting_is_done_and_the_az_stays_held_until_it_is_gone() {
    let (tb, c) = a_retried_delete_finds_the_target_going(409, "IncorrectMountTargetState").await;
    let state = tb.world.state().await;
    assert!(state["draining"].get(&c).is_none(), "{state}");

    // Files for three shards while c is still deleting: its AZ is not free, and no room for
    // a target either, so the third shard goes on a and b; c is reported, neither serving
    // nor listed.
    tb.mount.generate(2 * THRESHOLD + 100);
    // Every client reads version 2, so the list may grow past one shard a target.
    tb.fleet_reports(&[1, 2]).await;
    tb.proxy.reset_counts();
    let inv = tb.invoke(&event("reconcile")).await;
    let r = inv.response();
    check_eq!(inv, tb.proxy.count("CreateMountTarget"), 0);
    check_eq!(inv, r["decision"], json!("add_shards"));
    check!(inv, has_warning(r, "target_not_serving"));
    check_eq!(
        inv,
        (
            r["total"].clone(),
            r["desired"].clone(),
            r["shards"].clone()
        ),
        (json!(2), json!(2), json!(2))
    );
    // The third shard is announced: it takes files once the fleet runs the list naming it.
    check_eq!(inv, r["homes"], json!("announced"));
    check!(inv, !listed(&tb).await.contains(&c));
    check_eq!(inv, tb.proxy.shown_deleting(), vec![c.clone()]);

    // Once it is gone its AZ is free again.
    tb.proxy.finish_deleting();
    tb.proxy.reset_counts();
    let inv = tb.invoke(&event("reconcile")).await;
    check_eq!(inv, inv.response()["decision"], json!("create"));
    check_eq!(
        inv,
        inv.response()["new_mount_target"]["subnet_id"],
        json!(tb.world.subnet('c').id)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_delete_retried_after_the_target_is_gone_is_done() {
    let (_tb, _c) = a_retried_delete_finds_the_target_going(404, "MountTargetNotFound").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_proxy_shows_a_deleted_target_deleting_and_refuses_a_second_delete_as_aws_does() {
    let tb = testbed(World::builder().mount_targets_in(&['a', 'b']), 0).await;
    tb.proxy.delete_slowly(2, 409, "IncorrectMountTargetState");
    let efs = aws_sdk_efs::Client::from_conf(
        tb.aws
            .efs
            .config()
            .to_builder()
            .endpoint_url(tb.proxy.endpoint())
            .build(),
    );
    let b = tb.world.mount_targets().await[1].id.clone();
    efs.delete_mount_target()
        .mount_target_id(&b)
        .send()
        .await
        .unwrap();
    let err = efs
        .delete_mount_target()
        .mount_target_id(&b)
        .send()
        .await
        .expect_err("a delete of a target still deleting is refused");
    assert_eq!(err.code(), Some("IncorrectMountTargetState"), "{err:?}");
    let fs = &tb.world.file_system_id;
    let states =
        |out: aws_sdk_efs::operation::describe_mount_targets::DescribeMountTargetsOutput| {
            let d = out.mount_targets().iter();
            d.map(|t| t.life_cycle_state().as_str().to_owned())
                .collect::<Vec<_>>()
        };
    let seen = efs
        .describe_mount_targets()
        .file_system_id(fs)
        .send()
        .await
        .unwrap();
    assert_eq!(states(seen), ["available", "deleting"]);
    let by_id = efs
        .describe_mount_targets()
        .mount_target_id(&b)
        .send()
        .await
        .unwrap();
    assert_eq!(states(by_id), ["deleting"]);
    let later = efs
        .describe_mount_targets()
        .file_system_id(fs)
        .send()
        .await
        .unwrap();
    assert_eq!(states(later), ["available"], "moto deleted it at once");
}

// ----------------------------------------------------------------------------- pages

#[tokio::test(flavor = "multi_thread")]
async fn every_page_of_subnets_and_mount_targets_is_read() {
    let tb = testbed(
        World::builder().mount_targets_in(&['a', 'b']),
        2 * THRESHOLD + 100,
    )
    .await;
    tb.proxy.page(2);
    let c = tb.world.subnet('c').id.clone();
    let ec2 = aws_sdk_ec2::Client::from_conf(
        tb.aws
            .ec2
            .config()
            .to_builder()
            .endpoint_url(tb.proxy.endpoint())
            .build(),
    );
    let vpc = aws_sdk_ec2::types::Filter::builder()
        .name("vpc-id")
        .values(&tb.world.vpc_id)
        .build();
    let first = ec2.describe_subnets().filters(vpc).send().await.unwrap();
    let on_first: Vec<&str> = first
        .subnets()
        .iter()
        .filter_map(|s| s.subnet_id())
        .collect();
    assert_eq!(on_first.len(), 2, "{on_first:?}");
    assert!(!on_first.contains(&c.as_str()) && first.next_token().is_some());

    // The only free AZ's subnet is on the second page of the VPC's subnets.
    tb.proxy.reset_counts();
    let inv = tb.invoke(&event("reconcile")).await;
    let r = inv.response();
    check_eq!(inv, r["decision"], json!("create"));
    check_eq!(inv, r["new_mount_target"]["subnet_id"], json!(c));
    check!(inv, tb.proxy.pages("DescribeSubnets") >= 2);

    // Three targets, the third on the second page: every AZ holds one, so the shards the
    // files need go on them and no target is asked for (moto would refuse it as AWS does).
    tb.mount.generate(4 * THRESHOLD);
    tb.fleet_reports(&[1, 2]).await;
    tb.proxy.reset_counts();
    let inv = tb.invoke(&event("reconcile")).await;
    check_eq!(inv, inv.response()["decision"], json!("add_shards"));
    check_eq!(inv, tb.proxy.count("CreateMountTarget"), 0);
    check!(inv, tb.proxy.pages("DescribeMountTargets") >= 2);
    let all = tb.world.mount_target_ids().await;
    check_eq!(inv, all.len(), 3);
    check_eq!(inv, listed(&tb).await, all);
}

// ----------------------------------------------------------------------------- ECS

#[tokio::test(flavor = "multi_thread")]
async fn eleven_services_are_described_ten_at_a_time_and_all_redeployed() {
    let names: Vec<String> = (0..11).map(|i| format!("svc-{i:02}")).collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let tb = testbed(
        World::builder().services(&refs).parameter_after_service(),
        100,
    )
    .await;
    let ecs = aws_sdk_ecs::Client::from_conf(
        tb.aws
            .ecs
            .config()
            .to_builder()
            .endpoint_url(tb.proxy.endpoint())
            .build(),
    );
    let err = ecs
        .describe_services()
        .cluster(&tb.world.cluster)
        .set_services(Some(names.clone()))
        .send()
        .await
        .expect_err("ECS takes at most 10 services a call");
    assert!(
        err.as_service_error()
            .is_some_and(|e| e.is_invalid_parameter_exception()),
        "{err:?}"
    );

    let before = tb.world.deployment_ids().await;
    tb.proxy.reset_counts();
    let inv = tb.invoke(&event("reconcile")).await;
    check_eq!(inv, error_type(&inv), "");
    check_eq!(inv, tb.proxy.count("UpdateService"), 11);
    let after = tb.world.deployment_ids().await;
    let redeployed = before.iter().zip(&after).filter(|(b, a)| b != a).count();
    check_eq!(inv, redeployed, 11);
}

/// Files in b's shard whose home under the published list is a's: a rebalance moves them.
fn misplace_files(tb: &Testbed) -> usize {
    let text = tb.world.seeded_parameter.clone().expect("a seeded list");
    let list = efs_router::MountTargetList::from_json(&text).expect("the seeded list");
    let shards = list.shards();
    let b = &list.mount_targets[1];
    let dir = tb.mount.dir_of_root(&b.root);
    std::fs::create_dir_all(&dir).expect("b's shard directory");
    let mut misplaced = 0;
    for i in 0..40 {
        let name = format!("device-{i}-1795000000000.json");
        let logical = format!("data/analysis/{name}");
        let home = efs_router::shard_index(&logical, &shards, list.strategy).expect("routes");
        if shards[home].id != b.id {
            std::fs::write(dir.join(&name), b"{}\n").expect("write a reading");
            misplaced += 1;
        }
    }
    misplaced
}

#[tokio::test(flavor = "multi_thread")]
async fn a_deployment_forced_during_a_rollout_holds_moves_until_every_old_one_stops() {
    let tb = testbed(World::builder().mount_targets_in(&['a', 'b']), 0).await;
    tb.proxy.hold_rollouts();
    let misplaced = misplace_files(&tb);
    assert!(misplaced > 0);
    let text = tb.world.published().await.value;
    let rebalance = json!({"action": "rebalance", "max_moves": 100});

    // Published, redeployed; published again while that rollout runs, redeployed again: two
    // old deployments still run tasks beside the PRIMARY one.
    for old in 1..=2 {
        tb.world.put_parameter(&text).await;
        let inv = tb.invoke(&event("reconcile")).await;
        check_eq!(inv, error_type(&inv), "");
        check!(inv, has_action(inv.response(), "force_deployment"));
        check_eq!(inv, tb.proxy.old_deployments("ingest"), old);
    }
    let inv = tb.invoke(&rebalance).await;
    check!(inv, !has_action(inv.response(), "move_files"));
    check!(
        inv,
        strings(inv.response(), "waiting_for").contains(&"ingest".to_string())
    );

    // The older one has stopped its tasks; the newer one still runs: still nothing moves.
    tb.proxy.stop_oldest_tasks("ingest");
    tb.proxy.reset_counts();
    let inv = tb.invoke(&rebalance).await;
    check!(inv, !has_action(inv.response(), "move_files"));
    check!(
        inv,
        strings(inv.response(), "waiting_for").contains(&"ingest".to_string())
    );
    tb.assert_nothing_changed(&inv);

    tb.proxy.complete_rollouts();
    let inv = tb.invoke(&rebalance).await;
    check_eq!(inv, inv.response()["moves"]["moved"], json!(misplaced));
}
// ----------------------------------------------------------------------------- SSM's limit

/// A list naming target `a` and `gone` targets deleted by hand, each `draining` or not.
fn list_with_gone(a: &MountTarget, gone: usize, draining: bool) -> String {
    let mut entries = vec![json!({
        "id": a.id, "ip": a.ip, "az": a.az, "az_id": a.az_id, "subnet_id": a.subnet_id, "root": "/",
    })];
    for k in 0..gone {
        let mut e = json!({
            "id": format!("fsmt-{k:017x}"), "ip": format!("10.0.9.{k}"), "az": "us-east-1b",
            "az_id": "use1-az2", "subnet_id": format!("subnet-{k:017x}"),
            "root": format!("/shards/gone-{k}"),
        });
        if draining {
            e["draining"] = json!(true);
        }
        entries.push(e);
    }
    json!({"mount_targets": entries, "strategy": "rendezvous"}).to_string()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_list_too_large_for_its_parameter_stops_the_run_before_anything_changes() {
    let tb = testbed(World::builder(), 100).await;
    tb.proxy.limit_parameter_values(4096);
    let a = tb.world.mount_targets().await[0].clone();
    // Enough targets gone by hand that marking them draining takes the list past 4,096.
    let gone = (1..100)
        .find(|&n| list_with_gone(&a, n, true).len() > 4096)
        .expect("some number of entries crosses the limit");
    let seeded = list_with_gone(&a, gone, false);
    assert!(seeded.len() <= 4096);
    tb.world.put_parameter(&seeded).await;
    let missing: serde_json::Map<String, serde_json::Value> = (0..gone)
        .map(|k| (format!("fsmt-{k:017x}"), json!(1)))
        .collect();
    let state = json!({ "missing": missing });
    tb.world.put_state(&state).await;
    let parameter = tb.world.published().await;

    tb.proxy.reset_counts();
    let inv = tb.invoke(&event("reconcile")).await;
    check_eq!(inv, error_type(&inv), "ParameterTooLarge");
    check!(inv, inv.error_text().contains(&tb.world.parameter_name));
    check_eq!(inv, tb.proxy.count("PutParameter"), 0);
    check_eq!(inv, tb.proxy.state_writes(), 0);
    tb.assert_nothing_changed(&inv);
    assert_eq!(tb.world.published().await, parameter);
    assert_eq!(tb.world.state().await, state);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_value_ssm_refuses_as_too_large_is_an_error_naming_the_parameter() {
    let tb = testbed(World::builder().parameter(support::Seed::Absent), 100).await;
    // Lower than the function's own bound, so that SSM is the one to refuse.
    tb.proxy.limit_parameter_values(50);
    let inv = tb.invoke(&event("reconcile")).await;
    check_eq!(inv, error_type(&inv), "ParameterTooLarge");
    check!(inv, inv.error_text().contains(&tb.world.parameter_name));
    check_eq!(
        inv,
        tb.proxy.count("PutParameter"),
        1,
        "asked once, and refused"
    );
    check!(inv, tb.world.parameter().await.is_none());
}

// ----------------------------------------------------------------------------- SSM lagging

/// SSM's reads can lag a write: right after a PutParameter a GetParameter may answer the
/// previous version, or `ParameterNotFound` for a parameter the write created. The proxy
/// plays it; moto never does.
#[tokio::test(flavor = "multi_thread")]
async fn the_proxy_answers_a_read_right_after_a_write_with_what_ssm_held_before() {
    let tb = testbed(World::builder(), 0).await;
    tb.proxy
        .lag_parameter_reads(1000, 1, std::time::Duration::from_secs(30), 7);
    let ssm = tb.ssm_through_the_proxy();
    let put = |value: &'static str| {
        ssm.put_parameter()
            .name("/lagging")
            .value(value)
            .r#type(aws_sdk_ssm::types::ParameterType::String)
            .overwrite(true)
            .send()
    };
    let get = || ssm.get_parameter().name("/lagging").send();
    put("one").await.unwrap();
    let err = get().await.expect_err("a read right after a create");
    assert_eq!(err.code(), Some("ParameterNotFound"), "{err:?}");
    let now = get().await.unwrap();
    let p = now.parameter().unwrap();
    assert_eq!((p.value(), p.version()), (Some("one"), 1));

    put("two").await.unwrap();
    let stale = get().await.unwrap();
    let p = stale.parameter().unwrap();
    assert_eq!(
        (p.value(), p.version()),
        (Some("one"), 1),
        "the previous version"
    );
    let now = get().await.unwrap();
    let p = now.parameter().unwrap();
    assert_eq!((p.value(), p.version()), (Some("two"), 2));
    let served = tb.proxy.stale_reads();
    let served: Vec<(&str, &str, usize)> = served
        .iter()
        .map(|((name, kind), n)| (name.as_str(), *kind, *n))
        .collect();
    assert_eq!(
        served,
        [
            ("/lagging", "not found", 1),
            ("/lagging", "previous version", 1)
        ]
    );
}

/// Every read of the state and of the list right after the function wrote it answers what
/// was there before (the read of the version after it, the function's check, answers as it
/// is): the run that creates a target still records it as its own (or scale-in would never
/// remove it) and publishes it once.
#[tokio::test(flavor = "multi_thread")]
async fn a_target_created_while_ssm_reads_lag_stays_recorded_as_the_functions_own() {
    let mut tb = testbed(World::builder(), THRESHOLD + 100).await;
    tb.env("SCALE_IN_COOLDOWN_SECONDS", "0");
    tb.proxy
        .lag_parameter_reads(1000, 1, std::time::Duration::from_secs(30), 11);
    let inv = tb.invoke(&event("reconcile")).await;
    check_eq!(inv, error_type(&inv), "", "the run failed");
    check_eq!(inv, inv.response()["decision"], json!("create"));
    let created = tb.proxy.created_mount_targets();
    check_eq!(inv, created.len(), 1);
    let b = created[0].clone();
    let state = tb.world.state().await;
    check!(inv, state["created"].get(&b).is_some(), "state: {state}");
    check!(inv, listed(&tb).await.contains(&b));
    check!(inv, !tb.proxy.stale_reads().is_empty());

    // The next runs, their reads lagging too, keep the record.
    for _ in 0..3 {
        let inv = tb.invoke(&event("reconcile")).await;
        check_eq!(inv, error_type(&inv), "", "the run failed");
        let state = tb.world.state().await;
        check!(inv, state["created"].get(&b).is_some(), "state: {state}");
        check_eq!(inv, tb.proxy.created_mount_targets().len(), 1);
    }
}

/// A run saved the state saying drained target c is unlisted and published the list without
/// it; the next run read the state as it was before (SSM's read lagging the write) and saved
/// it again: c is draining but no longer unlisted, and the list does not name it. The drain
/// still ends: c is unlisted again and deleted (the soak, seed 1, found it stuck forever).
#[tokio::test(flavor = "multi_thread")]
async fn a_drained_target_whose_unlisting_a_stale_state_read_lost_is_still_deleted() {
    let mut tb = testbed(World::builder().mount_targets_in(&['a', 'b', 'c']), 100).await;
    let targets = tb.world.mount_targets().await;
    let c = targets[2].clone();
    tb.world.put_parameter(&contract_json(&targets[..2])).await;
    let root = shard_root(2, &c);
    std::fs::create_dir_all(tb.mount.dir_of_root(&root)).expect("c's shard directory");
    tb.world
        .put_state(&json!({
            "created": {&c.id: {"az_id": c.az_id, "at": 1}},
            "draining": {&c.id: {"root": root, "since": 1}},
        }))
        .await;
    tb.env("SCALE_IN_COOLDOWN_SECONDS", "0");
    for _ in 0..4 {
        let inv = tb.invoke(&event("reconcile")).await;
        check_eq!(inv, error_type(&inv), "", "the run failed");
        if !tb.world.mount_target_ids().await.contains(&c.id) {
            check!(inv, !listed(&tb).await.contains(&c.id));
            return;
        }
    }
    panic!(
        "{} was never deleted; state {}",
        c.id,
        tb.world.state().await
    );
}

/// Each run's first read of a parameter lags the last run's write (SSM's reads may answer the
/// previous version for a moment): the function asks whether a newer version exists and reads
/// again, so no run plans from the list or state before the last run's. The soak (seed 26,
/// 2,000 steps) found a run that planned from the list before the last publish and published
/// a list without the shards it had added, while clients wrote into them.
#[tokio::test(flavor = "multi_thread")]
async fn a_read_that_lags_the_last_write_is_read_again() {
    // Every AZ has a target: growth adds shard directories, which takes a version 2 list.
    let mut tb = testbed(
        World::builder().mount_targets_in(&['a', 'b', 'c']),
        3 * THRESHOLD + 100,
    )
    .await;
    tb.unset("CLIENT_REPORTS");
    tb.env("CLIENT_REPORTS", "ecs-may-hide-files");
    // Every write's next read answers what the parameter held before it.
    tb.proxy
        .lag_parameter_reads(1000, 1, std::time::Duration::from_secs(60), 7);
    tb.fleet_reports(&[1, 2]).await;
    let inv = tb.invoke(&event("reconcile")).await;
    check_eq!(inv, error_type(&inv), "", "the run failed");
    let grown = tb.world.published().await;
    let shards = |v: &serde_json::Value| -> u64 {
        v["mount_targets"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|t| t["shards"].as_u64().unwrap_or(1))
            .sum()
    };
    check!(
        inv,
        shards(&grown.json()) > 3,
        "no shards added: {}",
        grown.value
    );
    // Its publish is recorded: a later read older than it is known to lag.
    check_eq!(
        inv,
        tb.world.state().await["published"]["version"],
        json!(grown.version)
    );
    // A client that reads version 1 only reports now: a list of version 1 would be held so,
    // but this one is version 2 already and stays so, however SSM's first read lags.
    tb.mount.report("00000000000000aa", &grown.value, &[1]);
    let inv = tb.invoke(&event("reconcile")).await;
    check_eq!(inv, error_type(&inv), "", "the run failed");
    let now = tb.world.published().await;
    check!(
        inv,
        shards(&now.json()) >= shards(&grown.json()),
        "the shards added went: {} then {}",
        grown.value,
        now.value
    );
    let stale: usize = tb.proxy.stale_reads().values().sum();
    assert!(stale > 0, "no read lagged: the test tested nothing");
}

/// A run whose read of the state lags a write, and whose check of the next version lags too
/// (SSM's versioned reads may), plans from the older state; no read can tell. Its first change
/// is then the save of that state, whose answer shows the version it never read: the run puts
/// that version back and stops before anything else changes. Here it would have published the
/// list an operator deleted.
#[tokio::test(flavor = "multi_thread")]
async fn a_run_fooled_by_an_older_state_changes_nothing() {
    let tb = testbed(World::builder(), 100).await;
    tb.world.put_state(&json!({})).await;
    for _ in 0..2 {
        let inv = tb.invoke(&event("reconcile")).await;
        check_eq!(inv, error_type(&inv), "", "the run failed");
    }
    let inv = tb.invoke(&event("reconcile")).await;
    check_eq!(inv, inv.response()["actions"], json!([]), "not settled");
    let older = tb.world.state().await;
    tb.aws
        .ssm
        .delete_parameter()
        .name(&tb.world.parameter_name)
        .send()
        .await
        .expect("DeleteParameter");
    // A newer state, written through SSM's lag: its next two reads (the value, then the
    // check of the version after it) answer what was there before.
    let mut newer = older.clone();
    newer["excluded"] = json!({"subnet-0fooled": {"until": 4_000_000_000u64, "reason": "newer"}});
    tb.proxy
        .lag_parameter_reads(1000, 2, std::time::Duration::from_secs(60), 3);
    tb.put_through_the_proxy(support::world::STATE_PARAMETER_NAME, &newer.to_string())
        .await;
    let inv = tb.invoke(&event("reconcile")).await;
    let served = tb.proxy.stale_reads();
    let lagged = |kind| served.get(&(support::world::STATE_PARAMETER_NAME.to_owned(), kind));
    check_eq!(inv, lagged("previous version"), Some(&1), "{served:?}");
    check_eq!(inv, lagged("version not found"), Some(&1), "{served:?}");
    check_eq!(inv, error_type(&inv), "StaleWrite");
    check!(inv, tb.world.parameter().await.is_none(), "a list went out");
    check_eq!(
        inv,
        tb.world.state().await,
        newer,
        "the newer state is not back"
    );
}

/// A newer list (version 2) written through SSM's lag: its next two reads (the value, then the
/// check of the version after it) answer version 1. With `record`, the state says version 2
/// was the function's last publish, as a run's publish records it.
async fn publish_through_the_lag(tb: &Testbed, record: bool, seed: u64) {
    let older = tb.world.published().await.value;
    // Other bytes, the same targets: a fleet that reports version 1 runs an older list.
    let newer = format!("{older} ");
    tb.proxy
        .lag_parameter_reads(1000, 2, std::time::Duration::from_secs(60), seed);
    tb.put_through_the_proxy(&tb.world.parameter_name, &newer)
        .await;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let published = json!({"published": {"version": 2, "at": now}});
    if record {
        tb.world.put_state(&published).await;
    } else {
        tb.world.put_state(&json!({})).await;
        // The record, written through the lag as well: the run reads the state before it.
        tb.put_through_the_proxy(support::world::STATE_PARAMETER_NAME, &published.to_string())
            .await;
    }
}

/// Files in b's shard, by name.
fn in_b(tb: &Testbed) -> BTreeSet<String> {
    let text = tb.world.seeded_parameter.clone().expect("a seeded list");
    let list = efs_router::MountTargetList::from_json(&text).expect("the seeded list");
    let dir = tb.mount.dir_of_root(&list.mount_targets[1].root);
    std::fs::read_dir(dir)
        .expect("b's shard")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect()
}

/// Misplaced files in b's shard, a fleet on version 1 of the list, then version 2 published
/// through SSM's lag (`publish_through_the_lag`), and a rebalance: its run, and b's files
/// before it.
async fn rebalance_after_a_lagging_publish(
    record: bool,
    seed: u64,
) -> (Testbed, support::Invocation, BTreeSet<String>) {
    let tb = testbed(World::builder().mount_targets_in(&['a', 'b']), 0).await;
    assert!(misplace_files(&tb) > 0);
    tb.fleet_reports(&[1, 2]).await;
    publish_through_the_lag(&tb, record, seed).await;
    let before = in_b(&tb);
    let inv = tb
        .invoke(&json!({"action": "rebalance", "max_moves": 100}))
        .await;
    (tb, inv, before)
}

/// The function published version 2 of the list, and the fleet still runs version 1. A
/// rebalance's read of the list lags, and so does its check of the version after it: the list
/// and the fleet look converged, and its files could move by version 1. The state records
/// version 2 as published, so the run reads the list again, finds the fleet behind, and waits;
/// no file moves (the soak, seed 707, found a run that moved a drain's files so).
#[tokio::test(flavor = "multi_thread")]
async fn a_run_fooled_by_an_older_list_moves_nothing() {
    let (tb, inv, before) = rebalance_after_a_lagging_publish(true, 5).await;
    let served = tb.proxy.stale_reads();
    let lagged = |kind| served.get(&(tb.world.parameter_name.clone(), kind));
    check_eq!(inv, lagged("previous version"), Some(&1), "{served:?}");
    check_eq!(inv, lagged("version not found"), Some(&1), "{served:?}");
    check_eq!(inv, error_type(&inv), "");
    check!(inv, !has_action(inv.response(), "move_files"));
    check_eq!(inv, in_b(&tb), before, "files moved");
}

/// As above, and the state's read lags too (the record of version 2 with it): nothing read
/// shows that the list is older. The rebalance saves the state before it moves anything, and
/// that save shows the version it never read: it stops there, and no file moves.
#[tokio::test(flavor = "multi_thread")]
async fn a_rebalance_fooled_by_an_older_state_and_list_moves_nothing() {
    let (tb, inv, before) = rebalance_after_a_lagging_publish(false, 9).await;
    let served = tb.proxy.stale_reads();
    let state = support::world::STATE_PARAMETER_NAME.to_owned();
    let lagged = served.get(&(state, "previous version"));
    check_eq!(inv, lagged, Some(&1), "{served:?}");
    check_eq!(inv, error_type(&inv), "StaleWrite");
    check_eq!(inv, in_b(&tb), before, "files moved");
    let recorded = tb.world.state().await["published"]["version"].clone();
    check_eq!(inv, recorded, json!(2));
}
