//! The fleet widget: the node grid and the drill-down into one node, drawn into a buffer.

// Helpers outside #[test] fns unwrap too.
#![allow(clippy::unwrap_used, reason = "fixtures that fail to build should stop the test loudly")]

use gpusight::fleet::query::{Fleet, FleetError, FleetFinding, FleetGpu, FleetProcess, Node, NodeState};
use gpusight::fleet::view::FleetView;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::widgets::Widget;

fn gpu(index: u32, util: Option<f64>) -> FleetGpu {
    FleetGpu {
        index,
        uuid: Some(format!("GPU-{index}")),
        model: Some("NVIDIA H200".to_owned()),
        util_pct: util,
        mem_used_bytes: Some(12 << 30),
        mem_total_bytes: Some(140 << 30),
        power_w: Some(150.0),
        power_limit_w: Some(700.0),
        temp_c: Some(41.0),
        throttle_reasons: Some(vec![]),
        answering: Some(true),
        job: None,
    }
}

fn fleet() -> Fleet {
    Fleet {
        source: "http://prom:9090".to_owned(),
        nodes: vec![
            Node {
                name: "alpha".to_owned(),
                instance: "10.0.0.1:9400".to_owned(),
                state: NodeState::Up,
                last_scrape_age_s: Some(1.0),
                gpus: vec![gpu(0, Some(99.0))],
                processes: vec![],
                findings: vec![],
                note: None,
            },
            Node {
                name: "beta".to_owned(),
                instance: "10.0.0.2:9400".to_owned(),
                state: NodeState::Up,
                last_scrape_age_s: Some(1.0),
                gpus: vec![gpu(0, Some(4.0)), gpu(1, None)],
                processes: vec![FleetProcess {
                    gpu_index: 0,
                    pid: 4242,
                    user: Some("alice".to_owned()),
                    command: Some("python3".to_owned()),
                    gpu_memory_bytes: Some(12 << 30),
                    sm_util_pct: Some(4.0),
                    start_ticks: None,
                }],
                findings: vec![FleetFinding {
                    rule: Some("input-bound".to_owned()),
                    severity: "warning".into(),
                    gpu_index: Some(0),
                    pid: Some(4242),
                }],
                note: None,
            },
        ],
        missing_columns: vec![],
    }
}

fn draw(view: &FleetView) -> String {
    draw_at(view, 100, 16)
}

fn draw_at(view: &FleetView, width: u16, height: u16) -> String {
    let area = Rect::new(0, 0, width, height);
    let mut buf = Buffer::empty(area);
    view.render(area, &mut buf);
    (0..area.height)
        .map(|y| (0..area.width).map(|x| buf[(x, y)].symbol()).collect::<String>().trim_end().to_owned())
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn grid_puts_the_node_with_findings_first() {
    let screen = draw(&FleetView::new(fleet()));
    assert!(screen.contains("Fleet: 2 nodes, 3 GPUs"), "{screen}");
    let beta = screen.find("beta").unwrap();
    assert!(beta < screen.find("alpha").unwrap(), "{screen}");
    assert!(screen.contains("warning input-bound"), "{screen}");
    // An absent reading is N/A, not 0.
    assert!(screen.contains("N/A"), "{screen}");
    insta::assert_snapshot!(screen);
}

#[test]
fn drill_down_shows_gpus_processes_and_findings() {
    let mut view = FleetView::new(fleet());
    view.move_selection(5);
    assert_eq!(view.selected, 1);
    view.move_selection(-1);
    view.set_drilled(true);
    let screen = draw(&view);
    assert!(screen.contains("beta (10.0.0.2:9400)"), "{screen}");
    assert!(screen.contains("4242"), "{screen}");
    assert!(screen.contains("python3"), "{screen}");
    assert!(screen.contains("warning input-bound GPU 0 PID 4242"), "{screen}");
    insta::assert_snapshot!(screen);
}

/// The interactive fleet screen: results and errors come in, keys move and drill down, q leaves.
#[test]
fn the_fleet_screen_keeps_the_last_grid_under_an_error_and_drills_down() {
    use gpusight::fleet::screen::FleetScreen;
    use gpusight::keys::Action;
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;

    let draw = |screen: &FleetScreen| {
        let mut terminal = Terminal::new(TestBackend::new(100, 20)).unwrap();
        terminal.draw(|frame| screen.draw(frame)).unwrap();
        let buffer = terminal.backend().buffer().clone();
        (0..20).map(|y| (0..100).map(|x| buffer[(x, y)].symbol()).collect::<String>() + "\n").collect::<String>()
    };
    let mut screen = FleetScreen {
        url: "http://prom:9090".to_owned(),
        view: None,
        error: None,
        signals: false,
        monitors: false,
        notice: None,
    };
    assert!(draw(&screen).contains("querying"));
    screen.on_result(Ok(fleet()));
    let text = draw(&screen);
    assert!(text.contains("alpha") && text.contains("beta"), "{text}");
    // Prometheus goes away: the error is said and the last grid stays.
    screen.on_result(Err(FleetError::Unreachable { url: "http://prom:9090".to_owned(), why: "refused".to_owned() }));
    let text = draw(&screen);
    assert!(text.contains("cannot reach Prometheus") && text.contains("alpha"), "{text}");
    // Open the selected node, then back out with q (which closes the drill-down before leaving).
    assert!(screen.on_action(Action::Down));
    assert!(screen.on_action(Action::Details));
    assert!(screen.view.as_ref().unwrap().drilled);
    assert!(screen.on_action(Action::Quit), "q closes the drill-down first");
    assert!(!screen.view.as_ref().unwrap().drilled);
    assert!(!screen.on_action(Action::Quit), "q on the grid leaves");
}

/// The fleet of [`fleet`] with jobs on three of its GPUs: a Slurm job, a Kubernetes pod and a bare container.
fn fleet_with_jobs() -> Fleet {
    let mut fleet = fleet();
    fleet.nodes[0].gpus[0].job = Some("4242".to_owned());
    fleet.nodes[1].gpus[0].job = Some("ml/trainer-0".to_owned());
    fleet.nodes[1].gpus[1].job = None;
    fleet.nodes[1].gpus.push(FleetGpu { job: Some("3f0c9a1b2c3d".to_owned()), ..gpu(2, Some(50.0)) });
    fleet
}

/// The line of `screen` that contains `text`.
fn line_of<'a>(screen: &'a str, text: &str) -> &'a str {
    screen.lines().find(|l| l.contains(text)).unwrap_or_else(|| panic!("{text:?} not in {screen}"))
}

#[test]
fn grid_shows_the_job_of_each_gpu_and_drops_the_column_first_when_narrow() {
    let view = FleetView::new(fleet_with_jobs());
    let screen = draw_at(&view, 120, 16);
    assert!(line_of(&screen, "NODE / GPU").contains("JOB"), "{screen}");
    assert!(line_of(&screen, "99 %").contains("4242"), "alpha's GPU 0 is Slurm job 4242: {screen}");
    assert!(line_of(&screen, "4 %").contains("ml/trainer-0"), "{screen}");
    assert!(line_of(&screen, "50 %").contains("3f0c9a1b2c3d"), "{screen}");
    let at = line_of(&screen, "NODE / GPU").find("TEMP").unwrap();
    assert_eq!(line_of(&screen, "beta").find("warning input-bound"), Some(at), "a node's finding stays last: {screen}");
    // Beta's GPU 1 has no job: its JOB cell is blank, the columns after it stay in place.
    let blank = line_of(&screen, "GPU 1");
    let at = line_of(&screen, "NODE / GPU").find("JOB").unwrap();
    assert!(blank[at..at + 12].trim().is_empty(), "{screen}");
    insta::assert_snapshot!(screen);
    // At 90 columns the JOB column goes first; the others are as they were without jobs.
    let narrow = draw_at(&view, 90, 16);
    assert!(!narrow.contains("JOB") && !narrow.contains("4242"), "{narrow}");
    assert_eq!(narrow.replace("50 %", ""), draw_at(&FleetView::new(fleet_with_gpu_2()), 90, 16).replace("50 %", ""));
    // No GPU names a job: no JOB column however wide.
    assert!(!draw_at(&FleetView::new(fleet()), 160, 16).contains("JOB"));
}

/// [`fleet`] with the third GPU of [`fleet_with_jobs`] and no jobs.
fn fleet_with_gpu_2() -> Fleet {
    let mut fleet = fleet();
    fleet.nodes[1].gpus.push(gpu(2, Some(50.0)));
    fleet
}

#[test]
fn drill_down_and_text_show_the_job() {
    let mut view = FleetView::new(fleet_with_jobs());
    view.set_drilled(true);
    let screen = draw_at(&view, 110, 20);
    assert!(line_of(&screen, "MODEL").contains("JOB"), "{screen}");
    assert!(line_of(&screen, "4 %").contains("ml/trainer-0"), "{screen}");
    assert!(!draw_at(&view, 90, 20).contains("JOB"), "dropped first when narrow");
    let text = fleet_with_jobs().to_text();
    assert!(line_of(&text, "MODEL").trim_end().ends_with("JOB"), "{text}");
    assert!(line_of(&text, "99 %").trim_end().ends_with("4242"), "{text}");
    assert!(!fleet().to_text().contains("JOB"), "no job anywhere: no column");
}

/// `gpusight ssh`'s additions: a node that is not up says why in the grid, and the drill-down selects processes
/// in the order its table shows them (the one T/K/I signal).
#[test]
fn a_node_says_why_it_is_not_up_and_the_drill_down_selects_processes_in_table_order() {
    use gpusight::fleet::view::process_order;
    let mut fleet = fleet();
    fleet.nodes[0].state = NodeState::Lost;
    fleet.nodes[0].note = Some("Connection refused".to_owned());
    fleet.nodes[1].processes.push(FleetProcess {
        gpu_index: 1,
        pid: 5151,
        user: Some("bob".to_owned()),
        command: Some("python3 eval.py".to_owned()),
        gpu_memory_bytes: Some(1 << 30),
        sm_util_pct: Some(1.0),
        start_ticks: Some(99),
    });
    let mut view = FleetView::new(fleet);
    let grid = draw(&view);
    assert!(grid.contains("LOST") && grid.contains("Connection refused"), "{grid}");
    assert_eq!(view.selected_process(), None, "the grid selects nodes, not processes");
    // The lost node sorts first; beta is the second.
    view.move_selection(1);
    view.set_drilled(true);
    let order = process_order(&view.selected_node().unwrap().processes);
    assert_eq!(order.len(), 2);
    assert_eq!(view.selected_process().map(|p| p.pid), Some(order[0].1));
    view.move_selection(5);
    assert_eq!((view.process, view.selected_process().map(|p| p.pid)), (1, Some(order[1].1)), "kept in range");
    view.set_drilled(false);
    assert_eq!(view.selected, 1, "Up and Down moved processes, not nodes, while drilled");
    view.set_drilled(true);
    assert_eq!(view.process, 0, "a node opened again starts at its first process");
}
