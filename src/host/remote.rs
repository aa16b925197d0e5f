//! Is the input coming over the network? Threads asleep in network, NFS or FUSE waits (`wchan`), open files on
//! network or FUSE file systems (`/proc/PID/fd` against `/proc/PID/mountinfo`), and `DataLoader` workers holding TCP
//! connections (`socket:[inode]` descriptors whose protocol is TCP). Pure parsers over `&str`, and a bounded scan.
//!
//! Cost: `wchan` is one small read per sleeping thread of a GPU process and one per child, each tick. The fd scan
//! lists at most [`MAX_FDS`] descriptors per process, reads `mountinfo` when one of them is a file, and asks each
//! socket its protocol (one `getxattr` per socket); it runs every [`FD_SCAN_PERIOD_MS`] and its answer is carried
//! between scans. It reads `/proc/PID/net/tcp{,6}` only for sockets whose protocol the kernel does not say: a read of
//! those tables walks the kernel's whole hash table of TCP connections, a few milliseconds on a host with much memory
//! (69 % of a tick against a 41-thread process with 2 workers on the dev machine, `perf`; docs/performance.md).

use std::collections::HashSet;
use std::path::Path;

use super::read_text;
use crate::sample::{RemoteFiles, WaitKind};

/// How many descriptors of one process the fd scan looks at, at most.
pub const MAX_FDS: usize = 1024;

/// How often the fd scan runs for a process (its last answer is carried in between).
pub const FD_SCAN_PERIOD_MS: u64 = 5_000;

/// File systems whose reads go over a network or through a user-space daemon: NFS, SMB, Lustre, Ceph, GlusterFS,
/// GPFS (Spectrum Scale), BeeGFS, WekaFS, 9p, virtiofs and AFS; every FUSE type ("fuse.s3fs", "fuse.gcsfuse",
/// "fuse.beegfs", "fuse.ceph-fuse", "fuseblk") is matched by its prefix.
const REMOTE_FS: &[&str] = &[
    "nfs",
    "nfs4",
    "cifs",
    "smb3",
    "smbfs",
    "lustre",
    "ceph",
    "glusterfs",
    "9p",
    "beegfs",
    "gpfs",
    "wekafs",
    "virtiofs",
    "afs",
    "orangefs",
];

/// Whether a file system type reads over the network or through FUSE ("fuse.s3fs", "fuse.gcsfuse", "fuseblk").
#[must_use]
pub fn is_remote_fs(fs_type: &str) -> bool {
    REMOTE_FS.contains(&fs_type) || fs_type.starts_with("fuse") || fs_type.starts_with("nfs")
}

/// What a sleeping thread waits for, from its `wchan` (the kernel function it sleeps in).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wait {
    /// A TCP/socket receive or connect: input over the network, or a server waiting for its next request.
    Socket,
    /// An NFS/RPC call, a FUSE request, or a Lustre, SMB, Ceph, GPFS, BeeGFS or 9p wait: a network file system.
    FileSystem,
    /// Waiting for its writes to reach storage: dirty-page throttling, writeback, a journal commit.
    Write,
    /// Anything else (futex, poll, pipe, local disk, idle).
    Other,
}

impl Wait {
    /// A socket or network file system wait (what `HostProcess::remote_waits` counts).
    #[must_use]
    pub fn is_remote(self) -> bool {
        matches!(self, Self::Socket | Self::FileSystem)
    }
}

/// Classifies a `wchan` name for the per-process counts the rules read (`remote_waits`, `fs_waits`, `write_waits`),
/// from the one table of waits in [`super::threads::classify_wchan`]. Generic waits (poll, epoll, futex,
/// `wait_woken`) are not counted: a `DataLoader` worker waiting on its index queue sits in them too; nor is a server
/// thread blocked in `accept` or a UDP receive: it waits for clients, not for input.
#[must_use]
pub fn classify_wchan(wchan: &str) -> Wait {
    let w = wchan.trim();
    match super::threads::classify_wchan(w) {
        Some(WaitKind::Socket) if !w.starts_with("inet_csk_accept") && !w.starts_with("udp_recvmsg") => Wait::Socket,
        Some(WaitKind::RemoteFs) => Wait::FileSystem,
        Some(WaitKind::Write) => Wait::Write,
        _ => Wait::Other,
    }
}

/// Sleeping threads counted by what they wait for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct WaitCounts {
    /// Socket and network file system waits together (`HostProcess::remote_waits`).
    pub remote: u32,
    /// Of `remote`, the network file system waits.
    pub fs: u32,
    pub write: u32,
}

impl WaitCounts {
    /// Counts one thread's wait.
    pub fn add(&mut self, wait: Wait) {
        match wait {
            Wait::Socket => self.remote += 1,
            Wait::FileSystem => {
                self.remote += 1;
                self.fs += 1;
            }
            Wait::Write => self.write += 1,
            Wait::Other => {}
        }
    }
}

/// One mount: where and of what type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mount {
    pub point: String,
    pub fs_type: String,
}

/// Parses `/proc/PID/mountinfo`: the mount point (field 5) and the type after the " - " separator.
#[must_use]
pub fn parse_mountinfo(text: &str) -> Vec<Mount> {
    text.lines()
        .filter_map(|line| {
            let (left, right) = line.split_once(" - ")?;
            let point = left.split(' ').nth(4)?;
            let fs_type = right.split(' ').next()?;
            Some(Mount { point: unescape(point), fs_type: fs_type.to_owned() })
        })
        .collect()
}

/// mountinfo escapes space, tab, newline and backslash as octal (`\040`).
fn unescape(text: &str) -> String {
    text.replace("\\040", " ").replace("\\011", "\t").replace("\\012", "\n").replace("\\134", "\\")
}

/// The mount a path lies on: the longest mount point that is a prefix of it at a `/` boundary (the last listed
/// wins a tie, as later mounts hide earlier ones).
#[must_use]
pub fn mount_of<'m>(mounts: &'m [Mount], path: &str) -> Option<&'m Mount> {
    let mut best: Option<&Mount> = None;
    for m in mounts {
        let p = m.point.as_str();
        let under = p == "/" || path == p || path.strip_prefix(p).is_some_and(|rest| rest.starts_with('/'));
        if under && best.is_none_or(|b| p.len() >= b.point.len()) {
            best = Some(m);
        }
    }
    best
}

/// The inodes of the TCP connections in `/proc/PID/net/tcp` or `tcp6` that are established (state 01).
#[must_use]
pub fn parse_tcp_inodes(text: &str) -> HashSet<u64> {
    text.lines()
        .skip(1)
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            (fields.get(3) == Some(&"01")).then(|| fields.get(9)?.parse().ok()).flatten()
        })
        .collect()
}

/// The inode of a `socket:[12345]` link target.
#[must_use]
pub fn socket_inode(target: &str) -> Option<u64> {
    target.strip_prefix("socket:[")?.strip_suffix(']')?.parse().ok()
}

/// The socket file system's attribute that names a socket's protocol ("TCP", "TCPv6", "UNIX", "UDP", "NETLINK").
const SOCKET_PROTOCOL_XATTR: &str = "system.sockprotoname";

/// What the kernel says a socket descriptor is, from [`SOCKET_PROTOCOL_XATTR`] on its `/proc/PID/fd/N` link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SocketKind {
    Tcp,
    Other,
    /// The attribute could not be read (a kernel without it, a fixture tree): told by the TCP tables instead.
    Unknown,
}

fn socket_kind(fd_link: &Path) -> SocketKind {
    let mut name = [0u8; 32];
    match rustix::fs::getxattr(fd_link, SOCKET_PROTOCOL_XATTR, &mut name[..]) {
        Ok(len) => match name.get(..len).map(|n| n.strip_suffix(&[0]).unwrap_or(n)) {
            Some(b"TCP" | b"TCPv6") => SocketKind::Tcp,
            Some(_) => SocketKind::Other,
            None => SocketKind::Unknown,
        },
        Err(_) => SocketKind::Unknown,
    }
}

/// What one fd scan found: the remote files and connections, and the inodes of the TCP sockets (sorted), so a
/// forked child's connections can be told from those it inherited from its parent.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct FdFacts {
    pub files: RemoteFiles,
    pub tcp_inodes: Vec<u64>,
    /// The read-only remote descriptors and their offsets, sorted by descriptor: what the next scan's read rate
    /// is measured against (see [`remote_read_rate`]).
    pub reads: Vec<RemoteRead>,
}

/// One read-only descriptor on a remote file system: its number, the file's inode and its offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RemoteRead {
    pub fd: u32,
    pub ino: u64,
    pub pos: u64,
}

/// What `/proc/PID/fdinfo/FD` says about a descriptor: its offset, its open flags and the file's inode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FdInfo {
    pub pos: u64,
    /// The open flags (octal in the file), e.g. `O_RDONLY | O_LARGEFILE`.
    pub flags: u32,
    pub ino: u64,
}

impl FdInfo {
    /// Whether the file was opened read-only (`flags & O_ACCMODE == O_RDONLY`).
    #[must_use]
    pub fn read_only(&self) -> bool {
        const O_ACCMODE: u32 = 0o3;
        const O_RDONLY: u32 = 0;
        self.flags & O_ACCMODE == O_RDONLY
    }
}

/// Parses `/proc/PID/fdinfo/FD` (`pos:`, `flags:` in octal, `ino:`); `None` without a `flags` line.
#[must_use]
pub fn parse_fdinfo(text: &str) -> Option<FdInfo> {
    let mut info = FdInfo::default();
    let mut flags = None;
    for line in text.lines() {
        let Some((key, value)) = line.split_once(':') else { continue };
        let value = value.trim();
        match key {
            "pos" => info.pos = value.parse().unwrap_or(0),
            "flags" => flags = u32::from_str_radix(value, 8).ok(),
            "ino" => info.ino = value.parse().unwrap_or(0),
            _ => {}
        }
    }
    info.flags = flags?;
    Some(info)
}

/// Bytes per second read through read-only remote descriptors between two scans `dt_ms` apart: the growth of each
/// descriptor's offset (the same descriptor on the same inode), and the whole offset of one opened since. Reads
/// by `pread` or through `mmap` move no offset and are not seen; a file opened and closed between scans neither.
#[must_use]
pub(crate) fn remote_read_rate(prev: &[RemoteRead], now: &[RemoteRead], dt_ms: u64) -> Option<u64> {
    if dt_ms == 0 {
        return None;
    }
    let mut bytes: u64 = 0;
    for read in now {
        let before = prev
            .binary_search_by_key(&read.fd, |r| r.fd)
            .ok()
            .map(|i| prev[i])
            .filter(|p| p.ino == read.ino && p.pos <= read.pos)
            .map_or(0, |p| p.pos);
        bytes = bytes.saturating_add(read.pos - before);
    }
    Some(bytes.saturating_mul(1000) / dt_ms)
}

/// How many remote descriptors of one process get their `fdinfo` read per scan, at most.
pub const MAX_FDINFO: usize = 64;

/// How many of a child's TCP connections are its own: not the same sockets as its parent's. A `DataLoader` worker
/// forked after `init_process_group` inherits the rank's store and NCCL bootstrap sockets; those are not the worker
/// reading over the network.
#[must_use]
pub(crate) fn own_connections(child: &[u64], parent: &[u64]) -> u32 {
    u32::try_from(child.iter().filter(|i| parent.binary_search(i).is_err()).count()).unwrap_or(u32::MAX)
}

/// Scans one process's open descriptors: regular files on remote file systems (with their open mode and offset
/// from `fdinfo`, for at most [`MAX_FDINFO`] of them) and TCP connections (TCP sockets by the kernel's word; where
/// it gives none, the established ones of `/proc/PID/net/tcp{,6}`).
/// `None` when the descriptors cannot be listed (another user's process without privilege).
pub(crate) fn scan_fds(proc_dir: &Path, pid: u32, buf: &mut Vec<u8>) -> Option<FdFacts> {
    let base = proc_dir.join(pid.to_string());
    let entries = std::fs::read_dir(base.join("fd")).ok()?;
    let mut files: Vec<(u32, String)> = Vec::new();
    let mut tcp_inodes: Vec<u64> = Vec::new();
    let mut unknown: Vec<u64> = Vec::new();
    for entry in entries.flatten().take(MAX_FDS) {
        let link = entry.path();
        let Ok(target) = std::fs::read_link(&link) else { continue };
        let Some(target) = target.to_str() else { continue };
        if let Some(inode) = socket_inode(target) {
            match socket_kind(&link) {
                SocketKind::Tcp => tcp_inodes.push(inode),
                SocketKind::Other => {}
                SocketKind::Unknown => unknown.push(inode),
            }
        } else if target.starts_with('/') && !target.starts_with("/dev/") && !target.ends_with(" (deleted)") {
            let fd = entry.file_name().to_str().and_then(|n| n.parse().ok()).unwrap_or(u32::MAX);
            files.push((fd, target.to_owned()));
        }
    }
    let (files, reads) = remote_files(&base, &files, buf);
    let mut out = files;
    if !unknown.is_empty() {
        let mut established = HashSet::new();
        for table in ["net/tcp", "net/tcp6"] {
            if let Ok(text) = read_text(&base.join(table), buf) {
                established.extend(parse_tcp_inodes(&text));
            }
        }
        tcp_inodes.extend(unknown.into_iter().filter(|s| established.contains(s)));
    }
    tcp_inodes.sort_unstable();
    tcp_inodes.dedup();
    out.tcp_connections = u32::try_from(tcp_inodes.len()).unwrap_or(u32::MAX);
    Some(FdFacts { files: out, tcp_inodes, reads })
}

/// The regular files among a process's descriptors that lie on remote file systems: how many, how many are open
/// read-only and for writing (from `fdinfo`), the mounts, and the read-only descriptors' offsets.
fn remote_files(base: &Path, files: &[(u32, String)], buf: &mut Vec<u8>) -> (RemoteFiles, Vec<RemoteRead>) {
    let mut out = RemoteFiles { modes_read: true, ..RemoteFiles::default() };
    let mut reads = Vec::new();
    if files.is_empty() {
        return (out, reads);
    }
    let mounts = read_text(&base.join("mountinfo"), buf).map(|t| parse_mountinfo(&t)).unwrap_or_default();
    let mut infos_read = 0;
    for (fd, file) in files {
        let Some(m) = mount_of(&mounts, file).filter(|m| is_remote_fs(&m.fs_type)) else { continue };
        if out.open == 0 {
            out.fs_type.clone_from(&m.fs_type);
            out.mount.clone_from(&m.point);
        }
        out.open += 1;
        if infos_read >= MAX_FDINFO {
            out.modes_read = false;
            continue;
        }
        infos_read += 1;
        let Some(info) = read_text(&base.join("fdinfo").join(fd.to_string()), buf).ok().and_then(|t| parse_fdinfo(&t))
        else {
            out.modes_read = false;
            continue;
        };
        if info.read_only() {
            if out.read_only == 0 {
                out.fs_type.clone_from(&m.fs_type);
                out.mount.clone_from(&m.point);
            }
            out.read_only += 1;
            reads.push(RemoteRead { fd: *fd, ino: info.ino, pos: info.pos });
        } else {
            if out.written == 0 {
                out.written_fs_type.clone_from(&m.fs_type);
                out.written_mount.clone_from(&m.point);
            }
            out.written += 1;
        }
    }
    reads.sort_unstable_by_key(|r| r.fd);
    (out, reads)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wchan_names() {
        assert_eq!(classify_wchan("sk_wait_data\n"), Wait::Socket);
        assert_eq!(classify_wchan("tcp_recvmsg_locked"), Wait::Socket);
        for fs in [
            "rpc_wait_bit_killable",
            "request_wait_answer",
            "fuse_dev_do_read",
            "nfs_wait_on_request",
            "ptlrpc_set_wait",
            "ll_file_read_iter",
            "ceph_mdsc_do_request",
            "p9_client_rpc",
            "cxiWaitEventWait",
            "cifs_wait_mtu_credits",
        ] {
            assert_eq!(classify_wchan(fs), Wait::FileSystem, "{fs}");
            assert!(classify_wchan(fs).is_remote());
        }
        for write in ["balance_dirty_pages", "folio_wait_writeback", "jbd2_log_wait_commit"] {
            assert_eq!(classify_wchan(write), Wait::Write, "{write}");
            assert!(!classify_wchan(write).is_remote(), "a write wait is not input over the network");
        }
        for local in ["futex_wait_queue", "do_poll.constprop.0", "ep_poll", "pipe_read", "wait_woken", "0", ""] {
            assert_eq!(classify_wchan(local), Wait::Other, "{local}");
        }
        let mut counts = WaitCounts::default();
        for wait in [Wait::Socket, Wait::FileSystem, Wait::Write, Wait::Other] {
            counts.add(wait);
        }
        assert_eq!(counts, WaitCounts { remote: 2, fs: 1, write: 1 });
    }

    #[test]
    fn the_file_systems_of_shared_clusters_are_remote() {
        for fs in [
            "nfs",
            "nfs4",
            "lustre",
            "cifs",
            "smb3",
            "gpfs",
            "beegfs",
            "fuse.beegfs",
            "ceph",
            "fuse.ceph-fuse",
            "wekafs",
            "virtiofs",
            "9p",
            "fuse.s3fs",
            "fuse.gcsfuse",
        ] {
            assert!(is_remote_fs(fs), "{fs}");
        }
        for fs in ["ext4", "xfs", "btrfs", "overlay", "tmpfs", "zfs"] {
            assert!(!is_remote_fs(fs), "{fs}");
        }
    }

    #[test]
    fn fdinfo_gives_the_mode_and_the_offset() {
        let read = parse_fdinfo("pos:\t1048576\nflags:\t0100000\nmnt_id:\t40\nino:\t77\n").expect("fdinfo");
        assert_eq!((read.pos, read.ino), (1_048_576, 77));
        assert!(read.read_only());
        // O_WRONLY | O_CREAT | O_APPEND | O_LARGEFILE: a log; O_RDWR: a checkpoint opened for update.
        assert!(!parse_fdinfo("pos:\t0\nflags:\t0102101\n").expect("log").read_only());
        assert!(!parse_fdinfo("pos:\t0\nflags:\t02\n").expect("rdwr").read_only());
        assert_eq!(parse_fdinfo("pos:\t3\n"), None, "no flags: not an fdinfo");
    }

    #[test]
    fn the_read_rate_follows_offsets_of_the_same_file() {
        let r = |fd, ino, pos| RemoteRead { fd, ino, pos };
        let before = [r(5, 100, 1_000), r(6, 200, 4_000), r(7, 300, 9_000)];
        // fd 5 read 4,000 more; fd 6 now holds another file (its whole offset counts); fd 7 was closed; fd 8 is new.
        let now = [r(5, 100, 5_000), r(6, 201, 2_000), r(8, 400, 1_000)];
        assert_eq!(remote_read_rate(&before, &now, 2_000), Some((4_000 + 2_000 + 1_000) / 2));
        // An offset that went back (a seek) counts from 0, never as a negative read.
        assert_eq!(remote_read_rate(&[r(5, 100, 9_000)], &[r(5, 100, 10)], 1_000), Some(10));
        assert_eq!(remote_read_rate(&before, &now, 0), None);
    }

    #[test]
    fn the_scan_tells_read_only_dataset_files_from_written_logs() {
        // A worker reading a shard on Lustre while stdout goes to slurm-42.out on the NFS home, and a local file.
        let dir = tempfile::tempdir().expect("temp dir");
        let proc_dir = dir.path();
        let base = proc_dir.join("100");
        std::fs::create_dir_all(base.join("fd")).expect("fd dir");
        std::fs::create_dir_all(base.join("fdinfo")).expect("fdinfo dir");
        std::fs::write(
            base.join("mountinfo"),
            "22 1 259:2 / / rw - ext4 /dev/nvme0n1p2 rw\n\
             40 22 0:45 / /home rw - nfs4 server:/home rw\n\
             41 22 0:46 / /lustre rw - lustre 10.0.0.1@o2ib:/fs rw\n",
        )
        .expect("mountinfo");
        for (fd, target, flags, pos) in [
            ("1", "/home/alice/slurm-42.out", "0102001", 512),
            ("3", "/lustre/imagenet/shard-0001.tar", "0100000", 8_192),
            ("4", "/tmp/local.txt", "0100000", 0),
        ] {
            std::os::unix::fs::symlink(target, base.join("fd").join(fd)).expect("fd link");
            std::fs::write(base.join("fdinfo").join(fd), format!("pos:\t{pos}\nflags:\t{flags}\nino:\t9{fd}\n"))
                .expect("fdinfo");
        }
        let found = scan_fds(proc_dir, 100, &mut Vec::new()).expect("scan");
        let files = &found.files;
        assert_eq!((files.open, files.read_only, files.written), (2, 1, 1), "{files:?}");
        assert!(files.modes_read);
        assert_eq!((files.mount.as_str(), files.fs_type.as_str()), ("/lustre", "lustre"), "the mount read from");
        assert_eq!((files.written_mount.as_str(), files.written_fs_type.as_str()), ("/home", "nfs4"));
        assert_eq!(found.reads, vec![RemoteRead { fd: 3, ino: 93, pos: 8_192 }]);
    }

    #[test]
    fn mountinfo_and_the_mount_of_a_path() {
        let text = "22 1 259:2 / / rw,relatime shared:1 - ext4 /dev/nvme0n1p2 rw\n\
                    40 22 0:45 / /mnt/data rw,relatime shared:20 - nfs4 server:/export rw,vers=4.2\n\
                    41 22 0:46 / /mnt/data\\040lake rw - fuse.s3fs s3fs rw\n\
                    42 40 259:3 / /mnt/data/local rw - xfs /dev/nvme1n1 rw\n";
        let mounts = parse_mountinfo(text);
        assert_eq!(mounts.len(), 4);
        assert_eq!(mounts[2].point, "/mnt/data lake");
        let fs = |p: &str| mount_of(&mounts, p).map(|m| m.fs_type.clone());
        assert_eq!(fs("/mnt/data/train/shard-0001.tar").as_deref(), Some("nfs4"));
        assert_eq!(fs("/mnt/data lake/x.jpg").as_deref(), Some("fuse.s3fs"));
        assert_eq!(fs("/mnt/data/local/x").as_deref(), Some("xfs"));
        assert_eq!(fs("/mnt/database").as_deref(), Some("ext4"), "a prefix counts only at a / boundary");
        assert!(is_remote_fs("nfs4") && is_remote_fs("fuse.gcsfuse") && is_remote_fs("lustre"));
        assert!(!is_remote_fs("ext4") && !is_remote_fs("xfs") && !is_remote_fs("overlay"));
    }

    #[test]
    fn tcp_tables_and_socket_links() {
        let table = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n\
             0: 0100007F:223D 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1111 1\n\
             1: 0100007F:C350 0100007F:223D 01 00000000:00000000 00:00000000 00000000     0        0 2222 1\n";
        let inodes = parse_tcp_inodes(table);
        assert!(inodes.contains(&2222) && !inodes.contains(&1111), "only established connections");
        assert_eq!(socket_inode("socket:[2222]"), Some(2222));
        assert_eq!(socket_inode("pipe:[5]"), None);
    }

    #[test]
    fn sockets_the_kernel_does_not_name_are_told_by_the_tcp_tables() {
        // A fixture tree's `socket:[N]` links point nowhere, so `system.sockprotoname` cannot be read: the scan
        // falls back to the established connections of net/tcp and net/tcp6 (a listening socket is not one).
        let dir = tempfile::tempdir().expect("temp dir");
        let proc_dir = dir.path();
        std::fs::create_dir_all(proc_dir.join("100/fd")).expect("fd dir");
        std::fs::create_dir_all(proc_dir.join("100/net")).expect("net dir");
        for (fd, target) in [("3", "socket:[2222]"), ("4", "socket:[1111]"), ("5", "socket:[3333]"), ("6", "pipe:[9]")]
        {
            std::os::unix::fs::symlink(target, proc_dir.join("100/fd").join(fd)).expect("fd link");
        }
        let row = |inode: u32, state: &str| {
            format!(
                "   0: 0100007F:C350 0100007F:223D {state} 00000000:00000000 00:00000000 00000000  0  0 {inode} 1\n"
            )
        };
        let header =
            "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n";
        std::fs::write(proc_dir.join("100/net/tcp"), format!("{header}{}{}", row(2222, "01"), row(1111, "0A")))
            .expect("tcp");
        std::fs::write(proc_dir.join("100/net/tcp6"), format!("{header}{}", row(3333, "01"))).expect("tcp6");
        let found = scan_fds(proc_dir, 100, &mut Vec::new()).expect("scan");
        assert_eq!(found.tcp_inodes, vec![2222, 3333]);
        assert_eq!(found.files.tcp_connections, 2);
    }

    #[test]
    fn a_child_counts_only_the_connections_it_did_not_inherit() {
        // A DataLoader worker forked after init_process_group holds its rank's store and NCCL sockets (the same
        // inodes) and, reading over HTTP, connections of its own.
        let parent = [11, 12, 13];
        assert_eq!(own_connections(&[11, 12, 13], &parent), 0, "inherited only");
        assert_eq!(own_connections(&[11, 12, 13, 40, 41], &parent), 2);
        assert_eq!(own_connections(&[40], &[]), 1, "a parent that holds none");
    }

    #[test]
    fn scanning_our_own_descriptors_finds_no_remote_files() {
        let proc_dir = Path::new("/proc");
        if !proc_dir.join("self/fd").exists() {
            return;
        }
        let mut buf = Vec::new();
        let found = scan_fds(proc_dir, std::process::id(), &mut buf).expect("own fds");
        assert_eq!(found.files.open, 0);
        assert_eq!(scan_fds(proc_dir, u32::MAX, &mut buf), None);
    }
}
