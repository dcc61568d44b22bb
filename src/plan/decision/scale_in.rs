//! Within the scale-in band: a drain starts once the cool-downs allow, or it is held; and
//! keeping what there is, when there is nothing to add or remove.

use super::{Situation, MIGRATE_EVENT};
use crate::plan::effect::{Effect, EffectInputs};
use crate::plan::reason::Words;
use crate::plan::scale_in::Candidate;
use crate::plan::sizing::Band;
use crate::state::{self, ShardDrain};
use efs_router::list::MountTargetList;

#[derive(Debug, Clone, PartialEq)]
pub enum ScaleIn {
    /// Within the scale-in band for long enough: this target starts draining.
    StartDrain { id: String, held: u64 },
    /// Within the scale-in band for long enough: the last shard of the target that serves the
    /// most starts draining (a target's shards go before the target).
    StartShardDrain { id: String, root: String, held: u64 },
    /// Within the scale-in band, but no target goes yet.
    Hold(Hold),
    /// Nothing to add or remove (`fewer_would_do`: above the scale-in band, so all stay).
    Keep { fewer_would_do: bool },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Hold {
    /// None may go: `/`, targets this function did not create, protected AZs.
    NoCandidate,
    /// The band has held for `held` of the `cooldown` seconds it must.
    Settling { held: u64, cooldown: u64 },
    /// The last scale-out was `ago` seconds ago, less than the cool-down.
    RecentScaleOut { ago: u64, cooldown: u64 },
    /// A `modulo-sha256` list cannot lose an entry without re-homing most files.
    ModuloList,
}

/// Within the scale-in band: what may go, once the cool-downs allow.
pub(super) fn decide(s: &Situation) -> ScaleIn {
    let held = s.now.saturating_sub(s.below_since.unwrap_or(s.now));
    let after_scale_out = s.last_scale_out.map(|t| s.now.saturating_sub(t));
    match &s.candidate {
        None if s.modulo => ScaleIn::Hold(Hold::ModuloList),
        None => ScaleIn::Hold(Hold::NoCandidate),
        Some(_) if held < s.cooldown => ScaleIn::Hold(Hold::Settling {
            held,
            cooldown: s.cooldown,
        }),
        Some(_) if after_scale_out.is_some_and(|t| t < s.cooldown) => {
            ScaleIn::Hold(Hold::RecentScaleOut {
                ago: after_scale_out.unwrap_or_default(),
                cooldown: s.cooldown,
            })
        }
        Some(c) => start_drain(c, held),
    }
}

/// The drain a scale-in starts: a shard's, or a whole target's.
pub(super) fn start_drain(candidate: &Candidate, held: u64) -> ScaleIn {
    match candidate {
        Candidate::Target(id) => ScaleIn::StartDrain {
            id: id.clone(),
            held,
        },
        Candidate::Shard { id, root } => ScaleIn::StartShardDrain {
            id: id.clone(),
            root: root.clone(),
            held,
        },
    }
}

/// The root of the list's entry for this target (none: empty).
fn root_of(list: &MountTargetList, id: &str) -> String {
    let entry = list.mount_targets.iter().find(|t| t.id == id);
    entry.map(|t| t.root.clone()).unwrap_or_default()
}

impl ScaleIn {
    pub(super) fn name(&self) -> &'static str {
        match self {
            ScaleIn::StartDrain { .. } => "start_drain",
            ScaleIn::StartShardDrain { .. } => "start_shard_drain",
            ScaleIn::Hold(Hold::NoCandidate) => "hold_no_candidate",
            ScaleIn::Hold(Hold::Settling { .. }) => "hold_settling",
            ScaleIn::Hold(Hold::RecentScaleOut { .. }) => "hold_recent_scale_out",
            ScaleIn::Hold(Hold::ModuloList) => "hold_modulo_list",
            ScaleIn::Keep { .. } => "keep",
        }
    }

    /// A `modulo-sha256` list's scale-in, held because no entry may leave it.
    pub(super) fn lifted_by(&self) -> Option<&'static str> {
        matches!(self, ScaleIn::Hold(Hold::ModuloList)).then_some(MIGRATE_EVENT)
    }

    pub(in crate::plan) fn effect(&self, inputs: &EffectInputs, out: &mut Effect) {
        let now = inputs.obs.now.secs();
        match self {
            ScaleIn::StartDrain { id, .. } => {
                let drain = state::Drain {
                    root: root_of(&out.list, id),
                    since: now,
                    unlisted: false,
                    gone: false,
                };
                out.state.draining.insert(id.clone(), drain);
                out.state.below_since = None;
                inputs.relist(out);
            }
            ScaleIn::StartShardDrain { id, root, .. } => {
                let drain = ShardDrain {
                    target: id.clone(),
                    since: now,
                    unlisted: false,
                };
                out.state.draining_shards.insert(root.clone(), drain);
                out.state.below_since = None;
                inputs.relist(out);
            }
            // The band holds: its clock runs from when it began.
            ScaleIn::Hold(_) => out.state.below_since = Some(out.state.below_since.unwrap_or(now)),
            ScaleIn::Keep { .. } => out.state.below_since = None,
        }
    }

    pub(in crate::plan) fn words(&self, at: &Words) -> String {
        let (need, band) = (at.need, at.band);
        match self {
            ScaleIn::Hold(hold) => hold_words(hold, need, band),
            ScaleIn::StartDrain { id, held } => {
                format!(
                    "{}: draining {id} before removing it",
                    in_band(need, band, *held)
                )
            }
            ScaleIn::StartShardDrain { id, root, held } => format!(
                "{}: draining shard {root} of {id} before it leaves the list",
                in_band(need, band, *held)
            ),
            ScaleIn::Keep {
                fewer_would_do: true,
            } => format!("{need}: above the scale-in band, keeping them"),
            ScaleIn::Keep {
                fewer_would_do: false,
            } => format!("{need}: nothing to add"),
        }
    }
}

fn in_band(need: &str, band: &Band, held: u64) -> String {
    format!(
        "{need}; within the scale-in band (<= {:.0} files) for {held} s",
        band.files
    )
}

/// Why no shard goes although the files are within the band.
fn hold_words(hold: &Hold, need: &str, band: &Band) -> String {
    let in_band = format!(
        "{need}; within the scale-in band (<= {:.0} files)",
        band.files
    );
    match hold {
        Hold::NoCandidate => format!(
            "{in_band}, but none may go: the first shard `/`, targets this function did not \
             create and targets in protected AZs stay"
        ),
        Hold::Settling { held, cooldown } => format!("{in_band} for {held} s of {cooldown} s"),
        Hold::ModuloList => format!(
            "{in_band}, but the list is modulo-sha256: removing an entry would re-home most \
             files, so none goes"
        ),
        Hold::RecentScaleOut { ago, cooldown } => {
            format!("{in_band}, but the last scale-out was {ago} s ago (cool-down {cooldown} s)")
        }
    }
}

/// One of each, for [`super::Decision::NAMES`]' test: the match fails to compile until a new one is
/// here.
#[cfg(test)]
pub(super) fn examples() -> Vec<super::Decision> {
    let id = || "fsmt-1".to_owned();
    let all = [
        ScaleIn::StartDrain { id: id(), held: 1 },
        ScaleIn::StartShardDrain {
            id: id(),
            root: "/r".into(),
            held: 1,
        },
        ScaleIn::Hold(Hold::NoCandidate),
        ScaleIn::Hold(Hold::Settling {
            held: 1,
            cooldown: 2,
        }),
        ScaleIn::Hold(Hold::RecentScaleOut {
            ago: 1,
            cooldown: 2,
        }),
        ScaleIn::Hold(Hold::ModuloList),
        ScaleIn::Keep {
            fewer_would_do: false,
        },
    ];
    all.iter().for_each(|s| match s {
        ScaleIn::StartDrain { .. }
        | ScaleIn::StartShardDrain { .. }
        | ScaleIn::Hold(
            Hold::NoCandidate
            | Hold::Settling { .. }
            | Hold::RecentScaleOut { .. }
            | Hold::ModuloList,
        )
        | ScaleIn::Keep { .. } => {}
    });
    all.into_iter().map(super::Decision::ScaleIn).collect()
}
