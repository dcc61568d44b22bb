//! The counts: files per shard root, and in all.

use super::warning::Warning;
use crate::observed::Observed;
use crate::shard::FirstRoot;
use efs_router::list::MountTargetList;
use std::collections::{BTreeMap, BTreeSet};

/// Files per shard: each distinct root once (the original layout lists `/` for every target).
pub(super) struct Counts<'a> {
    pub(super) by_root: &'a BTreeMap<String, u64>,
    pub(super) file_count: u64,
}

impl<'a> Counts<'a> {
    pub(super) fn of(
        obs: &'a Observed,
        shards: &[FirstRoot],
        list: Option<&MountTargetList>,
        warnings: &mut Vec<Warning>,
    ) -> Counts<'a> {
        let mut roots: BTreeSet<String> = shards.iter().map(|s| s.root.clone()).collect();
        roots.insert("/".to_owned());
        if let Some(l) = list {
            roots.extend(l.shards().into_iter().map(|t| t.root));
        }
        let mut counts = Counts {
            by_root: &obs.files,
            file_count: 0,
        };
        counts.file_count = roots.iter().map(|r| counts.files_of(r)).sum();
        for (root, files) in &obs.files {
            if *files > 0 && !roots.contains(root) {
                warnings.push(Warning::Uncounted {
                    root: root.clone(),
                    files: *files,
                });
            }
        }
        for s in shards.iter().filter(|s| !s.target.state.is_active()) {
            warnings.push(Warning::TargetNotServing {
                id: s.target.id.clone(),
                az: s.target.az.clone(),
                state: s.target.state.as_str().to_owned(),
            });
        }
        counts
    }

    pub(super) fn files_of(&self, root: &str) -> u64 {
        self.by_root.get(root).copied().unwrap_or(0)
    }

    /// Files by shard root (the list's shards, then the first shard of each target not
    /// listed yet), and by mount target (all the shards it serves).
    pub(super) fn per_shard_and_target(
        &self,
        list: &MountTargetList,
        shards: &[FirstRoot],
    ) -> (BTreeMap<String, u64>, BTreeMap<String, u64>) {
        let mut per_shard = BTreeMap::new();
        let mut per_target = BTreeMap::new();
        for t in list.shards() {
            let files = self.files_of(&t.root);
            per_shard.insert(t.root.clone(), files);
            *per_target.entry(t.id).or_insert(0) += files;
        }
        for s in shards {
            if !per_target.contains_key(&s.target.id) {
                let files = self.files_of(&s.root);
                per_shard.entry(s.root.clone()).or_insert(files);
                per_target.insert(s.target.id.clone(), files);
            }
        }
        (per_shard, per_target)
    }
}
