//! The decision in words, for the response and the log. Tests assert on the decision, never on
//! these words; what an operator can do about a decision is [`Decision::lifted_by`], named here.

use super::decision::{Decision, Grow};
use super::policy::Policy;
use super::sizing::{per_shard, Band, Size};

/// The decision in words: what the files need and what serves, then what the decision does,
/// then, when an event would lift what holds it back, that event.
pub(super) fn reason(decision: &Decision, size: &Size, band: &Band, policy: &Policy) -> String {
    let plural = |n: usize| if n == 1 { "" } else { "s" };
    let need = format!(
        "{} files need {} shard{} (at most {} files each, {} on average); {} serving on {} \
         mount target{}",
        size.file_count,
        size.needed,
        plural(size.needed),
        policy.file_threshold,
        per_shard(policy.file_threshold),
        size.current_shards,
        size.current,
        plural(size.current),
    );
    let at = Words {
        need: &need,
        size,
        band,
    };
    let text = words(decision, &at);
    match decision.lifted_by() {
        Some(event) if matches!(decision, Decision::Grow(Grow::AtCapacity(_))) => format!(
            "{text}; a modulo-sha256 list has one shard per mount target: the event {event} \
             lifts that cap"
        ),
        Some(event) => format!(
            "{text}; the event {event} lifts this (the list goes out under rendezvous, where \
             a shard can leave)"
        ),
        None => text,
    }
}

/// What a decision's words read besides the decision: what the files need and what serves
/// (`need`, in words), the size and the band.
pub(super) struct Words<'a> {
    pub(super) need: &'a str,
    pub(super) size: &'a Size,
    pub(super) band: &'a Band,
}

/// The decision in words, after what the files need: each family says its own.
fn words(decision: &Decision, at: &Words) -> String {
    match decision {
        Decision::Grow(g) => g.words(at),
        Decision::Drain(d) => d.words(at),
        Decision::Wait(w) => w.words(at),
        Decision::ScaleIn(s) => s.words(at),
        Decision::Event(e) => e.words(at),
    }
}
