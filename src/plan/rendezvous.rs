//! Turning a `modulo-sha256` list into a rendezvous one (the migrate event).

use super::warning::Warning;
use crate::observed::Observed;
use efs_router::list::az_root;
use efs_router::list::{MountTargetList, Strategy};

/// The list a `modulo-sha256` list becomes under `rendezvous`: the same entries in the same
/// order; the first rooted at `/` keeps it, each other entry that shared `/` gets
/// `/shards/<az-id>` (its AZ from the list or from AWS). None, with a warning, when an AZ is
/// unknown or the result would not be a valid list.
pub(super) fn to_rendezvous(
    published: Option<&MountTargetList>,
    obs: &Observed,
    warnings: &mut Vec<Warning>,
) -> Option<MountTargetList> {
    let Some(list) = published.filter(|l| l.strategy == Strategy::ModuloSha256) else {
        warnings.push(Warning::NothingToMigrate);
        return None;
    };
    let mut out = MountTargetList::new(Strategy::Rendezvous);
    let mut slash_taken = false;
    for e in &list.mount_targets {
        let mut e = e.clone();
        if e.root == "/" {
            if slash_taken {
                let az_id = e.az_id.clone().or_else(|| {
                    obs.mount_targets
                        .iter()
                        .find(|t| t.id == e.id)
                        .map(|t| t.az_id.clone())
                });
                let Some(az_id) = az_id else {
                    warnings.push(Warning::MigrateAzUnknown { id: e.id.clone() });
                    return None;
                };
                e.root = az_root(&az_id);
                e.az_id = Some(az_id);
            }
            slash_taken = true;
        }
        out.mount_targets.push(e);
    }
    if let Err(err) = out.validate() {
        warnings.push(Warning::MigrateInvalid {
            problem: err.to_string(),
        });
        return None;
    }
    Some(out)
}
