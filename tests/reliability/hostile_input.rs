//! The adversarial hardening pass: each defect it found, through the binary where that is where it showed. The
//! unit-level ones live next to their code; docs/reliability.md ("Hardening") lists every one with its test.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::disallowed_methods, reason = "tests run the binary")]

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::sync::Arc;
use std::time::Duration;

use gpusight::sample::{EventOrigin, GpuEvent, GpuEventKind, MachineInfo};
use gpusight::source::Source;
use gpusight::source::replay::Recorder;

use crate::common::{command, gpusight, next_snapshot, replay_app, stderr, stdout, synthetic, temp_dir};

/// What another user can put in argv, a user name, a GPU name or a host name: an OSC 52 clipboard write, a screen
/// clear, a cursor move, a C1 CSI and a newline that would start a fake row.
const EVIL: &str = "\x1b]52;c;cm0gLXJmIH4K\x07\x1b[2J\x1b[H\u{9b}31m\nCRITICAL fake";

/// A recording of an input-bound synthetic machine where every string from outside carries [`EVIL`].
fn evil_recording(dir: &Path) -> PathBuf {
    let mut source = synthetic("input-bound:2");
    let mut machine: MachineInfo = (*source.machine()).clone();
    machine.hostname = format!("node{EVIL}");
    machine.driver_version = Some(format!("580{EVIL}"));
    for gpu in &mut machine.gpus {
        gpu.name = format!("H200{EVIL}");
    }
    let path = dir.join("evil.jsonl");
    let mut recorder = Recorder::create(&path, &Arc::new(machine), false).expect("create");
    for _ in 0..40 {
        let mut tick = source.next_tick().expect("tick").expect("some");
        for process in &mut tick.processes {
            process.cmdline = format!("python train.py {EVIL}");
            process.name = format!("python{EVIL}");
            process.user = Some(format!("mallory{EVIL}"));
        }
        tick.events.push(GpuEvent {
            at_ms: tick.at_ms,
            gpu_index: Some(0),
            kind: GpuEventKind::Xid { code: 79, pid: None, process_name: Some(format!("python{EVIL}")) },
            origin: EventOrigin::KernelLog,
            message: format!("NVRM: Xid 79 {EVIL}"),
        });
        recorder.write(&tick).expect("write");
    }
    path
}

fn assert_no_control(what: &str, text: &str) {
    let bad: Vec<char> = text.chars().filter(|c| c.is_control() && *c != '\n').collect();
    assert!(bad.is_empty(), "{what}: control characters {bad:?} reach the terminal:\n{text}");
}

#[test]
fn no_escape_sequence_from_outside_reaches_any_text_output() {
    let dir = temp_dir();
    let path = evil_recording(dir.path());
    let file = path.to_str().expect("utf-8");
    for args in [
        vec!["--replay", file, "--once"],
        vec!["doctor", "--replay", file],
        vec!["doctor", "--replay", file, "--no-color"],
        vec!["report", "--replay", file],
    ] {
        let output = gpusight(&args);
        let mut text = stdout(&output);
        // doctor's own colours on its severities are the only escapes allowed.
        for ours in ["\x1b[1;31m", "\x1b[1;33m", "\x1b[1;36m", "\x1b[0m"] {
            text = text.replace(ours, "");
        }
        assert_no_control(&args.join(" "), &text);
        assert!(text.contains("^[]52;c;"), "{args:?}: the sequence is shown, made visible:\n{text}");
        assert!(!text.lines().any(|l| l.starts_with("CRITICAL fake")), "{args:?}: a newline made a fake row:\n{text}");
    }
    // JSON stays exact: the bytes of the command line come back as they were.
    let output = gpusight(&["--replay", file, "--once", "--json"]);
    let doc: serde_json::Value = serde_json::from_slice(&output.stdout).expect("json");
    let first = &doc["tick"]["processes"][0]["cmdline"];
    assert_eq!(first.as_str(), Some(format!("python train.py {EVIL}").as_str()));
}

#[test]
fn the_monitor_never_puts_a_control_character_in_a_cell() {
    let dir = temp_dir();
    let recording = gpusight::source::replay::Recording::open(&evil_recording(dir.path())).expect("open");
    let options = gpusight::app::AppOptions { history_capacity: 120, ..gpusight::app::AppOptions::default() };
    let mut app = replay_app(options, recording);
    app.advance_playback(Duration::from_mins(1));
    for (width, height) in [(200, 60), (80, 24)] {
        let mut terminal = ratatui::Terminal::new(ratatui::backend::TestBackend::new(width, height)).expect("terminal");
        terminal.draw(|frame| gpusight::ui::draw_view(frame, &app)).expect("draw");
        let buffer = terminal.backend().buffer();
        for cell in &buffer.content {
            assert!(!cell.symbol().contains(char::is_control), "cell {:?}", cell.symbol());
        }
    }
}

/// A stand-in Prometheus on 127.0.0.1 that answers every query with one `up` sample whose labels carry
/// [`EVIL`], and remembers the Authorization headers it saw.
fn fake_prometheus(requests: usize) -> (String, std::thread::JoinHandle<Vec<String>>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    let handle = std::thread::spawn(move || {
        let mut seen = Vec::new();
        for _ in 0..requests {
            let Ok((mut stream, _)) = listener.accept() else { break };
            stream.set_read_timeout(Some(Duration::from_secs(5))).expect("timeout");
            let mut request = Vec::new();
            let mut buf = [0u8; 4096];
            while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                match stream.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => request.extend_from_slice(&buf[..n]),
                }
            }
            let text = String::from_utf8_lossy(&request).into_owned();
            seen.extend(
                text.lines().filter(|l| l.to_ascii_lowercase().starts_with("authorization")).map(str::to_owned),
            );
            let labels = serde_json::json!({"instance": format!("node-a{EVIL}:9400"), "job": "gpusight",
                "Hostname": format!("node-a{EVIL}"), "gpu": "0", "modelName": format!("H200{EVIL}")});
            let body = serde_json::json!({"status": "success", "data": {"resultType": "vector",
                "result": [{"metric": labels, "value": [1_700_000_000.0, "1"]}]}})
            .to_string();
            let response = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = stream.write_all(response.as_bytes());
        }
        seen
    });
    (format!("http://{addr}"), handle)
}

#[test]
fn fleet_once_shows_labels_made_visible_and_never_the_password() {
    let queries = gpusight::fleet::query::QUERIES.len();
    let (url, server) = fake_prometheus(queries * 2);
    let with_password = url.replace("http://", "http://admin:s3cr3t-pw@");
    let text = gpusight(&["--prometheus", &with_password, "--once"]);
    assert_eq!(text.status.code(), Some(0), "{}", stderr(&text));
    let json = gpusight(&["--prometheus", &with_password, "--once", "--json"]);
    let seen = server.join().expect("server");
    assert!(seen.iter().all(|h| h.contains("Basic")), "the password is still sent: {seen:?}");
    let shown = stdout(&text);
    assert_no_control("fleet --once", &shown);
    assert!(shown.contains("node-a^[]52"), "{shown}");
    for output in [&text, &json] {
        let all = stdout(output) + &stderr(output);
        assert!(!all.contains("s3cr3t-pw"), "the password is printed:\n{all}");
    }
    assert!(stdout(&json).contains("admin:***@"), "{}", stdout(&json));
    // And in an error: nothing listens on port 1.
    let error = gpusight(&["--prometheus", "http://admin:s3cr3t-pw@127.0.0.1:1", "--once"]);
    assert_eq!(error.status.code(), Some(3));
    assert!(!stderr(&error).contains("s3cr3t-pw") && stderr(&error).contains("admin:***@"), "{}", stderr(&error));
}

#[test]
fn https_prometheus_is_refused_plainly() {
    let output = gpusight(&["--prometheus", "https://user:pw@prometheus.example:9090", "--once"]);
    assert_eq!(output.status.code(), Some(3));
    let err = stderr(&output);
    assert!(err.contains("https is not supported") && err.contains("http://"), "{err}");
    assert!(!err.contains("pw@"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
}

#[test]
fn a_closed_pipe_ends_quietly() {
    let mut child = command(&["--synthetic", "scale:8x1000", "--once", "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    // The reader goes away before the first byte is written, as `| head -1` does after its line.
    drop(child.stdout.take());
    let output = child.wait_with_output().expect("wait");
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(0), "{err}");
    assert!(!err.contains("panicked") && err.is_empty(), "{err}");
}

#[test]
fn a_full_disk_is_one_line() {
    let full = std::fs::OpenOptions::new().write(true).open("/dev/full").expect("/dev/full");
    let output = command(&["--demo", "--once"]).stdout(full).output().expect("run");
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(3), "{err}");
    assert!(err.contains("cannot write to standard output") && !err.contains("panicked"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
}

/// The commands that print to stdout and end, one of each kind of output.
const PRINTING: [&[&str]; 7] = [
    &["--demo", "--status"],
    &["--demo", "--status", "--json"],
    &["--help"],
    &["--version"],
    &["completions", "bash"],
    &["config", "check", "--config", "/dev/null"],
    &["--demo", "--once"],
];

#[test]
fn every_printing_command_ends_quietly_when_its_reader_is_gone() {
    for args in PRINTING {
        // The reading end is closed before the command starts: its first write gets EPIPE, every time.
        let (reader, writer) = std::io::pipe().expect("pipe");
        drop(reader);
        let output = command(args).stdout(writer).output().expect("run");
        let err = stderr(&output);
        assert_eq!(output.status.code(), Some(0), "{args:?}: {err}");
        assert!(err.is_empty(), "{args:?}: {err}");
    }
}

#[test]
fn every_printing_command_says_a_full_disk_and_fails() {
    for args in PRINTING {
        let full = std::fs::OpenOptions::new().write(true).open("/dev/full").expect("/dev/full");
        let output = command(args).stdout(full).output().expect("run");
        let err = stderr(&output);
        assert_eq!(output.status.code(), Some(3), "{args:?}: {err}");
        assert!(err.contains("cannot write to standard output") && !err.contains("panicked"), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
    }
}

#[test]
fn the_status_line_keeps_tmux_formats_from_outside_inert() {
    let dir = temp_dir();
    let mut source = synthetic("input-bound:1");
    let mut machine: MachineInfo = (*source.machine()).clone();
    machine.gpus[0].name = format!("H200 #[fg=red]#{{pane_current_path}}#(reboot){EVIL}");
    let path = dir.path().join("tmux.jsonl");
    let mut recorder = Recorder::create(&path, &Arc::new(machine), false).expect("create");
    recorder.write(&source.next_tick().expect("tick").expect("some")).expect("write");
    drop(recorder);
    let file = path.to_str().expect("utf-8");
    // The template's own `#[...]` is the user's styling and stays; the GPU's name is made inert.
    let output = gpusight(&["--replay", file, "--status", "--status-format", "#[bold]{name}#[default] {util}%"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stdout(&output);
    assert_no_control("--status", &text);
    let name = text.strip_prefix("#[bold]").and_then(|t| t.split("#[default]").next()).expect("the name");
    assert!(name.starts_with("H200 ##[fg=red]##{pane_current_path}##(reboot)"), "{text}");
    let single_hash = name.split("##").any(|part| part.contains('#'));
    assert!(!single_hash, "a single # tmux would read: {text}");
}

#[test]
fn replaying_dev_zero_is_refused_naming_the_line() {
    let output = gpusight(&["--replay", "/dev/zero", "--once"]);
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(3), "{err}");
    assert!(err.contains("/dev/zero, line 1") && err.contains("without a line break"), "{err}");
}

#[test]
fn at_is_bounded() {
    let output = gpusight(&["--synthetic", "idle", "--at", "1e9", "--once"]);
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(3), "{err}");
    assert!(err.contains("--at 1000000000 is past what a synthetic machine is run to"), "{err}");
    // The bound is on the work (samples times processes), so a huge machine is refused at once, saying how far
    // it can go, instead of running for hours.
    let started = std::time::Instant::now();
    let output = gpusight(&["--synthetic", "scale:64x100000", "--at", "99999", "--once"]);
    let err = stderr(&output);
    assert!(started.elapsed() < std::time::Duration::from_secs(10), "{err}");
    assert_eq!(output.status.code(), Some(3), "{err}");
    assert!(err.contains("process-samples") && err.contains("or fewer processes"), "{err}");
    let largest: u64 = err.split("give --at ").nth(1).and_then(|t| t.split(' ').next()).unwrap().parse().unwrap();
    assert!(largest < 100, "{err}");
    // On a recording, past the end is the last frame.
    let last: serde_json::Value = serde_json::from_slice(&gpusight(&["--demo", "--once", "--json"]).stdout).unwrap();
    for at in ["inf", "1e17"] {
        let output = gpusight(&["--demo", "--once", "--json", "--at", at]);
        let frame: serde_json::Value = serde_json::from_slice(&output.stdout).expect("json");
        assert_eq!(frame["tick"]["at_ms"], last["tick"]["at_ms"], "--at {at}");
    }
}

fn with_config(text: &str, args: &[&str]) -> Output {
    let dir = temp_dir();
    let path = dir.path().join("config.toml");
    std::fs::write(&path, text).expect("write");
    let mut full = vec!["--config", path.to_str().expect("utf-8")];
    full.extend_from_slice(args);
    gpusight(&full)
}

/// A keymap with no way out is named by every command. The monitor and the fleet view, which use it, refuse it
/// (`config.rs`'s tests and `config check`); the commands that draw nothing warn and go on with the default keys,
/// so a cosmetic mistake never stops a daemon or blanks `--status`.
#[test]
fn a_keymap_with_no_way_out_is_named_by_every_command() {
    for args in
        [&["--demo", "--once"][..], &["doctor", "--demo"], &["report", "--demo", "--json"], &["--demo", "--status"]]
    {
        let output = with_config("[keys]\nquit = []\n", args);
        let err = stderr(&output);
        assert!(err.contains("quit = []") && err.contains("no key to quit"), "{args:?}: {err}");
        assert!(err.contains("[keys] is ignored here"), "{args:?}: {err}");
        assert!(!output.stdout.is_empty(), "{args:?}: the command still ran");
    }
    let output = with_config("[keys]\nexplain = [\"z\"]\nquit = [\"z\"]\n", &["--demo", "--once"]);
    assert!(stderr(&output).contains("'z' is given to both explain and quit"), "{}", stderr(&output));
    let output = with_config("[keys]\nquit = []\n", &["config", "check"]);
    assert_eq!(output.status.code(), Some(3), "{}", stderr(&output));
    assert!(stderr(&output).contains("no key to quit"), "{}", stderr(&output));
}

#[test]
fn config_values_are_range_checked() {
    for (text, says) in [
        ("[thresholds]\nenter_share = nan\n", "[thresholds] enter_share = nan: NaN is not allowed for enter_share"),
        ("[thresholds]\nenter_share = 1.5\n", "is a share"),
        ("[thresholds]\nstarved_util_pct = -3.0\n", "must not be negative"),
        ("[thresholds]\nwindow_s = 0\n", "is a window"),
        ("[thresholds]\nexit_share = 0.9\n", "exit_share = 0.9 is above enter_share"),
        ("[general]\nhealth_period_s = inf\n", "[general] health_period_s = inf: infinity is not allowed"),
    ] {
        let output = with_config(text, &["--demo", "--once"]);
        let err = stderr(&output);
        assert_eq!(output.status.code(), Some(3), "{text}: {err}");
        assert!(err.contains(says), "{text}: {err}");
    }
}

#[test]
fn a_dangling_symlink_at_the_default_config_path_is_a_warning() {
    let home = temp_dir();
    let dir = home.path().join("gpusight");
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::os::unix::fs::symlink("/nonexistent/dotfiles/gpusight.toml", dir.join("config.toml")).expect("symlink");
    let output = command(&["--demo", "--once"]).env("XDG_CONFIG_HOME", home.path()).output().expect("run");
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(0), "{err}");
    assert!(err.contains("is a symlink to /nonexistent/dotfiles/gpusight.toml, which does not exist"), "{err}");
}

#[test]
fn flags_that_would_be_ignored_are_said() {
    for (args, code, says) in [
        (&["--synthetic", "idle", "--record", "x.jsonl", "--once"][..], 3, "--record with --once records nothing"),
        (&["--demo", "--record", "x.jsonl", "--headless"][..], 3, "recorded already"),
        (&["--demo", "--json"][..], 3, "add --once"),
        (&["--demo", "--status", "--at", "5"][..], 3, "--status and --headless read from the start"),
        (&["--demo", "--prometheus", "http://127.0.0.1:1"][..], 3, "do not apply"),
        (&["--demo", "--once", "--only", "99"][..], 3, "there is no GPU 99; the GPUs are 0"),
    ] {
        let output = gpusight(args);
        let err = stderr(&output);
        assert_eq!(output.status.code(), Some(code), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(!Path::new("x.jsonl").exists());
    }
    for (args, says) in [
        (&["--demo", "--once", "--theme", "light"][..], "--theme has no effect"),
        (&["doctor", "--demo", "--duration", "1m"][..], "--duration has no effect on a recording"),
    ] {
        let output = gpusight(args);
        assert!(output.status.code() != Some(3) && stderr(&output).contains(says), "{args:?}: {}", stderr(&output));
    }
}

#[test]
fn negative_numbers_get_a_real_message_and_localhost_is_an_address() {
    for (args, says) in [
        (&["--demo", "--once", "--interval", "-1"][..], "interval -1 s is out of range"),
        (&["--demo", "--once", "--at", "-5"][..], "--at -5: give the seconds from the start, 0 or more"),
        (&["--demo", "--once", "--only", "-1"][..], "'-1' is negative"),
        (&["doctor", "--demo", "--duration", "-5s"][..], "'-5s' is negative"),
    ] {
        let output = gpusight(args);
        let err = stderr(&output);
        // A bad argument: 3 ("could not run") for every command, doctor included.
        assert_eq!(output.status.code(), Some(3), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
    let cli =
        <gpusight::cli::Cli as clap::Parser>::try_parse_from(["gpusight", "export", "--listen", "localhost:9400"])
            .expect("localhost:9400 parses");
    let Some(gpusight::cli::Command::Export { listen, .. }) = cli.command else { panic!("export") };
    assert!(listen.ip().is_loopback() && listen.port() == 9400, "{listen}");
    assert!(gpusight::cli::parse_listen("localhost").expect_err("no port").contains("no port"));
}

#[test]
fn term_dumb_gets_the_ascii_colourless_view() {
    let output = command(&["doctor", "--demo"]).env("TERM", "dumb").output().expect("run");
    assert!(!stdout(&output).contains('\x1b'), "{}", stdout(&output));
    let output = command(&["--demo", "--once"]).env("TERM", "dumb").output().expect("run");
    assert!(stdout(&output).is_ascii(), "{}", stdout(&output));
}

#[test]
fn a_byte_order_mark_before_a_recording_is_accepted() {
    let dir = temp_dir();
    let path = evil_recording(dir.path());
    let mut bytes = "\u{feff}".as_bytes().to_vec();
    bytes.extend(std::fs::read(&path).expect("read"));
    std::fs::write(&path, bytes).expect("write");
    let output = gpusight(&["--replay", path.to_str().expect("utf-8"), "--once", "--json"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
}

#[test]
fn a_gzip_recording_cut_short_replays_and_says_where_it_stopped() {
    let dir = temp_dir();
    let plain = std::fs::read(evil_recording(dir.path())).expect("read");
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&plain).expect("gz");
    let whole = gz.finish().expect("finish");
    let path = dir.path().join("cut.jsonl.gz");
    std::fs::write(&path, &whole[..whole.len() * 3 / 4]).expect("write");
    let output = gpusight(&["--replay", path.to_str().expect("utf-8"), "--once", "--json"]);
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(0), "{err}");
    assert!(err.contains("cut.jsonl.gz: the compressed data ends early at line"), "{err}");
}

#[test]
fn absurd_fleet_values_neither_wrap_nor_print_309_digits() {
    use gpusight::fleet::query::{Answers, Fleet, FleetOptions, VectorSample};
    let sample = |value: f64| VectorSample {
        labels: [("instance", "n1:9400"), ("Hostname", "n1"), ("gpu", "0"), ("modelName", "H200")]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect(),
        at_s: 1_700_000_000.0,
        value: Some(value),
    };
    let answers = Answers::from([
        ("up".to_owned(), vec![sample(1.0)]),
        ("DCGM_FI_DEV_FB_USED".to_owned(), vec![sample(1e308)]),
        ("DCGM_FI_DEV_FB_FREE".to_owned(), vec![sample(1e308)]),
        ("DCGM_FI_DEV_FB_RESERVED".to_owned(), vec![sample(1e308)]),
        ("DCGM_FI_DEV_POWER_USAGE".to_owned(), vec![sample(1e308)]),
        ("DCGM_FI_DEV_GPU_TEMP".to_owned(), vec![sample(f64::INFINITY)]),
        ("DCGM_FI_DEV_GPU_UTIL".to_owned(), vec![sample(1e300)]),
    ]);
    let fleet = Fleet::from_answers("http://p:9090", &answers, 1_700_000_000.0, &FleetOptions::default());
    let gpu = &fleet.nodes[0].gpus[0];
    if let (Some(used), Some(total)) = (gpu.mem_used_bytes, gpu.mem_total_bytes) {
        assert!(total >= used, "the total wrapped below used: {used} {total}");
    }
    let text = fleet.to_text();
    assert!(text.contains("absurd"), "{text}");
    let longest_number = text.split(|c: char| !c.is_ascii_digit()).map(str::len).max().unwrap_or(0);
    assert!(longest_number < 20, "{text}");
}

/// An exporter on 127.0.0.1 with small limits, serving one synthetic sample.
fn small_exporter() -> gpusight::export::server::RunningServer {
    use gpusight::export::server::{ExportHandle, ExportServer, ServerLimits};
    let mut source = synthetic("compute:1");
    let snapshot = next_snapshot(&mut source);
    let handle = ExportHandle::new();
    handle.publish_tick(&snapshot.machine, &snapshot.tick, &[]);
    let limits = ServerLimits {
        header_read_timeout: Duration::from_millis(300),
        max_request_bytes: 8192,
        max_connections: 8,
        ..ServerLimits::default()
    };
    ExportServer::bind("127.0.0.1:0".parse().expect("addr"), handle)
        .expect("bind")
        .with_limits(limits)
        .spawn()
        .expect("spawn")
}

/// Reads until the server closes the connection or `within` passes; true when it closed.
fn closed_by_server(stream: &mut std::net::TcpStream, within: Duration) -> bool {
    stream.set_read_timeout(Some(within)).expect("timeout");
    let mut buf = [0u8; 4096];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return true,
            Err(_) => return false,
        }
    }
}

fn scrape(addr: std::net::SocketAddr) -> String {
    let mut stream = std::net::TcpStream::connect(addr).expect("connect");
    stream.set_read_timeout(Some(Duration::from_secs(5))).expect("timeout");
    stream.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").expect("send");
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response);
    response
}

#[test]
fn slow_idle_and_oversized_clients_are_closed_and_real_scrapes_are_served() {
    let server = small_exporter();
    let addr = server.local_addr();
    // A flood of half-sent requests, five times the connection cap.
    let mut slow: Vec<std::net::TcpStream> = (0..40)
        .map(|_| {
            let mut s = std::net::TcpStream::connect(addr).expect("connect");
            s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: ").expect("send");
            s
        })
        .collect();
    // A real scrape is answered during the flood.
    let response = scrape(addr);
    assert!(response.starts_with("HTTP/1.1 200") && response.contains("DCGM_FI_DEV_GPU_UTIL"), "{response}");
    // The half-sent ones are closed by the server, not held forever.
    assert!(closed_by_server(&mut slow[0], Duration::from_secs(5)), "a half-sent request is held open");
    assert!(closed_by_server(&mut slow[39], Duration::from_secs(5)), "a half-sent request is held open");
    // An idle keep-alive connection is closed too.
    let mut idle = std::net::TcpStream::connect(addr).expect("connect");
    idle.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n").expect("send");
    assert!(closed_by_server(&mut idle, Duration::from_secs(5)), "an idle keep-alive connection is held open");
    // Headers past the byte cap are refused at once, not buffered (350 KB each took RSS to 412 MB).
    let mut big = std::net::TcpStream::connect(addr).expect("connect");
    let _ = big.write_all(b"GET /metrics HTTP/1.1\r\nX-Big: ");
    let _ = big.write_all(&vec![b'a'; 64 << 10]);
    big.set_read_timeout(Some(Duration::from_secs(5))).expect("timeout");
    let mut answer = String::new();
    let _ = big.read_to_string(&mut answer);
    assert!(answer.is_empty() || answer.starts_with("HTTP/1.1 431"), "{answer}");
    drop(slow);
    server.stop().expect("stop");
}

#[test]
fn healthz_says_503_on_stale_data() {
    use axum::http::StatusCode;
    use gpusight::export::server::{health, stale_after};
    let limit = Some(stale_after(Duration::from_secs(1)));
    assert_eq!(limit, Some(Duration::from_secs(5)));
    assert_eq!(stale_after(Duration::from_secs(10)), Duration::from_secs(30));
    assert_eq!(health(Some((Duration::from_secs(1), 7)), limit, false).0, StatusCode::OK);
    let (status, text) = health(Some((Duration::from_mins(1), 7)), limit, false);
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{text}");
    assert!(text.starts_with("stale\nlast sample 60.0 s ago"), "{text}");
    assert_eq!(health(Some((Duration::from_mins(1), 7)), limit, true).0, StatusCode::OK, "a recording that ended");
    assert_eq!(health(None, limit, false).0, StatusCode::SERVICE_UNAVAILABLE);
}

#[test]
fn csv_cells_from_a_recording_neither_reach_the_terminal_raw_nor_run_as_formulas() {
    let dir = temp_dir();
    let mut source = synthetic("mixed:2");
    let mut machine: MachineInfo = (*source.machine()).clone();
    machine.gpus[0].name = format!("=HYPERLINK(\"http://x\",\"H200\"){EVIL}\r\x07");
    machine.gpus[0].uuid = format!("@SUM(A1){EVIL}");
    machine.gpus[1].pci_bus_id = format!("+1,-2{EVIL}");
    let path = dir.path().join("formula.jsonl");
    let mut recorder = Recorder::create(&path, &Arc::new(machine), false).expect("create");
    for _ in 0..3 {
        recorder.write(&source.next_tick().expect("tick").expect("some")).expect("write");
    }
    drop(recorder);
    let output = gpusight(&["--replay", path.to_str().expect("utf-8"), "--once", "--format", "csv"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stdout(&output);
    assert_no_control("--once --format csv", &text);
    assert_eq!(text.lines().count(), 3, "one row per GPU, no row broken by a newline:\n{text}");
    for cell in ["\"'=HYPERLINK(\"\"http://x\"\",\"\"H200\"\")^[]52;c;", "\"'@SUM(A1)^[]52;", "\"'+1,-2^[]52;"] {
        assert!(text.contains(cell), "{cell} missing:\n{text}");
    }
    for line in text.lines() {
        for cell in csv_cells(line) {
            assert!(!cell.starts_with(['=', '+', '-', '@']), "a formula cell: {cell} in {line}");
        }
    }
}

/// One CSV line's cells as a spreadsheet reads them (RFC 4180: quoted cells, doubled quotes).
fn csv_cells(line: &str) -> Vec<String> {
    let (mut cells, mut cell, mut quoted, mut chars) = (Vec::new(), String::new(), false, line.chars().peekable());
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                chars.next();
                cell.push('"');
            }
            ('"', _) => quoted = !quoted,
            (',', false) => cells.push(std::mem::take(&mut cell)),
            _ => cell.push(c),
        }
    }
    cells.push(cell);
    cells
}

/// A synthetic machine's PID can be any local process's: the environment screen reads nothing from /proc for it.
/// Root may read every process's environment, so that is where it showed (the check is `run::monitor`'s unit test
/// for everyone else).
#[test]
fn the_environment_screen_reads_no_local_process_for_a_synthetic_one() {
    if !rustix::process::getuid().is_root() {
        println!("skipped: runs as root, who may read any process's environment");
        return;
    }
    let mut session = crate::common::pty::Session::gpusight(
        &["--synthetic", "mixed:2"],
        &[("HOME", "/tmp"), ("XDG_CONFIG_HOME", "/tmp")],
        120,
        40,
    );
    session.wait_for("Processes (");
    session.send("\x1b[B");
    session.send("e");
    let screen = session.wait_for("not available for a synthetic process");
    assert!(!screen.contains("PATH="), "a local process's environment was shown:\n{screen}");
    // q closes the environment screen, then quits.
    session.send("q");
    session.wait_screen("the environment screen closes", |s| !s.contains("not available for a synthetic"));
    session.send("q");
    assert_eq!(session.exit_code(), 0);
}

#[test]
fn a_keymap_that_takes_an_only_key_or_binds_keys_no_terminal_sends_is_refused() {
    for (keys, said) in [
        ("quit = [\"F24\"]", "no terminal sends F24"),
        ("quit = [\"/\"]", "takes '/', the only key of filter"),
        ("pause = [\"ctrl-c\"]", "ctrl-c always quits"),
    ] {
        let output = with_config(&format!("[keys]\n{keys}\n"), &["config", "check"]);
        assert_eq!(output.status.code(), Some(3), "{keys}: {}", stderr(&output));
        assert!(stderr(&output).contains(said), "{keys}: {}", stderr(&output));
    }
    let output = with_config("[keys]\nquit = [\"F12\"]\n", &["config", "check"]);
    assert_eq!(output.status.code(), Some(0), "a key terminals send: {}", stderr(&output));
}

#[test]
fn a_line_that_is_no_tick_is_refused_and_joined_parts_read_on() {
    let dir = temp_dir();
    let path = evil_recording(dir.path());
    let file = path.to_str().expect("utf-8");
    let whole = std::fs::read_to_string(&path).expect("read");
    let lines = whole.lines().count();
    for bad in ["{}", "[]", "{\"foo\":1}"] {
        std::fs::write(&path, format!("{whole}{bad}\n")).expect("write");
        let output = gpusight(&["--replay", file, "--once"]);
        assert_ne!(output.status.code(), Some(0), "{bad}: {}", stdout(&output));
        assert!(stderr(&output).contains(&format!("line {}: not a sample", lines + 1)), "{bad}: {}", stderr(&output));
    }
    // `cat a a`: the same machine's header again is a part joined on; the GPUs are shown.
    std::fs::write(&path, format!("{whole}{whole}")).expect("write");
    let output = gpusight(&["--replay", file, "--once"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(stderr(&output).contains("of the same machine inside (parts joined with cat)"), "{}", stderr(&output));
    assert!(stdout(&output).contains("H200"), "the GPUs are shown:\n{}", stdout(&output));
}

#[test]
fn a_config_path_that_is_a_fifo_a_loop_or_a_huge_key_gets_a_short_clear_message() {
    let dir = temp_dir();
    // A FIFO nobody writes to: reading it would block every command for ever.
    let fifo = dir.path().join("fifo.toml");
    rustix::fs::mknodat(rustix::fs::CWD, &fifo, rustix::fs::FileType::Fifo, rustix::fs::Mode::RWXU, 0).expect("mkfifo");
    let mut child = command(&["--config", fifo.to_str().expect("utf-8"), "--demo", "--once"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let started = std::time::Instant::now();
    while child.try_wait().expect("try_wait").is_none() {
        if started.elapsed() > Duration::from_secs(20) {
            child.kill().expect("kill");
            panic!("reading a FIFO config blocked");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let output = child.wait_with_output().expect("output");
    assert_eq!(output.status.code(), Some(3), "{}", stderr(&output));
    assert!(stderr(&output).contains("is not a regular file (it is a FIFO)"), "{}", stderr(&output));
    // A symlink loop is said as one, not as a missing file.
    let looped = dir.path().join("loop.toml");
    std::os::unix::fs::symlink(&looped, &looped).expect("symlink");
    let output = gpusight(&["--config", looped.to_str().expect("utf-8"), "--demo", "--once"]);
    assert!(stderr(&output).contains("symbolic links"), "{}", stderr(&output));
    assert!(!stderr(&output).contains("No such file"), "{}", stderr(&output));
    let home = dir.path().join("home");
    std::fs::create_dir_all(home.join("gpusight")).expect("mkdir");
    std::os::unix::fs::symlink(home.join("gpusight/config.toml"), home.join("gpusight/config.toml")).expect("loop");
    let output = command(&["--demo", "--once"]).env("XDG_CONFIG_HOME", &home).output().expect("run");
    assert!(stderr(&output).contains("is a symlink loop"), "{}", stderr(&output));
    // A 100 KB key name is cut in the message.
    let huge = "k".repeat(100_000);
    for args in [&["--demo", "--once"][..], &["config", "check"]] {
        let output = with_config(&format!("[general]\n{huge} = 1\n"), args);
        let err = stderr(&output);
        assert!(
            err.len() < 400 && err.contains("kkk…"),
            "{args:?}: {} bytes: {}",
            err.len(),
            &err[..err.len().min(300)]
        );
    }
}

/// What a scripted stand-in Prometheus answers to one request: after `delay`, the raw HTTP response.
struct Scripted {
    delay: Duration,
    response: String,
}

/// A 200 answer with `body` as JSON.
fn json_response(body: &str) -> String {
    format!(
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

/// An empty instant vector, as Prometheus answers a query with no series.
const EMPTY_VECTOR: &str = r#"{"status":"success","data":{"resultType":"vector","result":[]}}"#;

/// A stand-in Prometheus on 127.0.0.1 that answers each request on its own thread, as `script` says from the
/// decoded query; it serves until the test process ends.
fn scripted_prometheus(script: fn(&str) -> Scripted) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { break };
            std::thread::spawn(move || {
                stream.set_read_timeout(Some(Duration::from_secs(5))).expect("timeout");
                let mut request = Vec::new();
                let mut buf = [0u8; 4096];
                while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                    match stream.read(&mut buf) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => request.extend_from_slice(&buf[..n]),
                    }
                }
                let text = String::from_utf8_lossy(&request).into_owned();
                let target = text.split_whitespace().nth(1).unwrap_or_default();
                let query = target.split_once("query=").map_or("", |(_, q)| q);
                let query = query.replace("%28", "(").replace("%29", ")");
                let scripted = script(&query);
                std::thread::sleep(scripted.delay);
                let _ = stream.write_all(scripted.response.as_bytes());
            });
        }
    });
    format!("http://{addr}")
}

#[test]
fn a_slow_prometheus_costs_one_deadline_and_the_slow_query_is_named() {
    use gpusight::fleet::query::{Fleet, FleetOptions};
    let options = FleetOptions { timeout: Duration::from_secs(1), ..FleetOptions::default() };
    // Every query answered just inside the deadline: one after the other that was 14 x 0.7 s per refresh.
    let url =
        scripted_prometheus(|_| Scripted { delay: Duration::from_millis(700), response: json_response(EMPTY_VECTOR) });
    let started = std::time::Instant::now();
    let fleet = Fleet::query(&url, &options);
    assert!(fleet.is_ok(), "{fleet:?}");
    assert!(started.elapsed() < Duration::from_secs(3), "took {:?}: the queries ran one by one", started.elapsed());
    // One query past the deadline: named, in plain words, within about one deadline.
    let url = scripted_prometheus(|query| Scripted {
        delay: if query == "gpusight_finding" { Duration::from_secs(4) } else { Duration::ZERO },
        response: json_response(EMPTY_VECTOR),
    });
    let started = std::time::Instant::now();
    let err = Fleet::query(&url, &options).expect_err("the finding query is too slow").to_string();
    assert!(err.contains("did not answer `gpusight_finding` within 1 s"), "{err}");
    assert!(!err.contains("timeout: global"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(3), "took {:?}", started.elapsed());
}

#[test]
fn fleet_readings_at_the_edges_are_shown_as_they_are() {
    use gpusight::fleet::query::{Answers, Fleet, FleetOptions, VectorSample};
    const NOW: f64 = 1_700_000_000.0;
    let sample = |labels: &[(&str, &str)], value: f64| VectorSample {
        labels: [("instance", "n1:9400")]
            .iter()
            .chain(labels)
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect(),
        at_s: NOW,
        value: Some(value),
    };
    let answers = Answers::from([
        ("up".to_owned(), vec![sample(&[], 1.0)]),
        // The scrape's time 30 s after the query's: a clock ahead.
        ("timestamp(up)".to_owned(), vec![sample(&[], NOW + 30.0)]),
        ("DCGM_FI_DEV_GPU_UTIL".to_owned(), vec![sample(&[("gpu", "0"), ("Hostname", "alpha")], -0.0)]),
        // One instance, two hostnames.
        ("DCGM_FI_DEV_GPU_TEMP".to_owned(), vec![sample(&[("gpu", "1"), ("Hostname", "beta")], 40.0)]),
        ("gpusight_gpu_up".to_owned(), vec![sample(&[("gpu", "0")], 5e-324), sample(&[("gpu", "1")], 0.0)]),
        ("gpusight_finding".to_owned(), vec![sample(&[], 1.0), sample(&[("rule", "input-bound")], 1.0)]),
    ]);
    let fleet = Fleet::from_answers("http://p:9090", &answers, NOW, &FleetOptions::default());
    let text = fleet.to_text();
    assert!(!text.contains("-0"), "a negative zero is 0: {text}");
    assert!(text.contains("  0 %"), "{text}");
    let gpu_lines: Vec<&str> = text.lines().filter(|l| l.trim_start().starts_with(['0', '1'])).collect();
    assert!(gpu_lines.iter().any(|l| l.trim_start().starts_with("0 ") && !l.contains("LOST")), "{text}");
    assert!(gpu_lines.iter().any(|l| l.trim_start().starts_with("1 LOST")), "only 0 is lost: {text}");
    assert!(text.contains("clock ahead by 30 s") && !text.contains("scraped 0 s ago"), "{text}");
    assert!(!text.contains("unknown"), "{text}");
    assert!(text.contains("a finding without rule or severity labels"), "{text}");
    assert!(text.contains("input-bound (no severity label)"), "{text}");
    assert!(text.contains("alpha / beta"), "both hostnames are shown: {text}");
}

#[test]
fn a_recording_stream_ends_quietly_when_its_reader_is_gone_and_never_rotates() {
    // `--record - | true`: the reader is gone before the header is written.
    let (reader, writer) = std::io::pipe().expect("pipe");
    drop(reader);
    let output = command(&["--synthetic", "idle", "--record", "-", "--headless"]).stdout(writer).output().expect("run");
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(0), "{err}");
    assert!(err.is_empty(), "a closed pipe is a quiet end: {err}");
    // A stream cannot rotate: refused, not ignored.
    let output = gpusight(&["--synthetic", "idle", "--record", "-", "--record-max-mb", "1", "--headless"]);
    let err = stderr(&output);
    assert_eq!(output.status.code(), Some(3), "{err}");
    assert!(err.contains("--record-max-mb") && err.contains("cannot rotate"), "{err}");
}

#[test]
fn a_prometheus_redirect_off_http_or_a_huge_error_gets_a_short_plain_message() {
    use gpusight::fleet::query::{Fleet, FleetOptions};
    let options = FleetOptions { timeout: Duration::from_secs(2), ..FleetOptions::default() };
    let url = scripted_prometheus(|_| Scripted {
        delay: Duration::ZERO,
        response:
            "HTTP/1.1 302 Found\r\nLocation: file:///etc/passwd\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                .to_owned(),
    });
    let err = Fleet::query(&url, &options).expect_err("a redirect to a file is refused").to_string();
    assert!(err.contains("redirect to a non-HTTP URL refused"), "{err}");
    assert!(!err.contains("too many redirects"), "{err}");
    // A redirect to a path on the same server is followed.
    let url = scripted_prometheus(|query| Scripted {
        delay: Duration::ZERO,
        response: if query.contains("moved") {
            json_response(EMPTY_VECTOR)
        } else {
            "HTTP/1.1 301 Moved\r\nLocation: /api/v1/query?query=moved\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                .to_owned()
        },
    });
    assert!(Fleet::query(&url, &options).is_ok(), "a redirect on the same server is followed");
    // A 100 KB error message from the server is cut.
    let url = scripted_prometheus(|_| {
        let message = "x".repeat(100_000);
        let body = format!(r#"{{"status":"error","errorType":"bad_data","error":"{message}"}}"#);
        Scripted { delay: Duration::ZERO, response: json_response(&body) }
    });
    let err = Fleet::query(&url, &options).expect_err("an error answer").to_string();
    assert!(err.contains("bad_data: xxx"), "{}", &err[..err.len().min(400)]);
    assert!(err.len() < 1_000, "the error is echoed whole: {} bytes", err.len());
}

#[test]
fn values_from_the_command_line_are_echoed_short_and_limits_are_said() {
    for (args, limit) in [
        (&["--synthetic", "mixed:65", "--once"][..], "1 to 64"),
        (&["--synthetic", "mixed:2x100001", "--once"][..], "0 to 100000"),
    ] {
        let output = gpusight(args);
        let err = stderr(&output);
        assert_ne!(output.status.code(), Some(0), "{args:?}");
        assert!(err.contains(limit), "{args:?}: the limits are said: {err}");
    }
    for args in [
        &["--synthetic", "idle", "--once", "--interval", "1e308"][..],
        &["--synthetic", "idle", "--once", "--at", "1e300"][..],
        &["--synthetic", "idle", "--once", "--at", &"9".repeat(400)][..],
    ] {
        let output = gpusight(args);
        let err = stderr(&output);
        assert_ne!(output.status.code(), Some(0), "{err}");
        let longest = err.split(|c: char| !c.is_ascii_digit()).map(str::len).max().unwrap_or(0);
        assert!(longest <= 24, "{args:?}: a value echoed whole: {err}");
    }
}

#[test]
fn replay_dash_reads_the_recording_from_stdin() {
    let dir = temp_dir();
    let path = evil_recording(dir.path());
    let file = std::fs::File::open(&path).expect("open");
    let output = command(&["--replay", "-", "--once", "--json"]).stdin(file).output().expect("run");
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(stdout(&output).contains("\"gpus\""), "{}", stdout(&output));
}
