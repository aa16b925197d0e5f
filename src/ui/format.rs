//! Numbers for people: sizes, percentages, durations and sample times, with "N/A" for absent readings.

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

/// Whole GiB with one decimal, for "used/total" pairs.
#[must_use]
pub fn gib(value: Option<u64>) -> String {
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

/// A PCIe rate in KB/s as MB/s or GB/s.
#[must_use]
pub fn rate_kbps(kbps: Option<u32>) -> String {
    match kbps {
        None => NA.to_owned(),
        Some(k) if k >= 1_000_000 => format!("{:.1}GB/s", f64::from(k) / 1e6),
        Some(k) => format!("{:.0}MB/s", f64::from(k) / 1e3),
    }
}

/// An elapsed time like nvitop's TIME column: "45:12", "3:04:12", "2-03:04:12" (days).
#[must_use]
pub fn elapsed_ms(ms: Option<u64>) -> String {
    ms.map_or_else(|| NA.to_owned(), |ms| crate::output::format::elapsed(ms / 1000))
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

/// A sample time as UTC date and time; the time comes from the sample, never the clock.
pub use crate::output::format::utc;

/// NVML's CUDA driver version integer as "13.0".
#[must_use]
pub fn cuda_version(v: Option<i32>) -> String {
    v.map_or_else(|| NA.to_owned(), |v| format!("{}.{}", v / 1000, v % 1000 / 10))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_are_compact_and_honest() {
        assert_eq!(bytes(None), "N/A");
        assert_eq!(bytes(Some(812 << 20)), "812MiB");
        assert_eq!(bytes(Some(80 << 30)), "80.0GiB");
        assert_eq!(cuda_version(Some(13000)), "13.0");
        assert_eq!(cuda_version(Some(12040)), "12.4");
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
}
