//! Thermal steady state: when temperature and SM clock stop drifting, per the benchmark playbook's advice to
//! warm up to equilibrium before measuring.

use serde::Serialize;

use crate::history::Readings;
use crate::history::{GpuSeries, Ring};
use crate::sample::UnixMs;

/// When a GPU counts as thermally steady: over a trailing window, the mean of its second half differs from the
/// mean of its first half by at most the given drifts. Comparing half-window means, not the raw range, keeps
/// sample noise (±2 °C, ±40 MHz under a power cap) from hiding a plateau.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SteadyCriterion {
    pub window_s: u64,
    pub max_temp_drift_c: f64,
    pub max_clock_drift_mhz: f64,
}

impl Default for SteadyCriterion {
    fn default() -> Self {
        Self { window_s: 120, max_temp_drift_c: 1.0, max_clock_drift_mhz: 20.0 }
    }
}

impl SteadyCriterion {
    /// The criterion in words, printed with the result.
    #[must_use]
    pub fn describe(&self) -> String {
        format!(
            "steady once, over a {} s window, the mean temperature of its second half is within {} °C of its first \
             half and the mean SM clock within {} MHz",
            self.window_s, self.max_temp_drift_c, self.max_clock_drift_mhz
        )
    }
}

/// Whether and when a GPU reached thermal steady state.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SteadyState {
    /// `None` when temperature or SM clock were never read.
    pub reached: Option<bool>,
    /// Seconds from the first sample to the start of the first steady window.
    pub after_s: Option<u64>,
    /// Mean temperature and SM clock over that steady window.
    pub temp_c: Option<f64>,
    pub sm_clock_mhz: Option<f64>,
    /// Seconds of data looked at.
    pub watched_s: u64,
}

impl SteadyState {
    /// No data to judge.
    #[must_use]
    pub fn unknown() -> Self {
        Self { reached: None, after_s: None, temp_c: None, sm_clock_mhz: None, watched_s: 0 }
    }
}

/// A sample: time, temperature (°C), SM clock (MHz).
type Point = (UnixMs, f64, f64);

fn mean(values: impl Iterator<Item = f64>) -> Option<f64> {
    let (mut sum, mut n) = (0.0, 0_u32);
    for v in values {
        sum += v;
        n += 1;
    }
    (n > 0).then(|| sum / f64::from(n))
}

/// Finds the first trailing window that meets `criterion` in one GPU's series.
#[must_use]
pub fn detect(times: &Ring<UnixMs>, gpu: &GpuSeries, criterion: &SteadyCriterion) -> SteadyState {
    let points: Vec<Point> = times
        .iter()
        .zip(gpu.temp_c.readings().zip(gpu.sm_clock_mhz.readings()))
        .filter_map(|(t, (temp, clock))| Some((*t, f64::from(temp?), f64::from(clock?))))
        .collect();
    let (Some(first), Some(last)) = (points.first(), points.last()) else {
        return SteadyState::unknown();
    };
    // Saturating: a clock that stepped back must not wrap to 5124095576030 h.
    let watched_s = last.0.saturating_sub(first.0) / 1000;
    let window_ms = criterion.window_s * 1000;
    let mut state = SteadyState { reached: Some(false), watched_s, ..SteadyState::unknown() };
    for (i, start) in points.iter().enumerate() {
        let end_ms = start.0.saturating_add(window_ms);
        if last.0 < end_ms {
            break;
        }
        let mid_ms = start.0.saturating_add(window_ms / 2);
        let window = points[i..].iter().take_while(|p| p.0 <= end_ms);
        let (a, b): (Vec<&Point>, Vec<&Point>) = window.partition(|p| p.0 < mid_ms);
        let (Some(ta), Some(tb)) = (mean(a.iter().map(|p| p.1)), mean(b.iter().map(|p| p.1))) else { continue };
        let (Some(ca), Some(cb)) = (mean(a.iter().map(|p| p.2)), mean(b.iter().map(|p| p.2))) else { continue };
        if (tb - ta).abs() <= criterion.max_temp_drift_c && (cb - ca).abs() <= criterion.max_clock_drift_mhz {
            state.reached = Some(true);
            state.after_s = Some(start.0.saturating_sub(first.0) / 1000);
            state.temp_c = Some(f64::midpoint(ta, tb));
            state.sm_clock_mhz = Some(f64::midpoint(ca, cb));
            break;
        }
    }
    state
}
