//! efs-mount-autoscaler: observe → plan → apply, once per invocation.

pub mod apply;
pub mod aws;
pub mod config;
pub mod error;
pub mod event;
pub mod metrics;
pub mod migration;
pub mod observe;
pub mod observed;
pub mod plan;
pub mod reconcile;
pub mod response;
pub mod scale_state;
pub mod shard;
