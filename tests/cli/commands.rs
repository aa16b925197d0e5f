//! The real binary on the embedded demo, synthetic machines and recordings: one-shot outputs, doctor, report,
//! recording and replay, and the messages and exit codes of bad input.
#![allow(
    clippy::expect_used,
    clippy::disallowed_methods,
    reason = "tests run the binary and may panic on broken fixtures"
)]

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{BIN, gpusight, json, stderr, stdout, temp_dir};

#[test]
fn the_demo_once_prints_the_h200_and_its_processes() {
    let output = gpusight(&["--demo", "--once"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(text.contains("H200") && text.contains("driver 580.159.04"), "{text}");
    assert!(text.contains("ipykernel_launcher"), "the idle holder is listed at the end: {text}");
    assert!(text.contains("Host: CPU"), "{text}");
}

#[test]
fn once_json_is_versioned_and_at_picks_a_frame() {
    let last = json(&gpusight(&["--demo", "--once", "--json"]));
    assert_eq!(last["schema"], "gpusight.snapshot/2");
    assert_eq!(last["machine"]["gpus"][0]["name"], "NVIDIA H200");
    let early = json(&gpusight(&["--demo", "--once", "--json", "--at", "60"]));
    let first = json(&gpusight(&["--demo", "--once", "--json", "--at", "0"]));
    let (t0, t60) = (first["tick"]["at_ms"].as_u64().expect("ms"), early["tick"]["at_ms"].as_u64().expect("ms"));
    assert!((59_000..=61_000).contains(&(t60 - t0)), "{t0} {t60}");
    // In the compute phase of the demo the GPU is busy and at its power cap.
    assert!(early["tick"]["gpus"][0]["util_pct"].as_u64().expect("util") > 90);
    assert_eq!(early["tick"]["gpus"][0]["throttle_bits"], 4);
}

#[test]
fn doctor_on_the_demo_names_the_input_bound_pid_and_the_idle_holder() {
    let output = gpusight(&["doctor", "--demo", "--json"]);
    assert_eq!(output.status.code(), Some(1), "warnings exit 1: {}", stderr(&output));
    let report = json(&output);
    assert_eq!(report["schema"], "gpusight.doctor/2");
    // The demo's phases: the idle holder is active at the end; the earlier phases are listed as cleared.
    let findings: Vec<(String, Option<u64>)> = report["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .chain(report["cleared"].as_array().expect("cleared"))
        .map(|f| (f["rule"].as_str().unwrap_or_default().to_owned(), f["pid"].as_u64()))
        .collect();
    assert!(findings.contains(&("input-bound".to_owned(), Some(999))), "{findings:?}");
    assert!(findings.contains(&("idle-holder".to_owned(), Some(533))), "{findings:?}");
    assert!(findings.contains(&("cpu-bound-input".to_owned(), Some(1878))), "{findings:?}");
    let text = stdout(&gpusight(&["doctor", "--demo", "--no-color"]));
    assert!(text.contains("input-bound") && text.contains("remedy"), "{text}");
}

#[test]
fn doctor_exits_3_when_it_cannot_check() {
    let no_driver = Command::new(BIN)
        .args(["doctor", "--duration", "1s"])
        .env("GPUSIGHT_NVML_LIB", "/nonexistent/libnvidia-ml.so.1")
        .output()
        .expect("run");
    assert_eq!(no_driver.status.code(), Some(3), "{}", stderr(&no_driver));
    assert_eq!(gpusight(&["doctor", "--duration", "soon"]).status.code(), Some(3));
    assert_eq!(gpusight(&["doctor", "--frobnicate"]).status.code(), Some(3));
    assert_eq!(gpusight(&["doctor", "--replay", "/nonexistent/run.jsonl"]).status.code(), Some(3));
    assert_eq!(gpusight(&["doctor", "--synthetic", "warp-drive"]).status.code(), Some(3));
    // Every other command says the same for the same cause.
    assert_eq!(gpusight(&["--frobnicate"]).status.code(), Some(3));
}

#[test]
fn doctor_has_no_escape_sequences_in_a_pipe_unless_asked() {
    let piped = stdout(&gpusight(&["doctor", "--demo"]));
    assert!(!piped.contains('\x1b'), "{piped}");
    let forced = stdout(&gpusight(&["doctor", "--demo", "--color", "always"]));
    assert!(forced.contains("\x1b[1;33mWARNING"), "{forced}");
}

#[test]
fn doctor_on_the_new_scenarios_and_a_leak_with_the_default_duration() {
    let leak = gpusight(&["doctor", "--synthetic", "leak"]);
    let text = stdout(&leak);
    assert!(text.contains("[vram-growing]") && !text.contains("No problems found"), "{text}");
    assert_eq!(leak.status.code(), Some(1));
    for scenario in ["hw-blip", "ecc-corrected"] {
        let output = gpusight(&["doctor", "--synthetic", scenario]);
        assert_eq!(output.status.code(), Some(0), "{scenario}: {}", stdout(&output));
    }
    let writer = gpusight(&["doctor", "--synthetic", "writer", "--json"]);
    assert_ne!(writer.status.code(), Some(2));
    assert!(!stdout(&writer).contains("\"input-bound\""), "{}", stdout(&writer));
    let holder = stdout(&gpusight(&["doctor", "--synthetic", "idle-holder"]));
    assert!(
        holder.contains("Not judged:") && holder.contains("idle-holder, checkpoint-write (needs 5 min"),
        "{holder}"
    );
}

#[test]
fn doctor_exit_codes_follow_the_worst_finding() {
    assert_eq!(gpusight(&["doctor", "--synthetic", "idle"]).status.code(), Some(0));
    assert_eq!(gpusight(&["doctor", "--synthetic", "compute", "--duration", "60s"]).status.code(), Some(0));
    assert_eq!(gpusight(&["doctor", "--synthetic", "input-bound", "--duration", "60s"]).status.code(), Some(1));
    assert_eq!(gpusight(&["doctor", "--synthetic", "gpu-lost", "--duration", "60s"]).status.code(), Some(2));
}

/// A watch shorter than every rule's window could judge none of them: 3 ("unknown"), never 0, saying which
/// `--duration` would do; `--instant` asks only for the rules that need no window.
#[test]
fn doctor_too_short_to_judge_exits_3_and_instant_exits_0() {
    let short = gpusight(&["doctor", "--synthetic", "compute", "--duration", "5s", "--no-color"]);
    assert_eq!(short.status.code(), Some(3), "{}", stderr(&short));
    let text = stdout(&short);
    assert!(text.contains("Too short to judge: watched 5 s") && text.contains("--duration 30s or longer"), "{text}");
    let doc = json(&gpusight(&["doctor", "--synthetic", "compute", "--duration", "5s", "--json"]));
    assert_eq!((doc["verdict"].as_str(), doc["exit_code"].as_i64()), (Some("unknown"), Some(3)), "{doc}");
    assert_eq!(doc["too_short"]["duration"], "30s");
    let instant = gpusight(&["doctor", "--synthetic", "compute", "--duration", "5s", "--instant", "--no-color"]);
    assert_eq!(instant.status.code(), Some(0), "{}", stdout(&instant));
    assert!(stdout(&instant).contains("No problems found by the 6 rules that need no window (--instant"));
    // doctor --help says what 3 means for it, and what --instant does.
    let help = stdout(&gpusight(&["doctor", "--help"]));
    assert!(help.contains("--instant") && help.contains("doctor: the watch was too short to judge"), "{help}");
}

#[test]
fn report_on_the_demo_is_markdown_and_json() {
    let output = gpusight(&["report", "--demo"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(text.starts_with('#') && text.contains("NVIDIA H200") && text.contains("580.159.04"), "{text}");
    let report = json(&gpusight(&["report", "--demo", "--json"]));
    assert_eq!(report["schema"], "gpusight.report/2");
}

#[test]
fn synthetic_scale_lists_every_process() {
    let document = json(&gpusight(&["--synthetic", "scale:8x1000", "--once", "--json"]));
    assert_eq!(document["machine"]["gpus"].as_array().expect("gpus").len(), 8);
    assert_eq!(document["tick"]["gpu_processes"].as_array().expect("processes").len(), 1008);
}

#[test]
fn without_a_driver_it_exits_3_naming_the_library_and_suggesting_the_demo() {
    let output = Command::new(BIN)
        .arg("--once")
        .env("GPUSIGHT_NVML_LIB", "/nonexistent/libnvidia-ml.so.1")
        .output()
        .expect("run");
    assert_eq!(output.status.code(), Some(3));
    let message = stderr(&output);
    assert_eq!(message.trim().lines().count(), 1, "{message}");
    assert!(message.contains("libnvidia-ml.so.1") && message.contains("--demo"), "{message}");
}

#[test]
fn bad_flags_paths_and_files_get_a_message_and_a_nonzero_exit() {
    let bad_flag = gpusight(&["--frobnicate"]);
    assert_eq!(bad_flag.status.code(), Some(3));
    let fast = gpusight(&["--demo", "--once", "--interval", "0.01"]);
    assert_eq!(fast.status.code(), Some(3));
    assert!(stderr(&fast).contains("0.1 to 60"), "{}", stderr(&fast));
    let missing = gpusight(&["--replay", "/nonexistent/run.jsonl", "--once"]);
    assert_eq!(missing.status.code(), Some(3));
    assert!(stderr(&missing).contains("/nonexistent/run.jsonl"), "{}", stderr(&missing));
    let scenario = gpusight(&["--synthetic", "warp-drive", "--once"]);
    assert_eq!(scenario.status.code(), Some(3));
    assert!(stderr(&scenario).contains("unknown synthetic scenario"), "{}", stderr(&scenario));
    let dir = temp_dir();
    let config = dir.path().join("bad.toml");
    // An unknown key is a warning naming it (the command goes on); a bad value is an error naming it.
    std::fs::write(&config, "[thresholds]\nwindw_s = 3\n").expect("write");
    let unknown_key = gpusight(&["--demo", "--once", "--config", config.to_str().expect("utf-8")]);
    assert_eq!(unknown_key.status.code(), Some(0));
    assert!(stderr(&unknown_key).contains("unknown key thresholds.windw_s: ignored"), "{}", stderr(&unknown_key));
    std::fs::write(&config, "[thresholds]\nwindow_s = -3\n").expect("write");
    let bad_config = gpusight(&["--demo", "--once", "--config", config.to_str().expect("utf-8")]);
    assert_eq!(bad_config.status.code(), Some(3));
    assert!(stderr(&bad_config).contains("window_s"), "{}", stderr(&bad_config));
    let corrupt = dir.path().join("corrupt.jsonl");
    let header = r#"{"format":"gpusight-recording","schema":1,"writer":"t","machine":{"hostname":"h","source":"live","source_label":"h","driver_version":null,"cuda_driver_version":null,"nvml_version":null,"open_kernel_module":null,"kernel_release":null,"n_cpus":1,"n_numa_nodes":1,"mem_total_bytes":null,"boot_time_ms":null,"gpus":[]}}"#;
    std::fs::write(&corrupt, format!("{header}\n{{\"at_ms\": 1}}\nnot json\n{{\"at_ms\": 3}}\n")).expect("write");
    let output = gpusight(&["--replay", corrupt.to_str().expect("utf-8"), "--once"]);
    assert_eq!(output.status.code(), Some(3));
    assert!(stderr(&output).contains("corrupt.jsonl, line 3"), "{}", stderr(&output));
}

/// Starts a headless recording of a synthetic machine at 10 Hz and waits (polling, with a deadline) until it
/// has written `lines` lines.
fn start_recording(path: &Path, lines: usize) -> std::process::Child {
    let child = Command::new(BIN)
        .args(["--synthetic", "mixed:2", "--interval", "0.1", "--record", path.to_str().expect("utf-8"), "--headless"])
        .stderr(Stdio::null())
        .spawn()
        .expect("start recording");
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::fs::read_to_string(path).map_or(0, |t| t.lines().count()) < lines {
        assert!(Instant::now() < deadline, "the recording never reached {lines} lines");
        std::thread::yield_now();
    }
    child
}

#[test]
fn a_recording_killed_with_sigkill_replays_to_its_last_whole_frame() {
    let dir = temp_dir();
    let path = dir.path().join("killed.jsonl");
    let mut child = start_recording(&path, 6);
    child.kill().expect("SIGKILL");
    child.wait().expect("wait");
    let output = gpusight(&["--replay", path.to_str().expect("utf-8"), "--once", "--json"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(json(&output)["machine"]["gpus"].as_array().expect("gpus").len(), 2);
}

#[test]
fn sigterm_ends_a_headless_recording_cleanly_and_it_is_never_overwritten() {
    let dir = temp_dir();
    let path = dir.path().join("clean.jsonl");
    let child = start_recording(&path, 4);
    rustix::process::kill_process(rustix::process::Pid::from_child(&child), rustix::process::Signal::TERM)
        .expect("SIGTERM");
    let output = child.wait_with_output().expect("wait");
    assert_eq!(output.status.code(), Some(0));
    let text = std::fs::read_to_string(&path).expect("read");
    assert!(text.ends_with('\n'), "every line is whole after a clean stop");
    let again = gpusight(&["--synthetic", "idle", "--record", path.to_str().expect("utf-8"), "--headless"]);
    assert_eq!(again.status.code(), Some(3));
    assert!(stderr(&again).contains("already exists") && stderr(&again).contains("--overwrite"), "{}", stderr(&again));
    assert_eq!(std::fs::read_to_string(&path).expect("read"), text, "the file is untouched");
}

/// Headless recording killed by a fatal signal inside a driver call: the process dies of SIGSEGV with one message
/// naming the call, and every line written before it replays.
#[test]
fn a_crash_during_a_headless_recording_keeps_every_line() {
    use std::os::unix::process::ExitStatusExt;
    let dir = temp_dir();
    let path = dir.path().join("crash.jsonl");
    let out = std::process::Command::new(BIN)
        .args(["--synthetic", "compute:2", "--interval", "0.1", "--headless", "--record"])
        .arg(&path)
        .env("GPUSIGHT_SYNTHETIC_CRASH_AFTER", "12")
        .output()
        .expect("run");
    assert_eq!(out.status.signal(), Some(11), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("killed by SIGSEGV") && stderr.contains("GPM"), "{stderr}");
    let recording = gpusight::source::replay::Recording::open(&path).expect("the recording reads");
    assert!(!recording.truncated_tail);
    assert_eq!(recording.ticks.len(), 12);
}

#[test]
fn only_visible_reads_cuda_visible_devices() {
    let run = |value: &str| {
        Command::new(BIN)
            .args(["--synthetic", "mixed:8", "--once", "--only-visible"])
            .env("CUDA_VISIBLE_DEVICES", value)
            .env("XDG_CONFIG_HOME", "/nonexistent-gpusight-test-config")
            .output()
            .expect("run gpusight")
    };
    let output = run("1");
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(text.contains("3001") && !text.contains("2001"), "only GPU 1's process: {text}");
    let output = run("9");
    assert_ne!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(stderr(&output).contains("names no GPU"), "{}", stderr(&output));
}

/// README's exit-status table is the one `--help` and the man page print, from `src/exit.rs`.
#[test]
fn the_readme_exit_table_is_the_generated_one() {
    use gpusight::exit::{README_BEGIN, README_END, markdown};
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).expect("README");
    let start = readme.find(README_BEGIN).expect("the begin marker") + README_BEGIN.len() + 1;
    let end = readme.find(README_END).expect("the end marker");
    assert_eq!(&readme[start..end], markdown(), "README.md's exit table differs; put this between the markers");
}

/// The same cause gives the same status in every command: no driver, a bad config file and a bad command line
/// are each 3 ("could not run"), doctor included, as the one table says.
#[test]
fn every_command_exits_with_the_tables_status_for_each_cause() {
    use gpusight::exit::CANNOT_RUN;
    let dir = crate::common::temp_dir();
    let bad_config = dir.path().join("config.toml");
    std::fs::write(&bad_config, "[general]\ninterval_s = -1\n").expect("write");
    let bad_config = bad_config.to_str().expect("utf-8");
    let commands: [&[&str]; 5] =
        [&["--once"], &["--once", "--json"], &["report", "--duration", "1s"], &["export"], &["doctor"]];
    for command in commands {
        let no_driver = crate::common::command(command)
            .env("GPUSIGHT_NVML_LIB", "/nonexistent/libnvidia-ml.so.1")
            .output()
            .expect("run");
        assert_eq!(no_driver.status.code(), Some(CANNOT_RUN), "{command:?} no driver");
        let config = crate::common::command(command).args(["--demo", "--config", bad_config]).output().expect("run");
        assert_eq!(config.status.code(), Some(CANNOT_RUN), "{command:?} bad config");
        let usage = crate::common::command(command).arg("--frobnicate").output().expect("run");
        assert_eq!(usage.status.code(), Some(CANNOT_RUN), "{command:?} bad usage");
    }
}

#[test]
fn doctor_report_and_once_say_where_the_gpu_time_went() {
    let args = ["--synthetic", "input-bound", "--duration", "40s"];
    let output = gpusight(&[&["doctor"], &args[..]].concat());
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let text = stdout(&output);
    let section = text.find("Where the GPU time went:\n").expect("the section");
    assert!(
        section > text.find("[input-bound]").expect("the finding") && section < text.find("Not judged:").expect("x")
    );
    // A pipe gets ASCII bars; each cause a row with its share, seconds and energy.
    assert!(
        text.contains("  GPU 0 PID 2001 (python train.py --data /mnt/nfs/imagenet --workers 0)\n    [##==="),
        "{text}"
    );
    // The step thread reads in D (storage) and decodes what it read on a CPU the rest of its time.
    let row = text.lines().find(|l| l.starts_with("    = input: reading storage     64 %  26 s  ")).expect("the row");
    assert!(row.ends_with(" kJ"), "{text}");
    let doc = json(&gpusight(&[&["doctor", "--json"], &args[..]].concat()));
    let account = &doc["accounts"][0];
    assert_eq!((account["gpu_index"].as_u64(), account["pid"].as_u64()), (Some(0), Some(2001)));
    assert_eq!(account["causes"][1]["cause"], "input-bound");
    let shares: f64 = account["causes"].as_array().expect("causes").iter().filter_map(|c| c["share"].as_f64()).sum();
    assert!((shares - 1.0).abs() < 1e-6, "{account}");
    let report = stdout(&gpusight(&[&["report"], &args[..]].concat()));
    assert!(report.contains("## Where the GPU time went") && report.contains("| input: reading storage | 64 % |"));
    let once = stdout(&gpusight(&["--synthetic", "input-bound", "--once", "--at", "40"]));
    assert!(once.contains("Account GPU 0 PID 2001 over 30 s: busy 4 %, input: reading storage 64 %"), "{once}");
}
