//! An account in words and as a bar, the same in every output: the advice pane's bar, doctor's and report's section,
//! `--once`, and a finding's evidence.

use std::fmt::Write as _;

use super::{Account, Basis, Cause, CauseShare};
use crate::units::{duration_label, energy_label, share_label};

/// Causes below this share are left out of a line ("and 3 % else"): the line stays readable.
const LINE_MIN_SHARE: f64 = 0.03;

/// "GPU 0 (MIG 1g.18gb GI 7)": where the account is.
#[must_use]
pub fn place(account: &Account) -> String {
    match account.gpu_instance_id {
        Some(gi) => format!("GPU {} GI {gi}", account.gpu_index),
        None => format!("GPU {}", account.gpu_index),
    }
}

/// "GPU 0 PID 2001 (python train.py)", with the command cut to `max_command` characters.
#[must_use]
pub fn subject(account: &Account, max_command: usize) -> String {
    let pid = account.pid.map_or_else(String::new, |p| format!(" PID {p}"));
    let command = crate::text::visible(&account.command);
    let command: String = command.chars().take(max_command).collect();
    if command.is_empty() { format!("{}{pid}", place(account)) } else { format!("{}{pid} ({command})", place(account)) }
}

/// Where several accounts are, in short: "GPU 0", "GPUs 0-3", "GPU 0 GI 7, GPU 0 GI 8".
#[must_use]
pub fn places(accounts: &[&Account]) -> String {
    if accounts.iter().all(|a| a.gpu_instance_id.is_none()) {
        let gpus: Vec<u32> = accounts.iter().map(|a| a.gpu_index).collect();
        let list = crate::advice::group::gpu_ranges(&gpus);
        let many = list.contains([',', '-']);
        return format!("GPU{} {list}", if many { "s" } else { "" });
    }
    let mut places: Vec<String> = accounts.iter().map(|a| place(a)).collect();
    places.dedup();
    places.join(", ")
}

/// "busy 41 %, input: reading storage 38 %, not determined 6 %, 15 % else": the causes worth a word, largest first
/// after busy.
#[must_use]
pub fn line(account: &Account) -> String {
    let mut parts = Vec::new();
    let mut rest = 0.0;
    for c in &account.causes {
        if c.cause == Cause::Busy || c.share >= LINE_MIN_SHARE {
            parts.push(format!("{} {}", c.cause.label(), share_label(c.share)));
        } else {
            rest += c.share;
        }
    }
    if rest > 0.0 {
        parts.push(format!("{} else", share_label(rest)));
    }
    parts.join(", ")
}

/// The causes worth a row of their own in doctor's and report's tables: at least this share of the account.
pub const ROW_MIN_SHARE: f64 = 0.01;

/// The causes of an account worth a row ([`ROW_MIN_SHARE`]), busy first, the rest largest first.
pub fn rows(account: &Account) -> impl Iterator<Item = &CauseShare> {
    account.causes.iter().filter(|c| c.share >= ROW_MIN_SHARE)
}

/// Seconds for people, rounded to the second: "12 s", "4 min 10 s".
#[must_use]
pub fn seconds_label(seconds: f64) -> String {
    #[expect(clippy::cast_possible_truncation, clippy::cast_sign_loss, reason = "seconds of a watch, clamped at 0")]
    let secs = seconds.max(0.0).round() as u64;
    duration_label(secs)
}

/// What an account built from the per-process readings could not see, for people (its `unseen`); `None` for an
/// account from the threads.
#[must_use]
pub fn basis_note(account: &Account) -> Option<String> {
    (account.basis == Basis::Processes).then(|| {
        if account.unseen.is_empty() {
            "from the per-process readings: thread times not read".to_owned()
        } else {
            account.unseen.join("; ")
        }
    })
}

/// The account as evidence: "over 30 s: busy 41 %, input: reading storage 38 %, ...; waiting cost 5.2 kJ of 9.0 kJ"
/// and, without thread times, what it could not see.
#[must_use]
pub fn evidence(account: &Account) -> String {
    #[expect(clippy::cast_possible_truncation, clippy::cast_sign_loss, reason = "seconds of a window, small")]
    let secs = account.seconds.round() as u64;
    let mut text = format!("account over {}: {}", duration_label(secs), line(account));
    if let (Some(wait), Some(all)) = (account.waiting_energy_j(), account.energy_j) {
        let _ = write!(text, "; waiting cost {} of {}", energy_label(wait), energy_label(all));
    }
    if account.basis == Basis::Processes {
        text.push_str(" (from the per-process readings: thread times not read)");
    }
    text
}

/// One glyph a cause is drawn with in a bar: busy full, the waiting causes by family, not determined light.
#[must_use]
pub fn glyph(cause: Cause, ascii: bool) -> char {
    let (unicode, plain) = match cause {
        Cause::Busy => ('█', '#'),
        Cause::NotDetermined => ('░', '.'),
        Cause::Serving | Cause::StartUp | Cause::CompileWarmup | Cause::RestartLoop | Cause::Idle => ('▒', '-'),
        _ => ('▓', '='),
    };
    if ascii { plain } else { unicode }
}

/// The account as a bar `width` cells wide: each cause a run of cells in proportion to its share (largest remainders
/// get the spare cells), busy first.
#[must_use]
pub fn bar(account: &Account, width: usize) -> Vec<(Cause, usize)> {
    let exact: Vec<(Cause, f64)> = account.causes.iter().map(|c| (c.cause, c.share * width as f64)).collect();
    #[expect(clippy::cast_possible_truncation, clippy::cast_sign_loss, reason = "a share of a bar's width")]
    let mut cells: Vec<(Cause, usize)> = exact.iter().map(|(c, x)| (*c, x.floor() as usize)).collect();
    let used: usize = cells.iter().map(|(_, n)| n).sum();
    let mut order: Vec<usize> = (0..exact.len()).collect();
    order.sort_by(|a, b| (exact[*b].1 - exact[*b].1.floor()).total_cmp(&(exact[*a].1 - exact[*a].1.floor())));
    for i in order.into_iter().take(width.saturating_sub(used)) {
        cells[i].1 += 1;
    }
    cells.retain(|(_, n)| *n > 0);
    cells
}

/// The bar as text.
#[must_use]
pub fn bar_text(account: &Account, width: usize, ascii: bool) -> String {
    bar(account, width).into_iter().flat_map(|(c, n)| std::iter::repeat_n(glyph(c, ascii), n)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn account(parts: &[(Cause, f64)]) -> Account {
        Account {
            gpu_index: 0,
            gpu_instance_id: None,
            job: "pid:2001".to_owned(),
            pid: Some(2001),
            command: "python train.py".to_owned(),
            window_s: 30.0,
            seconds: 30.0,
            basis: Basis::Threads,
            causes: parts
                .iter()
                .map(|&(cause, share)| CauseShare {
                    cause,
                    seconds: share * 30.0,
                    share,
                    energy_j: Some(share * 9000.0),
                })
                .collect(),
            energy_j: Some(9000.0),
            alone: true,
            unseen: Vec::new(),
        }
    }

    #[test]
    fn a_line_names_the_causes_worth_a_word() {
        let a = account(&[
            (Cause::Busy, 0.41),
            (Cause::InputBound, 0.38),
            (Cause::NotDetermined, 0.19),
            (Cause::CheckpointWrite, 0.02),
        ]);
        assert_eq!(line(&a), "busy 41 %, input: reading storage 38 %, not determined 19 %, 2 % else");
        assert_eq!(subject(&a, 60), "GPU 0 PID 2001 (python train.py)");
        let e = evidence(&a);
        assert!(e.starts_with("account over 30 s: busy 41 %") && e.contains("waiting cost 5.3 kJ of 9.0 kJ"), "{e}");
    }

    #[test]
    fn a_bar_fills_its_width_in_proportion() {
        let a = account(&[(Cause::Busy, 0.5), (Cause::InputBound, 0.333), (Cause::NotDetermined, 0.167)]);
        assert_eq!(bar(&a, 12), vec![(Cause::Busy, 6), (Cause::InputBound, 4), (Cause::NotDetermined, 2)]);
        assert_eq!(bar_text(&a, 12, true), "######====..");
        assert_eq!(bar_text(&a, 6, false).chars().count(), 6);
    }

    #[test]
    fn places_are_short() {
        let on = |gpu_index, gpu_instance_id| Account { gpu_index, gpu_instance_id, ..account(&[(Cause::Busy, 1.0)]) };
        let (a, b, c) = (on(0, None), on(1, None), on(2, None));
        assert_eq!(places(&[&a]), "GPU 0");
        assert_eq!(places(&[&a, &b]), "GPUs 0,1");
        assert_eq!(places(&[&a, &b, &c]), "GPUs 0-2");
        assert_eq!(places(&[&on(0, Some(7)), &on(0, Some(8))]), "GPU 0 GI 7, GPU 0 GI 8");
    }

    #[test]
    fn rows_leave_out_crumbs_and_the_basis_is_said() {
        let mut a = account(&[(Cause::Busy, 0.6), (Cause::InputBound, 0.395), (Cause::CheckpointWrite, 0.005)]);
        let causes: Vec<Cause> = rows(&a).map(|c| c.cause).collect();
        assert_eq!(causes, [Cause::Busy, Cause::InputBound]);
        assert_eq!(seconds_label(124.4), "2 min 4 s");
        assert_eq!(seconds_label(-1.0), "0 s");
        assert_eq!(basis_note(&a), None);
        a.basis = Basis::Processes;
        a.unseen = vec!["the threads of PID 2001 are hidden".to_owned()];
        assert_eq!(basis_note(&a).as_deref(), Some("the threads of PID 2001 are hidden"));
        a.unseen.clear();
        assert_eq!(basis_note(&a).as_deref(), Some("from the per-process readings: thread times not read"));
    }
}
