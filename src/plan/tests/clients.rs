//! The clients' reports: a live client on another list holds every move and deletion, a
//! silent one counts until its lifetime ends, and version 2 waits for every client.

use super::*;
use crate::plan::clients::Why;
use crate::reports::ClientFile;
use efs_router::report::{list_sha256, ListSeen, Report, FORMAT, LIFETIME_SECS};

const A: &str = "aaaaaaaaaaaaaaaa";
const B: &str = "bbbbbbbbbbbbbbbb";

/// A report by client `id`, seen `age` seconds ago, of the published list (else another),
/// from a router that reads the list versions `reads`.
pub(super) fn reporting(o: &mut Observed, id: &str, current: bool, reads: &[u32], age: u64) {
    let p = o.parameter.as_mut().expect("a published list");
    // The fixtures edit the list in place: its identity is the list as it is now.
    p.sha256 = list_sha256(&p.list.to_json());
    let sha256 = match current {
        true => p.sha256.clone(),
        false => list_sha256("an older list"),
    };
    let seen = NOW - age;
    o.reports.files.push(ClientFile {
        file: format!("{id}.json"),
        mtime: seen,
        ctime: seen,
        read: Ok(Report {
            format: FORMAT,
            client: id.into(),
            router: "efs-router-rust/0.1.0".into(),
            reads: reads.to_vec(),
            list: ListSeen {
                sha256,
                version: 1,
                parameter_version: Some(4),
            },
            loaded_at: seen,
            refreshed_at: None,
            refresh_failed_at: None,
            written_at: seen,
            every: 60,
            task: Some(format!("arn:aws:ecs:us-east-1:1:task/prod/{id}")),
            label: None,
        }),
    });
}

/// A live client of the published list that reads version 2: what lets the list grow past
/// one shard per target.
pub(super) fn reads_v2(o: &mut Observed) {
    reporting(o, "cccccccccccccccc", true, &[1, 2], 0);
}

/// `o` with a live client of its list that reads the list versions `reads`.
pub(super) fn reading(mut o: Observed, reads: &[u32]) -> Observed {
    reporting(&mut o, "dddddddddddddddd", true, reads, 0);
    o
}

fn moves_or_deletes(p: &Plan) -> bool {
    p.steps
        .iter()
        .any(|s| matches!(s, Step::MoveFiles { .. } | Step::DeleteMountTarget { .. }))
}

fn waited_for(p: &Plan) -> Vec<(&str, Why)> {
    match &p.decision {
        Decision::Wait(Wait::ForClients { clients, .. }) => {
            clients.iter().map(|c| (c.client.as_str(), c.why)).collect()
        }
        other => panic!("not waiting for clients: {other:?}"),
    }
}

#[test]
fn an_old_list_report_holds_a_drain_and_a_deletion() {
    for o in [draining_c(100, 10, 5), unlisted_c(100, 10)] {
        let mut old = o.clone();
        reporting(&mut old, A, true, &[1, 2], 10);
        reporting(&mut old, B, false, &[1, 2], 10);
        let p = plan(&old, &policy());
        assert_eq!(waited_for(&p), [(B, Why::OldList)]);
        assert!(!moves_or_deletes(&p), "{:?}", p.steps);
        // Every client on the list: the drain goes on.
        let mut all = o.clone();
        reporting(&mut all, A, true, &[1, 2], 10);
        let p = plan(&all, &policy());
        assert!(moves_or_deletes(&p), "{:?}", p.decision);
    }
}

#[test]
fn an_old_list_report_holds_a_rebalance() {
    let mut o = three_shards(100, 100, 100);
    assert_eq!(plan(&o, &policy()).moves_wait, None);
    reporting(&mut o, B, false, &[1], 30);
    let p = plan(&o, &policy());
    let Some(MovesWait::Clients(clients)) = &p.moves_wait else {
        panic!("{:?}", p.moves_wait);
    };
    assert_eq!(clients[0].client, B);
    assert_eq!(
        (clients[0].list_version, clients[0].last_seen),
        (Some(1), Some(NOW - 30))
    );
}

#[test]
fn a_silent_client_counts_until_its_lifetime_ends() {
    for age in [0, 60, LIFETIME_SECS] {
        let mut o = draining_c(100, 10, 5);
        reporting(&mut o, B, false, &[1, 2], age);
        let p = plan(&o, &policy());
        assert_eq!(waited_for(&p), [(B, Why::OldList)], "age {age}");
    }
    let mut gone = draining_c(100, 10, 5);
    reporting(&mut gone, B, false, &[1, 2], LIFETIME_SECS + 1);
    let p = plan(&gone, &policy());
    assert_eq!(p.decision.name(), "move_drained");
}

#[test]
fn either_clock_keeps_a_report() {
    // The file is old, its router's clock says it was written now: live.
    let mut o = draining_c(100, 10, 5);
    reporting(&mut o, B, false, &[1, 2], LIFETIME_SECS + 100);
    if let Ok(r) = &mut o.reports.files[0].read {
        r.written_at = NOW;
    }
    assert_eq!(waited_for(&plan(&o, &policy())), [(B, Why::OldList)]);
}

#[test]
fn an_unreadable_report_or_a_flood_delays_and_never_permits() {
    let mut o = draining_c(100, 10, 5);
    o.reports.files.push(ClientFile {
        file: format!("{A}.json"),
        mtime: NOW - 5,
        ctime: NOW - 5,
        read: Err("malformed"),
    });
    let p = plan(&o, &policy());
    assert_eq!(waited_for(&p), [("aaaaaaaaaaaaaaaa.json", Why::Unreadable)]);
    assert!(kinds(&p).contains(&"report_unreadable"));
    // Once its lifetime is over it no longer counts.
    o.reports.files[0].mtime = NOW - LIFETIME_SECS - 1;
    assert_eq!(plan(&o, &policy()).decision.name(), "move_drained");
    // Entries past the bound hold the moves.
    o.reports.unread = 3;
    let p = plan(&o, &policy());
    assert_eq!(waited_for(&p), [("3", Why::Unread)]);
    assert!(kinds(&p).contains(&"reports_unread"));
}

#[test]
fn version_2_waits_for_every_live_client() {
    let grown = || {
        let mut o = world(100_000);
        add_shard(&mut o, "fsmt-b", 'b', 50_000);
        add_shard(&mut o, "fsmt-c", 'c', 50_000);
        o
    };
    // No client reports: routers older than reports may not read version 2.
    let p = plan(&grown(), &policy());
    assert_eq!(
        p.decision,
        Decision::Grow(Grow::AtCapacity(Bound::ListVersion {
            most: 3,
            clients: vec![]
        }))
    );
    assert!(p.list_version_held);
    assert!(kinds(&p).contains(&"list_version_held"));
    assert!(!p.list.needs_version_2());
    // One client reads version 1 only: still held, and named.
    let mut o = grown();
    reporting(&mut o, A, true, &[1, 2], 10);
    reporting(&mut o, B, true, &[1], 10);
    let p = plan(&o, &policy());
    assert_eq!(
        p.decision,
        Decision::Grow(Grow::AtCapacity(Bound::ListVersion {
            most: 3,
            clients: vec![B.into()]
        }))
    );
    assert_eq!(p.clients_by_version["1"], 2);
    // Once that one has gone silent for its lifetime, every live client reads 2.
    let mut o = grown();
    reporting(&mut o, A, true, &[1, 2], 10);
    reporting(&mut o, B, true, &[1], LIFETIME_SECS + 1);
    let p = plan(&o, &policy());
    assert_eq!(p.decision, Decision::Grow(Grow::AddShards { added: 2 }));
    assert!(p.list.needs_version_2());
    assert!(!p.list_version_held);
}

#[test]
fn reports_required_waits_for_every_running_task_and_ecs_alone_does_not() {
    let mut o = draining_c(100, 10, 5);
    reporting(&mut o, A, true, &[1, 2], 10);
    // Two running tasks of the service, created after the list's publish (so the task rule
    // holds nothing): one reports, one runs a router older than reports.
    let service = "service:ingest";
    o.tasks = vec![
        task(A, service, "RUNNING", "RUNNING", NOW - 10),
        task("old-router", service, "RUNNING", "RUNNING", NOW - 10),
    ];
    let silent = o.tasks[1].arn.clone();
    // The default requires a report of every running task.
    let p = plan(&o, &policy());
    assert_eq!(waited_for(&p), [(silent.as_str(), Why::Unreported)]);
    assert_eq!(p.unreported.len(), 1);
    // One of the service's tasks reports: the service is not said to run no router.
    assert!(!kinds(&p).contains(&"service_unreported"));
    // ECS alone, chosen by name: a task without a report is not waited for.
    let ecs = Policy {
        client_reports: ClientReports::EcsMayHideFiles,
        ..policy()
    };
    assert_eq!(plan(&o, &ecs).decision.name(), "move_drained");
    // Every task reports: the drain goes on.
    o.tasks.pop();
    assert_eq!(plan(&o, &policy()).decision.name(), "move_drained");
}

#[test]
fn a_client_behind_for_half_an_hour_is_said() {
    let mut o = draining_c(100, 10, 5);
    reporting(&mut o, B, false, &[1, 2], 10);
    o.parameter.as_mut().unwrap().last_modified = at(NOW - 1801);
    o.deployments[0].created_at = at(NOW - 1000);
    let p = plan(&o, &policy());
    assert_eq!(p.clients_behind_secs, 1801);
    assert!(kinds(&p).contains(&"clients_not_converged"));
    // The services run the list: ECS's own warning is not given.
    assert!(!p.fleet_stuck);
}

/// While a writer may be one the function cannot see, a clean pass closes no placement: a file
/// it puts away from home after the close would be hidden from every miss.
#[test]
fn placements_close_only_while_every_writer_is_seen() {
    use crate::state::rebalancing::ShardSet;
    use efs_router::list::Strategy;
    use efs_router::placement::{Open, Placement};
    let mut o = three_shards(100, 10, 5);
    // A version 3 list with the placement of the one shard `/` open, every client reading it,
    // and a clean pass over its shards recorded.
    let slash = Placement::of(Strategy::Rendezvous, &[Target::new("", "", "/")]);
    let open = Some(Open::Placements(vec![slash]));
    o.parameter.as_mut().unwrap().list.open = open.clone();
    reporting(&mut o, A, true, &[1, 2, 3], 0);
    o.state.rebalancing.balanced = ShardSet::of(&o.parameter.as_ref().unwrap().list);
    let closed = Some(Open::Placements(Vec::new()));
    // Every task ECS shows reports, as `require` makes sure: closed.
    assert_eq!(plan(&o, &policy()).list.open, closed);
    // ECS alone for tasks without a report: a task may write unseen, so it stays open.
    let ecs = Policy {
        client_reports: ClientReports::EcsMayHideFiles,
        ..policy()
    };
    assert_eq!(plan(&o, &ecs).list.open, open);
    // A running task without a report, under `require`: open too.
    let mut silent = o.clone();
    silent.tasks = vec![task(
        "silent",
        "service:app",
        "RUNNING",
        "RUNNING",
        NOW - 10,
    )];
    let p = plan(&silent, &policy());
    assert_eq!(p.unreported.len(), 1);
    assert_eq!(p.list.open, open);
    // ECS's tasks could not be listed: a writer may be among them.
    let mut unknown = o.clone();
    unknown.tasks_unknown = Some("throttled".into());
    assert_eq!(plan(&unknown, &policy()).list.open, open);
    // The risk chosen by name: closed, in each case.
    let risk = ClosePlacements::UnseenWritersMayHideFiles;
    for (o, p) in [(&o, &ecs), (&silent, &policy()), (&unknown, &policy())] {
        let chosen = Policy {
            close_placements: risk,
            ..p.clone()
        };
        assert_eq!(plan(o, &chosen).list.open, closed);
    }
}
