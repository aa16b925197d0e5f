//! How the jobs view reacts to actions: selection, Enter to expand a job into its ranks, and T/K/I on a whole
//! job (one confirmation for every rank, sent through the same dialog and `SignalSender` as single processes).

use super::jobs::{JobRow, job_rows, unreadable_environments};
use super::signal::{SignalKind, SignalTarget};
use super::{App, DialogButton, Effect, Focus, SignalDialog};
use crate::keys::Action;

impl App {
    /// The jobs of the tick on screen, on the GPUs shown.
    #[must_use]
    pub fn job_rows(&self) -> Vec<JobRow> {
        job_rows(self.tick(), &self.findings(), self.fixed.gpus.as_deref(), &self.thresholds)
    }

    /// How many GPU processes on the GPUs shown have an environment that could not be read (see
    /// [`unreadable_environments`]).
    #[must_use]
    pub fn unreadable_environments(&self) -> usize {
        unreadable_environments(self.tick(), self.fixed.gpus.as_deref())
    }

    /// Index of the selected job in `rows`, if it is still listed.
    #[must_use]
    pub fn selected_job(&self, rows: &[JobRow]) -> Option<usize> {
        let key = self.jobs.selected.as_deref()?;
        rows.iter().position(|r| r.key == key)
    }

    /// Turns the jobs view on or off; on, the first job is selected when none is.
    pub(super) fn toggle_jobs(&mut self) {
        self.jobs.on = !self.jobs.on;
        if self.jobs.on && self.selected_job(&self.job_rows()).is_none() {
            self.jobs.selected = self.job_rows().first().map(|r| r.key.clone());
        }
    }

    /// An action while the jobs view is on: `Some` when the view took it, `None` when the main screen should.
    pub(super) fn update_jobs(&mut self, action: Action) -> Option<Effect> {
        let moves = matches!(
            action,
            Action::Up
                | Action::Down
                | Action::PageUp
                | Action::PageDown
                | Action::First
                | Action::Last
                | Action::Details
        );
        if moves && self.focus == Focus::Advice {
            // The advice pane has the focus (^W): its keys are the main screen's.
            return None;
        }
        match action {
            Action::Jobs | Action::Back => self.jobs.on = false,
            Action::Up | Action::Down | Action::PageUp | Action::PageDown | Action::First | Action::Last => {
                self.move_job_selection(action);
            }
            Action::Details => {
                let rows = self.job_rows();
                if let Some(i) = self.selected_job(&rows) {
                    self.toggle_job(&rows[i].key);
                }
            }
            Action::SignalTerm => self.open_job_dialog(SignalKind::Term),
            Action::SignalKill => self.open_job_dialog(SignalKind::Kill),
            Action::SignalInt => self.open_job_dialog(SignalKind::Int),
            // Process-table actions that would act on rows the jobs view hides.
            Action::Tag | Action::Environment | Action::Filter | Action::Tree | Action::SortBy => {
                self.status = Some("the jobs view is on (J or Esc leaves it)".to_owned());
            }
            _ => return None,
        }
        Some(Effect::None)
    }

    /// Expands a job into its ranks, or folds it (and forgets a rank selected in it).
    fn toggle_job(&mut self, key: &str) {
        if self.jobs.expanded.remove(key) {
            self.jobs.selected_rank = None;
        } else {
            self.jobs.expanded.insert(key.to_owned());
        }
    }

    /// The selected rank's index into the selected job's ranks, if one is selected and still there.
    #[must_use]
    pub fn selected_rank(&self, rows: &[JobRow]) -> Option<usize> {
        let row = &rows[self.selected_job(rows)?];
        row.rank_index(self.jobs.selected_rank?)
    }

    /// A click on the `index`-th job's line: selects it; on the job already selected (the second click of a
    /// double click too), expands or folds it as Enter does.
    pub(super) fn click_job(&mut self, index: usize) {
        let rows = self.job_rows();
        let Some(row) = rows.get(index) else { return };
        self.focus = Focus::Processes;
        let rank_selected = self.selected_rank(&rows).is_some();
        if self.selected_job(&rows) == Some(index) && !rank_selected {
            self.toggle_job(&row.key);
        } else {
            self.jobs.selected = Some(row.key.clone());
            self.jobs.selected_rank = None;
        }
    }

    /// A click on a rank's line: selects its job and that rank.
    pub(super) fn click_rank(&mut self, job: usize, rank: usize) {
        let rows = self.job_rows();
        let Some((row, rank)) = rows.get(job).and_then(|r| Some((r, r.ranks.get(rank)?))) else { return };
        self.focus = Focus::Processes;
        self.jobs.selected = Some(row.key.clone());
        self.jobs.selected_rank = rank.pid.map(|pid| (pid, rank.gpu_index));
    }

    /// Moves the selection over the lines on screen (Up/Down/PageUp/PageDown/Home/End, the mouse wheel): the jobs,
    /// and the ranks of an expanded job, so a rank can be selected (and signalled alone) from the keyboard.
    pub(super) fn move_job_selection(&mut self, action: Action) {
        let rows = self.job_rows();
        // Every line that can be selected: a job's own line, then its ranks (those with a PID) when expanded.
        let mut lines: Vec<(usize, Option<usize>)> = Vec::new();
        for (j, row) in rows.iter().enumerate() {
            lines.push((j, None));
            if self.jobs.expanded.contains(&row.key) {
                lines.extend(row.ranks.iter().enumerate().filter(|(_, r)| r.pid.is_some()).map(|(k, _)| (j, Some(k))));
            }
        }
        if lines.is_empty() {
            self.jobs.selected_rank = None;
            return;
        }
        let last = lines.len() - 1;
        let page = self.page_rows.max(1);
        let here = self.selected_job(&rows).map(|j| (j, self.selected_rank(&rows)));
        let at = here.and_then(|h| lines.iter().position(|l| *l == h));
        let to = match (action, at) {
            (Action::First, _) | (_, None) => 0,
            (Action::Last, _) => last,
            (Action::Up, Some(i)) => i.saturating_sub(1),
            (Action::Down, Some(i)) => (i + 1).min(last),
            (Action::PageUp, Some(i)) => i.saturating_sub(page),
            (_, Some(i)) => (i + page).min(last),
        };
        let (job, rank) = lines[to];
        self.jobs.selected = Some(rows[job].key.clone());
        self.jobs.selected_rank = rank.and_then(|k| {
            let rank = &rows[job].ranks[k];
            rank.pid.map(|pid| (pid, rank.gpu_index))
        });
    }

    /// T/K/I on a job: one dialog for every rank's process, each pinned by its start time as the table does.
    fn open_job_dialog(&mut self, kind: SignalKind) {
        if self.signals_off() {
            return;
        }
        let rows = self.job_rows();
        let Some(job) = self.selected_job(&rows).map(|i| &rows[i]) else {
            self.status = Some("select a job first (Up/Down)".to_owned());
            return;
        };
        // A rank selected (Down into an expanded job, or a click): its process alone, in the dialog of a single
        // process.
        let rank_pid = self.selected_rank(&rows).and_then(|k| job.ranks[k].pid);
        let pids = rank_pid.map_or_else(|| job.pids(), |pid| vec![pid]);
        let tick = self.tick();
        let mut targets: Vec<SignalTarget> = Vec::new();
        let mut unreadable: Vec<String> = Vec::new();
        for pid in pids {
            let host = tick.processes.iter().find(|p| p.pid == pid);
            let Some((host, start_ticks)) = host.and_then(|h| h.start_ticks.map(|s| (h, s))) else {
                unreadable.push(format!("PID {pid} (start time unknown)"));
                continue;
            };
            let command = if host.cmdline.is_empty() { &host.name } else { &host.cmdline };
            targets.push(SignalTarget {
                pid,
                start_ticks,
                user: host.user.clone(),
                command: command.clone(),
                gpu_mem_bytes: job
                    .ranks
                    .iter()
                    .filter(|r| r.pid == Some(pid))
                    .filter_map(|r| r.mem_bytes)
                    .reduce(|a, b| a + b),
            });
        }
        let job = rank_pid.is_none().then(|| job.name.clone());
        self.status = (!unreadable.is_empty()).then(|| format!("no signal for: {}", unreadable.join("; ")));
        if !targets.is_empty() {
            self.dialog = Some(SignalDialog { targets, job, button: DialogButton::Send(kind) });
        }
    }
}
