//! Network throughput: each interface of `/proc/net/dev` (loopback left out) and each InfiniBand port's data
//! counters (`/sys/class/infiniband/DEV/ports/N/counters/port_{rcv,xmit}_data`), read every tick and turned into
//! rates against the previous read.
//!
//! A tick reads one small file plus two per InfiniBand port. What does not change from tick to tick is learned once:
//! an interface's kind (whether `/sys/class/net/IFACE/device` exists) when the interface is first seen, and the list
//! of ports every [`PORT_LIST_PERIOD_MS`]. `/proc/net/dev` lists the interfaces of gpusight's network namespace: in
//! a container with a namespace of its own, the container's.

use std::path::{Path, PathBuf};

use super::parse::{parse_ib_data_bytes, parse_net_dev};
use super::system::seconds_between;
use super::{HostRoot, read_text};
use crate::fast_map::FastMap;
use crate::sample::{NetKind, NetRate, UnixMs};

/// How often the InfiniBand devices and their ports are listed again: they change only when an adapter or a
/// virtual function comes or goes, and listing them is two directory reads a device.
pub const PORT_LIST_PERIOD_MS: UnixMs = 60_000;

/// The loopback interface, left out: its traffic never leaves the host.
const LOOPBACK: &str = "lo";

/// One InfiniBand port and the paths of its two data counters.
#[derive(Debug)]
struct IbPort {
    /// `DEV/PORT`, as the tick names it.
    name: String,
    rcv: PathBuf,
    xmit: PathBuf,
}

/// The previous read of one interface or port.
#[derive(Debug)]
struct Counters {
    kind: NetKind,
    rx_bytes: u64,
    tx_bytes: u64,
    /// The read that saw it last; an entry not seen by the latest read is forgotten.
    read: u64,
}

/// Reads the network counters each tick and keeps the previous read's, so the second tick on has rates.
#[derive(Debug)]
pub struct NetSampler {
    /// `/proc/net/dev`, `/sys/class/net` and `/sys` (where the InfiniBand ports are listed).
    net_dev: PathBuf,
    class_net: PathBuf,
    sys_dir: PathBuf,
    prev: FastMap<String, Counters>,
    prev_at_ms: Option<UnixMs>,
    /// How many reads were made; marks which entries the latest read saw.
    reads: u64,
    ports: Vec<IbPort>,
    ports_listed_at_ms: Option<UnixMs>,
    buf: Vec<u8>,
}

impl NetSampler {
    /// A sampler of the files under `root`.
    #[must_use]
    pub fn new(root: &HostRoot) -> Self {
        Self {
            net_dev: root.proc_dir.join("net/dev"),
            class_net: root.sys_dir.join("class/net"),
            sys_dir: root.sys_dir.clone(),
            prev: FastMap::default(),
            prev_at_ms: None,
            reads: 0,
            ports: Vec::new(),
            ports_listed_at_ms: None,
            buf: Vec::with_capacity(4096),
        }
    }

    /// Reads every interface and port at `now_ms` and returns their rates since the previous call: empty on the
    /// first call; an interface or port that is new, or whose counter went backwards or wrapped, has no rate this
    /// tick. At most [`NetRate::MAX_LISTED`], the busiest (received plus sent) first, ties by name.
    pub fn sample(&mut self, now_ms: UnixMs) -> Vec<NetRate> {
        let dt_s = self.prev_at_ms.and_then(|at| seconds_between(at, now_ms));
        self.reads += 1;
        let read = self.reads;
        let mut rates = Vec::new();
        let Self { prev, buf, net_dev, class_net, .. } = self;
        if let Ok(text) = read_text(net_dev, buf) {
            for dev in parse_net_dev(&text).into_iter().filter(|d| d.name != LOOPBACK) {
                let kind = || netdev_kind(class_net, dev.name);
                rates.extend(advance(prev, read, (dev.name, kind), (dev.rx_bytes, dev.tx_bytes), dt_s));
            }
        }
        let listed = self.ports_listed_at_ms.is_some_and(|at| now_ms.saturating_sub(at) < PORT_LIST_PERIOD_MS);
        if !listed {
            self.ports = list_ib_ports(&self.sys_dir);
            self.ports_listed_at_ms = Some(now_ms);
        }
        for port in &self.ports {
            let mut counter = |path: &Path| read_text(path, &mut self.buf).ok().and_then(|t| parse_ib_data_bytes(&t));
            let (Some(rx), Some(tx)) = (counter(&port.rcv), counter(&port.xmit)) else { continue };
            let kind = || NetKind::Infiniband;
            rates.extend(advance(&mut self.prev, read, (port.name.as_str(), kind), (rx, tx), dt_s));
        }
        self.prev.retain(|_, c| c.read == read);
        self.prev_at_ms = Some(now_ms);
        rates.sort_by(|a, b| total(b).cmp(&total(a)).then_with(|| a.name.cmp(&b.name)));
        rates.truncate(NetRate::MAX_LISTED);
        rates
    }
}

/// Received plus sent, the order of the bound.
fn total(rate: &NetRate) -> u64 {
    rate.rx_bytes_per_s.saturating_add(rate.tx_bytes_per_s)
}

/// Keeps one interface's or port's counters for the next read and gives its rate against the previous read, if
/// that read saw it and both counters moved forward. `kind` is asked only for an entry seen for the first time.
fn advance(
    prev: &mut FastMap<String, Counters>,
    read: u64,
    (name, kind): (&str, impl FnOnce() -> NetKind),
    (rx_bytes, tx_bytes): (u64, u64),
    dt_s: Option<f64>,
) -> Option<NetRate> {
    let Some(before) = prev.get_mut(name) else {
        prev.insert(name.to_owned(), Counters { kind: kind(), rx_bytes, tx_bytes, read });
        return None;
    };
    let rate = dt_s.and_then(|dt_s| {
        Some(NetRate {
            name: name.to_owned(),
            kind: before.kind,
            rx_bytes_per_s: per_second(rx_bytes.checked_sub(before.rx_bytes)?, dt_s),
            tx_bytes_per_s: per_second(tx_bytes.checked_sub(before.tx_bytes)?, dt_s),
        })
    });
    (before.rx_bytes, before.tx_bytes, before.read) = (rx_bytes, tx_bytes, read);
    rate
}

/// Bytes a second, rounded.
#[expect(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::cast_precision_loss,
    reason = "a byte rate: positive and far below u64::MAX"
)]
fn per_second(bytes: u64, dt_s: f64) -> u64 {
    (bytes as f64 / dt_s).round() as u64
}

/// An interface is backed by a device when `/sys/class/net/IFACE/device` exists (a link to its PCI or USB device);
/// bridges, veth pairs, `docker0`, bonds and tunnels have none.
fn netdev_kind(class_net: &Path, name: &str) -> NetKind {
    if std::fs::symlink_metadata(class_net.join(name).join("device")).is_ok() {
        NetKind::Ethernet
    } else {
        NetKind::Virtual
    }
}

/// The InfiniBand ports under `sys/class/infiniband`, sorted by device and port; none when the directory is absent.
fn list_ib_ports(sys_dir: &Path) -> Vec<IbPort> {
    let Ok(devices) = std::fs::read_dir(sys_dir.join("class/infiniband")) else { return Vec::new() };
    let mut ports = Vec::new();
    for device in devices.flatten() {
        let Some(dev) = device.file_name().to_str().map(str::to_owned) else { continue };
        let Ok(entries) = std::fs::read_dir(device.path().join("ports")) else { continue };
        for entry in entries.flatten() {
            let Some(port) = entry.file_name().to_str().and_then(|p| p.parse::<u32>().ok()) else { continue };
            let counters = entry.path().join("counters");
            ports.push(IbPort {
                name: format!("{dev}/{port}"),
                rcv: counters.join("port_rcv_data"),
                xmit: counters.join("port_xmit_data"),
            });
        }
    }
    ports.sort_by(|a, b| a.name.cmp(&b.name));
    ports
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, rel: &str, text: &str) {
        let path = dir.join(rel);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    }

    fn net_dev(lines: &[(&str, u64, u64)]) -> String {
        use std::fmt::Write as _;
        let mut text = String::from(
            "Inter-|   Receive                                                |  Transmit\n \
             face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls \
             carrier compressed\n",
        );
        for (name, rx, tx) in lines {
            let _ = writeln!(text, "{name:>6}: {rx} 10 0 0 0 0 0 0 {tx} 10 0 0 0 0 0 0");
        }
        text
    }

    fn rate<'a>(rates: &'a [NetRate], name: &str) -> &'a NetRate {
        rates.iter().find(|r| r.name == name).unwrap_or_else(|| panic!("{name} missing from {rates:?}"))
    }

    #[test]
    fn interfaces_and_ports_get_rates_from_the_second_read() {
        let dir = tempfile::tempdir().expect("tempdir");
        let d = dir.path();
        let root = HostRoot::under(d);
        write(d, "proc/net/dev", &net_dev(&[("lo", 5, 5), ("eth0", 1_000, 2_000), ("br0", 0, 0)]));
        write(d, "sys/class/net/eth0/device/vendor", "0x15b3\n");
        write(d, "sys/class/net/br0/bridge/stp_state", "0\n");
        write(d, "sys/class/infiniband/mlx5_0/ports/1/counters/port_rcv_data", "1000\n");
        write(d, "sys/class/infiniband/mlx5_0/ports/1/counters/port_xmit_data", "2000\n");
        let mut net = NetSampler::new(&root);
        assert!(net.sample(10_000).is_empty(), "rates need two reads");

        // 2 s later: eth0 received 4 MB and sent 1 MB; the port moved 1 M and 2 M words (4 and 8 MB).
        write(d, "proc/net/dev", &net_dev(&[("lo", 9, 9), ("eth0", 4_001_000, 1_002_000), ("br0", 100, 0)]));
        write(d, "sys/class/infiniband/mlx5_0/ports/1/counters/port_rcv_data", "1001000\n");
        write(d, "sys/class/infiniband/mlx5_0/ports/1/counters/port_xmit_data", "2002000\n");
        let rates = net.sample(12_000);
        let names: Vec<&str> = rates.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, vec!["mlx5_0/1", "eth0", "br0"], "busiest first, loopback left out");
        let ib = rate(&rates, "mlx5_0/1");
        assert_eq!((ib.kind, ib.rx_bytes_per_s, ib.tx_bytes_per_s), (NetKind::Infiniband, 2_000_000, 4_000_000));
        let eth = rate(&rates, "eth0");
        assert_eq!((eth.kind, eth.rx_bytes_per_s, eth.tx_bytes_per_s), (NetKind::Ethernet, 2_000_000, 500_000));
        assert_eq!(rate(&rates, "br0").kind, NetKind::Virtual);

        // eth0's counter wrapped (a 32-bit kernel) and the port's went back (a reset): no rate for either this
        // tick, and the next tick measures from the new values.
        write(d, "proc/net/dev", &net_dev(&[("eth0", 500, 1_002_100), ("br0", 100, 0)]));
        write(d, "sys/class/infiniband/mlx5_0/ports/1/counters/port_rcv_data", "10\n");
        let rates = net.sample(13_000);
        let names: Vec<&str> = rates.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, vec!["br0"]);
        write(d, "proc/net/dev", &net_dev(&[("eth0", 1_500, 1_002_100), ("br0", 100, 0)]));
        let rates = net.sample(14_000);
        assert_eq!(rate(&rates, "eth0").rx_bytes_per_s, 1_000);
        assert_eq!(rate(&rates, "mlx5_0/1").rx_bytes_per_s, 0);
    }

    #[test]
    fn the_list_keeps_the_busiest_sixteen_and_forgets_what_left() {
        let dir = tempfile::tempdir().expect("tempdir");
        let d = dir.path();
        let root = HostRoot::under(d);
        let names: Vec<String> = (0..20).map(|i| format!("veth{i:02}")).collect();
        let lines = |scale: u64| -> Vec<(&str, u64, u64)> {
            names.iter().enumerate().map(|(i, n)| (n.as_str(), scale * i as u64, 0)).collect()
        };
        write(d, "proc/net/dev", &net_dev(&lines(0)));
        let mut net = NetSampler::new(&root);
        net.sample(1_000);
        write(d, "proc/net/dev", &net_dev(&lines(1_000)));
        let rates = net.sample(2_000);
        assert_eq!(rates.len(), NetRate::MAX_LISTED);
        assert_eq!((rates[0].name.as_str(), rates[0].rx_bytes_per_s), ("veth19", 19_000));
        assert_eq!(rates[15].name, "veth04", "the four quietest are left out");

        // veth19 goes away and comes back: it is new again, with no rate on its first read back.
        write(d, "proc/net/dev", &net_dev(&lines(1_000)[..19]));
        net.sample(3_000);
        write(d, "proc/net/dev", &net_dev(&lines(2_000)));
        let rates = net.sample(4_000);
        assert!(rates.iter().all(|r| r.name != "veth19"), "{rates:?}");
        write(d, "proc/net/dev", &net_dev(&lines(3_000)));
        assert_eq!(net.sample(5_000)[0].name, "veth19", "measured again");
    }

    #[test]
    fn no_files_no_rates() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = HostRoot::under(dir.path());
        let mut net = NetSampler::new(&root);
        assert!(net.sample(1_000).is_empty());
        assert!(net.sample(2_000).is_empty());
        // A saturated 32-bit port counter is not a reading.
        write(dir.path(), "sys/class/infiniband/mlx4_0/ports/1/counters/port_rcv_data", "4294967295\n");
        write(dir.path(), "sys/class/infiniband/mlx4_0/ports/1/counters/port_xmit_data", "5\n");
        let mut net = NetSampler::new(&root);
        net.sample(1_000);
        assert!(net.sample(2_000).is_empty());
    }
}
