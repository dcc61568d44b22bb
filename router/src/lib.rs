//! Client-side routing for efs-mount-autoscaler: reads the published list of mount targets
//! and sends each logical path to its shard, as docs/design.md argues and docs/contract.md
//! specifies.
//!
//! - [`list`]: the published JSON, every form (version 2: a mount target serving several shards).
//! - [`path`]: logical paths, checked and normalised.
//! - [`shard`]: [`shard_index`], the routing function shared with the Python client.
//! - [`layout`]: where a shard's files are on this host (one mount, or one per shard).
//! - [`placement`]: where a file can be when it is not at home (version 3: placements still open).
//! - [`cache`]: the NFS client's name cache, and how a lookup asks the server instead.
//! - [`dir`] (`dir/`): reading directories without a stat per entry, one part a file:
//!   - `count.rs`: counting a directory's files and listing their names ([`dir::count_files`]);
//!   - `walk.rs`: walking a tree, never through a link ([`dir::walk_at`]), and one
//!     directory's every name with its type ([`dir::for_each_name_at`]);
//!   - `sorted_walk.rs` ([`sorted_walk`]): the walk in name order, from where the last one
//!     stopped;
//!   - `beneath.rs`: [`dir::open_beneath`], a directory beneath a mount, no link followed;
//!   - `pinned.rs`: [`dir::Pinned`], a directory held open, named by a path that resolves to it
//!     alone (`/proc/self/fd/<n>`): the directories the function walked, and each private
//!     directory a move makes (`relocation`);
//!   - `cleanup.rs`: removing the empty directories a drain leaves ([`dir::remove_empty_dirs`]);
//!   - `abandoned.rs`: the router's own files a dead write or move left ([`dir::abandoned`]).
//! - [`names`]: the router's own temporary names, never counted, moved or routed.
//! - [`relocation`] (`relocation/`): moving a file home: the newest version wins, nothing a
//!   writer uses is unlinked, each private directory used through its descriptor (`mod.rs`):
//!   - `single.rs`: one move, [`relocate`];
//!   - `batch.rs`: the function's moves in bulk, [`relocation::relocate_many`], sharing their
//!     private directories;
//!   - `settle.rs`: a destination that exists: the newer version stays, one owner's file never
//!     takes another's name;
//!   - `retire.rs`: the source retired into a private directory, settled from its listing;
//!   - `recover.rs`: a move cut short by a crash, given back ([`relocation::recover`]);
//!   - `outcome.rs`: what a move answers ([`Relocation`]) and the errors that leave both files;
//!   - `stamp.rs`: what a move knows of a file, and the looks (cached, or the server's) that
//!     take it.
//! - [`report`]: a client's report of the list it routes by, read by the function.
//! - [`reporter`]: writing this router's report ([`Router::reporting`]), and its lease;
//!   [`metadata`]: the ECS task it runs in.
//! - [`pool`]: a few threads working through a list (probes, moves, counting) at once.
//! - `router`: [`Router`]: `exists`, atomic `write`, `read_with_fallback` that moves files home.
//! - `delete`: [`Router::delete`], every copy of a path, home and elsewhere.
//! - [`listing`]: [`Router::list_dir`] and [`Router::walk`], the logical tree: the union of the
//!   shards' directories, one entry per name, the copy a read takes.
//! - `create`: [`Router::create`], a path written only where it exists nowhere.
//! - `lookup`: [`Router::entry`] and its kin, one name of the logical tree without reading
//!   its directory (fsspec's `info`, `ls` with details, `rmdir`).
//!
//! The exact `rendezvous` rule, the layouts and the command-line tool are in `router/REFERENCE.md`.

pub mod cache;
mod create;
mod delete;
pub mod dir;
pub mod layout;
pub mod list;
pub mod listing;
mod lookup;
pub mod metadata;
pub mod names;
pub mod path;
pub mod placement;
pub mod pool;
pub mod relocation;
pub mod report;
pub mod reporter;
mod router;
pub mod shard;

pub use create::Creation;
pub use delete::{Deleted, Left};
pub use layout::{Layout, LayoutError};
pub use list::{ListError, MountTargetList, Shard, Strategy, Target};
pub use listing::{Entry, EntryKind, Listing, Walk};
pub use path::{LogicalPath, PathError};
pub use placement::{Open, Placement};
pub use relocation::{relocate, NotARegularFile, OtherOwners, Relocation};
pub use reporter::{ReportFault, Reporting};
pub use router::{Error, Found, Location, Place, Read, Resolved, Router};
pub use shard::{modulo_sha256, rendezvous_score, shard_index, RouteError};

/// The sorted walk's old path, kept for the crates that import it from here.
pub use dir::sorted_walk;
