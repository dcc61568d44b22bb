//! The decision in words, for the response and the log. Tests assert on the decision, never on
//! these words; what an operator can do about a decision is [`Decision::lifted_by`], named here.

use super::decision::{Bound, Decision, Hold};
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
    let text = words(decision, &need, size, band);
    match decision.lifted_by() {
        Some(event) if matches!(decision, Decision::AtCapacity(_)) => format!(
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

fn in_band(need: &str, band: &Band, held: u64) -> String {
    format!(
        "{need}; within the scale-in band (<= {:.0} files) for {held} s",
        band.files
    )
}

/// Why no shard goes although the files are within the band.
fn scale_in(hold: &Hold, need: &str, band: &Band) -> String {
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

/// The decision in words, after what the files need (`need`): one arm a decision.
fn words(decision: &Decision, need: &str, size: &Size, band: &Band) -> String {
    let current = size.current;
    match decision {
        Decision::Migrate { entries } => format!(
            "the migrate event: the list of {entries} entries goes out under rendezvous (each \
             keeps its target; those that shared / get /shards/<az-id>); misplaced files are \
             found through the fallback and moved home by the rebalance"
        ),
        Decision::Hold(hold) => scale_in(hold, need, band),
        Decision::StartDrain { id, held } => {
            format!(
                "{}: draining {id} before removing it",
                in_band(need, band, *held)
            )
        }
        Decision::StartShardDrain { id, root, held } => format!(
            "{}: draining shard {root} of {id} before it leaves the list",
            in_band(need, band, *held)
        ),
        Decision::AtCapacity(bound) => format!("{need}; {}: at capacity", bound_words(bound)),
        Decision::Keep {
            fewer_would_do: true,
        } => {
            format!("{need}: above the scale-in band, keeping them")
        }
        Decision::Keep {
            fewer_would_do: false,
        } => format!("{need}: nothing to add"),
        Decision::Create(n) => format!(
            "{need}; adding a mount target in {} ({}, {})",
            n.az, n.az_id, n.subnet_id
        ),
        Decision::AddShards { added } => format!(
            "{need}; no mount target to add (no free AZ, MAX_MOUNT_TARGETS or One Zone), so \
             the {current} there take {added} new shard{} between them",
            if *added == 1 { "" } else { "s" }
        ),
        Decision::WaitForCreating { id, az } => {
            format!("{need}; have {current}; waiting for {id} in {az} before adding another")
        }
        Decision::OneARun => format!("{need}; have {current}; one new mount target a run"),
        Decision::CancelDrain { id } => format!(
            "{need}; {} serving: the growth cancels the drain of {id}",
            size.current_shards
        ),
        Decision::MoveDrained { id, az, root } => format!(
            "{need}; draining {id} ({az}): the files under {root} move to their homes first"
        ),
        Decision::WaitForFleet { id, services } => {
            let waited = services.join(", ");
            format!(
                "{need}; {}",
                nothing_moves(id, "every service runs", &waited)
            )
        }
        Decision::WaitForTasks { id, tasks } => {
            let waited = joined(tasks);
            let until = "ECS has stopped every task created before";
            format!("{need}; {}", nothing_moves(id, until, &waited))
        }
        Decision::WaitForClients { id, clients } => {
            let waited = joined(clients);
            format!(
                "{need}; {}",
                nothing_moves(id, "every live client runs", &waited)
            )
        }
        Decision::PublishFirst { id } => format!(
            "{need}; draining {id}: the list that says so goes out first (the one published is \
             not it); nothing moves or goes until every service runs it"
        ),
        Decision::WaitForRefresh { id, left } => format!(
            "{need}; draining {id}: its files move (and it goes) once clients that refresh the \
             list have read it ({left} s more, CLIENT_REFRESH_SECONDS)"
        ),
        Decision::DropShard { id, root } => format!(
            "{need}; shard {root} of {id} is drained (its tree is empty): it leaves the list"
        ),
        Decision::Unlist { id } => format!(
            "{need}; {id} is drained (its tree is empty): the list goes out without it; the \
             target goes once the services run that list"
        ),
        Decision::DropGone { id } => format!(
            "{need}; the shard of {id}, deleted outside this function, is empty: its root \
             leaves the list"
        ),
        Decision::DeleteDrained { id } => format!("{need}; {}: deleting it", unlisted_and_run(id)),
        Decision::Release { id } => format!(
            "{need}; {}: it was not created by this function (or is protected), so it stays, \
             serving no shard",
            unlisted_and_run(id)
        ),
        Decision::Undone { targets, roots } => undone(targets, roots),
        Decision::HoldTargetInUse { id, az, in_use } => format!(
            "{need}; {}: it is not deleted while a task runs in {az}, a task mounting through its \
             own AZ's target ({in_use})",
            unlisted_and_run(id)
        ),
    }
}

/// A drain that waits: nothing moves or goes `until` the list published last (for `waited`).
fn nothing_moves(id: &str, until: &str, waited: &str) -> String {
    format!(
        "draining {id}: nothing moves or goes until {until} the list published last (waiting \
         for {waited})"
    )
}

fn unlisted_and_run(id: &str) -> String {
    format!("{id} is drained and unlisted, and every service runs the list without it")
}

fn joined<T: ToString>(items: &[T]) -> String {
    let names: Vec<String> = items.iter().map(ToString::to_string).collect();
    names.join(", ")
}
