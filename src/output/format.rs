//! Small formatters shared by the text outputs: N/A for absent values, binary units, durations, CUDA versions.

/// What an absent reading prints as.
pub const NA: &str = "N/A";

/// Bytes as GiB with one decimal, e.g. `10.1 GiB`.
#[must_use]
pub fn gib(bytes: u64) -> String {
    format!("{:.1} GiB", bytes as f64 / f64::from(1u32 << 30))
}

/// Bytes in the largest unit that keeps the number readable: `512 MiB`, `10.1 GiB`.
#[must_use]
pub fn bytes(bytes: u64) -> String {
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

/// Truncates to `width` characters, marking the cut with `…` (or `~` in ASCII mode).
#[must_use]
pub fn truncate(text: &str, width: usize, ascii: bool) -> String {
    if text.chars().count() <= width {
        return text.to_owned();
    }
    let mark = if ascii { '~' } else { '…' };
    let mut out: String = text.chars().take(width.saturating_sub(1)).collect();
    out.push(mark);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(gib(10_846_420_992), "10.1 GiB");
        assert_eq!(bytes(512 << 20), "512 MiB");
        assert_eq!(bytes(3 << 30), "3.0 GiB");
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
}
