//! Findings that say the same thing on several GPUs (one rule, one severity, one title but for the GPU's index),
//! grouped so that the monitor's advice pane lists them once: "GPUs 0-7: ...". Pure; doctor and `--once` list
//! every finding as it is.

use super::Finding;

/// A finding's title with its own GPU's "GPU N" put as `with` (the first whole occurrence), and whether it had one.
fn title_without_gpu(finding: &Finding, with: &str) -> (String, bool) {
    let Some(g) = finding.gpu_index else { return (finding.title.clone(), false) };
    let needle = format!("GPU {g}");
    let mut from = 0;
    while let Some(at) = finding.title[from..].find(&needle).map(|i| i + from) {
        let end = at + needle.len();
        let whole = !finding.title[end..].starts_with(|c: char| c.is_ascii_digit());
        if whole {
            return (format!("{}{with}{}", &finding.title[..at], &finding.title[end..]), true);
        }
        from = end;
    }
    (finding.title.clone(), false)
}

/// What findings alike on several GPUs share: rule, severity, and title without the GPU.
type Alike = (super::Rule, super::Severity, String);

/// The findings in groups of those that say the same on different GPUs: each group the indices into `findings`
/// in their order, the groups in the order of their first finding. A finding about no GPU is a group of its own.
#[must_use]
pub fn same_on_gpus(findings: &[&Finding]) -> Vec<Vec<usize>> {
    let mut groups: Vec<(Option<Alike>, Vec<usize>)> = Vec::new();
    for (i, f) in findings.iter().enumerate() {
        let key = f.gpu_index.map(|_| (f.rule, f.severity, title_without_gpu(f, "\u{0}").0));
        let gpus_of = |members: &[usize]| members.iter().filter_map(|&m| findings[m].gpu_index).collect::<Vec<_>>();
        match groups
            .iter_mut()
            .find(|(k, m)| key.is_some() && *k == key && !gpus_of(m).contains(&f.gpu_index.unwrap_or(u32::MAX)))
        {
            Some((_, members)) => members.push(i),
            None => groups.push((key, vec![i])),
        }
    }
    groups.into_iter().map(|(_, members)| members).collect()
}

/// GPU indices as short text, a run of three or more consecutive ones as "first-last": "0-7", "0,1", "0,2-4".
#[must_use]
pub fn gpu_ranges(gpus: &[u32]) -> String {
    let mut sorted = gpus.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < sorted.len() {
        let mut j = i;
        while j + 1 < sorted.len() && sorted[j + 1] == sorted[j] + 1 {
            j += 1;
        }
        if j >= i + 2 {
            parts.push(format!("{}-{}", sorted[i], sorted[j]));
        } else {
            parts.extend(sorted[i..=j].iter().map(u32::to_string));
        }
        i = j + 1;
    }
    parts.join(",")
}

/// One group as a single finding, and what it is about ("GPUs 0-7"): the first finding with its GPU put as "each
/// GPU" in the title, no GPU or PID of its own (the PID kept where every member has the same), and its evidence
/// said to be the first GPU's. A group of one is its finding as it is, about `None`.
#[must_use]
pub fn merged(findings: &[&Finding], members: &[usize]) -> (Finding, Option<String>) {
    let first = findings[members[0]];
    if members.len() < 2 {
        return (first.clone(), None);
    }
    let gpus: Vec<u32> = members.iter().filter_map(|&m| findings[m].gpu_index).collect();
    let (title, _) = title_without_gpu(first, "each GPU");
    let same_pid = members.iter().all(|&m| findings[m].pid == first.pid);
    let mut finding = first.clone();
    finding.title = title;
    finding.pid = if same_pid { first.pid } else { None };
    if let Some(g) = first.gpu_index {
        finding.evidence = format!("GPU {g} (the others alike): {}", first.evidence);
    }
    (finding, Some(format!("GPUs {}", gpu_ranges(&gpus))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::advice::{Rule, Severity};

    fn finding(gpu: Option<u32>, pid: Option<u32>, title: &str) -> Finding {
        Finding {
            rule: Rule::UtilMisleading,
            severity: Severity::Info,
            gpu_index: gpu,
            pid,
            gpu_instance_id: None,
            title: title.to_owned(),
            evidence: "util 98 %".to_owned(),
            remedy: "Nothing to do.".to_owned(),
            explanation: String::new(),
            since_ms: 0,
            cause: None,
            also: Vec::new(),
        }
    }

    #[test]
    fn the_same_title_on_several_gpus_is_one_group() {
        let fs: Vec<Finding> = (0..8)
            .map(|g| {
                finding(Some(g), Some(100 + g), &format!("GPU {g} waits in a collective; judging which rank is slow"))
            })
            .chain([finding(None, None, "host memory is low"), finding(Some(10), None, "GPU 10 is hot")])
            .collect();
        let refs: Vec<&Finding> = fs.iter().collect();
        let groups = same_on_gpus(&refs);
        assert_eq!(groups, [(0..8).collect::<Vec<_>>(), vec![8], vec![9]]);
        let (one, about) = merged(&refs, &groups[0]);
        assert_eq!(about.as_deref(), Some("GPUs 0-7"));
        assert_eq!(one.title, "each GPU waits in a collective; judging which rank is slow");
        assert_eq!(one.pid, None, "the PIDs differ");
        assert!(one.evidence.starts_with("GPU 0 (the others alike): "), "{}", one.evidence);
        assert_eq!(merged(&refs, &groups[1]), (fs[8].clone(), None));
    }

    #[test]
    fn another_rule_severity_or_title_is_another_group_and_gpu_1_is_not_gpu_10() {
        let mut warn = finding(Some(1), None, "GPU 1 is underfed");
        warn.severity = Severity::Warning;
        let fs = [
            finding(Some(0), None, "GPU 0 is underfed"),
            warn,
            finding(Some(2), None, "GPU 2 is hot"),
            finding(Some(1), None, "GPU 10 is underfed"),
        ];
        let refs: Vec<&Finding> = fs.iter().collect();
        assert_eq!(same_on_gpus(&refs), [vec![0], vec![1], vec![2], vec![3]]);
    }

    #[test]
    fn gpu_ranges_are_short() {
        assert_eq!(gpu_ranges(&[0, 1, 2, 3, 4, 5, 6, 7]), "0-7");
        assert_eq!(gpu_ranges(&[1, 0]), "0,1");
        assert_eq!(gpu_ranges(&[0, 2, 3, 4, 7]), "0,2-4,7");
    }
}
