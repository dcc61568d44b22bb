//! Sizing: how many shards the files need, and the scale-in band.

use super::decision::Bound;
use super::list::{grow_shards, serving_shards};
use super::policy::Policy;
use super::room::Room;
use super::Seen;
use crate::observed::Observed;
use efs_router::list::{MountTargetList, MAX_LIST_SHARDS};

/// The size of a run and what bounds it: what [`super::plan`] sizes before it decides.
pub(super) struct Sizing {
    pub(super) size: Size,
    pub(super) limits: Limits,
    pub(super) band: Band,
    /// New shards for the targets that serve now: (index in the list, shards added).
    pub(super) growth: Vec<(usize, u32)>,
}

impl Sizing {
    /// `held`: the live clients that keep the list on version 1 ([`super::version_held`]).
    pub(super) fn of(
        seen: &Seen,
        obs: &Observed,
        policy: &Policy,
        list: &MountTargetList,
        held: Option<Vec<String>>,
    ) -> Sizing {
        let shards = &seen.first_roots[..];
        let limits = Limits::of(&seen.room, obs, policy, seen.modulo, held);
        let current = shards.iter().filter(|s| s.target.state.is_active()).count();
        let serving = serving_shards(list, shards, &seen.state);
        let mut size = Size::of(seen.counts.file_count, current, serving, policy, &limits);
        if policy.undo && !seen.modulo {
            size = size.undoing();
        }
        let band = Band::of(policy, size.current_shards, seen.counts.file_count);
        let growth = match seen.modulo {
            true => Vec::new(),
            false => grow_shards(list, shards, size.desired_shards, size.desired),
        };
        Sizing {
            size,
            limits,
            band,
            growth,
        }
    }
}

/// How many shards and mount targets: needed by the files, possible, wanted.
pub(super) struct Size {
    pub(super) file_count: u64,
    /// Mount targets creating, available or updating.
    pub(super) current: usize,
    /// Shards that take new files.
    pub(super) current_shards: usize,
    pub(super) needed: usize,
    pub(super) desired_shards: usize,
    /// Mount targets wanted: one per shard while the AZs last.
    pub(super) desired: usize,
    pub(super) at_capacity: bool,
}

impl Size {
    pub(super) fn of(
        file_count: u64,
        current: usize,
        current_shards: usize,
        policy: &Policy,
        limits: &Limits,
    ) -> Size {
        let needed = shards_needed(file_count, policy.file_threshold);
        let desired_shards = needed.min(limits.shards.most);
        Size {
            file_count,
            current,
            current_shards,
            needed,
            desired_shards,
            desired: desired_shards.min(limits.targets.most),
            at_capacity: needed > limits.shards.most,
        }
    }
}

impl Size {
    /// The undo event's size: one shard on one target, whatever the files need.
    pub(super) fn undoing(self) -> Size {
        Size {
            desired_shards: 1,
            desired: 1,
            at_capacity: false,
            ..self
        }
    }
}

/// The most there can be of something, and what sets that number (the reason names it).
#[derive(Debug, Clone)]
pub(super) struct Limit {
    pub(super) most: usize,
    pub(super) bound: Bound,
}

/// The limits behind both the size and an at-capacity decision's [`Bound`]: one computation,
/// so the bound a run reports is the one that set `at_capacity`.
pub(super) struct Limits {
    /// Mount targets: the AZs that can hold one (one for One Zone), `MAX_MOUNT_TARGETS`.
    pub(super) targets: Limit,
    /// Shards: `MAX_SHARDS` (within the list's own cap); for a modulo list, the targets.
    pub(super) shards: Limit,
}

impl Limits {
    /// `held`: the list must stay version 1 (one shard per target), and the live clients that
    /// hold it there.
    pub(super) fn of(
        room: &Room,
        obs: &Observed,
        policy: &Policy,
        modulo: bool,
        held: Option<Vec<String>>,
    ) -> Limits {
        let fs = &obs.file_system;
        let most = room
            .usable_azs
            .min(policy.max_mount_targets.unwrap_or(usize::MAX))
            .max(1);
        let bound = if fs.is_one_zone() {
            Bound::OneZone {
                az: fs
                    .one_zone_az
                    .clone()
                    .or_else(|| fs.one_zone_az_id.clone())
                    .unwrap_or_default(),
            }
        } else {
            match policy.max_mount_targets {
                Some(m) if m < room.usable_azs => Bound::MaxMountTargets(m),
                _ => Bound::Azs {
                    usable: room.usable_azs,
                    excluded: room.excluded.len(),
                },
            }
        };
        let targets = Limit { most, bound };
        // A modulo list cannot have more shards than entries, one per mount target.
        let max_shards = policy.max_shards.clamp(1, MAX_LIST_SHARDS);
        let shards = match held {
            _ if modulo => targets.clone(),
            Some(clients) if targets.most < max_shards => Limit {
                most: targets.most,
                bound: Bound::ListVersion {
                    most: targets.most,
                    clients,
                },
            },
            _ => Limit {
                most: max_shards,
                bound: Bound::MaxShards(max_shards),
            },
        };
        Limits { targets, shards }
    }
}

/// The mean number of files per shard that keeps every shard at or below `threshold` once
/// balanced. Rendezvous sends each file to one of n shards with equal chance, so a shard's
/// count is binomial, with mean μ and a standard deviation below √μ; requiring
/// μ + 4·√μ ≤ threshold gives μ = (√(threshold + 4) − 2)². A shard then exceeds the threshold
/// with a chance under 1 in 30,000 (under 1 % for all of 256 shards at once). At the default
/// 50,000 that is 49,113 (1.8 % headroom); at 100 it is 67.
pub fn per_shard(threshold: u64) -> u64 {
    let root = ((threshold as f64) + 4.0).sqrt() - 2.0;
    ((root * root).floor() as u64).max(1)
}

/// The files `n` shards hold with none above `threshold`: all of them in one shard, else
/// `n` times [`per_shard`] (several shards are balanced only on average).
pub fn files_within(n: usize, threshold: u64) -> u64 {
    match n {
        0 => 0,
        1 => threshold,
        n => (n as u64).saturating_mul(per_shard(threshold)),
    }
}

/// The fewest shards whose [`files_within`] holds `files`: at least 1.
pub fn shards_needed(files: u64, threshold: u64) -> usize {
    if files <= threshold {
        return 1;
    }
    usize::try_from(files.div_ceil(per_shard(threshold)))
        .unwrap_or(usize::MAX)
        .max(2)
}

/// Hysteresis: a shard may go only well below the scale-out line (no flapping at it).
pub(super) struct Band {
    pub(super) files: f64,
    pub(super) holds: bool,
}

impl Band {
    pub(super) fn of(policy: &Policy, serving: usize, file_count: u64) -> Band {
        let files = policy.scale_in_ratio
            * files_within(serving.saturating_sub(1), policy.file_threshold) as f64;
        Band {
            files,
            holds: serving > 1 && file_count as f64 <= files,
        }
    }
}
