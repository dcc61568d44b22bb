//! The state brought up to date with what AWS shows.

use super::warning::Warning;
use crate::observed::{LifeCycle, Observed};
use crate::shard::FirstRoot;
use crate::state::{Drain, State};
use efs_router::list::{MountTargetList, Strategy};
use std::collections::BTreeSet;

/// Brings the state up to date with what AWS shows, in this order: targets that went missing
/// (kept in place for a run, then drained as gone), targets gone for good forgotten, drains
/// that no rule allows any more dropped with a warning, and draining marks the function did
/// not make reported (the list is rebuilt without them).
pub(super) fn track_targets(
    obs: &Observed,
    published: Option<&MountTargetList>,
    shards: &[FirstRoot],
    strategy: Strategy,
    undo: bool,
    state: &mut State,
    warnings: &mut Vec<Warning>,
) {
    let t = Tracker {
        obs,
        published,
        shards,
        rendezvous: strategy == Strategy::Rendezvous,
        undo,
    };
    t.adopt_creates(state);
    t.missing(state);
    t.drain_gone(state, warnings);
    t.recheck_drains(state, warnings);
    t.recheck_shard_drains(state, warnings);
    t.foreign_marks(state, warnings);
}

struct Tracker<'a> {
    obs: &'a Observed,
    published: Option<&'a MountTargetList>,
    shards: &'a [FirstRoot],
    /// Under modulo an entry never changes, so nothing drains.
    rendezvous: bool,
    /// The undo event: any target's shard but `/` may drain (one not this function's, or
    /// protected, is kept once drained).
    undo: bool,
}

impl Tracker<'_> {
    /// AWS shows the target, and not on its way out.
    fn seen(&self, id: &str) -> bool {
        self.obs
            .mount_targets
            .iter()
            .any(|t| t.id == id && !matches!(t.state, LifeCycle::Deleted | LifeCycle::Deleting))
    }

    /// Missing in an earlier run too: gone for good.
    fn gone(&self, state: &State, id: &str) -> bool {
        state
            .missing
            .get(id)
            .is_some_and(|t| *t < self.obs.now.secs())
    }

    fn listed(&self, id: &str) -> bool {
        self.published
            .is_some_and(|l| l.mount_targets.iter().any(|t| t.id == id))
    }

    /// Creates asked for and never recorded: the target AWS shows in that subnet is the
    /// function's own (its answer was lost, or the run died first); with none there, AWS made
    /// none, and the entry goes.
    fn adopt_creates(&self, state: &mut State) {
        for (subnet, intent) in std::mem::take(&mut state.creating) {
            let made = self.obs.mount_targets.iter().find(|t| {
                t.subnet_id == subnet && t.occupies_az() && t.state != LifeCycle::Deleting
            });
            if let Some(t) = made.filter(|t| !state.created.contains_key(&t.id)) {
                state.created.insert(t.id.clone(), intent);
            }
        }
    }

    /// Listed (or created, or draining) but not seen: missing since now, unless already; a
    /// created target gone for good is forgotten.
    fn missing(&self, state: &mut State) {
        let mut watched: BTreeSet<String> = state.created.keys().cloned().collect();
        if let Some(l) = self.published {
            watched.extend(l.mount_targets.iter().map(|t| t.id.clone()));
        }
        watched.extend(state.draining.keys().cloned());
        state
            .missing
            .retain(|id, _| watched.contains(id) && !self.seen(id));
        for id in &watched {
            if !self.seen(id) {
                state
                    .missing
                    .entry(id.clone())
                    .or_insert(self.obs.now.secs());
            }
        }
        let gone_created: Vec<String> = state
            .created
            .keys()
            .filter(|id| self.gone(state, id))
            .cloned()
            .collect();
        for id in gone_created {
            state.created.remove(&id);
        }
    }

    /// A listed target gone for good: its root drains home.
    fn drain_gone(&self, state: &mut State, warnings: &mut Vec<Warning>) {
        let Some(l) = self.published.filter(|_| self.rendezvous) else {
            return;
        };
        for t in &l.mount_targets {
            let recreated = self.shards.iter().any(|s| s.root == t.root);
            if self.gone(state, &t.id) && !recreated && !state.draining.contains_key(&t.id) {
                warnings.push(Warning::TargetGone {
                    id: t.id.clone(),
                    root: t.root.clone(),
                });
                let drain = Drain {
                    root: t.root.clone(),
                    since: self.obs.now.secs(),
                    unlisted: false,
                    gone: true,
                };
                state.draining.insert(t.id.clone(), drain);
            }
        }
    }

    /// Each target's drain is checked against the rules again, whatever the list or the state
    /// says.
    fn recheck_drains(&self, state: &mut State, warnings: &mut Vec<Warning>) {
        let ids: Vec<String> = state.draining.keys().cloned().collect();
        for id in ids {
            let d = state.draining[&id].clone();
            if d.gone {
                // Done once its root has left the list, or a target re-created in its AZ took
                // the root over (with its files).
                let taken_over = self.shards.iter().any(|s| s.root == d.root);
                if (d.unlisted && !self.listed(&id)) || taken_over {
                    state.draining.remove(&id);
                }
                continue;
            }
            if d.unlisted && !self.seen(&id) {
                // Deleted by this function once unlisted: done.
                state.draining.remove(&id);
                state.created.remove(&id);
                continue;
            }
            if self.gone(state, &id) {
                // Deleted by someone else while it drained: only its root is left to empty.
                if let Some(d) = state.draining.get_mut(&id) {
                    d.gone = true;
                }
                continue;
            }
            let target = self.obs.mount_targets.iter().find(|t| t.id == id);
            let protected = target.is_some_and(|t| self.obs.protected_azs.contains(&t.az_id));
            let ours = state.created.contains_key(&id) && !protected;
            let allowed = (ours || self.undo) && d.root != "/" && self.rendezvous;
            if target.is_some() && !allowed {
                warnings.push(Warning::DrainStopped { id: id.clone() });
                state.draining.remove(&id);
            }
        }
    }

    /// A shard drain holds while its target serves, listed, and the shard is still its last.
    fn recheck_shard_drains(&self, state: &mut State, warnings: &mut Vec<Warning>) {
        let roots: Vec<String> = state.draining_shards.keys().cloned().collect();
        for root in roots {
            let d = state.draining_shards[&root].clone();
            let entry = self
                .published
                .and_then(|l| l.mount_targets.iter().find(|t| t.id == d.target));
            if d.unlisted {
                // Done once the list without it is the one published.
                if !entry.is_some_and(|t| t.shard_roots().contains(&root)) {
                    state.draining_shards.remove(&root);
                }
                continue;
            }
            let last = entry.and_then(|t| t.last_extra_root());
            let holds = self.rendezvous
                && self.seen(&d.target)
                && entry.is_some_and(|t| !t.draining)
                && last.as_deref() == Some(root.as_str());
            if !holds {
                if entry.is_some() && self.seen(&d.target) {
                    warnings.push(Warning::ShardDrainStopped {
                        root: root.clone(),
                        target: d.target.clone(),
                    });
                }
                state.draining_shards.remove(&root);
            }
        }
    }

    /// A draining mark the function did not make is not obeyed: said, and left out of the list.
    fn foreign_marks(&self, state: &State, warnings: &mut Vec<Warning>) {
        let Some(l) = self.published else {
            return;
        };
        for t in l.mount_targets.iter().filter(|t| t.draining) {
            if !state.draining.contains_key(&t.id) {
                warnings.push(Warning::ForeignDrainMark { id: t.id.clone() });
            }
        }
        for t in l.mount_targets.iter().filter(|t| t.draining_shards > 0) {
            let marked = state
                .draining_shards
                .values()
                .filter(|d| d.target == t.id)
                .count();
            if (t.draining_shards as usize) > marked {
                warnings.push(Warning::ForeignShardDrainMark {
                    id: t.id.clone(),
                    shards: t.draining_shards,
                });
            }
        }
    }
}
