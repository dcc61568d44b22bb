//! efs-mount-autoscaler: observe → plan → apply, once per invocation.
//!
//! Public is only what the binaries and the tests use: the AWS clients, the settings, the
//! event, one run, the error, and the metric and IAM lists the template is checked against.

pub mod aws;
pub mod config;
pub mod error;
pub mod event;
pub mod metrics;
pub mod reconcile;
pub mod reports;

mod apply;
mod homing;
mod observe;
mod observed;
mod pinned;
mod plan;
mod rebalance;
mod response;
mod shard;
mod state;

/// The rebalance's walk as a run makes it, for `examples/rebalance_bench.rs`: not an API.
#[doc(hidden)]
pub mod bench {
    pub use crate::homing::{rebalance, Budget, Moves, Walk, ABANDONED_AFTER};
    pub use crate::rebalance::{comparison, Comparison, ShardSet};
}
