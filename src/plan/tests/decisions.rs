//! One situation for each decision, by the decision's name.

use super::clients::{reading, reads_v2, reporting};
use super::*;

/// (what the situation is, what was observed, the settings, the decision's name)
type Case = (&'static str, Observed, Policy, &'static str);

/// The default settings, changed by `f`.
fn with(f: impl FnOnce(&mut Policy)) -> Policy {
    let mut p = policy();
    f(&mut p);
    p
}

/// `o` with its published list under `modulo-sha256`.
fn modulo(mut o: Observed) -> Observed {
    o.parameter.as_mut().unwrap().list.strategy = Strategy::ModuloSha256;
    o
}

/// `o` with a live client of its list that reads version 2.
fn v2(mut o: Observed) -> Observed {
    reads_v2(&mut o);
    o
}

/// A live client of another list than `o`'s.
fn reporting_old(o: &mut Observed) {
    reporting(o, "eeeeeeeeeeeeeeee", false, &[1, 2], 0);
}

fn growth_cases() -> Vec<Case> {
    let mut creating_b = world(200_000);
    creating_b
        .mount_targets
        .push(target("fsmt-b", 'b', LifeCycle::Creating));
    let full = || three_shards(100_000, 50_000, 50_000);
    vec![
        ("files cross the line", world(61_234), policy(), "create"),
        (
            "a target was created this run",
            world(61_234),
            with(|p| p.allow_create = false),
            "one_a_run",
        ),
        (
            "a target is still creating",
            creating_b,
            policy(),
            "wait_for_creating",
        ),
        (
            "more needed than MAX_SHARDS allows",
            full(),
            with(|p| p.max_shards = 3),
            "at_capacity",
        ),
        (
            "one target allowed, more shards needed",
            v2(world(200_000)),
            with(|p| p.max_mount_targets = Some(1)),
            "add_shards",
        ),
        ("the AZs exhausted", v2(full()), policy(), "add_shards"),
        (
            "the AZs exhausted, a client reads version 1 only",
            reading(full(), &[1]),
            policy(),
            "at_capacity",
        ),
        (
            "a modulo list at capacity",
            modulo(full()),
            policy(),
            "at_capacity",
        ),
        (
            "the migrate event on a modulo list",
            modulo(three_shards(100, 10, 5)),
            with(|p| p.migrate = true),
            "migrate",
        ),
        ("few files, one target", world(10), policy(), "keep"),
    ]
}

fn drain_cases() -> Vec<Case> {
    let refreshing = || with(|p| p.client_refresh_secs = NOW);
    let mut old_tasks = draining_c(100, 10, 5);
    old_tasks.deployments[0].others_running = 1;
    let mut old_client = draining_c(100, 10, 5);
    reporting_old(&mut old_client);
    vec![
        (
            "a draining shard with files",
            draining_c(100, 10, 5),
            policy(),
            "move_drained",
        ),
        (
            "a live client on another list",
            old_client,
            policy(),
            "wait_for_clients",
        ),
        (
            "clients have not refreshed yet",
            draining_c(100, 10, 5),
            refreshing(),
            "wait_for_refresh",
        ),
        (
            "nor for an empty shard",
            draining_c(100, 10, 0),
            refreshing(),
            "wait_for_refresh",
        ),
        (
            "a drained, empty shard",
            draining_c(100, 10, 0),
            policy(),
            "unlist",
        ),
        (
            "a drained shard, unlisted",
            unlisted_c(100, 10),
            policy(),
            "delete_drained",
        ),
        (
            "a drain while old tasks run",
            old_tasks,
            policy(),
            "wait_for_fleet",
        ),
        (
            "growth during a drain",
            draining_c(150_000, 10, 5),
            policy(),
            "cancel_drain",
        ),
        (
            "a draining extra shard with files",
            draining_shard(5),
            policy(),
            "move_drained",
        ),
        ("a drained shard", draining_shard(0), policy(), "drop_shard"),
    ]
}

fn scale_in_cases() -> Vec<Case> {
    let no_cooldown = || with(|p| p.scale_in_cooldown_secs = 0);
    let mut before_the_function = three_shards(100, 10, 5);
    before_the_function.state.created.clear();
    let mut scaled_out = three_shards(100, 10, 5);
    scaled_out.state.below_since = Some(NOW - 5000);
    scaled_out.state.last_scale_out = Some(NOW - 600);
    vec![
        (
            "the band held long enough",
            three_shards(100, 10, 5),
            no_cooldown(),
            "start_drain",
        ),
        (
            "the band just began",
            three_shards(100, 10, 5),
            policy(),
            "hold_settling",
        ),
        (
            "a scale-out not long ago",
            scaled_out,
            policy(),
            "hold_recent_scale_out",
        ),
        (
            "only targets from before",
            before_the_function,
            no_cooldown(),
            "hold_no_candidate",
        ),
        (
            "a modulo list in the band",
            modulo(three_shards(100, 10, 5)),
            no_cooldown(),
            "hold_modulo_list",
        ),
        (
            "the band held long enough, a target serves several shards",
            sharded_a(100, 3),
            no_cooldown(),
            "start_shard_drain",
        ),
    ]
}

#[test]
fn each_situation_has_its_decision() {
    let cases = [growth_cases(), drain_cases(), scale_in_cases()];
    for (case, o, policy, want) in cases.into_iter().flatten() {
        let p = plan(&o, &policy);
        assert_eq!(p.decision.name(), want, "{case}: {:?}", p.decision);
    }
}
