//! Does a GPU process serve requests? Its listening TCP sockets, the connections on their ports, and how many
//! connections it accepted since gpusight began watching it: an inference or HTTP server idles its GPU between
//! requests and is not an idle holder. Pure parsers over `&str`, and a bounded scan.
//!
//! Cost: one listing of `/proc/PID/fd` (at most [`MAX_FDS`] descriptors) and, only when the process holds a
//! socket, one read of `/proc/PID/net/tcp` and `tcp6` (the tables of its network namespace; a few milliseconds
//! where a host holds many connections). It runs for GPU processes that are not ranks of a job (a rank's store and
//! NCCL bootstrap listen too, and are no server), every [`SCAN_PERIOD_MS`] while the process listens and every
//! [`QUIET_SCAN_PERIOD_MS`] while it does not; its answer is carried in between. While it listens, its tables (and,
//! in a network namespace of its own, that namespace's `/proc/PID/net/snmp`) are read again every
//! [`ACCEPT_SCAN_PERIOD_MS`] to count the connections it accepted ([`AcceptCount`]).
//!
//! What a request leaves in the tables: its connection, established, for as long as it lasts; then, on the side
//! that closed first, a `TIME_WAIT` line for a minute. A server that closes first (HTTP/1.0, `Connection: close`)
//! keeps that line on its port, and any read within the minute sees the request. Where the client closes first
//! (most HTTP/1.1 and gRPC clients), the server's side is gone a round trip after the close, so a request shorter
//! than [`ACCEPT_SCAN_PERIOD_MS`] from such a client is seen only when a read falls inside it. In a network
//! namespace of its own (a container), `Tcp: PassiveOpens` counts every connection the namespace accepted, however
//! short, so nothing is missed there; in the host's namespace that counter is every process's and says nothing of
//! this one.

use std::path::Path;

use super::read_text;
use super::remote::socket_inode;
use crate::sample::Serving;

/// How many descriptors of one process the scan looks at, at most.
pub const MAX_FDS: usize = 1024;

/// How many listening ports are kept.
pub const MAX_PORTS: usize = 8;

/// How many connections' identities are kept between two reads of a process's tables, at most (a server with
/// more open at once has its new connections undercounted, never overcounted).
pub const MAX_TRACKED: usize = 4096;

/// How often a process that listens is scanned (the fd scan's period).
pub const SCAN_PERIOD_MS: u64 = super::remote::FD_SCAN_PERIOD_MS;

/// How often a process that did not listen at its last scan is scanned again (a server listens once its model is
/// loaded, and then for its whole life).
pub const QUIET_SCAN_PERIOD_MS: u64 = 30_000;

/// How often the TCP tables of a process that listens are read again to count the connections it accepted: every
/// second, so a request that lasts a second or more is seen whichever side closes first, and one that the server
/// closes is seen for the minute its `TIME_WAIT` line stays. Two small reads (three in a namespace of its own) a
/// second for each server; ranks of a job and processes that do not listen are not read.
pub const ACCEPT_SCAN_PERIOD_MS: u64 = 1_000;

/// A count due at the next tick is not put off by a tick that comes a little early.
pub const ACCEPT_SCAN_SLACK_MS: u64 = 250;

/// One line of `/proc/net/tcp{,6}`: the local port, the remote address and port, the state (hex, as the kernel
/// prints it) and the socket inode (0 for a connection in `TIME_WAIT`, which no descriptor holds any more).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TcpLine {
    pub local_port: u16,
    /// The remote address as the kernel prints it (hex, in its byte order): an identity, not for people.
    pub remote_addr: u128,
    pub remote_port: u16,
    pub state: u8,
    pub inode: u64,
}

/// `TCP_ESTABLISHED`, `TCP_SYN_SENT`, `TCP_SYN_RECV`, `TCP_TIME_WAIT`, `TCP_CLOSE_WAIT`, `TCP_LAST_ACK` and
/// `TCP_LISTEN` of `include/net/tcp_states.h`.
const ESTABLISHED: u8 = 0x01;
const SYN_SENT: u8 = 0x02;
const SYN_RECV: u8 = 0x03;
const TIME_WAIT: u8 = 0x06;
const CLOSE_WAIT: u8 = 0x08;
const LAST_ACK: u8 = 0x09;
const LISTEN: u8 = 0x0A;

/// "0A000009:D431" (IPv4) or 32 hex digits and a port (IPv6): the address and port.
fn endpoint(text: &str) -> Option<(u128, u16)> {
    let (addr, port) = text.rsplit_once(':')?;
    Some((u128::from_str_radix(addr, 16).ok()?, u16::from_str_radix(port, 16).ok()?))
}

/// Parses `/proc/PID/net/tcp` or `tcp6`: `sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode`.
#[must_use]
pub fn parse_tcp_table(text: &str) -> Vec<TcpLine> {
    text.lines()
        .skip(1)
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            let (_, local_port) = endpoint(fields.nth(1)?)?;
            let (remote_addr, remote_port) = endpoint(fields.next()?)?;
            let state = u8::from_str_radix(fields.next()?, 16).ok()?;
            let inode = fields.nth(5)?.parse().ok()?;
            Some(TcpLine { local_port, remote_addr, remote_port, state, inode })
        })
        .collect()
}

/// What the tables say of a process holding the socket inodes `own` (sorted): the ports it listens on, and the
/// connections on those ports that are its own or closed within the last minute. `None` when it listens on none.
/// `accepted` is left for the caller, which keeps the count between reads.
#[must_use]
pub fn serving_of(own: &[u64], lines: &[TcpLine]) -> Option<Serving> {
    let mut ports: Vec<u16> = lines
        .iter()
        .filter(|l| l.state == LISTEN && own.binary_search(&l.inode).is_ok())
        .map(|l| l.local_port)
        .collect();
    ports.sort_unstable();
    ports.dedup();
    ports.truncate(MAX_PORTS);
    if ports.is_empty() {
        return None;
    }
    let served = |l: &&TcpLine| match l.state {
        ESTABLISHED | CLOSE_WAIT | LAST_ACK => own.binary_search(&l.inode).is_ok(),
        TIME_WAIT => true,
        _ => false,
    };
    let connections = lines.iter().filter(|l| ports.binary_search(&l.local_port).is_ok()).filter(served).count();
    Some(Serving { ports, connections: u32::try_from(connections).unwrap_or(u32::MAX), accepted: None })
}

/// A connection's identity between two reads of the tables: its local port, the remote end, and its socket inode
/// (0 once it is in `TIME_WAIT`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct ConnId {
    pub local_port: u16,
    pub remote_addr: u128,
    pub remote_port: u16,
    pub inode: u64,
}

impl ConnId {
    fn ends(&self) -> (u16, u128, u16) {
        (self.local_port, self.remote_addr, self.remote_port)
    }
}

/// The connections on the listening `ports` (sorted), in any state a connection passes through once it was
/// accepted: not the listeners, and not a handshake still under way (`SYN_RECV`: nothing accepted yet). Every one
/// of them was accepted on that port, whichever descriptor holds it now (a worker's, or none in `TIME_WAIT`).
/// Sorted, at most [`MAX_TRACKED`].
#[must_use]
pub fn connections_on(ports: &[u16], lines: &[TcpLine]) -> Vec<ConnId> {
    let mut conns: Vec<ConnId> = lines
        .iter()
        .filter(|l| !matches!(l.state, LISTEN | SYN_SENT | SYN_RECV) && ports.binary_search(&l.local_port).is_ok())
        .map(|l| ConnId {
            local_port: l.local_port,
            remote_addr: l.remote_addr,
            remote_port: l.remote_port,
            inode: l.inode,
        })
        .collect();
    conns.sort_unstable();
    conns.dedup();
    conns.truncate(MAX_TRACKED);
    conns
}

/// How many connections of `now` were not there at the read before (`before`, sorted): the same ends with the
/// same inode are the same connection, and so are the same ends where one side has lost its inode (the connection
/// closed into `TIME_WAIT` between the reads); the same ends with another inode are a new connection.
#[must_use]
pub fn count_new(before: &[ConnId], now: &[ConnId]) -> u64 {
    let known = |c: &ConnId| {
        let from = before.partition_point(|b| b.ends() < c.ends());
        before[from..]
            .iter()
            .take_while(|b| b.ends() == c.ends())
            .any(|b| b.inode == c.inode || b.inode == 0 || c.inode == 0)
    };
    u64::try_from(now.iter().filter(|c| !known(c)).count()).unwrap_or(u64::MAX)
}

/// `Tcp: PassiveOpens` of `/proc/PID/net/snmp`: the connections the network namespace accepted since it was
/// created. The file holds a line of names and a line of values per protocol.
#[must_use]
pub fn parse_passive_opens(text: &str) -> Option<u64> {
    let mut tcp = text.lines().filter(|l| l.starts_with("Tcp:"));
    let (names, values) = (tcp.next()?, tcp.next()?);
    let at = names.split_whitespace().position(|n| n == "PassiveOpens")?;
    values.split_whitespace().nth(at)?.parse().ok()
}

/// The connections a listening process accepted since gpusight began watching it, counted read after read: the
/// identities not seen at the read before, and where the process has a network namespace of its own, the growth
/// of its `PassiveOpens`; each interval adds the larger of the two (the counter is exact where it can be read,
/// the identities catch what lasts across a read where it cannot).
#[derive(Debug, Clone, Default)]
pub struct AcceptCount {
    seen: Vec<ConnId>,
    passive_opens: Option<u64>,
    total: u64,
    /// Whether the process has a network namespace of its own, learned at its first read.
    own_netns: Option<bool>,
}

impl AcceptCount {
    /// Takes one read: the connections on the listening ports now, and the namespace's `PassiveOpens` when read.
    pub fn observe(&mut self, now: Vec<ConnId>, passive_opens: Option<u64>) {
        let by_identity = count_new(&self.seen, &now);
        let by_counter =
            self.passive_opens.zip(passive_opens).map_or(0, |(before, after)| after.saturating_sub(before));
        self.total = self.total.saturating_add(by_identity.max(by_counter));
        self.seen = now;
        if passive_opens.is_some() {
            self.passive_opens = passive_opens;
        }
    }

    /// The connections accepted since the first read.
    #[must_use]
    pub fn total(&self) -> u64 {
        self.total
    }

    /// `PassiveOpens` of the process's network namespace when it is not gpusight's own (a container's), else
    /// `None`: the host's counter counts every process's connections.
    fn namespace_opens(&mut self, proc_dir: &Path, base: &Path, buf: &mut Vec<u8>) -> Option<u64> {
        let own = *self.own_netns.get_or_insert_with(|| {
            let theirs = std::fs::read_link(base.join("ns/net"));
            let ours = std::fs::read_link(proc_dir.join("self/ns/net"));
            matches!((theirs, ours), (Ok(a), Ok(b)) if a != b)
        });
        if !own {
            return None;
        }
        read_text(&base.join("net/snmp"), buf).ok().as_deref().and_then(parse_passive_opens)
    }
}

/// Reads the TCP tables of `base`'s network namespace; `None` when neither can be read (the process is gone).
fn read_tables(base: &Path, buf: &mut Vec<u8>) -> Option<Vec<TcpLine>> {
    let mut lines = Vec::new();
    let mut any = false;
    for table in ["net/tcp", "net/tcp6"] {
        if let Ok(text) = read_text(&base.join(table), buf) {
            lines.extend(parse_tcp_table(&text));
            any = true;
        }
    }
    any.then_some(lines)
}

/// Scans one process: its socket descriptors, then its network namespace's TCP tables, and counts what it
/// accepted into `count`. `None` when it holds no socket, listens on none, or its descriptors cannot be listed.
pub(crate) fn scan(proc_dir: &Path, pid: u32, buf: &mut Vec<u8>, count: &mut AcceptCount) -> Option<Serving> {
    let base = proc_dir.join(pid.to_string());
    let entries = std::fs::read_dir(base.join("fd")).ok()?;
    let mut own: Vec<u64> = entries
        .flatten()
        .take(MAX_FDS)
        .filter_map(|e| std::fs::read_link(e.path()).ok())
        .filter_map(|target| target.to_str().and_then(socket_inode))
        .collect();
    if own.is_empty() {
        return None;
    }
    own.sort_unstable();
    let lines = read_tables(&base, buf).unwrap_or_default();
    let mut serving = serving_of(&own, &lines)?;
    let opens = count.namespace_opens(proc_dir, &base, buf);
    count.observe(connections_on(&serving.ports, &lines), opens);
    serving.accepted = Some(count.total());
    Some(serving)
}

/// Reads a listening process's tables again between scans and counts the connections it accepted on `ports`
/// into `count`; nothing is counted when its tables cannot be read.
pub(crate) fn recount(proc_dir: &Path, pid: u32, ports: &[u16], buf: &mut Vec<u8>, count: &mut AcceptCount) {
    let base = proc_dir.join(pid.to_string());
    let Some(lines) = read_tables(&base, buf) else { return };
    let opens = count.namespace_opens(proc_dir, &base, buf);
    count.observe(connections_on(ports, &lines), opens);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A server on port 8000 (0x1F40) with one request in flight and one closed a few seconds ago, a client
    /// connection of its own to a database, and another process's listener on port 22.
    const TABLE: &str = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000:1F40 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 5001 1 0000000000000000 100 0 0 10 0
   1: 00000000:0016 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4000 1 0000000000000000 100 0 0 10 0
   2: 0A000002:1F40 0A000009:D431 01 00000000:00000000 00:00000000 00000000  1000        0 5002 1 0000000000000000 20 4 30 10 -1
   3: 0A000002:1F40 0A000009:D40F 06 00000000:00000000 03:00001234 00000000     0        0 0 3 0000000000000000
   4: 0A000002:A1B2 0A000007:1538 01 00000000:00000000 00:00000000 00000000  1000        0 5003 1 0000000000000000 20 4 30 10 -1
";

    /// `/proc/net/snmp` as the kernel writes it, cut to its IP and TCP lines.
    fn snmp(passive_opens: u64) -> String {
        format!(
            "Ip: Forwarding DefaultTTL InReceives\nIp: 1 64 12345\n\
             Tcp: RtoAlgorithm RtoMin RtoMax MaxConn ActiveOpens PassiveOpens AttemptFails EstabResets CurrEstab\n\
             Tcp: 1 200 120000 -1 17 {passive_opens} 0 2 1\n"
        )
    }

    fn conn(local_port: u16, remote_port: u16, inode: u64) -> ConnId {
        ConnId { local_port, remote_addr: 0x0A00_0009, remote_port, inode }
    }

    #[test]
    fn a_server_is_its_listening_ports_and_the_connections_on_them() {
        let lines = parse_tcp_table(TABLE);
        assert_eq!(lines.len(), 5);
        assert_eq!(lines[0], TcpLine { local_port: 8000, remote_addr: 0, remote_port: 0, state: LISTEN, inode: 5001 });
        assert_eq!((lines[2].remote_addr, lines[2].remote_port), (0x0A00_0009, 0xD431));
        let serving = serving_of(&[5001, 5002, 5003], &lines).expect("listens");
        assert_eq!(serving, Serving { ports: vec![8000], connections: 2, accepted: None });
        // Another process's listener is not ours; a process with only client connections serves nothing.
        assert_eq!(serving_of(&[5003], &lines), None);
        assert_eq!(serving_of(&[], &lines), None);
        // Idle: listening, no connection.
        let quiet = serving_of(&[5001], &lines[..2]).expect("listens");
        assert_eq!(quiet.connections, 0);
    }

    #[test]
    fn ipv6_lines_give_their_remote_end() {
        let table = "  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000000000000:1F40 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 6001 1 0000000000000000 100 0 0 10 0
   1: 0000000000000000FFFF00000200000A:1F40 0000000000000000FFFF00000900000A:C350 01 00000000:00000000 00:00000000 00000000  1000        0 6002 1 0000000000000000 20 4 30 10 -1
";
        let lines = parse_tcp_table(table);
        assert_eq!(lines.len(), 2);
        assert_eq!((lines[1].local_port, lines[1].remote_port, lines[1].inode), (8000, 50_000, 6002));
        assert_eq!(lines[1].remote_addr, 0x0000_0000_0000_0000_FFFF_0000_0900_000A);
        assert_eq!(connections_on(&[8000], &lines).len(), 1, "the listener is no connection");
    }

    #[test]
    fn connections_on_the_listening_ports_are_every_accepted_state_but_a_handshake() {
        let mut lines = parse_tcp_table(TABLE);
        // A handshake under way (SYN_RECV) is nothing accepted yet; a connection the server closed first waits in
        // FIN_WAIT2 (0x05) with no descriptor.
        lines.push(TcpLine { local_port: 8000, remote_addr: 1, remote_port: 1, state: SYN_RECV, inode: 0 });
        lines.push(TcpLine { local_port: 8000, remote_addr: 2, remote_port: 2, state: 0x05, inode: 0 });
        let conns = connections_on(&[8000], &lines);
        let ends: Vec<(u128, u16)> = conns.iter().map(|c| (c.remote_addr, c.remote_port)).collect();
        assert_eq!(ends, vec![(2, 2), (0x0A00_0009, 0xD40F), (0x0A00_0009, 0xD431)]);
        assert!(connections_on(&[22], &lines).is_empty(), "a port with no connection");
    }

    #[test]
    fn a_connection_is_counted_once_across_reads() {
        let first = vec![conn(8000, 1, 11), conn(8000, 2, 12)];
        assert_eq!(count_new(&[], &first), 2, "what is there at the first read was seen");
        // At the next read: 1 is the same, 2 closed into TIME_WAIT (its inode gone), 3 is new.
        let second = vec![conn(8000, 1, 11), conn(8000, 2, 0), conn(8000, 3, 13)];
        assert_eq!(count_new(&first, &second), 1);
        // The same ends with another inode: the client reused its port for a new connection.
        let third = vec![conn(8000, 1, 21)];
        assert_eq!(count_new(&second, &third), 1);
        // A connection gone between reads is not counted again; nothing at all is no new connection.
        assert_eq!(count_new(&third, &[]), 0);
    }

    #[test]
    fn passive_opens_are_read_from_the_snmp_file() {
        assert_eq!(parse_passive_opens(&snmp(42)), Some(42));
        assert_eq!(parse_passive_opens("Ip: Forwarding\nIp: 1\n"), None, "no TCP lines");
        assert_eq!(parse_passive_opens("Tcp: ActiveOpens\nTcp: 3\n"), None, "no such column");
        assert_eq!(parse_passive_opens("Tcp: PassiveOpens\n"), None, "no values");
    }

    #[test]
    fn each_interval_adds_the_larger_of_the_new_identities_and_the_counter() {
        let mut count = AcceptCount::default();
        count.observe(vec![conn(8000, 1, 11)], Some(100));
        assert_eq!(count.total(), 1, "the first read counts what it sees; the counter is its baseline");
        // Three short requests came and went between reads: only the counter saw them.
        count.observe(vec![conn(8000, 1, 11)], Some(103));
        assert_eq!(count.total(), 4);
        // Without the counter (the host's namespace), the new identities.
        count.observe(vec![conn(8000, 1, 11), conn(8000, 5, 15)], None);
        assert_eq!(count.total(), 5);
        // The counter is kept from its last read: the growth since then counts once.
        count.observe(vec![conn(8000, 5, 15)], Some(105));
        assert_eq!(count.total(), 7);
    }

    #[test]
    fn the_reading_is_recorded_and_old_recordings_read_without_it() {
        let process = crate::sample::HostProcess {
            pid: 7,
            serving: Some(Serving { ports: vec![8000], connections: 3, accepted: Some(12) }),
            ..Default::default()
        };
        let line = serde_json::to_string(&process).expect("json");
        assert!(line.contains(r#""serving":{"ports":[8000],"connections":3,"accepted":12}"#), "{line}");
        let back: crate::sample::HostProcess = serde_json::from_str(&line).expect("reads");
        assert_eq!(back, process);
        let old: crate::sample::HostProcess = serde_json::from_str(r#"{"pid":7,"name":"python"}"#).expect("old");
        assert_eq!(old.serving, None);
        let before_accepted: crate::sample::HostProcess =
            serde_json::from_str(r#"{"pid":7,"serving":{"ports":[8000],"connections":3}}"#).expect("older");
        assert_eq!(before_accepted.serving.and_then(|s| s.accepted), None);
        let none = serde_json::to_string(&crate::sample::HostProcess::default()).expect("json");
        assert!(!none.contains("serving"), "{none}");
        let unread =
            serde_json::to_string(&Serving { ports: vec![8000], connections: 0, accepted: None }).expect("json");
        assert!(!unread.contains("accepted"), "{unread}");
    }

    #[test]
    fn malformed_lines_are_skipped() {
        assert!(parse_tcp_table("header\n  0: nonsense\n\n").is_empty());
        assert!(parse_tcp_table("header\n  0: 00000000:1F40 nonsense 0A 0 0 0 0 0 5001\n").is_empty());
    }

    /// A fixture `/proc` with PID 42 holding sockets 5001 and 5002 and the tables of `TABLE`, in the network
    /// namespace `netns` (gpusight's own is `net:[1]`).
    fn fixture(netns: &str) -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("temp dir");
        let proc_dir = dir.path().join("proc");
        for sub in ["42/fd", "42/net", "42/ns", "self/ns"] {
            std::fs::create_dir_all(proc_dir.join(sub)).expect("dir");
        }
        std::os::unix::fs::symlink("socket:[5001]", proc_dir.join("42/fd/3")).expect("link");
        std::os::unix::fs::symlink("socket:[5002]", proc_dir.join("42/fd/4")).expect("link");
        std::os::unix::fs::symlink(netns, proc_dir.join("42/ns/net")).expect("link");
        std::os::unix::fs::symlink("net:[1]", proc_dir.join("self/ns/net")).expect("link");
        std::fs::write(proc_dir.join("42/net/tcp"), TABLE).expect("tcp");
        std::fs::write(proc_dir.join("42/net/snmp"), snmp(500)).expect("snmp");
        dir
    }

    #[test]
    fn a_fixture_process_with_a_listening_socket_is_found() {
        let dir = fixture("net:[1]");
        let proc_dir = dir.path().join("proc");
        let (mut buf, mut count) = (Vec::new(), AcceptCount::default());
        let found = scan(&proc_dir, 42, &mut buf, &mut count);
        assert_eq!(found, Some(Serving { ports: vec![8000], connections: 2, accepted: Some(2) }));
        // In gpusight's own namespace the counter is the host's: a request that came and went between reads
        // leaves nothing, one that the server closed first leaves its TIME_WAIT line.
        std::fs::write(proc_dir.join("42/net/snmp"), snmp(900)).expect("snmp");
        recount(&proc_dir, 42, &[8000], &mut buf, &mut count);
        assert_eq!(count.total(), 2);
        let closed =
            "   5: 0A000002:1F40 0A000009:C001 06 00000000:00000000 03:00001234 00000000     0        0 0 3 0\n";
        std::fs::write(proc_dir.join("42/net/tcp"), format!("{TABLE}{closed}")).expect("tcp");
        recount(&proc_dir, 42, &[8000], &mut buf, &mut count);
        assert_eq!(count.total(), 3);
        // A process that is gone counts nothing.
        recount(&proc_dir, 43, &[8000], &mut buf, &mut count);
        assert_eq!(count.total(), 3);
    }

    #[test]
    fn in_a_namespace_of_its_own_passive_opens_count_what_no_read_saw() {
        let dir = fixture("net:[4026532999]");
        let proc_dir = dir.path().join("proc");
        let (mut buf, mut count) = (Vec::new(), AcceptCount::default());
        let found = scan(&proc_dir, 42, &mut buf, &mut count).expect("listens");
        assert_eq!(found.accepted, Some(2));
        // Five short requests between two reads, gone before either: the namespace counted them.
        std::fs::write(proc_dir.join("42/net/snmp"), snmp(505)).expect("snmp");
        recount(&proc_dir, 42, &[8000], &mut buf, &mut count);
        assert_eq!(count.total(), 7);
        // An unreadable counter keeps its last value: the growth since then counts at the next read.
        std::fs::remove_file(proc_dir.join("42/net/snmp")).expect("rm");
        recount(&proc_dir, 42, &[8000], &mut buf, &mut count);
        assert_eq!(count.total(), 7);
        std::fs::write(proc_dir.join("42/net/snmp"), snmp(506)).expect("snmp");
        let found = scan(&proc_dir, 42, &mut buf, &mut count).expect("listens");
        assert_eq!(found.accepted, Some(8));
    }
}
