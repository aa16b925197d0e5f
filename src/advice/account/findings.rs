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
    matches!(
        rule,
        Rule::CpuContention | Rule::CpuOversubscribed | Rule::CheckpointWrite | Rule::StartUp | Rule::RestartLoop
    )
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
/// restart-loop added.
#[must_use]
pub fn observe(reading: &Reading<'_>, t: &Thresholds, observations: Vec<Observation>) -> Vec<Observation> {
    let by_threads: Vec<&Account> =
        reading.accounts.iter().filter(|a| a.basis == Basis::Threads && a.pid.is_some()).collect();
    let here = |o: &Observation, a: &Account| {
        o.finding.gpu_index == Some(a.gpu_index) && o.finding.gpu_instance_id == a.gpu_instance_id
    };
    let mut kept = Vec::with_capacity(observations.len());
    let mut replaced: FastMap<(PlaceKey, Rule), Finding> = FastMap::default();
    for o in observations {
        match by_threads.iter().find(|a| here(&o, a)) {
            Some(a) if ACCOUNTED.contains(&o.finding.rule) => {
                replaced.insert(((a.gpu_index, a.gpu_instance_id), o.finding.rule), o.finding);
            }
            _ => kept.push(o),
        }
    }
    for account in by_threads {
        let phase = reading.phases.iter().find(|p| {
            (p.gpu_index, p.gpu_instance_id, p.pid) == (account.gpu_index, account.gpu_instance_id, account.pid)
        });
        kept.extend(from_account(account, phase, reading, t, &replaced));
    }
    kept.extend(restart_loops(reading, t));
    kept
}

/// The causes of one account that cost enough: the largest a warning (info for a phase of the job's life), the
/// others info that defer to it.
fn from_account(
    account: &Account,
    phase: Option<&Account>,
    reading: &Reading<'_>,
    t: &Thresholds,
    replaced: &FastMap<(PlaceKey, Rule), Finding>,
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
                Cause::Busy | Cause::Serving | Cause::CompileWarmup | Cause::RankStraggler | Cause::RestartLoop
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
                replaced.get(&((account.gpu_index, account.gpu_instance_id), rule)),
            );
            finding.remedy = remedy(cause, account, &facts);
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
            Some(Observation { finding, enter: window_covered && share >= t.account.enter_share, stay: true })
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
    let title = match cause {
        Cause::NotDetermined => format!("{place} waits {share_text} of the time; the cause is not determined{pid}"),
        Cause::StartUp => format!("{place} waits while its job starts up{pid}: {share_text} of the time"),
        Cause::UtilMisleading => {
            format!("{place} only looks busy: its kernels leave the SMs idle{pid}, {share_text} of its time")
        }
        _ => format!("{place} waits for {}{pid}: {share_text} of its time", cause.waited_for()),
    };
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
    for account in reading.accounts.iter().filter(|a| a.pid.is_some()) {
        let place = (account.gpu_index, account.gpu_instance_id);
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
            ..draft(Rule::RestartLoop, Severity::Warning, Some(account.gpu_index), account.pid, restarts[0].started_ms)
        };
        out.push(Observation { finding, enter: n >= t.account.restart_min, stay: n >= 1 });
    }
    out
}
