//! The parts of the FUSE kernel protocol (`linux/fuse.h`, protocol 7.31) this server speaks.

pub const FUSE_ROOT_ID: u64 = 1;
pub const IN_HEADER_LEN: usize = 40;
pub const OUT_HEADER_LEN: usize = 16;
pub const DIRENT_HEADER_LEN: usize = 24;
pub const DT_UNKNOWN: u32 = 0;
pub const MAX_WRITE: u32 = 1 << 20;
pub const OPCODE_SLOTS: usize = 64;

pub const FUSE_LOOKUP: u32 = 1;
pub const FUSE_FORGET: u32 = 2;
pub const FUSE_GETATTR: u32 = 3;
pub const FUSE_SETATTR: u32 = 4;
pub const FUSE_READLINK: u32 = 5;
pub const FUSE_SYMLINK: u32 = 6;
pub const FUSE_MKNOD: u32 = 8;
pub const FUSE_MKDIR: u32 = 9;
pub const FUSE_UNLINK: u32 = 10;
pub const FUSE_RMDIR: u32 = 11;
pub const FUSE_RENAME: u32 = 12;
pub const FUSE_LINK: u32 = 13;
pub const FUSE_OPEN: u32 = 14;
pub const FUSE_READ: u32 = 15;
pub const FUSE_WRITE: u32 = 16;
pub const FUSE_STATFS: u32 = 17;
pub const FUSE_RELEASE: u32 = 18;
pub const FUSE_FSYNC: u32 = 20;
pub const FUSE_SETXATTR: u32 = 21;
pub const FUSE_GETXATTR: u32 = 22;
pub const FUSE_LISTXATTR: u32 = 23;
pub const FUSE_REMOVEXATTR: u32 = 24;
pub const FUSE_FLUSH: u32 = 25;
pub const FUSE_INIT: u32 = 26;
pub const FUSE_OPENDIR: u32 = 27;
pub const FUSE_READDIR: u32 = 28;
pub const FUSE_RELEASEDIR: u32 = 29;
pub const FUSE_FSYNCDIR: u32 = 30;
pub const FUSE_ACCESS: u32 = 34;
pub const FUSE_CREATE: u32 = 35;
pub const FUSE_INTERRUPT: u32 = 36;
pub const FUSE_DESTROY: u32 = 38;
pub const FUSE_IOCTL: u32 = 39;
pub const FUSE_NOTIFY_REPLY: u32 = 41;
/// The `error` of a notification the server sends unasked (`unique` 0): a cached name to drop.
pub const FUSE_NOTIFY_INVAL_ENTRY: i32 = 3;
pub const FUSE_BATCH_FORGET: u32 = 42;
pub const FUSE_RENAME2: u32 = 45;

// INIT flags.
pub const FUSE_BIG_WRITES: u32 = 1 << 5;
pub const FUSE_PARALLEL_DIROPS: u32 = 1 << 18;
pub const FUSE_MAX_PAGES: u32 = 1 << 22;

pub const FUSE_GETATTR_FH: u32 = 1;

// SETATTR valid bits.
pub const FATTR_MODE: u32 = 1 << 0;
pub const FATTR_UID: u32 = 1 << 1;
pub const FATTR_GID: u32 = 1 << 2;
pub const FATTR_SIZE: u32 = 1 << 3;
pub const FATTR_ATIME: u32 = 1 << 4;
pub const FATTR_MTIME: u32 = 1 << 5;
pub const FATTR_FH: u32 = 1 << 6;
pub const FATTR_ATIME_NOW: u32 = 1 << 7;
pub const FATTR_MTIME_NOW: u32 = 1 << 8;

/// Whether an operation is a round trip to an NFS server (READDIR is charged per reply of
/// names instead, in `readdir`).
pub fn is_round_trip(opcode: u32) -> bool {
    matches!(
        opcode,
        FUSE_LOOKUP
            | FUSE_GETATTR
            | FUSE_SETATTR
            | FUSE_READLINK
            | FUSE_SYMLINK
            | FUSE_MKNOD
            | FUSE_MKDIR
            | FUSE_UNLINK
            | FUSE_RMDIR
            | FUSE_RENAME
            | FUSE_RENAME2
            | FUSE_LINK
            | FUSE_OPEN
            | FUSE_READ
            | FUSE_WRITE
            | FUSE_STATFS
            | FUSE_FSYNC
            | FUSE_SETXATTR
            | FUSE_GETXATTR
            | FUSE_LISTXATTR
            | FUSE_REMOVEXATTR
            | FUSE_ACCESS
            | FUSE_CREATE
    )
}

pub fn opcode_name(opcode: u32) -> String {
    let name = match opcode {
        FUSE_LOOKUP => "LOOKUP",
        FUSE_FORGET => "FORGET",
        FUSE_GETATTR => "GETATTR",
        FUSE_SETATTR => "SETATTR",
        FUSE_READLINK => "READLINK",
        FUSE_SYMLINK => "SYMLINK",
        FUSE_MKNOD => "MKNOD",
        FUSE_MKDIR => "MKDIR",
        FUSE_UNLINK => "UNLINK",
        FUSE_RMDIR => "RMDIR",
        FUSE_RENAME => "RENAME",
        FUSE_LINK => "LINK",
        FUSE_OPEN => "OPEN",
        FUSE_READ => "READ",
        FUSE_WRITE => "WRITE",
        FUSE_STATFS => "STATFS",
        FUSE_RELEASE => "RELEASE",
        FUSE_FSYNC => "FSYNC",
        FUSE_SETXATTR => "SETXATTR",
        FUSE_GETXATTR => "GETXATTR",
        FUSE_LISTXATTR => "LISTXATTR",
        FUSE_REMOVEXATTR => "REMOVEXATTR",
        FUSE_FLUSH => "FLUSH",
        FUSE_INIT => "INIT",
        FUSE_OPENDIR => "OPENDIR",
        FUSE_READDIR => "READDIR",
        FUSE_RELEASEDIR => "RELEASEDIR",
        FUSE_FSYNCDIR => "FSYNCDIR",
        FUSE_ACCESS => "ACCESS",
        FUSE_CREATE => "CREATE",
        FUSE_INTERRUPT => "INTERRUPT",
        FUSE_DESTROY => "DESTROY",
        FUSE_IOCTL => "IOCTL",
        FUSE_BATCH_FORGET => "BATCH_FORGET",
        FUSE_RENAME2 => "RENAME2",
        _ => return format!("OP{opcode}"),
    };
    name.to_owned()
}

/// A request read from the device: its header, and its arguments to read in order.
pub struct Request<'a> {
    pub opcode: u32,
    pub unique: u64,
    pub nodeid: u64,
    args: &'a [u8],
}

impl<'a> Request<'a> {
    pub fn parse(buf: &'a [u8]) -> Request<'a> {
        let mut h = Args { buf, pos: 0 };
        let len = h.u32() as usize;
        let opcode = h.u32();
        let unique = h.u64();
        let nodeid = h.u64();
        let end = len.min(buf.len()).max(IN_HEADER_LEN);
        Request {
            opcode,
            unique,
            nodeid,
            args: &buf[IN_HEADER_LEN..end],
        }
    }

    pub fn args(&self) -> Args<'a> {
        Args {
            buf: self.args,
            pos: 0,
        }
    }
}

/// Reads little-endian fields in order; past the end, zeros and empty strings.
pub struct Args<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Args<'a> {
    pub fn bytes(&mut self, n: usize) -> &'a [u8] {
        let start = self.pos.min(self.buf.len());
        let end = (self.pos + n).min(self.buf.len());
        self.pos += n;
        &self.buf[start..end]
    }

    pub fn u32(&mut self) -> u32 {
        let b = self.bytes(4);
        let mut a = [0u8; 4];
        a[..b.len()].copy_from_slice(b);
        u32::from_le_bytes(a)
    }

    pub fn u64(&mut self) -> u64 {
        let b = self.bytes(8);
        let mut a = [0u8; 8];
        a[..b.len()].copy_from_slice(b);
        u64::from_le_bytes(a)
    }

    /// A NUL-terminated string, without its NUL.
    pub fn cstr(&mut self) -> &'a [u8] {
        let rest = &self.buf[self.pos.min(self.buf.len())..];
        let n = rest.iter().position(|&b| b == 0).unwrap_or(rest.len());
        self.pos += n + 1;
        &rest[..n]
    }
}

pub fn put_u16(out: &mut Vec<u8>, v: u16) {
    out.extend_from_slice(&v.to_le_bytes());
}

pub fn put_u32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}

pub fn put_i32(out: &mut Vec<u8>, v: i32) {
    out.extend_from_slice(&v.to_le_bytes());
}

pub fn put_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_le_bytes());
}
