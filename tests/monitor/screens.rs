//! Whole screens of the monitor drawn on synthetic machines at fixed sizes, as insta snapshots. The time on
//! screen comes from the ticks, so these are stable.
#![allow(
    clippy::expect_used,
    reason = "helpers outside #[test] functions build fixtures; failing there fails the test"
)]

use gpusight::advice::{Finding, Rule, Severity};
use gpusight::app::{App, AppOptions, FeedEvent, ProcessInspector};
use gpusight::sample::Snapshot;
use gpusight::source::replay::Recording;

use crate::common::{fed_app, live_app, next_snapshot, replay_app, screen, synthetic};

#[derive(Debug)]
struct FakeInspector;

impl ProcessInspector for FakeInspector {
    fn cuda_libraries(&self, _pid: u32) -> Result<Vec<(String, String)>, String> {
        Ok(vec![("libcudart.so".into(), "12.8.90".into()), ("libnccl.so".into(), "2.26.2".into())])
    }
    fn environment(&self, _pid: u32) -> Result<Vec<(String, String)>, String> {
        Ok(vec![("CUDA_VISIBLE_DEVICES".into(), "0".into())])
    }
}

fn options() -> AppOptions {
    AppOptions {
        own_uid: 1001,
        own_user: Some("alice".into()),
        process_inspector: Box::new(FakeInspector),
        history_capacity: 600,
        ..AppOptions::default()
    }
}

/// An app fed `n_ticks` ticks of a synthetic scenario.
fn app(spec: &str, n_ticks: u64) -> App {
    app_edited(spec, n_ticks, |_| {})
}

/// An app fed `n_ticks` ticks of a synthetic scenario, each changed by `edit` first.
fn app_edited(spec: &str, n_ticks: u64, edit: impl Fn(&mut Snapshot)) -> App {
    fed_app(options(), &mut synthetic(spec), n_ticks, edit)
}

#[test]
fn mixed_8_gpus_at_three_sizes() {
    let app = app("mixed:8", 90);
    insta::assert_snapshot!("mixed8_80x24", screen(&app, 80, 24));
    insta::assert_snapshot!("mixed8_120x40", screen(&app, 120, 40));
    insta::assert_snapshot!("mixed8_200x60", screen(&app, 200, 60));
}

#[test]
fn long_process_list_at_200x60() {
    let app = app("scale:8x200", 5);
    let text = screen(&app, 200, 60);
    assert!(text.contains("Processes (2"), "{text}");
    insta::assert_snapshot!("scale8x200_200x60", text);
}

#[test]
fn input_bound() {
    let app = app("input-bound", 60);
    insta::assert_snapshot!("input_bound_120x40", screen(&app, 120, 40));
    insta::assert_snapshot!("input_bound_80x24", screen(&app, 80, 24));
}

#[test]
fn lost_gpu_shows_a_banner_while_the_others_update() {
    let app = app("gpu-lost:2", 40);
    let text = screen(&app, 120, 40);
    assert!(text.contains("GPU LOST"), "{text}");
    insta::assert_snapshot!("gpu_lost_120x40", text);
    insta::assert_snapshot!("gpu_lost_80x24", screen(&app, 80, 24));
}

#[test]
fn too_small_says_what_is_needed() {
    let app = app("mixed:8", 2);
    let text = screen(&app, 36, 8);
    assert!(text.contains("needs 40x10") && text.contains("36x8"), "{text}");
    insta::assert_snapshot!("too_small_36x8", text);
}

/// The advice pane's rows: from its title line to the row before the footer (or the screen's end).
fn advice_text(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let Some(start) = lines.iter().position(|l| l.starts_with(" Advice ")) else {
        // The one-line strip is the last row.
        return lines.last().copied().unwrap_or_default().to_owned();
    };
    lines[start..].join(" ")
}

/// No finding is cut: no ellipsis in the advice pane, and each finding's title and remedy are either on screen
/// whole (across wrapped lines) or not at all.
fn assert_findings_whole(app: &App, text: &str, what: &str) {
    assert!(!text.contains("Terminal too small"), "{what}: refused\n{text}");
    let pane = advice_text(text);
    assert!(!pane.contains('…'), "{what}: a cut in the advice pane\n{text}");
    let flat = pane.split_whitespace().collect::<Vec<_>>().join(" ");
    for finding in app.findings() {
        for sentence in [&finding.title, &finding.remedy] {
            let words: Vec<&str> = sentence.split_whitespace().collect();
            let head = words.iter().take(6).copied().collect::<Vec<_>>().join(" ");
            if flat.contains(&head) {
                assert!(flat.contains(&words.join(" ")), "{what}: \"{sentence}\" is cut\n{text}");
            }
        }
    }
}

const SIZES: [(u16, u16); 6] = [(40, 10), (60, 20), (100, 15), (80, 24), (160, 50), (200, 60)];

#[test]
fn every_size_from_40x10_draws_with_findings_whole() {
    let mixed = app("mixed:8", 90);
    let demo = demo_start();
    assert!(!demo.findings().is_empty(), "the demo opens on a finding");
    for (name, app) in [("mixed8", &mixed), ("demo", &demo)] {
        for (w, h) in SIZES {
            let text = screen(app, w, h);
            assert_findings_whole(app, &text, &format!("{name} {w}x{h}"));
            insta::assert_snapshot!(format!("{name}_sizes_{w}x{h}"), text);
        }
    }
}

#[test]
fn the_demo_opens_on_a_process_and_a_warning_with_history() {
    let app = demo_start();
    let text = screen(&app, 80, 24);
    assert!(text.contains("WARN") || text.contains("CRIT"), "{text}");
    assert!(!text.contains("no GPU processes"), "{text}");
    assert!(text.contains("python3 "), "a process row: {text}");
    assert!(app.view().history.n_ticks() > 60, "a minute and more of history already");
}

#[test]
fn ascii_and_help_and_details() {
    let mut opts = options();
    opts.ascii = true;
    let mut source = synthetic("loader");
    let first = next_snapshot(&mut source);
    let mut app = live_app(opts, first);
    for _ in 0..30 {
        app.on_feed(FeedEvent::Snapshot(Box::new(next_snapshot(&mut source))));
    }
    let text = screen(&app, 120, 40);
    assert!(text.is_ascii(), "{text}");
    insta::assert_snapshot!("loader_ascii_120x40", text);
    app.update(gpusight::keys::Action::Tree);
    insta::assert_snapshot!("loader_tree_120x40", screen(&app, 120, 40));
    app.update(gpusight::keys::Action::Tree);
    app.update(gpusight::keys::Action::Down);
    app.update(gpusight::keys::Action::Details);
    let text = screen(&app, 120, 40);
    assert!(text.contains("libcudart.so"), "{text}");
    insta::assert_snapshot!("loader_details_120x40", text);
    app.update(gpusight::keys::Action::Back);
    app.update(gpusight::keys::Action::Help);
    insta::assert_snapshot!("help_120x40", screen(&app, 120, 40));
}

#[test]
fn the_dialog_names_the_process() {
    let mut app = app("compute", 5);
    app.update(gpusight::keys::Action::Down);
    app.update(gpusight::keys::Action::SignalKill);
    let text = screen(&app, 100, 30);
    assert!(text.contains("[ SIGKILL ]") && text.contains("PID 2001"), "{text}");
    insta::assert_snapshot!("dialog_100x30", text);
}

#[test]
fn advice_pane_shows_findings() {
    // The advice engine is filled elsewhere; the pane renders whatever findings it is given. Build them here.
    let findings = vec![
        Finding {
            rule: Rule::InputBound,
            severity: Severity::Critical,
            gpu_index: Some(1),
            pid: Some(3001),
            gpu_instance_id: None,
            title: "Input pipeline starves GPU 1".into(),
            evidence: "SM util 4 % (median, 30 s); PSI io 36.8 %; PID 3001 in D 40 % of samples".into(),
            remedy: "Raise DataLoader num_workers, use pinned memory, or move the data to local NVMe".into(),
            explanation: "The GPU waits for batches.".into(),
            since_ms: 1_763_942_430_000,
            cause: None,
            also: Vec::new(),
        },
        Finding {
            rule: Rule::PowerCapped,
            severity: Severity::Warning,
            gpu_index: Some(0),
            pid: None,
            gpu_instance_id: None,
            title: "GPU 0 is power capped".into(),
            evidence: "pwr-cap active 62 % of 2 min".into(),
            remedy: "Check the power limit (nvidia-smi -q -d POWER)".into(),
            explanation: "The board hit its power limit.".into(),
            since_ms: 1_763_942_430_000,
            cause: None,
            also: Vec::new(),
        },
    ];
    let paint = gpusight::ui::Paint::new(gpusight::ui::config::ThemeName::Dark, false);
    let render = |width: u16, height: u16| {
        let area = ratatui::layout::Rect::new(0, 0, width, height);
        let mut buffer = ratatui::buffer::Buffer::empty(area);
        gpusight::ui::render_findings(&findings, area, &mut buffer, &paint);
        (0..area.height)
            .map(|y| (0..area.width).map(|x| buffer[(x, y)].symbol()).collect::<String>().trim_end().to_owned())
            .collect::<Vec<String>>()
    };
    // Room for everything: title, evidence and remedy of each.
    let lines = render(110, 7);
    insta::assert_snapshot!("advice_pane", lines.join("\n"));
    assert!(lines.iter().any(|l| l.contains("CRIT") && l.contains("GPU 1") && l.contains("PID 3001")));
    assert!(lines.iter().any(|l| l.contains("→ Raise DataLoader")), "the remedy has its own line");
    assert!(lines.iter().any(|l| l.contains("why SM util 4 %")), "{lines:?}");
    // At 80x6: no room for the evidence, so each finding keeps its title and its remedy, whole.
    let lines = render(80, 6);
    insta::assert_snapshot!("advice_pane_80", lines.join("\n"));
    assert!(lines[1].contains("CRIT") && lines[1].contains("Input pipeline starves GPU 1"), "{lines:?}");
    assert!(lines[2].contains("→ Raise") && lines[5].contains("→ Check the power limit"), "{lines:?}");
    assert!(lines.iter().all(|l| !l.contains("why")), "{lines:?}");
    assert!(lines.iter().all(|l| !l.contains('…')), "{lines:?}");
}

/// The monitor on the embedded demo recording (a real H200), played to `seconds` from its start.
fn demo_at(seconds: u64) -> App {
    let mut app = replay_app(options(), Recording::demo().expect("demo"));
    app.advance_playback(std::time::Duration::from_secs(seconds));
    app
}

/// The monitor on the demo as `--demo` opens it: at the first warning, with the history up to there.
fn demo_start() -> App {
    let options = AppOptions { start: gpusight::app::PlaybackStart::FirstWarning, ..options() };
    replay_app(options, Recording::demo().expect("demo"))
}

#[test]
fn demo_frames_at_three_sizes() {
    // 150 s: the input-bound phase beside the idle holder; 200 s: the DataLoader tree; 300 s: the holder alone.
    for (seconds, name) in [(150, "input"), (200, "loader"), (300, "holder")] {
        let app = demo_at(seconds);
        let small = screen(&app, 80, 24);
        assert!(small.contains("REC"), "{small}");
        insta::assert_snapshot!(format!("demo_{name}_80x24"), small);
        insta::assert_snapshot!(format!("demo_{name}_120x40"), screen(&app, 120, 40));
        insta::assert_snapshot!(format!("demo_{name}_200x60"), screen(&app, 200, 60));
    }
}

#[test]
fn any_size_draws_without_a_panic_and_without_a_cut_finding() {
    let mixed = app("mixed:8", 90);
    let demo = demo_start();
    // The last finding selected: the pane starts late enough to show it.
    let mut focused = app("mixed:8", 90);
    focused.update(gpusight::keys::Action::FocusNext);
    focused.update(gpusight::keys::Action::Last);
    for app in [&mixed, &demo, &focused] {
        for w in (1..=160).step_by(9) {
            for h in (1..=60).step_by(7) {
                let text = screen(app, w, h);
                if w >= 40 && h >= 10 {
                    assert_findings_whole(app, &text, &format!("{w}x{h}"));
                }
            }
        }
    }
}

#[test]
fn a_status_on_a_short_screen_takes_its_own_row() {
    let mut app = app("mixed:8", 90);
    app.status = Some("sorted by %SM".into());
    let text = screen(&app, 100, 15);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.last().map(|l| l.trim()), Some("sorted by %SM"), "{text}");
    // The rest is laid out above it: the findings (here the strip) are whole.
    let above = lines[..lines.len() - 1].join("\n");
    assert_findings_whole(&app, &above, "100x15 with a status");
    assert!(lines[lines.len() - 2].contains("WARN"), "{text}");
}

#[test]
fn jobs_view_on_the_straggler_collapsed_and_expanded() {
    let mut app = app("straggler", 90);
    app.update(gpusight::keys::Action::Jobs);
    insta::assert_snapshot!("jobs_straggler_80x24", screen(&app, 80, 24));
    insta::assert_snapshot!("jobs_straggler_160x50", screen(&app, 160, 50));
    app.update(gpusight::keys::Action::Details);
    insta::assert_snapshot!("jobs_straggler_expanded_80x24", screen(&app, 80, 24));
    insta::assert_snapshot!("jobs_straggler_expanded_160x50", screen(&app, 160, 50));
    app.update(gpusight::keys::Action::SignalTerm);
    insta::assert_snapshot!("jobs_straggler_dialog_80x24", screen(&app, 80, 24));
}

/// The straggler's ranks as another user's processes: their environments cannot be read, so they are grouped by
/// their launcher (torchrun) without ranks, and the jobs view says so in one dim line at its foot.
#[test]
fn jobs_view_says_when_environments_were_unreadable() {
    let app_unreadable = |n_ticks| {
        let mut app = app_edited("straggler", n_ticks, |snapshot| {
            for p in &mut snapshot.tick.processes {
                if let Some(job) = p.job.as_mut() {
                    *job = gpusight::sample::JobInfo {
                        key: "launcher:2000".to_owned(),
                        launcher: Some("torchrun".to_owned()),
                        note: Some("environment unreadable (permission denied): rank unknown".to_owned()),
                        ..gpusight::sample::JobInfo::default()
                    };
                }
            }
        });
        app.update(gpusight::keys::Action::Jobs);
        app
    };
    let unreadable = app_unreadable(90);
    assert_eq!(unreadable.unreadable_environments(), 2);
    let text = screen(&unreadable, 120, 40);
    let note = "environment of 2 processes unreadable (not yours; run as their user or root): grouped by launcher and \
                cgroup only";
    assert!(text.contains(note), "{text}");
    assert!(text.contains("torchrun train_ddp.py (pid 2000)"), "grouped by the launcher: {text}");
    assert!(unreadable.status.is_none() && unreadable.dialog.is_none(), "a note, never an error or a popup");
    insta::assert_snapshot!("jobs_unreadable_environment_120x40", text);
    // Every environment read (the plain straggler): no such line.
    let mut plain = app("straggler", 90);
    plain.update(gpusight::keys::Action::Jobs);
    assert!(!screen(&plain, 120, 40).contains("unreadable"));
}

/// The explanation of a finding at 40x10: it does not fit, so Up/Down/PageDown/End scroll it, to its last line and
/// no further, and the title says how much is left.
#[test]
fn the_finding_screen_scrolls_at_40x10() {
    use gpusight::keys::Action;
    let mut app = app("straggler", 90);
    app.update(Action::Explain);
    let area = ratatui::layout::Rect::new(0, 0, 40, 10);
    let settle = |app: &mut App| {
        app.page_rows = gpusight::ui::table_rows(area, app);
        app.scroll_end = gpusight::ui::scroll_end(area, app);
    };
    settle(&mut app);
    let first = screen(&app, 40, 10);
    assert!(first.contains(" more, Esc)"), "the title says how much is left: {first}");
    let end = app.scroll_end.expect("the explanation screen scrolls");
    assert!(end > 0, "it does not fit at 40x10");
    app.update(Action::Down);
    let second = screen(&app, 40, 10);
    assert_ne!(first, second, "Down scrolls");
    for _ in 0..500 {
        app.update(Action::Down);
    }
    let last = screen(&app, 40, 10);
    assert!(last.contains("(0 more, Esc)") && last.contains("Since "), "the last line shows: {last}");
    assert!(matches!(app.screen, gpusight::app::Screen::Explain { offset, .. } if offset == end), "{:?}", app.screen);
    // One Up from the end moves at once; Home goes back to the top; PageDown moves a page.
    app.update(Action::Up);
    assert!(matches!(app.screen, gpusight::app::Screen::Explain { offset, .. } if offset + 1 == end));
    app.update(Action::First);
    assert_eq!(screen(&app, 40, 10), first);
    app.update(Action::PageDown);
    let page = app.page_rows;
    assert!(matches!(app.screen, gpusight::app::Screen::Explain { offset, .. } if offset == page.min(end)));
    app.update(Action::Last);
    assert_eq!(screen(&app, 40, 10), last);
}

/// `f` where the full panels do not fit says so (the event loop puts `ui::mode_note` in the status line), and says
/// nothing where they fit or in another mode.
#[test]
fn full_panels_that_do_not_fit_are_said() {
    use gpusight::keys::Action;
    let mut app = app("mixed:8", 30);
    let small = ratatui::layout::Rect::new(0, 0, 80, 24);
    let large = ratatui::layout::Rect::new(0, 0, 240, 80);
    assert_eq!(gpusight::ui::mode_note(small, &app), None, "auto mode: nothing asked");
    app.update(Action::ModeFull);
    assert!(app.mode_asked, "the event loop is told to check");
    let note = gpusight::ui::mode_note(small, &app).expect("8 panels do not fit in 80x24");
    assert!(note.starts_with("full GPU panels do not fit in 80x24 with 8 GPUs"), "{note}");
    assert_eq!(gpusight::ui::mode_note(large, &app), None, "they fit in 240x80");
}

/// An app on the HGX scenario whose GPUs carry 18 NVLink links each (link 17 down, CRC errors on link 5), with
/// the NVLink screen open on GPU 0.
fn nvlink_app() -> App {
    let mut app = app_edited("mixed:8", 5, |snap| {
        for gpu in &mut snap.tick.gpus {
            gpu.nvlinks = (0..18)
                .map(|link| gpusight::sample::NvLinkTick {
                    link,
                    up: link != 17,
                    version: Some(4),
                    crc_flit_errors: Some(if link == 5 { 950 } else { 0 }),
                    replay_errors: Some(0),
                    recovery_errors: Some(0),
                    speed_mb_s: (link != 17).then_some(26_562),
                    rx_kib: Some(1_000),
                    tx_kib: Some(1_000),
                    rx_bytes_s: (link != 17).then_some(7_000_000_000),
                    tx_bytes_s: (link != 17).then_some(6_900_000_000),
                })
                .collect();
        }
    });
    app.update(gpusight::keys::Action::NvLinks);
    app
}

#[test]
fn the_nvlink_screen_lists_each_link_at_80x24() {
    let text = screen(&nvlink_app(), 80, 24);
    assert!(text.contains("NVLink GPU 0"), "{text}");
    assert!(text.contains("17/18 up  RX 119.0GB/s  TX 117.3GB/s  CRC 950"), "{text}");
    assert!(text.contains("L0     up   v4   26.6GB/s  RX  7.0GB/s  TX  6.9GB/s  CRC 0 RPL 0 REC 0"), "{text}");
    assert!(text.contains("L5     up   v4   26.6GB/s  RX  7.0GB/s  TX  6.9GB/s  CRC 950 RPL 0 REC 0"), "{text}");
    assert!(text.contains("L17    DOWN v4        N/A  RX      N/A  TX      N/A"), "{text}");
    assert!(text.lines().all(|l| l.chars().count() <= 80), "{text}");
}

#[test]
fn the_nvlink_screen_at_200x60_and_on_a_small_terminal() {
    let wide = screen(&nvlink_app(), 200, 60);
    // Two columns: link 9 beside link 0.
    let row = wide.lines().find(|l| l.contains("L0 ")).unwrap_or_default();
    assert!(row.contains("L9 "), "{wide}");
    let small = screen(&nvlink_app(), 80, 10);
    assert!(small.contains("L0-4   up") && small.contains("L17    DOWN"), "alike links grouped: {small}");
    let mut app = nvlink_app();
    app.update(gpusight::keys::Action::CycleGpu);
    assert!(screen(&app, 80, 24).contains("NVLink GPU 1"));
}

#[test]
fn the_worst_jobs_bar_shows_at_80x24_beside_the_top_finding() {
    for spec in ["mixed:8", "input-bound", "loader:2", "straggler"] {
        let app = app(spec, 90);
        let text = screen(&app, 80, 24);
        let pane = text.lines().skip_while(|l| !l.starts_with(" Advice ")).skip(1).collect::<Vec<_>>();
        let bar = pane.first().copied().unwrap_or_default();
        assert!(bar.starts_with(" GPU") && bar.contains(" busy "), "{spec}: no bar under the title\n{text}");
        // The top finding is about the bar's GPU.
        let top = app.findings().first().and_then(|f| f.gpu_index).expect("a finding on a GPU");
        let gpus = bar.split_whitespace().nth(1).unwrap_or_default();
        assert!(gpus.split(',').any(|g| g == top.to_string()), "{spec}: GPU {top} is not in {bar:?}");
    }
}
