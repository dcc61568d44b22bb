//! The room: which subnet a new mount target goes in.

use super::clients::reads_v2;
use super::*;

#[test]
fn a_used_az_is_not_free_through_a_second_subnet() {
    let mut o = world(100_000);
    // Only other subnet: a second one in AZ a, which already has a target.
    o.subnets = vec![subnet("subnet-a", VPC, 'a'), subnet("subnet-a2", VPC, 'a')];
    // Every client reads version 2: the list may grow past one shard a target.
    reads_v2(&mut o);
    let p = plan(&o, &policy());
    assert!(created(&p).is_none());
    assert_eq!(p.decision, Decision::Grow(Grow::AddShards { added: 2 }));
    assert_eq!(p.usable_azs, 1);
}

#[test]
fn subnets_of_another_vpc_are_never_chosen() {
    let mut o = world(100_000);
    o.subnets = vec![
        subnet("subnet-x", "vpc-other", 'b'),
        subnet("subnet-c", VPC, 'c'),
    ];
    // Every client reads version 2: the list may grow past one shard a target.
    reads_v2(&mut o);
    let p = plan(&o, &policy());
    assert_eq!(created(&p).unwrap().subnet_id, "subnet-c");
    assert_eq!(
        p.warnings,
        [Warning::OtherVpc {
            subnet: "subnet-x".into(),
            vpc: "vpc-other".into(),
            file_system_vpc: VPC.into()
        }]
    );
    o.subnets.pop();
    let p = plan(&o, &policy());
    assert!(created(&p).is_none());
    assert_eq!(p.decision, Decision::Grow(Grow::AddShards { added: 2 }));
}

#[test]
fn an_allow_list_restricts_the_choice() {
    let p = plan(
        &world(100_000),
        &Policy {
            subnet_ids: Some(vec!["subnet-c".into()]),
            security_group_ids: Some(vec!["sg-1".into()]),
            ..policy()
        },
    );
    let new = created(&p).unwrap();
    assert_eq!(new.subnet_id, "subnet-c");
    assert_eq!(
        new.security_groups,
        SecurityGroups::Given(vec!["sg-1".into()])
    );
}

#[test]
fn a_refused_subnet_is_passed_over_for_the_next_free_az() {
    let mut o = world(61_234);
    o.state
        .exclude("subnet-b", NOW + 60, "NoFreeAddressesInSubnet".into(), NOW);
    let p = plan(&o, &policy());
    assert_eq!(created(&p).map(|n| n.subnet_id.as_str()), Some("subnet-c"));
    assert_eq!(p.excluded.len(), 1);
    assert_eq!(p.excluded[0].key, "subnet-b");
    assert!(!p.at_capacity);
}

#[test]
fn a_refused_az_is_passed_over_whatever_its_subnet() {
    let mut o = world(61_234);
    o.state.exclude(
        "use1-az2",
        NOW + 60,
        "UnsupportedAvailabilityZone".into(),
        NOW,
    );
    let p = plan(&o, &policy());
    assert_eq!(created(&p).map(|n| n.az_id.as_str()), Some("use1-az3"));
}

#[test]
fn an_exclusion_ends_at_its_time() {
    let mut o = world(61_234);
    o.state
        .exclude("subnet-b", NOW, "NoFreeAddressesInSubnet".into(), 0);
    let p = plan(&o, &policy());
    assert_eq!(created(&p).map(|n| n.subnet_id.as_str()), Some("subnet-b"));
    assert!(p.excluded.is_empty());
}

#[test]
fn nothing_eligible_left_is_at_capacity() {
    let mut o = world(61_234);
    o.state
        .exclude("subnet-b", NOW + 60, "NoFreeAddressesInSubnet".into(), NOW);
    o.state
        .exclude("subnet-c", NOW + 60, "SubnetNotFound".into(), NOW);
    // Every client reads version 2: the list may grow past one shard a target.
    reads_v2(&mut o);
    let p = plan(&o, &policy());
    assert_eq!(created(&p), None);
    assert_eq!(p.decision, Decision::Grow(Grow::AddShards { added: 1 }));
    assert_eq!(p.usable_azs, 1);
    assert_eq!(kinds(&p), ["excluded", "excluded"]);
    assert!(
        p.warnings
            .iter()
            .any(|w| matches!(w, Warning::Excluded { key, .. } if key == "subnet-c")),
        "{:?}",
        p.warnings
    );
}

#[test]
fn no_mount_target_yet_uses_the_allowed_subnets() {
    let mut o = world(10);
    o.mount_targets.clear();
    o.vpc_id = None;
    o.parameter = None;
    let p = plan(&o, &policy());
    assert_eq!(p.current, 0);
    let new = created(&p).unwrap();
    assert_eq!(new.subnet_id, "subnet-a");
    assert_eq!(new.security_groups, SecurityGroups::VpcDefault);
}

#[test]
fn an_az_held_by_a_target_that_cannot_serve_is_no_room_and_the_shards_go_on_those_that_do() {
    for state in [LifeCycle::Deleting, LifeCycle::Error] {
        let mut o = world(150_000);
        add_shard(&mut o, "fsmt-c", 'c', 0);
        o.mount_targets.push(target("fsmt-b", 'b', state.clone()));
        // Every client reads version 2: the list may grow past one shard a target.
        reads_v2(&mut o);
        let p = plan(&o, &policy());
        // Not free (AWS would refuse a second target there), and no target to come either.
        assert!(created(&p).is_none(), "{state:?}");
        assert_eq!((p.usable_azs, p.current), (2, 2), "{state:?}");
        let added = p.desired_shards - 2;
        assert_eq!(
            p.decision,
            Decision::Grow(Grow::AddShards { added }),
            "{state:?}"
        );
        assert!(added > 0);
        assert!(!p.list.mount_targets.iter().any(|t| t.id == "fsmt-b"));
    }
}
