//! The interactive monitor's state and behaviour: what the user sees (`App`), what each action does to it
//! (`update`), where the data comes from (`Feed`, `Player`) and how signals are sent safely (`signal`). The
//! vocabulary it shares with `--once` and the fleet view lives beside it: the process table in `table/`, the
//! actions and keymap in `keys/`.
//! Drawing lives in `ui/`, which only reads the `App`; the terminal lives in `terminal.rs`.

use std::sync::Arc;
use std::time::Duration;

use crate::advice::Thresholds;
use crate::config::ui::{DisplayMode, ThemeName, UiConfig};
use crate::keys::{KeyOverrides, Keymap, KeymapError};
use crate::pipeline::Pipeline;
use crate::sample::{MachineInfo, Snapshot, Tick};
use crate::table::{FixedFilters, ProcessRow, SortColumn, TableState};

pub mod feed;
pub mod inspect;
pub mod jobs;
pub mod player;
pub mod signal;
mod update;
mod update_jobs;

pub use feed::{Feed, FeedEvent};
pub use inspect::{HostInspector, NoInspector, NotOnThisMachine, ProcessInspector};
pub use signal::{PidfdSender, SignalKind, SignalOutcome, SignalSender, SignalTarget};

use player::Player;

/// How long the advice pane keeps a dim line for a warning or critical that cleared.
pub const CLEARED_KEPT_MS: u64 = 5 * 60 * 1000;
/// The most such lines it shows.
pub const CLEARED_SHOWN: usize = 3;

/// Why the monitor could not start. The messages are for people.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AppError {
    /// The config's `[keys]` do not make a keymap.
    #[error(transparent)]
    Keys(#[from] KeymapError),
    /// The recording to play has no samples.
    #[error("recording {0} has no samples")]
    EmptyRecording(String),
}

/// Everything the monitor is started with.
#[derive(Debug)]
pub struct AppOptions {
    /// The sampling interval (shown in help; the sampler paces itself).
    pub interval: Duration,
    /// No signals and no environment screen.
    pub readonly: bool,
    /// Show only these GPUs (NVML indices).
    pub only_gpus: Option<Vec<u32>>,
    /// Show only this user's processes.
    pub user: Option<String>,
    /// Show only these PIDs (empty: all).
    pub pids: Vec<u32>,
    /// Show only processes with a compute (`compute`) or graphics (`graphics`) context.
    pub compute: bool,
    pub graphics: bool,
    pub ui: UiConfig,
    /// `NO_COLOR` or `--no-color`: overrides the theme with bold/reverse only.
    pub no_color: bool,
    /// ASCII instead of box drawing, braille and block glyphs.
    pub ascii: bool,
    /// The `[keys]` table.
    pub keys: KeyOverrides,
    pub thresholds: Thresholds,
    /// Samples kept in the history.
    pub history_capacity: usize,
    /// Our uid and user name: the environment screen is for our own processes only.
    pub own_uid: u32,
    pub own_user: Option<String>,
    pub process_inspector: Box<dyn ProcessInspector>,
    pub signal_sender: Box<dyn SignalSender>,
    /// Where a recording starts playing.
    pub start: PlaybackStart,
}

impl Default for AppOptions {
    fn default() -> Self {
        Self {
            interval: Duration::from_secs(1),
            readonly: false,
            only_gpus: None,
            user: None,
            pids: Vec::new(),
            compute: false,
            graphics: false,
            ui: UiConfig::default(),
            no_color: false,
            ascii: false,
            keys: KeyOverrides::new(),
            thresholds: Thresholds::default(),
            history_capacity: 3600,
            own_uid: rustix::process::getuid().as_raw(),
            own_user: std::env::var("USER").ok(),
            process_inspector: Box::new(NoInspector),
            signal_sender: Box::new(PidfdSender::default()),
            start: PlaybackStart::Beginning,
        }
    }
}

/// Which screen is in front.
#[derive(Debug, Clone, PartialEq)]
pub enum Screen {
    Main,
    /// The keys, scrolled down by `offset` lines.
    Help {
        offset: usize,
    },
    /// One process: history graphs and CUDA libraries.
    Details {
        pid: u32,
        libraries: inspect::Pairs,
    },
    /// One process's environment, with the values of secrets masked unless `revealed`.
    Environment {
        pid: u32,
        vars: inspect::Pairs,
        offset: usize,
        revealed: bool,
    },
    /// Each NVLink link of one GPU: state, version and speed, RX/TX rates, error counters.
    NvLinks {
        gpu: u32,
    },
    /// The explanation of one finding (index into the findings), scrolled down by `offset` lines.
    Explain {
        index: usize,
        offset: usize,
    },
}

/// Which pane takes Up/Down.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Focus {
    Processes,
    Advice,
}

/// What a mouse click landed on (from `ui::hit_test`); `App::on_hit` decides what it does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hit {
    /// The `n`-th row of the process table ([`App::rows`]): the row drawn under the pointer, through the offset the
    /// table was drawn at.
    Row(usize),
    /// The header of the column that sorts by this.
    Header(SortColumn),
    /// The advice pane outside a finding (its title line).
    Advice,
    /// The `n`-th finding of the advice pane.
    Finding(usize),
    /// In the jobs view, the line of the `n`-th job of [`App::job_rows`].
    Job(usize),
    /// In the jobs view, the line of rank `rank` (an index into the job's ranks) of the `job`-th job.
    Rank { job: usize, rank: usize },
}

/// Where a recording starts playing.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum PlaybackStart {
    /// At its first sample.
    #[default]
    Beginning,
    /// At the sample nearest this many seconds from its start (`--at`), with the history up to there; past the
    /// end, at the end, with a status line that says so.
    At(f64),
    /// At the first sample where a warning or critical finding is active and a GPU has a process (`--demo`),
    /// with the history up to there; the start when there is none.
    FirstWarning,
}

/// The signal confirmation dialog.
#[derive(Debug, Clone, PartialEq)]
pub struct SignalDialog {
    pub targets: Vec<SignalTarget>,
    /// The job whose every rank it asks about (T/K/I in the jobs view), by name; `None` for selected or tagged
    /// processes.
    pub job: Option<String>,
    /// The highlighted button.
    pub button: DialogButton,
}

/// A button of the signal dialog, left to right: one per signal, then Cancel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DialogButton {
    Send(SignalKind),
    Cancel,
}

impl DialogButton {
    /// The buttons, left to right.
    pub const ALL: [Self; 4] =
        [Self::Send(SignalKind::Term), Self::Send(SignalKind::Kill), Self::Send(SignalKind::Int), Self::Cancel];

    /// What the button says.
    #[must_use]
    pub fn label(self) -> &'static str {
        match self {
            Self::Send(kind) => kind.name(),
            Self::Cancel => "Cancel",
        }
    }

    /// The button `step` places to the right (negative: to the left), wrapping around.
    #[must_use]
    pub fn moved(self, step: isize) -> Self {
        let at = Self::ALL.iter().position(|b| *b == self).unwrap_or(0);
        let n = Self::ALL.len().cast_signed();
        Self::ALL[(at.cast_signed() + step).rem_euclid(n).cast_unsigned()]
    }
}

/// A recording being played.
#[derive(Debug)]
pub struct Playback {
    pub player: Player,
    pub machine: Arc<MachineInfo>,
    pub ticks: Vec<Tick>,
    pub label: String,
}

/// What the event loop must do after an update.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    None,
    Quit,
    Suspend,
    /// Clear the terminal and draw everything again (`r`, F5).
    Redraw,
}

/// The monitor's state. `ui::draw` reads it; only `update` and the feed methods change it.
#[derive(Debug)]
pub struct App {
    pub keymap: Keymap,
    pub readonly: bool,
    pub fixed: FixedFilters,
    pub theme: ThemeName,
    pub ascii: bool,
    pub mouse: bool,
    /// Where the load colours change.
    pub load_colors: crate::config::ui::LoadColors,
    pub interval: Duration,
    pub own_uid: u32,
    pub own_user: Option<String>,
    thresholds: Thresholds,
    capacity: usize,
    pipeline: Pipeline,
    /// The view frozen by `p` on live data.
    frozen: Option<Box<Pipeline>>,
    pub playback: Option<Playback>,
    pub table: TableState,
    /// The jobs view (J): on or off, its selection and expanded jobs.
    pub jobs: jobs::JobsState,
    pub screen: Screen,
    pub dialog: Option<SignalDialog>,
    /// The last outcome or hint, shown in the status line until the next action.
    pub status: Option<String>,
    /// Set while the sampler reports NVML stalled.
    pub stalled_ms: Option<u64>,
    /// Set when the live feed failed or ended.
    pub feed_note: Option<String>,
    pub span_s: u64,
    pub mode: DisplayMode,
    pub focus: Focus,
    pub advice_selected: usize,
    /// Rows per page of the process table, as last laid out (for PageUp/PageDown).
    pub page_rows: usize,
    /// `f` (full panels) was pressed since the last frame: the event loop says in the status line when the panels
    /// do not fit (the ui decides the layout; the app cannot).
    pub mode_asked: bool,
    /// The last offset the explanation screen scrolls to, as last laid out (`None` until then: the widget clamps).
    pub scroll_end: Option<usize>,
    /// `o` was pressed: the next key picks the sort column.
    pub sort_chord: bool,
    inspector: Box<dyn ProcessInspector>,
    sender: Box<dyn SignalSender>,
}

impl App {
    /// An app for `feed`'s first data.
    ///
    /// # Errors
    /// The `[keys]` overrides name an unknown action or key; a recording has no ticks.
    pub fn new(options: AppOptions, feed: &Feed) -> Result<Self, AppError> {
        let keymap = Keymap::with_overrides(&options.keys)?;
        let (first, playback) = match feed {
            Feed::Live { first, .. } => ((**first).clone(), None),
            Feed::Recording { machine, ticks, label } => {
                let tick = ticks.first().ok_or_else(|| AppError::EmptyRecording(label.clone()))?;
                let playback = Playback {
                    player: Player::new(ticks),
                    machine: Arc::clone(machine),
                    ticks: ticks.clone(),
                    label: label.clone(),
                };
                (Snapshot { machine: Arc::clone(machine), tick: tick.clone() }, Some(playback))
            }
        };
        let theme = if options.no_color { ThemeName::NoColor } else { options.ui.theme };
        let start = options.start;
        let mut app = Self {
            keymap,
            readonly: options.readonly,
            fixed: FixedFilters {
                gpus: options.only_gpus,
                user: options.user,
                pids: options.pids,
                compute: options.compute,
                graphics: options.graphics,
            },
            theme,
            ascii: options.ascii,
            mouse: options.ui.mouse,
            load_colors: options.ui.load_colors,
            interval: options.interval,
            own_uid: options.own_uid,
            own_user: options.own_user,
            pipeline: Pipeline::new(&first, options.history_capacity, options.thresholds.clone()),
            thresholds: options.thresholds,
            capacity: options.history_capacity,
            frozen: None,
            playback,
            table: TableState::default(),
            jobs: jobs::JobsState::default(),
            screen: Screen::Main,
            dialog: None,
            status: None,
            stalled_ms: None,
            feed_note: None,
            span_s: options.ui.graph_span_s,
            mode: options.ui.mode,
            focus: Focus::Processes,
            advice_selected: 0,
            page_rows: 10,
            scroll_end: None,
            mode_asked: false,
            sort_chord: false,
            inspector: options.process_inspector,
            sender: options.signal_sender,
        };
        if let Feed::Live { backlog, .. } = feed {
            for snapshot in backlog {
                app.pipeline.ingest(snapshot);
            }
        }
        app.start_playback(start);
        Ok(app)
    }

    /// Moves a new recording's player to `start`, feeding the pipeline every sample up to there.
    fn start_playback(&mut self, start: PlaybackStart) {
        let Some(playback) = &self.playback else { return };
        let n = playback.ticks.len();
        let to = match start {
            PlaybackStart::Beginning => return,
            PlaybackStart::At(seconds) => {
                let first = playback.ticks.first().map_or(0, |t| t.at_ms);
                #[expect(
                    clippy::cast_possible_truncation,
                    clippy::cast_sign_loss,
                    reason = "a non-negative offset in milliseconds"
                )]
                let target = first + (seconds.max(0.0) * 1000.0) as u64;
                let last = playback.ticks.last().map_or(first, |t| t.at_ms);
                if target > last {
                    // Past the end: start at the end, and say so rather than pretend.
                    let length = crate::units::clock(std::time::Duration::from_millis(last.saturating_sub(first)));
                    self.status = Some(format!("recording is {length} long; starting at {length}"));
                }
                // The sample nearest the time asked for (a recording's samples are rarely on the second).
                let after = playback.ticks.partition_point(|t| t.at_ms <= target);
                let nearer_next = after > 0
                    && playback
                        .ticks
                        .get(after)
                        .is_some_and(|next| next.at_ms - target < target - playback.ticks[after - 1].at_ms);
                (after + usize::from(nearer_next)).max(1)
            }
            PlaybackStart::FirstWarning => {
                // Feed samples one by one until a warning holds with a process on screen.
                let machine = Arc::clone(&playback.machine);
                let mut shown = 1;
                while shown < n {
                    let tick = self.playback.as_ref().map(|p| p.ticks[shown].clone()).unwrap_or_default();
                    shown += 1;
                    self.pipeline.ingest_owned(Snapshot { machine: Arc::clone(&machine), tick });
                    let warned =
                        self.pipeline.findings().iter().any(|f| f.severity >= crate::advice::Severity::Warning);
                    if warned && !self.pipeline.history.latest().gpu_processes.is_empty() {
                        break;
                    }
                }
                if shown >= n
                    && !self.pipeline.findings().iter().any(|f| f.severity >= crate::advice::Severity::Warning)
                {
                    // No warning anywhere: play from the start after all.
                    self.apply_advance(&player::Advance::Rebuild { to: 1 });
                    return;
                }
                if let Some(playback) = &mut self.playback {
                    // The pipeline already holds these samples.
                    let _ = playback.player.skip_to(shown);
                }
                return;
            }
        };
        if let Some(playback) = &mut self.playback {
            let advance = playback.player.skip_to(to);
            self.apply_advance(&advance);
        }
    }

    /// The pipeline the screen shows: the frozen one while paused live, else the current one.
    #[must_use]
    pub fn view(&self) -> &Pipeline {
        self.frozen.as_deref().unwrap_or(&self.pipeline)
    }

    /// The pipeline of every sample taken in, frozen view or not.
    #[must_use]
    pub fn live_pipeline(&self) -> &Pipeline {
        &self.pipeline
    }

    /// What the rules watch before their first window is covered, for the samples the screen shows.
    #[must_use]
    pub fn judging(&self) -> Option<crate::advice::judging::Judging> {
        self.view().judging()
    }

    /// The warnings and criticals that cleared in the last [`CLEARED_KEPT_MS`], on the GPUs shown, most recent
    /// first.
    #[must_use]
    pub fn cleared(&self) -> Vec<crate::pipeline::Cleared> {
        let mut cleared = self.view().recently_cleared(CLEARED_KEPT_MS);
        if let Some(only) = &self.fixed.gpus {
            cleared.retain(|c| c.gpu_index.is_none_or(|g| only.contains(&g)));
        }
        cleared.truncate(CLEARED_SHOWN);
        cleared
    }

    /// The tick the screen shows.
    #[must_use]
    pub fn tick(&self) -> &Tick {
        self.view().history.latest()
    }

    /// The machine the screen shows.
    #[must_use]
    pub fn machine(&self) -> &Arc<MachineInfo> {
        self.view().history.machine()
    }

    /// Whether the live view is frozen.
    #[must_use]
    pub fn is_frozen(&self) -> bool {
        self.frozen.is_some()
    }

    /// The process rows as the table shows them.
    #[must_use]
    pub fn rows(&self) -> Vec<ProcessRow<'_>> {
        self.table.rows(self.tick(), &self.fixed)
    }

    /// How many process rows the table shows (no sort: for the layout).
    #[must_use]
    pub fn row_count(&self) -> usize {
        self.table.count(self.tick(), &self.fixed)
    }

    /// Index of the selected row in `rows`, if the selected process is still listed.
    #[must_use]
    pub fn selected_index(&self, rows: &[ProcessRow<'_>]) -> Option<usize> {
        let key = self.table.selected?;
        rows.iter().position(|r| r.key == key)
    }

    /// The findings on screen, filtered like the GPUs.
    #[must_use]
    pub fn findings(&self) -> Vec<&crate::advice::Finding> {
        self.view()
            .findings()
            .iter()
            .filter(|f| match (&self.fixed.gpus, f.gpu_index) {
                (Some(only), Some(gpu)) => only.contains(&gpu),
                _ => true,
            })
            .collect()
    }

    /// The accounts of each job's GPU time on screen, on the GPUs shown.
    #[must_use]
    pub fn accounts(&self) -> Vec<&crate::advice::account::Account> {
        let shown = |gpu: u32| self.fixed.gpus.as_ref().is_none_or(|only| only.contains(&gpu));
        self.view().accounts().iter().filter(|a| shown(a.gpu_index)).collect()
    }

    /// Takes in one message from the sampler.
    pub fn on_feed(&mut self, event: FeedEvent) {
        match event {
            FeedEvent::Snapshot(snapshot) => {
                self.stalled_ms = None;
                // The source's notes (a GPU lost, a field needing privilege) are written once: show them once.
                if !snapshot.tick.health.notes.is_empty() {
                    self.status = Some(snapshot.tick.health.notes.join("; "));
                }
                self.pipeline.ingest_owned(*snapshot);
            }
            FeedEvent::Stalled { for_ms } => self.stalled_ms = Some(for_ms),
            FeedEvent::Note(message) => self.status = Some(message),
            FeedEvent::Failed(message) => self.feed_note = Some(format!("sampling stopped: {message}")),
            FeedEvent::Ended => self.feed_note = Some("the source has no more data".to_owned()),
        }
    }

    /// Moves a recording on by `elapsed` real time. Returns whether anything new is shown.
    pub fn advance_playback(&mut self, elapsed: Duration) -> bool {
        let Some(playback) = &mut self.playback else {
            return false;
        };
        let advance = playback.player.advance(elapsed);
        self.apply_advance(&advance)
    }

    /// How long until the recording's next tick is due, when one is playing.
    #[must_use]
    pub fn until_next_frame(&self) -> Option<Duration> {
        self.playback.as_ref().and_then(|p| p.player.until_next())
    }

    pub(super) fn apply_advance(&mut self, advance: &player::Advance) -> bool {
        let Some(playback) = &self.playback else {
            return false;
        };
        match *advance {
            player::Advance::None => false,
            player::Advance::Forward { from, to } => {
                self.pipeline.ingest_ticks(playback.ticks.get(from..to.min(playback.ticks.len())).unwrap_or_default());
                true
            }
            player::Advance::Rebuild { to } => {
                let ticks = &playback.ticks[..to.min(playback.ticks.len())];
                if let Some(pipeline) =
                    Pipeline::from_ticks(&playback.machine, ticks, self.capacity, self.thresholds.clone())
                {
                    self.pipeline = pipeline;
                }
                true
            }
        }
    }
}
