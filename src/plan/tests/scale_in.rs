//! Scale-in: the band, the cool-downs, and what may drain.

use super::*;

#[test]
fn scale_in_drains_a_targets_extra_shards_last_first_then_the_target() {
    let no_cooldown = Policy {
        scale_in_cooldown_secs: 0,
        ..policy()
    };
    // a serves 3 shards, b and c one each: the shard goes first, the last of a's.
    let p = plan(&sharded_a(100, 3), &no_cooldown);
    assert_eq!(
        p.decision,
        Decision::ScaleIn(ScaleIn::StartShardDrain {
            id: "fsmt-a".into(),
            root: "/shards/use1-az1.2".into(),
            held: 0
        })
    );
    assert_eq!(
        shard_counts(&p.list),
        [("fsmt-a", 3, 1), ("fsmt-b", 1, 0), ("fsmt-c", 1, 0)]
    );
    let routes = p.list.shards();
    assert!(routes[2].draining && !routes[1].draining && !routes[0].draining);
    assert_eq!(names(&p), ["save_state", "publish", "force_deployment"]);
    // Marked and published: its files move home, by the list that marks it.
    let p = plan(&draining_shard(5), &policy());
    assert_eq!(
        p.decision,
        Decision::Drain(Drain::MoveDrained {
            id: "fsmt-a".into(),
            az: "us-east-1a".into(),
            root: "/shards/use1-az1.2".into()
        })
    );
    assert!(
        matches!(&p.steps[..], [Step::SaveState(_), Step::MoveFiles { root, list }] if root == "/shards/use1-az1.2" && list.mount_targets[0].draining_shards == 1)
    );
    // Empty: it leaves the list; the target serves on with its other two. Nothing is deleted.
    let p = plan(&draining_shard(0), &policy());
    assert_eq!(
        p.decision,
        Decision::Drain(Drain::DropShard {
            id: "fsmt-a".into(),
            root: "/shards/use1-az1.2".into()
        })
    );
    assert_eq!(
        shard_counts(&p.list),
        [("fsmt-a", 2, 0), ("fsmt-b", 1, 0), ("fsmt-c", 1, 0)]
    );
    assert!(!names(&p).contains(&"delete_mount_target"));
    // Once no target serves more than one shard, targets drain as before: c, the emptier.
    let p = plan(&three_shards(100, 10, 5), &no_cooldown);
    assert_eq!(
        p.decision,
        Decision::ScaleIn(ScaleIn::StartDrain {
            id: "fsmt-c".into(),
            held: 0
        })
    );
    // Growth cancels a shard drain like a target's.
    let mut o = draining_shard(5);
    o.files.insert("/".into(), 400_000);
    let p = plan(&o, &policy());
    assert_eq!(
        p.decision,
        Decision::Drain(Drain::Cancel {
            id: "fsmt-a".into()
        })
    );
    assert_eq!(p.list.mount_targets[0].draining_shards, 0);
}

#[test]
fn a_dropped_shard_stays_unlisted_until_the_list_without_it_is_published() {
    let p = plan(&draining_shard(0), &policy());
    // Kept as unlisted until that list is the one published: a failed publish does not
    // bring the shard back; then it is forgotten, without a warning.
    let unlisted = saved(&p).unwrap().clone();
    assert!(unlisted.draining_shards["/shards/use1-az1.2"].unlisted);
    let mut o = draining_shard(0);
    o.state = unlisted.clone();
    let again = plan(&o, &policy());
    assert_eq!(
        again.decision,
        Decision::Wait(Wait::PublishFirst {
            id: "fsmt-a".into()
        })
    );
    assert_eq!(shard_counts(&again.list), shard_counts(&p.list));
    o.parameter.as_mut().unwrap().list = p.list.clone();
    let done = plan(&o, &policy());
    assert!(saved(&done).unwrap().draining_shards.is_empty());
    assert!(done.warnings.is_empty(), "{:?}", done.warnings);
    assert_eq!(shard_counts(&done.list), shard_counts(&p.list));
}

#[test]
fn a_shard_drain_the_function_did_not_start_or_that_is_not_the_last_is_not_obeyed() {
    // The list marks a's last shard draining, the state does not: the mark is removed.
    let mut o = sharded_a(100, 3);
    o.parameter.as_mut().unwrap().list.mount_targets[0].draining_shards = 1;
    let p = plan(&o, &policy());
    assert_eq!(p.list.mount_targets[0].draining_shards, 0);
    assert_eq!(
        p.warnings,
        [Warning::ForeignShardDrainMark {
            id: "fsmt-a".into(),
            shards: 1
        }]
    );
    // The state drains a shard that is not the last one: dropped with a warning.
    let mut o = draining_shard(5);
    o.parameter.as_mut().unwrap().list.mount_targets[0].shards = 4;
    o.parameter.as_mut().unwrap().list.mount_targets[0].draining_shards = 0;
    let p = plan(&o, &policy());
    assert!(saved(&p).unwrap().draining_shards.is_empty());
    assert!(
        !matches!(p.decision, Decision::Drain(Drain::MoveDrained { .. })),
        "{:?}",
        p.decision
    );
}

#[test]
fn the_scale_in_band_has_hysteresis() {
    // n = 2: the band is files <= 0.6 * 50,000 * 1 = 30,000; scale-out is above 100,000.
    let mut o = world(20_000);
    add_shard(&mut o, "fsmt-b", 'b', 10_000);
    let p = plan(&o, &policy());
    assert!(
        matches!(p.decision, Decision::ScaleIn(ScaleIn::Hold(_))),
        "{:?}",
        p.decision
    );
    // Just above the band (30,001) and far below the scale-out line: keep both, quietly.
    let mut o = world(20_000);
    add_shard(&mut o, "fsmt-b", 'b', 10_001);
    let p = plan(&o, &policy());
    assert_eq!(
        p.decision,
        Decision::ScaleIn(ScaleIn::Keep {
            fewer_would_do: true
        })
    );
    assert!(p.steps.is_empty(), "{:?}", p.steps);
    assert_eq!(draining_id(&p), None);
    // After a scale-in to 1, the same 30,000 files do not make it grow again.
    let p = plan(&world(30_000), &policy());
    assert!(p.steps.is_empty(), "{:?}", p.steps);
    // At 2 with 50,001 files (the first line crossed): no scale-in either.
    let mut o = world(25_000);
    add_shard(&mut o, "fsmt-b", 'b', 25_001);
    assert!(plan(&o, &policy()).steps.is_empty());
}

#[test]
fn the_band_must_hold_for_the_cool_down() {
    let o = three_shards(100, 10, 5);
    // First time in the band: the clock starts, nothing drains.
    let p = plan(&o, &policy());
    assert_eq!(names(&p), ["save_state"]);
    assert_eq!(saved(&p).unwrap().below_since, Some(NOW));
    assert_eq!(draining_id(&p), None);
    // Held for less than the cool-down: wait, nothing written.
    let mut o = three_shards(100, 10, 5);
    o.state.below_since = Some(NOW - 1799);
    let p = plan(&o, &policy());
    assert!(p.steps.is_empty(), "{:?}", p.steps);
    assert_eq!(
        p.decision,
        Decision::ScaleIn(ScaleIn::Hold(Hold::Settling {
            held: 1799,
            cooldown: 1800
        }))
    );
    // Held long enough: the shard with the fewest files drains; list published, redeployed.
    o.state.below_since = Some(NOW - 1800);
    let p = plan(&o, &policy());
    assert_eq!(draining_id(&p), Some("fsmt-c"));
    assert_eq!(names(&p), ["save_state", "publish", "force_deployment"]);
    assert_eq!(saved(&p).unwrap().below_since, None);
    // Leaving the band resets the clock.
    let mut o = three_shards(60_000, 10, 5);
    o.state.below_since = Some(NOW - 100);
    let p = plan(&o, &policy());
    assert_eq!(saved(&p).unwrap().below_since, None);
}

#[test]
fn no_scale_in_soon_after_a_scale_out() {
    let mut o = three_shards(100, 10, 5);
    o.state.below_since = Some(NOW - 5000);
    o.state.last_scale_out = Some(NOW - 600);
    let p = plan(&o, &policy());
    assert_eq!(draining_id(&p), None);
    assert_eq!(
        p.decision,
        Decision::ScaleIn(ScaleIn::Hold(Hold::RecentScaleOut {
            ago: 600,
            cooldown: 1800
        }))
    );
    let p = plan(
        &o,
        &Policy {
            scale_in_cooldown_secs: 0,
            ..policy()
        },
    );
    assert_eq!(draining_id(&p), Some("fsmt-c"));
}

#[test]
fn protected_azs_and_the_first_shard_never_go() {
    let mut o = three_shards(100, 10, 5);
    o.protected_azs.insert("use1-az3".into()); // c
    let zero = Policy {
        scale_in_cooldown_secs: 0,
        ..policy()
    };
    assert_eq!(draining_id(&plan(&o, &zero)), Some("fsmt-b"));
    o.protected_azs.insert("use1-az2".into()); // b
    let p = plan(&o, &zero);
    assert_eq!(draining_id(&p), None);
    assert_eq!(
        p.decision,
        Decision::ScaleIn(ScaleIn::Hold(Hold::NoCandidate))
    );
    // The original list: every target is rooted at `/`, so none is this function's to remove.
    let mut o = world(10);
    o.mount_targets
        .push(target("fsmt-b", 'b', LifeCycle::Available));
    o.parameter = Some(Parameter::new(MountTargetList::from_json(
            r#"{"mount_targets":[{"id":"fsmt-a","ip":"10.0.1.4"},{"id":"fsmt-b","ip":"10.0.2.4"}]}"#,
        )
        .unwrap(), at(100)));
    let p = plan(&o, &zero);
    assert_eq!(draining_id(&p), None);
    assert_eq!(
        p.decision,
        Decision::ScaleIn(ScaleIn::Hold(Hold::ModuloList))
    );
}

#[test]
fn targets_that_were_there_before_are_never_drained() {
    let mut o = three_shards(100, 10, 5);
    o.state.created.clear();
    let zero = Policy {
        scale_in_cooldown_secs: 0,
        ..policy()
    };
    let p = plan(&o, &zero);
    assert_eq!(draining_id(&p), None);
    assert_eq!(
        p.decision,
        Decision::ScaleIn(ScaleIn::Hold(Hold::NoCandidate))
    );
    o.state.record_created("fsmt-b", "use1-az2", 0);
    o.state.last_scale_out = None;
    assert_eq!(draining_id(&plan(&o, &zero)), Some("fsmt-b"));
}
