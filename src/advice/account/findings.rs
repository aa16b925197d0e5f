//! Findings read off the accounts: where the job's threads were read, a cause that costs a real share of its GPU's
//! time gets a finding with the account as its evidence, and the rules' own guesses about why that GPU waits give
//! way to it (their evidence is kept beside the account's where they named the same cause). A job that restarts
//! again and again gets restart-loop whatever was read.

use crate::fast_map::FastMap;
use crate::sample::{MachineInfo, UnixMs};

use super::book::AccountBook;
use super::evidence::{PlaceKey, TickIndex};
use super::remedy::{Facts, remedy};
use super::{Account, Basis, Cause, text};
use crate::advice::rules::draft;
use crate::advice::{Finding, Observation, Rule, Severity, Thresholds};

/// The rules about why a GPU waits whose observations an account from threads replaces on its place.
pub const ACCOUNTED: [Rule; 15] = [
    Rule::InputBound,
    Rule::CpuBoundInput,
    Rule::MainThreadBound,
    Rule::LaunchBound,
    Rule::H2dCopyBound,
    Rule::CpuQuotaThrottled,
    Rule::RemoteDatasetStall,
    Rule::CpusPinned,
    Rule::GpuUnderfed,
    Rule::CommBound,
    Rule::UtilMisleading,
    Rule::CpuContention,
    Rule::CpuOversubscribed,
    Rule::CheckpointWrite,
    Rule::StartUp,
];

/// Whether a rule's findings come only from the accounts (no rule function walks them).
#[must_use]
pub fn read_off(rule: Rule) -> bool {
    matches!(rule, Rule::CheckpointWrite | Rule::StartUp | Rule::RestartLoop)
}

/// What the findings are read from at one evaluation.
#[derive(Debug)]
pub struct Reading<'a> {
    /// The accounts over `account_window_s`, and over `phase_window_s` (periodic phases: checkpoint writes).
    pub accounts: &'a [Account],
    pub phases: &'a [Account],
    pub book: &'a AccountBook,
    pub index: &'a TickIndex<'a>,
    pub machine: &'a MachineInfo,
    pub now_ms: UnixMs,
}

/// The rules' observations with those an account from threads speaks for replaced by the account's, and
/// restart-loop added; and what the replaced observations said (their places and rules), which the next tick's
/// split reads: launch-bound's and h2d-copy-bound's GPU-side evidence names the step's CPU work.
#[must_use]
pub fn observe(
    reading: &Reading<'_>,
    t: &Thresholds,
    observations: Vec<Observation>,
) -> (Vec<Observation>, Vec<(PlaceKey, Rule)>) {
    let by_threads: Vec<&Account> =
        reading.accounts.iter().filter(|a| a.basis == Basis::Threads && a.pid.is_some()).collect();
    let here = |o: &Observation, a: &Account| {
        o.finding.gpu_index == Some(a.gpu_index) && o.finding.gpu_instance_id == a.gpu_instance_id
    };
    let mut kept = Vec::with_capacity(observations.len());
    let mut replaced: FastMap<(PlaceKey, Rule), Observation> = FastMap::default();
    for o in observations {
        match by_threads.iter().find(|a| here(&o, a)) {
            Some(a) if ACCOUNTED.contains(&o.finding.rule) => {
                replaced.insert(((a.gpu_index, a.gpu_instance_id), o.finding.rule), o);
            }
            _ => kept.push(o),
        }
    }
    // A rank that rank-straggler names has its verdict there: the account's causes on its GPU say what else was
    // seen, under it.
    let stragglers: Vec<PlaceKey> = kept
        .iter()
        .filter(|o| o.finding.rule == Rule::RankStraggler)
        .filter_map(|o| Some((o.finding.gpu_index?, o.finding.gpu_instance_id)))
        .collect();
    for account in by_threads {
        let place = (account.gpu_index, account.gpu_instance_id);
        let phase =
            reading.phases.iter().find(|p| (p.gpu_index, p.gpu_instance_id, p.pid) == (place.0, place.1, account.pid));
        let mut found = from_account(account, phase, reading, t, &replaced);
        if stragglers.contains(&place) {
            // The straggler's own CPU work is what rank-straggler says ("busy on the CPU"): it folds under it. Other
            // causes on its GPU are its own cause, and stay.
            for o in found.iter_mut().filter(|o| o.finding.rule == Rule::MainThreadBound) {
                o.finding.severity = Severity::Info;
                o.finding.cause = Some(Rule::RankStraggler);
            }
        }
        kept.extend(found);
    }
    kept.extend(restart_loops(reading, t));
    // The rules whose condition held at full strength: their GPU-side evidence is a hint for the next split.
    let hints = replaced.into_iter().filter(|(_, o)| o.enter).map(|(key, _)| key).collect();
    (kept, hints)
}

/// The causes of one account that cost enough: the largest a warning (info for a phase of the job's life), the
/// others info that defer to it.
fn from_account(
    account: &Account,
    phase: Option<&Account>,
    reading: &Reading<'_>,
    t: &Thresholds,
    replaced: &FastMap<(PlaceKey, Rule), Observation>,
) -> Vec<Observation> {
    let covered = account.seconds >= account.window_s * t.min_window_coverage;
    let share_of = |cause: Cause| match (cause, phase) {
        (Cause::CheckpointWrite, Some(p)) => p.share(cause),
        _ => account.share(cause),
    };
    let mut causes: Vec<(Cause, f64)> = Cause::ALL
        .into_iter()
        .filter(|c| {
            // Those the rules judge on their own terms: a server, a compile, a straggler, restarts.
            !matches!(
                c,
                Cause::Busy
                    | Cause::Serving
                    | Cause::CompileWarmup
                    | Cause::RankStraggler
                    | Cause::RestartLoop
                    | Cause::Idle
                    | Cause::CollectiveHang
            )
        })
        .map(|c| (c, share_of(c)))
        .filter(|(_, share)| *share >= t.account.exit_share)
        .collect();
    causes.sort_by(|a, b| b.1.total_cmp(&a.1));
    let facts = Facts::of(account, reading.index, reading.machine);
    let top = causes.first().map(|(c, _)| *c);
    causes
        .into_iter()
        .filter_map(|(cause, share)| {
            let rule = cause.rule()?;
            let mut finding = finding(
                account,
                cause,
                share,
                reading,
                replaced.get(&((account.gpu_index, account.gpu_instance_id), rule)).map(|o| &o.finding),
            );
            // A rule whose own evidence says more than the threads (an optimizer on the CPU, a quota's numbers, the
            // launcher that pinned the CPUs, a mount, the GPU-side shape of launches and copies) keeps its title and
            // remedy; where the remedy must follow the threads (more workers or not, who holds the CPUs), the
            // account writes them.
            let said = replaced
                .get(&((account.gpu_index, account.gpu_instance_id), rule))
                .map(|o| &o.finding)
                .filter(|_| rule_knows_more(cause));
            finding.remedy = said.map_or_else(|| remedy(cause, account, &facts), |f| f.remedy.clone());
            if let Some(f) = said {
                finding.title.clone_from(&f.title);
            }
            if cause == Cause::CommBound {
                finding.evidence.push_str(&network(reading));
            }
            if Some(cause) != top {
                finding.severity = Severity::Info;
                finding.cause = top.and_then(Cause::rule);
            } else if cause.is_phase() {
                finding.severity = Severity::Info;
            }
            let window_covered = if cause == Cause::CheckpointWrite {
                phase.is_some_and(|p| p.seconds >= p.window_s * t.min_window_coverage)
            } else {
                covered
            };
            // "Not determined" speaks only where gpu-underfed's own condition holds (SM activity under
            // `underfed_sm_active_pct` over its minute): a cause the evidence names is worth a warning from
            // `enter_share`, the umbrella only where the GPU mostly waits.
            let umbrella = replaced.get(&((account.gpu_index, account.gpu_instance_id), Rule::GpuUnderfed));
            let (rule_enter, rule_stay) = match (cause, umbrella) {
                (Cause::NotDetermined, Some(o)) => (o.enter, o.stay),
                (Cause::NotDetermined, None) if finding.severity == Severity::Warning => return None,
                _ => (true, true),
            };
            let enter = window_covered && share >= t.account.enter_share && rule_enter;
            Some(Observation { finding, enter, stay: rule_stay })
        })
        .collect()
}

/// The finding for one cause of an account: the rule's own where it named the same cause (its evidence after the
/// account's), else one written from the account.
fn finding(account: &Account, cause: Cause, share: f64, reading: &Reading<'_>, rule_said: Option<&Finding>) -> Finding {
    let rule = cause.rule().unwrap_or(Rule::GpuUnderfed);
    let place = text::place(account);
    let pid = account.pid.map_or_else(String::new, |p| format!(" (PID {p})"));
    let share_text = crate::units::share_label(share);
    let title = own_title(cause, &place, &pid, &share_text);
    let mut evidence = text::evidence(account);
    if let Some(said) = rule_said {
        evidence.push_str("; ");
        evidence.push_str(&said.evidence);
    }
    let since =
        rule_said.map_or_else(|| reading.now_ms.saturating_sub(super::book::millis(account.seconds)), |f| f.since_ms);
    Finding {
        title,
        evidence,
        explanation: explanation(cause),
        gpu_instance_id: account.gpu_instance_id,
        ..draft(rule, Severity::Warning, Some(account.gpu_index), account.pid, since)
    }
}

/// A finding's title written from the account.
fn own_title(cause: Cause, place: &str, pid: &str, share_text: &str) -> String {
    match cause {
        Cause::NotDetermined => format!("{place} waits {share_text} of the time; the cause is not determined{pid}"),
        Cause::StartUp => format!("{place} waits while its job starts up{pid}: {share_text} of the time"),
        Cause::UtilMisleading => {
            format!("{place} only looks busy: its kernels leave the SMs idle{pid}, {share_text} of its time")
        }
        _ => format!("{place} waits for {}{pid}: {share_text} of its time", cause.waited_for()),
    }
}

/// "; network now: eth0 RX 1.1 GiB/s TX 1.1 GiB/s": the busiest interfaces with a device behind them.
fn network(reading: &Reading<'_>) -> String {
    let busiest: Vec<String> = reading
        .index
        .tick
        .host
        .net
        .iter()
        .filter(|n| n.kind != crate::sample::NetKind::Virtual)
        .take(2)
        .map(|n| {
            format!(
                "{} RX {}/s TX {}/s",
                crate::text::visible(&n.name),
                crate::units::bytes_label(n.rx_bytes_per_s as f64),
                crate::units::bytes_label(n.tx_bytes_per_s as f64)
            )
        })
        .collect();
    if busiest.is_empty() { String::new() } else { format!("; network now: {}", busiest.join(", ")) }
}

/// Whether a rule that named the same cause says more than the threads: its title and remedy stay.
fn rule_knows_more(cause: Cause) -> bool {
    matches!(
        cause,
        Cause::MainThreadBound
            | Cause::LaunchBound
            | Cause::H2dCopyBound
            | Cause::CpuQuotaThrottled
            | Cause::CpusPinned
            | Cause::RemoteDatasetStall
            | Cause::CommBound
            | Cause::UtilMisleading
    )
}

/// Why a cause matters, for the finding's longer text.
fn explanation(cause: Cause) -> String {
    format!(
        "gpusight splits each GPU's time into busy and the causes of the rest, from what the job's threads did over \
         the same time (on a CPU, waiting for one, or asleep in a queue, a read, a socket, a write): {} took the share \
         shown. See docs/advice.md, \"The account\".",
        cause.label()
    )
}

/// restart-loop: a job on a place that restarted `restart_min` times or more within `restart_window_s`.
fn restart_loops(reading: &Reading<'_>, t: &Thresholds) -> Vec<Observation> {
    let since = reading.now_ms.saturating_sub(t.account.restart_window_s.saturating_mul(1000));
    let mut out = Vec::new();
    let mut places: Vec<PlaceKey> = reading.accounts.iter().map(|a| (a.gpu_index, a.gpu_instance_id)).collect();
    places.dedup();
    for place in places {
        // The job's account on the place: its current process's where it has one, else the last one's (a gap
        // between two processes of a crash loop).
        let here = reading.accounts.iter().filter(|a| (a.gpu_index, a.gpu_instance_id) == place);
        let Some(account) = here.clone().find(|a| a.pid.is_some()).or_else(|| here.clone().next()) else { continue };
        let restarts = reading.book.restarts(place, since);
        let n = u32::try_from(restarts.len()).unwrap_or(u32::MAX);
        if n == 0 {
            continue;
        }
        let pids: Vec<String> = restarts.iter().map(|l| l.pid.to_string()).collect();
        let lost = account.share(Cause::RestartLoop);
        let finding = Finding {
            title: format!(
                "{} keeps restarting its job: {n} restarts in {}",
                text::place(account),
                crate::units::duration_label(t.account.restart_window_s)
            ),
            evidence: format!(
                "new processes {} of the same job ({}); the GPU waited through the restarts {} of the last {}",
                pids.join(", "),
                crate::text::visible(&account.command),
                crate::units::share_label(lost),
                crate::units::duration_label(t.account.window_s)
            ),
            explanation:
                "A job whose process ends and is started again (a crash loop, a pod's restarts) leaves its GPU \
                          idle from one process's end through the next one's start-up."
                    .to_owned(),
            remedy: remedy(Cause::RestartLoop, account, &Facts::default()),
            gpu_instance_id: account.gpu_instance_id,
            // One finding per GPU whatever the PID: every restart has a new one.
            ..draft(Rule::RestartLoop, Severity::Warning, Some(account.gpu_index), None, restarts[0].started_ms)
        };
        out.push(Observation { finding, enter: n >= t.account.restart_min, stay: n >= 1 });
    }
    out
}
