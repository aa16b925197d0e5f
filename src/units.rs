//! Numbers for people, in one set of units for every output: the monitor, `--once`, `doctor`, `report`, the
//! fleet view and the advice evidence. Sizes are binary (MiB, GiB), PCIe rates MB/s and GB/s, an absent reading
//! is "N/A" (never a 0), times come from the samples.
//!
//! Where to look: sizes [`bytes`] (compact, "812MiB") and [`bytes_spaced`] ("812 MiB"), [`gib`] and
//! [`gib_number`]; rates [`rate_kbps`] and [`rate_kbps_f64`] (advice evidence); [`pct`], [`watts`], [`num`];
//! durations [`elapsed`], [`elapsed_ms`], [`duration_s`], [`uptime`], [`clock`]; times [`utc`]; text [`truncate`],
//! [`wrap`]. Advice evidence and the reports write prose with [`bytes_label`], [`duration_label`], [`pct_label`],
//! [`share_label`] and [`rate_kbps_f64`].

/// The text shown for an absent reading.
pub const NA: &str = "N/A";

/// Bytes in binary units with one decimal from GiB up: "812MiB", "80.1GiB".
#[must_use]
pub fn bytes(value: Option<u64>) -> String {
    const KIB: f64 = 1024.0;
    let Some(value) = value else { return NA.to_owned() };
    let v = value as f64;
    if v >= KIB * KIB * KIB * KIB {
        format!("{:.1}TiB", v / (KIB * KIB * KIB * KIB))
    } else if v >= KIB * KIB * KIB {
        format!("{:.1}GiB", v / (KIB * KIB * KIB))
    } else if v >= KIB * KIB {
        format!("{:.0}MiB", v / (KIB * KIB))
    } else if v >= KIB {
        format!("{:.0}KiB", v / KIB)
    } else {
        format!("{value}B")
    }
}

/// Whole GiB with one decimal and no unit, for "used/total" pairs.
#[must_use]
pub fn gib_number(value: Option<u64>) -> String {
    value.map_or_else(|| NA.to_owned(), |v| format!("{:.1}", v as f64 / f64::from(1u32 << 30)))
}

/// A whole percentage, "N/A" when absent.
#[must_use]
pub fn pct<T: Into<f64>>(value: Option<T>) -> String {
    value.map_or_else(|| NA.to_owned(), |v| format!("{:.0}%", v.into()))
}

/// A number with a unit, "N/A" when absent.
#[must_use]
pub fn num<T: std::fmt::Display>(value: Option<T>, unit: &str) -> String {
    value.map_or_else(|| NA.to_owned(), |v| format!("{v}{unit}"))
}

/// Milliwatts as whole watts.
#[must_use]
pub fn watts(mw: Option<u32>) -> String {
    mw.map_or_else(|| NA.to_owned(), |mw| format!("{}", (mw + 500) / 1000))
}

/// A PCIe rate in KB/s as MB/s or GB/s: "57MB/s", "8.9GB/s".
#[must_use]
pub fn rate_kbps(kbps: Option<u32>) -> String {
    kbps.map_or_else(|| NA.to_owned(), |k| rate_kbps_f64(f64::from(k)))
}

/// [`rate_kbps`] for a rate that is a median or a mean (advice evidence), in the same units as the panel.
#[must_use]
pub fn rate_kbps_f64(kbps: f64) -> String {
    if kbps >= 1e6 { format!("{:.1}GB/s", kbps / 1e6) } else { format!("{:.0}MB/s", kbps / 1e3) }
}

/// An elapsed time like nvitop's TIME column: "45:12", "3:04:12", "2-03:04:12" (days).
#[must_use]
pub fn elapsed_ms(ms: Option<u64>) -> String {
    ms.map_or_else(|| NA.to_owned(), |ms| elapsed(ms / 1000))
}

/// A span of seconds in words: "30 s", "2 min", "1 h".
#[must_use]
pub fn duration_s(s: u64) -> String {
    if s >= 3600 && s.is_multiple_of(3600) {
        format!("{} h", s / 3600)
    } else if s >= 60 && s.is_multiple_of(60) {
        format!("{} min", s / 60)
    } else {
        format!("{s} s")
    }
}

/// An uptime: "3d 04:12" or "04:12:09".
#[must_use]
pub fn uptime(s: Option<u64>) -> String {
    let Some(s) = s else { return NA.to_owned() };
    let (d, h, m) = (s / 86_400, s / 3600 % 24, s / 60 % 60);
    if d > 0 { format!("{d}d {h:02}:{m:02}") } else { format!("{h:02}:{m:02}:{:02}", s % 60) }
}

/// A playback position: "01:23" or "1:02:03".
#[must_use]
pub fn clock(d: std::time::Duration) -> String {
    let s = d.as_secs();
    if s >= 3600 {
        format!("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
    } else {
        format!("{:02}:{:02}", s / 60, s % 60)
    }
}

/// Cuts `text` to `width` characters, ending with "…" (or "~" in ASCII) when cut.
#[must_use]
pub fn truncate(text: &str, width: usize, ascii: bool) -> String {
    if text.chars().count() <= width {
        return text.to_owned();
    }
    if width == 0 {
        return String::new();
    }
    let mut out: String = text.chars().take(width - 1).collect();
    out.push(if ascii { '~' } else { '…' });
    out
}

/// Breaks `text` into lines of at most `width` characters at spaces; a word longer than a line is cut.
#[must_use]
pub fn wrap(text: &str, width: usize) -> Vec<String> {
    let width = width.max(1);
    let mut lines = Vec::new();
    let mut line = String::new();
    let mut len = 0;
    for word in text.split_whitespace() {
        let mut chars: Vec<char> = word.chars().collect();
        if len > 0 && len + 1 + chars.len() > width {
            lines.push(std::mem::take(&mut line));
            len = 0;
        }
        while chars.len() > width {
            let rest = chars.split_off(width);
            if len > 0 {
                lines.push(std::mem::take(&mut line));
            }
            lines.push(chars.into_iter().collect());
            len = 0;
            chars = rest;
        }
        if len > 0 {
            line.push(' ');
            len += 1;
        }
        len += chars.len();
        line.extend(chars);
    }
    if len > 0 || lines.is_empty() {
        lines.push(line);
    }
    lines
}

/// Bytes as GiB with one decimal, e.g. `10.1 GiB`.
#[must_use]
pub fn gib(bytes: u64) -> String {
    format!("{:.1} GiB", bytes as f64 / f64::from(1u32 << 30))
}

/// Bytes in the largest unit that keeps the number readable, with a space for prose and tables: `512 MiB`,
/// `10.1 GiB` ([`bytes`] is the compact form the monitor draws).
#[must_use]
pub fn bytes_spaced(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    if unit <= 2 { format!("{value:.0} {}", UNITS[unit]) } else { format!("{value:.1} {}", UNITS[unit]) }
}

/// An optional value formatted, or N/A.
#[must_use]
pub fn opt<T>(value: Option<T>, f: impl FnOnce(T) -> String) -> String {
    value.map_or_else(|| NA.to_owned(), f)
}

/// NVML's CUDA driver version number as text: 13000 → "13.0", 12080 → "12.8".
#[must_use]
pub fn cuda_version(version: i32) -> String {
    format!("{}.{}", version / 1000, (version % 1000) / 10)
}

/// A duration in seconds like nvitop's TIME column: "45:12", "3:04:12", "2-03:04:12" (days).
#[must_use]
pub fn elapsed(seconds: u64) -> String {
    let (d, h, m, s) = (seconds / 86_400, seconds / 3600 % 24, seconds / 60 % 60, seconds % 60);
    if d > 0 {
        format!("{d}-{h:02}:{m:02}:{s:02}")
    } else if h > 0 {
        format!("{h}:{m:02}:{s:02}")
    } else {
        format!("{m:02}:{s:02}")
    }
}

/// A Unix time in milliseconds as `YYYY-MM-DD HH:MM:SS UTC` (civil-from-days, no time zone database needed).
#[must_use]
pub fn utc(ms: u64) -> String {
    let secs = ms / 1000;
    let days = i64::try_from(secs / 86_400).unwrap_or(0);
    let rest = secs % 86_400;
    // Howard Hinnant's civil-from-days algorithm.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02} UTC", rest / 3600, rest % 3600 / 60, rest % 60)
}

// Labels for advice evidence and the one-shot reports (prose: a space before the unit).

/// A duration for people: "45 s", "2 min", "1 h 30 min".
#[must_use]
pub fn duration_label(secs: u64) -> String {
    if secs < 120 {
        format!("{secs} s")
    } else if secs < 3600 {
        let (m, s) = (secs / 60, secs % 60);
        if s == 0 { format!("{m} min") } else { format!("{m} min {s} s") }
    } else {
        let (h, m) = (secs / 3600, secs % 3600 / 60);
        if m == 0 { format!("{h} h") } else { format!("{h} h {m} min") }
    }
}

/// Bytes for people, in binary units: "20.5 GiB", "380 MiB".
#[must_use]
pub fn bytes_label(bytes: f64) -> String {
    const GIB: f64 = 1024.0 * 1024.0 * 1024.0;
    const MIB: f64 = 1024.0 * 1024.0;
    if bytes.abs() >= GIB {
        format!("{:.1} GiB", bytes / GIB)
    } else if bytes.abs() >= MIB {
        format!("{:.0} MiB", bytes / MIB)
    } else if bytes.abs() >= 1024.0 {
        format!("{:.0} KiB", bytes / 1024.0)
    } else {
        format!("{bytes:.0} B")
    }
}

/// A percentage for people: whole numbers above 10, one decimal below.
#[must_use]
pub fn pct_label(pct: f64) -> String {
    if pct.abs() >= 10.0 || pct == 0.0 { format!("{pct:.0} %") } else { format!("{pct:.1} %") }
}

/// A `PCIe` rate in KB/s for people, as the rules' other evidence writes rates: "12.0 GB/s", "57 MB/s".
#[must_use]
pub fn rate_label(kbps: f64) -> String {
    if kbps >= 1e6 { format!("{:.1} GB/s", kbps / 1e6) } else { format!("{:.0} MB/s", kbps / 1e3) }
}

/// A share (0–1) as a percentage of samples: "40 %".
#[must_use]
pub fn share_label(share: f64) -> String {
    format!("{:.0} %", share * 100.0)
}

/// Energy for people: "540 J", "12.3 kJ", "4.1 MJ".
#[must_use]
pub fn energy_label(joules: f64) -> String {
    if joules.abs() >= 1e6 {
        format!("{:.1} MJ", joules / 1e6)
    } else if joules.abs() >= 1e4 {
        format!("{:.0} kJ", joules / 1e3)
    } else if joules.abs() >= 1e3 {
        format!("{:.1} kJ", joules / 1e3)
    } else {
        format!("{joules:.0} J")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn energy_in_joules_kilojoules_and_megajoules() {
        assert_eq!(energy_label(540.4), "540 J");
        assert_eq!(energy_label(1_234.0), "1.2 kJ");
        assert_eq!(energy_label(45_600.0), "46 kJ");
        assert_eq!(energy_label(4_100_000.0), "4.1 MJ");
    }

    #[test]
    fn formats_are_compact_and_honest() {
        assert_eq!(bytes(None), "N/A");
        assert_eq!(bytes(Some(812 << 20)), "812MiB");
        assert_eq!(bytes(Some(80 << 30)), "80.0GiB");
        assert_eq!(opt(Some(13000), cuda_version), "13.0");
        assert_eq!(opt(Some(12040), cuda_version), "12.4");
        assert_eq!(elapsed_ms(Some(3_723_000)), "1:02:03");
        assert_eq!(elapsed_ms(Some(59_000)), "00:59");
        assert_eq!(utc(1_763_942_483_000), "2025-11-24 00:01:23 UTC");
        assert_eq!(utc(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(truncate("python train.py", 8, false), "python …");
        assert_eq!(watts(Some(699_600)), "700");
    }

    #[test]
    fn wrap_breaks_at_spaces_and_cuts_long_words() {
        assert_eq!(wrap("raise num_workers to 8 now", 12), vec!["raise", "num_workers", "to 8 now"]);
        assert_eq!(wrap("abcdefghij", 4), vec!["abcd", "efgh", "ij"]);
        assert_eq!(wrap("", 10), vec![""]);
    }

    #[test]
    fn text_formats() {
        assert_eq!(gib(10_846_420_992), "10.1 GiB");
        assert_eq!(bytes_spaced(512 << 20), "512 MiB");
        assert_eq!(bytes_spaced(3 << 30), "3.0 GiB");
        assert_eq!(opt(None::<u32>, |v| v.to_string()), "N/A");
        assert_eq!(cuda_version(13000), "13.0");
        assert_eq!(cuda_version(12080), "12.8");
        assert_eq!(elapsed(65), "01:05");
        assert_eq!(elapsed(3 * 86_400 + 3661), "3-01:01:01");
        assert_eq!(elapsed(3661), "1:01:01");
        assert_eq!(utc(1_763_942_400_000), "2025-11-24 00:00:00 UTC");
        assert_eq!(utc(951_782_400_000), "2000-02-29 00:00:00 UTC");
        assert_eq!(truncate("python train.py", 8, false), "python …");
    }

    #[test]
    fn rates_read_the_same_in_the_panel_and_the_evidence() {
        assert_eq!(rate_kbps(Some(8_900_000)), "8.9GB/s");
        assert_eq!(rate_kbps_f64(9_106_000.0), "9.1GB/s");
        assert_eq!(rate_label(9_000_000.0), "9.0 GB/s");
        assert_eq!(rate_label(57_000.0), "57 MB/s");
        assert_eq!(rate_kbps_f64(57_000.0), "57MB/s");
        assert_eq!(rate_kbps(None), NA);
    }
}
