//! App behaviour driven by actions: sort, filter, tag, tree, dialogs and the signal path (with a fake sender),
//! recordings played and sought; plus the real signal sender against a real child process.
#![allow(
    clippy::expect_used,
    clippy::disallowed_methods,
    reason = "fixture helpers may panic; tests may spawn a child to signal"
)]

use std::os::unix::process::ExitStatusExt as _;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use gpusight::app::{
    App, AppOptions, Effect, Feed, PidfdSender, Screen, SignalKind, SignalOutcome, SignalSender, SignalTarget,
};
use gpusight::keys::Action;
use gpusight::source::Source;
use gpusight::table::SortColumn;

use crate::common::{live_app, next_snapshot, synthetic, victim};

type Sent = Arc<Mutex<Vec<(u32, SignalKind)>>>;

#[derive(Debug)]
struct FakeSender(Sent);

impl SignalSender for FakeSender {
    fn send(&self, target: &SignalTarget, kind: SignalKind) -> SignalOutcome {
        self.0.lock().expect("lock").push((target.pid, kind));
        SignalOutcome::Sent
    }
}

fn app_with(spec: &str, readonly: bool) -> (App, Sent) {
    let sent: Sent = Arc::default();
    let options = AppOptions {
        readonly,
        own_uid: 1001,
        own_user: Some("alice".into()),
        signal_sender: Box::new(FakeSender(Arc::clone(&sent))),
        ..AppOptions::default()
    };
    let mut source = synthetic(spec);
    let first = next_snapshot(&mut source);
    (live_app(options, first), sent)
}

fn key(c: char) -> KeyEvent {
    let modifiers = if c.is_ascii_uppercase() { KeyModifiers::SHIFT } else { KeyModifiers::NONE };
    KeyEvent::new(KeyCode::Char(c), modifiers)
}

#[test]
fn k_then_esc_sends_nothing_and_k_then_enter_kills() {
    let (mut app, sent) = app_with("mixed:8", false);
    app.update(Action::Down);
    app.on_key(key('K'));
    let dialog = app.dialog.as_ref().expect("dialog open");
    assert_eq!(dialog.button, gpusight::app::DialogButton::Send(SignalKind::Kill), "SIGKILL pre-selected");
    app.on_key(KeyEvent::new(KeyCode::Esc, KeyModifiers::NONE));
    assert!(app.dialog.is_none());
    assert!(sent.lock().expect("lock").is_empty());
    assert!(app.status.as_deref().is_some_and(|s| s.contains("cancelled")));
    app.on_key(key('K'));
    app.on_key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE));
    let sent = sent.lock().expect("lock").clone();
    assert_eq!(sent, vec![(2001, SignalKind::Kill)]);
    assert!(
        app.status.as_deref().is_some_and(|s| s.contains("SIGKILL") && s.contains("PID 2001: sent")),
        "{:?}",
        app.status
    );
}

#[test]
fn tagged_rows_all_get_the_signal_and_n_cancels() {
    let (mut app, sent) = app_with("mixed:8", false);
    app.update(Action::Down);
    app.update(Action::Tag);
    app.update(Action::Tag);
    assert_eq!(app.table.tagged.len(), 2);
    app.on_key(key('T'));
    assert_eq!(app.dialog.as_ref().expect("dialog").targets.len(), 2);
    app.on_key(key('n'));
    assert!(app.dialog.is_none() && sent.lock().expect("lock").is_empty());
    app.on_key(key('T'));
    app.update(Action::DialogConfirm);
    let sent = sent.lock().expect("lock").clone();
    assert_eq!(sent.len(), 2);
    assert!(sent.iter().all(|(_, kind)| *kind == SignalKind::Term));
    assert!(app.table.tagged.is_empty(), "tags clear after sending");
}

#[test]
fn readonly_offers_no_signal_and_no_environment() {
    let (mut app, sent) = app_with("compute", true);
    app.update(Action::Down);
    app.update(Action::SignalKill);
    assert!(app.dialog.is_none());
    assert!(app.status.as_deref().is_some_and(|s| s.contains("read-only")));
    app.update(Action::Environment);
    assert_eq!(app.screen, Screen::Main);
    assert!(sent.lock().expect("lock").is_empty());
}

#[test]
fn environment_is_for_own_processes_only() {
    let (mut app, _) = app_with("mixed:8", false);
    // Row 0 is alice's (uid 1001, ours); row 1 is bob's.
    app.update(Action::Down);
    app.update(Action::Environment);
    assert!(matches!(app.screen, Screen::Environment { pid: 2001, .. }), "{:?}", app.screen);
    app.update(Action::Back);
    app.update(Action::Down);
    app.update(Action::Environment);
    assert_eq!(app.screen, Screen::Main);
    assert!(app.status.as_deref().is_some_and(|s| s.contains("not yours")));
}

#[test]
fn sort_filter_tree_and_quit() {
    let (mut app, _) = app_with("mixed:8", false);
    assert_eq!(app.table.sort, SortColumn::Gpu);
    app.on_key(key('.'));
    assert_eq!(app.table.sort, SortColumn::Pid);
    app.on_key(key(','));
    app.on_key(key(','));
    assert_eq!(app.table.sort, SortColumn::Command);
    app.on_key(key('i'));
    assert!(app.table.inverted);
    app.on_key(key('/'));
    for c in "serve".chars() {
        app.on_key(key(c));
    }
    app.on_key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE));
    assert_eq!(app.table.filter, "serve");
    assert_eq!(app.rows().len(), 1);
    let rows = app.rows();
    assert_eq!(app.selected_index(&rows), Some(0), "Enter on the filter selects its first match");
    drop(rows);
    app.on_key(KeyEvent::new(KeyCode::Esc, KeyModifiers::NONE));
    assert!(app.table.filter.is_empty() && app.rows().len() > 1);
    app.on_key(key('t'));
    assert!(app.table.tree);
    app.on_key(key('g'));
    assert_eq!(app.table.only_gpu, Some(0));
    app.on_key(key('u'));
    assert_eq!(app.table.only_user.as_deref(), Some("alice"));
    assert_eq!(app.on_key(key('q')), Effect::Quit);
    assert_eq!(app.on_key(KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL)), Effect::Quit);
}

#[test]
fn pause_freezes_the_live_view_while_data_arrives() {
    let (mut app, _) = app_with("compute", false);
    let at = app.tick().at_ms;
    app.update(Action::Pause);
    let source = synthetic("compute");
    let later = gpusight::sample::Snapshot { machine: source.machine(), tick: source.tick_at(5) };
    app.on_feed(gpusight::app::FeedEvent::Snapshot(Box::new(later)));
    assert_eq!(app.tick().at_ms, at, "frozen");
    app.update(Action::Pause);
    assert!(app.tick().at_ms > at, "resumed on the newest data");
}

#[test]
fn a_recording_plays_seeks_and_rebuilds() {
    let source = synthetic("compute");
    let ticks: Vec<_> = (0..300).map(|n| source.tick_at(n)).collect();
    let first_ms = ticks[0].at_ms;
    let feed = Feed::Recording { machine: source.machine(), ticks, label: "demo".into() };
    let mut app = App::new(AppOptions::default(), &feed).expect("app");
    assert_eq!(app.until_next_frame(), Some(Duration::from_secs(1)));
    assert!(app.advance_playback(Duration::from_secs(3)));
    assert_eq!(app.tick().at_ms, first_ms + 3000);
    app.update(Action::SeekForwardLong);
    assert_eq!(app.tick().at_ms, first_ms + 63_000);
    app.update(Action::SeekBack);
    assert_eq!(app.tick().at_ms, first_ms + 53_000);
    assert_eq!(app.view().history.n_ticks(), 54, "rebuilt from the start");
    app.update(Action::Pause);
    assert!(!app.advance_playback(Duration::from_secs(5)));
    app.update(Action::JumpEnd);
    assert_eq!(app.tick().at_ms, first_ms + 299_000);
    app.update(Action::Faster);
    assert!(app.playback.as_ref().is_some_and(|p| (p.player.speed() - 2.0).abs() < f64::EPSILON));
}

#[test]
fn mouse_clicks_select_and_sort() {
    let (mut app, _) = app_with("mixed:8", false);
    let area = ratatui::layout::Rect::new(0, 0, 120, 40);
    let paint = gpusight::ui::Paint::new(app.theme, app.ascii);
    let plan = gpusight::ui::plan(area, &app, &paint).expect("fits");
    let hit = gpusight::ui::hit_test(area, &app, 5, plan.table.y + 3);
    assert_eq!(hit, Some(gpusight::app::Hit::Row(1)), "a click on the second row says so and changes nothing");
    assert_eq!(app.table.selected, None);
    app.on_hit(hit.expect("a row"));
    let rows = app.rows();
    assert_eq!(app.selected_index(&rows), Some(1));
    drop(rows);
    let hit = gpusight::ui::hit_test(area, &app, 30, plan.table.y + 1).expect("a header");
    app.on_hit(hit);
    assert_ne!(app.table.sort, SortColumn::Gpu, "a header click sorts");
    let hit = gpusight::ui::hit_test(area, &app, 10, plan.advice.y + 1);
    assert_eq!(hit, None, "no findings yet, so nothing to click in the advice pane");
}

#[test]
fn real_sender_terminates_a_child_and_reports_exits_and_reuse() {
    let (mut child, pid, start_ticks) = victim();
    let pid: u32 = pid.parse().expect("pid");
    let target = |start_ticks| SignalTarget {
        pid,
        start_ticks,
        user: Some("me".into()),
        command: "sleep 60".into(),
        gpu_mem_bytes: None,
    };
    let sender = PidfdSender::default();
    assert_eq!(sender.send(&target(start_ticks + 1), SignalKind::Term), SignalOutcome::PidReused);
    assert_eq!(sender.send(&target(start_ticks), SignalKind::Term), SignalOutcome::Sent);
    let status = child.wait().expect("wait");
    assert_eq!(status.signal(), Some(15), "killed by SIGTERM");
    assert_eq!(sender.send(&target(start_ticks), SignalKind::Term), SignalOutcome::ExitedAlready);
}

#[test]
fn keymap_overrides_reach_the_app_and_bad_names_fail() {
    let options = AppOptions { keys: [("quit".to_owned(), vec!["X".to_owned()])].into(), ..AppOptions::default() };
    let source = synthetic("idle");
    let feed = Feed::Recording { machine: source.machine(), ticks: vec![source.tick_at(0)], label: "r".into() };
    let mut app = App::new(options, &feed).expect("app");
    assert_eq!(app.on_key(key('X')), Effect::Quit);
    assert_eq!(app.on_key(key('q')), Effect::None);
    let bad = AppOptions { keys: [("frobnicate".to_owned(), vec!["x".to_owned()])].into(), ..AppOptions::default() };
    let error = App::new(bad, &feed).expect_err("unknown action");
    assert!(error.to_string().contains("frobnicate"));
}

#[derive(Debug)]
struct FiveVars;

impl gpusight::app::ProcessInspector for FiveVars {
    fn cuda_libraries(&self, _pid: u32) -> Result<Vec<(String, String)>, String> {
        Ok(Vec::new())
    }
    fn environment(&self, _pid: u32) -> Result<Vec<(String, String)>, String> {
        Ok((0..5).map(|i| (format!("VAR{i}"), i.to_string())).collect())
    }
}

/// The monitor on `mixed:8` as alice, its second row selected and its environment screen open, read through
/// `inspector`.
fn environment_of_second_row(inspector: Box<dyn gpusight::app::ProcessInspector>) -> App {
    let options = AppOptions {
        own_uid: 1001,
        own_user: Some("alice".into()),
        process_inspector: inspector,
        ..AppOptions::default()
    };
    let mut source = synthetic("mixed:8");
    let first = next_snapshot(&mut source);
    let mut app = live_app(options, first);
    app.update(Action::Down);
    app.update(Action::Environment);
    app
}

#[test]
fn environment_scrolling_stops_at_the_end() {
    let mut app = environment_of_second_row(Box::new(FiveVars));
    // The terminal loop sets this after each frame: three variables fit on the screen.
    app.page_rows = 3;
    let offset = |app: &App| match app.screen {
        Screen::Environment { offset, .. } => offset,
        _ => usize::MAX,
    };
    for _ in 0..10 {
        app.update(Action::Down);
    }
    assert_eq!(offset(&app), 2, "the last variable sits on the last row");
    app.update(Action::PageDown);
    assert_eq!(offset(&app), 2);
    app.update(Action::Up);
    assert_eq!(offset(&app), 1, "one Up moves back at once");
    app.update(Action::Last);
    assert_eq!(offset(&app), 2);
}

#[test]
fn enter_on_a_finding_selects_its_process_so_t_acts_on_it() {
    let (mut app, sent) = app_with("mixed:8", false);
    let mut source = synthetic("mixed:8");
    let _ = source.next_snapshot();
    for _ in 0..90 {
        app.on_feed(gpusight::app::FeedEvent::Snapshot(Box::new(next_snapshot(&mut source))));
    }
    let (index, pid, gpu) = app
        .findings()
        .iter()
        .enumerate()
        .find_map(|(i, f)| f.pid.map(|p| (i, p, f.gpu_index)))
        .expect("a finding about a process");
    // A click on the first finding's title line (under the title and the jobs' bars) selects it and focuses the pane.
    let area = ratatui::layout::Rect::new(0, 0, 120, 40);
    let paint = gpusight::ui::Paint::for_app(&app);
    let plan = gpusight::ui::plan(area, &app, &paint).expect("fits");
    assert!(plan.advice_bars >= 1, "the worst job's bar: {plan:?}");
    let bar = gpusight::ui::hit_test(area, &app, 10, plan.advice.y + 1);
    assert_eq!(bar, Some(gpusight::app::Hit::Advice), "a bar is no finding");
    let hit = gpusight::ui::hit_test(area, &app, 10, plan.advice.y + 1 + plan.advice_bars);
    assert_eq!(hit, Some(gpusight::app::Hit::Finding(0)));
    app.on_hit(hit.expect("a finding"));
    assert_eq!((app.focus, app.advice_selected), (gpusight::app::Focus::Advice, 0));
    for _ in 0..index {
        app.update(Action::Down);
    }
    // Without a selection T says what to do; after Enter on the finding it opens the dialog for its process.
    app.on_key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE));
    let rows = app.rows();
    let row = &rows[app.selected_index(&rows).expect("a row selected")];
    assert_eq!((row.pid, row.key.gpu_index), (Some(pid), gpu));
    drop(rows);
    assert!(app.status.as_deref().is_some_and(|s| s.contains(&format!("PID {pid} selected"))), "{:?}", app.status);
    app.on_key(key('T'));
    let dialog = app.dialog.as_ref().expect("the dialog for the finding's process");
    assert_eq!(dialog.targets.iter().map(|t| t.pid).collect::<Vec<_>>(), vec![pid]);
    app.on_key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE));
    assert_eq!(sent.lock().expect("lock").as_slice(), &[(pid, SignalKind::Term)]);
    // x still explains.
    app.update(Action::FocusNext);
    app.update(Action::Explain);
    assert!(matches!(app.screen, Screen::Explain { .. }), "{:?}", app.screen);
}

#[test]
fn help_scrolls_and_any_other_key_leaves() {
    let (mut app, _) = app_with("compute", false);
    app.update(Action::Help);
    app.on_key(KeyEvent::new(KeyCode::Down, KeyModifiers::NONE));
    app.on_key(KeyEvent::new(KeyCode::Down, KeyModifiers::NONE));
    assert_eq!(app.screen, Screen::Help { offset: 2 });
    app.on_key(KeyEvent::new(KeyCode::Up, KeyModifiers::NONE));
    assert_eq!(app.screen, Screen::Help { offset: 1 });
    app.on_key(key('x'));
    assert_eq!(app.screen, Screen::Main);
}

#[test]
fn left_and_right_scroll_the_command_outside_a_recording() {
    let (mut app, _) = app_with("mixed:8", false);
    app.on_key(KeyEvent::new(KeyCode::Right, KeyModifiers::NONE));
    app.on_key(KeyEvent::new(KeyCode::Right, KeyModifiers::NONE));
    assert_eq!(app.table.command_offset, 16);
    app.on_key(KeyEvent::new(KeyCode::Left, KeyModifiers::NONE));
    assert_eq!(app.table.command_offset, 8);
    for _ in 0..50 {
        app.on_key(KeyEvent::new(KeyCode::Right, KeyModifiers::NONE));
    }
    let longest = app.rows().iter().map(|r| r.command().chars().count()).max().expect("rows");
    assert!(app.table.command_offset < longest, "stops while some of the longest command shows");
}

#[test]
fn a_recording_starts_where_asked() {
    let recording = gpusight::source::replay::Recording::demo().expect("demo");
    let feed = Feed::Recording { machine: recording.machine, ticks: recording.ticks, label: recording.label };
    let at = AppOptions { start: gpusight::app::PlaybackStart::At(100.0), ..AppOptions::default() };
    let app = App::new(at, &feed).expect("app");
    let (position, _) = app.playback.as_ref().expect("playback").player.position();
    assert!((99..=101).contains(&position.as_secs()), "{position:?}");
    assert!(app.view().history.n_ticks() > 50, "the history up to there");
    assert_eq!(app.status, None, "inside the recording nothing is said");
    // Past the end: the last frame, and a line that says so.
    let past = AppOptions { start: gpusight::app::PlaybackStart::At(1e9), ..AppOptions::default() };
    let app = App::new(past, &feed).expect("app");
    let (position, length) = app.playback.as_ref().expect("playback").player.position();
    assert_eq!(position, length);
    let length = gpusight::units::clock(length);
    assert_eq!(app.status, Some(format!("recording is {length} long; starting at {length}")));
    let first = AppOptions { start: gpusight::app::PlaybackStart::FirstWarning, ..AppOptions::default() };
    let app = App::new(first, &feed).expect("app");
    assert!(app.findings().iter().any(|f| f.severity >= gpusight::advice::Severity::Warning));
    assert!(!app.tick().gpu_processes.is_empty());
    // Playing on from there ingests the next samples, not the ones already in.
    let before = app.view().history.n_ticks();
    let mut app = app;
    app.advance_playback(Duration::from_secs(5));
    assert!(app.view().history.n_ticks() > before);
}

#[test]
fn o_chords_sort_as_in_nvitop_and_r_redraws() {
    let (mut app, _) = app_with("mixed:8", false);
    app.on_key(key('o'));
    assert!(app.status.as_deref().is_some_and(|s| s.starts_with("sort by:")), "{:?}", app.status);
    app.on_key(key('g'));
    assert_eq!((app.table.sort, app.table.inverted), (SortColumn::GpuMem, false));
    app.on_key(key('o'));
    app.on_key(key('P'));
    assert_eq!((app.table.sort, app.table.inverted), (SortColumn::Pid, true));
    // Without the chord, g keeps its own meaning.
    app.on_key(key('g'));
    assert_eq!(app.table.only_gpu, Some(0));
    assert_eq!(app.on_key(key('r')), Effect::Redraw);
    assert_eq!(app.on_key(KeyEvent::new(KeyCode::F(5), KeyModifiers::NONE)), Effect::Redraw);
}

#[derive(Debug)]
struct GoneSender;

impl SignalSender for GoneSender {
    fn send(&self, _target: &SignalTarget, _kind: SignalKind) -> SignalOutcome {
        SignalOutcome::ExitedAlready
    }
}

#[test]
fn a_signal_to_a_made_up_process_says_it_may_never_have_run_here() {
    let options = AppOptions { own_uid: 1001, signal_sender: Box::new(GoneSender), ..AppOptions::default() };
    let mut source = synthetic("compute");
    let first = next_snapshot(&mut source);
    let mut app = live_app(options, first);
    app.update(Action::Down);
    app.on_key(key('T'));
    app.on_key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE));
    let status = app.status.clone().unwrap_or_default();
    assert!(status.contains("exited already") && status.contains("never ran here"), "{status}");
}

#[test]
fn j_groups_ranks_into_jobs_and_enter_expands_and_esc_leaves() {
    let (mut app, _sent) = app_with("straggler", false);
    app.on_key(key('J'));
    assert!(app.jobs.on);
    let rows = app.job_rows();
    assert_eq!(rows.len(), 1, "{rows:?}");
    let job = &rows[0];
    assert!(job.name.starts_with("torchrun "), "{}", job.name);
    assert_eq!(job.ranks.len(), 2);
    assert_eq!(job.gpus, vec![0, 1]);
    assert_eq!(app.selected_job(&rows), Some(0));
    app.on_key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE));
    assert!(app.jobs.expanded.contains(&job.key));
    app.on_key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE));
    assert!(app.jobs.expanded.is_empty());
    app.on_key(KeyEvent::new(KeyCode::Esc, KeyModifiers::NONE));
    assert!(!app.jobs.on);
    assert_eq!(app.screen, Screen::Main);
}

#[test]
fn t_on_a_job_asks_once_for_every_rank_and_says_each_outcome() {
    let (mut app, sent) = app_with("straggler", false);
    app.update(Action::Jobs);
    let pids = app.job_rows()[0].pids();
    assert_eq!(pids.len(), 2);
    app.on_key(key('T'));
    let dialog = app.dialog.as_ref().expect("one dialog for the job");
    assert!(dialog.job.as_deref().is_some_and(|j| j.starts_with("torchrun ")), "{:?}", dialog.job);
    assert_eq!(dialog.targets.iter().map(|t| t.pid).collect::<Vec<_>>(), pids);
    app.on_key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE));
    let sent = sent.lock().expect("lock").clone();
    assert_eq!(sent, pids.iter().map(|p| (*p, SignalKind::Term)).collect::<Vec<_>>());
    let status = app.status.clone().unwrap_or_default();
    for pid in pids {
        assert!(status.contains(&format!("PID {pid}: sent")), "{status}");
    }
}

#[test]
fn readonly_refuses_signals_to_a_job() {
    let (mut app, sent) = app_with("straggler", true);
    app.update(Action::Jobs);
    app.update(Action::SignalKill);
    assert!(app.dialog.is_none());
    assert!(sent.lock().expect("lock").is_empty());
    assert!(app.status.as_deref().is_some_and(|s| s.contains("read-only")), "{:?}", app.status);
}

#[test]
fn processes_without_a_job_are_jobs_of_their_own_and_the_selection_moves() {
    let (mut app, _sent) = app_with("mixed:8", false);
    app.update(Action::Jobs);
    let rows = app.job_rows();
    assert!(rows.len() > 1, "{rows:?}");
    assert!(
        rows.iter().all(|r| r.name.ends_with(&format!("(pid {})", r.pids()[0])) && r.slowest.is_none()),
        "{rows:?}"
    );
    assert_eq!(app.selected_job(&rows), Some(0));
    app.update(Action::Down);
    assert_eq!(app.selected_job(&rows), Some(1));
    app.update(Action::Last);
    assert_eq!(app.selected_job(&rows), Some(rows.len() - 1));
    app.update(Action::FocusNext);
    app.update(Action::First);
    assert_eq!(app.selected_job(&rows), Some(rows.len() - 1), "Home moved the advice pane, not the jobs");
    app.update(Action::Jobs);
    assert!(!app.jobs.on);
}

/// Where a click lands in the jobs view at 120x40: the table's rectangle and the hit on its `line`-th line (0 is the
/// title, 1 the header).
fn jobs_click(app: &App, line: u16) -> Option<gpusight::app::Hit> {
    let area = ratatui::layout::Rect::new(0, 0, 120, 40);
    let paint = gpusight::ui::Paint::new(app.theme, app.ascii);
    let plan = gpusight::ui::plan(area, app, &paint).expect("fits");
    gpusight::ui::hit_test(area, app, 10, plan.table.y + line)
}

#[test]
fn mouse_on_the_jobs_view_selects_expands_and_picks_a_rank() {
    use gpusight::app::Hit;
    let (mut app, _sent) = app_with("mixed:8", false);
    app.update(Action::Jobs);
    let rows = app.job_rows();
    assert!(rows.len() > 2, "{rows:?}");
    assert_eq!(jobs_click(&app, 0), None, "the title");
    assert_eq!(jobs_click(&app, 1), None, "the header");
    // A click on the second job selects it and changes nothing else.
    assert_eq!(jobs_click(&app, 3), Some(Hit::Job(1)));
    app.on_hit(Hit::Job(1));
    assert_eq!(app.selected_job(&rows), Some(1));
    assert!(app.jobs.expanded.is_empty());
    // A click on the selected job (or the second click of a double click) expands it, as Enter does.
    app.on_hit(jobs_click(&app, 3).expect("a job"));
    assert!(app.jobs.expanded.contains(&rows[1].key));
    // Its rank is on the next line: a click there selects that rank.
    assert_eq!(jobs_click(&app, 4), Some(Hit::Rank { job: 1, rank: 0 }));
    assert_eq!(jobs_click(&app, 5), Some(Hit::Job(2)), "the next job follows the ranks");
    app.on_hit(Hit::Rank { job: 1, rank: 0 });
    assert_eq!(app.selected_rank(&rows), Some(0));
    let rank = &rows[1].ranks[0];
    assert_eq!(app.jobs.selected_rank, rank.pid.map(|pid| (pid, rank.gpu_index)));
    // A click on the job's line again goes back to the job without folding it; the next one folds it.
    app.on_hit(jobs_click(&app, 3).expect("a job"));
    assert_eq!((app.selected_job(&rows), app.selected_rank(&rows)), (Some(1), None));
    assert!(app.jobs.expanded.contains(&rows[1].key));
    app.on_hit(jobs_click(&app, 3).expect("a job"));
    assert!(app.jobs.expanded.is_empty());
    // Below the last job: nothing.
    let below = u16::try_from(rows.len()).expect("few jobs") + 2;
    assert_eq!(jobs_click(&app, below), None);
}

#[test]
fn the_wheel_scrolls_the_jobs_and_the_ranks_of_an_expanded_one() {
    let (mut app, _sent) = app_with("mixed:8", false);
    app.update(Action::Jobs);
    let rows = app.job_rows();
    assert!(rows.len() > 4, "{rows:?}");
    app.scroll(3);
    assert_eq!(app.selected_job(&rows), Some(3));
    app.update(Action::Details);
    app.on_hit(gpusight::app::Hit::Rank { job: 3, rank: 0 });
    assert_eq!(app.selected_rank(&rows), Some(0));
    // Three lines up from job 3's rank: job 3's line, job 2, job 1.
    app.scroll(-3);
    assert_eq!((app.selected_job(&rows), app.selected_rank(&rows)), (Some(1), None));
    app.scroll(-3);
    assert_eq!(app.selected_job(&rows), Some(0), "the wheel stops at the top");
}

#[test]
fn t_on_a_rank_picked_with_the_mouse_signals_that_rank_alone() {
    let (mut app, sent) = app_with("straggler", false);
    app.update(Action::Jobs);
    app.on_hit(jobs_click(&app, 2).expect("the job, selected already: it expands"));
    let rows = app.job_rows();
    assert!(app.jobs.expanded.contains(&rows[0].key));
    assert_eq!(jobs_click(&app, 4), Some(gpusight::app::Hit::Rank { job: 0, rank: 1 }));
    app.on_hit(jobs_click(&app, 4).expect("rank 1"));
    let pid = rows[0].ranks[1].pid.expect("a PID");
    app.on_key(key('T'));
    let dialog = app.dialog.as_ref().expect("a dialog");
    assert_eq!(dialog.job, None, "the dialog of one process, not of the job");
    assert_eq!(dialog.targets.iter().map(|t| t.pid).collect::<Vec<_>>(), [pid]);
    app.on_key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE));
    assert_eq!(*sent.lock().expect("lock"), [(pid, SignalKind::Term)]);
    // Back on the job's own line: T asks for every rank.
    app.update(Action::First);
    app.on_key(key('T'));
    assert!(app.dialog.as_ref().is_some_and(|d| d.job.is_some() && d.targets.len() == 2));
}

#[test]
fn the_keyboard_selects_a_rank_inside_an_expanded_job_and_t_signals_it_alone() {
    let (mut app, sent) = app_with("straggler", false);
    app.update(Action::Jobs);
    let rows = app.job_rows();
    // Down on a folded job stays on the job: its ranks are not on screen.
    app.update(Action::Down);
    assert_eq!((app.selected_job(&rows), app.selected_rank(&rows)), (Some(0), None));
    app.on_key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE));
    assert!(app.jobs.expanded.contains(&rows[0].key), "Enter expands the job");
    app.update(Action::Down);
    assert_eq!(app.selected_rank(&rows), Some(0));
    app.update(Action::Down);
    assert_eq!(app.selected_rank(&rows), Some(1));
    app.update(Action::Down);
    assert_eq!(app.selected_rank(&rows), Some(1), "the last line stays selected");
    let mut terminal = ratatui::Terminal::new(ratatui::backend::TestBackend::new(120, 40)).expect("terminal");
    let text = draw(&mut app, &mut terminal).join("\n");
    assert!(text.contains("(T/K/I: this rank)"), "{text}");
    let pid = rows[0].ranks[1].pid.expect("a PID");
    app.on_key(key('T'));
    let dialog = app.dialog.as_ref().expect("a dialog");
    assert_eq!(dialog.job, None, "the dialog of one process, not of the job");
    assert_eq!(dialog.targets.iter().map(|t| t.pid).collect::<Vec<_>>(), [pid]);
    app.on_key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE));
    assert_eq!(*sent.lock().expect("lock"), [(pid, SignalKind::Term)]);
    // Up twice: rank 0, then the job's own line, where T asks for every rank.
    app.update(Action::Up);
    app.update(Action::Up);
    assert_eq!((app.selected_job(&rows), app.selected_rank(&rows)), (Some(0), None));
    app.on_key(key('T'));
    assert!(app.dialog.as_ref().is_some_and(|d| d.job.is_some() && d.targets.len() == 2));
}

/// The monitor drawn into `terminal` through `ui::draw`, as the event loop draws it; its lines.
fn draw(app: &mut App, terminal: &mut ratatui::Terminal<ratatui::backend::TestBackend>) -> Vec<String> {
    terminal.draw(|frame| gpusight::ui::draw(frame, app)).expect("draw");
    let buffer = terminal.backend().buffer();
    let area = buffer.area;
    (area.y..area.y + area.height)
        .map(|y| (area.x..area.x + area.width).map(|x| buffer[(x, y)].symbol()).collect::<String>())
        .collect()
}

#[test]
fn a_click_after_a_live_re_sort_selects_the_row_drawn_under_the_pointer() {
    // More processes than the table has rows for at 80x24, sorted by GPU memory (a reading that moves).
    let (mut app, _) = app_with("mixed:16", false);
    app.click_header(SortColumn::GpuMem);
    let area = ratatui::layout::Rect::new(0, 0, 80, 24);
    let mut terminal = ratatui::Terminal::new(ratatui::backend::TestBackend::new(80, 24)).expect("terminal");
    draw(&mut app, &mut terminal);
    let paint = gpusight::ui::Paint::new(app.theme, app.ascii);
    let table = gpusight::ui::plan(area, &app, &paint).expect("fits").table;
    let page = usize::from(table.height - 2);
    assert!(app.rows().len() > page, "{} rows, {page} on the page", app.rows().len());
    // The top row is selected with a click.
    let top = gpusight::ui::hit_test(area, &app, 5, table.y + 2).expect("a row");
    app.on_hit(top);
    let selected = app.table.selected.expect("a selection");
    assert_eq!(app.rows()[0].key, selected);
    // The next tick: the selected process frees its memory, so the sort moves it to the bottom, off the first page.
    let mut tick = app.tick().clone();
    tick.at_ms += 1_000;
    for process in tick.gpu_processes.iter_mut().filter(|p| p.pid == selected.pid) {
        process.used_gpu_memory_bytes = Some(0);
    }
    let machine = std::sync::Arc::clone(app.machine());
    app.on_feed(gpusight::app::FeedEvent::Snapshot(Box::new(gpusight::sample::Snapshot { machine, tick })));
    let rows = app.rows();
    let now = app.selected_index(&rows).expect("still listed");
    assert!(now >= page, "the selection moved off the first page (row {now} of {})", rows.len());
    drop(rows);
    // The frame follows the selection; a click on the first row drawn selects the process drawn there.
    let lines = draw(&mut app, &mut terminal);
    let paint = gpusight::ui::Paint::new(app.theme, app.ascii);
    let table = gpusight::ui::plan(area, &app, &paint).expect("fits").table;
    let y = table.y + 2;
    let hit = gpusight::ui::hit_test(area, &app, 5, y).expect("a row");
    app.on_hit(hit);
    let pid = app.table.selected.and_then(|k| k.pid).expect("a process with a PID");
    let under = &lines[usize::from(y)];
    assert!(under.split_whitespace().nth(1) == Some(pid.to_string().as_str()), "PID {pid} selected; drawn: {under}");
    // Drawn again, the highlight is on that line: nothing scrolled under the pointer.
    let again = draw(&mut app, &mut terminal);
    assert_eq!(again[usize::from(y)], *under);
    let rows = app.rows();
    let index = app.selected_index(&rows).expect("selected");
    assert!(index > 0, "not the top row of the whole table, which is not on screen");
}

#[derive(Debug)]
struct Secrets;

impl gpusight::app::ProcessInspector for Secrets {
    fn cuda_libraries(&self, _pid: u32) -> Result<Vec<(String, String)>, String> {
        Ok(Vec::new())
    }
    fn environment(&self, _pid: u32) -> Result<Vec<(String, String)>, String> {
        Ok(vec![
            ("DATABASE_URL".into(), "postgres://alice:hunter2@db/x".into()),
            ("HF_TOKEN".into(), "hf_abcdef".into()),
            ("PATH".into(), "/usr/bin".into()),
        ])
    }
}

#[test]
fn the_environment_masks_secrets_until_v_shows_them() {
    let mut app = environment_of_second_row(Box::new(Secrets));
    let mut terminal = ratatui::Terminal::new(ratatui::backend::TestBackend::new(80, 10)).expect("terminal");
    let text = draw(&mut app, &mut terminal).join("\n");
    assert!(text.contains("HF_TOKEN=********") && !text.contains("hf_abcdef"), "{text}");
    assert!(text.contains("DATABASE_URL=postgres://alice:********@db/x") && !text.contains("hunter2"), "{text}");
    assert!(text.contains("PATH=/usr/bin"), "{text}");
    assert!(text.contains("v shows secrets"), "the title names the key: {text}");
    app.on_key(key('v'));
    let text = draw(&mut app, &mut terminal).join("\n");
    assert!(text.contains("HF_TOKEN=hf_abcdef") && text.contains("alice:hunter2@db"), "{text}");
    assert!(text.contains("v masks secrets"), "{text}");
    // Leaving and coming back masks them again.
    app.update(Action::Back);
    app.update(Action::Environment);
    let text = draw(&mut app, &mut terminal).join("\n");
    assert!(text.contains("HF_TOKEN=********"), "{text}");
}
