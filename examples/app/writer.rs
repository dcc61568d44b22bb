//! The IoT platform's writer on the Rust router: `writer.py`'s counterpart, a reference for
//! applications (README.md beside it).
//!
//! Every device reading is one small JSON file, `data/analysis/device-{id}-{timestamp}.json`
//! (about 1 KB), on EFS. The app writes it unless it is already there, in one call (`create`)
//! through `efs_router`, which spreads the files over the shard directories the function publishes in SSM.
//!
//! ```sh
//! cargo run --example app_writer -- 1000    # writes 1,000 readings and exits
//! ```
//!
//! Environment: `SSM_PARAMETER_NAME` (the list, default `/efs-mount-autoscaling/mount-targets`),
//! `EFS_MOUNT_PATH` (where the task mounts the file system root, default `/mnt/efs`) and,
//! optionally, `EFS_ROUTER_REFRESH_SECONDS` (re-read the list that often; unset: read it once,
//! and the function's forced deployment brings a new list by replacing the task). The region
//! and credentials come from the environment, as for any program on the AWS SDK.

use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use aws_config::{retry::RetryConfig, timeout::TimeoutConfig, BehaviorVersion};
use aws_smithy_types::error::display::DisplayErrorContext;
use efs_router::{Error, Layout, Reporting, Router};

pub const DEFAULT_PARAMETER: &str = "/efs-mount-autoscaling/mount-targets";
pub const DEFAULT_MOUNT: &str = "/mnt/efs";
/// The function's `WATCH_DIR`: relative to each shard's root.
pub const WATCH_DIR: &str = "data/analysis";
/// While the list is not published, how often to look for it again.
pub const RETRY: Duration = Duration::from_secs(60);
/// Simulated devices.
const DEVICES: u64 = 100;
/// The app's name in its router's report.
pub const LABEL: &str = "device-writer";

/// The logical path of a reading: the same in every shard, the router picks the shard.
pub fn reading_path(device_id: u64, timestamp: u64) -> String {
    format!("{WATCH_DIR}/device-{device_id}-{timestamp}.json")
}

/// What a reading is written through: the router, or plain paths until the list exists.
pub enum Files<'a> {
    Routed(&'a Router),
    /// Until the list is published: the app's own code, files at `<mount>/<path>`.
    ///
    /// Why this is safe: `<mount>/<path>` is the file in the first shard, rooted at `/`. Every
    /// list the function publishes has that shard (it never removes `/`), and only that one
    /// while the files fit in one shard, so a file written here is where a router puts it while
    /// the list has one shard; with more shards, `Router::create`, `exists` and
    /// `read_with_fallback` look there too, and the function moves it home later. Nothing is moved under this code
    /// meanwhile: it writes no report, so the function moves no file while this task runs.
    Plain(&'a Path),
}

impl Files<'_> {
    /// Writes the file at `path` unless it is already there, anywhere a read looks: `true` when
    /// this call wrote it. One call, not a check and then a write: between the two another task
    /// could write the same reading.
    pub fn create(&self, path: &str, data: &[u8]) -> Result<bool, Error> {
        match self {
            // The router's create: a synced temporary name linked to the final name in the
            // path's home shard, so that of two writers exactly one creates it, and a copy in
            // any shard a miss looks in counts as there.
            Files::Routed(router) => router.create(path, data).map(|c| c.created()),
            Files::Plain(mount) => write_plain(&mount.join(path), data),
        }
    }
}

fn write_plain(real: &Path, data: &[u8]) -> Result<bool, Error> {
    if let Some(dir) = real.parent() {
        fs::create_dir_all(dir).map_err(io_error("mkdir", dir))?;
    }
    // create_new: create, never replace. The NFS server answers it (this host's name cache
    // does not), so a reading another task wrote meanwhile is kept, not lost.
    match OpenOptions::new().write(true).create_new(true).open(real) {
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(false),
        Err(e) => Err(io_error("create", real)(e)),
        Ok(mut file) => file
            .write_all(data)
            .map(|()| true)
            .map_err(io_error("write", real)),
    }
}

fn io_error(op: &'static str, path: &Path) -> impl FnOnce(io::Error) -> Error {
    let path = path.to_path_buf();
    move |source| Error::Io { op, path, source }
}

/// Why the app stops: anything but the parameter's absence. ECS starts the task again, which
/// reads the list again.
#[derive(Debug, thiserror::Error)]
pub enum Stop {
    #[error("cannot read the SSM parameter {parameter}: {problem}")]
    Read { parameter: String, problem: String },
    #[error("the SSM parameter {parameter} holds no list this app can route by: {source}")]
    List { parameter: String, source: Error },
    #[error(transparent)]
    Files(#[from] Error),
}

/// The router once the list is published; plain paths until then.
///
/// On day one the function has not run yet and the parameter does not exist. Then `current`
/// answers plain paths and looks for the parameter again at its first call [`RETRY`] later,
/// routing once it is there. Only "the parameter does not exist" is waited out: any other error
/// (no credentials, access denied, a list the router refuses) stops the app.
pub struct Routing {
    ssm: aws_sdk_ssm::Client,
    parameter: String,
    mount: PathBuf,
    /// `EFS_ROUTER_REFRESH_SECONDS`: how often to re-read the list once routing.
    refresh_every: Option<Duration>,
    /// The router, and the exact text of its list (a re-read compares it).
    router: Option<(Router, String)>,
    /// When to read the parameter next; `None`: never (routing, and no refresh).
    next_look: Option<Instant>,
}

impl Routing {
    pub fn new(
        ssm: aws_sdk_ssm::Client,
        parameter: &str,
        mount: &Path,
        refresh_every: Option<Duration>,
    ) -> Routing {
        Routing {
            ssm,
            parameter: parameter.to_owned(),
            mount: mount.to_owned(),
            refresh_every,
            router: None,
            next_look: Some(Instant::now()),
        }
    }

    /// What to write through now. `now` is `Instant::now()` (a test passes a later one).
    pub async fn current(&mut self, now: Instant) -> Result<Files<'_>, Stop> {
        if self.next_look.is_some_and(|at| now >= at) {
            match self.router {
                None => self.start(now).await?,
                Some(_) => self.reread(now).await,
            }
        }
        Ok(match &self.router {
            Some((router, _)) => Files::Routed(router),
            None => Files::Plain(&self.mount),
        })
    }

    async fn start(&mut self, now: Instant) -> Result<(), Stop> {
        let Some((text, version)) = self.read().await? else {
            self.next_look = Some(now + RETRY);
            eprintln!(
                "writer: {} is not published yet: writing plain paths under {} (the first shard, /); looking again in {} s",
                self.parameter,
                self.mount.display(),
                RETRY.as_secs()
            );
            return Ok(());
        };
        let router = self.route_by(&text, version).map_err(|source| Stop::List {
            parameter: self.parameter.clone(),
            source,
        })?;
        eprintln!(
            "writer: routing by the list in {}: {} shards",
            self.parameter,
            router.shards().len()
        );
        self.router = Some((router, text));
        self.next_look = self.refresh_every.map(|every| now + every);
        Ok(())
    }

    /// A re-read: a new list is a new router (whose report replaces the old one's); a failed
    /// read, or a list the router refuses, keeps the list in use, as the Python router does.
    async fn reread(&mut self, now: Instant) {
        self.next_look = self.refresh_every.map(|every| now + every);
        let Some((router, text)) = &self.router else {
            return;
        };
        let failure = match self.read().await {
            Ok(Some((new, _))) if new == *text => return router.note_refresh(true),
            Ok(Some((new, version))) => match self.route_by(&new, version) {
                Err(e) => e.to_string(),
                Ok(new_router) => {
                    let shards = new_router.shards().len();
                    eprintln!("writer: {} changed: now {shards} shards", self.parameter);
                    self.router = Some((new_router, new));
                    return;
                }
            },
            Ok(None) => "it does not exist".to_owned(),
            Err(e) => e.to_string(),
        };
        router.note_refresh(false);
        eprintln!(
            "writer: re-reading {} failed, still routing by the list read before: {failure}",
            self.parameter
        );
    }

    /// The parameter's value and version; `None` when it does not exist.
    async fn read(&self) -> Result<Option<(String, i64)>, Stop> {
        match self.ssm.get_parameter().name(&self.parameter).send().await {
            Ok(out) => Ok(out
                .parameter()
                .map(|p| (p.value().unwrap_or_default().to_owned(), p.version()))),
            Err(e)
                if e.as_service_error()
                    .is_some_and(|e| e.is_parameter_not_found()) =>
            {
                Ok(None)
            }
            Err(e) => Err(Stop::Read {
                parameter: self.parameter.clone(),
                problem: DisplayErrorContext(&e).to_string(),
            }),
        }
    }

    /// A router that reports: the report, in `<mount>/.efs-router-clients/`, tells the function
    /// which list this task routes by. The function moves no file and removes no mount target
    /// until every running task reports the current list, since an app that does not route
    /// would lose sight of a file moved out of its directory.
    fn route_by(&self, text: &str, version: i64) -> Result<Router, Error> {
        let options = Reporting {
            parameter_version: Some(version),
            label: Some(LABEL.to_owned()),
            ..Reporting::default()
        };
        // Fargate mounts the file system root once: one mount holds every shard.
        Router::reporting(text, Layout::single_mount(&self.mount), options)
    }
}

/// A reading is written once, and one already there is never replaced (a device may send the
/// same reading again): one create, which looks in every shard the list names, so a reading
/// written under an earlier list, or on plain paths, is found wherever it is. True when written.
pub fn write_reading(
    files: &Files,
    device_id: u64,
    timestamp: u64,
    payload: &[u8],
) -> Result<bool, Error> {
    files.create(&reading_path(device_id, timestamp), payload)
}

/// A simulated reading: about 1 KB of JSON.
pub fn reading(device_id: u64, timestamp: u64) -> Vec<u8> {
    // Made-up temperatures between 15 and 30 degrees, varied enough for a simulation.
    let samples: Vec<f64> = (0..100u64)
        .map(|i| {
            let step = (device_id * 7_919 + timestamp * 104_729 + i * 1_299_709) % 15_000;
            (15_000 + step) as f64 / 1000.0
        })
        .collect();
    let reading = serde_json::json!({"device_id": device_id, "timestamp": timestamp,
                                     "unit": "celsius", "samples": samples});
    reading.to_string().into_bytes()
}

/// Writes `count` readings of [`DEVICES`] devices, a second's readings each from `start` (Unix
/// seconds) on; answers how many were written (the others were already there).
pub async fn run(routing: &mut Routing, count: u64, start: u64) -> Result<u64, Stop> {
    let mut written = 0;
    for i in 0..count {
        let (device_id, timestamp) = (i % DEVICES, start + i / DEVICES);
        let files = routing.current(Instant::now()).await?;
        if write_reading(&files, device_id, timestamp, &reading(device_id, timestamp))? {
            written += 1;
        }
    }
    Ok(written)
}

/// `text` as a duration in seconds (`60`, `0.5`); `None` when it is not one.
fn seconds(text: &str) -> Option<Duration> {
    Duration::try_from_secs_f64(text.parse().ok()?).ok()
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    let count = std::env::args()
        .nth(1)
        .map_or(Ok(100), |n| n.parse::<u64>());
    let refresh = var("EFS_ROUTER_REFRESH_SECONDS")
        .map(|s| seconds(&s).ok_or(()))
        .transpose();
    let (Ok(count), Ok(refresh)) = (count, refresh) else {
        eprintln!("usage: app_writer [COUNT]; EFS_ROUTER_REFRESH_SECONDS, when set, is seconds");
        return ExitCode::from(2);
    };
    // Short timeouts: a look for the list, or a refresh, holds up the write that makes it.
    let timeouts = TimeoutConfig::builder()
        .connect_timeout(Duration::from_secs(5))
        .read_timeout(Duration::from_secs(5))
        .build();
    let config = aws_config::defaults(BehaviorVersion::latest())
        .timeout_config(timeouts)
        .retry_config(RetryConfig::standard().with_max_attempts(3))
        .load()
        .await;
    let parameter = var("SSM_PARAMETER_NAME").unwrap_or(DEFAULT_PARAMETER.to_owned());
    let mount = var("EFS_MOUNT_PATH").unwrap_or(DEFAULT_MOUNT.to_owned());
    let ssm = aws_sdk_ssm::Client::new(&config);
    let mut routing = Routing::new(ssm, &parameter, Path::new(&mount), refresh);
    let start = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let result = run(&mut routing, count, start).await;
    drop(routing); // the router's report goes with it: this task writes no more
    match result {
        Ok(written) => {
            let already = count - written;
            eprintln!("writer: {written} readings written, {already} were already there");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("writer: {e}");
            ExitCode::FAILURE
        }
    }
}
