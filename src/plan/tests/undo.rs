//! The undo event: back to the file system as the function found it, one step a run, through
//! the same drains as scale-in (so the same fleet rule), whatever the band or the cool-down.

use super::*;

fn undo() -> Policy {
    Policy {
        undo: true,
        ..policy()
    }
}

#[test]
fn a_targets_extra_shards_drain_first_whatever_the_band() {
    // Far above the scale-in band, and a scale-out just now: undo drains all the same.
    let mut o = sharded_a(100_000, 3);
    o.state.last_scale_out = Some(NOW - 10);
    assert_ne!(plan(&o, &policy()).decision.name(), "start_shard_drain");
    let p = plan(&o, &undo());
    assert_eq!(
        p.decision,
        Decision::ScaleIn(ScaleIn::StartShardDrain {
            id: "fsmt-a".into(),
            root: extra_root("use1-az1", 2),
            held: 0
        })
    );
    assert_eq!(p.desired_shards, 1);
}

#[test]
fn then_the_targets_it_created_drain_and_go() {
    let p = plan(&three_shards(100_000, 50_000, 50_000), &undo());
    assert_eq!(p.decision.name(), "start_drain");
    assert!(created(&p).is_none());
    // Drained, unlisted, the fleet on that list: deleted, as a scale-in deletes.
    let p = plan(&unlisted_c(100, 10), &undo());
    assert_eq!(
        p.decision,
        Decision::Drain(Drain::DeleteDrained {
            id: "fsmt-c".into()
        })
    );
}

#[test]
fn a_target_it_did_not_create_drains_and_stays() {
    // c was there before the function: scale-in never drains it; undo does, and keeps it.
    let mut o = three_shards(100, 10, 10);
    o.state.created.remove("fsmt-b");
    o.state.created.remove("fsmt-c");
    let p = plan(&o, &policy());
    assert_ne!(p.decision.name(), "start_drain");
    assert_eq!(plan(&o, &undo()).decision.name(), "start_drain");
    let mut o = unlisted_c(100, 10);
    o.state.created.remove("fsmt-c");
    // A reconcile without the event stops that drain (no rule of scale-in allows it).
    assert!(kinds(&plan(&o, &policy())).contains(&"drain_stopped"));
    let p = plan(&o, &undo());
    assert_eq!(
        p.decision,
        Decision::Drain(Drain::Release {
            id: "fsmt-c".into()
        })
    );
    assert!(!names(&p).contains(&"delete_mount_target"), "{:?}", p.steps);
    assert!(!saved(&p).unwrap().draining.contains_key("fsmt-c"));
}

#[test]
fn undone_once_slash_is_the_one_shard_and_it_never_grows() {
    // Files for two shards: undo adds none.
    let mut o = world(60_000);
    o.mount_targets
        .push(target("fsmt-b", 'b', LifeCycle::Available));
    let p = plan(&o, &undo());
    assert!(created(&p).is_none());
    assert_eq!(
        p.decision,
        Decision::Event(Event::Undone {
            targets: vec!["fsmt-a".into(), "fsmt-b".into()],
            roots: vec![]
        })
    );
    assert_eq!(ids_and_roots(&p.list), [("fsmt-a", "/")]);
    // What it leaves of the shards is their directories: the empty ones go.
    assert_eq!(names(&p), ["save_state", "remove_shard_directories"]);
    // The same system without the event grows onto the idle target.
    assert_eq!(plan(&o, &policy()).current_shards, 2);
}
