//! Windows over a time column (the last N milliseconds, found by binary search) and summary statistics of the
//! readings in one, gaps counted apart.

use super::Ring;
use crate::sample::UnixMs;

/// The time column and the index range of a window ending at the newest sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    /// Index of the first sample in the window.
    pub start: usize,
    /// Number of samples in the window.
    pub len: usize,
    /// Time of the first and the newest sample in the window.
    pub first_ms: UnixMs,
    pub last_ms: UnixMs,
}

impl Window {
    /// How much time the window's samples span.
    #[must_use]
    pub fn span_ms(&self) -> u64 {
        self.last_ms.saturating_sub(self.first_ms)
    }
}

/// The window of the last `span_ms` milliseconds in a time column, ending at its newest sample.
#[must_use]
pub fn window_of(times: &Ring<UnixMs>, span_ms: u64) -> Option<Window> {
    let last_ms = *times.last()?;
    let from_ms = last_ms.saturating_sub(span_ms);
    // Times are non-decreasing, so a binary search finds the first sample inside the window.
    let (mut lo, mut hi) = (0, times.len());
    while lo < hi {
        let mid = usize::midpoint(lo, hi);
        if times.get(mid).is_some_and(|t| *t < from_ms) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    let first_ms = *times.get(lo)?;
    Some(Window { start: lo, len: times.len() - lo, first_ms, last_ms })
}

/// Summary statistics of the present (non-gap) values in an iterator.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stats {
    pub n_present: usize,
    pub n_total: usize,
    pub min: f64,
    pub max: f64,
    pub mean: f64,
    pub median: f64,
}

impl Stats {
    /// Statistics of the present values; `None` when every value is a gap.
    pub fn of<I, T>(values: I) -> Option<Self>
    where
        I: IntoIterator<Item = Option<T>>,
        T: Into<f64>,
    {
        let mut n_total = 0;
        let mut present: Vec<f64> = Vec::new();
        for value in values {
            n_total += 1;
            if let Some(v) = value {
                present.push(v.into());
            }
        }
        if present.is_empty() {
            return None;
        }
        present.sort_by(f64::total_cmp);
        let n = present.len();
        let median = if n % 2 == 1 { present[n / 2] } else { f64::midpoint(present[n / 2 - 1], present[n / 2]) };
        let mean = present.iter().sum::<f64>() / n as f64;
        Some(Self { n_present: n, n_total, min: present[0], max: present[n - 1], mean, median })
    }

    /// The share of samples (gaps count against) that were present.
    #[must_use]
    pub fn coverage(&self) -> f64 {
        if self.n_total == 0 { 0.0 } else { self.n_present as f64 / self.n_total as f64 }
    }
}
#[cfg(test)]
mod tests {
    use crate::history::History;
    use crate::history::test_ticks::{machine, tick};

    #[test]
    fn window_covers_the_last_span() {
        let mut history = History::new(machine(1), 100);
        for i in 0..10 {
            history.push_tick(tick(1000 * i, Some(1)));
        }
        let window = history.window(3000).expect("window");
        assert_eq!((window.start, window.len, window.first_ms, window.last_ms), (6, 4, 6000, 9000));
        assert_eq!(history.window(1_000_000).map(|w| w.len), Some(10));
    }
}
