//! The monitor in a pseudo-terminal on the live NVML path, on the fake NVML (`fake-nvml/`): it draws every GPU
//! of an 8-GPU board (each MIG slice under its GPU) and of a 72-GPU rack and quits with `q`.
#![allow(clippy::expect_used, reason = "test helpers panic on a broken fixture or a gpusight that will not start")]

use crate::common::fake_nvml::env_for;
use crate::common::pty::Session;

fn monitor_on(scenario: &str, gpu_name: &str, cols: u16, rows: u16) -> String {
    let env = env_for(scenario);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let mut session = Session::gpusight(&[], &env, cols, rows);
    let screen = session.wait_for(gpu_name);
    assert!(!screen.contains("SYNTHETIC") && !screen.contains("REPLAY"), "a live source: {screen}");
    let screen = session.wait_for("Processes");
    session.send("q");
    assert_eq!(session.exit_code(), 0);
    screen
}

#[test]
fn the_monitor_draws_an_eight_gpu_board() {
    let screen = monitor_on("hgx8-mig", "1g.10gb/GI7", 160, 50);
    assert!(screen.contains("3g.40gb/GI1") && screen.contains("4g.40gb/GI2"), "each slice of GPU 7: {screen}");
}

#[test]
fn a_short_gpu_panel_keeps_a_line_of_its_mig_slices() {
    // At 200x60 eight GPUs get panels of six rows, which the readings already fill: a MIG GPU gives up its NVLink
    // line for its slices, packed, led by how many there are.
    let screen = monitor_on("hgx8-mig", "MIG 7:", 200, 60);
    assert!(screen.contains("MIG 7:  1g.10gb/GI7"), "GPU 6's seven slices: {screen}");
    assert!(screen.contains("MIG 2:  3g.40gb/GI1"), "GPU 7's two slices: {screen}");
    assert!(screen.contains("NVLink 18/18 up"), "the other GPUs keep their NVLink line: {screen}");
}

#[test]
fn the_monitor_draws_a_seventy_two_gpu_rack() {
    monitor_on("nvl72", "GB200", 200, 60);
}

#[test]
fn a_gpu_panel_shows_its_nvlink_links() {
    let dir = crate::common::temp_dir();
    let scenario = crate::common::fake_nvml::scenario_file(
        dir.path(),
        "nvlink",
        &crate::common::fake_nvml::h200s(2, "[gpu.nvlink]\ndown = [5]\nerrors_on = [2]\ncrc_per_s = 100.0\n"),
    );
    let env = env_for(&scenario);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let mut session = Session::gpusight(&[], &env, 200, 60);
    let screen = session.wait_for("NVLink 17/18 up");
    assert!(screen.contains("CRC "), "{screen}");
    session.send("q");
    assert_eq!(session.exit_code(), 0);
}

#[test]
fn the_nvlink_screen_shows_each_link_on_the_live_path() {
    let env = env_for("hgx8-mig");
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let mut session = Session::gpusight(&[], &env, 80, 24);
    session.wait_for("Processes");
    session.send("n");
    let screen = session.wait_for("NVLink GPU 0");
    assert!(screen.contains("18/18 up"), "{screen}");
    let screen = session.wait_for("L17");
    assert!(screen.contains("L0     up   v4   26.6GB/s"), "{screen}");
    session.send("q");
    session.wait_for("Processes");
    session.send("q");
    assert_eq!(session.exit_code(), 0);
}
