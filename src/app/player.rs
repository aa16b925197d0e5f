//! Playing a recording back: a pure position/speed/pause state machine paced by elapsed time that the event
//! loop measures. It never reads the clock itself, so tests drive it with made-up durations.

use std::time::Duration;

use crate::sample::{Tick, UnixMs};

/// The playback speeds offered, slowest first.
pub const SPEEDS: [f64; 7] = [0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0];

/// What the app must do to its pipeline after the player moved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Advance {
    /// Nothing new to show.
    None,
    /// Ingest ticks `from..to` (indices into the recording) on top of what is there.
    Forward { from: usize, to: usize },
    /// Start over: a fresh pipeline fed ticks `0..to`.
    Rebuild { to: usize },
}

/// Playback state of one recording.
#[derive(Debug, Clone)]
pub struct Player {
    times_ms: Vec<UnixMs>,
    /// Number of ticks shown so far (the newest shown is `shown - 1`); at least 1.
    shown: usize,
    /// Playback time: where the virtual clock stands, in recording time.
    clock_ms: f64,
    speed_idx: usize,
    paused: bool,
}

impl Player {
    /// A player at the start of `ticks` (which must not be empty), with the first tick shown.
    #[must_use]
    pub fn new(ticks: &[Tick]) -> Self {
        let times_ms: Vec<UnixMs> = ticks.iter().map(|t| t.at_ms).collect();
        let clock_ms = times_ms.first().copied().unwrap_or(0) as f64;
        Self { times_ms, shown: 1, clock_ms, speed_idx: 2, paused: false }
    }

    #[must_use]
    pub fn speed(&self) -> f64 {
        SPEEDS[self.speed_idx]
    }

    #[must_use]
    pub fn is_paused(&self) -> bool {
        self.paused
    }

    /// Whether playback has reached the last tick.
    #[must_use]
    pub fn at_end(&self) -> bool {
        self.shown >= self.times_ms.len()
    }

    /// Time from the first tick to the playback position, and the recording's length.
    #[must_use]
    pub fn position(&self) -> (Duration, Duration) {
        let first = self.times_ms.first().copied().unwrap_or(0);
        let last = self.times_ms.last().copied().unwrap_or(first);
        let now = self.times_ms.get(self.shown.saturating_sub(1)).copied().unwrap_or(first);
        // Saturating: a recording whose clock stepped back (NTP during a run, an edited file) must not panic.
        (Duration::from_millis(now.saturating_sub(first)), Duration::from_millis(last.saturating_sub(first)))
    }

    /// Pauses or resumes.
    pub fn toggle_pause(&mut self) {
        self.paused = !self.paused;
    }

    pub fn slower(&mut self) {
        self.speed_idx = self.speed_idx.saturating_sub(1);
    }

    pub fn faster(&mut self) {
        self.speed_idx = (self.speed_idx + 1).min(SPEEDS.len() - 1);
    }

    /// How long until the next tick is due at the current speed; `None` when paused or at the end.
    #[must_use]
    pub fn until_next(&self) -> Option<Duration> {
        if self.paused {
            return None;
        }
        let next = *self.times_ms.get(self.shown)?;
        let wait_ms = ((next as f64 - self.clock_ms) / self.speed()).max(0.0);
        Some(Duration::from_secs_f64(wait_ms / 1000.0))
    }

    /// Moves the virtual clock on by `elapsed` real time and shows every tick that became due.
    pub fn advance(&mut self, elapsed: Duration) -> Advance {
        if self.paused || self.at_end() {
            return Advance::None;
        }
        self.clock_ms += elapsed.as_secs_f64() * 1000.0 * self.speed();
        let from = self.shown;
        while self.times_ms.get(self.shown).is_some_and(|t| *t as f64 <= self.clock_ms) {
            self.shown += 1;
        }
        if self.at_end() {
            self.paused = true;
        }
        if self.shown > from { Advance::Forward { from, to: self.shown } } else { Advance::None }
    }

    /// Seeks by `delta_ms` (negative goes back).
    pub fn seek(&mut self, delta_ms: i64) -> Advance {
        let current = self.times_ms.get(self.shown - 1).copied().unwrap_or(0);
        let target = current.saturating_add_signed(delta_ms);
        let shown = self.times_ms.partition_point(|t| *t <= target).max(1);
        self.go_to(shown)
    }

    pub fn jump_start(&mut self) -> Advance {
        self.go_to(1)
    }

    pub fn jump_end(&mut self) -> Advance {
        self.go_to(self.times_ms.len().max(1))
    }

    /// Shows the first `shown` ticks (at least one): forward ingests, back rebuilds.
    pub fn skip_to(&mut self, shown: usize) -> Advance {
        self.go_to(shown.clamp(1, self.times_ms.len().max(1)))
    }

    fn go_to(&mut self, shown: usize) -> Advance {
        let from = self.shown;
        self.shown = shown;
        {
            self.clock_ms = self.times_ms.get(shown - 1).copied().unwrap_or(0) as f64;
        }
        match shown.cmp(&from) {
            std::cmp::Ordering::Greater => Advance::Forward { from, to: shown },
            std::cmp::Ordering::Equal => Advance::None,
            std::cmp::Ordering::Less => Advance::Rebuild { to: shown },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ticks(n: u64) -> Vec<Tick> {
        (0..n).map(|i| Tick { at_ms: 1_000_000 + i * 1000, ..Tick::default() }).collect()
    }

    #[test]
    fn plays_at_speed_and_stops_at_the_end() {
        let mut player = Player::new(&ticks(10));
        assert_eq!(player.until_next(), Some(Duration::from_secs(1)));
        assert_eq!(player.advance(Duration::from_millis(999)), Advance::None);
        assert_eq!(player.advance(Duration::from_millis(1)), Advance::Forward { from: 1, to: 2 });
        player.faster();
        player.faster();
        assert!((player.speed() - 4.0).abs() < f64::EPSILON);
        assert_eq!(player.advance(Duration::from_secs(1)), Advance::Forward { from: 2, to: 6 });
        assert_eq!(player.advance(Duration::from_mins(1)), Advance::Forward { from: 6, to: 10 });
        assert!(player.at_end() && player.is_paused());
        assert_eq!(player.position(), (Duration::from_secs(9), Duration::from_secs(9)));
    }

    #[test]
    fn pause_stops_the_clock() {
        let mut player = Player::new(&ticks(10));
        player.toggle_pause();
        assert_eq!(player.until_next(), None);
        assert_eq!(player.advance(Duration::from_secs(5)), Advance::None);
        player.toggle_pause();
        assert_eq!(player.advance(Duration::from_secs(2)), Advance::Forward { from: 1, to: 3 });
    }

    #[test]
    fn seeking_back_rebuilds_and_forward_ingests() {
        let mut player = Player::new(&ticks(200));
        assert_eq!(player.seek(60_000), Advance::Forward { from: 1, to: 61 });
        assert_eq!(player.seek(-10_000), Advance::Rebuild { to: 51 });
        assert_eq!(player.jump_start(), Advance::Rebuild { to: 1 });
        assert_eq!(player.seek(-10_000), Advance::None);
        assert_eq!(player.jump_end(), Advance::Forward { from: 1, to: 200 });
        for _ in 0..10 {
            player.slower();
        }
        assert!((player.speed() - 0.25).abs() < f64::EPSILON);
    }
}
