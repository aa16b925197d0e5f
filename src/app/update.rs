//! How the app reacts to what the user does: `update` takes an [`Action`] (never a key code); `on_key` turns a
//! key into an action through the keymap, except while the filter is being typed.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::signal::{SignalKind, SignalOutcome, SignalTarget};
use super::{App, DialogButton, Effect, Focus, Screen, SignalDialog};
use crate::config::ui::{DisplayMode, SPANS_S};
use crate::keys::{Action, KeyBinding};
use crate::table::{ProcessRow, RowKey, SortColumn};

impl App {
    /// Handles a key press.
    pub fn on_key(&mut self, key: KeyEvent) -> Effect {
        if self.table.editing_filter {
            // Text entry is not remappable: characters are the filter.
            match key.code {
                KeyCode::Enter => {
                    // Keeping the filter selects its first match, so `/text Enter K Enter` kills it.
                    self.table.editing_filter = false;
                    self.table.scroll_to_top();
                    let first = self.rows().first().map(|row| row.key);
                    if let Some(key) = first {
                        self.select(key);
                    }
                    return Effect::None;
                }
                KeyCode::Esc => {
                    self.table.editing_filter = false;
                    self.table.filter.clear();
                }
                KeyCode::Backspace => {
                    self.table.filter.pop();
                }
                KeyCode::Char('c') if key.modifiers.contains(KeyModifiers::CONTROL) => return Effect::Quit,
                KeyCode::Char(c) if !key.modifiers.contains(KeyModifiers::CONTROL) => self.table.filter.push(c),
                _ => {}
            }
            self.table.scroll_to_top();
            return Effect::None;
        }
        if std::mem::take(&mut self.sort_chord)
            && let KeyCode::Char(c) = key.code
        {
            self.sort_by_letter(c);
            return Effect::None;
        }
        let binding = KeyBinding::from_event(&key);
        if let Screen::Help { offset } = &mut self.screen {
            // Up/Down/PageUp/PageDown/Home/End scroll; any other key leaves, as in nvitop; Ctrl-C still quits.
            let page = self.page_rows.max(1);
            match self.keymap.lookup(binding, false) {
                Some(Action::Down) => *offset += 1,
                Some(Action::Up) => *offset = offset.saturating_sub(1),
                Some(Action::PageDown) => *offset += page,
                Some(Action::PageUp) => *offset = offset.saturating_sub(page),
                Some(Action::First) => *offset = 0,
                // The widget clamps the offset to the last page.
                Some(Action::Last) => *offset = usize::MAX / 2,
                Some(Action::Quit) if binding.modifiers.contains(KeyModifiers::CONTROL) => return Effect::Quit,
                _ => self.screen = Screen::Main,
            }
            return Effect::None;
        }
        match self.keymap.lookup(binding, self.dialog.is_some()) {
            Some(action) => self.update(action),
            None => Effect::None,
        }
    }

    /// Whether a quit key (`[keys] quit`, q by default) ends the monitor right now: the main screen, no dialog, no
    /// filter being typed. The input thread reads this to quit by itself when the screen is too busy to answer.
    #[must_use]
    pub fn quit_key_quits(&self) -> bool {
        self.dialog.is_none() && !self.table.editing_filter && !self.sort_chord && matches!(self.screen, Screen::Main)
    }

    /// Carries out one action.
    pub fn update(&mut self, action: Action) -> Effect {
        if self.dialog.is_some() {
            return self.update_dialog(action);
        }
        if !matches!(self.screen, Screen::Main) {
            return self.update_sub_screen(action);
        }
        self.status = None;
        if self.jobs.on
            && let Some(effect) = self.update_jobs(action)
        {
            return effect;
        }
        match action {
            Action::Quit => return Effect::Quit,
            Action::Suspend => return Effect::Suspend,
            Action::Help => self.screen = Screen::Help { offset: 0 },
            Action::Back => self.back_to_all(),
            Action::Up | Action::Down | Action::PageUp | Action::PageDown | Action::First | Action::Last => {
                self.move_selection(action);
            }
            Action::Tag => self.tag_selected(),
            Action::SignalTerm => self.open_dialog(SignalKind::Term),
            Action::SignalKill => self.open_dialog(SignalKind::Kill),
            Action::SignalInt => self.open_dialog(SignalKind::Int),
            Action::Details => self.open_details(),
            Action::Environment => self.open_environment(),
            Action::NvLinks => self.open_nvlinks(),
            Action::Jobs => self.toggle_jobs(),
            Action::Tree => {
                self.table.tree = !self.table.tree;
                self.table.scroll_to_top();
            }
            Action::SortPrev | Action::SortNext => self.cycle_sort(action == Action::SortNext),
            Action::SortBy => self.start_sort_chord(),
            Action::Refresh => return Effect::Redraw,
            Action::SortInvert => self.table.inverted = !self.table.inverted,
            Action::Filter => {
                self.table.editing_filter = true;
                self.focus = Focus::Processes;
            }
            Action::CycleGpu => self.cycle_gpu(),
            Action::CycleUser => self.cycle_user(),
            Action::Pause => self.toggle_pause(),
            Action::SpanLonger | Action::SpanShorter => self.change_span(action == Action::SpanLonger),
            Action::FocusNext => {
                self.focus = if self.focus == Focus::Processes { Focus::Advice } else { Focus::Processes };
            }
            Action::Explain => self.explain_selected(),
            Action::ModeAuto => self.mode = DisplayMode::Auto,
            Action::ModeFull => {
                self.mode = DisplayMode::Full;
                self.mode_asked = true;
            }
            Action::ModeCompact => self.mode = DisplayMode::Compact,
            Action::SeekBack if self.playback.is_none() => self.scroll_command(-8),
            Action::SeekForward if self.playback.is_none() => self.scroll_command(8),
            Action::SeekBack => self.seek(-10_000),
            Action::SeekForward => self.seek(10_000),
            Action::SeekBackLong => self.seek(-60_000),
            Action::SeekForwardLong => self.seek(60_000),
            Action::JumpStart | Action::JumpEnd | Action::Slower | Action::Faster => self.playback_control(action),
            // Only the environment screen has secrets to show.
            Action::Reveal => self.status = Some("secrets are shown or masked on the environment screen".to_owned()),
            Action::DialogConfirm | Action::DialogCancel | Action::DialogLeft | Action::DialogRight => {}
        }
        Effect::None
    }

    /// Esc on the main screen: every filter, tag and selection is dropped.
    fn back_to_all(&mut self) {
        self.table.filter.clear();
        self.table.tagged.clear();
        self.table.selected = None;
        self.table.only_gpu = None;
        self.table.only_user = None;
        self.focus = Focus::Processes;
    }

    /// The next (or previous) sort column, not inverted.
    fn cycle_sort(&mut self, forward: bool) {
        let columns = SortColumn::ALL;
        let at = columns.iter().position(|c| *c == self.table.sort).unwrap_or(0);
        let next = if forward { at + 1 } else { at + columns.len() - 1 };
        self.table.sort = columns[next % columns.len()];
        self.table.inverted = false;
    }

    /// The sort chord: the next key picks the column.
    fn start_sort_chord(&mut self) {
        self.sort_chord = true;
        self.status = Some(
            "sort by: n GPU  p PID  u USER  g GPU-MEM  s %SM  b %GMBW  c %CPU  m HOST-MEM  t TIME (upper case reverses)"
                .to_owned(),
        );
    }

    /// A longer (or shorter) span for the graphs.
    fn change_span(&mut self, longer: bool) {
        let at = SPANS_S.iter().position(|s| *s >= self.span_s).unwrap_or(SPANS_S.len() - 1);
        let next = if longer { (at + 1).min(SPANS_S.len() - 1) } else { at.saturating_sub(1) };
        self.span_s = SPANS_S[next];
        self.status = Some(format!("graphs show the last {}", crate::units::duration_s(self.span_s)));
    }

    /// The explanation of the selected finding, if there is one.
    fn explain_selected(&mut self) {
        if self.findings().is_empty() {
            self.status = Some("no findings to explain".to_owned());
        } else {
            self.screen = Screen::Explain { index: self.advice_selected.min(self.findings().len() - 1), offset: 0 };
        }
    }

    fn update_sub_screen(&mut self, action: Action) -> Effect {
        match (&mut self.screen, action) {
            (_, Action::Suspend) => return Effect::Suspend,
            (Screen::Environment { offset, vars, .. }, Action::Down | Action::PageDown | Action::Last) => {
                // Scrolling stops when the last variable is on the last row (`page_rows` is the screen's height).
                let end = vars.as_ref().map_or(0, |v| v.len().saturating_sub(self.page_rows.max(1)));
                *offset = match action {
                    Action::Down => *offset + 1,
                    Action::PageDown => *offset + self.page_rows.max(1),
                    _ => end,
                }
                .min(end);
            }
            (Screen::Environment { offset, .. }, Action::Up) => *offset = offset.saturating_sub(1),
            (Screen::Environment { offset, .. }, Action::PageUp) => *offset = offset.saturating_sub(self.page_rows),
            (Screen::Environment { offset, .. }, Action::First) => *offset = 0,
            (Screen::Environment { revealed, .. }, Action::Reveal) => *revealed = !*revealed,
            // Down stops at the last page as last laid out; the widget clamps too.
            (Screen::Explain { offset, .. }, Action::Down | Action::PageDown) => {
                let step = if action == Action::Down { 1 } else { self.page_rows.max(1) };
                *offset = offset.saturating_add(step).min(self.scroll_end.unwrap_or(usize::MAX / 2));
            }
            (Screen::Explain { offset, .. }, Action::Up) => *offset = offset.saturating_sub(1),
            (Screen::Explain { offset, .. }, Action::PageUp) => *offset = offset.saturating_sub(self.page_rows.max(1)),
            (Screen::Explain { offset, .. }, Action::First) => *offset = 0,
            (Screen::Explain { offset, .. }, Action::Last) => *offset = self.scroll_end.unwrap_or(usize::MAX / 2),
            (Screen::Environment { pid, .. }, Action::Details) => {
                let pid = *pid;
                self.screen = Screen::Details { pid, libraries: self.libraries(pid) };
            }
            (Screen::Details { .. }, Action::Environment) => self.open_environment(),
            (Screen::NvLinks { gpu }, Action::CycleGpu) => {
                let current = *gpu;
                if let Some(next) = self.next_nvlink_gpu(Some(current)) {
                    self.screen = Screen::NvLinks { gpu: next };
                }
            }
            (
                _,
                Action::Quit
                | Action::Back
                | Action::Details
                | Action::Explain
                | Action::Environment
                | Action::Help
                | Action::NvLinks,
            ) => {
                self.screen = Screen::Main;
            }
            (_, Action::Pause) => self.toggle_pause(),
            _ => {}
        }
        Effect::None
    }

    fn update_dialog(&mut self, action: Action) -> Effect {
        let Some(dialog) = &mut self.dialog else {
            return Effect::None;
        };
        match action {
            Action::DialogLeft => dialog.button = dialog.button.moved(-1),
            Action::DialogRight => dialog.button = dialog.button.moved(1),
            Action::SignalTerm => dialog.button = DialogButton::Send(SignalKind::Term),
            Action::SignalKill => dialog.button = DialogButton::Send(SignalKind::Kill),
            Action::SignalInt => dialog.button = DialogButton::Send(SignalKind::Int),
            Action::DialogCancel | Action::Quit | Action::Back => {
                self.dialog = None;
                self.status = Some("cancelled: no signal sent".to_owned());
            }
            Action::DialogConfirm => {
                let dialog = self.dialog.take();
                if let Some(dialog) = dialog {
                    self.send_signals(&dialog);
                }
            }
            _ => {}
        }
        Effect::None
    }

    fn send_signals(&mut self, dialog: &SignalDialog) {
        let DialogButton::Send(kind) = dialog.button else {
            self.status = Some("cancelled: no signal sent".to_owned());
            return;
        };
        let synthetic = self.machine().source == crate::sample::SourceKind::Synthetic;
        let results: Vec<String> = dialog
            .targets
            .iter()
            .map(|target| {
                let outcome = self.sender.send(target, kind);
                let outcome = match outcome {
                    SignalOutcome::PermissionDenied { owner: None } => {
                        SignalOutcome::PermissionDenied { owner: target.user.clone() }
                    }
                    other => other,
                };
                // A synthetic machine makes most of its processes up (only attached test processes are real):
                // say that, rather than only "exited already".
                let note = match outcome {
                    SignalOutcome::ExitedAlready if synthetic => " (or never ran here: a synthetic machine's process)",
                    SignalOutcome::PidReused if synthetic => " (a synthetic process's PID is another process's here)",
                    _ => "",
                };
                format!("PID {}: {outcome}{note}", target.pid)
            })
            .collect();
        self.status = Some(format!("{} → {}", kind.name(), results.join("; ")));
        self.table.tagged.clear();
    }

    /// Whether signals are off here (a recording, `--readonly`); says why in the status line.
    pub(super) fn signals_off(&mut self) -> bool {
        if self.playback.is_some() {
            // A recorded PID may belong to an unrelated process on this machine: never offer to signal it.
            self.status =
                Some("a recording: its processes are not on this machine, so there are no signals".to_owned());
            return true;
        }
        if self.readonly {
            self.status = Some("read-only mode: signals are off (started with --readonly)".to_owned());
            return true;
        }
        false
    }

    fn open_dialog(&mut self, kind: SignalKind) {
        if self.signals_off() {
            return;
        }
        let rows = self.rows();
        let chosen: Vec<&ProcessRow<'_>> = if self.table.tagged.is_empty() {
            self.selected_index(&rows).map(|i| &rows[i]).into_iter().collect()
        } else {
            rows.iter().filter(|r| self.table.tagged.contains(&r.key)).collect()
        };
        if chosen.is_empty() {
            drop(rows);
            self.status = Some("select a process first (Up/Down, or tag with Space)".to_owned());
            return;
        }
        let mut targets: Vec<SignalTarget> = Vec::new();
        let mut refused: Vec<String> = Vec::new();
        for row in chosen {
            if let Some(why) = row.why_not_signalable() {
                refused.push(why);
                continue;
            }
            let (Some(pid), Some(host)) = (row.pid, row.host) else { continue };
            let Some(start_ticks) = host.start_ticks else { continue };
            if targets.iter().any(|t| t.pid == pid) {
                continue;
            }
            let gpu_mem_bytes =
                rows.iter().filter(|r| r.pid == Some(pid)).filter_map(ProcessRow::gpu_mem_bytes).reduce(|a, b| a + b);
            targets.push(SignalTarget {
                pid,
                start_ticks,
                user: host.user.clone(),
                command: row.command().to_owned(),
                gpu_mem_bytes,
            });
        }
        let note = if refused.is_empty() { None } else { Some(format!("no signal for: {}", refused.join("; "))) };
        drop(rows);
        if targets.is_empty() {
            self.status = note;
            return;
        }
        self.status = note;
        self.dialog = Some(SignalDialog { targets, job: None, button: DialogButton::Send(kind) });
    }

    /// Enter on a finding: selects its process (on its GPU) in the table and moves the focus there, so T, K
    /// and I act on it; a finding about a GPU alone shows that GPU's processes.
    fn select_finding_target(&mut self) {
        let findings = self.findings();
        let Some(finding) = findings.get(self.advice_selected.min(findings.len().saturating_sub(1))) else {
            self.status = Some("no findings to act on".to_owned());
            return;
        };
        let (gpu, pid, title) = (finding.gpu_index, finding.pid, finding.title.clone());
        drop(findings);
        if let Some(gpu) = gpu
            && self.table.only_gpu.is_some_and(|only| only != gpu)
        {
            self.table.only_gpu = Some(gpu);
        }
        // The filters must not hide the target.
        self.table.filter.clear();
        let rows = self.rows();
        let target = rows.iter().position(|r| {
            pid.is_some_and(|p| r.pid == Some(p)) && (gpu.is_none() || self.table.tree || r.key.gpu_index == gpu)
        });
        let target = target.or_else(|| pid.and_then(|p| rows.iter().position(|r| r.pid == Some(p))));
        let found = target.map(|i| rows[i].key);
        drop(rows);
        match (found, pid, gpu) {
            (Some(key), Some(pid), _) => {
                self.focus = Focus::Processes;
                self.select(key);
                self.status = Some(format!("PID {pid} selected: T/K/I signal it, Enter opens it ({title})"));
            }
            (None, Some(pid), _) => {
                self.status = Some(format!("PID {pid} of this finding is no longer listed"));
            }
            (_, None, Some(gpu)) => {
                self.focus = Focus::Processes;
                self.table.only_gpu = Some(gpu);
                self.table.scroll_to_top();
                let first = self.rows().first().map(|r| r.key);
                if let Some(key) = first {
                    self.select(key);
                }
                self.status = Some(format!("processes of GPU {gpu} (the finding names no single process; g cycles)"));
            }
            (_, None, None) => {
                self.status = Some("this finding is about the host, not a process: x explains".to_owned());
            }
        }
    }

    /// The CUDA libraries of `pid`, or why there are none to read: a synthetic or recorded process has no
    /// memory maps on this machine.
    fn libraries(&self, pid: u32) -> super::inspect::Pairs {
        if self.playback.is_some() {
            return Err("a recorded process: its memory maps are not on this machine".to_owned());
        }
        let libraries = self.inspector.cuda_libraries(pid);
        if self.machine().source == crate::sample::SourceKind::Synthetic && libraries.is_err() {
            // Made up by the synthetic source (only attached test processes are real).
            return Err("a synthetic process: it does not run on this machine, so there are no memory maps".to_owned());
        }
        libraries
    }

    /// The second key of an `o` chord, as in nvitop: a letter picks the column, upper case reverses it.
    fn sort_by_letter(&mut self, letter: char) {
        let column = match letter.to_ascii_lowercase() {
            'n' => SortColumn::Gpu,
            'p' => SortColumn::Pid,
            'u' => SortColumn::User,
            'g' => SortColumn::GpuMem,
            's' => SortColumn::Sm,
            'b' => SortColumn::Gmbw,
            'c' => SortColumn::Cpu,
            'm' => SortColumn::HostMem,
            't' => SortColumn::Time,
            _ => {
                self.status = Some(format!("no sort for '{letter}' (o then n p u g s b c m t)"));
                return;
            }
        };
        self.table.sort = column;
        self.table.inverted = letter.is_ascii_uppercase();
        self.status = Some(format!("sorted by {}", crate::table::columns::title_of(column)));
    }

    /// Scrolls the command column by `delta` characters (Left/Right outside a recording).
    fn scroll_command(&mut self, delta: isize) {
        let longest = self.rows().iter().map(|r| r.command().chars().count()).max().unwrap_or(0);
        let offset = self.table.command_offset.saturating_add_signed(delta);
        self.table.command_offset = offset.min(longest.saturating_sub(8));
    }

    fn selected_row_info(&self) -> Option<(u32, Option<u32>)> {
        let rows = self.rows();
        let row = &rows[self.selected_index(&rows)?];
        Some((row.pid?, row.host.and_then(|h| h.uid)))
    }

    fn open_details(&mut self) {
        if self.focus == Focus::Advice {
            self.select_finding_target();
            return;
        }
        match self.selected_row_info() {
            Some((pid, _)) => {
                self.screen = Screen::Details { pid, libraries: self.libraries(pid) };
            }
            None => self.status = Some("select a process with a PID first".to_owned()),
        }
    }

    /// The NVLink screen: of the GPU whose processes are shown alone, else the first GPU with NVLink links.
    fn open_nvlinks(&mut self) {
        let has_links = |gpu: u32| self.tick().gpus.iter().any(|g| g.index == gpu && !g.nvlinks.is_empty());
        let gpu = self.table.only_gpu.filter(|&g| has_links(g)).or_else(|| self.next_nvlink_gpu(None));
        match gpu {
            Some(gpu) => self.screen = Screen::NvLinks { gpu },
            None => self.status = Some("no NVLink links read on any GPU".to_owned()),
        }
    }

    /// The next GPU after `after` (the first when `None`, wrapping round) whose tick lists NVLink links.
    fn next_nvlink_gpu(&self, after: Option<u32>) -> Option<u32> {
        let with_links: Vec<u32> = self.tick().gpus.iter().filter(|g| !g.nvlinks.is_empty()).map(|g| g.index).collect();
        let next = after.and_then(|a| with_links.iter().copied().find(|&g| g > a));
        next.or_else(|| with_links.first().copied())
    }

    fn open_environment(&mut self) {
        if self.playback.is_some() {
            self.status = Some(
                "a recording: its processes are not on this machine, so there is no environment to read".to_owned(),
            );
            return;
        }
        if self.readonly {
            self.status = Some("read-only mode: the environment screen is off (started with --readonly)".to_owned());
            return;
        }
        let pid = match &self.screen {
            Screen::Details { pid, .. } => Some((*pid, self.tick().process(*pid).and_then(|h| h.uid))),
            _ => self.selected_row_info(),
        };
        match pid {
            // Root reads every process's environment (the kernel allows it); others their own.
            Some((pid, Some(uid))) if uid == self.own_uid || self.own_uid == 0 => {
                self.screen =
                    Screen::Environment { pid, vars: self.inspector.environment(pid), offset: 0, revealed: false };
            }
            Some((pid, _)) => {
                // Stay where the key was pressed (the details screen keeps its place).
                self.status =
                    Some(format!("PID {pid} is not yours: the environment screen shows your own processes only"));
            }
            None => self.status = Some("select a process with a PID first".to_owned()),
        }
    }

    fn move_selection(&mut self, action: Action) {
        if self.focus == Focus::Advice {
            // The pane lists the findings that say the same on several GPUs once: move by those groups, each
            // selected by its first finding.
            let groups = crate::advice::group::same_on_gpus(&self.findings());
            let n = groups.len();
            let at = groups.iter().position(|g| g.contains(&self.advice_selected)).unwrap_or(0);
            let to = match action {
                Action::Up => at.saturating_sub(1),
                Action::Down => (at + 1).min(n.saturating_sub(1)),
                Action::First => 0,
                Action::Last => n.saturating_sub(1),
                _ => at,
            };
            self.advice_selected = groups.get(to).map_or(self.advice_selected, |g| g[0]);
            return;
        }
        let rows = self.rows();
        if rows.is_empty() {
            return;
        }
        let last = rows.len() - 1;
        let page = self.page_rows.max(1);
        let next = match (self.selected_index(&rows), action) {
            (None, Action::Last) => last,
            (None, _) => 0,
            (Some(i), Action::Up) => i.saturating_sub(1),
            (Some(i), Action::Down) => (i + 1).min(last),
            (Some(i), Action::PageUp) => i.saturating_sub(page),
            (Some(i), Action::PageDown) => (i + page).min(last),
            (Some(_), Action::First) => 0,
            (Some(_), _) => last,
        };
        let key = rows[next].key;
        drop(rows);
        self.select(key);
    }

    /// Selects the row `key`; the next frame scrolls to it (see [`crate::table::scroll_offset`]).
    fn select(&mut self, key: RowKey) {
        self.table.selected = Some(key);
    }

    fn tag_selected(&mut self) {
        let rows = self.rows();
        let Some(index) = self.selected_index(&rows) else {
            drop(rows);
            self.move_selection(Action::First);
            return;
        };
        let key = rows[index].key;
        let next_key = rows[(index + 1).min(rows.len() - 1)].key;
        drop(rows);
        if !self.table.tagged.remove(&key) {
            self.table.tagged.insert(key);
        }
        self.select(next_key);
    }

    fn cycle_gpu(&mut self) {
        let gpus: Vec<u32> = self
            .machine()
            .gpus
            .iter()
            .map(|g| g.index)
            .filter(|i| self.fixed.gpus.as_ref().is_none_or(|only| only.contains(i)))
            .collect();
        self.table.only_gpu = match self.table.only_gpu {
            None => gpus.first().copied(),
            Some(current) => gpus.iter().position(|g| *g == current).and_then(|at| gpus.get(at + 1)).copied(),
        };
        self.table.scroll_to_top();
        self.status = Some(match self.table.only_gpu {
            Some(gpu) => format!("processes of GPU {gpu} only (g: next GPU)"),
            None => "processes of every GPU".to_owned(),
        });
    }

    fn cycle_user(&mut self) {
        let mut users: Vec<String> = self.tick().processes.iter().filter_map(|p| p.user.clone()).collect();
        users.sort();
        users.dedup();
        if let Some(own) = &self.own_user {
            users.retain(|u| u != own);
            users.insert(0, own.clone());
        }
        self.table.only_user = match &self.table.only_user {
            None => users.first().cloned(),
            Some(current) => users.iter().position(|u| u == current).and_then(|at| users.get(at + 1)).cloned(),
        };
        self.table.scroll_to_top();
        self.status = Some(match &self.table.only_user {
            Some(user) => format!("processes of {user} only (u: next user)"),
            None => "processes of every user".to_owned(),
        });
    }

    fn toggle_pause(&mut self) {
        if let Some(playback) = &mut self.playback {
            playback.player.toggle_pause();
        } else if self.frozen.take().is_none() {
            self.frozen = Some(Box::new(self.pipeline.clone()));
        }
    }

    fn seek(&mut self, delta_ms: i64) {
        match &mut self.playback {
            Some(playback) => {
                let advance = playback.player.seek(delta_ms);
                self.apply_advance(&advance);
            }
            None => self.status = Some("seeking works on recordings (--replay)".to_owned()),
        }
    }

    fn playback_control(&mut self, action: Action) {
        let Some(playback) = &mut self.playback else {
            self.status = Some("playback keys work on recordings (--replay)".to_owned());
            return;
        };
        let advance = match action {
            Action::JumpStart => playback.player.jump_start(),
            Action::JumpEnd => playback.player.jump_end(),
            Action::Slower => {
                playback.player.slower();
                super::player::Advance::None
            }
            _ => {
                playback.player.faster();
                super::player::Advance::None
            }
        };
        self.apply_advance(&advance);
    }

    /// Acts on a mouse click: selects a row, sorts by a column (a second click inverts), focuses the advice, or in
    /// the jobs view selects a job (a second click expands it) or a rank.
    pub fn on_hit(&mut self, hit: super::Hit) {
        match hit {
            super::Hit::Row(index) => self.click_row(index),
            super::Hit::Header(column) => self.click_header(column),
            super::Hit::Advice => self.focus = Focus::Advice,
            super::Hit::Finding(index) => {
                self.focus = Focus::Advice;
                self.advice_selected = index;
            }
            super::Hit::Job(index) => self.click_job(index),
            super::Hit::Rank { job, rank } => self.click_rank(job, rank),
        }
    }

    /// Selects the `index`-th row of the table (a mouse click: the hit test adds the offset the table was drawn at).
    pub fn click_row(&mut self, index: usize) {
        let rows = self.rows();
        if let Some(row) = rows.get(index) {
            let key = row.key;
            drop(rows);
            self.focus = super::Focus::Processes;
            self.select(key);
        }
    }

    /// Sorts by a column (a click on its header); a second click inverts.
    pub fn click_header(&mut self, column: SortColumn) {
        if self.table.sort == column {
            self.table.inverted = !self.table.inverted;
        } else {
            self.table.sort = column;
            self.table.inverted = false;
        }
    }

    /// Scrolls the selection by `delta` rows (the mouse wheel).
    pub fn scroll(&mut self, delta: i32) {
        let action = if delta < 0 { Action::Up } else { Action::Down };
        for _ in 0..delta.unsigned_abs() {
            if self.jobs.on && self.focus == Focus::Processes {
                self.move_job_selection(action);
            } else {
                self.move_selection(action);
            }
        }
    }
}
