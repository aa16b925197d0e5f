//! Does a GPU process serve requests? Its listening TCP sockets and the connections on their ports: an inference
//! or HTTP server idles its GPU between requests and is not an idle holder. Pure parsers over `&str`, and a
//! bounded scan.
//!
//! Cost: one listing of `/proc/PID/fd` (at most [`MAX_FDS`] descriptors) and, only when the process holds a
//! socket, one read of `/proc/PID/net/tcp` and `tcp6` (the tables of its network namespace; a few milliseconds
//! where a host holds many connections). It runs for GPU processes that are not ranks of a job (a rank's store and
//! NCCL bootstrap listen too, and are no server), every [`SCAN_PERIOD_MS`] while the process listens and every
//! [`QUIET_SCAN_PERIOD_MS`] while it does not; its answer is carried in between.

use std::path::Path;

use super::read_text;
use super::remote::socket_inode;
use crate::sample::Serving;

/// How many descriptors of one process the scan looks at, at most.
pub const MAX_FDS: usize = 1024;

/// How many listening ports are kept.
pub const MAX_PORTS: usize = 8;

/// How often a process that listens is scanned (the fd scan's period).
pub const SCAN_PERIOD_MS: u64 = super::remote::FD_SCAN_PERIOD_MS;

/// How often a process that did not listen at its last scan is scanned again (a server listens once its model is
/// loaded, and then for its whole life).
pub const QUIET_SCAN_PERIOD_MS: u64 = 30_000;

/// One line of `/proc/net/tcp{,6}`: the local port, the state (hex, as the kernel prints it) and the socket inode
/// (0 for a connection in `TIME_WAIT`, which no descriptor holds any more).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TcpLine {
    pub local_port: u16,
    pub state: u8,
    pub inode: u64,
}

/// `TCP_ESTABLISHED`, `TCP_TIME_WAIT`, `TCP_CLOSE_WAIT`, `TCP_LAST_ACK` and `TCP_LISTEN` of `include/net/tcp_states.h`.
const ESTABLISHED: u8 = 0x01;
const TIME_WAIT: u8 = 0x06;
const CLOSE_WAIT: u8 = 0x08;
const LAST_ACK: u8 = 0x09;
const LISTEN: u8 = 0x0A;

/// Parses `/proc/PID/net/tcp` or `tcp6`: `sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode`.
#[must_use]
pub fn parse_tcp_table(text: &str) -> Vec<TcpLine> {
    text.lines()
        .skip(1)
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            let local = fields.nth(1)?;
            let state = u8::from_str_radix(fields.nth(1)?, 16).ok()?;
            let inode = fields.nth(5)?.parse().ok()?;
            let port = u16::from_str_radix(local.rsplit_once(':')?.1, 16).ok()?;
            Some(TcpLine { local_port: port, state, inode })
        })
        .collect()
}

/// What the tables say of a process holding the socket inodes `own` (sorted): the ports it listens on, and the
/// connections on those ports that are its own or closed within the last minute. `None` when it listens on none.
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
    Some(Serving { ports, connections: u32::try_from(connections).unwrap_or(u32::MAX) })
}

/// Scans one process: its socket descriptors, then its network namespace's TCP tables. `None` when it holds no
/// socket, listens on none, or its descriptors cannot be listed.
pub(crate) fn scan(proc_dir: &Path, pid: u32, buf: &mut Vec<u8>) -> Option<Serving> {
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
    let mut lines = Vec::new();
    for table in ["net/tcp", "net/tcp6"] {
        if let Ok(text) = read_text(&base.join(table), buf) {
            lines.extend(parse_tcp_table(&text));
        }
    }
    serving_of(&own, &lines)
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

    #[test]
    fn a_server_is_its_listening_ports_and_the_connections_on_them() {
        let lines = parse_tcp_table(TABLE);
        assert_eq!(lines.len(), 5);
        assert_eq!(lines[0], TcpLine { local_port: 8000, state: LISTEN, inode: 5001 });
        let serving = serving_of(&[5001, 5002, 5003], &lines).expect("listens");
        assert_eq!(serving, Serving { ports: vec![8000], connections: 2 });
        // Another process's listener is not ours; a process with only client connections serves nothing.
        assert_eq!(serving_of(&[5003], &lines), None);
        assert_eq!(serving_of(&[], &lines), None);
        // Idle: listening, no connection.
        let quiet = serving_of(&[5001], &lines[..2]).expect("listens");
        assert_eq!(quiet.connections, 0);
    }

    #[test]
    fn the_reading_is_recorded_and_old_recordings_read_without_it() {
        let process = crate::sample::HostProcess {
            pid: 7,
            serving: Some(Serving { ports: vec![8000], connections: 3 }),
            ..Default::default()
        };
        let line = serde_json::to_string(&process).expect("json");
        assert!(line.contains(r#""serving":{"ports":[8000],"connections":3}"#), "{line}");
        let back: crate::sample::HostProcess = serde_json::from_str(&line).expect("reads");
        assert_eq!(back, process);
        let old: crate::sample::HostProcess = serde_json::from_str(r#"{"pid":7,"name":"python"}"#).expect("old");
        assert_eq!(old.serving, None);
        let none = serde_json::to_string(&crate::sample::HostProcess::default()).expect("json");
        assert!(!none.contains("serving"), "{none}");
    }

    #[test]
    fn malformed_lines_are_skipped() {
        assert!(parse_tcp_table("header\n  0: nonsense\n\n").is_empty());
    }

    #[test]
    fn a_fixture_process_with_a_listening_socket_is_found() {
        let dir = std::env::temp_dir().join(format!("gpusight-serving-{}", std::process::id()));
        let fd = dir.join("proc/42/fd");
        let net = dir.join("proc/42/net");
        std::fs::create_dir_all(&fd).expect("fd dir");
        std::fs::create_dir_all(&net).expect("net dir");
        std::os::unix::fs::symlink("socket:[5001]", fd.join("3")).expect("link");
        std::os::unix::fs::symlink("socket:[5002]", fd.join("4")).expect("link");
        std::fs::write(net.join("tcp"), TABLE).expect("tcp");
        let mut buf = Vec::new();
        let found = scan(&dir.join("proc"), 42, &mut buf);
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(found, Some(Serving { ports: vec![8000], connections: 2 }));
    }
}
