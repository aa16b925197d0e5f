//! Which reading tiers are due at a given time. Periods are wall time taken from the sample clock, not tick
//! counts, so they hold whatever the sampling interval is.

use crate::sample::UnixMs;

/// How early a tier may be read, at most, so that sampling jitter does not skip a whole period.
pub const MAX_EARLY_MS: u64 = 250;

/// How often the slower tiers are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TierPeriods {
    /// Process lists, per-process utilization, energy, throttle counters, encoder/decoder utilization.
    pub medium_ms: u64,
    /// ECC counts, retired pages, remapped rows, PCIe replay counter.
    pub slow_ms: u64,
    /// PCIe RX/TX throughput, on its own thread per GPU (each reading blocks 20 ms); 0 turns it off.
    pub pcie_ms: u64,
    /// GPM metrics: on an H200 (`tools/nvml_probe.rs`) a sample costs about 0.1 ms of CPU, the metrics a few µs,
    /// and GR engine active 1.5 ms more where a command asks for it (`OptionalReadings`), so they are read at most
    /// this often whatever the interval. The metrics cover the time between two samples.
    pub gpm_ms: u64,
}

impl Default for TierPeriods {
    fn default() -> Self {
        Self { medium_ms: 2_000, slow_ms: 30_000, pcie_ms: 2_000, gpm_ms: 2_000 }
    }
}

/// The tiers due at one read. The fast tier is read every time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Due {
    pub medium: bool,
    pub slow: bool,
}

/// One period on the sample clock: due on the first call, then once each period has passed.
#[derive(Debug, Clone, Copy)]
pub struct Every {
    period_ms: u64,
    last_ms: Option<UnixMs>,
}

impl Every {
    /// Due every `period_ms` of sample time.
    #[must_use]
    pub const fn new(period_ms: u64) -> Self {
        Self { period_ms, last_ms: None }
    }

    /// Whether the period has passed at `now_ms`, and if so records a read at `now_ms`.
    ///
    /// Due when the period has passed, less a tenth of the period (at most [`MAX_EARLY_MS`]) so that a read arriving
    /// a little early (sampling jitter) does not push it a whole interval later. A clock that went backwards makes it
    /// due, so a stepped clock never stalls it.
    pub fn due(&mut self, now_ms: UnixMs) -> bool {
        let due = match self.last_ms {
            None => true,
            Some(prev) if now_ms < prev => true,
            Some(prev) => now_ms - prev + (self.period_ms / 10).min(MAX_EARLY_MS) >= self.period_ms,
        };
        if due {
            self.last_ms = Some(now_ms);
        }
        due
    }
}

/// Says which of the workers' tiers are due, given the sample time. The first call makes every tier due. (GPM has
/// its own [`Every`] on the reader's side, which asks the GPM thread.)
#[derive(Debug, Clone)]
pub struct TierScheduler {
    medium: Every,
    slow: Every,
}

impl TierScheduler {
    /// A scheduler with these periods; nothing has been read yet.
    #[must_use]
    pub fn new(periods: TierPeriods) -> Self {
        Self { medium: Every::new(periods.medium_ms), slow: Every::new(periods.slow_ms) }
    }

    /// The tiers due at `now_ms`, and records them as read.
    pub fn due(&mut self, now_ms: UnixMs) -> Due {
        Due { medium: self.medium.due(now_ms), slow: self.slow.due(now_ms) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(interval_ms: u64, n: u64) -> (Vec<u64>, Vec<u64>) {
        let mut s = TierScheduler::new(TierPeriods::default());
        let (mut medium, mut slow) = (Vec::new(), Vec::new());
        for i in 0..n {
            let now = 1_700_000_000_000 + i * interval_ms;
            let due = s.due(now);
            if due.medium {
                medium.push(i);
            }
            if due.slow {
                slow.push(i);
            }
        }
        (medium, slow)
    }

    #[test]
    fn first_read_makes_everything_due() {
        let mut s = TierScheduler::new(TierPeriods::default());
        assert_eq!(s.due(5), Due { medium: true, slow: true });
        assert_eq!(s.due(6), Due { medium: false, slow: false });
    }

    #[test]
    fn one_second_interval() {
        let (medium, slow) = run(1_000, 61);
        assert_eq!(medium, (0..61).step_by(2).collect::<Vec<_>>());
        assert_eq!(slow, vec![0, 30, 60]);
    }

    #[test]
    fn tenth_of_a_second_interval_holds_wall_periods() {
        let (medium, slow) = run(100, 601);
        // Due every 1.8 s at the earliest (2 s less the tenth), i.e. every 18 to 20 reads, never more often.
        assert!(medium.windows(2).all(|w| (18..=20).contains(&(w[1] - w[0]))), "{medium:?}");
        assert_eq!(slow.len(), 3, "{slow:?}");
    }

    #[test]
    fn five_second_interval_reads_medium_every_time() {
        let (medium, slow) = run(5_000, 13);
        assert_eq!(medium.len(), 13);
        assert_eq!(slow, vec![0, 6, 12]);
    }

    #[test]
    fn jitter_does_not_skip_a_period() {
        let mut s = TierScheduler::new(TierPeriods::default());
        assert!(s.due(0).medium);
        assert!(!s.due(1_010).medium);
        assert!(s.due(1_990).medium, "10 ms early still counts");
    }

    #[test]
    fn gpm_is_read_every_two_seconds_at_10_hz() {
        let mut gpm = Every::new(TierPeriods::default().gpm_ms);
        let gpm_reads: Vec<u64> = (0..60u64).map(|i| i * 100).filter(|&t| gpm.due(t)).collect();
        // A tenth of the period may come early (sampling jitter), so reads land 1.8–2 s apart.
        assert_eq!(gpm_reads, vec![0, 1_800, 3_600, 5_400]);
    }

    #[test]
    fn clock_going_back_makes_due() {
        let mut s = TierScheduler::new(TierPeriods::default());
        s.due(10_000);
        assert_eq!(s.due(4_000), Due { medium: true, slow: true });
    }
}
