//! The kernel log as an Xid source: parsing `/dev/kmsg` records and NVRM messages (pure), and a non-blocking
//! reader of `/dev/kmsg`.

use std::path::Path;

use rustix::fd::OwnedFd;
use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;

use crate::sample::GpuEventKind;
use crate::source::nvml::info::parse_bus_id;

/// What one NVRM kernel message says about a GPU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NvrmEvent {
    /// The GPU's PCI address as (domain, bus, device).
    pub bus: (u32, u32, u32),
    /// An Xid (with the host PID and process name when given) or "fallen off the bus".
    pub kind: GpuEventKind,
}

/// One `/dev/kmsg` record that carries an NVRM GPU event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedXid {
    /// The record's sequence number.
    pub seq: u64,
    /// Microseconds since boot when the kernel logged it.
    pub ts_usec: u64,
    pub event: NvrmEvent,
    /// The message text (first line of the record, without the header).
    pub message: String,
}

/// Parses one `/dev/kmsg` record (`pri,seq,ts_usec,flags[,...];MSG`, then dictionary lines starting with a
/// space). Returns `None` for records that are not NVRM Xid or fallen-off-the-bus messages.
#[must_use]
pub fn parse_kmsg_record(record: &str) -> Option<ParsedXid> {
    let (header, rest) = record.split_once(';')?;
    let mut fields = header.split(',');
    let _priority: u32 = fields.next()?.trim().parse().ok()?;
    let seq: u64 = fields.next()?.trim().parse().ok()?;
    let ts_usec: u64 = fields.next()?.trim().parse().ok()?;
    let message = rest.split('\n').next().unwrap_or("").trim_end();
    let event = parse_nvrm_message(message)?;
    Some(ParsedXid { seq, ts_usec, event, message: message.to_string() })
}

/// Parses an NVRM kernel message (from `/dev/kmsg`, `dmesg` or a log file; anything before `NVRM:` is ignored).
/// Understands every Xid format (with or without `PCI:`, with or without `pid=`/`name=`) and the "has fallen
/// off the bus" message.
#[must_use]
pub fn parse_nvrm_message(text: &str) -> Option<NvrmEvent> {
    let at = text.find("NVRM:")?;
    let msg = text[at + "NVRM:".len()..].trim_start();
    if let Some(rest) = msg.strip_prefix("Xid") {
        return parse_xid(rest.trim_start());
    }
    if msg.contains("fallen off the bus") {
        let bus = msg
            .split(|c: char| c.is_whitespace() || c == ',' || c == '(' || c == ')')
            .map(|t| t.trim_end_matches(':'))
            .find_map(parse_bus_id)?;
        return Some(NvrmEvent { bus, kind: GpuEventKind::FallenOffBus });
    }
    None
}

/// Parses what follows `Xid`: `(PCI:0000:01:00): 31, pid=..., name=..., rest`.
fn parse_xid(rest: &str) -> Option<NvrmEvent> {
    let inner = rest.strip_prefix('(')?;
    let (addr, after) = inner.split_once(')')?;
    let bus = parse_bus_id(addr)?;
    let after = after.trim_start().strip_prefix(':')?.trim_start();
    let digits_end = after.find(|c: char| !c.is_ascii_digit()).unwrap_or(after.len());
    let code: u32 = after[..digits_end].parse().ok()?;
    let tail = after[digits_end..].trim_start().strip_prefix(',').unwrap_or("").trim_start();
    let mut pid = None;
    let mut process_name = None;
    let mut tail = tail;
    if let Some(r) = tail.strip_prefix("pid=") {
        let (value, next) = r.split_once(',').unwrap_or((r, ""));
        pid = value.trim().trim_matches('\'').parse().ok();
        tail = next.trim_start();
        if let Some(r) = tail.strip_prefix("name=") {
            let (value, _) = r.split_once(',').unwrap_or((r, ""));
            let value = value.trim().trim_matches('\'');
            if !value.is_empty() && value != "<unknown>" {
                process_name = Some(value.to_string());
            }
        }
    }
    Some(NvrmEvent { bus, kind: GpuEventKind::Xid { code, pid, process_name } })
}

/// Converts a record's boot-relative time to wall time, given the wall time and the uptime read together.
#[must_use]
pub fn kmsg_wall_ms(now_ms: u64, uptime_ms: u64, ts_usec: u64) -> u64 {
    now_ms.saturating_sub(uptime_ms.saturating_sub(ts_usec / 1000))
}

/// Parses the first field of `/proc/uptime` into milliseconds.
#[must_use]
pub fn parse_uptime_ms(text: &str) -> Option<u64> {
    let secs: f64 = text.split_whitespace().next()?.parse().ok()?;
    #[expect(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "a finite, non-negative number of seconds since boot"
    )]
    (secs.is_finite() && secs >= 0.0).then_some((secs * 1000.0) as u64)
}

/// The outcome of one pass over `/dev/kmsg`.
#[derive(Debug, Default)]
pub struct KmsgPass {
    pub records: Vec<ParsedXid>,
    /// The read failed in a way that will not go away (e.g. EPERM): the log is not readable.
    pub failed: Option<Errno>,
    /// Records were overwritten before we read them.
    pub overrun: bool,
}

/// A non-blocking reader of `/dev/kmsg`. The first pass returns the history still in the ring buffer.
#[derive(Debug)]
pub struct KmsgReader {
    fd: OwnedFd,
}

/// The most records read in one pass, so a flood of kernel messages cannot hold up a read.
const MAX_RECORDS_PER_PASS: usize = 20_000;

impl KmsgReader {
    /// Opens the kernel log (normally `/dev/kmsg`) read-only and non-blocking.
    ///
    /// # Errors
    /// The errno of the open (EPERM/EACCES without CAP_SYSLOG under `dmesg_restrict`, ENOENT in some
    /// containers).
    pub fn open(path: &Path) -> Result<Self, Errno> {
        let fd = rustix::fs::open(path, OFlags::RDONLY | OFlags::NONBLOCK | OFlags::CLOEXEC, Mode::empty())?;
        Ok(Self { fd })
    }

    /// Reads every record available now and keeps the NVRM ones.
    pub fn read_available(&mut self) -> KmsgPass {
        let mut pass = KmsgPass::default();
        let mut buf = vec![0u8; 16 * 1024];
        for _ in 0..MAX_RECORDS_PER_PASS {
            match rustix::io::read(&self.fd, &mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    let text = String::from_utf8_lossy(&buf[..n]);
                    if let Some(parsed) = parse_kmsg_record(&text) {
                        pass.records.push(parsed);
                    }
                }
                Err(Errno::AGAIN) => break,
                Err(Errno::PIPE) => pass.overrun = true,
                Err(Errno::INTR) => {}
                // A record longer than the buffer: skip it.
                Err(Errno::INVAL) => {}
                Err(e) => {
                    pass.failed = Some(e);
                    break;
                }
            }
        }
        pass
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn xid(code: u32, pid: Option<u32>, name: Option<&str>) -> GpuEventKind {
        GpuEventKind::Xid { code, pid, process_name: name.map(str::to_string) }
    }

    #[cfg(gpusight_fixtures)]
    #[test]
    fn every_fixture_line_parses() {
        type Want = Option<(u64, (u32, u32, u32), GpuEventKind)>;
        let text = include_str!("../../../tests/fixtures/kmsg/nvrm_records.txt");
        let mut got = Vec::new();
        for line in text.lines().filter(|l| !l.is_empty() && !l.starts_with('#')) {
            got.push(parse_kmsg_record(line));
        }
        let want: Vec<Want> = vec![
            Some((1201, (0, 1, 0), xid(31, None, None))),
            Some((1202, (0, 1, 0), xid(31, None, None))),
            Some((1203, (0, 0xcb, 0), xid(109, Some(1_797_828), Some("pt_main_thread")))),
            Some((1204, (0, 0xcb, 0), xid(13, None, None))),
            None,
            Some((1206, (0, 0xb3, 0), GpuEventKind::FallenOffBus)),
            Some((1207, (0, 0x3b, 0), xid(48, None, None))),
            Some((1208, (0, 0x81, 0), xid(79, None, None))),
            Some((1209, (0, 0x18, 0), xid(94, Some(4242), Some("python")))),
            Some((1210, (0, 0x18, 0), xid(119, None, None))),
            None,
            Some((1212, (0, 0x9d, 0), GpuEventKind::FallenOffBus)),
            Some((1213, (0, 0x9d, 0), xid(154, None, None))),
        ];
        assert_eq!(got.len(), want.len());
        for (g, w) in got.iter().zip(&want) {
            let g = g.as_ref().map(|p| (p.seq, p.event.bus, p.event.kind.clone()));
            assert_eq!(&g, w);
        }
        let first = got[0].as_ref().expect("first record parses");
        assert_eq!(first.ts_usec, 5_183_449_911);
        assert!(first.message.starts_with("NVRM: Xid (0000:01:00): 31"));
    }

    #[test]
    fn dictionary_lines_are_ignored() {
        let rec = "4,77,1000,-;NVRM: Xid (PCI:0000:01:00): 43, pid=12, name=a.out, Ch 00000010\n SUBSYSTEM=pci\n DEVICE=+pci:0000:01:00.0\n";
        let p = parse_kmsg_record(rec).expect("parses");
        assert_eq!(p.event.kind, xid(43, Some(12), Some("a.out")));
        assert_eq!(p.message, "NVRM: Xid (PCI:0000:01:00): 43, pid=12, name=a.out, Ch 00000010");
    }

    #[test]
    fn dmesg_style_lines_and_garbage() {
        let line = "[ 5183.449911] NVRM: Xid (PCI:0000:65:00): 62, pid='<unknown>', name=<unknown>, 0000b8e4";
        assert_eq!(parse_nvrm_message(line).map(|e| e.kind), Some(xid(62, None, None)));
        assert_eq!(parse_nvrm_message("NVRM: Xid (PCI:zz:01:00): 31, x"), None);
        assert_eq!(parse_nvrm_message("NVRM: Xid (PCI:0000:01:00): , x"), None);
        assert_eq!(parse_nvrm_message("NVRM: loading NVIDIA UNIX Open Kernel Module"), None);
        assert_eq!(parse_kmsg_record("garbage"), None);
        assert_eq!(parse_kmsg_record("x,1,2,-;NVRM: Xid (PCI:0000:01:00): 31, y"), None);
    }

    #[test]
    fn times() {
        assert_eq!(kmsg_wall_ms(1_000_000, 50_000, 40_000_000), 990_000);
        assert_eq!(kmsg_wall_ms(10, 50_000, 0), 0, "saturates");
        assert_eq!(parse_uptime_ms("5183.45 40000.00\n"), Some(5_183_450));
        assert_eq!(parse_uptime_ms("x"), None);
    }

    #[test]
    fn reads_a_file_of_records() {
        // A regular file returns its bytes in one read rather than one record per read; the reader still
        // parses the first record and then sees the end of the file.
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("kmsg");
        std::fs::write(
            &path,
            "4,9,100,-;NVRM: Xid (PCI:0000:01:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.\n",
        )
        .expect("write");
        let mut r = KmsgReader::open(&path).expect("open");
        let pass = r.read_available();
        assert_eq!(pass.records.len(), 1);
        assert_eq!(pass.failed, None);
        assert!(KmsgReader::open(&dir.path().join("missing")).is_err());
    }
}
