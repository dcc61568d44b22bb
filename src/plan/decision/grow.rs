//! Growth: a mount target, shards on the targets there, or what holds them back.

use super::{Situation, MIGRATE_EVENT};
use crate::plan::effect::{Effect, EffectInputs};
use crate::plan::reason::Words;
use crate::plan::step::{NewTarget, Step};

#[derive(Debug, Clone, PartialEq)]
pub enum Grow {
    /// Add a mount target in this subnet.
    Create(NewTarget),
    /// More shards are wanted and no mount target is to be added: the existing targets take
    /// `added` new shards between them, evenly.
    AddShards { added: usize },
    /// More are wanted, but one is still creating: wait for it first.
    WaitForCreating { id: String, az: String },
    /// More are wanted, but this run already created one.
    OneARun,
    /// More are needed than can exist.
    AtCapacity(Bound),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Bound {
    /// A One Zone file system (in this AZ) takes one mount target.
    OneZone {
        az: String,
    },
    MaxMountTargets(usize),
    /// No AZ without a target has an eligible subnet; `excluded` were refused by AWS.
    Azs {
        usable: usize,
        excluded: usize,
    },
    /// `MAX_SHARDS` (or the list's own cap).
    MaxShards(usize),
    /// One shard per mount target: not every live client reads a version 2 list (`clients`
    /// do not; none when no client reports).
    ListVersion {
        most: usize,
        clients: Vec<String>,
    },
}

/// Growth, when more are wanted than serve: a mount target first, then shards; then capacity.
pub(super) fn decide(s: &Situation) -> Option<Grow> {
    let short_of_targets = s.size.desired > s.size.current;
    if short_of_targets {
        if let Some(c) = s.creating {
            return Some(Grow::WaitForCreating {
                id: c.target.id.clone(),
                az: c.target.az.clone(),
            });
        } else if !s.allow_create {
            return Some(Grow::OneARun);
        } else if let Some(new) = &s.next_target {
            return Some(Grow::Create(new.clone()));
        }
    }
    if s.shards_to_add > 0 {
        return Some(Grow::AddShards {
            added: s.shards_to_add,
        });
    }
    if s.size.at_capacity || (short_of_targets && s.modulo) {
        return Some(Grow::AtCapacity(s.bound.clone()));
    }
    None
}

impl Grow {
    pub(super) fn name(&self) -> &'static str {
        match self {
            Grow::Create(_) => "create",
            Grow::AddShards { .. } => "add_shards",
            Grow::WaitForCreating { .. } => "wait_for_creating",
            Grow::OneARun => "one_a_run",
            Grow::AtCapacity(_) => "at_capacity",
        }
    }

    /// A `modulo-sha256` list at capacity: its bound is the mount targets', never
    /// `MAX_SHARDS`, and the migrate event lifts it.
    pub(super) fn lifted_by(&self) -> Option<&'static str> {
        match self {
            Grow::AtCapacity(Bound::MaxShards(_) | Bound::ListVersion { .. }) => None,
            Grow::AtCapacity(_) => Some(MIGRATE_EVENT),
            _ => None,
        }
    }

    pub(in crate::plan) fn effect(&self, inputs: &EffectInputs, out: &mut Effect) {
        match self {
            Grow::Create(new) => {
                if !inputs.obs.files.contains_key(&new.root) {
                    out.steps.push(Step::CreateShardDir {
                        root: new.root.clone(),
                    });
                }
                // The scale-in timers and the targets created change only once AWS accepts the
                // create (apply records them): a refused or conflicting create is not a scale-out.
                out.steps.push(Step::CreateMountTarget(new.clone()));
                inputs.grow(out);
            }
            // New shards go on the targets that serve now in every run that grows (a target
            // waited for, or none to add), not only in one that creates.
            Grow::WaitForCreating { .. } | Grow::OneARun | Grow::AddShards { .. } => {
                inputs.grow(out)
            }
            // Bounded: nothing changes.
            Grow::AtCapacity(_) => {}
        }
    }

    pub(in crate::plan) fn words(&self, at: &Words) -> String {
        let (need, current) = (at.need, at.size.current);
        match self {
            Grow::AtCapacity(bound) => format!("{need}; {}: at capacity", bound_words(bound)),
            Grow::Create(n) => format!(
                "{need}; adding a mount target in {} ({}, {})",
                n.az, n.az_id, n.subnet_id
            ),
            Grow::AddShards { added } => format!(
                "{need}; no mount target to add (no free AZ, MAX_MOUNT_TARGETS or One Zone), so \
                 the {current} there take {added} new shard{} between them",
                if *added == 1 { "" } else { "s" }
            ),
            Grow::WaitForCreating { id, az } => {
                format!("{need}; have {current}; waiting for {id} in {az} before adding another")
            }
            Grow::OneARun => format!("{need}; have {current}; one new mount target a run"),
        }
    }
}

/// What bounds the shards, in words.
fn bound_words(bound: &Bound) -> String {
    match bound {
        Bound::MaxShards(m) => format!("MAX_SHARDS is {m}"),
        Bound::ListVersion { most, clients } => format!(
            "the list stays version 1, one shard per mount target ({most}), until every live \
             client reports that it reads version 2 ({})",
            match clients.is_empty() {
                true => "no client reports yet".to_owned(),
                false => format!("{} do not", clients.join(", ")),
            }
        ),
        Bound::OneZone { az } => format!(
            "a One Zone file system (in {az}) takes exactly one mount target, in its own AZ"
        ),
        Bound::MaxMountTargets(m) => format!("MAX_MOUNT_TARGETS is {m}"),
        Bound::Azs { usable, excluded } => format!(
            "no AZ without a mount target has an eligible subnet ({usable} AZ{} usable{})",
            if *usable == 1 { "" } else { "s" },
            match excluded {
                0 => String::new(),
                n => format!("; {n} subnet(s) or AZ(s) left out after AWS refused them"),
            }
        ),
    }
}

/// One of each, for [`super::Decision::NAMES`]' test: the match fails to compile until a new one is
/// here.
#[cfg(test)]
pub(super) fn examples() -> Vec<super::Decision> {
    use crate::plan::step::SecurityGroups;
    let new = NewTarget {
        subnet_id: "subnet-1".into(),
        az: "us-east-1a".into(),
        az_id: "use1-az1".into(),
        root: "/shards/use1-az1".into(),
        security_groups: SecurityGroups::VpcDefault,
    };
    let all = [
        Grow::Create(new),
        Grow::AddShards { added: 1 },
        Grow::WaitForCreating {
            id: "fsmt-1".into(),
            az: "a".into(),
        },
        Grow::OneARun,
        Grow::AtCapacity(Bound::MaxShards(1)),
    ];
    all.iter().for_each(|g| match g {
        Grow::Create(_)
        | Grow::AddShards { .. }
        | Grow::WaitForCreating { .. }
        | Grow::OneARun
        | Grow::AtCapacity(_) => {}
    });
    all.into_iter().map(super::Decision::Grow).collect()
}
