//! Through a real sshd (see `sshd.rs`): `--once` and `--doctor` over two hosts, a host without gpusight, a host
//! that sends garbage, and the live view in a pty (both hosts shown, one killed and marked lost while the other
//! updates, and no remote gpusight left after quitting).

use crate::common::pty::Session;
use crate::common::{command, poll, stderr, stdout};
use crate::sshd::Sshd;

use std::time::Duration;

fn ssh_command(sshd: &Sshd, extra: &[&str]) -> std::process::Command {
    let mut cmd = command(&["ssh"]);
    cmd.args(sshd.flags()).args(extra);
    cmd
}

#[test]
fn once_prints_a_table_per_host_and_json_with_each_hosts_snapshot() {
    let Some(sshd) = Sshd::start() else { return };
    let out = ssh_command(&sshd, &["--once", "hostA", "hostB"]).output().unwrap();
    let text = stdout(&out);
    assert!(out.status.success(), "{text}\n{}", stderr(&out));
    assert!(text.contains("== hostA") && text.contains("== hostB"), "{text}");
    let out = ssh_command(&sshd, &["--once", "--json", "hostA", "hostB"]).output().unwrap();
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["schema"], "gpusight.ssh-once/1");
    let gpus = |i: usize| json["hosts"][i]["snapshot"]["tick"]["gpus"].as_array().map_or(0, Vec::len);
    assert_eq!((json["hosts"][0]["host"].as_str(), gpus(0)), (Some("hostA"), 2), "{json:#}");
    assert_eq!((json["hosts"][1]["host"].as_str(), gpus(1)), (Some("hostB"), 1), "{json:#}");
    assert!(!sshd.remote_running("hostA") || poll_gone(&sshd, "hostA"));
}

fn poll_gone(sshd: &Sshd, alias: &str) -> bool {
    poll(&format!("{alias}'s remote gpusight exits"), Duration::from_secs(10), || {
        if sshd.remote_running(alias) { Err("still running".to_owned()) } else { Ok(true) }
    })
}

#[test]
fn a_host_without_gpusight_gets_the_install_command_and_garbage_is_a_bad_stream() {
    let Some(sshd) = Sshd::start() else { return };
    let mut cmd = command(&["ssh"]);
    let flags = sshd.flags();
    // The same flags with a remote binary that does not exist.
    cmd.args(&flags[..2]).args(["--remote-gpusight", "/nonexistent/gpusight", "--once", "hostA"]);
    let out = cmd.output().unwrap();
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(3), "{text}\n{}", stderr(&out));
    assert!(text.contains("hostA: NO GPUSIGHT") && text.contains("cargo install gpusight"), "{text}");
    let out = ssh_command(&sshd, &["--once", "hostA", "garbage"]).output().unwrap();
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(3), "{text}\n{}", stderr(&out));
    assert!(text.contains("== hostA\n"), "{text}");
    assert!(text.contains("garbage: BAD STREAM: bad stream at line 1"), "{text}");
}

#[test]
fn doctor_gives_one_verdict_per_host_and_exits_with_the_worst() {
    let Some(sshd) = Sshd::start() else { return };
    // --instant: a 1 s watch is judged by the rules that need no window, so each host's status is its findings'.
    let args = ["--doctor", "--instant", "--duration", "1s", "--json", "hostA", "hostC"];
    let out = ssh_command(&sshd, &args).output().unwrap();
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let codes: Vec<i64> = json["hosts"].as_array().unwrap().iter().map(|h| h["exit_code"].as_i64().unwrap()).collect();
    assert_eq!(codes.len(), 2, "{json:#}");
    assert!(codes.iter().all(|c| (0..=2).contains(c)), "{json:#}");
    assert_eq!(i64::from(out.status.code().unwrap()), *codes.iter().max().unwrap(), "{json:#}");
    assert_eq!(json["exit_code"].as_i64(), codes.iter().max().copied());
    let out = ssh_command(&sshd, &["--doctor", "--instant", "--duration", "1s", "hostA", "nosuchalias.invalid"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "a host that could not be checked is unknown: {}", stdout(&out));
    assert!(stdout(&out).contains("nosuchalias.invalid: UNKNOWN"), "{}", stdout(&out));
    // Without --instant, a healthy host watched 1 s could not be judged: unknown too, never healthy.
    let out = ssh_command(&sshd, &["--doctor", "--duration", "1s", "--json", "hostC"]).output().unwrap();
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(3), "{json:#}");
    assert_eq!(json["hosts"][0]["verdict"], "unknown", "{json:#}");
    assert_eq!(json["hosts"][0]["report"]["too_short"]["duration"], "30s", "{json:#}");
    assert!(stderr(&out).contains("too short to judge"), "{}", stderr(&out));
}

#[test]
fn the_live_view_shows_both_hosts_marks_a_killed_one_lost_and_quitting_ends_every_remote() {
    let Some(sshd) = Sshd::start() else { return };
    let mut args: Vec<String> = vec!["ssh".into()];
    args.extend(sshd.flags());
    args.extend(["hostA".into(), "hostB".into()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut session = Session::gpusight(&args, &[], 140, 30);
    session.wait_screen("both hosts up with their GPUs", |s| {
        s.contains("hostA")
            && s.contains("hostB")
            && s.matches("GPU 0").count() == 2
            && s.contains("GPU 1")
            && !s.contains("connecting")
    });
    // hostB's remote gpusight dies: hostB is lost, hostA goes on.
    let pid = rustix::process::Pid::from_raw(sshd.remote_pid("hostB")).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::KILL).unwrap();
    let screen = session.wait_for("LOST");
    let row = |screen: &str| screen.lines().find(|l| l.contains("GPU 1")).map(str::to_owned);
    let before = row(&screen);
    session.wait_screen("hostA still updating after hostB was lost", |s| row(s) != before && !s.contains("STALE"));
    assert!(sshd.remote_running("hostA"));
    session.send("q");
    assert_eq!(session.exit_code(), 0, "{}", session.screen());
    assert!(poll_gone(&sshd, "hostA"), "a remote gpusight is left after quitting");
}

fn view(sshd: &Sshd, extra: &[&str]) -> Session {
    let mut args: Vec<String> = vec!["ssh".into()];
    args.extend(sshd.flags());
    args.extend(extra.iter().map(|a| (*a).to_owned()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    Session::gpusight(&args, &[], 140, 30)
}

/// Opens hostC's drill-down and waits for the attached process's row.
fn drill_into_host_c(session: &mut Session) {
    session.wait_screen("hostC up", |s| s.contains("hostC") && s.contains("GPU 0") && !s.contains("connecting"));
    session.send("\r");
    session.wait_for("attached test process");
}

#[test]
fn t_on_a_remote_process_asks_then_signals_it_through_ssh_and_readonly_refuses() {
    let Some(sshd) = Sshd::start() else { return };
    let (mut victim, pid, start) = crate::common::victim();
    std::fs::write(sshd.dir.path().join("attach"), format!("{pid}:{start}")).unwrap();
    let mut session = view(&sshd, &["--readonly", "hostC"]);
    drill_into_host_c(&mut session);
    session.send("T");
    session.wait_for("read-only (--readonly): no signals");
    session.send("q");
    session.send("q");
    assert_eq!(session.exit_code(), 0);
    assert!(victim.try_wait().unwrap().is_none(), "a read-only view signalled the process");

    let mut session = view(&sshd, &["hostC"]);
    drill_into_host_c(&mut session);
    let mut confirmed = false;
    for _ in 0..16 {
        session.send("T");
        let screen = session.wait_for("Send a signal");
        if screen.contains(&format!("PID {pid} ")) {
            assert!(screen.contains("SIGTERM") && screen.contains("Cancel"), "{screen}");
            session.send("\r");
            confirmed = true;
            break;
        }
        session.send("n");
        session.wait_screen("the dialog closed", |s| !s.contains("Send a signal"));
        session.send("\x1b[B");
    }
    assert!(confirmed, "the attached process was never selected: {}", session.screen());
    session.wait_for(&format!("sent SIGTERM to PID {pid} on hostC"));
    let status = poll("the signalled process exits", Duration::from_secs(10), || {
        victim.try_wait().map_err(|e| e.to_string())?.ok_or_else(|| "still running".to_owned())
    });
    assert!(!status.success(), "{status:?}");
    session.send("q");
    session.send("q");
    assert_eq!(session.exit_code(), 0);
}

#[test]
fn a_refused_login_and_a_closed_port_are_lost_with_sshs_own_words() {
    let Some(sshd) = Sshd::start() else { return };
    let out = ssh_command(&sshd, &["--once", "hostC", "denied", "refused"]).output().unwrap();
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(3), "{text}\n{}", stderr(&out));
    assert!(text.contains("== hostC\n"), "{text}");
    assert!(text.contains("denied: LOST: ") && text.contains("Permission denied"), "{text}");
    assert!(text.contains("refused: LOST: ") && text.contains("Connection refused"), "{text}");
}

#[test]
fn a_stopped_host_goes_stale_and_back_and_sighup_ends_every_remote() {
    use rustix::process::{Pid, Signal, kill_process};
    let Some(sshd) = Sshd::start() else { return };
    let mut session = view(&sshd, &["hostA", "hostB"]);
    session.wait_screen("both hosts up", |s| s.matches(" up ").count() >= 2 && !s.contains("connecting"));
    // hostB's remote gpusight stopped: no sample for three intervals (0.6 s) is stale; continued, it is up again.
    let pid = Pid::from_raw(sshd.remote_pid("hostB")).unwrap();
    kill_process(pid, Signal::STOP).unwrap();
    session.wait_for("STALE");
    kill_process(pid, Signal::CONT).unwrap();
    session.wait_screen("hostB up again", |s| !s.contains("STALE") && s.matches(" up ").count() >= 2);
    session.signal(Signal::HUP);
    assert_eq!(session.exit_code(), 128 + 1, "{}", session.screen());
    assert!(poll_gone(&sshd, "hostA") && poll_gone(&sshd, "hostB"), "a remote gpusight is left after SIGHUP");
}

#[test]
fn enter_in_a_hosts_drill_down_opens_its_own_monitor_and_q_comes_back() {
    let Some(sshd) = Sshd::start() else { return };
    let mut session = view(&sshd, &["hostA", "hostC"]);
    session.wait_screen("both hosts up", |s| s.matches(" up ").count() >= 2 && !s.contains("connecting"));
    session.send("\r");
    session.wait_for("Processes");
    session.send("\r");
    // The monitor's header names the host's machine as the monitor does.
    let screen = session.wait_screen("the host's monitor", |s| s.contains("synthetic mixed (2 GPUs)"));
    assert!(!screen.contains("Esc: fleet"), "{screen}");
    session.send("q");
    session.wait_for("Esc: fleet");
    // The view reads keys again: back to the grid, then quit.
    session.send("\x1b");
    session.wait_screen("the grid", |s| s.contains("Enter: details"));
    session.send("q");
    assert_eq!(session.exit_code(), 0, "{}", session.screen());
    assert!(poll_gone(&sshd, "hostA") && poll_gone(&sshd, "hostC"));
}
