//! Sizing: how many shards the files need, and the scale-in band.

use super::policy::Policy;
use efs_router::list::MAX_LIST_SHARDS;

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
        az_capacity: usize,
        policy: &Policy,
        modulo: bool,
    ) -> Size {
        let target_limit = az_capacity
            .min(policy.max_mount_targets.unwrap_or(usize::MAX))
            .max(1);
        // A modulo list cannot have more shards than entries, one per mount target.
        let shard_limit = if modulo {
            target_limit
        } else {
            policy.max_shards.clamp(1, MAX_LIST_SHARDS)
        };
        let needed = shards_needed(file_count, policy.file_threshold);
        let desired_shards = needed.min(shard_limit);
        Size {
            file_count,
            current,
            current_shards,
            needed,
            desired_shards,
            desired: desired_shards.min(target_limit),
            at_capacity: needed > shard_limit,
        }
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
pub fn capacity(n: usize, threshold: u64) -> u64 {
    match n {
        0 => 0,
        1 => threshold,
        n => (n as u64).saturating_mul(per_shard(threshold)),
    }
}

/// The fewest shards whose [`capacity`] holds `files`: at least 1.
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
            * capacity(serving.saturating_sub(1), policy.file_threshold) as f64;
        Band {
            files,
            holds: serving > 1 && file_count as f64 <= files,
        }
    }
}
