//! The decision in words, for the response and the log.

use super::decision::{Bound, Decision, Hold};
use super::policy::Policy;
use super::sizing::{per_shard, Band, Size};

/// The decision in words, for the response and the log.
pub(super) fn reason(
    decision: &Decision,
    size: &Size,
    band: &Band,
    policy: &Policy,
    modulo: bool,
) -> String {
    let serving = size.current_shards;
    let need = format!(
        "{} files need {} shard{} (at most {} files each, {} on average); {} serving on {} \
         mount target{}",
        size.file_count,
        size.needed,
        if size.needed == 1 { "" } else { "s" },
        policy.file_threshold,
        per_shard(policy.file_threshold),
        serving,
        size.current,
        if size.current == 1 { "" } else { "s" },
    );
    let current = size.current;
    let in_band = format!(
        "{need}; within the scale-in band (<= {:.0} files)",
        band.files
    );
    let migrate_lifts = if modulo {
        "; a modulo-sha256 list has one shard per mount target: the event \
         {\"action\":\"migrate\",\"strategy\":\"rendezvous\"} lifts that cap"
    } else {
        ""
    };
    match decision {
        Decision::Migrate { entries } => format!(
            "the migrate event: the list of {entries} entries goes out under rendezvous (each \
             keeps its target; those that shared / get /shards/<az-id>); misplaced files are \
             found through the fallback and moved home by the rebalance"
        ),
        Decision::Create(n) => format!(
            "{need}; adding a mount target in {} ({}, {})",
            n.az, n.az_id, n.subnet_id
        ),
        Decision::AddShards { added } => format!(
            "{need}; no mount target to add (no free AZ, MAX_MOUNT_TARGETS or One Zone), so \
             the {current} there take {added} new shard{} between them",
            if *added == 1 { "" } else { "s" }
        ),
        Decision::DropShard { id, root } => format!(
            "{need}; shard {root} of {id} is drained (its tree is empty): it leaves the list"
        ),
        Decision::StartShardDrain { id, root, held } => {
            format!(
                "{in_band} for {held} s: draining shard {root} of {id} before it leaves the list"
            )
        }
        Decision::AtCapacity(Bound::MaxShards(m)) => {
            format!("{need}; MAX_SHARDS is {m}: at capacity")
        }
        Decision::WaitForCreating { id, az } => {
            format!("{need}; have {current}; waiting for {id} in {az} before adding another")
        }
        Decision::OneARun => format!("{need}; have {current}; one new mount target a run"),
        Decision::CancelDrain { id } => {
            format!("{need}; {serving} serving: the growth cancels the drain of {id}")
        }
        Decision::MoveDrained { id, az, root } => format!(
            "{need}; draining {id} ({az}): the files under {root} move to their homes first"
        ),
        Decision::WaitForFleet { id, services } => format!(
            "{need}; draining {id}: nothing moves or goes until every service runs the list \
             published last (waiting for {})",
            services.join(", ")
        ),
        Decision::PublishFirst { id } => format!(
            "{need}; draining {id}: the list that says so goes out first (the one published \
             is not it); nothing moves or goes until every service runs it"
        ),
        Decision::Unlist { id } => format!(
            "{need}; {id} is drained (its tree is empty): the list goes out without it; the \
             target goes once the services run that list"
        ),
        Decision::DropGone { id } => format!(
            "{need}; the shard of {id}, deleted outside this function, is empty: its root \
             leaves the list"
        ),
        Decision::DeleteDrained { id } => format!(
            "{need}; {id} is drained and unlisted, and every service runs the list without it: \
             deleting it"
        ),
        Decision::WaitForRefresh { id, left } => format!(
            "{need}; draining {id}: its files move (and it goes) once clients that refresh the \
             list have read it ({left} s more, CLIENT_REFRESH_SECONDS)"
        ),
        Decision::StartDrain { id, held } => {
            format!("{in_band} for {held} s: draining {id} before removing it")
        }
        Decision::Hold(Hold::NoCandidate) => format!(
            "{in_band}, but none may go: the first shard `/`, targets this function did not \
             create and targets in protected AZs stay"
        ),
        Decision::Hold(Hold::Settling { held, cooldown }) => {
            format!("{in_band} for {held} s of {cooldown} s")
        }
        Decision::Hold(Hold::ModuloList) => format!(
            "{in_band}, but the list is modulo-sha256: removing an entry would re-home most \
             files, so none goes"
        ),
        Decision::Hold(Hold::RecentScaleOut { ago, cooldown }) => {
            format!("{in_band}, but the last scale-out was {ago} s ago (cool-down {cooldown} s)")
        }
        Decision::AtCapacity(Bound::OneZone { az }) => format!(
            "{need}; a One Zone file system (in {az}) takes exactly one mount target, in its \
             own AZ: at capacity{migrate_lifts}"
        ),
        Decision::AtCapacity(Bound::MaxMountTargets(m)) => {
            format!("{need}; MAX_MOUNT_TARGETS is {m}: at capacity{migrate_lifts}")
        }
        Decision::AtCapacity(Bound::Azs { usable, excluded }) => format!(
            "{need}; no AZ without a mount target has an eligible subnet ({usable} AZ{} \
             usable{}): at capacity{migrate_lifts}",
            if *usable == 1 { "" } else { "s" },
            match excluded {
                0 => String::new(),
                n => format!("; {n} subnet(s) or AZ(s) left out after AWS refused them"),
            }
        ),
        Decision::Keep {
            fewer_would_do: true,
        } => format!("{need}: above the scale-in band, keeping them"),
        Decision::Keep {
            fewer_would_do: false,
        } => format!("{need}: nothing to add"),
    }
}
