//! The one error type. Each variant names what is at fault (a variable, a file, a
//! parameter, an AWS operation) and keeps its source. A message never repeats its source:
//! [`chain`] is the one printer of an error with its causes.

use std::path::PathBuf;

pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// A setting that is missing or not valid, naming its variable. Cloned for each invocation:
/// a bad setting is answered to every one of them.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("configuration: {var}: {problem}")]
pub struct ConfigError {
    pub var: &'static str,
    pub problem: String,
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Config(#[from] ConfigError),

    #[error("unsupported event {received}: accepted are an EventBridge \"Scheduled Event\", {{\"action\":\"reconcile\"}}, {{\"action\":\"plan\"}}, {{\"action\":\"rebalance\",\"max_moves\":N}}, {{\"action\":\"migrate\",\"strategy\":\"rendezvous\"}} and {{\"action\":\"undo\"}}")]
    UnsupportedEvent { received: String },

    #[error("SSM parameter {name} does not hold a mount target list, so it is left unchanged and nothing was done")]
    CorruptParameter {
        name: String,
        #[source]
        source: efs_router::list::ListError,
    },

    #[error("watch directory {path} of the root shard does not exist; is EFS_MOUNT_PATH/WATCH_DIR right and the file system mounted?")]
    MissingWatchDir { path: PathBuf },

    #[error("cannot read directory {path}")]
    ReadDir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    #[error("cannot create shard directory {path}")]
    CreateShardDir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    /// SSM answered an older version of a parameter than it holds (its reads may lag a write):
    /// a run that planned from it could undo the last run's work, so nothing was done.
    #[error("SSM parameter {name} was read at version {read}, but version {newer} exists: SSM's reads lagged its last write, so nothing was done; the next run reads it again")]
    StaleParameter { name: String, read: i64, newer: i64 },

    /// A run wrote a parameter over a version it never read (SSM's reads, versioned ones
    /// too, lagged a write): that version was put back, and the run stopped there.
    #[error("SSM parameter {name} was written over version {missed}, which the run never read (it read version {read}: SSM's reads lagged a write); version {missed} was put back and the run stopped there; the next run reads it again")]
    StaleWrite {
        name: String,
        read: i64,
        missed: i64,
    },

    #[error("state parameter {name} (STATE_PARAMETER_NAME) is not the function's state: {problem}; only the function's role writes it: restore it from its history (aws ssm get-parameter-history) or delete it (the scale-in timers start again, and targets it created are no longer removed)")]
    StateParameter { name: String, problem: String },

    /// The value would not fit a Standard-tier parameter: nothing was written, and the run
    /// stopped before it changed anything.
    #[error("SSM parameter {name} would hold {chars} characters, more than the {limit} a Standard-tier parameter takes, so nothing was changed; {fix}")]
    ParameterTooLarge {
        name: String,
        chars: usize,
        limit: usize,
        fix: &'static str,
    },

    #[error("{what} not found ({operation})")]
    NotFound {
        operation: &'static str,
        what: String,
        #[source]
        source: BoxError,
    },

    #[error("{operation} listed more than {most} tasks for one service or family; the fleet is not known this run")]
    TooManyTasks {
        operation: &'static str,
        most: usize,
    },

    #[error("AWS throttled {operation} beyond the SDK's retries; the next run will try again")]
    Throttled {
        operation: &'static str,
        #[source]
        source: BoxError,
    },

    /// CreateMountTarget refused this subnet (or, with `whole_az`, every subnet of its AZ):
    /// the subnet is left out for a while and the next one is tried.
    #[error("CreateMountTarget refused subnet {subnet_id}{}: {code}: {message}", if *whole_az { " and its AZ" } else { "" })]
    SubnetRefused {
        subnet_id: String,
        code: String,
        message: String,
        whole_az: bool,
        #[source]
        source: BoxError,
    },

    /// AWS refused a call for a reason only an operator can fix (a setting, a quota, IAM).
    #[error("AWS refused {operation}: {code}: {message}; to fix: {fix}")]
    Refused {
        operation: &'static str,
        code: String,
        message: String,
        fix: String,
        #[source]
        source: BoxError,
    },

    #[error("AWS {operation} did not answer within the time limits (API_ATTEMPT_TIMEOUT_SECONDS per attempt, API_CALL_TIMEOUT_SECONDS in all); nothing after it was done")]
    TimedOut {
        operation: &'static str,
        #[source]
        source: BoxError,
    },

    #[error("file system {id} (EFS_FILE_SYSTEM_ID) is {state}, not available")]
    FileSystemNotAvailable { id: String, state: String },

    #[error("ECS service {service} in cluster {cluster} (ECS_SERVICE_NAME) uses the {controller} deployment controller; only the rolling-update controller (ECS) can be told to redeploy (forceNewDeployment), so nothing was changed")]
    DeploymentController {
        cluster: String,
        service: String,
        controller: String,
    },

    #[error("another mount target already exists in that AZ ({operation})")]
    MountTargetConflict {
        operation: &'static str,
        #[source]
        source: BoxError,
    },

    /// `code` and `message` are the API's own (empty when the call failed before an answer).
    #[error("AWS {operation} failed{}", if code.is_empty() && message.is_empty() { String::new() } else { format!(": {code}: {message}") })]
    Aws {
        operation: &'static str,
        code: String,
        message: String,
        #[source]
        source: BoxError,
    },

    /// A task of the run's own (counting the shards) panicked or was cancelled.
    #[error("the {task} task failed")]
    TaskFailed {
        task: &'static str,
        #[source]
        source: tokio::task::JoinError,
    },
}

impl Error {
    /// The Lambda error type reported to the runtime: the variant's name.
    pub fn kind(&self) -> &'static str {
        match self {
            Error::Config(_) => "Config",
            Error::UnsupportedEvent { .. } => "UnsupportedEvent",
            Error::CorruptParameter { .. } => "CorruptParameter",
            Error::MissingWatchDir { .. } => "MissingWatchDir",
            Error::ReadDir { .. } => "ReadDir",
            Error::CreateShardDir { .. } => "CreateShardDir",
            Error::StateParameter { .. } => "StateParameter",
            Error::StaleParameter { .. } => "StaleParameter",
            Error::StaleWrite { .. } => "StaleWrite",
            Error::ParameterTooLarge { .. } => "ParameterTooLarge",
            Error::NotFound { .. } => "NotFound",
            Error::Throttled { .. } => "Throttled",
            Error::TooManyTasks { .. } => "TooManyTasks",
            Error::MountTargetConflict { .. } => "MountTargetConflict",
            Error::SubnetRefused { .. } => "SubnetRefused",
            Error::Refused { .. } => "Refused",
            Error::TimedOut { .. } => "TimedOut",
            Error::FileSystemNotAvailable { .. } => "FileSystemNotAvailable",
            Error::DeploymentController { .. } => "DeploymentController",
            Error::Aws { .. } => "Aws",
            Error::TaskFailed { .. } => "TaskFailed",
        }
    }
}

/// The error and each of its sources, joined: what an operator reads in a log or a response.
pub fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let s_text = s.to_string();
        if !text.contains(&s_text) {
            text.push_str(": ");
            text.push_str(&s_text);
        }
        source = s.source();
    }
    text
}
