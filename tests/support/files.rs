//! A directory laid out as the function's EFS mount (`EFS_MOUNT_PATH`):
//! `<mount>/<WATCH_DIR>/device-{id}-{ts}.json` for the first shard (root `/`), and
//! `<mount>/shards/<az-id>/<WATCH_DIR>` for each shard added after it.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The contract's default `WATCH_DIR`.
pub const WATCH_DIR: &str = "data/analysis";

/// A temporary EFS mount, removed on drop (or a kept directory, for the demo).
pub struct Mount {
    root: PathBuf,
    _temp: Option<tempfile::TempDir>,
}

impl Mount {
    /// An empty mount in a new temporary directory.
    pub fn temp() -> Mount {
        let temp = tempfile::Builder::new()
            .prefix("efs-mount-")
            .tempdir()
            .expect("temp dir");
        Mount {
            root: temp.path().to_path_buf(),
            _temp: Some(temp),
        }
    }

    /// A mount at `path`, emptied first and kept afterwards.
    pub fn at(path: &Path) -> Mount {
        if path.exists() {
            fs::remove_dir_all(path).expect("empty the mount directory");
        }
        fs::create_dir_all(path).expect("create the mount directory");
        Mount {
            root: path.to_path_buf(),
            _temp: None,
        }
    }

    /// The mount point, for `EFS_MOUNT_PATH`.
    pub fn path(&self) -> &Path {
        &self.root
    }

    /// `<mount>/<WATCH_DIR>`: the first shard's watched directory.
    pub fn watch_dir(&self) -> PathBuf {
        self.root.join(WATCH_DIR)
    }

    /// `<mount>/shards/<az-id>/<WATCH_DIR>`: the watched directory of the shard rooted at
    /// `/shards/<az-id>`.
    pub fn shard_dir(&self, az_id: &str) -> PathBuf {
        self.root.join("shards").join(az_id).join(WATCH_DIR)
    }

    /// The watched directory of the shard with this root (`/` or `/shards/<az-id>`).
    pub fn dir_of_root(&self, root: &str) -> PathBuf {
        self.root.join(root.trim_start_matches('/')).join(WATCH_DIR)
    }

    /// `<mount>/.efs-router-clients`: where routers write their reports.
    pub fn reports_dir(&self) -> PathBuf {
        self.root.join(efs_router::report::DIR)
    }

    /// Writes, as a router does, the report of client `id` (16 hex digits) that routes by the
    /// list `text` (the parameter's value as read) and reads the list versions `reads`.
    pub fn report(&self, id: &str, text: &str, reads: &[u32]) -> PathBuf {
        use efs_router::report::{ListSeen, Report};
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs();
        let list = ListSeen::of(text, None);
        let report = Report {
            label: Some("test fleet".into()),
            ..Report::loaded(id, "efs-router-rust/test", reads.to_vec(), list, now)
        };
        let dir = self.reports_dir();
        fs::create_dir_all(&dir).expect("create the reports directory");
        let path = dir.join(format!("{id}.json"));
        fs::write(&path, report.to_json()).expect("write a report");
        path
    }

    /// [`Mount::report`] by a router in the ECS task `task` (its ARN), as a router reads it
    /// from the task metadata endpoint.
    pub fn report_of_task(&self, id: &str, text: &str, reads: &[u32], task: &str) -> PathBuf {
        let path = self.report(id, text, reads);
        let mut report: serde_json::Value =
            serde_json::from_slice(&fs::read(&path).expect("read a report")).unwrap();
        report["task"] = serde_json::Value::from(task);
        fs::write(&path, report.to_string()).expect("write a report");
        path
    }

    /// Writes `n` readings into the first shard's watched directory.
    pub fn generate(&self, n: usize) {
        generate(&self.watch_dir(), n, 0);
    }

    /// Creates the watched directory of shard `/shards/<az-id>` and writes `n` readings there.
    pub fn add_shard(&self, az_id: &str, n: usize) -> PathBuf {
        let dir = self.shard_dir(az_id);
        generate(&dir, n, 1_000_000);
        dir
    }

    /// Whether `<mount>/shards` exists at all.
    pub fn has_shards(&self) -> bool {
        self.root.join("shards").exists()
    }

    /// The shard directories under `<mount>/shards`, by AZ id.
    pub fn shard_ids(&self) -> Vec<String> {
        let mut ids: Vec<String> = match fs::read_dir(self.root.join("shards")) {
            Ok(entries) => entries
                .filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect(),
            Err(_) => Vec::new(),
        };
        ids.sort();
        ids
    }
}

/// Writes `n` small readings named `device-{id}-{ts}.json` into `dir` (created if missing).
pub fn generate(dir: &Path, n: usize, first_device: usize) {
    fs::create_dir_all(dir).expect("create the watched directory");
    let base_ts: u64 = 1_795_000_000_000;
    for i in 0..n {
        let device = first_device + i % 5_000;
        let ts = base_ts + i as u64;
        let path = dir.join(format!("device-{device}-{ts}.json"));
        let mut f = fs::File::create(&path).expect("create a reading");
        write!(
            f,
            "{{\"device\":{device},\"ts\":{ts},\"value\":{}}}",
            i % 97
        )
        .expect("write");
    }
}

/// Regular files directly in `dir` (0 when it does not exist).
pub fn count_files(dir: &Path) -> usize {
    match fs::read_dir(dir) {
        Ok(entries) => entries
            .filter_map(|e| e.ok())
            .filter(|e| e.file_type().map(|t| t.is_file()).unwrap_or(false))
            .count(),
        Err(_) => 0,
    }
}

/// File names directly in `dir`, sorted.
pub fn list_files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = match fs::read_dir(dir) {
        Ok(entries) => entries
            .filter_map(|e| e.ok())
            .filter(|e| e.file_type().map(|t| t.is_file()).unwrap_or(false))
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect(),
        Err(_) => Vec::new(),
    };
    names.sort();
    names
}
