//! End-to-end scenarios: the function binary as Lambda runs it (our Runtime API), against
//! moto_server (through a fault-injecting proxy), on a temporary directory of generated files.
//! Black box: environment and events in, response out; AWS state observed through the SDK.
//!
//! Needs `moto_server` on PATH (`pip install "moto[server]"`).

#[macro_use]
mod support;

use std::collections::BTreeSet;
use std::time::Duration;

use serde_json::{json, Value};

use support::function::pretty;
use support::runtime_api::{Pending, Report, RuntimeApi};
use support::world::{MountTarget, PARAMETER_NAME};
use support::{event, has_action, strings, Aws, Invocation, Moto, Proxy, Seed, Testbed, World};

const BIN: &str = env!("CARGO_BIN_EXE_efs-mount-autoscaler");

/// Scaled down from 60,000 files at 50,000: the same arithmetic, quicker to generate.
const THRESHOLD: usize = 500;
const BELOW: usize = 100;
const CROSSING: usize = 600;

/// A testbed with `files` readings in the first shard and `FILE_THRESHOLD` = `threshold`.
async fn testbed(world: support::world::WorldBuilder, files: usize, threshold: usize) -> Testbed {
    let mut tb = Testbed::new(BIN, world).await;
    tb.mount.generate(files);
    tb.env("FILE_THRESHOLD", threshold.to_string());
    tb
}

/// The response's fields and their types, as the contract lists them.
fn assert_response_shape(inv: &Invocation) {
    let r = inv.response();
    let ok = r["statusCode"] == json!(200)
        && r["file_count"].is_u64()
        && r["files_per_shard"].is_object()
        && r["threshold"].is_u64()
        && r["desired"].is_u64()
        && (r["new_mount_target"].is_object() || r["new_mount_target"].is_null())
        && r["total"].is_u64()
        && r["mount_targets"].is_array()
        && r["actions"]
            .as_array()
            .is_some_and(|a| a.iter().all(Value::is_string))
        && r["decision"].is_string()
        && r["reason"].is_string()
        && r["warning_kinds"].as_array().map(Vec::len) == r["warnings"].as_array().map(Vec::len);
    check!(inv, ok, "response does not have the contract's shape");
}

/// The published entries (`mount_targets` of the parameter's JSON).
fn entries(published: &Value) -> Vec<Value> {
    published["mount_targets"]
        .as_array()
        .cloned()
        .unwrap_or_else(|| panic!("no mount_targets array in {}", pretty(published)))
}

fn entry_ids(published: &Value) -> BTreeSet<String> {
    entries(published)
        .iter()
        .filter_map(|e| e["id"].as_str().map(str::to_string))
        .collect()
}

/// Every described target is published with its id, IP, AZ, AZ id and subnet, and the
/// roots are `/` for `first` and `/shards/<az-id>` for the others.
fn assert_published_is(
    published: &Value,
    described: &[MountTarget],
    first: &str,
    strategy: &str,
    inv: &Invocation,
) {
    let context = format!(
        "published {}\ndescribed {described:#?}\n{}",
        pretty(published),
        inv.describe()
    );
    assert_eq!(
        published["strategy"],
        json!(strategy),
        "strategy\n{context}"
    );
    let list = entries(published);
    assert_eq!(
        list.len(),
        described.len(),
        "one entry per mount target\n{context}"
    );
    for t in described {
        let e = list
            .iter()
            .find(|e| e["id"] == json!(t.id))
            .unwrap_or_else(|| panic!("{} is not published\n{context}", t.id));
        assert_eq!(e["ip"], json!(t.ip), "ip of {}\n{context}", t.id);
        assert_eq!(e["az"], json!(t.az), "az of {}\n{context}", t.id);
        assert_eq!(e["az_id"], json!(t.az_id), "az_id of {}\n{context}", t.id);
        assert_eq!(
            e["subnet_id"],
            json!(t.subnet_id),
            "subnet_id of {}\n{context}",
            t.id
        );
        let root = if t.id == first {
            "/".to_string()
        } else {
            format!("/shards/{}", t.az_id)
        };
        assert_eq!(e["root"], json!(root), "root of {}\n{context}", t.id);
    }
}

/// The one mount target the world started with (in us-east-1a).
async fn original_target(world: &World) -> MountTarget {
    let targets = world.mount_targets().await;
    targets
        .into_iter()
        .find(|t| t.az == "us-east-1a")
        .expect("the seeded mount target in us-east-1a")
}

/// What the function published holds one target per AZ, and each target it published is one
/// AWS reports `available`: as moto describes it directly, and not a target the proxy still
/// shows the function `creating`. Checked against the published list (the function's work),
/// not against the description it is compared with.
async fn assert_one_per_az(tb: &Testbed, inv: &Invocation) {
    let published = tb.world.published().await.json();
    let described = tb.world.mount_targets().await;
    let creating = tb.proxy.shown_creating();
    let context = format!(
        "published {}\ndescribed {described:#?}\nshown creating {creating:?}",
        pretty(&published)
    );
    let list = entries(&published);
    let published_azs: Vec<&str> = list.iter().filter_map(|e| e["az"].as_str()).collect();
    let distinct: BTreeSet<&str> = published_azs.iter().copied().collect();
    check_eq!(
        inv,
        (distinct.len(), published_azs.len()),
        (list.len(), list.len()),
        "published entries without an AZ, or two in one AZ\n{context}"
    );
    let described_azs: BTreeSet<&str> = described.iter().map(|t| t.az.as_str()).collect();
    check_eq!(
        inv,
        distinct,
        described_azs,
        "the published AZs are not those AWS has targets in\n{context}"
    );
    for e in &list {
        let id = e["id"].as_str().unwrap_or_default();
        let state = described
            .iter()
            .find(|t| t.id == id)
            .map(|t| t.state.as_str());
        check_eq!(
            inv,
            state,
            Some("available"),
            "published target {id}: as AWS describes it\n{context}"
        );
        check!(
            inv,
            !creating.iter().any(|c| c == id),
            "published target {id} is still creating as the function sees it\n{context}"
        );
    }
}

// ----------------------------------------------------------------------------- scenarios

#[tokio::test(flavor = "multi_thread")]
async fn below_threshold_changes_nothing() {
    let tb = testbed(World::builder(), BELOW, THRESHOLD).await;
    let parameter = tb.world.published().await;
    let deployments = tb.world.deployment_ids().await;

    let inv = tb.invoke(&event("scheduled")).await;
    assert_response_shape(&inv);
    let r = inv.response();
    let original = original_target(&tb.world).await;
    check_eq!(inv, r["file_count"], json!(BELOW));
    check_eq!(inv, r["files_per_target"][&original.id], json!(BELOW));
    check_eq!(inv, r["files_per_shard"]["/"], json!(BELOW));
    check_eq!(inv, r["threshold"], json!(THRESHOLD));
    check_eq!(inv, r["desired"], json!(1));
    check_eq!(inv, r["total"], json!(1));
    check!(inv, r["new_mount_target"].is_null());
    for a in ["create_mount_target", "publish", "force_deployment"] {
        check!(inv, !has_action(r, a), "unexpected action {a}");
    }
    tb.assert_nothing_changed(&inv);
    assert_eq!(tb.world.published().await, parameter, "parameter rewritten");
    assert_eq!(
        tb.world.deployment_ids().await,
        deployments,
        "service redeployed"
    );
    assert_eq!(tb.world.mount_targets().await.len(), 1);
    assert!(!tb.mount.has_shards(), "a shard directory was created");
}

#[tokio::test(flavor = "multi_thread")]
async fn crossing_the_threshold_adds_one_mount_target_in_a_free_az_and_publishes_it() {
    let tb = testbed(World::builder(), CROSSING, THRESHOLD).await;
    let original = original_target(&tb.world).await;
    let deployments = tb.world.deployment_ids().await;

    let inv = tb.invoke(&event("scheduled")).await;
    assert_response_shape(&inv);
    let r = inv.response();
    check_eq!(inv, r["file_count"], json!(CROSSING));
    check_eq!(inv, r["files_per_target"][&original.id], json!(CROSSING));
    check_eq!(inv, r["desired"], json!(2));
    check_eq!(inv, r["total"], json!(2));

    // One new target, in our VPC, in an AZ with none before (b or c: not a, not through a's
    // second subnet, not the other VPC's subnet in b, not moto's default VPC).
    let targets = tb.world.mount_targets().await;
    check_eq!(inv, targets.len(), 2, "{targets:#?}");
    assert_one_per_az(&tb, &inv).await;
    let created = targets.iter().find(|t| t.id != original.id).unwrap();
    assert_eq!(
        created.vpc_id, tb.world.vpc_id,
        "created in another VPC: {created:#?}"
    );
    let free = [
        tb.world.subnet('b').id.clone(),
        tb.world.subnet('c').id.clone(),
    ];
    assert!(
        free.contains(&created.subnet_id),
        "created in {created:#?}, not in a free AZ's subnet {free:?}"
    );
    assert_eq!(
        tb.proxy.count("CreateMountTarget"),
        1,
        "{:?}",
        tb.proxy.counts()
    );

    let new = &r["new_mount_target"];
    check_eq!(inv, new["id"], json!(created.id));
    check_eq!(inv, new["ip"], json!(created.ip));
    check_eq!(inv, new["az"], json!(created.az));
    check_eq!(inv, new["subnet_id"], json!(created.subnet_id));
    check_eq!(
        inv,
        new["root"],
        json!(format!("/shards/{}", created.az_id))
    );

    // Its shard directory exists.
    let dir = tb.mount.shard_dir(&created.az_id);
    check!(inv, dir.is_dir(), "{} was not created", dir.display());

    // The published list is what DescribeMountTargets says, in the contract's form.
    let published = tb.world.published().await.json();
    assert_published_is(&published, &targets, &original.id, "rendezvous", &inv);
    check_eq!(
        inv,
        r["mount_targets"],
        published["mount_targets"],
        "response vs parameter"
    );

    // The service was redeployed.
    let after = tb.world.deployment_ids().await;
    check_ne!(inv, after, deployments, "no new deployment");
    for a in ["create_mount_target", "publish", "force_deployment"] {
        check!(inv, has_action(r, a), "missing action {a}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_immediate_second_run_does_nothing() {
    let tb = testbed(World::builder(), CROSSING, THRESHOLD).await;
    let first = tb.invoke(&event("scheduled")).await;
    check_eq!(first, first.response()["homes"], json!("announced"));
    // The proxy's ECS shows no task started before that publish, and the app's tasks report
    // nothing: the fleet runs the announcement, and the next run switches homes.
    let switch = tb.invoke(&event("scheduled")).await;
    check_eq!(switch, switch.response()["homes"], json!("switched"));
    let parameter = tb.world.published().await;
    let deployments = tb.world.deployment_ids().await;
    tb.proxy.reset_counts();

    let inv = tb.invoke(&event("reconcile")).await;
    assert_response_shape(&inv);
    let r = inv.response();
    check_eq!(inv, r["desired"], json!(2));
    check_eq!(inv, r["total"], json!(2));
    check!(inv, r["new_mount_target"].is_null());
    tb.assert_nothing_changed(&inv);
    assert_eq!(tb.world.published().await, parameter);
    assert_eq!(tb.world.deployment_ids().await, deployments);
    assert_eq!(tb.world.mount_targets().await.len(), 2);
    assert_eq!(entries(&parameter.json()).len(), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn when_every_az_has_a_mount_target_the_new_shards_go_on_them_and_the_reason_says_so() {
    let tb = testbed(
        World::builder().mount_targets_in(&['a', 'b', 'c']),
        4 * THRESHOLD,
        THRESHOLD,
    )
    .await;
    tb.mount.add_shard(&tb.world.az_id('b'), 0);
    tb.mount.add_shard(&tb.world.az_id('c'), 0);
    let parameter = tb.world.published().await;
    // Every client reads version 2, so the list may grow past one shard a target.
    tb.fleet_reports(&[1, 2]).await;

    let inv = tb.invoke(&event("scheduled")).await;
    assert_response_shape(&inv);
    let r = inv.response();
    check_eq!(inv, r["file_count"], json!(4 * THRESHOLD));
    check_eq!(inv, r["desired"], json!(3), "clamped to the 3 AZs");
    check_eq!(inv, r["total"], json!(3));
    check!(inv, r["new_mount_target"].is_null());
    check_eq!(inv, r["decision"], json!("add_shards"));
    check!(inv, !has_action(r, "create_mount_target"));
    assert_eq!(tb.world.mount_targets().await.len(), 3);
    // 2,000 files at 500 a shard: 5 shards on the 3 targets, 2 + 2 + 1, published as
    // version 2, each new one's directory made first.
    check_eq!(inv, r["desired_shards"], json!(5));
    check_eq!(inv, r["at_capacity"], json!(false));
    let list = tb.world.published().await;
    assert_ne!(list, parameter);
    let list = efs_router::MountTargetList::from_json(&list.value).unwrap();
    let mut counts: Vec<u32> = list.mount_targets.iter().map(|t| t.shards).collect();
    counts.sort();
    check_eq!(inv, counts, [1, 2, 2]);
    for shard in list.shards() {
        assert!(
            tb.mount.dir_of_root(&shard.root).is_dir(),
            "no directory for {}",
            shard.root
        );
    }
}

async fn assert_unreadable_parameter_is_kept(text: &str) {
    let tb = testbed(
        World::builder().parameter(Seed::Text(text.to_string())),
        CROSSING,
        THRESHOLD,
    )
    .await;
    let before = tb.world.published().await;

    let inv = tb.invoke(&event("scheduled")).await;
    let message = inv.error_text();
    check!(
        inv,
        message.starts_with("CorruptParameter: ") && message.contains(PARAMETER_NAME),
        "the error is not CorruptParameter naming {PARAMETER_NAME}: {message}"
    );
    let after = tb.world.published().await;
    assert_eq!(after.value, text, "the parameter was overwritten");
    assert_eq!(after, before);
    tb.assert_nothing_changed(&inv);
    assert_eq!(
        tb.world.mount_targets().await.len(),
        1,
        "a mount target was created"
    );
    assert!(!tb.mount.has_shards(), "a shard directory was created");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_corrupt_parameter_is_an_error_naming_it_and_is_never_overwritten() {
    assert_unreadable_parameter_is_kept(
        r#"{"mount_targets": [{"id": "fsmt-12345678", "ip": "10.0.1."#,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_parameter_of_another_shape_is_an_error_naming_it_and_is_never_overwritten() {
    assert_unreadable_parameter_is_kept(r#"{"mount_targets": "fsmt-12345678,fsmt-87654321"}"#)
        .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_list_with_a_root_nested_in_another_is_refused_whole_and_never_overwritten() {
    // Roots `/` and `/data`: the second lies inside the first, so a file could be in both.
    assert_unreadable_parameter_is_kept(
        r#"{"mount_targets": [{"id": "fsmt-1", "ip": "10.0.1.4", "root": "/"}, {"id": "fsmt-2", "ip": "10.0.2.4", "root": "/data"}], "strategy": "rendezvous"}"#,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_list_with_a_repeated_key_or_a_reserved_root_is_refused_whole() {
    assert_unreadable_parameter_is_kept(
        r#"{"mount_targets": [{"id": "fsmt-1", "ip": "10.0.1.4", "root": "/", "root": "/shards/x"}], "strategy": "rendezvous"}"#,
    )
    .await;
    assert_unreadable_parameter_is_kept(
        r#"{"mount_targets": [{"id": "fsmt-1", "ip": "10.0.1.4", "root": "/"}, {"id": "fsmt-2", "ip": "10.0.2.4", "root": "/.efs-mount-autoscaler"}], "strategy": "rendezvous"}"#,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_missing_parameter_is_created_from_what_is_observed() {
    let tb = testbed(World::builder().parameter(Seed::Absent), BELOW, THRESHOLD).await;
    assert!(tb.world.parameter().await.is_none());
    let original = original_target(&tb.world).await;

    let inv = tb.invoke(&event("scheduled")).await;
    assert_response_shape(&inv);
    let r = inv.response();
    check!(inv, has_action(r, "publish"));
    let published = tb
        .world
        .parameter()
        .await
        .unwrap_or_else(|| panic!("the parameter was not created\n{}", inv.describe()))
        .json();
    assert_published_is(
        &published,
        &tb.world.mount_targets().await,
        &original.id,
        "rendezvous",
        &inv,
    );
    check_eq!(inv, r["mount_targets"], published["mount_targets"]);
    assert_eq!(tb.proxy.count("CreateMountTarget"), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_original_two_field_list_is_read_and_new_targets_are_appended_modulo() {
    let tb = testbed(
        World::builder().parameter(Seed::Original),
        CROSSING,
        THRESHOLD,
    )
    .await;
    let original = original_target(&tb.world).await;

    let inv = tb.invoke(&event("scheduled")).await;
    assert_response_shape(&inv);
    let r = inv.response();
    check_eq!(inv, r["desired"], json!(2));
    let targets = tb.world.mount_targets().await;
    check_eq!(inv, targets.len(), 2);
    let created = targets.iter().find(|t| t.id != original.id).unwrap();

    let published = tb.world.published().await.json();
    let context = format!("published {}\n{}", pretty(&published), inv.describe());
    assert_eq!(published["strategy"], json!("modulo-sha256"), "{context}");
    let list = entries(&published);
    assert_eq!(list.len(), 2, "{context}");
    // Order matters for `sha256 % n`: the existing entry keeps its index, the new one is appended.
    assert_eq!(list[0]["id"], json!(original.id), "{context}");
    assert_eq!(list[0]["ip"], json!(original.ip), "{context}");
    assert_eq!(list[0]["root"], json!("/"), "{context}");
    assert_eq!(list[1]["id"], json!(created.id), "{context}");
    assert_eq!(list[1]["ip"], json!(created.ip), "{context}");
    assert_eq!(
        list[1]["root"],
        json!(format!("/shards/{}", created.az_id)),
        "{context}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_mount_target_creating_for_a_few_describes_is_waited_for_then_published() {
    let tb = testbed(World::builder(), CROSSING, THRESHOLD).await;
    tb.proxy.hold_creating(3);

    let inv = tb.invoke(&event("scheduled")).await;
    assert_response_shape(&inv);
    let r = inv.response();
    let created = tb.proxy.created_mount_targets();
    check_eq!(inv, created.len(), 1);
    check!(
        inv,
        tb.proxy.count("DescribeMountTargets") >= 4,
        "it did not poll until available: {:?}",
        tb.proxy.counts()
    );
    let published = tb.world.published().await.json();
    check!(
        inv,
        entry_ids(&published).contains(&created[0]),
        "{} not published: {}",
        created[0],
        pretty(&published)
    );
    check_eq!(inv, r["new_mount_target"]["id"], json!(created[0]));
}

#[tokio::test(flavor = "multi_thread")]
async fn an_events_budget_ends_the_wait_for_a_creating_target_long_before_lambdas_deadline() {
    let tb = testbed(World::builder(), CROSSING, THRESHOLD).await;
    tb.proxy.hold_creating(usize::MAX);
    // Lambda's deadline is 900 s away; the event gives the run 30 s (20 kept back after a wait),
    // so it waits 10 s and answers. Killed at 120 s: a run that waited on would fail here.
    let ev = json!({"action": "reconcile", "budget_seconds": 30});
    let inv = tb
        .function
        .invoke_killed_at(&ev, Duration::from_secs(900), Duration::from_secs(120))
        .await;
    let created = tb.proxy.created_mount_targets();
    check_eq!(inv, created.len(), 1);
    check_eq!(inv, inv.response()["decision"], json!("create"));
    check!(
        inv,
        strings(inv.response(), "waiting_for").contains(&created[0]),
        "not waiting for {}",
        created[0]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_short_deadline_leaves_a_creating_target_unpublished_for_the_next_run() {
    let tb = testbed(World::builder(), CROSSING, THRESHOLD).await;
    let original = original_target(&tb.world).await;
    tb.proxy.hold_creating(usize::MAX);

    // Run 1: told a deadline of 5 s, inside the margin the function keeps for what follows a
    // wait, it has no time to wait for the target (waited for as long as it takes to answer:
    // how fast this host starts it is not what is tested).
    let inv = tb
        .invoke_told(&event("scheduled"), Duration::from_secs(5))
        .await;
    assert_response_shape(&inv);
    let created = tb.proxy.created_mount_targets();
    check_eq!(inv, created.len(), 1);
    let published = tb.world.parameter().await.map(|p| p.json());
    check!(
        inv,
        published
            .as_ref()
            .is_some_and(|p| !entry_ids(p).contains(&created[0])),
        "a creating target was published: {published:?}"
    );
    check!(
        inv,
        !inv.response()["mount_targets"]
            .to_string()
            .contains(&created[0]),
        "the response lists a creating target"
    );

    // Run 2: the target is still creating when observed, and becomes available while the run
    // waits for it; it is published, not created again.
    tb.proxy.release_creating_after(2);
    tb.proxy.reset_counts();
    let deployments = tb.world.deployment_ids().await;
    let inv2 = tb.invoke(&event("scheduled")).await;
    assert_response_shape(&inv2);
    assert_eq!(
        tb.proxy.count("CreateMountTarget"),
        0,
        "created twice\n{}",
        inv2.describe()
    );
    assert!(
        has_action(inv2.response(), "wait_mount_target"),
        "{}",
        inv2.describe()
    );
    let targets = tb.world.mount_targets().await;
    assert_eq!(targets.len(), 2, "{targets:#?}");
    assert_one_per_az(&tb, &inv2).await;
    let published = tb.world.published().await.json();
    assert_published_is(&published, &targets, &original.id, "rendezvous", &inv2);
    let new = targets.iter().find(|t| t.id != original.id).unwrap();
    assert!(
        tb.mount.shard_dir(&new.az_id).is_dir(),
        "{}",
        inv2.describe()
    );
    assert_ne!(
        tb.world.deployment_ids().await,
        deployments,
        "not redeployed\n{}",
        inv2.describe()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_run_that_died_after_publishing_is_finished_by_the_next_one() {
    // The parameter is newer than the service's deployment: published, never redeployed.
    let tb = testbed(World::builder().parameter_after_service(), BELOW, THRESHOLD).await;
    let deployments = tb.world.deployment_ids().await;

    let inv = tb.invoke(&event("scheduled")).await;
    assert_response_shape(&inv);
    check!(inv, has_action(inv.response(), "force_deployment"));
    let redeployed = tb.world.deployment_ids().await;
    check_ne!(inv, redeployed, deployments, "not redeployed");
    assert_eq!(
        tb.proxy.count("UpdateService"),
        1,
        "{:?}",
        tb.proxy.counts()
    );
    assert_eq!(tb.proxy.count("PutParameter"), 0, "{:?}", tb.proxy.counts());
    assert_eq!(
        tb.proxy.count("CreateMountTarget"),
        0,
        "{:?}",
        tb.proxy.counts()
    );

    tb.proxy.reset_counts();
    let inv2 = tb.invoke(&event("scheduled")).await;
    assert!(
        !has_action(inv2.response(), "force_deployment"),
        "{}",
        inv2.describe()
    );
    tb.assert_nothing_changed(&inv2);
    assert_eq!(tb.world.deployment_ids().await, redeployed);
}

#[tokio::test(flavor = "multi_thread")]
async fn every_listed_service_is_redeployed() {
    let tb = testbed(
        World::builder().services(&["ingest", "query"]),
        CROSSING,
        THRESHOLD,
    )
    .await;
    let deployments = tb.world.deployment_ids().await;

    let inv = tb.invoke(&event("scheduled")).await;
    inv.response();
    let after = tb.world.deployment_ids().await;
    check_ne!(inv, after[0], deployments[0], "ingest not redeployed");
    check_ne!(inv, after[1], deployments[1], "query not redeployed");
    assert_eq!(
        tb.proxy.count("UpdateService"),
        2,
        "{:?}",
        tb.proxy.counts()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn throttled_describe_mount_targets_and_put_parameter_are_retried() {
    let tb = testbed(World::builder(), CROSSING, THRESHOLD).await;
    let original = original_target(&tb.world).await;
    tb.proxy.throttle("DescribeMountTargets", 2);
    tb.proxy.throttle("PutParameter", 2);

    let inv = tb.invoke(&event("scheduled")).await;
    assert_response_shape(&inv);
    assert_eq!(
        tb.proxy.faulted("DescribeMountTargets"),
        2,
        "{:?}",
        tb.proxy.counts()
    );
    assert_eq!(
        tb.proxy.faulted("PutParameter"),
        2,
        "{:?}",
        tb.proxy.counts()
    );
    assert_eq!(
        tb.proxy.count("CreateMountTarget"),
        1,
        "{:?}",
        tb.proxy.counts()
    );
    let targets = tb.world.mount_targets().await;
    assert_eq!(targets.len(), 2);
    let published = tb.world.published().await.json();
    assert_published_is(&published, &targets, &original.id, "rendezvous", &inv);
}

#[tokio::test(flavor = "multi_thread")]
async fn throttling_on_every_service_is_retried() {
    let tb = testbed(World::builder(), CROSSING, THRESHOLD).await;
    let original = original_target(&tb.world).await;
    let deployments = tb.world.deployment_ids().await;
    for op in [
        "DescribeSubnets",
        "GetParameter",
        "DescribeServices",
        "UpdateService",
        "CreateMountTarget",
    ] {
        tb.proxy.throttle(op, 2);
    }

    let inv = tb.invoke(&event("scheduled")).await;
    assert_response_shape(&inv);
    // Every service was throttled at least once, and the run went on.
    let throttled = tb.proxy.throttled_by_service();
    for service in ["ec2", "ssm", "ecs", "elasticfilesystem"] {
        check!(
            inv,
            throttled.get(service).copied().unwrap_or(0) > 0,
            "no throttle injected into {service}: {throttled:?} (calls {:?})",
            tb.proxy.counts()
        );
    }
    let targets = tb.world.mount_targets().await;
    check_eq!(inv, targets.len(), 2, "{targets:#?}");
    assert_one_per_az(&tb, &inv).await;
    let published = tb.world.published().await.json();
    assert_published_is(&published, &targets, &original.id, "rendezvous", &inv);
    check_ne!(inv, tb.world.deployment_ids().await, deployments);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failing_update_service_is_finished_by_the_next_run() {
    let tb = testbed(World::builder(), CROSSING, THRESHOLD).await;
    let deployments = tb.world.deployment_ids().await;
    tb.proxy.server_error("UpdateService", 500, 1000);

    // Run 1 publishes the new target but cannot redeploy (error or not, it must not hang).
    let inv = tb.invoke(&event("scheduled")).await;
    check!(inv, inv.within_deadline());
    check_eq!(inv, entries(&tb.world.published().await.json()).len(), 2);
    assert_eq!(tb.world.deployment_ids().await, deployments);

    // Run 2, with ECS back, redeploys and creates nothing.
    tb.proxy.clear_faults();
    tb.proxy.reset_counts();
    let inv2 = tb.invoke(&event("scheduled")).await;
    assert_response_shape(&inv2);
    assert!(
        has_action(inv2.response(), "force_deployment"),
        "{}",
        inv2.describe()
    );
    assert_ne!(
        tb.world.deployment_ids().await,
        deployments,
        "{}",
        inv2.describe()
    );
    assert_eq!(
        tb.proxy.count("CreateMountTarget"),
        0,
        "{:?}",
        tb.proxy.counts()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_plan_event_plans_a_scale_out_and_changes_nothing() {
    let tb = testbed(World::builder(), CROSSING, THRESHOLD).await;
    let parameter = tb.world.published().await;
    let deployments = tb.world.deployment_ids().await;

    let inv = tb.invoke(&event("plan")).await;
    assert_response_shape(&inv);
    let r = inv.response();
    check_eq!(inv, r["desired"], json!(2));
    check!(inv, has_action(r, "create_mount_target"));
    tb.assert_nothing_changed(&inv);
    assert_eq!(tb.world.mount_targets().await.len(), 1);
    assert_eq!(tb.world.published().await, parameter);
    assert_eq!(tb.world.deployment_ids().await, deployments);
    check!(
        inv,
        !tb.mount.has_shards(),
        "plan created a shard directory"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unknown_event_is_an_error_listing_what_is_accepted() {
    let tb = testbed(World::builder(), CROSSING, THRESHOLD).await;
    let parameter = tb.world.published().await;

    let inv = tb.invoke(&json!({"action": "explode"})).await;
    let message = inv.error_text();
    for accepted in ["reconcile", "plan", "rebalance", "migrate"] {
        check!(
            inv,
            message.contains(accepted),
            "the error does not list {accepted:?}: {message}"
        );
    }
    tb.assert_nothing_changed(&inv);
    assert_eq!(tb.world.mount_targets().await.len(), 1);
    assert_eq!(tb.world.published().await, parameter);
    assert!(!tb.mount.has_shards());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_bad_file_threshold_is_an_error_naming_it_before_any_aws_call() {
    let mut tb = testbed(World::builder(), CROSSING, THRESHOLD).await;
    for bad in ["0", "-5", "lots"] {
        tb.env("FILE_THRESHOLD", bad);
        let inv = tb.invoke(&event("scheduled")).await;
        let message = inv.error_text();
        check!(
            inv,
            message.starts_with("Config: ") && message.contains("FILE_THRESHOLD"),
            "FILE_THRESHOLD={bad}: the error does not name the variable: {message}"
        );
        assert_eq!(
            tb.proxy.total(),
            0,
            "FILE_THRESHOLD={bad}: AWS was called: {:?}",
            tb.proxy.counts()
        );
    }
    assert_eq!(tb.world.mount_targets().await.len(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_missing_file_system_id_is_an_error_naming_it_before_any_aws_call() {
    let mut tb = testbed(World::builder(), CROSSING, THRESHOLD).await;
    tb.unset("EFS_FILE_SYSTEM_ID");
    let inv = tb.invoke(&event("scheduled")).await;
    let message = inv.error_text();
    check!(
        inv,
        message.starts_with("Config: ") && message.contains("EFS_FILE_SYSTEM_ID"),
        "{message}"
    );
    assert_eq!(
        tb.proxy.total(),
        0,
        "AWS was called: {:?}",
        tb.proxy.counts()
    );
}

/// A router on the list published now, over the test's mount.
async fn router_now(tb: &Testbed) -> efs_router::Router {
    let text = tb.world.published().await.value;
    let list = efs_router::list::MountTargetList::from_json(&text).expect("the published list");
    efs_router::Router::new(list, efs_router::Layout::single_mount(tb.mount.path()))
        .expect("a router")
}

/// Publish, converge, a clean pass, publish what it closed, converge: the fleet on a settled
/// list (version 3 when every client `reads` it).
async fn settle(tb: &Testbed, reads: &[u32]) {
    tb.invoke(&event("scheduled")).await;
    tb.converge(reads).await;
    let inv = tb.invoke(&json!({"action": "rebalance"})).await;
    check!(inv, has_action(inv.response(), "move_files"));
    tb.invoke(&event("scheduled")).await;
    tb.converge(reads).await;
}

/// The rollout replay on the function's own lists (issue 39): a task on the list the growth
/// announced finds, and does not write again, every path a task on the switched list creates,
/// and the other way round; on a version 1 list and on a version 3 list alike.
#[tokio::test(flavor = "multi_thread")]
async fn a_task_on_the_list_before_the_switch_finds_what_the_next_list_writes() {
    for reads in [&[1, 2][..], &[1, 2, 3][..]] {
        let tb = testbed(World::builder(), BELOW, THRESHOLD).await;
        tb.fleet_reports(reads).await;
        if reads.contains(&3) {
            // A settled version 3 list first: it goes out saying `everywhere` (it knows no
            // past), and a clean pass closes that, so a miss looks at home alone.
            settle(&tb, reads).await;
            let open = tb.world.published().await.json()["open"].clone();
            assert_eq!(open, json!([]), "reads {reads:?}");
        }
        tb.mount.generate(CROSSING);
        let inv = tb.invoke(&event("scheduled")).await;
        check_eq!(inv, inv.response()["homes"], json!("announced"));
        let older = router_now(&tb).await;
        tb.converge(reads).await;
        let inv = tb.invoke(&event("scheduled")).await;
        check_eq!(inv, inv.response()["homes"], json!("switched"));
        let newer = router_now(&tb).await;
        let (mut away, mut missed) = (0, Vec::new());
        for i in 0..200 {
            let path = format!("data/analysis/new/{i}.json");
            assert!(newer.create(&path, b"new").unwrap().created());
            away +=
                (older.resolve(&path).unwrap().real != newer.resolve(&path).unwrap().real) as usize;
            let found = older.exists(&path).unwrap()
                && older.read_with_fallback(&path).map(|r| r.data).ok() == Some(b"new".to_vec())
                && !older.create(&path, b"again").unwrap().created();
            let path = format!("data/analysis/old/{i}.json");
            assert!(older.create(&path, b"old").unwrap().created());
            let back =
                newer.exists(&path).unwrap() && !newer.create(&path, b"again").unwrap().created();
            if !found || !back {
                missed.push(i);
            }
        }
        assert!(
            away > 50,
            "reads {reads:?}: only {away} of 200 homed elsewhere"
        );
        assert_eq!(missed, Vec::<usize>::new(), "reads {reads:?}");
    }
}

/// The settle replay (issue 39): files written through a router inside `WATCH_DIR` and
/// outside it, nested ones too, are all found through a router on the list after growth once
/// the placements have closed. The rebalance walks `WATCH_DIR` alone, so the list says so
/// (`scope`), and a miss outside it looks in every shard.
#[tokio::test(flavor = "multi_thread")]
async fn every_file_a_router_wrote_is_found_after_the_placements_close() {
    let reads = &[1, 2, 3];
    let tb = testbed(World::builder(), BELOW, THRESHOLD).await;
    tb.fleet_reports(reads).await;
    settle(&tb, reads).await;
    let before = tb.world.published().await.json();
    assert_eq!(before["open"], json!([]), "{before}");
    assert_eq!(before["scope"], json!("data/analysis"), "{before}");
    let writer = router_now(&tb).await;
    let paths: Vec<String> = (0..100)
        .map(|i| match i % 4 {
            0 => format!("data/other/{i}.json"),
            1 => format!("data/other/deep/{}/{i}.json", i % 3),
            2 => format!("data/analysis/nested/{}/{i}.json", i % 3),
            _ => format!("elsewhere-{i}.json"),
        })
        .collect();
    for p in &paths {
        writer.write(p, p.as_bytes()).unwrap();
    }
    // Growth, announced and switched; then the placements close again.
    tb.mount.generate(CROSSING);
    let inv = tb.invoke(&event("scheduled")).await;
    check_eq!(inv, inv.response()["homes"], json!("announced"));
    tb.converge(reads).await;
    let inv = tb.invoke(&event("scheduled")).await;
    check_eq!(inv, inv.response()["homes"], json!("switched"));
    tb.converge(reads).await;
    let inv = tb.invoke(&json!({"action": "rebalance"})).await;
    check!(
        inv,
        inv.response()["moves"]["moved"].as_u64().unwrap_or(0) > 0
    );
    // After growth the placements stay open one pass longer (docs/data-plane.md).
    let mut after = tb.world.published().await.json();
    for _ in 0..4 {
        tb.invoke(&event("scheduled")).await;
        tb.converge(reads).await;
        after = tb.world.published().await.json();
        if after["open"] == json!([]) {
            break;
        }
        tb.invoke(&json!({"action": "rebalance"})).await;
    }
    assert_eq!(after["open"], json!([]), "{after}");
    assert!(
        after["mount_targets"].as_array().unwrap().len() > 1,
        "{after}"
    );
    let reader = router_now(&tb).await;
    let mut away = 0;
    for p in &paths {
        away += (writer.resolve(p).unwrap().real != reader.resolve(p).unwrap().real) as usize;
        assert!(reader.exists(p).unwrap(), "{p} is hidden on {after}");
        assert_eq!(reader.read_with_fallback(p).unwrap().data, p.as_bytes());
    }
    assert!(
        away > 20,
        "only {away} of 100 paths homed elsewhere after the growth"
    );
}

/// After a clean pass, a growth announced and then switched leaves the balance known: the
/// next rebalance compares files against the added shard alone.
#[tokio::test(flavor = "multi_thread")]
async fn after_an_announced_growth_the_rebalance_compares_against_the_added_shards() {
    let tb = testbed(World::builder(), BELOW, THRESHOLD).await;
    tb.fleet_reports(&[1, 2]).await;
    let inv = tb.invoke(&json!({"action": "rebalance"})).await;
    check_eq!(inv, inv.response()["moves"]["comparison"], json!("full"));
    tb.mount.generate(CROSSING);
    let inv = tb.invoke(&event("scheduled")).await;
    check_eq!(inv, inv.response()["homes"], json!("announced"));
    // While the announcement waits, nothing moves.
    let inv = tb.invoke(&json!({"action": "rebalance"})).await;
    check!(inv, !has_action(inv.response(), "move_files"));
    tb.converge(&[1, 2]).await;
    let inv = tb.invoke(&event("scheduled")).await;
    check_eq!(inv, inv.response()["homes"], json!("switched"));
    tb.converge(&[1, 2]).await;
    let inv = tb.invoke(&json!({"action": "rebalance"})).await;
    let m = &inv.response()["moves"];
    check_eq!(inv, m["comparison"], json!("added_shards"));
    check!(inv, m["moved"].as_u64().unwrap_or(0) > 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn max_mount_targets_caps_the_targets_and_the_shards_go_on_those_there() {
    let mut tb = testbed(World::builder(), CROSSING, THRESHOLD).await;
    tb.env("MAX_MOUNT_TARGETS", "1");
    // Every client reads version 2, so the list may grow past one shard a target.
    tb.fleet_reports(&[1, 2]).await;
    let inv = tb.invoke(&event("scheduled")).await;
    check_eq!(inv, inv.response()["homes"], json!("announced"));
    // The new shard's directory is made with the announcement, before any home is there.
    let list = tb.world.published().await.json();
    assert_eq!(
        list["mount_targets"][0]["draining_shards"],
        json!(1),
        "{list}"
    );
    tb.converge(&[1, 2]).await;
    let inv = tb.invoke(&event("scheduled")).await;
    assert_response_shape(&inv);
    let r = inv.response();
    check_eq!(inv, r["homes"], json!("switched"));
    check_eq!(
        inv,
        (
            r["desired"].clone(),
            r["desired_shards"].clone(),
            r["shards"].clone()
        ),
        (json!(1), json!(2), json!(2))
    );
    check!(inv, !has_action(r, "create_mount_target"));
    assert_eq!(tb.world.mount_targets().await.len(), 1);
    let list = tb.world.published().await.json();
    assert_eq!(list["mount_targets"][0]["shards"], json!(2), "{list}");
    let az_id = list["mount_targets"][0]["az_id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        tb.mount.shard_ids().contains(&format!("{az_id}.1")),
        "the new shard's directory was not made: {:?}",
        tb.mount.shard_ids()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn subnet_ids_limit_where_new_targets_go() {
    let mut tb = testbed(World::builder(), CROSSING, THRESHOLD).await;
    let allowed = format!("{},{}", tb.world.subnet('a').id, tb.world.subnet('c').id);
    tb.env("SUBNET_IDS", allowed);
    let original = original_target(&tb.world).await;

    let inv = tb.invoke(&event("scheduled")).await;
    assert_response_shape(&inv);
    let targets = tb.world.mount_targets().await;
    check_eq!(inv, targets.len(), 2);
    let created = targets.iter().find(|t| t.id != original.id).unwrap();
    check_eq!(inv, created.subnet_id, tb.world.subnet('c').id);
}

// ------------------------------------------------------------------ the harness on its own

/// The proxy forwards, counts, and injects errors that the SDK retries as throttling (and
/// gives up on after its 3 attempts), in each protocol's wire format.
#[tokio::test(flavor = "multi_thread")]
async fn harness_proxy_faults_are_what_the_sdk_expects() {
    let moto = Moto::start();
    let direct = Aws::at(&moto.endpoint()).await;
    let world = World::builder().build(&direct).await;
    let proxy = Proxy::start(&moto.endpoint()).await;
    let via = Aws::at(&proxy.endpoint()).await;

    for op in [
        "DescribeMountTargets",
        "DescribeSubnets",
        "GetParameter",
        "DescribeServices",
    ] {
        proxy.throttle(op, 2);
    }
    via.efs
        .describe_mount_targets()
        .file_system_id(&world.file_system_id)
        .send()
        .await
        .expect("EFS after 2 throttles");
    via.ec2
        .describe_subnets()
        .send()
        .await
        .expect("EC2 after 2 throttles");
    via.ssm
        .get_parameter()
        .name(PARAMETER_NAME)
        .send()
        .await
        .expect("SSM after 2 throttles");
    via.ecs
        .describe_services()
        .cluster(&world.cluster)
        .services(&world.services[0])
        .send()
        .await
        .expect("ECS after 2 throttles");
    for op in [
        "DescribeMountTargets",
        "DescribeSubnets",
        "GetParameter",
        "DescribeServices",
    ] {
        assert_eq!(proxy.faulted(op), 2, "{op}");
        assert_eq!(proxy.count(op), 3, "{op}: {:?}", proxy.counts());
    }

    // Past the SDK's attempts the error surfaces with the service's own code.
    proxy.throttle("DescribeMountTargets", 10);
    let e = via
        .efs
        .describe_mount_targets()
        .file_system_id(&world.file_system_id)
        .send()
        .await
        .unwrap_err();
    assert_eq!(
        aws_sdk_efs::error::ProvideErrorMetadata::code(&e),
        Some("ThrottlingException")
    );
    proxy.clear_faults();
    proxy.throttle("DescribeSubnets", 10);
    let e = via.ec2.describe_subnets().send().await.unwrap_err();
    assert_eq!(
        aws_sdk_ec2::error::ProvideErrorMetadata::code(&e),
        Some("RequestLimitExceeded")
    );
    proxy.server_error("PutParameter", 500, 10);
    let e = via
        .ssm
        .put_parameter()
        .name("/x")
        .value("y")
        .send()
        .await
        .unwrap_err();
    assert_eq!(
        aws_sdk_ssm::error::ProvideErrorMetadata::code(&e),
        Some("InternalServerError")
    );
    assert_eq!(
        proxy.faulted("PutParameter"),
        3,
        "the SDK retries a 500 twice"
    );
    assert_eq!(proxy.mutating_calls().get("PutParameter"), Some(&3));
    assert!(
        direct.ssm.get_parameter().name("/x").send().await.is_err(),
        "a faulted call reached moto"
    );
}

/// Targets created through the proxy look `creating` for K describes, then `available`.
#[tokio::test(flavor = "multi_thread")]
async fn harness_proxy_holds_new_mount_targets_creating() {
    let moto = Moto::start();
    let direct = Aws::at(&moto.endpoint()).await;
    let world = World::builder().build(&direct).await;
    let proxy = Proxy::start(&moto.endpoint()).await;
    let via = Aws::at(&proxy.endpoint()).await;
    proxy.hold_creating(2);

    let out = via
        .efs
        .create_mount_target()
        .file_system_id(&world.file_system_id)
        .subnet_id(&world.subnet('b').id)
        .send()
        .await
        .expect("CreateMountTarget");
    assert_eq!(out.life_cycle_state.as_str(), "creating");
    assert_eq!(
        proxy.created_mount_targets(),
        vec![out.mount_target_id.clone()]
    );
    let mut states = Vec::new();
    for _ in 0..3 {
        let d = via
            .efs
            .describe_mount_targets()
            .file_system_id(&world.file_system_id)
            .send()
            .await
            .unwrap();
        for t in d.mount_targets() {
            if t.mount_target_id() == out.mount_target_id {
                states.push(t.life_cycle_state().as_str().to_string());
            } else {
                assert_eq!(
                    t.life_cycle_state().as_str(),
                    "available",
                    "an old target was rewritten"
                );
            }
        }
    }
    assert_eq!(states, ["creating", "creating", "available"]);
}

/// The runtime API speaks the protocol `lambda_runtime` uses.
#[tokio::test(flavor = "multi_thread")]
async fn harness_runtime_api_serves_events_and_takes_answers() {
    use http_body_util::{BodyExt, Full};
    use hyper_util::client::legacy::Client;
    use hyper_util::rt::TokioExecutor;

    let (api, mut reports) = RuntimeApi::start().await;
    let client: Client<_, Full<bytes::Bytes>> = Client::builder(TokioExecutor::new()).build_http();
    let base = format!("http://{}/2018-06-01/runtime", api.address());
    api.enqueue(Pending {
        request_id: "req-1".into(),
        body: bytes::Bytes::from_static(b"{\"action\":\"plan\"}"),
        deadline_ms: 4_102_444_800_000,
    });
    let next = client
        .get(format!("{base}/invocation/next").parse().unwrap())
        .await
        .unwrap();
    assert_eq!(next.status(), 200);
    assert_eq!(next.headers()["lambda-runtime-aws-request-id"], "req-1");
    assert_eq!(
        next.headers()["lambda-runtime-deadline-ms"],
        "4102444800000"
    );
    assert!(next
        .headers()
        .contains_key("lambda-runtime-invoked-function-arn"));
    assert!(next.headers().contains_key("lambda-runtime-trace-id"));
    let body = next.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(
        serde_json::from_slice::<Value>(&body).unwrap(),
        json!({"action": "plan"})
    );

    let post = |path: String, body: &'static str| {
        let req = hyper::Request::post(path)
            .body(Full::new(bytes::Bytes::from_static(body.as_bytes())))
            .unwrap();
        client.request(req)
    };
    let r = post(format!("{base}/invocation/req-1/response"), "{\"ok\":true}")
        .await
        .unwrap();
    assert_eq!(r.status(), 202);
    let r = post(
        format!("{base}/invocation/req-2/error"),
        "{\"errorType\":\"E\",\"errorMessage\":\"m\"}",
    )
    .await
    .unwrap();
    assert_eq!(r.status(), 202);
    let r = post(
        format!("{base}/init/error"),
        "{\"errorType\":\"I\",\"errorMessage\":\"n\"}",
    )
    .await
    .unwrap();
    assert_eq!(r.status(), 202);

    let mut seen = Vec::new();
    for i in 0..4 {
        // A generous bound: the reports are posted already, this only keeps a broken harness
        // from hanging the test.
        let report = tokio::time::timeout(Duration::from_secs(60), reports.recv())
            .await
            .unwrap_or_else(|_| panic!("report {i} of 4 never came in 60 s; got {seen:?}"));
        seen.push(report.unwrap_or_else(|| panic!("the runtime API stopped after {seen:?}")));
    }
    assert!(matches!(&seen[0], Report::Started(id) if id == "req-1"));
    assert!(
        matches!(&seen[1], Report::Response(id, v) if id == "req-1" && v == &json!({"ok": true}))
    );
    assert!(matches!(&seen[2], Report::Error(id, v) if id == "req-2" && v["errorType"] == "E"));
    assert!(matches!(&seen[3], Report::InitError(v) if v["errorType"] == "I"));
}

/// The Embedded Metric Format lines the function printed: JSON log lines with an `_aws` key.
fn emf_lines(inv: &Invocation) -> Vec<Value> {
    inv.logs
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l.trim()).ok())
        .filter(|v| v.get("_aws").is_some())
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn each_reconcile_run_prints_its_metrics_as_embedded_metric_format() {
    let tb = testbed(World::builder(), CROSSING, THRESHOLD).await;

    // A plan changes nothing and reports no metrics (the period is counted once).
    let plan = tb.invoke(&event("plan")).await;
    assert!(emf_lines(&plan).is_empty(), "{}", plan.describe());

    let inv = tb.invoke(&event("scheduled")).await;
    let r = inv.response().clone();
    let lines = emf_lines(&inv);
    check!(inv, !lines.is_empty(), "no EMF line");
    // name -> (unit, value, dimension values) over every line, checked against the format:
    // `_aws.Timestamp` in ms, `CloudWatchMetrics[]` with a namespace, dimension sets whose
    // names are root members, and each metric's value a root member.
    let mut seen: Vec<(String, String, Value, Value)> = Vec::new();
    for line in &lines {
        let aws = &line["_aws"];
        assert!(
            aws["Timestamp"]
                .as_u64()
                .is_some_and(|t| t > 1_600_000_000_000),
            "{line}"
        );
        for directive in aws["CloudWatchMetrics"]
            .as_array()
            .expect("CloudWatchMetrics")
        {
            assert_eq!(
                directive["Namespace"],
                json!("EfsMountAutoscaler"),
                "{line}"
            );
            for set in directive["Dimensions"].as_array().expect("Dimensions") {
                for name in set.as_array().expect("a dimension set") {
                    let name = name.as_str().expect("a dimension name");
                    assert!(
                        line[name].is_string(),
                        "dimension {name} has no value: {line}"
                    );
                }
            }
            for metric in directive["Metrics"].as_array().expect("Metrics") {
                let name = metric["Name"].as_str().expect("Name").to_owned();
                let unit = metric["Unit"].as_str().unwrap_or("None").to_owned();
                assert!(line[&name].is_number(), "{name} has no value: {line}");
                seen.push((
                    name.clone(),
                    unit,
                    line[&name].clone(),
                    line["MountTarget"].clone(),
                ));
            }
        }
    }
    let one = |name: &str| {
        let found: Vec<_> = seen.iter().filter(|(n, ..)| n == name).collect();
        assert_eq!(found.len(), 1, "{name} once: {seen:?}");
        (found[0].1.clone(), found[0].2.clone())
    };
    assert_eq!(one("TotalFiles"), ("Count".into(), r["file_count"].clone()));
    assert_eq!(one("MountTargets"), ("Count".into(), r["total"].clone()));
    assert_eq!(
        one("DesiredMountTargets"),
        ("Count".into(), r["desired"].clone())
    );
    assert_eq!(one("AtCapacity"), ("None".into(), json!(0)));
    let (unit, took) = one("CountDuration");
    assert_eq!(unit, "Milliseconds");
    assert!(took.as_f64().is_some_and(|ms| ms >= 0.0));
    assert_eq!(one("Shards"), ("Count".into(), r["shards"].clone()));
    assert_eq!(
        one("DesiredShards"),
        ("Count".into(), r["desired_shards"].clone())
    );
    let largest = r["files_per_shard"]
        .as_object()
        .unwrap()
        .values()
        .filter_map(Value::as_u64)
        .max();
    assert_eq!(one("LargestShardFiles"), ("Count".into(), json!(largest)));
    // One FileCount per mount target, with its id as the dimension and the files of all its
    // shards as value.
    let mut per_shard: Vec<(Value, Value)> = seen
        .iter()
        .filter(|(n, u, ..)| n == "FileCount" && u == "Count")
        .map(|(_, _, v, shard)| (shard.clone(), v.clone()))
        .collect();
    per_shard.sort_by_key(|(s, _)| s.to_string());
    let mut expected: Vec<(Value, Value)> = r["files_per_target"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(id, n)| (json!(id), n.clone()))
        .collect();
    expected.sort_by_key(|(s, _)| s.to_string());
    check_eq!(inv, per_shard, expected);
    assert_eq!(per_shard.len(), 2);
}
