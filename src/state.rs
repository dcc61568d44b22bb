//! The timers scale-in needs, kept on the file system itself (the function's own mount), so
//! they survive any run that dies and need no other store or permission:
//! `<EFS_MOUNT_PATH>/.efs-mount-autoscaler/state.json`, replaced atomically.
//! Which target is draining is not kept here: the published list says it (`draining`).

use crate::error::Error;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScaleState {
    /// Since when (Unix seconds) the files have been within the scale-in band.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub below_since: Option<u64>,
    /// When (Unix seconds) the last mount target was created by this function.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_scale_out: Option<u64>,
    /// AZ ids where this function created a mount target (recorded once AWS accepted the
    /// create). Only these may be scaled in: targets that were there before (an ECS task's,
    /// the function's own) are never removed, even when they serve a shard.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub created_azs: BTreeSet<String>,
    /// Subnets (by subnet id) and AZs (by AZ id) that CreateMountTarget refused, left out of
    /// scale-out until their time is up.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub excluded: BTreeMap<String, Exclusion>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Exclusion {
    /// Unix seconds.
    pub until: u64,
    /// AWS's error code and message.
    pub reason: String,
}

impl ScaleState {
    /// The exclusion of this subnet, or of its AZ, still in force at `now`.
    pub fn exclusion(&self, subnet_id: &str, az_id: &str, now: u64) -> Option<&Exclusion> {
        [subnet_id, az_id]
            .into_iter()
            .filter_map(|key| self.excluded.get(key))
            .find(|e| e.until > now)
    }

    /// After AWS accepted a create in `az_id`: the AZ is the function's own, and the scale-in
    /// clock starts again.
    pub fn record_created(&mut self, az_id: &str, now: u64) {
        self.created_azs.insert(az_id.to_owned());
        self.last_scale_out = Some(now);
        self.below_since = None;
    }

    /// Leaves `key` (a subnet id or an AZ id) out until `until`; forgets exclusions that ended.
    pub fn exclude(&mut self, key: &str, until: u64, reason: String, now: u64) {
        self.excluded.retain(|_, e| e.until > now);
        self.excluded
            .insert(key.to_owned(), Exclusion { until, reason });
    }
}

pub fn path(mount: &Path) -> PathBuf {
    mount.join(".efs-mount-autoscaler").join("state.json")
}

/// The state, or the default when the file does not exist yet. A file that is not valid is
/// an error naming it: timers are never reset silently.
pub fn load(mount: &Path) -> Result<ScaleState, Error> {
    let file = path(mount);
    match std::fs::read(&file) {
        Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| Error::StateFile {
            path: file,
            problem: e.to_string(),
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(ScaleState::default()),
        Err(e) => Err(Error::StateFile {
            path: file,
            problem: e.to_string(),
        }),
    }
}

/// Written to a temporary name, synced, then renamed over the file.
pub fn save(mount: &Path, state: &ScaleState) -> Result<(), Error> {
    let file = path(mount);
    let fail = |e: std::io::Error| Error::StateFile {
        path: file.clone(),
        problem: e.to_string(),
    };
    let dir = file.parent().expect("the state file has a directory");
    std::fs::create_dir_all(dir).map_err(fail)?;
    let tmp = dir.join(format!("state.json.{}.tmp", std::process::id()));
    let mut f = std::fs::File::create(&tmp).map_err(fail)?;
    f.write_all(&serde_json::to_vec(state).expect("plain struct"))
        .map_err(fail)?;
    f.sync_all().map_err(fail)?;
    std::fs::rename(&tmp, &file).map_err(fail)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_defaults_when_absent() {
        let d = tempfile::tempdir().unwrap();
        assert_eq!(load(d.path()).unwrap(), ScaleState::default());
        let s = ScaleState {
            below_since: Some(10),
            last_scale_out: Some(5),
            created_azs: BTreeSet::from(["use1-az4".to_owned()]),
            excluded: BTreeMap::from([(
                "subnet-1".to_owned(),
                Exclusion {
                    until: 100,
                    reason: "NoFreeAddressesInSubnet".into(),
                },
            )]),
        };
        save(d.path(), &s).unwrap();
        assert_eq!(load(d.path()).unwrap(), s);
    }

    #[test]
    fn an_exclusion_holds_a_subnet_or_its_az_until_its_time() {
        let mut s = ScaleState::default();
        s.exclude("subnet-1", 100, "full".into(), 0);
        s.exclude("use1-az9", 200, "Local Zone".into(), 0);
        assert!(s.exclusion("subnet-1", "use1-az1", 99).is_some());
        assert!(s.exclusion("subnet-1", "use1-az1", 100).is_none(), "ended");
        assert!(s.exclusion("subnet-2", "use1-az9", 150).is_some(), "its AZ");
        assert!(s.exclusion("subnet-2", "use1-az1", 0).is_none());
        s.exclude("subnet-3", 400, "full".into(), 150);
        assert!(
            !s.excluded.contains_key("subnet-1"),
            "ended ones are forgotten"
        );
        assert!(s.excluded.contains_key("use1-az9"));
    }

    #[test]
    fn a_bad_file_is_an_error_naming_it() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(path(d.path()).parent().unwrap()).unwrap();
        std::fs::write(path(d.path()), b"{\"below_since\": \"yesterday\"}").unwrap();
        let err = load(d.path()).unwrap_err().to_string();
        assert!(err.contains("state.json"), "{err}");
    }
}
