//! The operator's events, decided by the event asked for rather than by the band: migrate,
//! and undo (whose drains are scale-in's, and whose end is here).

use super::scale_in::start_drain;
use super::{Decision, ScaleIn, Situation};
use crate::plan::effect::{Effect, EffectInputs};
use crate::plan::reason::Words;
use crate::plan::step::Step;

#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// The migrate event: the `modulo-sha256` list is published again under `rendezvous`
    /// (every entry keeps its target; entries that shared `/` get `/shards/<az-id>`).
    Migrate { entries: usize },
    /// The undo event has nothing left to do: the list is `/` alone and the fleet runs it.
    /// What is left for the operator: the mount targets there are, and the shard directories
    /// (empty) that still exist.
    Undone {
        targets: Vec<String>,
        roots: Vec<String>,
    },
}

/// Undo: every shard but `/` drains, one at a time, whatever the band says.
/// Asked for: no band, no cool-down, no time since the last scale-out is waited for.
pub(super) fn undo(s: &Situation) -> Option<Decision> {
    let (targets, roots) = s.undo.as_ref()?;
    Some(match (&s.candidate, s.moves_wait) {
        (Some(c), _) => Decision::ScaleIn(start_drain(c, 0)),
        (None, None) => Decision::Event(Event::Undone {
            targets: targets.clone(),
            roots: roots.clone(),
        }),
        // The one-shard list is out; the fleet has not run it yet.
        (None, Some(_)) => Decision::ScaleIn(ScaleIn::Keep {
            fewer_would_do: false,
        }),
    })
}

impl Event {
    pub(super) fn name(&self) -> &'static str {
        match self {
            Event::Migrate { .. } => "migrate",
            Event::Undone { .. } => "undone",
        }
    }

    pub(in crate::plan) fn effect(&self, _: &EffectInputs, out: &mut Effect) {
        match self {
            // The list already is the migrated one; publishing it is upkeep.
            Event::Migrate { .. } => {}
            // What the undo leaves of the shards is their directories: the empty ones go.
            Event::Undone { roots, .. } => out.steps.push(Step::RemoveShardDirs {
                roots: roots.clone(),
            }),
        }
    }

    pub(in crate::plan) fn words(&self, _: &Words) -> String {
        match self {
            Event::Migrate { entries } => format!(
                "the migrate event: the list of {entries} entries goes out under rendezvous \
                 (each keeps its target; those that shared / get /shards/<az-id>); misplaced \
                 files are found through the fallback and moved home by the rebalance"
            ),
            Event::Undone { targets, roots } => undone(targets, roots),
        }
    }
}

/// What the undo event leaves, for the operator to remove by hand.
fn undone(targets: &[String], roots: &[String]) -> String {
    let mut text = format!(
        "undone: every file's home is / and the list is that one shard, run by every service; \
         left: mount targets {}",
        targets.join(", ")
    );
    if !roots.is_empty() {
        text.push_str(&format!(
            ", shard directories {} (removed now where empty)",
            roots.join(", ")
        ));
    }
    // Drains leave the directories of the shards they emptied; this run removes the empty
    // ones, and a warning names any that is not.
    text.push_str(", and the two SSM parameters (docs/operations.md, \"Undo\")");
    text
}

/// One of each, for [`Decision::NAMES`]' test: the match fails to compile until a new one is
/// here.
#[cfg(test)]
pub(super) fn examples() -> Vec<Decision> {
    let all = [
        Event::Migrate { entries: 1 },
        Event::Undone {
            targets: vec![],
            roots: vec![],
        },
    ];
    all.iter().for_each(|e| match e {
        Event::Migrate { .. } | Event::Undone { .. } => {}
    });
    all.into_iter().map(Decision::Event).collect()
}
