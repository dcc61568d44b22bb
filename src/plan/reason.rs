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
    let text = match decision {
        Decision::Migrate { entries } => format!(
            "the migrate event: the list of {entries} entries goes out under rendezvous (each \
             keeps its target; those that shared / get /shards/<az-id>); misplaced files are \
             found through the fallback and moved home by the rebalance"
        ),
        Decision::Hold(hold) => scale_in(hold, &need, band),
        Decision::StartDrain { id, held } => {
            format!(
                "{}: draining {id} before removing it",
                in_band(&need, band, *held)
            )
        }
        Decision::StartShardDrain { id, root, held } => format!(
            "{}: draining shard {root} of {id} before it leaves the list",
            in_band(&need, band, *held)
        ),
        Decision::AtCapacity(bound) => format!("{need}; {}: at capacity", capacity(bound)),
        Decision::Keep { fewer_would_do } => match fewer_would_do {
            true => format!("{need}: above the scale-in band, keeping them"),
            false => format!("{need}: nothing to add"),
        },
        Decision::Create(_)
        | Decision::AddShards { .. }
        | Decision::WaitForCreating { .. }
        | Decision::OneARun => format!("{need}; {}", growth(decision, size)),
        Decision::CancelDrain { .. }
        | Decision::MoveDrained { .. }
        | Decision::WaitForFleet { .. }
        | Decision::WaitForTasks { .. }
        | Decision::WaitForClients { .. }
        | Decision::PublishFirst { .. }
        | Decision::WaitForRefresh { .. }
        | Decision::DropShard { .. }
        | Decision::Unlist { .. }
        | Decision::DropGone { .. }
        | Decision::DeleteDrained { .. }
        | Decision::Release { .. } => format!("{need}; {}", drain(decision, size)),
        Decision::Undone { targets, roots } => undone(targets, roots),
    };
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
fn capacity(bound: &Bound) -> String {
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

/// A growth decision, in words (after what the files need).
fn growth(decision: &Decision, size: &Size) -> String {
    let current = size.current;
    match decision {
        Decision::Create(n) => format!(
            "adding a mount target in {} ({}, {})",
            n.az, n.az_id, n.subnet_id
        ),
        Decision::AddShards { added } => format!(
            "no mount target to add (no free AZ, MAX_MOUNT_TARGETS or One Zone), so the \
             {current} there take {added} new shard{} between them",
            if *added == 1 { "" } else { "s" }
        ),
        Decision::WaitForCreating { id, az } => {
            format!("have {current}; waiting for {id} in {az} before adding another")
        }
        Decision::OneARun => format!("have {current}; one new mount target a run"),
        // The others are worded by `reason` or `drain`.
        _ => String::new(),
    }
}

/// A drain's progress, in words (after what the files need).
fn drain(decision: &Decision, size: &Size) -> String {
    match decision {
        Decision::CancelDrain { id } => format!(
            "{} serving: the growth cancels the drain of {id}",
            size.current_shards
        ),
        Decision::MoveDrained { id, az, root } => {
            format!("draining {id} ({az}): the files under {root} move to their homes first")
        }
        Decision::WaitForFleet { id, services } => format!(
            "draining {id}: nothing moves or goes until every service runs the list published \
             last (waiting for {})",
            services.join(", ")
        ),
        Decision::WaitForTasks { id, tasks } => format!(
            "draining {id}: nothing moves or goes until ECS has stopped every task created \
             before the list published last (waiting for {})",
            tasks
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Decision::WaitForClients { id, clients } => format!(
            "draining {id}: nothing moves or goes until every live client runs the list \
             published last (waiting for {})",
            clients
                .iter()
                .map(|c| c.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Decision::PublishFirst { id } => format!(
            "draining {id}: the list that says so goes out first (the one published is not \
             it); nothing moves or goes until every service runs it"
        ),
        Decision::WaitForRefresh { id, left } => format!(
            "draining {id}: its files move (and it goes) once clients that refresh the list \
             have read it ({left} s more, CLIENT_REFRESH_SECONDS)"
        ),
        Decision::DropShard { id, root } => {
            format!("shard {root} of {id} is drained (its tree is empty): it leaves the list")
        }
        Decision::Unlist { id } => format!(
            "{id} is drained (its tree is empty): the list goes out without it; the target \
             goes once the services run that list"
        ),
        Decision::DropGone { id } => format!(
            "the shard of {id}, deleted outside this function, is empty: its root leaves the \
             list"
        ),
        Decision::DeleteDrained { id } => format!(
            "{id} is drained and unlisted, and every service runs the list without it: \
             deleting it"
        ),
        Decision::Release { id } => format!(
            "{id} is drained and unlisted, and every service runs the list without it: it was \
             not created by this function (or is protected), so it stays, serving no shard"
        ),
        // The others are worded by `reason` or `growth`.
        _ => String::new(),
    }
}
