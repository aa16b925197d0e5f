//! The jobs table (J): one row per job (ranks, GPUs, GPU memory, mean utilization and SM activity, the slowest
//! rank, a rank-straggler or collective-hang finding), a job expanded into one line per rank. It replaces the
//! process table while the jobs view is on and reads only the app ([`crate::app::jobs`]).

use std::fmt::Write as _;

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Widget;

use super::paint::{Paint, fill};
use crate::app::jobs::{JobRank, JobRow};
use crate::app::{App, Focus, Hit};
use crate::text;
use crate::units;

/// The columns after JOB, right-aligned: their titles, each as wide as its widest cell (its title at least) up to
/// its bound, so that JOB gets what is left.
const FIXED: [(&str, usize); 6] =
    [("RANKS", 8), ("GPUS", 16), ("GPU-MEM", 9), ("%UTIL", 5), ("%SMACT", 6), ("SLOWEST/CPU", 24)];
/// The FINDING column, shown from this width.
const FINDING_FROM: u16 = 110;
const FINDING_W: usize = 16;
/// JOB is never narrower than this: the columns after it are cut to the screen instead.
const NAME_MIN_W: usize = 8;

/// The cells after JOB of one line, and its FINDING.
type Cells = ([String; 6], &'static str);

/// Each column's width over the lines' cells: the widest cell or the title, up to the column's bound.
fn widths(all: &[Cells]) -> [usize; 6] {
    let width = |t: &str| ratatui::text::Line::from(t).width();
    std::array::from_fn(|i| {
        let (title, most) = FIXED[i];
        all.iter().map(|(c, _)| width(&c[i])).fold(width(title), usize::max).min(most)
    })
}

/// The lines the jobs table needs below its title and header: a job each, plus its ranks when expanded.
#[must_use]
pub fn lines_needed(app: &App, rows: &[JobRow]) -> usize {
    rows.iter().map(|r| 1 + if app.jobs.expanded.contains(&r.key) { r.ranks.len() } else { 0 }).sum()
}

/// The lines the jobs table asks the layout for below its title and header: [`lines_needed`], plus the line
/// about unreadable environments where there is one.
#[must_use]
pub fn table_lines(app: &App, rows: &[JobRow]) -> usize {
    lines_needed(app, rows) + usize::from(app.unreadable_environments() > 0)
}

/// The jobs table over the app's job rows and jobs state.
#[derive(Debug)]
pub struct JobsTable<'a> {
    pub app: &'a App,
    pub paint: &'a Paint,
}

/// One line: JOB across `name_w`, the cells in their widths, then FINDING when there is room.
fn cells(name: &str, fixed: &[String; 6], finding: Option<&str>, name_w: usize, w: &[usize; 6], ascii: bool) -> String {
    let mut line = format!("{:<name_w$}", units::truncate(name, name_w, ascii));
    for (w, cell) in w.iter().zip(fixed) {
        let _ = write!(line, " {:>w$}", units::truncate(cell, *w, ascii));
    }
    if let Some(finding) = finding {
        let _ = write!(line, " {}", units::truncate(finding, FINDING_W, ascii));
    }
    line
}

/// The GPU indices, a run of consecutive ones as "first-last": "0,1", "0-7".
fn gpus_text(gpus: &[u32]) -> String {
    match gpus {
        [first, .., last] if gpus.len() > 2 && gpus.windows(2).all(|w| w[1] == w[0] + 1) => format!("{first}-{last}"),
        _ => gpus.iter().map(u32::to_string).collect::<Vec<_>>().join(","),
    }
}

impl JobsTable<'_> {
    /// A job's JOB text (its sign and name) and its cells.
    fn job_cells(&self, row: &JobRow) -> (String, Cells) {
        let glyphs = &self.paint.glyphs;
        let open = self.app.jobs.expanded.contains(&row.key);
        let sign = match (open, glyphs.ascii) {
            (true, true) => "- ",
            (false, true) => "+ ",
            (true, false) => "▾ ",
            (false, false) => "▸ ",
        };
        let slowest = row.slowest.map_or_else(String::new, |(i, measure)| {
            let rank = &row.ranks[i];
            let who = rank.rank.map_or_else(|| format!("pid {}", rank.pid.unwrap_or(0)), |r| format!("rank {r}"));
            format!("{who} ({})", measure.label())
        });
        let fixed = [
            row.rank_count(),
            gpus_text(&row.gpus),
            units::bytes(row.mem_bytes),
            units::pct(row.util_pct),
            units::pct(row.sm_active_pct),
            slowest,
        ];
        (format!("{sign}{}", text::visible(&row.name)), (fixed, row.finding.map_or("", |f| f.name())))
    }

    /// A rank's JOB text (its branch, rank and PID) and its cells.
    fn rank_cells(&self, rank: &JobRank, last: bool) -> (String, Cells) {
        let glyphs = &self.paint.glyphs;
        let branch = if last { glyphs.tree_last } else { glyphs.tree_branch };
        let mut name = branch.to_owned();
        match (rank.rank, rank.local_rank) {
            (Some(r), Some(l)) => write!(name, "rank {r} local {l} "),
            (Some(r), None) => write!(name, "rank {r} "),
            _ => Ok(()),
        }
        .ok();
        let _ = write!(name, "PID {}", units::num(rank.pid, ""));
        let fixed = [
            String::new(),
            rank.gpu_index.to_string(),
            units::bytes(rank.mem_bytes),
            units::pct(rank.util_pct),
            units::pct(rank.sm_active_pct),
            format!("cpu {}", units::pct(rank.cpu_pct)),
        ];
        (name, (fixed, ""))
    }
}

/// One line of the jobs table below its header: a job (its index in the app's job rows) or one of its ranks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JobLine {
    pub job: usize,
    /// The rank's index in the job's ranks; `None` for the job's own line.
    pub rank: Option<usize>,
}

/// Whether a table of `height` rows shows the line about unreadable environments at its foot: only where there is
/// one and a job line still fits above it (title, header, one line, the note).
fn shows_note(app: &App, height: u16) -> bool {
    height >= 4 && app.unreadable_environments() > 0
}

impl JobsTable<'_> {
    /// The job and rank lines on screen in `area`, top to bottom: every job and its ranks when expanded, less
    /// whole lines above the selected job where they overflow (it stays on screen). Drawing and clicks both read it.
    #[must_use]
    pub fn lines_shown(&self, area: Rect, rows: &[JobRow]) -> Vec<JobLine> {
        let app = self.app;
        let mut lines = Vec::new();
        for (job, row) in rows.iter().enumerate() {
            lines.push(JobLine { job, rank: None });
            if app.jobs.expanded.contains(&row.key) {
                lines.extend((0..row.ranks.len()).map(|k| JobLine { job, rank: Some(k) }));
            }
        }
        let page = usize::from(area.height.saturating_sub(2 + u16::from(shows_note(app, area.height))));
        // The selected line: the selected job's, or its selected rank's below it.
        let before: usize = app
            .selected_job(rows)
            .map_or(0, |s| lines_needed(app, &rows[..s]) + app.selected_rank(rows).map_or(0, |k| k + 1));
        let skip = (before + 1).saturating_sub(page).min(lines.len());
        lines.drain(..skip);
        lines.truncate(page);
        lines
    }

    /// What a click at (`column`, `row`) inside `area` (the table's rectangle) landed on: a job's line or a
    /// rank's; the title, the header, the note and the blank below the jobs are nothing.
    #[must_use]
    pub fn hit(&self, area: Rect, column: u16, row: u16) -> Option<Hit> {
        if column < area.x || column >= area.x + area.width || row < area.y + 2 {
            return None;
        }
        let rows = self.app.job_rows();
        let line = *self.lines_shown(area, &rows).get(usize::from(row - area.y - 2))?;
        Some(match line.rank {
            None => Hit::Job(line.job),
            Some(rank) => Hit::Rank { job: line.job, rank },
        })
    }
}

impl Widget for JobsTable<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let (app, paint) = (self.app, self.paint);
        let theme = &paint.theme;
        if area.height < 2 {
            return;
        }
        let rows = app.job_rows();
        let selected = app.selected_job(&rows);
        let wide = area.width >= FINDING_FROM;
        let shown = self.lines_shown(area, &rows);
        let texts: Vec<(String, Cells)> = shown
            .iter()
            .map(|line| match line.rank {
                None => self.job_cells(&rows[line.job]),
                Some(k) => self.rank_cells(&rows[line.job].ranks[k], k + 1 == rows[line.job].ranks.len()),
            })
            .collect();
        let cell_texts: Vec<Cells> = texts.iter().map(|(_, c)| c.clone()).collect();
        let w = widths(&cell_texts);
        let fixed_w: usize = w.iter().map(|w| w + 1).sum::<usize>() + if wide { FINDING_W + 1 } else { 0 };
        let name_w = usize::from(area.width).saturating_sub(2 + fixed_w).max(NAME_MIN_W);
        let mut extra = vec![Span::styled(format!("({}) ", rows.len()), theme.dim)];
        extra.push(Span::styled("Enter: ranks ", theme.dim));
        let selected_rank = app.selected_rank(&rows);
        if selected.is_some() && !app.readonly {
            let whom = if selected_rank.is_some() { "(T/K/I: this rank) " } else { "(T/K/I: every rank) " };
            extra.push(Span::styled(whom, theme.dim));
        }
        let mut lines = vec![paint.title_line("Jobs", extra, area.width)];
        let titles = FIXED.map(|(t, _)| t.to_owned());
        let header = format!("  {}", cells("JOB", &titles, wide.then_some("FINDING"), name_w, &w, paint.ascii()));
        lines.push(Line::from(Span::styled(format!("{header:<w$}", w = usize::from(area.width)), theme.header_row)));
        if rows.is_empty() {
            lines.push(Line::from(Span::styled("  no GPU processes", theme.dim)));
        }
        let full = |text: String| format!("  {text:<w$}", w = usize::from(area.width).saturating_sub(2));
        let highlight = theme.selected.patch(Style::default().add_modifier(Modifier::BOLD));
        let focused = app.focus == Focus::Processes;
        for (JobLine { job: i, rank }, (name, (fixed, finding))) in shown.into_iter().zip(texts) {
            let row = &rows[i];
            let text = cells(&name, &fixed, wide.then_some(finding), name_w, &w, paint.ascii());
            let Some(k) = rank else {
                let mut style = if row.finding.is_some() { theme.warning } else { theme.base };
                if Some(i) == selected && selected_rank.is_none() && focused {
                    style = highlight;
                }
                lines.push(Line::from(Span::styled(full(text), style)));
                continue;
            };
            let slow = row.slowest.is_some_and(|(s, _)| s == k);
            let mut style = if slow { theme.moderate } else { theme.base };
            if Some(i) == selected && selected_rank == Some(k) && focused {
                style = highlight;
            }
            lines.push(Line::from(Span::styled(full(text), style)));
        }
        if shows_note(app, area.height)
            && let Some(note) = crate::app::jobs::unreadable_note(app.unreadable_environments())
        {
            lines.resize(usize::from(area.height - 1), Line::default());
            let note = units::truncate(&note, usize::from(area.width).saturating_sub(2), paint.ascii());
            lines.push(Line::from(Span::styled(format!("  {note}"), theme.dim)));
        }
        fill(area, buf, lines, theme.base);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn consecutive_gpus_are_a_range() {
        assert_eq!(gpus_text(&[0, 1]), "0,1");
        assert_eq!(gpus_text(&[0, 1, 2, 3]), "0-3");
        assert_eq!(gpus_text(&[0, 2, 3]), "0,2,3");
        assert_eq!(gpus_text(&[]), "");
    }
    use crate::keys::Action;
    use crate::ui::config::ThemeName;
    use crate::ui::test_support::{app, render};

    #[test]
    fn one_row_per_job_and_enter_shows_its_ranks() {
        let mut app = app("straggler", 40);
        app.update(Action::Jobs);
        let paint = Paint::new(ThemeName::Dark, false);
        let lines = render(JobsTable { app: &app, paint: &paint }, 80, 8);
        assert!(lines[0].starts_with(" Jobs (1)"), "{lines:?}");
        assert!(lines[1].contains("JOB") && lines[1].contains("RANKS"), "{lines:?}");
        assert!(lines[2].contains("torchrun"), "{lines:?}");
        app.update(Action::Details);
        let lines = render(JobsTable { app: &app, paint: &paint }, 120, 8);
        assert!(lines[3].contains("rank 0") && lines[4].contains("rank 1"), "{lines:?}");
    }

    #[test]
    fn a_collective_hang_is_named_on_its_job() {
        let app = app("hang", 120);
        let rows = app.job_rows();
        assert_eq!(rows.len(), 1, "{rows:?}");
        assert_eq!(rows[0].finding, Some(crate::advice::Rule::CollectiveHang), "{rows:?}");
    }

    #[test]
    fn unreadable_environments_get_one_dim_line_at_the_foot() {
        let mut app = app("straggler", 40);
        app.update(Action::Jobs);
        let paint = Paint::new(ThemeName::Dark, false);
        let lines = render(JobsTable { app: &app, paint: &paint }, 120, 8);
        assert!(lines.iter().all(|l| !l.contains("unreadable")), "{lines:?}");
        let mut tick = app.tick().clone();
        for p in &mut tick.processes {
            if let Some(job) = p.job.as_mut() {
                job.note = Some("environment unreadable (permission denied): rank unknown".to_owned());
            }
        }
        let machine = std::sync::Arc::clone(app.machine());
        app.on_feed(crate::app::FeedEvent::Snapshot(Box::new(crate::sample::Snapshot { machine, tick })));
        let lines = render(JobsTable { app: &app, paint: &paint }, 120, 8);
        assert!(lines[7].starts_with("  environment of 2 processes unreadable (not yours"), "{lines:?}");
        assert!(lines[2].contains("torchrun"), "the job is still listed: {lines:?}");
        // Too short for a job and the note: the job wins.
        let lines = render(JobsTable { app: &app, paint: &paint }, 120, 3);
        assert!(lines[2].contains("torchrun"), "{lines:?}");
    }

    #[test]
    fn a_click_hits_the_line_drawn_there_and_a_picked_rank_is_the_one_highlighted() {
        let mut app = app("straggler", 40);
        app.update(Action::Jobs);
        app.update(Action::Details);
        let paint = Paint::new(ThemeName::Dark, false);
        let area = Rect::new(0, 10, 120, 8);
        let table = JobsTable { app: &app, paint: &paint };
        assert_eq!(table.hit(area, 5, 10), None, "the title");
        assert_eq!(table.hit(area, 5, 11), None, "the header");
        assert_eq!(table.hit(area, 5, 12), Some(Hit::Job(0)));
        assert_eq!(table.hit(area, 5, 14), Some(Hit::Rank { job: 0, rank: 1 }));
        assert_eq!(table.hit(area, 5, 15), None, "below the last rank");
        assert_eq!(table.hit(area, 120, 12), None, "right of the table");
        app.on_hit(Hit::Rank { job: 0, rank: 1 });
        let mut buf = Buffer::empty(Rect::new(0, 0, 120, 8));
        JobsTable { app: &app, paint: &paint }.render(buf.area, &mut buf);
        let title: String = (0..120).map(|x| buf[(x, 0)].symbol()).collect();
        assert!(title.contains("(T/K/I: this rank)"), "{title}");
        let selected = paint.theme.selected.patch(Style::default().add_modifier(Modifier::BOLD));
        assert_eq!(buf[(4, 4)].style().add_modifier, selected.add_modifier, "the rank's line");
        assert_ne!(buf[(4, 2)].style().add_modifier, selected.add_modifier, "not the job's");
    }

    #[test]
    fn slowest_is_never_cut_and_job_gets_what_is_left() {
        let mut app = app("straggler", 40);
        app.update(Action::Jobs);
        // The ranks without a rank number (another user's): the slowest reads "pid 3001 (waited on)".
        let mut tick = app.tick().clone();
        for p in &mut tick.processes {
            if let Some(job) = p.job.as_mut() {
                job.rank = None;
            }
        }
        let machine = std::sync::Arc::clone(app.machine());
        app.on_feed(crate::app::FeedEvent::Snapshot(Box::new(crate::sample::Snapshot { machine, tick })));
        let paint = Paint::new(ThemeName::Dark, false);
        for width in [80, 100, 120, 160] {
            let lines = render(JobsTable { app: &app, paint: &paint }, width, 8);
            assert!(lines[2].contains("pid 3001 (waited on)"), "{width}: {lines:?}");
            assert!(lines[1].contains("SLOWEST/CPU"), "{width}: {lines:?}");
        }
        let lines = render(JobsTable { app: &app, paint: &paint }, 120, 8);
        assert!(lines[2].contains("torchrun train_ddp.py @127.0.0.1:29500"), "JOB gets the rest: {lines:?}");
    }
}
