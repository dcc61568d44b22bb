//! Settings from the environment, checked before any AWS call.

/// The environment variables, in the order of the README's settings table (what each accepts:
/// docs/contract.md, "Settings").
pub const ENV_VARS: &[&str] = &[
    "EFS_FILE_SYSTEM_ID",
    "SSM_PARAMETER_NAME",
    "STATE_PARAMETER_NAME",
    "ECS_CLUSTER_NAME",
    "ECS_SERVICE_NAME",
    "EFS_MOUNT_PATH",
    "WATCH_DIR",
    "FILE_THRESHOLD",
    "SUBNET_IDS",
    "SECURITY_GROUP_IDS",
    "MAX_MOUNT_TARGETS",
    "MAX_SHARDS",
    "SCALE_IN_RATIO",
    "SCALE_IN_COOLDOWN_SECONDS",
    "PROTECTED_SUBNET_IDS",
    "SUBNET_EXCLUSION_SECONDS",
    "API_ATTEMPT_TIMEOUT_SECONDS",
    "API_CALL_TIMEOUT_SECONDS",
    "CLIENT_REFRESH_SECONDS",
    "MOVE_CONCURRENCY",
    "ECS_CLIENT_FAMILIES",
    "CLIENT_REPORTS",
    "REBALANCE_MAX_VISITS",
    "ABANDONED_AFTER_SECONDS",
    "CLOSE_PLACEMENTS",
];

use crate::error::ConfigError;
use efs_router::list::MAX_LIST_SHARDS;
use std::path::PathBuf;
use std::time::Duration;

/// `MAX_SHARDS` when unset: 10 million files at the default threshold need about 204 shards;
/// the list's size does not grow with them (docs/scaling.md).
pub const DEFAULT_MAX_SHARDS: usize = 256;

/// The function's settings. An unset or empty optional variable takes its default
/// (CloudFormation passes optional parameters as empty strings).
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    pub file_system_id: String,
    pub parameter_name: String,
    /// The function's own state (only its role may write it).
    pub state_parameter_name: String,
    pub cluster: String,
    pub services: Vec<String>,
    pub mount_path: PathBuf,
    /// Relative to each shard root, without leading or trailing `/`.
    pub watch_dir: String,
    pub file_threshold: u64,
    pub subnet_ids: Option<Vec<String>>,
    pub security_group_ids: Option<Vec<String>>,
    pub max_mount_targets: Option<usize>,
    /// The most shards (directories) the list may have: `MAX_SHARDS`, 1 to
    /// `efs_router::list::MAX_LIST_SHARDS`.
    pub max_shards: usize,
    pub scale_in_ratio: f64,
    pub scale_in_cooldown: Duration,
    pub protected_subnet_ids: Vec<String>,
    /// How long a subnet (or AZ) that CreateMountTarget refused is left out.
    pub subnet_exclusion: Duration,
    /// Time limits on AWS calls: one attempt, and the whole call with its retries. The SDK
    /// sets none by default, so a stalled answer would hold the run until Lambda kills it.
    pub api_timeouts: ApiTimeouts,
    /// How often clients that re-read the list themselves do it (0: none does; tasks pick a
    /// new list up by the forced deployment). Files move only that long after a publish.
    pub client_refresh: Duration,
    /// Files moved at a time by a drain or a rebalance (Linux serializes changes in one
    /// directory, so over NFS a mover gains by working on several at once).
    pub move_concurrency: usize,
    /// Task definition families whose tasks read the list although no named service runs
    /// them (RunTask, scheduled tasks): one started before a publish holds moves until ECS
    /// has stopped it. Empty: none is looked at.
    pub client_families: Vec<String>,
    /// `CLIENT_REPORTS`: whether every running task of the named services must report.
    pub client_reports: ClientReports,
    /// Files one rebalance run looks at, at most (`REBALANCE_MAX_VISITS`, unset: no limit but
    /// the deadline): it bounds one run's work, and makes a pass take several runs.
    pub rebalance_max_visits: Option<u64>,
    /// How long a router's temporary file or cut-short move stays unchanged before a rebalance
    /// counts it abandoned and cleans it up or gives it back (`ABANDONED_AFTER_SECONDS`, at least
    /// [`ABANDONED_AT_LEAST`]; unset: an hour).
    pub abandoned_after: Duration,
    /// `CLOSE_PLACEMENTS`: whether a clean rebalance pass closes the placements while a writer
    /// may be one the function cannot see.
    pub close_placements: ClosePlacements,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ApiTimeouts {
    pub attempt: Duration,
    pub call: Duration,
}

impl Default for ApiTimeouts {
    fn default() -> Self {
        ApiTimeouts {
            attempt: Duration::from_secs(10),
            call: Duration::from_secs(30),
        }
    }
}

impl Config {
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        // Read and checked in this order, so the error reported is the first variable's.
        let env = Env(get);
        let file_system_id = env.required("EFS_FILE_SYSTEM_ID")?;
        let cluster = env.required("ECS_CLUSTER_NAME")?;
        let services = id_list("ECS_SERVICE_NAME", &env.required("ECS_SERVICE_NAME")?)?;
        let (parameter_name, state_parameter_name) = parameter_names(&env)?;
        let mount_path = PathBuf::from(
            env.value("EFS_MOUNT_PATH")
                .unwrap_or_else(|| "/mnt/efs".into()),
        );
        if !mount_path.is_absolute() {
            return Err(ConfigError {
                var: "EFS_MOUNT_PATH",
                problem: format!("{} is not an absolute path", mount_path.display()),
            });
        }
        let watch_dir = watch_dir(env.value("WATCH_DIR").as_deref().unwrap_or("data/analysis"))?;
        let file_threshold = env.positive("FILE_THRESHOLD")?.unwrap_or(50_000);
        let max_mount_targets = env
            .positive("MAX_MOUNT_TARGETS")?
            .map(|n| usize::try_from(n).unwrap_or(usize::MAX));
        let list_cap = format!("the {MAX_LIST_SHARDS} shards one published list may describe");
        let max_shards = env
            .at_most("MAX_SHARDS", MAX_LIST_SHARDS as u64, &list_cap)?
            .map_or(DEFAULT_MAX_SHARDS, |n| n as usize);
        let scale_in_ratio = scale_in_ratio(&env)?;
        let scale_in_cooldown = env
            .seconds("SCALE_IN_COOLDOWN_SECONDS")?
            .unwrap_or(Duration::from_secs(1800));
        let subnet_exclusion = env
            .seconds("SUBNET_EXCLUSION_SECONDS")?
            .unwrap_or(Duration::from_secs(86_400));
        let api_timeouts = api_timeouts(&env)?;
        Ok(Config {
            file_system_id,
            parameter_name,
            state_parameter_name,
            cluster,
            services,
            mount_path,
            watch_dir,
            file_threshold,
            subnet_ids: env.list("SUBNET_IDS")?,
            security_group_ids: env.list("SECURITY_GROUP_IDS")?,
            max_mount_targets,
            max_shards,
            scale_in_ratio,
            scale_in_cooldown,
            protected_subnet_ids: env.list("PROTECTED_SUBNET_IDS")?.unwrap_or_default(),
            subnet_exclusion,
            api_timeouts,
            client_refresh: env.seconds("CLIENT_REFRESH_SECONDS")?.unwrap_or_default(),
            move_concurrency: env
                .at_most("MOVE_CONCURRENCY", 256, "256")?
                .map_or(16, |n| n as usize),
            client_families: env.list("ECS_CLIENT_FAMILIES")?.unwrap_or_default(),
            client_reports: client_reports(env.value("CLIENT_REPORTS").as_deref())?,
            rebalance_max_visits: env.positive("REBALANCE_MAX_VISITS")?,
            abandoned_after: abandoned_after(&env)?,
            close_placements: close_placements(env.value("CLOSE_PLACEMENTS").as_deref())?,
        })
    }

    /// The directory whose files are counted for a shard rooted at `root`.
    pub fn watch_path(&self, root: &str) -> PathBuf {
        let mut path = self.mount_path.clone();
        path.extend(root.split('/').filter(|p| !p.is_empty()));
        path.extend(self.watch_dir.split('/').filter(|p| !p.is_empty()));
        path
    }
}

/// The settings by name: trimmed, and an empty value is unset (CloudFormation passes optional
/// parameters as empty strings).
struct Env<F>(F);

impl<F: Fn(&str) -> Option<String>> Env<F> {
    fn value(&self, var: &str) -> Option<String> {
        (self.0)(var)
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
    }

    fn required(&self, var: &'static str) -> Result<String, ConfigError> {
        self.value(var).ok_or(ConfigError {
            var,
            problem: "required, not set".into(),
        })
    }

    fn positive(&self, var: &'static str) -> Result<Option<u64>, ConfigError> {
        self.value(var)
            .map(|v| whole_above_zero(var, &v))
            .transpose()
    }

    /// A whole number above 0 and at most `most` (`what` says what that limit is).
    fn at_most(
        &self,
        var: &'static str,
        most: u64,
        what: &str,
    ) -> Result<Option<u64>, ConfigError> {
        match self.positive(var)? {
            Some(n) if n > most => Err(ConfigError {
                var,
                problem: format!("{n} is more than {what}"),
            }),
            n => Ok(n),
        }
    }

    fn seconds(&self, var: &'static str) -> Result<Option<Duration>, ConfigError> {
        self.value(var)
            .map(|v| {
                v.parse::<u64>()
                    .map(Duration::from_secs)
                    .map_err(|_| ConfigError {
                        var,
                        problem: format!("{v:?} is not a whole number of seconds"),
                    })
            })
            .transpose()
    }

    fn list(&self, var: &'static str) -> Result<Option<Vec<String>>, ConfigError> {
        self.value(var).map(|v| id_list(var, &v)).transpose()
    }
}

/// A router's temporary file or cut-short move unchanged for this long is abandoned
/// (`ABANDONED_AFTER_SECONDS` when unset).
pub const ABANDONED_AFTER: Duration = Duration::from_secs(3600);

/// The least `ABANDONED_AFTER_SECONDS`: a move or a write still going after that long is
/// stalled, and giving back what it took costs a duplicate name at worst, never a file.
pub const ABANDONED_AT_LEAST: Duration = Duration::from_secs(60);

fn abandoned_after<F: Fn(&str) -> Option<String>>(env: &Env<F>) -> Result<Duration, ConfigError> {
    match env.seconds("ABANDONED_AFTER_SECONDS")? {
        None => Ok(ABANDONED_AFTER),
        Some(d) if d < ABANDONED_AT_LEAST => Err(ConfigError {
            var: "ABANDONED_AFTER_SECONDS",
            problem: format!(
                "{} is less than {} seconds: a move still going could be given back",
                d.as_secs(),
                ABANDONED_AT_LEAST.as_secs()
            ),
        }),
        Some(d) => Ok(d),
    }
}

/// The list's parameter and the function's own: two names, never one.
fn parameter_names<F: Fn(&str) -> Option<String>>(
    env: &Env<F>,
) -> Result<(String, String), ConfigError> {
    let list = env
        .value("SSM_PARAMETER_NAME")
        .unwrap_or_else(|| "/efs-mount-autoscaling/mount-targets".into());
    let state = env
        .value("STATE_PARAMETER_NAME")
        .unwrap_or_else(|| "/efs-mount-autoscaling/state".into());
    if state == list {
        return Err(ConfigError {
            var: "STATE_PARAMETER_NAME",
            problem: format!("{state} is also SSM_PARAMETER_NAME"),
        });
    }
    Ok((list, state))
}

fn scale_in_ratio<F: Fn(&str) -> Option<String>>(env: &Env<F>) -> Result<f64, ConfigError> {
    let Some(v) = env.value("SCALE_IN_RATIO") else {
        return Ok(0.6);
    };
    match v.parse::<f64>() {
        Ok(r) if r > 0.0 && r < 1.0 => Ok(r),
        _ => Err(ConfigError {
            var: "SCALE_IN_RATIO",
            problem: format!("{v:?} is not a number between 0 and 1 (exclusive)"),
        }),
    }
}

/// One attempt's limit, and the whole call's, which must hold at least one attempt.
fn api_timeouts<F: Fn(&str) -> Option<String>>(env: &Env<F>) -> Result<ApiTimeouts, ConfigError> {
    let defaults = ApiTimeouts::default();
    let attempt = env
        .positive("API_ATTEMPT_TIMEOUT_SECONDS")?
        .map_or(defaults.attempt, Duration::from_secs);
    let call = env
        .positive("API_CALL_TIMEOUT_SECONDS")?
        .map_or(defaults.call, Duration::from_secs);
    if call < attempt {
        return Err(ConfigError {
            var: "API_CALL_TIMEOUT_SECONDS",
            problem: format!(
                "{} s is shorter than one attempt (API_ATTEMPT_TIMEOUT_SECONDS, {} s)",
                call.as_secs(),
                attempt.as_secs()
            ),
        });
    }
    Ok(ApiTimeouts { attempt, call })
}

/// `require` (the default: an app on plain paths writes no report, and a file moved while it
/// runs is hidden from it) or `ecs-may-hide-files`, which trusts ECS alone. The old name `ecs`
/// is refused, so that nobody keeps the risk without choosing it by its new name.
fn client_reports(raw: Option<&str>) -> Result<ClientReports, ConfigError> {
    match raw.unwrap_or(ClientReports::REQUIRE) {
        ClientReports::REQUIRE => Ok(ClientReports::Require),
        ClientReports::ECS_MAY_HIDE_FILES => Ok(ClientReports::EcsMayHideFiles),
        "ecs" => Err(ConfigError {
            var: "CLIENT_REPORTS",
            problem: "\"ecs\" is now named \"ecs-may-hide-files\": it moves files while tasks \
                      that run no router may still read them by their old paths; set it only \
                      if every reader and writer routes (docs/operations.md, \"Client reports\")"
                .into(),
        }),
        other => Err(ConfigError {
            var: "CLIENT_REPORTS",
            problem: format!("{other:?} is neither \"require\" nor \"ecs-may-hide-files\""),
        }),
    }
}

/// `when-every-writer-reports` (the default: a clean pass closes the placements only under
/// `CLIENT_REPORTS=require` with every task reporting) or `unseen-writers-may-hide-files`,
/// which closes them whatever the writers: the name says what it risks.
fn close_placements(raw: Option<&str>) -> Result<ClosePlacements, ConfigError> {
    match raw.unwrap_or(ClosePlacements::WHEN_EVERY_WRITER_REPORTS) {
        ClosePlacements::WHEN_EVERY_WRITER_REPORTS => Ok(ClosePlacements::WhenEveryWriterReports),
        ClosePlacements::UNSEEN_WRITERS_MAY_HIDE_FILES => {
            Ok(ClosePlacements::UnseenWritersMayHideFiles)
        }
        other => Err(ConfigError {
            var: "CLOSE_PLACEMENTS",
            problem: format!(
                "{other:?} is neither \"when-every-writer-reports\" nor \"unseen-writers-may-hide-files\""
            ),
        }),
    }
}

fn whole_above_zero(var: &'static str, raw: &str) -> Result<u64, ConfigError> {
    match raw.parse::<u64>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(ConfigError {
            var,
            problem: format!("{raw:?} is not a whole number above 0"),
        }),
    }
}

/// `a,b , c` → [a, b, c]; an empty item (`a,,b`, `,`) is an error, as are duplicates.
fn id_list(var: &'static str, raw: &str) -> Result<Vec<String>, ConfigError> {
    let mut ids: Vec<String> = Vec::new();
    for item in raw.split(',').map(str::trim) {
        if item.is_empty() {
            return Err(ConfigError {
                var,
                problem: format!("{raw:?} has an empty item; give a comma-separated list of ids"),
            });
        }
        if item.chars().any(char::is_whitespace) {
            return Err(ConfigError {
                var,
                problem: format!("{item:?} contains whitespace"),
            });
        }
        if !ids.iter().any(|i| i == item) {
            ids.push(item.to_owned());
        }
    }
    Ok(ids)
}

fn watch_dir(raw: &str) -> Result<String, ConfigError> {
    let parts: Vec<&str> = raw
        .split('/')
        .filter(|p| !p.is_empty() && *p != ".")
        .collect();
    if parts.iter().any(|p| *p == ".." || p.contains('\0')) {
        return Err(ConfigError {
            var: "WATCH_DIR",
            problem: format!("{raw:?} must stay inside the shard root (no '..')"),
        });
    }
    Ok(parts.join("/"))
}

/// What the fleet rule asks of the clients' reports (`CLIENT_REPORTS`). Every live report
/// holds the moves while it names another list, either way.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ClientReports {
    /// Every task ECS wants running in the named services and `ECS_CLIENT_FAMILIES` has a live
    /// report naming its ARN before a file moves, a target goes or the list needs version 2:
    /// a task on plain paths (no router) would lose sight of a moved file.
    #[default]
    Require,
    /// ECS's deployments and tasks, and the reports there are: a task without one is not
    /// waited for. Safe only once every reader and writer routes through a router.
    EcsMayHideFiles,
}

impl ClientReports {
    pub const REQUIRE: &'static str = "require";
    pub const ECS_MAY_HIDE_FILES: &'static str = "ecs-may-hide-files";
}

/// When a clean rebalance pass closes the placements (`CLOSE_PLACEMENTS`). Once they are
/// closed a miss looks at home alone, so a file a writer puts away from home is hidden until a
/// rebalance moves it: only a writer the fleet rule sees is sure to put it where a miss looks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ClosePlacements {
    /// Only while every writer ECS shows is seen: `CLIENT_REPORTS=require`, every task
    /// reporting and ECS's tasks listed.
    #[default]
    WhenEveryWriterReports,
    /// Whatever the writers: a task without a report (under `ecs-may-hide-files`, or not
    /// reporting) may write a file that no miss finds until the rebalance moves it home.
    UnseenWritersMayHideFiles,
}

impl ClosePlacements {
    pub const WHEN_EVERY_WRITER_REPORTS: &'static str = "when-every-writer-reports";
    pub const UNSEEN_WRITERS_MAY_HIDE_FILES: &'static str = "unseen-writers-may-hide-files";
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn config(vars: &[(&str, &str)]) -> Result<Config, ConfigError> {
        let mut env: HashMap<String, String> = [
            ("EFS_FILE_SYSTEM_ID", "fs-1"),
            ("ECS_CLUSTER_NAME", "c"),
            ("ECS_SERVICE_NAME", "s"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        for (k, v) in vars {
            env.insert(k.to_string(), v.to_string());
        }
        Config::from_lookup(|k| env.get(k).cloned())
    }

    fn failing_var(vars: &[(&str, &str)]) -> &'static str {
        match config(vars) {
            Err(ConfigError { var, .. }) => var,
            other => panic!("expected a config error for {vars:?}, got {other:?}"),
        }
    }

    #[test]
    fn defaults_follow_the_contract() {
        let c = config(&[]).unwrap();
        assert_eq!(c.parameter_name, "/efs-mount-autoscaling/mount-targets");
        assert_eq!(c.state_parameter_name, "/efs-mount-autoscaling/state");
        assert_eq!(c.mount_path, PathBuf::from("/mnt/efs"));
        assert_eq!(c.watch_dir, "data/analysis");
        assert_eq!(c.file_threshold, 50_000);
        assert_eq!(c.subnet_ids, None);
        assert_eq!(c.security_group_ids, None);
        assert_eq!(c.max_mount_targets, None);
        assert_eq!(c.max_shards, DEFAULT_MAX_SHARDS);
        assert_eq!(c.scale_in_ratio, 0.6);
        assert_eq!(c.scale_in_cooldown, Duration::from_secs(1800));
        assert!(c.protected_subnet_ids.is_empty());
        assert_eq!(c.subnet_exclusion, Duration::from_secs(86_400));
        assert_eq!(c.abandoned_after, Duration::from_secs(3600));
        assert_eq!(c.api_timeouts, ApiTimeouts::default());
        assert_eq!(c.client_refresh, Duration::ZERO);
        assert_eq!(c.move_concurrency, 16);
        assert!(c.client_families.is_empty());
        assert_eq!(c.client_reports, ClientReports::Require);
        assert_eq!(c.close_placements, ClosePlacements::WhenEveryWriterReports);
    }

    #[test]
    fn close_placements_waits_for_every_writer_unless_the_risk_is_chosen_by_name() {
        let c = config(&[("CLOSE_PLACEMENTS", "unseen-writers-may-hide-files")]).unwrap();
        assert_eq!(
            c.close_placements,
            ClosePlacements::UnseenWritersMayHideFiles
        );
        let c = config(&[("CLOSE_PLACEMENTS", "when-every-writer-reports")]).unwrap();
        assert_eq!(c.close_placements, ClosePlacements::WhenEveryWriterReports);
        for bad in ["always", "true", "Unseen-writers-may-hide-files"] {
            assert_eq!(
                failing_var(&[("CLOSE_PLACEMENTS", bad)]),
                "CLOSE_PLACEMENTS"
            );
        }
    }

    #[test]
    fn client_families_are_a_list() {
        let c = config(&[("ECS_CLIENT_FAMILIES", "batch, report")]).unwrap();
        assert_eq!(c.client_families, vec!["batch", "report"]);
        assert_eq!(
            failing_var(&[("ECS_CLIENT_FAMILIES", "batch,,report")]),
            "ECS_CLIENT_FAMILIES"
        );
    }

    #[test]
    fn client_reports_is_require_unless_the_risk_is_chosen_by_name() {
        let c = config(&[("CLIENT_REPORTS", "require")]).unwrap();
        assert_eq!(c.client_reports, ClientReports::Require);
        let c = config(&[("CLIENT_REPORTS", "ecs-may-hide-files")]).unwrap();
        assert_eq!(c.client_reports, ClientReports::EcsMayHideFiles);
        // The old name of the risky mode is refused: it must be chosen by its new one.
        assert_eq!(failing_var(&[("CLIENT_REPORTS", "ecs")]), "CLIENT_REPORTS");
        assert_eq!(
            failing_var(&[("CLIENT_REPORTS", "always")]),
            "CLIENT_REPORTS"
        );
    }

    #[test]
    fn lists_and_paths_parse() {
        let c = config(&[
            ("ECS_SERVICE_NAME", "api, worker,api"),
            ("SUBNET_IDS", "subnet-a,subnet-b"),
            ("WATCH_DIR", "/data/analysis/"),
            ("SUBNET_IDS", ""),
        ])
        .unwrap();
        assert_eq!(c.services, vec!["api", "worker"]);
        assert_eq!(c.subnet_ids, None, "an empty value is unset");
        assert_eq!(c.watch_dir, "data/analysis");
        assert_eq!(c.watch_path("/"), PathBuf::from("/mnt/efs/data/analysis"));
        assert_eq!(
            c.watch_path("/shards/use1-az4"),
            PathBuf::from("/mnt/efs/shards/use1-az4/data/analysis")
        );
    }

    #[test]
    fn bad_values_name_their_variable() {
        assert_eq!(
            failing_var(&[("EFS_FILE_SYSTEM_ID", "")]),
            "EFS_FILE_SYSTEM_ID"
        );
        assert_eq!(
            failing_var(&[("ECS_CLUSTER_NAME", " ")]),
            "ECS_CLUSTER_NAME"
        );
        assert_eq!(
            failing_var(&[("ECS_SERVICE_NAME", "a,,b")]),
            "ECS_SERVICE_NAME"
        );
        assert_eq!(failing_var(&[("FILE_THRESHOLD", "0")]), "FILE_THRESHOLD");
        assert_eq!(failing_var(&[("FILE_THRESHOLD", "lots")]), "FILE_THRESHOLD");
        assert_eq!(failing_var(&[("FILE_THRESHOLD", "-5")]), "FILE_THRESHOLD");
        assert_eq!(failing_var(&[("SUBNET_IDS", ",")]), "SUBNET_IDS");
        assert_eq!(
            failing_var(&[("SECURITY_GROUP_IDS", "sg-1,")]),
            "SECURITY_GROUP_IDS"
        );
        assert_eq!(
            failing_var(&[("MAX_MOUNT_TARGETS", "0")]),
            "MAX_MOUNT_TARGETS"
        );
        assert_eq!(failing_var(&[("MAX_SHARDS", "0")]), "MAX_SHARDS");
        assert_eq!(failing_var(&[("MAX_SHARDS", "1001")]), "MAX_SHARDS");
        assert_eq!(failing_var(&[("SCALE_IN_RATIO", "1.5")]), "SCALE_IN_RATIO");
        assert_eq!(
            failing_var(&[("SCALE_IN_COOLDOWN_SECONDS", "30m")]),
            "SCALE_IN_COOLDOWN_SECONDS"
        );
        assert_eq!(
            failing_var(&[("EFS_MOUNT_PATH", "mnt/efs")]),
            "EFS_MOUNT_PATH"
        );
        assert_eq!(failing_var(&[("WATCH_DIR", "../etc")]), "WATCH_DIR");
        assert_eq!(
            failing_var(&[(
                "STATE_PARAMETER_NAME",
                "/efs-mount-autoscaling/mount-targets"
            )]),
            "STATE_PARAMETER_NAME"
        );
        assert_eq!(
            failing_var(&[("MOVE_CONCURRENCY", "1000")]),
            "MOVE_CONCURRENCY"
        );
        for bad in ["0", "ten", "-1"] {
            assert_eq!(
                failing_var(&[("REBALANCE_MAX_VISITS", bad)]),
                "REBALANCE_MAX_VISITS"
            );
        }
        assert_eq!(
            failing_var(&[("SUBNET_EXCLUSION_SECONDS", "1d")]),
            "SUBNET_EXCLUSION_SECONDS"
        );
        for bad in ["59", "0", "1h"] {
            assert_eq!(
                failing_var(&[("ABANDONED_AFTER_SECONDS", bad)]),
                "ABANDONED_AFTER_SECONDS"
            );
        }
        assert_eq!(
            failing_var(&[("API_ATTEMPT_TIMEOUT_SECONDS", "0")]),
            "API_ATTEMPT_TIMEOUT_SECONDS"
        );
        assert_eq!(
            failing_var(&[
                ("API_ATTEMPT_TIMEOUT_SECONDS", "20"),
                ("API_CALL_TIMEOUT_SECONDS", "5")
            ]),
            "API_CALL_TIMEOUT_SECONDS"
        );
        assert_eq!(
            failing_var(&[("PROTECTED_SUBNET_IDS", "a b")]),
            "PROTECTED_SUBNET_IDS"
        );
    }
}
