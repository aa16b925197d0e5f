//! The layout planner: a pure function from the terminal's size and what there is to show (GPUs, process rows,
//! the rows the findings need) to where every part of the main screen goes. It never reads the app, so a table
//! of sizes tests it.
//!
//! When space runs short it gives things up in this order: taller graphs, then lines per GPU (four, three, two,
//! one), then the advice pane's extra rows, then the host line (folded into the header), then the GPU area's
//! title, then the worst job's bar, then the advice pane (a one-line strip), then GPUs beyond what fits (a "+N
//! more" line). Below [`MIN_WIDTH`]x[`MIN_HEIGHT`] nothing is drawn but a message.
//!
//! The advice pane's least includes one bar of where a job's GPU time went (the worst job's) when there is a job:
//! it takes a row of the findings' extra rows, and nothing else from the screen. The findings get their rows
//! next; the other jobs' bars get spare rows only, after the table's need and before taller panels
//! ([`Plan::advice_bars`]).

use ratatui::layout::Rect;

use super::config::DisplayMode;

/// The smallest terminal the monitor draws in; below it a message says what size is needed.
pub const MIN_WIDTH: u16 = 40;
pub const MIN_HEIGHT: u16 = 10;

/// Terminals this tall and taller have a footer row with the key hints.
pub const FOOTER_FROM: u16 = 20;

/// The smallest full panel: a border, five lines of readings and a border.
pub const FULL_PANEL_HEIGHT: u16 = 7;
/// The tallest panel; past this the graphs are tall enough and the table gets the rest.
const MAX_PANEL_HEIGHT: u16 = 22;
/// Full panels need this many columns each.
const FULL_PANEL_WIDTH: u16 = 100;

/// How each GPU is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GpuStyle {
    /// `per_gpu` lines per GPU (1 to 4): readings; clocks and PCIe link; GPM and throttle badges; a sparkline.
    /// Without `titled`, the area has no title line; when the area is shorter than the GPUs, the last line says
    /// how many more there are.
    Lines { per_gpu: u16, titled: bool },
    /// A boxed panel per GPU `height` rows high with history graphs, `columns` panels side by side.
    Full { columns: u16, height: u16 },
}

/// How the findings are shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AdviceStyle {
    /// A pane with a title line; each finding wrapped, as much of each as fits, never cut mid-sentence.
    Pane,
    /// One line: the worst finding's title when it fits whole, else the count per severity.
    Strip,
}

/// What the planner needs to know besides the size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LayoutInput {
    pub width: u16,
    pub height: u16,
    /// GPUs on screen (at least one is assumed).
    pub n_gpus: u16,
    /// Rows of the process table (at least one: "no GPU processes" takes a row).
    pub n_rows: u16,
    /// A banner line is shown (NVML stalled, the feed ended).
    pub banner: bool,
    /// The host panel may draw graphs (not in ASCII mode, where braille is unavailable).
    pub host_graphs: bool,
    pub mode: DisplayMode,
    /// Rows the advice pane needs to show every finding whole, its title included.
    pub advice_full: u16,
    /// Rows the advice pane needs for the least it shows as a pane: its title and the selected finding's title.
    pub advice_least: u16,
    /// Bars the advice pane would draw, one row each: one per job with an account of its GPU time.
    pub bars: u16,
}

/// Where everything goes on the main screen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Plan {
    pub header: Rect,
    pub banner: Option<Rect>,
    pub gpus: Rect,
    pub gpu_style: GpuStyle,
    /// The host panel; `None` when it is folded into the header.
    pub host: Option<Rect>,
    /// The host panel has graphs (five rows).
    pub host_full: bool,
    pub table: Rect,
    pub advice: Rect,
    pub advice_style: AdviceStyle,
    /// Rows of the advice pane that draw jobs' bars, under its title (none in a strip).
    pub advice_bars: u16,
    /// The key hints; `None` on short terminals.
    pub footer: Option<Rect>,
}

fn take(area: &mut Rect, height: u16) -> Rect {
    let height = height.min(area.height);
    let taken = Rect { height, ..*area };
    area.y += height;
    area.height -= height;
    taken
}

/// One way to lay the screen out, before the spare rows are handed out.
#[derive(Debug, Clone, Copy)]
struct Candidate {
    gpu_style: GpuStyle,
    gpus_h: u16,
    host_h: u16,
    advice_style: AdviceStyle,
    advice_h: u16,
}

/// The layout of the main screen for `input`, or `None` when the terminal is smaller than
/// [`MIN_WIDTH`]x[`MIN_HEIGHT`].
#[must_use]
pub fn plan(input: &LayoutInput) -> Option<Plan> {
    let LayoutInput { width, height, .. } = *input;
    if width < MIN_WIDTH || height < MIN_HEIGHT {
        return None;
    }
    let n_gpus = input.n_gpus.max(1);
    let n_rows = input.n_rows.max(1);
    let tall = height >= 40;
    let banner_h = u16::from(input.banner);
    let footer_h = u16::from(height >= FOOTER_FROM);
    let fixed = 1 + banner_h + footer_h;
    let table_min = table_min(height, n_rows);
    let table_want = 2 + n_rows;
    // The findings' rows and the bars' together: the least with the worst job's bar, the full with every bar.
    let first_bar = input.bars.min(1);
    let findings_full = input.advice_full.max(2);
    let findings_least = input.advice_least.clamp(2, findings_full);
    let advice_full = findings_full + input.bars;
    let advice_least = findings_least + first_bar;
    // The pane's share is the findings' (or its least, with the worst job's bar): the bar takes a row from the
    // findings' extra rows there, never a GPU line; the other bars get spare rows only.
    let advice_want = findings_full.max(advice_least);
    // The advice pane's share before the table is served: all of it, up to a third of the screen.
    let advice_target = advice_want.min((height / 3).max(advice_least));
    let host_rich = if tall && input.host_graphs { 5 } else { 1 };

    let columns = (width / FULL_PANEL_WIDTH).clamp(1, n_gpus);
    let panel_rows = n_gpus.div_ceil(columns);
    let candidates = candidates(input, n_gpus, host_rich, advice_target, (advice_least, findings_least));
    let fits = |c: &Candidate| fixed + c.gpus_h + c.host_h + c.advice_h + table_min <= height;
    let chosen = candidates.iter().copied().find(fits).unwrap_or_else(|| squeezed(height, fixed, table_min));

    // Hand out the spare rows: the table up to its need, then the advice pane up to all of its findings and bars, then
    // taller panels, then the table again (empty rows).
    let mut spare = height.saturating_sub(fixed + chosen.gpus_h + chosen.host_h + chosen.advice_h + table_min);
    let mut give = |want: u16| {
        let given = want.min(spare);
        spare -= given;
        given
    };
    let mut table_h = table_min + give(table_want.saturating_sub(table_min));
    let mut advice_h = chosen.advice_h;
    if chosen.advice_style == AdviceStyle::Pane {
        advice_h += give(advice_full.saturating_sub(advice_h));
    }
    let (gpu_style, gpus_h) = match chosen.gpu_style {
        GpuStyle::Full { columns, height: panel_h } => {
            let given = give(panel_rows * (MAX_PANEL_HEIGHT - panel_h));
            let grow = given / panel_rows;
            // Rows that would make one row of panels taller than the others go back.
            spare += given - grow * panel_rows;
            let panel_h = panel_h + grow;
            (GpuStyle::Full { columns, height: panel_h }, panel_rows * panel_h)
        }
        other @ GpuStyle::Lines { .. } => (other, chosen.gpus_h),
    };
    table_h += spare;

    let mut rest = Rect::new(0, 0, width, height);
    let header = take(&mut rest, 1);
    let banner = (banner_h > 0).then(|| take(&mut rest, 1));
    let gpus = take(&mut rest, gpus_h);
    let host = (chosen.host_h > 0).then(|| take(&mut rest, chosen.host_h));
    let table = take(&mut rest, table_h);
    let advice = take(&mut rest, advice_h);
    let footer = (footer_h > 0).then(|| take(&mut rest, 1));
    // The worst job's bar once the findings have their least, the other bars once they have all they need.
    let advice_bars = match chosen.advice_style {
        AdviceStyle::Pane if advice.height >= advice_least => {
            (first_bar + advice.height.saturating_sub(findings_full + first_bar)).min(input.bars)
        }
        _ => 0,
    };
    Some(Plan {
        header,
        banner,
        gpus,
        gpu_style,
        host,
        host_full: chosen.host_h == 5,
        table,
        advice,
        advice_style: chosen.advice_style,
        advice_bars,
        footer,
    })
}

/// The rows the process table keeps for itself however short the screen (it takes what it needs after the advice).
fn table_min(height: u16, n_rows: u16) -> u16 {
    2 + n_rows.min(match height {
        40.. => 8,
        24.. => 4,
        12.. => 2,
        _ => 1,
    })
}

/// When not even one line per GPU fits: the GPU area takes what is left and says how many more there are.
fn squeezed(height: u16, fixed: u16, table_min: u16) -> Candidate {
    Candidate {
        gpu_style: GpuStyle::Lines { per_gpu: 1, titled: false },
        gpus_h: height.saturating_sub(fixed + 1 + table_min).max(1),
        host_h: 0,
        advice_style: AdviceStyle::Strip,
        advice_h: 1,
    }
}

/// The layouts to try, best first: panels or lines per GPU, a rich or one-line host, the advice pane at its
/// share or its least (with the worst job's bar, then without), and last the advice as a one-line strip.
fn candidates(
    input: &LayoutInput,
    n_gpus: u16,
    host_rich: u16,
    advice_target: u16,
    (advice_least, findings_least): (u16, u16),
) -> Vec<Candidate> {
    let width = input.width;
    let columns = (width / FULL_PANEL_WIDTH).clamp(1, n_gpus);
    let panel_rows = n_gpus.div_ceil(columns);
    let lines = |per: u16, titled: bool| (GpuStyle::Lines { per_gpu: per, titled }, u16::from(titled) + per * n_gpus);
    let mut gpu_styles = Vec::new();
    if input.mode != DisplayMode::Compact && width >= FULL_PANEL_WIDTH {
        gpu_styles.push((GpuStyle::Full { columns, height: FULL_PANEL_HEIGHT }, panel_rows * FULL_PANEL_HEIGHT));
    }
    if input.mode != DisplayMode::Compact {
        gpu_styles.extend([lines(4, true), lines(3, true), lines(2, true)]);
    }
    let one_line = lines(1, true);
    gpu_styles.push(one_line);

    let pane = |h: u16| (AdviceStyle::Pane, h);
    let mut candidates: Vec<Candidate> = Vec::new();
    let mut push = |(gpu_style, gpus_h): (GpuStyle, u16), host_h: u16, (advice_style, advice_h): (AdviceStyle, u16)| {
        candidates.push(Candidate { gpu_style, gpus_h, host_h, advice_style, advice_h });
    };
    for style in &gpu_styles {
        push(*style, host_rich, pane(advice_target));
    }
    if host_rich > 1 {
        push(one_line, 1, pane(advice_target));
    }
    push(one_line, 1, pane(advice_least));
    push(one_line, 0, pane(advice_least));
    push(lines(1, false), 0, pane(advice_least));
    // The worst job's bar goes last before the pane itself.
    if findings_least < advice_least {
        push(lines(1, false), 0, pane(findings_least));
    }
    push(lines(1, false), 0, (AdviceStyle::Strip, 1));
    // `display mode = full` keeps the panels while they fit at all, before anything else is given up.
    if input.mode == DisplayMode::Full
        && let Some(full) = gpu_styles.first().filter(|s| matches!(s.0, GpuStyle::Full { .. }))
    {
        candidates.insert(
            1,
            Candidate {
                gpu_style: full.0,
                gpus_h: full.1,
                host_h: 1,
                advice_style: AdviceStyle::Pane,
                advice_h: advice_least,
            },
        );
    }
    candidates
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(width: u16, height: u16, n_gpus: u16, n_rows: u16, advice_full: u16) -> LayoutInput {
        LayoutInput {
            width,
            height,
            n_gpus,
            n_rows,
            banner: false,
            host_graphs: true,
            mode: DisplayMode::Auto,
            advice_full,
            advice_least: advice_full.min(3),
            bars: 0,
        }
    }

    /// Every part lies inside the screen, one under the other, and the rows add up to the height.
    fn check_tiles(plan: &Plan, width: u16, height: u16) {
        let mut parts = vec![plan.header];
        parts.extend(plan.banner);
        parts.push(plan.gpus);
        parts.extend(plan.host);
        parts.extend([plan.table, plan.advice]);
        parts.extend(plan.footer);
        let mut y = 0;
        for part in &parts {
            assert_eq!((part.y, part.width), (y, width), "{plan:?}");
            y += part.height;
        }
        assert_eq!(y, height, "{plan:?}");
    }

    #[test]
    fn degrades_step_by_step_and_never_refuses_from_40x10() {
        use AdviceStyle::{Pane, Strip};
        // (width, height, GPUs, process rows, advice rows wanted) -> (GPU style, host rows, advice style)
        type Case = ((u16, u16, u16, u16, u16), (GpuStyle, u16, AdviceStyle));
        let cases: &[Case] = &[
            ((200, 60, 8, 12, 14), (GpuStyle::Full { columns: 2, height: 7 }, 5, Pane)),
            ((160, 50, 8, 8, 16), (GpuStyle::Lines { per_gpu: 2, titled: true }, 5, Pane)),
            ((120, 40, 1, 3, 8), (GpuStyle::Full { columns: 1, height: 20 }, 5, Pane)),
            ((80, 24, 8, 8, 9), (GpuStyle::Lines { per_gpu: 1, titled: true }, 1, Pane)),
            ((80, 24, 1, 2, 5), (GpuStyle::Lines { per_gpu: 4, titled: true }, 1, Pane)),
            ((100, 15, 2, 4, 8), (GpuStyle::Lines { per_gpu: 1, titled: true }, 1, Pane)),
            ((60, 20, 1, 3, 6), (GpuStyle::Lines { per_gpu: 4, titled: true }, 1, Pane)),
            ((60, 20, 8, 10, 10), (GpuStyle::Lines { per_gpu: 1, titled: true }, 1, Pane)),
            ((60, 16, 8, 10, 10), (GpuStyle::Lines { per_gpu: 1, titled: false }, 0, Pane)),
            ((40, 10, 1, 1, 5), (GpuStyle::Lines { per_gpu: 1, titled: true }, 1, Pane)),
            ((40, 10, 8, 10, 10), (GpuStyle::Lines { per_gpu: 1, titled: false }, 0, Strip)),
        ];
        for ((w, h, gpus, rows, advice), (style, host_h, advice_style)) in cases {
            let plan = plan(&input(*w, *h, *gpus, *rows, *advice)).expect("no refusal from 40x10");
            check_tiles(&plan, *w, *h);
            let got = (plan.gpu_style, plan.host.map_or(0, |r| r.height), plan.advice_style);
            assert_eq!(got, (*style, *host_h, *advice_style), "{w}x{h} with {gpus} GPUs: {plan:?}");
            assert!(plan.table.height >= 3, "{w}x{h}: the table keeps a header and a row: {plan:?}");
        }
        assert_eq!(plan(&input(39, 24, 1, 1, 2)), None);
        assert_eq!(plan(&input(80, 9, 1, 1, 2)), None);
    }

    #[test]
    fn the_worst_jobs_bar_shows_wherever_the_pane_does_and_the_others_after_the_findings() {
        // (width, height, GPUs, process rows, findings' rows wanted, bars) -> (advice style, advice rows, bar rows)
        type Case = ((u16, u16, u16, u16, u16, u16), (AdviceStyle, u16, u16));
        let cases: &[Case] = &[
            // Spare rows: every bar, after every finding.
            ((200, 60, 2, 3, 4, 3), (AdviceStyle::Pane, 7, 3)),
            ((120, 40, 1, 3, 5, 1), (AdviceStyle::Pane, 6, 1)),
            // The panels keep their rows: the worst job's bar in a row of the findings', other bars in spare rows.
            ((200, 60, 8, 12, 14, 8), (AdviceStyle::Pane, 14, 1)),
            ((160, 50, 8, 8, 6, 8), (AdviceStyle::Pane, 8, 2)),
            // 80x24, one job per GPU: the findings' least and the worst job's bar, then the findings' rows.
            ((80, 24, 8, 8, 9, 8), (AdviceStyle::Pane, 4, 1)),
            ((80, 24, 1, 2, 5, 1), (AdviceStyle::Pane, 6, 1)),
            ((80, 24, 2, 2, 2, 2), (AdviceStyle::Pane, 4, 2)),
            // Short screens: the worst job's bar and the findings' least; the findings get the rest.
            ((100, 15, 2, 4, 8, 2), (AdviceStyle::Pane, 5, 1)),
            ((60, 20, 1, 3, 6, 1), (AdviceStyle::Pane, 7, 1)),
            // No job: no bar.
            ((80, 24, 8, 8, 9, 0), (AdviceStyle::Pane, 3, 0)),
            // A strip has no room for a bar.
            ((40, 10, 8, 10, 10, 8), (AdviceStyle::Strip, 1, 0)),
        ];
        for ((w, h, gpus, rows, advice, bars), (style, advice_h, bars_h)) in cases {
            let plan = plan(&LayoutInput { bars: *bars, ..input(*w, *h, *gpus, *rows, *advice) }).expect("fits");
            check_tiles(&plan, *w, *h);
            let got = (plan.advice_style, plan.advice.height, plan.advice_bars);
            assert_eq!(got, (*style, *advice_h, *bars_h), "{w}x{h}, {gpus} GPUs, {bars} bars: {plan:?}");
            // The findings keep their least: the title and a finding.
            assert!(plan.advice_bars == 0 || plan.advice_bars + 2 <= plan.advice.height, "{plan:?}");
        }
        // Short of a row for the bar, the pane goes on without it before it becomes a strip.
        let short = LayoutInput { advice_least: 2, bars: 6, ..input(100, 15, 8, 6, 8) };
        let plan = plan(&short).expect("fits");
        assert_eq!((plan.advice_style, plan.advice.height, plan.advice_bars), (AdviceStyle::Pane, 2, 0), "{plan:?}");
    }

    #[test]
    fn the_advice_pane_takes_the_rows_the_table_does_not_need() {
        // 160x50, eight GPUs, eight processes: the table gets its ten rows, the findings all the rest they need.
        let plan = plan(&input(160, 50, 8, 8, 16)).expect("fits");
        assert_eq!(plan.table.height, 10, "{plan:?}");
        assert_eq!(plan.advice.height, 16, "{plan:?}");
        // Few findings: the spare rows go to the table, not to blank advice rows.
        let plan = super::plan(&input(160, 50, 8, 3, 4)).expect("fits");
        assert_eq!(plan.advice.height, 4, "{plan:?}");
    }

    #[test]
    fn short_screens_keep_every_gpu_until_they_cannot() {
        let plan = plan(&input(60, 20, 8, 4, 4)).expect("fits");
        assert!(plan.gpus.height >= 8, "one line per GPU: {plan:?}");
        let plan = super::plan(&input(40, 10, 8, 2, 4)).expect("fits");
        assert!(plan.gpus.height < 8 && plan.advice.height == 1, "{plan:?}");
    }
}
