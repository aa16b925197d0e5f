//! The windows several rules read: a GPU's or MIG slice's over a window (how much it worked, what it received over
//! PCIe, how often it was throttled), a process's own window over its series, and the throttle reasons and PCIe
//! lane rates they use. A leaf below the rules: `waiting`, `pace`, `jobs` and the account read it, and it reads
//! only the evaluation context and the history.

use super::super::Thresholds;
use super::super::place::Place;
use super::super::window::{Ctx, MIB, Num, Span, pct_label};
use crate::history::{InputSample, ProcessSeries, Readings};
use crate::sample::throttle;

/// Throttle reasons that explain a slow GPU by themselves (idle and application clocks do not).
pub(crate) const THROTTLE_REASONS: u64 = throttle::SW_POWER_CAP
    | throttle::HW_SLOWDOWN
    | throttle::SW_THERMAL_SLOWDOWN
    | throttle::HW_THERMAL_SLOWDOWN
    | throttle::HW_POWER_BRAKE_SLOWDOWN;

/// `PCIe` bandwidth per lane in GB/s, by generation (after encoding overhead).
pub(crate) fn lane_gb_s(generation: u32) -> Option<f64> {
    Some(match generation {
        1 => 0.25,
        2 => 0.5,
        3 => 0.985,
        4 => 1.969,
        5 => 3.938,
        6 => 7.563,
        _ => return None,
    })
}

/// One GPU, or one MIG slice, over a window: how much it worked and what it received.
#[derive(Debug, Clone, Copy)]
pub(crate) struct GpuWindow<'a> {
    /// The GPU or slice (see [`Place`]).
    pub place: Place<'a>,
    pub span: Span,
    pub util: Option<f64>,
    pub sm_active: Option<f64>,
    pub rx_kb_s: Option<f64>,
    /// The link's capacity in KB/s (generation × width, as trained now; the maximum where not read).
    pub link_kb_s: Option<f64>,
    /// Share of samples with a power, thermal or hardware throttle reason (the card's: a slice shares its clocks).
    pub throttled_share: f64,
}

impl<'a> GpuWindow<'a> {
    pub(crate) fn of(ctx: &Ctx<'_>, place: Place<'a>, secs: u64) -> Option<Self> {
        let span = ctx.window(secs)?;
        let gpu = place.gpu;
        let info = ctx.gpu_info(gpu.index);
        #[expect(clippy::cast_possible_truncation, clippy::cast_sign_loss, reason = "a PCIe generation, 1 to 6")]
        let generation = span.median(&gpu.pcie_gen).map(|g| g.round() as u32).or(info.and_then(|i| i.max_pcie_gen));
        #[expect(clippy::cast_possible_truncation, clippy::cast_sign_loss, reason = "a PCIe link width, 1 to 32")]
        let width = span.median(&gpu.pcie_width).map(|w| w.round() as u32).or(info.and_then(|i| i.max_pcie_width));
        let link_kb_s = generation.and_then(lane_gb_s).zip(width).map(|(lane, w)| lane * f64::from(w) * 1e6);
        Some(Self {
            place,
            span,
            util: place.util().and_then(|u| span.mean(u)),
            sm_active: span.mean(place.sm_active()),
            rx_kb_s: place.pcie_rx().and_then(|rx| span.mean(rx)),
            link_kb_s,
            throttled_share: span.share(&gpu.throttle_bits, |b| b & THROTTLE_REASONS != 0),
        })
    }

    /// How much the GPU worked: SM activity where GPM answers, else utilization.
    pub(crate) fn work(&self) -> Option<f64> {
        self.sm_active.or(self.util)
    }

    /// Whether it works little enough for a cause of waiting to be worth naming.
    pub(crate) fn waiting(&self, t: &Thresholds) -> bool {
        self.work().is_some_and(|w| w < t.waiting_max_sm_active_pct)
    }

    /// "GPM SM activity mean 6 % (GPU util mean 72 %) over 30 s", or on a MIG slice "slice 1g.18gb (GI 7) SM
    /// activity mean 6 % over 30 s (GPM of its GPU instance)".
    pub(crate) fn evidence(&self) -> String {
        let util = self.util.map_or_else(|| "N/A".to_owned(), pct_label);
        match (self.place.slice, self.sm_active) {
            (Some(slice), a) => format!(
                "slice {} SM activity mean {} over {} (GPM of its GPU instance; the whole GPU's utilization does not \
                 describe a slice)",
                crate::text::visible(&slice.label),
                a.map_or_else(|| "N/A".to_owned(), pct_label),
                self.span.label()
            ),
            (None, Some(a)) => {
                format!("GPM SM activity mean {} (GPU util mean {util}) over {}", pct_label(a), self.span.label())
            }
            (None, None) => format!("GPU util mean {util} over {} (no GPM on this GPU)", self.span.label()),
        }
    }

    /// Mean `PCIe` RX as a share of the link's capacity.
    pub(super) fn rx_share(&self) -> Option<f64> {
        self.rx_kb_s.zip(self.link_kb_s).filter(|(_, cap)| *cap > 0.0).map(|(rx, cap)| rx / cap)
    }
}

/// A process's own window (its samples have their own time column).
pub(super) struct ProcWindow<'a> {
    pub(super) series: &'a ProcessSeries,
    pub(super) span: Span,
}

impl<'a> ProcWindow<'a> {
    pub(super) fn of(ctx: &Ctx<'a>, pid: u32, secs: u64) -> Option<Self> {
        let series = ctx.process(pid)?;
        let span = Span::of(&series.times, secs, ctx.t.min_window_coverage)?;
        Some(Self { series, span })
    }

    pub(super) fn median<T: Num + 'a, S: Readings<T> + 'a>(
        &self,
        pick: impl Fn(&'a ProcessSeries) -> &'a S,
    ) -> Option<f64> {
        self.span.median(pick(self.series))
    }

    pub(super) fn share<T: Copy + 'a, S: Readings<T> + 'a>(
        &self,
        pick: impl Fn(&'a ProcessSeries) -> &'a S,
        pred: impl Fn(T) -> bool,
    ) -> f64 {
        self.span.share(pick(self.series), pred)
    }

    /// The busiest thread's CPU (median, % of one core); the whole process where threads were not read.
    pub(super) fn busiest_thread(&self) -> Option<f64> {
        self.median(|p| &p.max_thread_cpu_pct).or_else(|| self.median(|p| &p.cpu_pct))
    }

    /// Share of samples with the process, a thread of it or a child in D.
    pub(super) fn in_d_share(&self) -> f64 {
        let own = self.share(|p| &p.threads_in_d, |n| n > 0);
        let state = self.share(|p| &p.state, |s| s == 'D');
        let children = self.share(|p| &p.children_in_d, |n| n > 0);
        own.max(state).max(children)
    }

    /// The input records of the window (see [`InputSample`]).
    pub(super) fn inputs(&self) -> impl Iterator<Item = Option<InputSample>> + 'a {
        self.span.values(&self.series.input)
    }

    /// The `DataLoader` workers that fed the GPU: the most children that did work at one sample of the window
    /// (idle persistent workers and compile workers left out); the children now where no record exists.
    pub(super) fn workers(&self) -> u32 {
        let busy = self.inputs().flatten().map(|i| u32::from(i.busy_workers)).max();
        busy.unwrap_or_else(|| self.series.n_children.last_reading().unwrap_or(0))
    }

    /// Whether the tree writes much more than it reads (a checkpoint writer, not an input pipeline).
    pub(super) fn writes_dominate(&self, t: &Thresholds) -> bool {
        let write = self.median(|p| &p.tree_write_bytes_per_s).unwrap_or(0.0);
        let read = self.median(|p| &p.tree_read_bytes_per_s).unwrap_or(0.0);
        write >= t.read_low_mib_s * MIB && write >= 2.0 * read
    }
}
