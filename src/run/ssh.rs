//! `gpusight ssh HOSTS…`: the hosts expanded (`--list` prints them), then one ssh and one reader thread per host
//! (`remote/`); `--once` prints one table per host, `--doctor` one verdict per host, and otherwise the fleet view
//! (`fleet/screen.rs`, `ui/fleet.rs`) shows every host live.

use std::fmt::Write as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

use crate::cli::{Cli, SshArgs};
use crate::config::Config;
use crate::doctor::{DoctorReport, Scope, Verdict};
use crate::fleet::query::NodeState;
use crate::remote::host::{HostHandle, HostOutcome, HostUpdate, ReaderConfig, stream_limits};
use crate::remote::hostlist;
use crate::remote::ssh::{SshOptions, stream_command};

use super::{RunError, capacity, emit, emit_json, warn};

/// The environment variable Slurm sets to the job's nodes, read when no host is given.
pub const SLURM_NODELIST_ENV: &str = "SLURM_JOB_NODELIST";

mod monitor;
mod view;

/// Runs `gpusight ssh`.
pub(super) fn run(cli: &Cli, args: &SshArgs, config: &Config) -> Result<i32, RunError> {
    let hosts = resolve_hosts(args)?;
    if args.list {
        emit(&(hosts.join("\n") + "\n"))?;
        return Ok(0);
    }
    let interval = Duration::from_secs_f64(config.general.interval_s);
    let reader = reader_config(args, config, interval);
    if args.once {
        return once(cli, &hosts, reader, interval, args);
    }
    if args.doctor {
        return doctor(cli, &hosts, reader, interval, args);
    }
    if !super::has_terminal() {
        return Ok(super::no_terminal());
    }
    view::run(cli, config, &hosts, &reader, interval, args.readonly).map_err(RunError::Interactive)
}

/// The hosts: the arguments, then the host file's, else `$SLURM_JOB_NODELIST`; expanded, each once.
fn resolve_hosts(args: &SshArgs) -> Result<Vec<String>, RunError> {
    let mut expressions: Vec<String> = args.hosts.clone();
    if let Some(path) = &args.hostfile {
        let text = std::fs::read_to_string(path)
            .map_err(|e| RunError::Usage(format!("cannot read the host file {}: {e}", path.display())))?;
        expressions.extend(hostlist::hostfile_lines(&text).into_iter().map(str::to_owned));
    }
    if expressions.is_empty() && args.hostfile.is_none() {
        match std::env::var(SLURM_NODELIST_ENV) {
            Ok(list) if !list.trim().is_empty() => expressions.push(list),
            _ => {
                return Err(RunError::Usage(format!(
                    "no hosts: give them (e.g. gpusight ssh node[01-04]), --hostfile FILE, or run inside a Slurm \
                     job ({SLURM_NODELIST_ENV})"
                )));
            }
        }
    }
    let hosts = hostlist::expand_all(expressions.iter().map(String::as_str)).map_err(RunError::Usage)?;
    if hosts.is_empty() {
        return Err(RunError::Usage("the hosts given expand to none".into()));
    }
    Ok(hosts)
}

fn reader_config(args: &SshArgs, config: &Config, interval: Duration) -> ReaderConfig {
    let ssh = SshOptions {
        connect_timeout: Duration::from_secs(args.connect_timeout),
        config_file: args.ssh_config.clone(),
        options: args.ssh_option.clone(),
        ..SshOptions::default()
    };
    let command = args.remote_command.clone().unwrap_or_else(|| stream_command(&args.remote_gpusight, interval));
    ReaderConfig {
        ssh,
        command,
        capacity: capacity(config, interval),
        thresholds: config.thresholds.clone(),
        limits: stream_limits(),
        stop_after: None,
    }
}

/// Starts every host; a host whose ssh cannot start is reported and left out.
fn spawn_all(hosts: &[String], reader: &ReaderConfig) -> Result<(Vec<HostHandle>, Receiver<HostUpdate>), RunError> {
    let (tx, rx) = mpsc::channel();
    let mut handles = Vec::with_capacity(hosts.len());
    for (i, host) in hosts.iter().enumerate() {
        let handle = HostHandle::spawn(i, host, reader, tx.clone()).map_err(|e| {
            RunError::Usage(format!("cannot run {}: {e} (gpusight ssh needs the OpenSSH client)", reader.ssh.program))
        })?;
        handles.push(handle);
    }
    Ok((handles, rx))
}

/// Runs every host until each has ended its stream (or `deadline` passes, or a signal comes), then ends them
/// all; the outcomes in host order.
fn collect(hosts: &[String], reader: &ReaderConfig, deadline: Duration) -> Result<Vec<HostOutcome>, RunError> {
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM, signal_hook::consts::SIGHUP] {
        signal_hook::flag::register(signal, Arc::clone(&stop))
            .map_err(|source| RunError::Signals { what: "signal", source })?;
    }
    let (handles, rx) = spawn_all(hosts, reader)?;
    let start = Instant::now();
    let mut ended = vec![false; hosts.len()];
    while ended.iter().any(|e| !e) && !stop.load(Ordering::Relaxed) {
        let left = deadline.saturating_sub(start.elapsed());
        if left.is_zero() {
            break;
        }
        if let Ok(update) = rx.recv_timeout(left.min(Duration::from_millis(200)))
            && update.last
            && let Some(slot) = ended.get_mut(update.host)
        {
            *slot = true;
        }
    }
    for handle in &handles {
        handle.end();
    }
    let outcomes = handles
        .into_iter()
        .zip(hosts)
        .map(|(h, name)| {
            h.join().unwrap_or_else(|| HostOutcome {
                pipeline: None,
                node: crate::remote::nodes::empty(name, NodeState::Lost, Some("the reader failed".into())),
            })
        })
        .collect();
    Ok(outcomes)
}

/// Runs every host for `samples` samples, over `watch` plus the time to connect and three intervals' grace; the
/// outcomes, and the deadline they were given.
fn collect_samples(
    hosts: &[String],
    mut reader: ReaderConfig,
    samples: usize,
    watch: Duration,
    interval: Duration,
    args: &SshArgs,
) -> Result<(Vec<HostOutcome>, Duration), RunError> {
    reader.stop_after = Some(samples);
    let deadline = watch + Duration::from_secs(args.connect_timeout) + interval * 3 + Duration::from_secs(5);
    Ok((collect(hosts, &reader, deadline)?, deadline))
}

/// What a host that sent no sample in time says.
fn no_sample_note(outcome: &HostOutcome, within: Duration) -> String {
    match (&outcome.node.note, outcome.node.state) {
        (Some(note), _) => note.clone(),
        (None, _) => format!("no sample within {} s", within.as_secs()),
    }
}

/// `--once`: two samples from each host (rates need a previous one), one table per host.
fn once(
    cli: &Cli,
    hosts: &[String],
    reader: ReaderConfig,
    interval: Duration,
    args: &SshArgs,
) -> Result<i32, RunError> {
    let (outcomes, deadline) = collect_samples(hosts, reader, 2, Duration::ZERO, interval, args)?;
    let failed = outcomes.iter().filter(|o| o.pipeline.is_none()).count();
    if cli.view.json {
        let hosts: Vec<serde_json::Value> = outcomes.iter().map(|o| once_json(o, deadline)).collect();
        emit_json(&serde_json::json!({ "schema": "gpusight.ssh-once/1", "hosts": hosts }))?;
    } else {
        let mut out = String::new();
        for outcome in &outcomes {
            out.push_str(&once_text(cli, outcome, deadline));
        }
        emit(&out)?;
    }
    // A host that sent nothing could not be shown: the table's "could not run" for the whole command.
    Ok(if failed > 0 { super::EXIT_CANNOT_RUN } else { crate::exit::SUCCESS })
}

fn once_text(cli: &Cli, outcome: &HostOutcome, deadline: Duration) -> String {
    let name = crate::text::visible(&outcome.node.name).into_owned();
    let Some(pipeline) = &outcome.pipeline else {
        let state = crate::fleet::view::state_word(outcome.node.state);
        let note = crate::text::visible(&no_sample_note(outcome, deadline)).into_owned();
        return format!("== {name}: {state}: {note}\n\n");
    };
    let options = crate::output::table::TableOptions {
        ascii: super::use_ascii(cli),
        only_gpus: vec![],
        user: None,
        pids: vec![],
        fit: super::text_fit(super::use_color(cli)),
    };
    format!("== {name}\n{}\n", crate::output::table::render(pipeline, &options))
}

fn once_json(outcome: &HostOutcome, deadline: Duration) -> serde_json::Value {
    let snapshot = outcome
        .pipeline
        .as_ref()
        .and_then(|p| serde_json::from_str::<serde_json::Value>(&crate::output::json::render(p)).ok());
    let note = outcome.pipeline.is_none().then(|| no_sample_note(outcome, deadline));
    serde_json::json!({
        "host": outcome.node.name,
        "state": if outcome.pipeline.is_some() { NodeState::Up } else { outcome.node.state },
        "note": note,
        "snapshot": snapshot,
    })
}

/// `--doctor`: every host watched for `--duration`, one verdict each; the exit status is the worst (a host that
/// sent nothing, or was watched too short for any rule that needs a window, is "unknown", 3), with critical worse
/// than unknown (see [`worse`]).
fn doctor(
    cli: &Cli,
    hosts: &[String],
    reader: ReaderConfig,
    interval: Duration,
    args: &SshArgs,
) -> Result<i32, RunError> {
    let duration =
        if args.instant { super::doctor::instant_default(cli, interval, args.duration) } else { args.duration };
    let scope = if args.instant { Scope::Instant } else { Scope::Every };
    let samples = (duration.as_secs_f64() / interval.as_secs_f64()).ceil();
    #[expect(clippy::cast_possible_truncation, clippy::cast_sign_loss, reason = "a positive count, at most 7 days")]
    let samples = samples.max(1.0) as usize + 1;
    let (outcomes, deadline) = collect_samples(hosts, reader, samples, duration, interval, args)?;
    let mut worst = 0;
    let mut too_short = None;
    let mut text = String::new();
    let mut json = Vec::new();
    for outcome in &outcomes {
        let name = crate::text::visible(&outcome.node.name).into_owned();
        let Some(pipeline) = &outcome.pipeline else {
            worst = worse(worst, crate::exit::CANNOT_RUN);
            let note = no_sample_note(outcome, deadline);
            let _ = write!(text, "== {name}: UNKNOWN: {}\n\n", crate::text::visible(&note));
            json.push(serde_json::json!({ "host": outcome.node.name, "exit_code": crate::exit::CANNOT_RUN,
                                          "verdict": Verdict::Unknown.name(), "note": note, "report": null }));
            continue;
        };
        let report = DoctorReport::scoped(pipeline, scope);
        worst = worse(worst, report.exit_code());
        if report.verdict() == Verdict::Unknown {
            too_short = too_short.or(report.too_short);
        }
        let _ = write!(text, "== {name}\n{}\n", report.to_text_fitted(super::text_fit(super::use_color(cli))));
        json.push(serde_json::json!({ "host": outcome.node.name, "exit_code": report.exit_code(),
                                      "verdict": report.verdict().name(), "report": report.to_json() }));
    }
    if cli.view.json {
        emit_json(&serde_json::json!({ "schema": "gpusight.ssh-doctor/1", "exit_code": worst, "hosts": json }))?;
    } else {
        emit(&text)?;
    }
    if outcomes.iter().any(|o| o.pipeline.is_none()) {
        warn("at least one host could not be checked");
    }
    if let Some(short) = too_short {
        warn(&format!(
            "at least one host was watched too short to judge (the shortest window is {} s): run with --duration {} \
             or longer, or with --instant",
            short.shortest_window_s,
            short.duration_arg()
        ));
    }
    Ok(worst)
}

/// The worse of two doctor statuses, in the order monitoring systems sort them: critical, then unknown (a host that
/// could not be checked, or whose watch was too short to judge), then warning, then healthy. One rule for both
/// kinds of unknown: neither reads as healthy, and neither hides a critical host.
fn worse(a: i32, b: i32) -> i32 {
    let rank = |code: i32| match code {
        crate::exit::CRITICAL => 3,
        crate::exit::CANNOT_RUN => 2,
        crate::exit::WARNING => 1,
        _ => 0,
    };
    if rank(b) > rank(a) { b } else { a }
}

#[cfg(test)]
mod worst_tests {
    use super::worse;
    use crate::exit::{CANNOT_RUN, CRITICAL, SUCCESS, WARNING};

    #[test]
    fn a_critical_host_outranks_one_that_could_not_be_checked() {
        assert_eq!(worse(CANNOT_RUN, CRITICAL), CRITICAL);
        assert_eq!(worse(CRITICAL, CANNOT_RUN), CRITICAL);
        assert_eq!(worse(WARNING, CANNOT_RUN), CANNOT_RUN);
        assert_eq!(worse(SUCCESS, WARNING), WARNING);
        assert_eq!([SUCCESS, WARNING, SUCCESS].into_iter().fold(SUCCESS, worse), WARNING);
    }

    #[test]
    fn a_host_watched_too_short_is_unknown_like_one_that_sent_nothing() {
        use crate::doctor::{DoctorReport, Scope, Verdict};
        let healthy_but_short = |scope| {
            let mut source = crate::source::synthetic::SyntheticSource::new(
                crate::source::synthetic::SyntheticSpec::parse("compute").expect("spec"),
            );
            let mut next = || crate::source::Source::next_snapshot(&mut source).expect("tick").expect("some");
            let mut pipeline = crate::pipeline::Pipeline::new(&next(), 900, crate::advice::Thresholds::default());
            for _ in 0..5 {
                pipeline.ingest(&next());
            }
            DoctorReport::scoped(&pipeline, scope)
        };
        let short = healthy_but_short(Scope::Every);
        assert_eq!((short.verdict(), short.exit_code()), (Verdict::Unknown, CANNOT_RUN));
        // It never reads as healthy, outranks a warning as an unreachable host does, and never hides a critical one.
        assert_eq!([SUCCESS, short.exit_code(), SUCCESS].into_iter().fold(SUCCESS, worse), CANNOT_RUN);
        assert_eq!([WARNING, short.exit_code()].into_iter().fold(SUCCESS, worse), CANNOT_RUN);
        assert_eq!([short.exit_code(), CRITICAL, WARNING].into_iter().fold(SUCCESS, worse), CRITICAL);
        // With --instant the same watch is healthy.
        assert_eq!(healthy_but_short(Scope::Instant).exit_code(), SUCCESS);
    }
}
