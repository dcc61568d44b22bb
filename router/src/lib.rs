//! Client-side routing for efs-mount-autoscaler: reads the published list of mount targets
//! and sends each logical path to its shard, as docs/design.md describes.
//!
//! - [`list`]: the published JSON, every form (version 2: a mount target serving several shards).
//! - [`path`]: logical paths, checked and normalised.
//! - [`shard`]: [`shard_index`], the routing function shared with the Python client.
//! - [`layout`]: where a shard's files are on this host (one mount, or one per shard).
//! - [`cache`]: the NFS client's name cache, and how a lookup asks the server instead.
//! - [`dir`]: reading directories without a stat per entry (counting, listing names, walking
//!   a tree), opening a directory beneath a mount without following links, cleaning up.
//! - [`names`]: the router's own temporary names, never counted, moved or routed.
//! - [`relocation`]: moving a file home: the newest version wins, nothing a writer uses is
//!   unlinked; `relocate_many`, the function's moves in bulk, sharing their private
//!   directories (`batch`).
//! - [`report`]: a client's report of the list it routes by, read by the function.
//! - [`reporter`]: writing this router's report ([`Router::reporting`]), and its lease;
//!   [`metadata`]: the ECS task it runs in.
//! - [`pool`]: a few threads working through a list (probes, moves, counting) at once.
//! - [`fs`]: [`Router`]: `exists`, atomic `write`, `read_with_fallback` that moves files home.
//! - `delete`: [`Router::delete`], every copy of a path, home and elsewhere.
//! - [`listing`]: [`Router::list_dir`] and [`Router::walk`], the logical tree: the union of the
//!   shards' directories, one entry per name, the copy a read takes.
//! - `create`: [`Router::create`], a path written only where it exists nowhere.
//!
//! The exact `rendezvous` rule, the layouts and the command-line tool are in `router/README.md`.

mod batch;
pub mod cache;
mod create;
mod delete;
pub mod dir;
pub mod fs;
pub mod layout;
pub mod list;
pub mod listing;
pub mod metadata;
pub mod names;
pub mod path;
pub mod placement;
pub mod pool;
pub mod relocation;
pub mod report;
pub mod reporter;
pub mod shard;
pub mod sorted_walk;

pub use create::Creation;
pub use delete::{Deleted, Left};
pub use fs::{Error, Found, Location, Place, Read, Resolved, Router};
pub use layout::{Layout, LayoutError};
pub use list::{ListError, MountTargetList, Strategy, Target};
pub use listing::{Entry, EntryKind, Listing, Walk};
pub use path::{LogicalPath, PathError};
pub use placement::{Open, Placement};
pub use relocation::{relocate, NotARegularFile, OtherOwners, Relocation};
pub use reporter::{ReportFault, Reporting};
pub use shard::{modulo_sha256, rendezvous_score, shard_index, RouteError};
