//! Fuzzes the /proc and sysfs parsers. The first byte picks the file, the rest is its content.
#![no_main]

use gpusight::host::{maps, parse, parse_passwd, pid_parse};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&which, rest)) = data.split_first() else { return };
    let text = String::from_utf8_lossy(rest);
    match which % 14 {
        0 => {
            // Two /proc/stat readings separated by a NUL, and the rates between them.
            let (a, b) = text.split_once('\0').unwrap_or((&text, ""));
            let (a, b) = (parse::parse_proc_stat(a), parse::parse_proc_stat(b));
            if let (Some(x), Some(y)) = (a.total, b.total) {
                let _ = y.since(&x).and_then(|d| d.busy_pct());
                let _ = x.total();
            }
            for ((_, x), (_, y)) in a.cpus.iter().zip(&b.cpus) {
                let _ = y.since(x).and_then(|d| d.busy_pct());
            }
        }
        1 => drop(parse::parse_meminfo(&text)),
        2 => drop(parse::parse_vmstat(&text)),
        3 => drop(parse::parse_loadavg(&text)),
        4 => drop(parse::parse_psi(&text)),
        5 => drop(parse::parse_uptime_s(&text)),
        6 => drop(parse::parse_cpulist(&text)),
        7 => drop(pid_parse::parse_pid_stat(&text)),
        8 => drop(pid_parse::parse_pid_status(&text)),
        9 => drop(pid_parse::parse_pid_io(&text)),
        10 => drop(pid_parse::parse_cmdline(rest)),
        11 => drop(pid_parse::parse_children(&text).count()),
        12 => drop(maps::parse_maps(&text)),
        _ => {
            drop(maps::parse_environ(rest));
            drop(parse_passwd(&text));
            let _ = pid_parse::parse_stat_state(&text);
        }
    }
});
