//! The one error type. Each variant names what is at fault (a variable, a file, a
//! parameter, an AWS operation) and keeps its source.

use std::path::PathBuf;

pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("configuration: {var}: {problem}")]
    Config { var: &'static str, problem: String },

    #[error("unsupported event {received}: accepted are an EventBridge \"Scheduled Event\", {{\"action\":\"reconcile\"}}, {{\"action\":\"plan\"}} and {{\"action\":\"rebalance\",\"max_moves\":N}}")]
    UnsupportedEvent { received: String },

    #[error("SSM parameter {name} does not hold a mount target list, so it is left unchanged and nothing was done: {source}")]
    CorruptParameter {
        name: String,
        #[source]
        source: efs_router::list::ListError,
    },

    #[error("watch directory {path} of the root shard does not exist; is EFS_MOUNT_PATH/WATCH_DIR right and the file system mounted?")]
    MissingWatchDir { path: PathBuf },

    #[error("cannot read directory {path}: {source}")]
    ReadDir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    #[error("cannot create shard directory {path}: {source}")]
    CreateShardDir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    #[error("state file {path}: {problem}; fix or remove it (scale-in timers start again)")]
    StateFile { path: PathBuf, problem: String },

    #[error("{what} not found ({operation})")]
    NotFound {
        operation: &'static str,
        what: String,
        #[source]
        source: BoxError,
    },

    #[error("AWS throttled {operation} beyond the SDK's retries; the next run will try again")]
    Throttled {
        operation: &'static str,
        #[source]
        source: BoxError,
    },

    #[error("another mount target already exists in that AZ ({operation})")]
    MountTargetConflict {
        operation: &'static str,
        #[source]
        source: BoxError,
    },

    #[error("AWS {operation} failed: {message}")]
    Aws {
        operation: &'static str,
        message: String,
        #[source]
        source: BoxError,
    },

    #[error("{0}")]
    Inconsistent(String),
}

impl Error {
    /// The Lambda error type reported to the runtime: the variant's name.
    pub fn kind(&self) -> &'static str {
        match self {
            Error::Config { .. } => "Config",
            Error::UnsupportedEvent { .. } => "UnsupportedEvent",
            Error::CorruptParameter { .. } => "CorruptParameter",
            Error::MissingWatchDir { .. } => "MissingWatchDir",
            Error::ReadDir { .. } => "ReadDir",
            Error::CreateShardDir { .. } => "CreateShardDir",
            Error::StateFile { .. } => "StateFile",
            Error::NotFound { .. } => "NotFound",
            Error::Throttled { .. } => "Throttled",
            Error::MountTargetConflict { .. } => "MountTargetConflict",
            Error::Aws { .. } => "Aws",
            Error::Inconsistent(_) => "Inconsistent",
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
