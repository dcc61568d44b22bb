//! Which shard a logical path belongs to: [`shard_index`], the one function the Rust library
//! and the Python client (`clients/python/src/efs_router`) share, checked by both against
//! `tests/vectors/routing.json`. The exact rules are in `router/REFERENCE.md`.
//!
//! - `rendezvous`: every candidate scores `u64::from_be_bytes(sha256(root ‖ 0x00 ‖ path)[0..8])`
//!   over its `root` and the normalised path; the highest score wins; equal scores go to the
//!   smaller `root` (bytewise), then to the earlier entry. Adding a shard re-homes only the
//!   files it wins (1/(n+1)); removing one re-homes only its own files.
//! - `modulo-sha256`: the original `int(sha256(path).hexdigest(), 16) % n`, over the path as
//!   the application spelled it (not normalised), so that existing deployments keep their
//!   placement.
//!
//! `targets` are the list's shards ([`crate::MountTargetList::shards`]; for a list where every
//! mount target serves one shard, its entries). For both strategies, the candidates are the
//! shards not marked `draining`, in order. A draining shard receives no new files; it is routed
//! around exactly as if it were already removed, so draining and then removing it re-homes each
//! file at most once.

use crate::list::{Shard, Strategy};
use crate::path::{LogicalPath, PathError};
use sha2::{Digest, Sha256};

/// Why a path could not be routed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RouteError {
    #[error(transparent)]
    Path(#[from] PathError),
    #[error("the mount target list is empty: there is no shard to route to")]
    NoTargets,
    #[error("all {count} shards are draining: there is no shard to route new files to")]
    AllDraining { count: usize },
}

impl RouteError {
    /// The short name of the error, as the test vectors spell it: a [`PathError::kind`],
    /// `no-targets` or `all-draining`.
    pub fn kind(&self) -> &'static str {
        match self {
            RouteError::Path(e) => e.kind(),
            RouteError::NoTargets => "no-targets",
            RouteError::AllDraining { .. } => "all-draining",
        }
    }
}

/// The index, in `targets` (the published list's shards, in order: [`crate::MountTargetList::shards`],
/// not its entries when a mount target serves several), of the shard that `path` belongs to.
///
/// `path` is the logical path as the application spells it. It is checked and normalised
/// ([`LogicalPath::parse`]) for both strategies; `rendezvous` hashes the normalised form,
/// `modulo-sha256` the path exactly as given (the original hashed `file_path.encode()`).
pub fn shard_index(path: &str, targets: &[Shard], strategy: Strategy) -> Result<usize, RouteError> {
    let logical = LogicalPath::parse(path)?;
    index_of(path, &logical, targets, strategy)
}

/// [`shard_index`] for a path already parsed: `raw` is the application's spelling of `logical`.
pub(crate) fn index_of(
    raw: &str,
    logical: &LogicalPath,
    targets: &[Shard],
    strategy: Strategy,
) -> Result<usize, RouteError> {
    if targets.is_empty() {
        return Err(RouteError::NoTargets);
    }
    match strategy {
        Strategy::Rendezvous => rendezvous(logical, targets),
        Strategy::ModuloSha256 => modulo(raw, targets),
    }
}

fn rendezvous(path: &LogicalPath, targets: &[Shard]) -> Result<usize, RouteError> {
    let mut best: Option<(u64, &str, usize)> = None;
    for (index, target) in targets.iter().enumerate() {
        if target.draining {
            continue;
        }
        let score = rendezvous_score(&target.root, path);
        let wins = match best {
            None => true,
            Some((best_score, best_root, _)) => {
                score > best_score
                    || (score == best_score && target.root.as_bytes() < best_root.as_bytes())
            }
        };
        if wins {
            best = Some((score, &target.root, index));
        }
    }
    best.map(|(_, _, index)| index)
        .ok_or(RouteError::AllDraining {
            count: targets.len(),
        })
}

fn modulo(raw: &str, targets: &[Shard]) -> Result<usize, RouteError> {
    let active = targets.iter().filter(|t| !t.draining).count();
    if active == 0 {
        return Err(RouteError::AllDraining {
            count: targets.len(),
        });
    }
    let k = modulo_sha256(raw, active);
    let index = targets
        .iter()
        .enumerate()
        .filter(|(_, t)| !t.draining)
        .nth(k)
        .map(|(i, _)| i)
        .expect("k < number of targets not draining");
    Ok(index)
}

/// The rendezvous score of the shard rooted at `root` for `path`: the first 8 bytes, read as a
/// big-endian unsigned integer, of SHA-256 over the UTF-8 bytes of `root`, one 0x00 byte, and
/// the UTF-8 bytes of the normalised path. Neither part can hold a NUL, so the input is unambiguous.
pub fn rendezvous_score(root: &str, path: &LogicalPath) -> u64 {
    let digest = Sha256::new()
        .chain_update(root.as_bytes())
        .chain_update([0u8])
        .chain_update(path.as_str().as_bytes())
        .finalize();
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    u64::from_be_bytes(first)
}

/// The original expression, `int(hashlib.sha256(path.encode()).hexdigest(), 16) % n`: the
/// 256-bit digest read as a big-endian integer, modulo `n`, computed piece by piece
/// (`acc = (acc · 2^32 + next 4 bytes) mod n`, or byte by byte for n ≥ 2^32) without big
/// integers. `n` must not be 0.
pub fn modulo_sha256(path: &str, n: usize) -> usize {
    assert!(n > 0, "modulo by zero targets");
    let digest = Sha256::digest(path.as_bytes());
    match u32::try_from(n) {
        // acc < n ≤ 2^32 - 1, so acc · 2^32 + (4 bytes) < 2^64: exact in u64, four bytes
        // (8 divisions, not 32) at a time.
        Ok(n) => {
            let n = u64::from(n);
            digest.chunks_exact(4).fold(0u64, |acc, c| {
                let word = u32::from_be_bytes([c[0], c[1], c[2], c[3]]);
                ((acc << 32) | u64::from(word)) % n
            }) as usize
        }
        Err(_) => {
            let n = n as u128;
            digest
                .iter()
                .fold(0u128, |acc, &b| (acc * 256 + u128::from(b)) % n) as usize
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(id: &str, root: &str) -> Shard {
        Shard::new(id, "10.0.0.1", root)
    }

    fn three() -> Vec<Shard> {
        vec![
            target("fsmt-a", "/"),
            target("fsmt-b", "/shards/use1-az4"),
            target("fsmt-c", "/shards/use1-az6"),
        ]
    }

    #[test]
    fn modulo_matches_known_digests() {
        // sha256("") = e3b0c442...b855; CPython: int(that, 16) % n for n = 1, 2, 3, 7 is
        // 0, 1, 1, 1. The many-path comparison with CPython is in tests/vectors.rs.
        assert_eq!(modulo_sha256("", 1), 0);
        assert_eq!(modulo_sha256("", 2), 1);
        assert_eq!(modulo_sha256("", 3), 1);
        assert_eq!(modulo_sha256("", 7), 1);
    }

    #[test]
    fn rendezvous_worked_example_of_the_readme() {
        let p = LogicalPath::parse("data/analysis/device-42-1700000123.json").unwrap();
        assert_eq!(rendezvous_score("/", &p), 0x1795_7d7d_9b14_1361);
        assert_eq!(
            rendezvous_score("/shards/use1-az4", &p),
            0xe9c5_54d6_4b59_d5a9
        );
        assert_eq!(
            rendezvous_score("/shards/use1-az1", &p),
            0x97ed_ca1f_c7b9_1e81
        );
        assert_eq!(
            shard_index(p.as_str(), &three(), Strategy::Rendezvous),
            Ok(1)
        );
    }

    #[test]
    fn modulo_hashes_the_path_as_given() {
        let t = three();
        // Same file, two spellings: modulo may send them to different shards (it is the
        // original's behaviour), rendezvous never does.
        for p in ["data/x.json", "/data/x.json", "./data/x.json"] {
            assert_eq!(
                shard_index(p, &t, Strategy::ModuloSha256).unwrap(),
                modulo_sha256(p, 3)
            );
            assert_eq!(
                shard_index(p, &t, Strategy::Rendezvous).unwrap(),
                shard_index("data/x.json", &t, Strategy::Rendezvous).unwrap()
            );
        }
    }

    #[test]
    fn draining_targets_get_nothing_and_route_as_if_removed() {
        let mut t = three();
        t[1].draining = true;
        let without: Vec<Shard> = vec![t[0].clone(), t[2].clone()];
        for i in 0..2000 {
            let p = format!("data/analysis/device-{i}-1700000000.json");
            for s in [Strategy::Rendezvous, Strategy::ModuloSha256] {
                let got = shard_index(&p, &t, s).unwrap();
                assert_ne!(got, 1);
                let expect = shard_index(&p, &without, s).unwrap();
                assert_eq!(t[got].id, without[expect].id);
            }
        }
        for x in t.iter_mut() {
            x.draining = true;
        }
        for s in [Strategy::Rendezvous, Strategy::ModuloSha256] {
            assert_eq!(
                shard_index("a", &t, s),
                Err(RouteError::AllDraining { count: 3 })
            );
            assert_eq!(shard_index("a", &[], s), Err(RouteError::NoTargets));
        }
    }

    #[test]
    fn rendezvous_keys_on_root_not_position_or_id() {
        let t = three();
        let mut shuffled = vec![t[2].clone(), t[0].clone(), t[1].clone()];
        shuffled[0].id = "fsmt-recreated".to_owned();
        shuffled[0].ip = "10.0.9.9".to_owned();
        for i in 0..2000 {
            let p = format!("d/{i}");
            let a = shard_index(&p, &t, Strategy::Rendezvous).unwrap();
            let b = shard_index(&p, &shuffled, Strategy::Rendezvous).unwrap();
            assert_eq!(t[a].root, shuffled[b].root);
        }
    }

    #[test]
    fn duplicate_roots_go_to_the_first_in_list_order() {
        let t = vec![
            target("fsmt-1", "/"),
            target("fsmt-2", "/"),
            target("fsmt-3", "/"),
        ];
        for i in 0..100 {
            assert_eq!(
                shard_index(&format!("f{i}"), &t, Strategy::Rendezvous).unwrap(),
                0
            );
        }
        let mut t = t;
        t[0].draining = true;
        assert_eq!(shard_index("f", &t, Strategy::Rendezvous).unwrap(), 1);
    }

    #[test]
    fn bad_paths_are_errors_for_both_strategies() {
        for s in [Strategy::Rendezvous, Strategy::ModuloSha256] {
            for p in ["", "/", "a//b", "../x", "a\0b", "a/"] {
                assert!(
                    matches!(shard_index(p, &three(), s), Err(RouteError::Path(_))),
                    "{p:?}"
                );
            }
        }
    }
}
