//! Pure parsers over the text of /proc and sysfs files, so they are tested on fixture text.

/// Parses a CPU list such as `0-15,32-47` (sysfs `local_cpulist`, `Cpus_allowed_list`) into sorted CPU ids.
/// Returns `None` for text that is not a CPU list. An empty list (empty text) is `Some(vec![])`.
#[must_use]
pub fn parse_cpulist(text: &str) -> Option<Vec<u32>> {
    let mut cpus = Vec::new();
    for part in text.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((first, last)) => {
                let (first, last): (u32, u32) = (first.trim().parse().ok()?, last.trim().parse().ok()?);
                if last < first || last - first > 65_536 {
                    return None;
                }
                cpus.extend(first..=last);
            }
            None => cpus.push(part.trim().parse().ok()?),
        }
    }
    cpus.sort_unstable();
    cpus.dedup();
    Some(cpus)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpulists() {
        assert_eq!(parse_cpulist("0-3,8,10-11\n"), Some(vec![0, 1, 2, 3, 8, 10, 11]));
        assert_eq!(parse_cpulist(""), Some(vec![]));
        assert_eq!(parse_cpulist("3-1"), None);
        assert_eq!(parse_cpulist("a-b"), None);
    }
}
