//! Scale-in: what a drain would take, and the drain under way.

use super::counts::Counts;
use super::decision::DrainView;
use super::list::serving;
use super::tasks::in_use;
use crate::observed::Observed;
use crate::shard::FirstRoot;
use crate::state::State;
use efs_router::list::MountTargetList;

/// The drain under way, if any: a target's (the first in the list's order, then any unlisted
/// one, or one the list no longer names: a state read that lagged its write may have lost
/// its `unlisted`), else a shard's.
pub(super) fn drain_under_way(
    list: &MountTargetList,
    base: Option<&MountTargetList>,
    shards: &[FirstRoot],
    state: &State,
    obs: &Observed,
) -> Option<DrainView> {
    let az_of = |id: &str| {
        shards
            .iter()
            .find(|s| s.target.id == id)
            .map(|s| s.target.az.clone())
            .unwrap_or_default()
    };
    // A shard that could not be walked is not known to be empty.
    let has_files = |root: &str| obs.tree_has_files.get(root).copied().unwrap_or(true);
    let target = list
        .mount_targets
        .iter()
        .find_map(|t| state.draining.get_key_value(&t.id))
        .or_else(|| {
            let listed = |id: &str| list.mount_targets.iter().any(|t| t.id == id);
            let left =
                |(id, d): &(&String, &crate::state::Drain)| (d.unlisted || !listed(id)) && !d.gone;
            state.draining.iter().find(left)
        });
    let keep = |id: &str| {
        let az = shards
            .iter()
            .find(|s| s.target.id == id)
            .map(|s| s.target.az_id.as_str());
        !state.created.contains_key(id) || az.is_some_and(|az| obs.protected_azs.contains(az))
    };
    if let Some((id, d)) = target {
        // A target's drain empties every shard it serves (a target gone by hand may serve several).
        let roots = base
            .and_then(|l| l.mount_targets.iter().find(|t| &t.id == id))
            .filter(|t| t.root == d.root)
            .map_or_else(|| vec![d.root.clone()], |t| t.shard_roots());
        // The AZ AWS describes it in, else the one its shard was given.
        let az = obs
            .mount_targets
            .iter()
            .find(|t| &t.id == id)
            .map_or_else(|| az_of(id), |t| t.az.clone());
        return Some(DrainView {
            id: id.clone(),
            in_use: in_use(obs, &az),
            az,
            root: d.root.clone(),
            unlisted: d.unlisted,
            gone: d.gone,
            keep: keep(id),
            shard: false,
            with_files: roots.into_iter().filter(|r| has_files(r)).collect(),
        });
    }
    let (root, d) = state.draining_shards.iter().next()?;
    Some(DrainView {
        id: d.target.clone(),
        az: az_of(&d.target),
        root: root.clone(),
        unlisted: d.unlisted,
        gone: false,
        keep: true,
        // The target keeps serving its other shards: it does not go.
        in_use: None,
        shard: true,
        with_files: has_files(root).then(|| root.clone()).into_iter().collect(),
    })
}

/// What a scale-in would drain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Candidate {
    /// The last shard of a target that serves several.
    Shard { id: String, root: String },
    /// A whole target (serving one shard).
    Target(String),
}

/// What a scale-in would drain. First a shard: the last of the serving target with the most
/// shards (the later in the list on a tie), since a target's shards go before the target.
/// Then a target: only one this function created (never the first shard, never one that was
/// there before), never one in a protected AZ; one in an AZ where no task runs first (a
/// task mounts through its AZ's target, which then stays: `hold_target_in_use`), then the one
/// with the fewest files, the newest on a tie. The undo event drains any target's shard but `/`: one this function did not create,
/// or in a protected AZ, is kept once drained.
pub(super) fn scale_in_candidate(
    obs: &Observed,
    list: &MountTargetList,
    shards: &[FirstRoot],
    counts: &Counts,
    state: &State,
    undo: bool,
) -> Option<Candidate> {
    let serves = |id: &str| serving(shards, id).is_some();
    let shard = list
        .mount_targets
        .iter()
        .enumerate()
        .filter(|(_, t)| t.shards > 1 && !t.draining && t.draining_shards == 0 && serves(&t.id))
        .max_by_key(|(i, t)| (t.shards, *i))
        .and_then(|(_, t)| {
            Some(Candidate::Shard {
                id: t.id.clone(),
                root: t.last_extra_root()?,
            })
        });
    if shard.is_some() {
        return shard;
    }
    let protected =
        |az: &Option<String>| az.as_ref().is_some_and(|az| obs.protected_azs.contains(az));
    list.mount_targets
        .iter()
        .enumerate()
        .filter(|(_, t)| {
            t.root != "/"
                && t.shards == 1
                && (undo || (state.created.contains_key(&t.id) && !protected(&t.az_id)))
        })
        .min_by_key(|(i, t)| {
            let mounted = in_use(obs, t.az.as_deref().unwrap_or_default()).is_some();
            (mounted, counts.files_of(&t.root), std::cmp::Reverse(*i))
        })
        .map(|(_, t)| Candidate::Target(t.id.clone()))
}
