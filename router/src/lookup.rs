//! One name of the logical tree without reading its directory, for callers that ask about a
//! single path (fsspec's `info`, `ls` with details, `rmdir`): [`Router::entry`],
//! [`Router::list_dir_in`], [`Router::copy_stat`] and [`Router::remove_dir`]. Each opens a
//! shard's directory as [`Router::list_dir`] does (beneath the mount, no link followed,
//! revalidated), so their answers agree with a listing's.

use crate::listing::{io_error, join, Entry, Held};
use crate::pool::map_all;
use crate::router::{Error, Router, PROBE_THREADS};
use rustix::fs::{AtFlags, FileType, Stat};
use rustix::io::Errno;
use std::collections::BTreeMap;

impl Router {
    /// The one name `path` as [`Router::list_dir`] of its directory would list it, or `None`
    /// when it would not be listed (or `path` is the root): the name looked at (`lstat`) in
    /// each distinct shard's directory at once, by the same rules, without reading the
    /// directory. Costs `list_dir`'s opens and one `lstat` per shard.
    pub fn entry(&self, path: &str) -> Result<Option<Entry>, Error> {
        let logical = self.logical_dir(path)?;
        if logical.is_empty() {
            return Ok(None);
        }
        let (dir, name) = logical.rsplit_once('/').unwrap_or(("", &logical));
        let shards = self.distinct();
        let looks = map_all(&shards, PROBE_THREADS, |&j| self.held(j, dir, name));
        let mut held = Vec::new();
        for (&j, got) in shards.iter().zip(looks) {
            if let Some(h) = got? {
                held.push((j, h));
            }
        }
        if held.is_empty() {
            return Ok(None);
        }
        let names = BTreeMap::from([(name.to_owned(), held)]);
        Ok(self.settle(dir, names)?.into_iter().next())
    }

    /// The logical directory `dir` as listed in `shards` only (each standing for its root):
    /// how a walk lists a subdirectory in the shards its parent's listing found it in. `None`
    /// when none of them has it.
    pub fn list_dir_in(&self, dir: &str, shards: &[usize]) -> Result<Option<Vec<Entry>>, Error> {
        let logical = self.logical_dir(dir)?;
        self.entries_of(&logical, shards)
    }

    /// The `lstat` of `path`'s copy in shard `j` (as an [`Entry`] names it), its directory
    /// opened as a listing opens it; `None` when it is not there now.
    pub fn copy_stat(&self, j: usize, path: &str) -> Result<Option<Stat>, Error> {
        let logical = self.logical_dir(path)?;
        let (dir, name) = logical.rsplit_once('/').unwrap_or(("", &logical));
        self.stat_in(j, dir, name)
    }

    /// The `lstat` of `name` in shard `j`'s directory `dir` (logical, checked), opened as a
    /// listing opens it; `None` when it is not there now.
    fn stat_in(&self, j: usize, dir: &str, name: &str) -> Result<Option<Stat>, Error> {
        let Some(fd) = self.opened(j, dir)? else {
            return Ok(None);
        };
        match rustix::fs::statat(&fd, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => Ok(Some(st)),
            Err(Errno::NOENT) => Ok(None),
            Err(e) => Err(io_error("stat", &self.real_dir(j, dir).join(name))(
                e.into(),
            )),
        }
    }

    /// Removes the empty directory `path` from each of `shards` (where a listing found it): its
    /// parent opened as a listing opens it, never through a link. A shard where it is gone, or
    /// is no longer a directory, is skipped; the first other error is returned once every
    /// shard was tried (`ENOTEMPTY` for a copy that holds names a listing does not show).
    pub fn remove_dir(&self, path: &str, shards: &[usize]) -> Result<(), Error> {
        let logical = self.logical_dir(path)?;
        let (dir, name) = logical.rsplit_once('/').unwrap_or(("", &logical));
        let mut failure = None;
        for &j in shards {
            let real = self.real_dir(j, &join(dir, name));
            let removed = match self.open_listed(j, dir) {
                Ok(Some(fd)) => rustix::fs::unlinkat(&fd, name, AtFlags::REMOVEDIR),
                Ok(None) => continue,
                Err(e) => Err(Errno::from_io_error(&e).unwrap_or(Errno::IO)),
            };
            match removed {
                Ok(()) | Err(Errno::NOENT) | Err(Errno::NOTDIR) => {}
                Err(e) => failure = failure.or(Some(io_error("remove directory", &real)(e.into()))),
            }
        }
        failure.map_or(Ok(()), Err)
    }

    /// What shard `j`'s directory `dir` holds as `name`, by one `lstat`; `None` when nothing.
    fn held(&self, j: usize, dir: &str, name: &str) -> Result<Option<Held>, Error> {
        // The path was checked once by `entry`: not parsed again for each shard.
        let looked = self.stat_in(j, dir, name)?;
        Ok(looked.map(|st| Held::of(FileType::from_raw_mode(st.st_mode))))
    }
}
