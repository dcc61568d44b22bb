//! The function's own state: the scale-in timers, the mount targets it created, the subnets
//! AWS refused, the targets it is draining, and listed targets that went missing.
//!
//! It lives in a second SSM parameter (`STATE_PARAMETER_NAME`) that only the function's role
//! may write, keyed by mount-target id: nothing a task can write on the shared file system
//! decides what the function deletes. The old state file on the file system
//! (`EFS_MOUNT_PATH/.efs-mount-autoscaler/state.json`) is read once, when the parameter does
//! not exist yet, without following links and only if it is a small regular file.

pub(crate) mod comparison;
pub(crate) mod rebalancing;

use rebalancing::Rebalancing;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::path::{Path, PathBuf};

/// The state's format, written into it: a build that finds a newer one stops, naming the
/// parameter, and changes nothing (an older build cannot know what the newer fields mean).
/// A state without the field is format 1, and format 1 is written without it, so that a build
/// from before the field (which refuses fields it does not know) can still read it: rolling
/// back stays possible until a format 2 is written.
pub const STATE_FORMAT: u32 = 1;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct State {
    /// [`STATE_FORMAT`] of the build that wrote it.
    #[serde(default = "format_1", skip_serializing_if = "is_format_1")]
    pub format: u32,
    /// Since when (Unix seconds) the files have been within the scale-in band.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub below_since: Option<u64>,
    /// When (Unix seconds) AWS last accepted a mount target this function asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_scale_out: Option<u64>,
    /// Mount targets this function created (AWS accepted the create), by id. Only these may
    /// be scaled in; a target is forgotten once it is gone.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub created: BTreeMap<String, Created>,
    /// Creates asked for and not yet recorded in `created`, by subnet id: saved before
    /// CreateMountTarget, so that a target AWS made whose answer the run never had (lost, a
    /// timeout, the run killed) is still the function's own. The next observation adopts the
    /// target in that subnet, or drops the entry when there is none. Written only for that
    /// moment (a build from before the field refuses a state holding one).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub creating: BTreeMap<String, Created>,
    /// Subnets (by subnet id) and AZs (by AZ id) that CreateMountTarget refused, left out of
    /// scale-out until their time is up.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub excluded: BTreeMap<String, Exclusion>,
    /// Shards being emptied, by mount target id: only the function marks a target draining.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub draining: BTreeMap<String, Drain>,
    /// Shards being emptied before they leave the list, by root: always the last shard of
    /// the target that serves it (a target's own root goes only with the target).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub draining_shards: BTreeMap<String, ShardDrain>,
    /// Listed mount targets that DescribeMountTargets did not show, since when (Unix seconds):
    /// kept in place for a run, then drained as gone.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub missing: BTreeMap<String, u64>,
    /// Where the rebalance's walk stands, and what its last clean pass balanced against.
    #[serde(default, skip_serializing_if = "is_default")]
    pub rebalancing: Rebalancing,
    /// The list this function published last. SSM's reads, versioned ones too, may lag its
    /// writes, so no read of the list shows that it is the newest; this record does, once a
    /// save has proved the state read the newest (`crate::plan`'s save first).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub published: Option<Published>,
}

/// A list the function published: the parameter's version that write made, and when.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Published {
    /// SSM's version of the list parameter.
    pub version: i64,
    /// Unix seconds, once SSM had taken it.
    pub at: u64,
}

/// Why a text is not a state this build reads.
#[derive(Debug)]
pub enum NotAState {
    /// Written by a newer build: its format.
    Newer(u32),
    Invalid(serde_json::Error),
}

impl std::fmt::Display for NotAState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NotAState::Newer(found) => write!(
                f,
                "format {found} is newer than this build reads ({STATE_FORMAT}): a newer build \
                 wrote it; deploy that one again, or a build that reads it (CHANGELOG.md)"
            ),
            NotAState::Invalid(e) => write!(f, "{e}"),
        }
    }
}

fn format_1() -> u32 {
    1
}

fn is_format_1(format: &u32) -> bool {
    *format == 1
}

impl Default for State {
    fn default() -> Self {
        State {
            format: STATE_FORMAT,
            below_since: None,
            last_scale_out: None,
            created: BTreeMap::new(),
            creating: BTreeMap::new(),
            excluded: BTreeMap::new(),
            draining: BTreeMap::new(),
            draining_shards: BTreeMap::new(),
            missing: BTreeMap::new(),
            rebalancing: Rebalancing::default(),
            published: None,
        }
    }
}

fn is_default(r: &Rebalancing) -> bool {
    *r == Rebalancing::default()
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Created {
    pub az_id: String,
    /// Unix seconds.
    pub at: u64,
}

/// The most characters of AWS's reason an exclusion keeps (its code and message run to about
/// 235): a dozen refusals must not fill the parameter.
pub const REASON_AT_MOST: usize = 160;
/// What [`State::within`] shortens reasons to before it drops them.
pub const REASON_SHORT: usize = 60;

/// What [`State::within`] took out of a state so that it fits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cut {
    ReasonsShortened,
    ReasonsDropped,
    PositionDropped,
    ExclusionsDropped,
}

impl Cut {
    /// The order [`State::within`] tries them in: what matters least first.
    pub const IN_TURN: [Cut; 4] = [
        Cut::ReasonsShortened,
        Cut::ReasonsDropped,
        Cut::PositionDropped,
        Cut::ExclusionsDropped,
    ];
}

impl Cut {
    pub fn name(self) -> &'static str {
        match self {
            Cut::ReasonsShortened => "reasons_shortened",
            Cut::ReasonsDropped => "reasons_dropped",
            Cut::PositionDropped => "position_dropped",
            Cut::ExclusionsDropped => "exclusions_dropped",
        }
    }
}

/// `text`'s first `most` characters, an ellipsis last when something was cut.
fn shortened(text: &str, most: usize) -> String {
    if text.chars().count() <= most {
        return text.to_owned();
    }
    let mut out: String = text.chars().take(most.saturating_sub(1)).collect();
    if most > 0 {
        out.push('…');
    }
    out
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Exclusion {
    /// Unix seconds.
    pub until: u64,
    /// AWS's error code and message.
    pub reason: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Drain {
    /// The shard's root, kept because the target may be gone.
    pub root: String,
    /// When the drain began (Unix seconds).
    pub since: u64,
    /// The shard is empty and the list without it has been published: the target goes once
    /// the fleet has converged on that list.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unlisted: bool,
    /// The target was deleted by someone else: its root stays listed, draining, until its
    /// files are home; there is nothing to delete.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub gone: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShardDrain {
    /// The mount target that serves the shard.
    pub target: String,
    /// When the drain began (Unix seconds).
    pub since: u64,
    /// The shard is empty and left the list the function wrote: done once that list is the
    /// one published (kept until then, so that a failed publish does not bring it back).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unlisted: bool,
}

impl State {
    /// The exclusion of this subnet, or of its AZ, still in force at `now`.
    pub fn exclusion(&self, subnet_id: &str, az_id: &str, now: u64) -> Option<&Exclusion> {
        [subnet_id, az_id]
            .into_iter()
            .filter_map(|key| self.excluded.get(key))
            .find(|e| e.until > now)
    }

    /// After AWS accepted a create: the target is the function's own, and the scale-in clock
    /// starts again.
    pub fn record_created(&mut self, id: &str, az_id: &str, now: u64) {
        self.created.insert(
            id.to_owned(),
            Created {
                az_id: az_id.to_owned(),
                at: now,
            },
        );
        self.last_scale_out = Some(now);
        self.below_since = None;
    }

    /// Before a create in `subnet_id`: a target AWS makes there is the function's own, answered
    /// or not.
    pub fn intend_create(&mut self, subnet_id: &str, az_id: &str, now: u64) {
        let intent = Created {
            az_id: az_id.to_owned(),
            at: now,
        };
        self.creating.insert(subnet_id.to_owned(), intent);
    }

    /// Leaves `key` (a subnet id or an AZ id) out until `until`; forgets exclusions that ended.
    pub fn exclude(&mut self, key: &str, until: u64, reason: String, now: u64) {
        self.excluded.retain(|_, e| e.until > now);
        let reason = shortened(&reason, REASON_AT_MOST);
        self.excluded
            .insert(key.to_owned(), Exclusion { until, reason });
    }

    /// This state as it fits in `limit` characters of JSON, with what had to go: AWS's reasons
    /// shortened to [`REASON_SHORT`], then dropped, then the rebalance's position within its
    /// shard (the next run starts that shard again), then the exclusions that end soonest
    /// (their subnets are tried again early). What decides a deletion or a drain (`created`,
    /// `draining`, `draining_shards`, `missing`) always stays: at its most (a target in each
    /// of a region's AZs) it takes about 1.5 KB.
    pub fn within(&self, limit: usize) -> (State, Vec<Cut>) {
        let fits = |s: &State| s.to_json().chars().count() <= limit;
        let mut state = self.clone();
        let mut cuts = Vec::new();
        for cut in Cut::IN_TURN {
            if fits(&state) {
                break;
            }
            match cut {
                Cut::ReasonsShortened => state.shorten_reasons(REASON_SHORT),
                Cut::ReasonsDropped => state.shorten_reasons(0),
                Cut::PositionDropped => {
                    if let Some(next) = state.rebalancing.next.as_mut() {
                        next.path.clear();
                    }
                }
                // Those whose time is up soonest: such a subnet is tried again early, and AWS
                // refuses it again.
                Cut::ExclusionsDropped => {
                    while !fits(&state) {
                        let soonest = state.excluded.iter().min_by_key(|(k, e)| (e.until, *k));
                        let Some(key) = soonest.map(|(k, _)| k.clone()) else {
                            break;
                        };
                        state.excluded.remove(&key);
                    }
                }
            }
            cuts.push(cut);
        }
        (state, cuts)
    }

    fn shorten_reasons(&mut self, most: usize) {
        for e in self.excluded.values_mut() {
            e.reason = shortened(&e.reason, most);
        }
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("plain struct")
    }

    /// The state in `text`; an error that says why when it is not one this build reads (a
    /// newer format is named as such, before its fields are looked at).
    pub fn from_json(text: &str) -> Result<State, NotAState> {
        #[derive(Deserialize)]
        struct Format {
            #[serde(default = "format_1")]
            format: u32,
        }
        let found = serde_json::from_str::<Format>(text).map_err(NotAState::Invalid)?;
        if found.format > STATE_FORMAT {
            return Err(NotAState::Newer(found.format));
        }
        serde_json::from_str(text).map_err(NotAState::Invalid)
    }
}

/// Now, in Unix seconds: the clock of every timer in the state.
pub fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The largest old state file read: a real one is a few hundred bytes.
const OLD_FILE_MAX: u64 = 64 * 1024;

/// The old state file, read once to carry its timers and AZs over. Opened without following
/// links and without blocking (a FIFO), read only when it is a small regular file; anything
/// else is a warning, never an error: the state then starts empty.
pub fn read_old_state_file(mount: &Path) -> Result<Option<OldFile>, String> {
    let path = old_file_path(mount);
    let dir = path.parent().expect("has a directory");
    // A planted link at the directory is refused like one at the file.
    match std::fs::symlink_metadata(dir) {
        Ok(m) if m.file_type().is_dir() => {}
        Ok(_) => return Err(format!("{} is not a directory; ignored", dir.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("{}: {e}; ignored", dir.display())),
    }
    use rustix::fs::{Mode, OFlags};
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
    let file = match rustix::fs::open(&path, flags, Mode::empty()) {
        Ok(fd) => std::fs::File::from(fd),
        Err(rustix::io::Errno::NOENT) => return Ok(None),
        Err(e) => return Err(format!("{}: {e}; ignored", path.display())),
    };
    let meta = file
        .metadata()
        .map_err(|e| format!("{}: {e}; ignored", path.display()))?;
    if !meta.file_type().is_file() || meta.len() > OLD_FILE_MAX {
        return Err(format!(
            "{} is not a regular file of at most {OLD_FILE_MAX} bytes; ignored",
            path.display()
        ));
    }
    let mut text = String::new();
    file.take(OLD_FILE_MAX)
        .read_to_string(&mut text)
        .map_err(|e| format!("{}: {e}; ignored", path.display()))?;
    let old: OldFile = serde_json::from_str(&text)
        .map_err(|e| format!("{} is not a state file ({e}); ignored", path.display()))?;
    Ok(Some(old))
}

pub fn old_file_path(mount: &Path) -> PathBuf {
    mount.join(".efs-mount-autoscaler").join("state.json")
}

/// The state file of earlier versions (on the shared file system, keyed by AZ).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OldFile {
    #[serde(default)]
    pub below_since: Option<u64>,
    #[serde(default)]
    pub last_scale_out: Option<u64>,
    #[serde(default)]
    pub created_azs: BTreeSet<String>,
    #[serde(default)]
    pub excluded: BTreeMap<String, Exclusion>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The most a state holds that must stay: a target created, draining, with its last shard
    /// draining and missing, in each of 6 AZs (the most any region has), ids at AWS's longest.
    fn worst_kept() -> State {
        let mut s = State::default();
        for az in 1..=6 {
            let id = format!("fsmt-{az:017x}");
            s.record_created(&id, &format!("use1-az{az}"), 1_800_000_000);
            s.draining.insert(
                id.clone(),
                Drain {
                    root: format!("/shards/use1-az{az}"),
                    since: 1_800_000_000,
                    unlisted: true,
                    gone: true,
                },
            );
            s.draining_shards.insert(
                format!("/shards/use1-az{az}.255"),
                ShardDrain {
                    target: id.clone(),
                    since: 1_800_000_000,
                    unlisted: true,
                },
            );
            s.missing.insert(id, 1_800_000_000);
        }
        s.published = Some(Published {
            version: i64::MAX,
            at: 1_800_000_000,
        });
        s.rebalancing.pass = Some(crate::state::rebalancing::Pass {
            shards: "f".repeat(64),
            clean: false,
        });
        s.rebalancing.balanced = Some(crate::state::rebalancing::ShardSet {
            sha256: "f".repeat(64),
            targets: (1..=6)
                .map(|az| (format!("/shards/use1-az{az}"), 255))
                .collect(),
        });
        s
    }

    /// `kept` with a dozen subnets and every AZ refused, each for `aws` (AWS's longest
    /// reasons), and the longest position a rebalance keeps.
    fn worst_refused(kept: &State, aws: &str) -> State {
        let mut s = kept.clone();
        for n in 0..12 {
            s.exclude(
                &format!("subnet-{n:017x}"),
                1_800_000_000,
                aws.to_owned(),
                0,
            );
        }
        for az in 1..=6 {
            s.exclude(&format!("use1-az{az}"), 1_800_000_000, aws.to_owned(), 0);
        }
        s.rebalancing.next = Some(crate::state::rebalancing::Cursor {
            root: "/shards/use1-az6.255".into(),
            path: "é".repeat(crate::state::rebalancing::MAX_PATH_CHARS),
        });
        s
    }

    #[test]
    fn the_worst_state_fits_its_parameter_and_keeps_what_decides() {
        let kept = worst_kept();
        let aws = format!("NoFreeAddressesInSubnet: {}", "x".repeat(210));
        let s = worst_refused(&kept, &aws);
        assert!(s
            .excluded
            .values()
            .all(|e| e.reason.chars().count() == REASON_AT_MOST));
        let (fitted, cuts) = s.within(4096);
        assert!(
            fitted.to_json().chars().count() <= 4096,
            "{}",
            fitted.to_json()
        );
        assert_eq!(cuts, [Cut::ReasonsShortened, Cut::ReasonsDropped]);
        // What decides a deletion or a drain, and every exclusion's time, is all there.
        let decides = |s: &State| {
            (
                s.created.clone(),
                s.draining.clone(),
                s.draining_shards.clone(),
                s.missing.clone(),
                s.published,
                s.rebalancing.pass.clone(),
                s.rebalancing.balanced.clone(),
            )
        };
        assert_eq!(decides(&fitted), decides(&kept));
        let times = |s: &State| {
            s.excluded
                .iter()
                .map(|(k, e)| (k.clone(), e.until))
                .collect::<Vec<_>>()
        };
        assert_eq!(times(&fitted), times(&s));
        assert_eq!(fitted.rebalancing.next, s.rebalancing.next);
        // Twenty subnets refused (three or four in each AZ): the position within the shard goes
        // too, never an exclusion.
        let mut many = s.clone();
        for n in 12..20 {
            many.exclude(&format!("subnet-{n:017x}"), 1_800_000_000, aws.clone(), 0);
        }
        let (fitted, cuts) = many.within(4096);
        assert!(fitted.to_json().chars().count() <= 4096);
        assert_eq!(cuts, Cut::IN_TURN[..3]);
        assert_eq!(times(&fitted), times(&many));
        assert_eq!(decides(&fitted), decides(&kept));
        let next = fitted.rebalancing.next.unwrap();
        assert_eq!(
            (next.root.as_str(), next.path.as_str()),
            ("/shards/use1-az6.255", "")
        );
        // A hundred: those that end soonest go, the latest stay.
        for n in 20..100 {
            many.exclude(
                &format!("subnet-{n:017x}"),
                1_800_000_000 + n,
                aws.clone(),
                0,
            );
        }
        let (fitted, cuts) = many.within(4096);
        assert!(fitted.to_json().chars().count() <= 4096);
        assert_eq!(cuts, Cut::IN_TURN);
        assert_eq!(decides(&fitted), decides(&kept));
        let soonest_kept = fitted.excluded.values().map(|e| e.until).min().unwrap();
        let dropped: Vec<_> = many
            .excluded
            .iter()
            .filter(|(k, _)| !fitted.excluded.contains_key(*k))
            .collect();
        assert!(!dropped.is_empty());
        assert!(dropped.iter().all(|(_, e)| e.until <= soonest_kept));
    }

    #[test]
    fn round_trips_and_refuses_unknown_fields() {
        let mut s = State::default();
        s.record_created("fsmt-1", "use1-az4", 10);
        s.exclude("subnet-1", 100, "NoFreeAddressesInSubnet".into(), 0);
        s.draining.insert(
            "fsmt-1".into(),
            Drain {
                root: "/shards/use1-az4".into(),
                since: 20,
                unlisted: false,
                gone: false,
            },
        );
        assert_eq!(State::from_json(&s.to_json()).unwrap(), s);
        assert!(State::from_json(r#"{"created_azs": ["use1-az1"]}"#).is_err());
    }

    #[test]
    fn the_format_is_written_and_a_newer_one_is_refused() {
        // Format 1 is written as the builds before the field wrote it, which read it back.
        assert_eq!(State::default().to_json(), "{}");
        assert_eq!(State::from_json("{}").unwrap().format, 1);
        let later = State {
            format: 2,
            ..State::default()
        };
        let v: serde_json::Value = serde_json::from_str(&later.to_json()).unwrap();
        assert_eq!(v["format"], 2);
        let newer = format!(r#"{{"format": {}, "wholly_new": true}}"#, STATE_FORMAT + 1);
        // The newer format is what is refused, not the field this build does not know.
        assert!(matches!(
            State::from_json(&newer),
            Err(NotAState::Newer(f)) if f == STATE_FORMAT + 1
        ));
    }

    #[test]
    fn an_exclusion_holds_a_subnet_or_its_az_until_its_time() {
        let mut s = State::default();
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
    fn the_old_file_is_read_only_when_it_is_a_small_regular_file() {
        let d = tempfile::tempdir().unwrap();
        assert_eq!(read_old_state_file(d.path()), Ok(None));
        let dir = d.path().join(".efs-mount-autoscaler");
        std::fs::create_dir(&dir).unwrap();
        std::fs::write(
            dir.join("state.json"),
            br#"{"created_azs": ["use1-az4"], "below_since": 5}"#,
        )
        .unwrap();
        let old = read_old_state_file(d.path()).unwrap().unwrap();
        assert_eq!(old.below_since, Some(5));
        assert!(old.created_azs.contains("use1-az4"));
        // A link planted in its place is not followed.
        std::fs::remove_file(dir.join("state.json")).unwrap();
        std::os::unix::fs::symlink("/dev/zero", dir.join("state.json")).unwrap();
        assert!(read_old_state_file(d.path()).is_err());
        // A link at the directory neither.
        std::fs::remove_file(dir.join("state.json")).unwrap();
        std::fs::remove_dir(&dir).unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(elsewhere.path(), &dir).unwrap();
        assert!(read_old_state_file(d.path()).is_err());
    }

    #[test]
    fn a_fifo_in_place_of_the_old_file_does_not_block() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join(".efs-mount-autoscaler");
        std::fs::create_dir(&dir).unwrap();
        let fifo = dir.join("state.json");
        let status = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(status.success());
        assert!(read_old_state_file(d.path()).is_err());
    }
}
