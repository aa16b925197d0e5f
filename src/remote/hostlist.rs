//! Host lists as Slurm writes them: `node[01-08,12]`, `rack[1-2]-n[1-3]`, `a,b[1-2]`, a host file (one host or
//! expression a line, `#` comments), or `$SLURM_JOB_NODELIST`. Pure functions over `&str`.
//!
//! Expansion follows Slurm's `scontrol show hostnames`: a numeric range keeps the zero padding of its lower bound
//! (`[08-10]` is 08, 09, 10; `[8-10]` is 8, 9, 10), several bracket groups in one name give every combination, the
//! first group varying slowest, and commas (or white space) outside brackets separate names. Unlike Slurm, a host
//! named twice is connected to once: the second is dropped.

/// The most hosts one list may expand to (Slurm's own hostlist refuses ranges past 64 Ki hosts as well).
pub const MAX_HOSTS: usize = 65_536;

/// Expands a hostlist expression into host names, in order, each once.
///
/// # Errors
/// A message naming what is wrong: an unmatched or nested bracket, an empty item, a range that is not two
/// numbers, a reversed range, letters in a range, or more than [`MAX_HOSTS`] hosts.
pub fn expand(expression: &str) -> Result<Vec<String>, String> {
    let mut hosts = Vec::new();
    for item in split_top_level(expression)? {
        for host in expand_item(&item)? {
            if !hosts.contains(&host) {
                hosts.push(host);
            }
            if hosts.len() > MAX_HOSTS {
                return Err(format!("'{}' names more than {MAX_HOSTS} hosts", shown(expression)));
            }
        }
    }
    Ok(hosts)
}

/// Expands several expressions (the command line's hosts, a host file's lines) into one list, each host once.
///
/// # Errors
/// As [`expand`], for the first bad expression.
pub fn expand_all<'a>(expressions: impl IntoIterator<Item = &'a str>) -> Result<Vec<String>, String> {
    let mut hosts: Vec<String> = Vec::new();
    for expression in expressions {
        for host in expand(expression)? {
            if !hosts.contains(&host) {
                hosts.push(host);
            }
        }
        if hosts.len() > MAX_HOSTS {
            return Err(format!("the hosts given name more than {MAX_HOSTS} hosts"));
        }
    }
    Ok(hosts)
}

/// The expressions of a host file: one a line, blank lines and `#` comments (whole-line or after the host)
/// skipped.
#[must_use]
pub fn hostfile_lines(text: &str) -> Vec<&str> {
    text.lines().map(|line| line.split('#').next().unwrap_or_default().trim()).filter(|l| !l.is_empty()).collect()
}

/// An expression as a message may quote it: bounded and without control characters.
fn shown(text: &str) -> String {
    crate::text::visible(&crate::text::bounded(text, 80)).into_owned()
}

/// Splits at commas and white space outside brackets; checks the brackets pair up and do not nest.
fn split_top_level(expression: &str) -> Result<Vec<String>, String> {
    let mut items = Vec::new();
    let mut current = String::new();
    let mut depth = 0_u32;
    for c in expression.chars() {
        match c {
            '[' if depth > 0 => return Err(format!("'{}': brackets inside brackets", shown(expression))),
            '[' => depth = 1,
            ']' if depth == 0 => return Err(format!("'{}': a ']' without its '['", shown(expression))),
            ']' => depth = 0,
            ',' if depth == 0 => {
                if current.trim().is_empty() {
                    return Err(format!("'{}': an empty name between commas", shown(expression)));
                }
                items.push(std::mem::take(&mut current));
                continue;
            }
            c if c.is_whitespace() && depth == 0 => {
                if !current.is_empty() {
                    items.push(std::mem::take(&mut current));
                }
                continue;
            }
            c if c.is_whitespace() => return Err(format!("'{}': white space inside brackets", shown(expression))),
            _ => {}
        }
        current.push(c);
    }
    if depth > 0 {
        return Err(format!("'{}': a '[' without its ']'", shown(expression)));
    }
    if !current.is_empty() {
        items.push(current);
    } else if expression.trim_end().ends_with(',') {
        return Err(format!("'{}': an empty name after the last comma", shown(expression)));
    }
    Ok(items)
}

/// One name with zero or more bracket groups: every combination, the first group varying slowest.
fn expand_item(item: &str) -> Result<Vec<String>, String> {
    let mut names = vec![String::new()];
    let mut rest = item;
    while let Some(open) = rest.find('[') {
        let close = rest[open..].find(']').map(|i| open + i).ok_or_else(|| format!("'{}': no ']'", shown(item)))?;
        let (prefix, group) = (&rest[..open], &rest[open + 1..close]);
        let choices = expand_group(group, item)?;
        if names.len().saturating_mul(choices.len()) > MAX_HOSTS {
            return Err(format!("'{}' names more than {MAX_HOSTS} hosts", shown(item)));
        }
        names =
            names.iter().flat_map(|name| choices.iter().map(move |choice| format!("{name}{prefix}{choice}"))).collect();
        rest = &rest[close + 1..];
    }
    for name in &mut names {
        name.push_str(rest);
    }
    if let Some(bad) = names.iter().find(|n| !valid_host(n)) {
        return Err(format!("'{}' is not a host name ('{}')", shown(item), shown(bad)));
    }
    Ok(names)
}

/// A name ssh may be given: no leading '-' (it would read as an option), no control characters or quotes.
fn valid_host(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('-')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || "-._@:%".contains(c) || (!c.is_ascii() && !c.is_control()))
}

/// The inside of one bracket group: numbers and ranges separated by commas.
fn expand_group(group: &str, item: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for part in group.split(',') {
        let part = part.trim();
        if part.is_empty() {
            return Err(format!("'{}': an empty range in '[{}]'", shown(item), shown(group)));
        }
        let (lo, hi) = part.split_once('-').unwrap_or((part, part));
        let number = |text: &str| -> Result<u64, String> {
            if text.is_empty() || !text.chars().all(|c| c.is_ascii_digit()) {
                let why = if text.chars().any(char::is_alphabetic) {
                    "Slurm expands numeric ranges only"
                } else {
                    "a range is NUMBER or NUMBER-NUMBER"
                };
                return Err(format!("'{}': '{}' in '[{}]': {why}", shown(item), shown(part), shown(group)));
            }
            text.parse().map_err(|_| format!("'{}': '{}' is too large", shown(item), shown(text)))
        };
        let (from, to) = (number(lo)?, number(hi)?);
        if from > to {
            return Err(format!("'{}': the range '{}' runs backwards", shown(item), shown(part)));
        }
        if to - from >= MAX_HOSTS as u64 || out.len() + usize::try_from(to - from).unwrap_or(MAX_HOSTS) > MAX_HOSTS {
            return Err(format!("'{}' names more than {MAX_HOSTS} hosts", shown(item)));
        }
        let width = lo.len();
        out.extend((from..=to).map(|n| format!("{n:0width$}")));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hosts(expression: &str) -> Vec<String> {
        expand(expression).unwrap_or_else(|e| panic!("{expression}: {e}"))
    }

    #[test]
    fn ranges_keep_the_lower_bounds_zero_padding() {
        assert_eq!(hosts("node[01-03,12]"), ["node01", "node02", "node03", "node12"]);
        assert_eq!(hosts("node[8-10]"), ["node8", "node9", "node10"]);
        assert_eq!(hosts("node[08-10]"), ["node08", "node09", "node10"]);
        assert_eq!(hosts("node[001-002]"), ["node001", "node002"]);
        assert_eq!(hosts("n[7]"), ["n7"]);
        assert_eq!(hosts("n[0-1]"), ["n0", "n1"]);
        assert_eq!(hosts("node[01-08,12]").len(), 9);
        assert_eq!(hosts("gpu[1-2]x"), ["gpu1x", "gpu2x"]);
        assert_eq!(hosts("[1-2]"), ["1", "2"]);
    }

    #[test]
    fn several_groups_give_every_combination_the_first_slowest() {
        assert_eq!(hosts("rack[1-2]-n[1-3]"), ["rack1-n1", "rack1-n2", "rack1-n3", "rack2-n1", "rack2-n2", "rack2-n3"]);
        assert_eq!(hosts("r[1,3]n[01-02]"), ["r1n01", "r1n02", "r3n01", "r3n02"]);
    }

    #[test]
    fn commas_and_space_outside_brackets_separate_names() {
        assert_eq!(hosts("a,b[1-2]"), ["a", "b1", "b2"]);
        assert_eq!(hosts("a b  c"), ["a", "b", "c"]);
        assert_eq!(hosts("gpu-a,gpu-b"), ["gpu-a", "gpu-b"]);
        assert_eq!(hosts("node[1-2],node[2-3]"), ["node1", "node2", "node3"], "a host named twice is kept once");
        assert_eq!(hosts("user@host.example.com,10.0.0.1"), ["user@host.example.com", "10.0.0.1"]);
        assert_eq!(hosts(""), Vec::<String>::new());
    }

    #[test]
    fn bad_expressions_say_what_is_wrong() {
        let cases = [
            ("node[1-3", "without its ']'"),
            ("node1-3]", "without its '['"),
            ("node[[1-2]]", "inside brackets"),
            ("node[]", "empty range"),
            ("node[1,,2]", "empty range"),
            ("node[3-1]", "backwards"),
            ("gpu-[a-c]", "numeric ranges only"),
            ("node[1-2-3]", "NUMBER-NUMBER"),
            ("node[1:2]", "NUMBER-NUMBER"),
            ("a,,b", "empty name"),
            ("a,", "empty name"),
            ("node[1-99999999]", "more than"),
            ("n[1-300]x[1-300]", "more than"),
            ("-oProxyCommand=x", "not a host name"),
            ("a;rm", "not a host name"),
            ("node[1 - 2]", "white space"),
            ("n[99999999999999999999999]", "too large"),
        ];
        for (expression, why) in cases {
            let error = expand(expression).expect_err(expression);
            assert!(error.contains(why), "{expression}: {error}");
        }
    }

    #[test]
    fn a_host_file_skips_comments_and_blank_lines() {
        let text = "# the rack\nnode01\n\n  node[02-03]  # two more\n#node09\n";
        assert_eq!(hostfile_lines(text), ["node01", "node[02-03]"]);
        assert_eq!(expand_all(hostfile_lines(text)), Ok(vec!["node01".into(), "node02".into(), "node03".into()]));
    }
}
