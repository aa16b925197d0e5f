//! Pure parsers over the text of system-wide /proc and sysfs files (`/proc/stat`, `/proc/meminfo`,
//! `/proc/vmstat`, `/proc/loadavg`, `/proc/pressure/*`, `/proc/uptime`, `/proc/net/dev`, InfiniBand port counters,
//! CPU lists), so they are tested on fixture text. Per-process files are parsed in [`super::pid_parse`].

/// Parses a CPU list such as `0-15,32-47` (sysfs `local_cpulist`, `Cpus_allowed_list`) into sorted CPU ids.
/// Returns `None` for text that is not a CPU list. An empty list (empty text) is `Some(vec![])`.
#[must_use]
pub fn parse_cpulist(text: &str) -> Option<Vec<u32>> {
    let mut cpus = Vec::new();
    for part in text.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((first, last)) => {
                let (first, last): (u32, u32) = (first.trim().parse().ok()?, last.trim().parse().ok()?);
                if last < first || last - first > 65_536 {
                    return None;
                }
                cpus.extend(first..=last);
            }
            None => cpus.push(part.trim().parse().ok()?),
        }
    }
    cpus.sort_unstable();
    cpus.dedup();
    Some(cpus)
}

/// CPU time counters of one `cpu` line of `/proc/stat`, in clock ticks. Guest time is already counted inside
/// `user` and `nice` by the kernel, so it is not kept separately.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CpuTimes {
    pub user: u64,
    pub nice: u64,
    pub system: u64,
    pub idle: u64,
    pub iowait: u64,
    pub irq: u64,
    pub softirq: u64,
    pub steal: u64,
}

impl CpuTimes {
    /// All the time accounted on the line: the denominator of every share.
    #[must_use]
    pub fn total(&self) -> u64 {
        self.user
            .saturating_add(self.nice)
            .saturating_add(self.system)
            .saturating_add(self.idle)
            .saturating_add(self.iowait)
            .saturating_add(self.irq)
            .saturating_add(self.softirq)
            .saturating_add(self.steal)
    }

    /// The counters gained since `earlier`, or `None` when any went backwards (a CPU came back online, or the
    /// two readings are from different boots).
    #[must_use]
    pub fn since(&self, earlier: &Self) -> Option<Self> {
        Some(Self {
            user: self.user.checked_sub(earlier.user)?,
            nice: self.nice.checked_sub(earlier.nice)?,
            system: self.system.checked_sub(earlier.system)?,
            idle: self.idle.checked_sub(earlier.idle)?,
            iowait: self.iowait.checked_sub(earlier.iowait)?,
            irq: self.irq.checked_sub(earlier.irq)?,
            softirq: self.softirq.checked_sub(earlier.softirq)?,
            steal: self.steal.checked_sub(earlier.steal)?,
        })
    }

    /// Busy share in percent of a delta (everything but idle, iowait and steal); `None` when no time passed.
    #[must_use]
    pub fn busy_pct(&self) -> Option<f32> {
        let total = self.total();
        if total == 0 {
            return None;
        }
        let not_busy = self.idle.saturating_add(self.iowait).saturating_add(self.steal);
        Some(pct(total.saturating_sub(not_busy), total))
    }
}

/// A share in percent; the caller guarantees `whole > 0`.
#[expect(clippy::cast_possible_truncation, reason = "a share from 0 to 100 fits an f32")]
fn pct(part: u64, whole: u64) -> f32 {
    (part as f64 * 100.0 / whole as f64) as f32
}

/// CPU ids at or above this are ignored: Linux builds for at most 8192 CPUs (`NR_CPUS`), and the ids index
/// per-CPU vectors, so a corrupt line must not size one.
pub const MAX_CPU_ID: u32 = 8192;

/// What gpusight uses from `/proc/stat`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ProcStat {
    /// The aggregate `cpu` line.
    pub total: Option<CpuTimes>,
    /// One entry per `cpuN` line, with the id N parsed from the label. Offline CPUs have no line.
    pub cpus: Vec<(u32, CpuTimes)>,
    /// Boot time, seconds since the Unix epoch.
    pub btime: Option<u64>,
    pub procs_blocked: Option<u32>,
}

/// Parses `/proc/stat`. Lines it does not know are skipped; columns absent on old kernels count as 0.
#[must_use]
pub fn parse_proc_stat(text: &str) -> ProcStat {
    let mut out = ProcStat::default();
    for line in text.lines() {
        let mut words = line.split_ascii_whitespace();
        let Some(label) = words.next() else { continue };
        if let Some(id) = label.strip_prefix("cpu") {
            let Some(times) = parse_cpu_times(words) else { continue };
            if id.is_empty() {
                out.total = Some(times);
            } else if let Ok(id) = id.parse::<u32>()
                && id < MAX_CPU_ID
            {
                out.cpus.push((id, times));
            }
        } else if label == "btime" {
            out.btime = words.next().and_then(|w| w.parse().ok());
        } else if label == "procs_blocked" {
            out.procs_blocked = words.next().and_then(|w| w.parse().ok());
        }
    }
    out
}

/// Parses the numbers after a `cpu` label; at least user, nice, system and idle must be there.
fn parse_cpu_times<'a>(words: impl Iterator<Item = &'a str>) -> Option<CpuTimes> {
    let mut v = [0u64; 8];
    let mut n = 0;
    for (slot, word) in v.iter_mut().zip(words) {
        *slot = word.parse().ok()?;
        n += 1;
    }
    if n < 4 {
        return None;
    }
    let [user, nice, system, idle, iowait, irq, softirq, steal] = v;
    Some(CpuTimes { user, nice, system, idle, iowait, irq, softirq, steal })
}

/// What gpusight uses from `/proc/meminfo`, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MemInfo {
    pub mem_total_bytes: Option<u64>,
    pub mem_available_bytes: Option<u64>,
    pub swap_total_bytes: Option<u64>,
    pub swap_free_bytes: Option<u64>,
}

/// Parses `/proc/meminfo` (values in kB).
#[must_use]
pub fn parse_meminfo(text: &str) -> MemInfo {
    let mut out = MemInfo::default();
    for line in text.lines() {
        let Some((key, rest)) = line.split_once(':') else { continue };
        let slot = match key {
            "MemTotal" => &mut out.mem_total_bytes,
            "MemAvailable" => &mut out.mem_available_bytes,
            "SwapTotal" => &mut out.swap_total_bytes,
            "SwapFree" => &mut out.swap_free_bytes,
            _ => continue,
        };
        *slot = parse_kb(rest);
    }
    out
}

/// Parses a `  123 kB` value into bytes.
pub(crate) fn parse_kb(text: &str) -> Option<u64> {
    let text = text.trim();
    let number = text.strip_suffix("kB").unwrap_or(text).trim();
    number.parse::<u64>().ok()?.checked_mul(1024)
}

/// Swap counters from `/proc/vmstat`, in pages since boot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct VmSwap {
    pub pswpin: Option<u64>,
    pub pswpout: Option<u64>,
}

/// Parses the swap counters out of `/proc/vmstat`.
#[must_use]
pub fn parse_vmstat(text: &str) -> VmSwap {
    let mut out = VmSwap::default();
    for line in text.lines() {
        let Some((key, value)) = line.split_once(' ') else { continue };
        match key {
            "pswpin" => out.pswpin = value.trim().parse().ok(),
            "pswpout" => out.pswpout = value.trim().parse().ok(),
            _ => {}
        }
        if out.pswpin.is_some() && out.pswpout.is_some() {
            break;
        }
    }
    out
}

/// Load averages and blocked-free counts from `/proc/loadavg`.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct LoadAvg {
    pub one: f32,
    pub five: f32,
    pub fifteen: f32,
}

/// Parses `/proc/loadavg` (`0.52 0.58 0.59 1/1069 12345`).
#[must_use]
pub fn parse_loadavg(text: &str) -> Option<LoadAvg> {
    let mut words = text.split_ascii_whitespace();
    let mut next = || words.next().and_then(|w| w.parse::<f32>().ok());
    Some(LoadAvg { one: next()?, five: next()?, fifteen: next()? })
}

/// The `avg10` values of one `/proc/pressure/*` file, in percent.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct PsiAvg10 {
    pub some: Option<f32>,
    /// Absent for `cpu` on kernels before 5.13.
    pub full: Option<f32>,
}

/// Parses a pressure file (`some avg10=1.50 avg60=... total=...` and optionally a `full ...` line).
#[must_use]
pub fn parse_psi(text: &str) -> PsiAvg10 {
    let mut out = PsiAvg10::default();
    for line in text.lines() {
        let mut words = line.split_ascii_whitespace();
        let slot = match words.next() {
            Some("some") => &mut out.some,
            Some("full") => &mut out.full,
            _ => continue,
        };
        *slot = words.find_map(|w| w.strip_prefix("avg10=")).and_then(|v| v.parse().ok());
    }
    out
}

/// Parses `/proc/uptime` into whole seconds since boot.
#[must_use]
pub fn parse_uptime_s(text: &str) -> Option<u64> {
    let first = text.split_ascii_whitespace().next()?;
    let whole = first.split_once('.').map_or(first, |(whole, _)| whole);
    whole.parse().ok()
}

/// The byte counters of one interface in `/proc/net/dev`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NetDevCounters<'a> {
    pub name: &'a str,
    pub rx_bytes: u64,
    pub tx_bytes: u64,
}

/// Parses `/proc/net/dev`: two header lines, then `NAME: RX-bytes packets errs drop fifo frame compressed multicast
/// TX-bytes ...` per interface. The name is cut at its colon, since a large first counter can touch it
/// (`eth0:1234`); lines without a colon (the headers) or with too few numbers are skipped.
#[must_use]
pub fn parse_net_dev(text: &str) -> Vec<NetDevCounters<'_>> {
    let mut out = Vec::new();
    for line in text.lines() {
        let Some((name, counters)) = line.split_once(':') else { continue };
        let name = name.trim();
        if name.is_empty() || name.contains('|') {
            continue;
        }
        let mut numbers = counters.split_ascii_whitespace();
        let rx_bytes = numbers.next().and_then(|n| n.parse().ok());
        let tx_bytes = numbers.nth(7).and_then(|n| n.parse().ok());
        if let (Some(rx_bytes), Some(tx_bytes)) = (rx_bytes, tx_bytes) {
            out.push(NetDevCounters { name, rx_bytes, tx_bytes });
        }
    }
    out
}

/// A 32-bit InfiniBand data counter stops at this value instead of wrapping (the IBA's `PortXmitData` and
/// `PortRcvData` saturate); drivers with the 64-bit extended counters show those instead.
pub const IB_COUNTER_SATURATED: u64 = u32::MAX as u64;

/// Parses an InfiniBand port's `port_rcv_data` or `port_xmit_data`, which count 4-byte words, into bytes. `None`
/// for text that is not a number, and for a 32-bit counter stuck at its ceiling (it no longer counts).
#[must_use]
pub fn parse_ib_data_bytes(text: &str) -> Option<u64> {
    let words: u64 = text.trim().parse().ok()?;
    if words == IB_COUNTER_SATURATED {
        return None;
    }
    words.checked_mul(4)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(gpusight_fixtures)]
    fn fixture(name: &str) -> String {
        let path = format!("{}/tests/fixtures/proc/text/{name}", env!("CARGO_MANIFEST_DIR"));
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    #[test]
    fn cpulists() {
        assert_eq!(parse_cpulist("0-3,8,10-11\n"), Some(vec![0, 1, 2, 3, 8, 10, 11]));
        assert_eq!(parse_cpulist(""), Some(vec![]));
        assert_eq!(parse_cpulist("3-1"), None);
        assert_eq!(parse_cpulist("a-b"), None);
    }

    #[cfg(gpusight_fixtures)]
    #[test]
    fn proc_stat_with_an_offline_cpu() {
        let stat = parse_proc_stat(&fixture("stat"));
        let total = stat.total.unwrap();
        assert_eq!(total.user, 10_132_153);
        assert_eq!(total.steal, 1_200);
        assert_eq!(total.iowait, 25_431);
        // cpu2 is offline: its line is missing and the ids keep their labels.
        let ids: Vec<u32> = stat.cpus.iter().map(|(id, _)| *id).collect();
        assert_eq!(ids, vec![0, 1, 3]);
        assert_eq!(stat.cpus[2].1.idle, 8_123_456);
        assert_eq!(stat.btime, Some(1_700_000_000));
        assert_eq!(stat.procs_blocked, Some(2));
    }

    #[test]
    fn proc_stat_old_kernel_columns_and_garbage() {
        let stat = parse_proc_stat("cpu 1 2 3 4\ncpu0 1 2\ncpux 1 2 3 4\ncpu4000000000 1 2 3 4\nbtime x\n");
        assert_eq!(stat.total, Some(CpuTimes { user: 1, nice: 2, system: 3, idle: 4, ..CpuTimes::default() }));
        assert!(stat.cpus.is_empty());
        assert_eq!(stat.btime, None);
        assert_eq!(parse_proc_stat(""), ProcStat::default());
    }

    #[test]
    fn cpu_deltas() {
        let a = CpuTimes { user: 100, idle: 100, ..CpuTimes::default() };
        let b = CpuTimes { user: 150, idle: 130, iowait: 10, steal: 10, ..CpuTimes::default() };
        let d = b.since(&a).unwrap();
        assert_eq!(d.total(), 100);
        assert_eq!(d.busy_pct(), Some(50.0));
        assert_eq!(a.since(&b), None);
        assert_eq!(CpuTimes::default().busy_pct(), None);
    }

    #[cfg(gpusight_fixtures)]
    #[test]
    fn meminfo() {
        let m = parse_meminfo(&fixture("meminfo"));
        assert_eq!(m.mem_total_bytes, Some(65_842_320 * 1024));
        assert_eq!(m.mem_available_bytes, Some(50_123_456 * 1024));
        assert_eq!(m.swap_total_bytes, Some(8_388_604 * 1024));
        assert_eq!(m.swap_free_bytes, Some(8_000_000 * 1024));
        assert_eq!(parse_meminfo("MemTotal: lots\n").mem_total_bytes, None);
    }

    #[cfg(gpusight_fixtures)]
    #[test]
    fn vmstat() {
        let v = parse_vmstat(&fixture("vmstat"));
        assert_eq!(v, VmSwap { pswpin: Some(1234), pswpout: Some(5678) });
        assert_eq!(parse_vmstat("nr_free_pages 1\n"), VmSwap::default());
    }

    #[test]
    fn loadavg() {
        let l = parse_loadavg("0.52 1.58 12.59 1/1069 12345\n").unwrap();
        assert_eq!((l.one, l.five, l.fifteen), (0.52, 1.58, 12.59));
        assert_eq!(parse_loadavg("0.52 x"), None);
    }

    #[cfg(gpusight_fixtures)]
    #[test]
    fn psi_with_and_without_full() {
        let io = parse_psi(&fixture("pressure_io"));
        assert_eq!(io, PsiAvg10 { some: Some(12.5), full: Some(8.25) });
        let old_cpu = parse_psi("some avg10=3.00 avg60=1.00 avg300=0.50 total=123456\n");
        assert_eq!(old_cpu, PsiAvg10 { some: Some(3.0), full: None });
        assert_eq!(parse_psi(""), PsiAvg10::default());
    }

    #[cfg(gpusight_fixtures)]
    #[test]
    fn net_dev_with_its_headers_and_a_name_touching_its_counter() {
        let text = fixture("net_dev");
        let devs = parse_net_dev(&text);
        let names: Vec<&str> = devs.iter().map(|d| d.name).collect();
        assert_eq!(names, vec!["lo", "eth0", "docker0", "veth3f2a1b0", "ib0"]);
        assert_eq!((devs[1].rx_bytes, devs[1].tx_bytes), (98_765_432_109, 12_345_678_901));
        // The old layout where the first counter touches the colon.
        let old = parse_net_dev("  eth1:4294967200 5 0 0 0 0 0 0 700 3 0 0 0 0 0 0\n");
        assert_eq!(old, vec![NetDevCounters { name: "eth1", rx_bytes: 4_294_967_200, tx_bytes: 700 }]);
        assert!(parse_net_dev("  eth2: 1 2 3\n").is_empty(), "too few columns");
        assert!(parse_net_dev("").is_empty());
    }

    #[test]
    fn ib_counters_are_words_and_a_saturated_one_counts_nothing() {
        assert_eq!(parse_ib_data_bytes("1234567\n"), Some(4_938_268));
        assert_eq!(parse_ib_data_bytes("4294967295\n"), None);
        assert_eq!(parse_ib_data_bytes("4294967296"), Some(17_179_869_184));
        assert_eq!(parse_ib_data_bytes("N/A"), None);
        assert_eq!(parse_ib_data_bytes(&u64::MAX.to_string()), None, "too large to be bytes");
    }

    #[test]
    fn uptime() {
        assert_eq!(parse_uptime_s("35012.83 501234.10\n"), Some(35_012));
        assert_eq!(parse_uptime_s("12 1"), Some(12));
        assert_eq!(parse_uptime_s(""), None);
    }
}
