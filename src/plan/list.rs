//! The list clients should see, rebuilt from the published one and what AWS shows.

use crate::observed::{LifeCycle, Observed};
use crate::shard::FirstRoot;
use crate::state::State;
use efs_router::list::{MountTargetList, Strategy, Target, MAX_LIST_SHARDS};
use std::collections::{BTreeMap, BTreeSet};

/// The first shard of mount target `id` when the target serves (creating, available or
/// updating).
pub(super) fn serving<'a>(shards: &'a [FirstRoot], id: &str) -> Option<&'a FirstRoot> {
    shards
        .iter()
        .find(|s| s.target.id == id && s.target.state.is_active())
}

/// Shards that take new files: those of each listed target that serves (creating, available
/// or updating) and is not draining, less its draining shards; and one for each serving
/// target not listed yet (it will serve its first shard), unless it is being drained.
pub(super) fn serving_shards(list: &MountTargetList, shards: &[FirstRoot], state: &State) -> usize {
    shards
        .iter()
        .filter(|s| s.target.state.is_active())
        .map(
            |s| match list.mount_targets.iter().find(|e| e.id == s.target.id) {
                Some(e) if e.draining => 0,
                Some(e) => (e.shards - e.draining_shards) as usize,
                None if state.draining.contains_key(&s.target.id) => 0,
                None => 1,
            },
        )
        .sum()
}

/// Where new shards go: `desired` shards spread over `desired_targets` mount targets as
/// evenly as they can be (the one with the fewest takes the next), counting targets still to
/// come (creating, or to be created in a later run) at one shard each. Only a listed target
/// that serves now, with an AZ id, takes shards now; the others get theirs once they serve.
/// Returns (index in the list, shards added).
pub(super) fn grow_shards(
    list: &MountTargetList,
    shards: &[FirstRoot],
    desired: usize,
    desired_targets: usize,
) -> Vec<(usize, u32)> {
    // (shards it serves, index in the list when it can take one now)
    let mut takers: Vec<(u32, Option<usize>)> = Vec::new();
    for (i, e) in list.mount_targets.iter().enumerate() {
        let Some(s) = serving(shards, &e.id) else {
            continue;
        };
        if e.draining {
            continue;
        }
        let can_take = s.target.state == LifeCycle::Available
            && s.target.ip.is_some()
            && e.az_id.as_deref().is_some_and(|a| !a.is_empty())
            && e.draining_shards == 0;
        takers.push((e.shards - e.draining_shards, can_take.then_some(i)));
    }
    for s in shards.iter().filter(|s| s.target.state.is_active()) {
        if !list.mount_targets.iter().any(|e| e.id == s.target.id) {
            takers.push((1, None));
        }
    }
    while takers.len() < desired_targets {
        takers.push((1, None));
    }
    let mut total: usize = takers.iter().map(|(n, _)| *n as usize).sum();
    let mut room = MAX_LIST_SHARDS.saturating_sub(list.shard_count());
    let mut added: BTreeMap<usize, u32> = BTreeMap::new();
    while total < desired && room > 0 {
        // The fewest first; on a tie, one that can take it now, then list order.
        let Some(next) = (0..takers.len()).min_by_key(|&j| (takers[j].0, takers[j].1.is_none(), j))
        else {
            break;
        };
        takers[next].0 += 1;
        total += 1;
        if let Some(index) = takers[next].1 {
            *added.entry(index).or_default() += 1;
            room -= 1;
        }
    }
    added.into_iter().collect()
}

/// The list clients should see. A listed target leaves it only through a drain:
/// - the published order is kept (modulo routing depends on it), each entry refreshed from
///   what was observed; a target re-created in the same AZ takes its predecessor's place;
/// - an entry whose target is not seen (or not serving) keeps its place; a target gone for
///   good keeps its root listed, draining, until its files are home;
/// - a target is marked draining as the state (not the list) says; one drained and unlisted
///   is left out;
/// - new targets are appended once `available`, with an address and their shard directory.
pub(super) fn rebuild_list(
    published: Option<&MountTargetList>,
    shards: &[FirstRoot],
    state: &State,
    obs: &Observed,
) -> MountTargetList {
    let servable = |s: &&FirstRoot| {
        matches!(s.target.state, LifeCycle::Available | LifeCycle::Updating)
            && s.target.ip.is_some()
    };
    let unlisted = |id: &str| state.draining.get(id).is_some_and(|d| d.unlisted);
    let draining = |id: &str| state.draining.get(id).is_some_and(|d| !d.unlisted);
    let entry = |s: &FirstRoot, shards: u32| Target {
        id: s.target.id.clone(),
        ip: s.target.ip.clone().unwrap_or_default(),
        az: Some(s.target.az.clone()),
        az_id: Some(s.target.az_id.clone()),
        subnet_id: Some(s.target.subnet_id.clone()),
        root: s.root.clone(),
        draining: draining(&s.target.id),
        shards,
        draining_shards: 0,
    };
    let strategy = published.map_or(Strategy::Rendezvous, |l| l.strategy);
    let mut out = MountTargetList::new(strategy);
    let mut used = BTreeSet::new();
    for e in published.map(|l| l.mount_targets.as_slice()).unwrap_or(&[]) {
        if unlisted(&e.id) {
            continue;
        }
        let found = shards
            .iter()
            .filter(servable)
            .find(|s| s.target.id == e.id)
            .or_else(|| {
                shards.iter().filter(servable).find(|s| {
                    e.az_id.as_deref() == Some(s.target.az_id.as_str()) && s.root == e.root
                })
            });
        match found.filter(|s| !used.contains(&s.target.id)) {
            Some(s) => {
                used.insert(s.target.id.clone());
                // It keeps the shards its entry gives it (a re-created target inherits them).
                out.mount_targets.push(entry(s, e.shards.max(1)));
            }
            None => {
                // Not serving now (missing for a run, gone with files left, updating without
                // an address): the entry stays where it is.
                used.insert(e.id.clone());
                out.mount_targets.push(Target {
                    draining: strategy == Strategy::Rendezvous && draining(&e.id),
                    ..e.clone()
                });
            }
        }
    }
    for s in shards.iter().filter(servable) {
        if !used.contains(&s.target.id)
            && !unlisted(&s.target.id)
            && obs.files.contains_key(&s.root)
        {
            used.insert(s.target.id.clone());
            out.mount_targets.push(entry(s, 1));
        }
    }
    mark_draining_shards(&mut out, state);
    out
}

/// Shards are marked draining as the state says: only ever the last of a target's; one
/// drained and unlisted is left out.
fn mark_draining_shards(out: &mut MountTargetList, state: &State) {
    for e in &mut out.mount_targets {
        let last = e.last_extra_root();
        let unlisted = last
            .as_ref()
            .and_then(|root| state.draining_shards.get(root))
            .is_some_and(|d| d.unlisted && d.target == e.id);
        if unlisted {
            e.shards -= 1;
        }
        let marked = state
            .draining_shards
            .values()
            .filter(|d| d.target == e.id && !d.unlisted)
            .count() as u32;
        e.draining_shards = if e.draining {
            0
        } else {
            marked.min(e.shards - 1)
        };
    }
}
