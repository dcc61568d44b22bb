//! Moving files to their homes under the published list: a draining shard's files before its
//! mount target goes ([`drain_shards`]), and misplaced files in the background, a little each
//! run (the rebalance's pass: [`pass::run`], its walk [`rebalance`]).
//!
//! A file's logical path is `<WATCH_DIR>/<its path below the watched directory>`, nested ones
//! included; its home is the shard `shard_index` gives that path under the list (draining shards
//! get nothing), at the same relative path. Each shard's tree is walked in name order
//! (`efs_router::sorted_walk`, from a directory opened beneath the mount without following
//! links): memory stays bounded whatever the number of misplaced files, and a rebalance goes on
//! where its last run stopped. The router's names abandoned by writers and moves that died are
//! cleaned up as the rebalance's walk meets them. Moves go in batches
//! through `efs_router::relocation::relocate_many`, several at a time, each deciding as
//! `efs_router::relocate` does (their retires share private directories): the latest write
//! wins (an older copy at home is replaced, an older copy at the source is dropped), and what a
//! move removes is the file it looked at. The router's own names (writes and moves in
//! progress) are never moved; links, FIFOs and devices are skipped.
//!
//! One noun a file:
//! - `count`: what a run moved ([`Moves`]);
//! - `mover`: one run's walk of a shard, entry by entry, within its [`Budget`];
//! - `batch`: misplaced files moved a batch at a time;
//! - `give_back`: the router's abandoned names cleaned up, cut-short moves given back;
//! - `drain`: a drain's walk ([`drain_shards`]); whether a draining tree holds a file
//!   ([`holds_files`]);
//! - `walk`: a rebalance run's walk, from where the last run stopped ([`rebalance`], [`Walk`]);
//! - `pass`: the rebalance a run makes: whether files may move, the walk, the record it keeps in
//!   the state ([`pass::run`]).

mod batch;
mod count;
mod drain;
mod give_back;
mod mover;
pub(crate) mod pass;
#[cfg(test)]
mod tests;
mod walk;

pub use count::Moves;
pub use drain::{drain_shards, holds_files, Holds};
pub use mover::Budget;
pub use walk::{rebalance, Walk};
