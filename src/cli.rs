//! The command line: flags and subcommands, and nothing else. It only parses: what a command line does is
//! [`crate::run`]'s, which imports this module (never the other way round).

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueHint};

/// gpusight: a terminal GPU monitor that says why your training job is slow.
#[derive(Debug, Parser)]
#[command(name = "gpusight", version, about, long_about = None, args_conflicts_with_subcommands = false,
          after_long_help = crate::exit::help())]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    #[command(flatten)]
    pub data: DataArgs,
    #[command(flatten)]
    pub view: ViewArgs,
    /// Whether `--duration` was given (not its default), so that it can be said to do nothing on a recording.
    #[arg(skip)]
    pub duration_given: bool,
}

/// Where the data comes from, and recording. Shared by every command.
#[derive(Debug, Args, Clone, Default)]
pub struct DataArgs {
    /// Play the recording of a real H200 embedded in the binary (works on any machine).
    #[arg(long, global = true, conflicts_with_all = ["replay", "synthetic"])]
    pub demo: bool,
    /// Play a recording made with --record.
    #[arg(long, value_name = "FILE", value_hint = ValueHint::FilePath, global = true, conflicts_with = "synthetic")]
    pub replay: Option<PathBuf>,
    /// Use a synthetic machine: `SCENARIO[:GPUS[xPROCS]]`, e.g. input-bound, mixed:8, scale:8x1000.
    #[arg(long, value_name = "SPEC", global = true)]
    pub synthetic: Option<String>,
    /// For tests: list a real PID (with its start ticks) as a GPU process of the synthetic machine.
    #[arg(long, value_name = "PID[:START_TICKS]", global = true, hide = true)]
    pub synthetic_attach: Vec<String>,
    /// Seconds between samples (0.1 to 60).
    #[arg(long, value_name = "SECONDS", global = true, allow_negative_numbers = true)]
    pub interval: Option<f64>,
    /// Only these GPUs (NVML indices, e.g. 0,2): the others are not read, shown, judged, exported or recorded.
    #[arg(long, value_name = "GPU", num_args = 1.., value_delimiter = ',', global = true,
          allow_negative_numbers = true, value_parser = parse_index)]
    pub only: Vec<u32>,
    /// Record what is sampled to FILE (JSON Lines; gzip unless FILE ends in .jsonl or .json; `-` streams to
    /// stdout with --headless).
    #[arg(long, value_name = "FILE", value_hint = ValueHint::FilePath)]
    pub record: Option<PathBuf>,
    /// With --record FILE: once FILE holds this many MB, move it to FILE.1 (older parts up to FILE.9) and
    /// start a new one.
    #[arg(long, value_name = "MB", requires = "record", value_parser = clap::value_parser!(u64).range(1..))]
    pub record_max_mb: Option<u64>,
    /// With --record: record without drawing until SIGINT/SIGTERM/SIGHUP.
    #[arg(long, requires = "record")]
    pub headless: bool,
    /// With --record - --headless: stop when standard input reaches its end (`gpusight ssh` runs the remote
    /// recorder this way, so it ends with the ssh session).
    #[arg(long, requires = "headless")]
    pub exit_on_stdin_eof: bool,
    /// With --record: replace FILE if it exists.
    #[arg(long, requires = "record")]
    pub overwrite: bool,
    /// Read the config from FILE instead of the platform path.
    #[arg(long, value_name = "FILE", value_hint = ValueHint::FilePath, global = true)]
    pub config: Option<PathBuf>,
    /// The name this machine goes by in exported series, reports and recordings (default: NODE_NAME, else the
    /// kernel's hostname).
    #[arg(long, value_name = "NAME", value_hint = ValueHint::Hostname, global = true)]
    pub hostname: Option<String>,
}

/// How to show it.
#[derive(Debug, Args, Clone, Default)]
pub struct ViewArgs {
    /// Print one snapshot as a table and exit.
    #[arg(short = '1', long)]
    pub once: bool,
    /// With --once or --status (or doctor/report): print JSON.
    #[arg(long, global = true)]
    pub json: bool,
    /// With --once: table (default), json or csv (one row per GPU).
    #[arg(long, value_name = "FORMAT", value_enum, requires = "once")]
    pub format: Option<OnceFormat>,
    /// Print one short line for a status bar (tmux status-right) and exit: the findings of a gpusight watching
    /// this machine (the monitor or export), else one sample with '?' for the findings; within 2 s, '0:?' for a
    /// GPU that did not answer. --json prints it as JSON.
    #[arg(long, conflicts_with = "once")]
    pub status: bool,
    /// With --status: the template for each GPU: {index} {name} {util} {mem} {temp} {power} {finding}; {{ and }}
    /// are literal braces.
    #[arg(long, value_name = "TEMPLATE", requires = "status")]
    pub status_format: Option<String>,
    /// On a recording or a synthetic machine: start at TIME from its start (seconds, or 90s, 1m30s, 2m), with the
    /// history up to there (--once: that frame, default the last; the monitor: default the start, or for --demo
    /// the first warning).
    #[arg(long, value_name = "TIME", allow_negative_numbers = true, value_parser = parse_at)]
    pub at: Option<f64>,
    /// Show only processes of this user.
    #[arg(long, value_name = "USER", value_hint = ValueHint::Username)]
    pub user: Option<String>,
    /// Show only these processes.
    #[arg(long, value_name = "PID", num_args = 1.., value_delimiter = ',', allow_negative_numbers = true,
          value_parser = parse_index)]
    pub pid: Vec<u32>,
    /// No signals and no environment screen.
    #[arg(long)]
    pub readonly: bool,
    /// No colour (also when NO_COLOR is set).
    #[arg(long, global = true)]
    pub no_color: bool,
    /// ASCII only: no box drawing, braille or block glyphs.
    #[arg(long, global = true)]
    pub ascii: bool,
    /// Colour theme: default, light or colorblind.
    #[arg(long, value_name = "NAME")]
    pub theme: Option<String>,
    /// Show the fleet found in this Prometheus server instead of this machine.
    #[arg(long, value_name = "URL", value_hint = ValueHint::Url)]
    pub prometheus: Option<String>,
    /// Show only the GPUs CUDA_VISIBLE_DEVICES makes visible (nvitop's -ov).
    #[arg(long)]
    pub only_visible: bool,
    /// Monitor: show only processes with a compute context (C or C+G).
    #[arg(long)]
    pub compute: bool,
    /// Monitor: show only processes with a graphics context (G or C+G).
    #[arg(long)]
    pub graphics: bool,
}

/// What `--once` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OnceFormat {
    Table,
    Json,
    Csv,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Watch for a while, print every finding with its evidence and remedy; the exit status says the worst.
    #[command(after_help = crate::exit::help())]
    Doctor {
        /// How long to watch, e.g. 30s, 2m (on --synthetic, without it: long enough for every rule judged over a
        /// minute or two; with --instant, without it: two samples). A watch shorter than every rule's window (30 s
        /// by default) judges none of the rules that need one and exits 3 unless something reached a warning.
        #[arg(long, default_value = "30s", value_parser = parse_duration, allow_hyphen_values = true)]
        duration: Duration,
        /// Check only the rules that judge each sample (gpu-errors: Xid, ECC, a lost GPU; driver-sanity,
        /// persistence-off, mig-active, visibility, numa-misplaced): a short watch of a healthy machine exits 0.
        /// Without --duration it watches two samples, not 30 s.
        #[arg(long)]
        instant: bool,
        /// Colour the severities: auto (only when stdout is a terminal), always or never.
        #[arg(long, value_enum, default_value_t = ColorWhen::Auto)]
        color: ColorWhen,
        /// Let findings that held during the window but cleared by its end count in the exit code.
        #[arg(long)]
        count_cleared: bool,
    },
    /// A reproducibility record of the machine and its steady state (Markdown, or --json).
    Report {
        /// How long to watch, e.g. 10m.
        #[arg(long, default_value = "10m", value_parser = parse_duration, allow_hyphen_values = true)]
        duration: Duration,
    },
    /// Serve Prometheus metrics with dcgm-exporter's names on /metrics.
    Export {
        /// Address to listen on (HOST:PORT; a name such as localhost:9400 is looked up). Loopback by default;
        /// give 0.0.0.0:9400 to serve the network (/metrics has no authentication).
        #[arg(long, env = "GPUSIGHT_LISTEN", default_value = "127.0.0.1:9400", value_parser = parse_listen)]
        listen: std::net::SocketAddr,
        /// TLS and basic authentication from a Prometheus web configuration file (the exporter-toolkit format
        /// node_exporter reads: tls_server_config, basic_auth_users, http_server_config.headers).
        #[arg(long = "web.config.file", value_name = "FILE", value_hint = ValueHint::FilePath, env = "GPUSIGHT_WEB_CONFIG_FILE")]
        web_config_file: Option<PathBuf>,
    },
    /// Probe a running exporter's /healthz and exit 0 (healthy) or 1 (unhealthy or unreachable): a container
    /// HEALTHCHECK without curl.
    Healthcheck {
        /// The URL to probe (default: http://127.0.0.1:PORT/healthz with the port of GPUSIGHT_LISTEN, else 9400;
        /// https when the web configuration file has TLS).
        #[arg(long, value_name = "URL", value_hint = ValueHint::Url)]
        url: Option<String>,
        /// The exporter's web configuration file: with TLS, probe over https and trust exactly its certificate.
        #[arg(long = "web.config.file", value_name = "FILE", value_hint = ValueHint::FilePath, env = "GPUSIGHT_WEB_CONFIG_FILE")]
        web_config_file: Option<PathBuf>,
        /// How long to wait for the answer, e.g. 3s.
        #[arg(long, default_value = "3s", value_parser = parse_duration)]
        timeout: Duration,
    },
    /// Check the config file.
    Config {
        #[command(subcommand)]
        action: ConfigAction,
    },
    /// Watch several machines at once over the system's ssh: each runs `gpusight --record - --headless` and
    /// streams its samples back; the fleet view shows them live (`--once`: one table per host; `--doctor`: one
    /// verdict per host).
    #[command(after_help = format!("{SSH_HELP}\n\n{}", crate::exit::help()))]
    Ssh(SshArgs),
    /// Print shell completions for bash, zsh, fish, elvish or powershell.
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff).
    Man,
}

/// `gpusight ssh`'s examples.
const SSH_HELP: &str = "Hosts: names, Slurm hostlists (node[01-08,12], rack[1-2]-n[1-3], a,b[1-2]), --hostfile FILE, or \
$SLURM_JOB_NODELIST when none is given. ssh runs with -T -o BatchMode=yes (no password prompts: use keys or an agent) \
-o ConnectTimeout=N. See docs/ssh.md.\n\n--doctor exits with the worst host's status: critical (2), then \
unknown (3: a host that sent nothing, or whose watch was too short for any rule that needs a window), then warning \
(1), then 0.\n\nExamples:\n  gpusight ssh node[01-04]\n  gpusight ssh --list \
'gpu[1-2]-n[01-03]'\n  gpusight ssh --once node01,node02\n  gpusight ssh --doctor --duration 1m node[01-08]";

/// `gpusight ssh`'s flags.
#[derive(Debug, Args, Clone, Default)]
pub struct SshArgs {
    /// Hosts or Slurm hostlist expressions (default: $SLURM_JOB_NODELIST).
    #[arg(value_name = "HOSTS", value_hint = ValueHint::Hostname)]
    pub hosts: Vec<String>,
    /// Read hosts from FILE: one host (or hostlist expression) a line, `#` comments.
    #[arg(long, value_name = "FILE", value_hint = ValueHint::FilePath)]
    pub hostfile: Option<PathBuf>,
    /// Print the expanded hosts, one a line, and connect to none.
    #[arg(long)]
    pub list: bool,
    /// Print one table per host once each has sent two samples (or the deadline passed), then exit.
    #[arg(short = '1', long, conflicts_with = "list")]
    pub once: bool,
    /// Watch every host for --duration, then print one doctor verdict per host; the exit status is the worst.
    #[arg(long, conflicts_with_all = ["list", "once"])]
    pub doctor: bool,
    /// With --doctor: how long to watch, e.g. 30s, 2m (with --instant, without it: two samples). A host watched
    /// shorter than every rule's window (30 s by default) is unknown (3) unless something reached a warning.
    #[arg(long, default_value = "30s", value_parser = parse_duration, requires = "doctor")]
    pub duration: Duration,
    /// With --doctor: check only the rules that judge each sample, as `doctor --instant` does.
    #[arg(long, requires = "doctor")]
    pub instant: bool,
    /// Seconds ssh waits for each connection (ssh's ConnectTimeout).
    #[arg(long, value_name = "SECONDS", default_value = "10", value_parser = clap::value_parser!(u64).range(1..=600))]
    pub connect_timeout: u64,
    /// An ssh option, passed as `-o OPTION` (e.g. `Port=2222`, `User=alice`); may be given again.
    #[arg(long, value_name = "OPTION")]
    pub ssh_option: Vec<String>,
    /// An ssh config file, passed as `-F FILE`.
    #[arg(long, value_name = "FILE", value_hint = ValueHint::FilePath)]
    pub ssh_config: Option<PathBuf>,
    /// The gpusight binary on the hosts (default: `gpusight` on the remote PATH).
    #[arg(long, value_name = "PATH", default_value = "gpusight")]
    pub remote_gpusight: String,
    /// The whole remote command instead (it must write a recording to stdout, as
    /// `gpusight --record - --headless --exit-on-stdin-eof` does).
    #[arg(long, value_name = "COMMAND", conflicts_with = "remote_gpusight")]
    pub remote_command: Option<String>,
    /// No signals to remote processes.
    #[arg(long)]
    pub readonly: bool,
}

/// What `gpusight config` does.
#[derive(Debug, Subcommand)]
pub enum ConfigAction {
    /// Check a config file strictly: exit 1 naming every unknown key or the first bad value, 0 when it is
    /// clean (other commands warn about unknown keys and go on).
    Check {
        /// The file (default: --config, else the platform path).
        file: Option<PathBuf>,
    },
}

/// When `doctor` colours its output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ColorWhen {
    /// Only when stdout is a terminal (and neither --no-color nor NO_COLOR says otherwise).
    Auto,
    Always,
    Never,
}

/// Parses `30s`, `10m`, `1h`, `500ms` or a plain number of seconds.
///
/// # Errors
/// Text that is not a duration, phrased for a person.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    if text.starts_with('-') {
        return Err(format!("'{text}' is negative: a duration is more than 0, e.g. 30s, 10m or 1h"));
    }
    let split = text.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let value: f64 = number.parse().map_err(|_| format!("'{text}' is not a duration; try 30s, 10m or 1h"))?;
    let seconds = match unit.trim() {
        "" | "s" => value,
        "ms" => value / 1000.0,
        "m" | "min" => value * 60.0,
        "h" => value * 3600.0,
        other => return Err(format!("unknown unit '{other}' in '{text}'; use ms, s, m or h")),
    };
    if !seconds.is_finite() || seconds <= 0.0 || seconds > 7.0 * 86_400.0 {
        return Err(format!("'{}' is out of range (more than 0, at most 7 days)", crate::text::echo(text)));
    }
    Ok(Duration::from_secs_f64(seconds))
}

/// Parses `--at`: a time from the start, as plain seconds (`90`, `2.5`) or a duration of one or more parts
/// (`90s`, `2m`, `1m30s`, `1h2m`, `500ms`); 0 is the start. Returns seconds.
///
/// # Errors
/// Text that is not such a time, or a negative one, phrased for a person.
pub fn parse_at(text: &str) -> Result<f64, String> {
    let text = text.trim();
    let bad = || {
        let text = crate::text::echo(text);
        format!("--at {text}: give the seconds from the start, 0 or more (or a time such as 90s, 2m, 1m30s)")
    };
    if let Ok(seconds) = text.parse::<f64>() {
        // `inf` is past any end: a recording's last frame.
        return if seconds >= 0.0 { Ok(seconds) } else { Err(bad()) };
    }
    if text.is_empty() {
        return Err(bad());
    }
    let mut rest = text;
    let mut seconds = 0.0;
    while !rest.is_empty() {
        let split = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).ok_or_else(bad)?;
        let (number, tail) = rest.split_at(split);
        let value: f64 = number.parse().map_err(|_| bad())?;
        let unit_len = tail.find(|c: char| c.is_ascii_digit() || c == '.').unwrap_or(tail.len());
        let (unit, tail) = tail.split_at(unit_len);
        seconds += value
            * match unit {
                "h" => 3600.0,
                "m" | "min" => 60.0,
                "s" => 1.0,
                "ms" => 0.001,
                _ => return Err(bad()),
            };
        rest = tail;
    }
    if seconds.is_finite() { Ok(seconds) } else { Err(bad()) }
}

/// Parses a GPU index or a PID, saying plainly what a negative number or a word is not.
///
/// # Errors
/// Anything but a whole number from 0 to 4294967295.
pub fn parse_index(text: &str) -> Result<u32, String> {
    let text = text.trim();
    if text.starts_with('-') {
        return Err(format!("'{text}' is negative: GPU indices and PIDs are 0 or more"));
    }
    text.parse().map_err(|_| format!("'{text}' is not a whole number"))
}

/// Parses `--listen`: `HOST:PORT` with an address (`127.0.0.1:9400`, `[::1]:9400`) or a name that is looked up
/// (`localhost:9400`; the first address it gives is used), or a scoped IPv6 address (`[fe80::1%eth0]:9400`, the
/// scope an interface name or number).
///
/// # Errors
/// No port, a port out of range, a name that does not resolve, or a scope that names no interface.
pub fn parse_listen(text: &str) -> Result<std::net::SocketAddr, String> {
    use std::net::ToSocketAddrs as _;
    if let Ok(addr) = text.parse() {
        return Ok(addr);
    }
    if let Some(addr) = parse_scoped_v6(text) {
        return addr;
    }
    let Some((host, port)) = text.rsplit_once(':') else {
        return Err(format!("'{text}' has no port: write HOST:PORT, e.g. 127.0.0.1:9400 or localhost:9400"));
    };
    let port: u16 = port.parse().map_err(|_| format!("'{port}' in '{text}' is not a port (0 to 65535)"))?;
    let mut addrs: Vec<std::net::SocketAddr> =
        (host, port).to_socket_addrs().map_err(|e| format!("cannot resolve '{host}' in '{text}': {e}"))?.collect();
    // Prefer IPv4, as the default does, when a name has both.
    addrs.sort_by_key(std::net::SocketAddr::is_ipv6);
    addrs.first().copied().ok_or_else(|| format!("'{host}' in '{text}' has no address"))
}

/// `[ADDR%SCOPE]:PORT`, a link-local IPv6 address with its interface; `None` when `text` is not of that form.
fn parse_scoped_v6(text: &str) -> Option<Result<std::net::SocketAddr, String>> {
    let (inside, port) = text.strip_prefix('[')?.split_once("]:")?;
    let (addr, scope) = inside.split_once('%')?;
    let addr: std::net::Ipv6Addr = addr.parse().ok()?;
    let Ok(port) = port.parse::<u16>() else {
        return Some(Err(format!("'{port}' in '{text}' is not a port (0 to 65535)")));
    };
    let scope_id = match scope.parse::<u32>() {
        Ok(number) => Some(number),
        // The interface's index as the kernel lists it (no name with a '/' is an interface).
        Err(_) if !scope.contains('/') && !scope.starts_with('.') => {
            std::fs::read_to_string(format!("/sys/class/net/{scope}/ifindex")).ok().and_then(|i| i.trim().parse().ok())
        }
        Err(_) => None,
    };
    Some(match scope_id {
        Some(scope_id) if scope_id > 0 => Ok(std::net::SocketAddrV6::new(addr, port, 0, scope_id).into()),
        _ => Err(format!("'{scope}' in '{text}' names no network interface (see `ip link`)")),
    })
}

/// Parses the process's arguments (the program name first), noting whether `--duration` was given.
///
/// # Errors
/// clap's error for a command line that does not parse, or for `--help` and `--version` (which print and exit 0).
pub fn parse(args: &[String]) -> Result<Cli, clap::Error> {
    use clap::{CommandFactory as _, FromArgMatches as _};
    let matches = Cli::command().try_get_matches_from(args)?;
    let mut cli = Cli::from_arg_matches(&matches)?;
    cli.duration_given = matches.subcommand().is_some_and(|(_, sub)| {
        sub.try_get_raw("duration").is_ok()
            && sub.value_source("duration") == Some(clap::parser::ValueSource::CommandLine)
    });
    Ok(cli)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scoped_ipv6_listen_address_takes_an_interface_name_or_number() {
        let by_name = parse_listen("[fe80::1%lo]:9400").map(|a| (a.port(), a.to_string()));
        assert_eq!(by_name, Ok((9400, "[fe80::1%1]:9400".to_owned())), "lo is interface 1");
        assert_eq!(parse_listen("[fe80::1%1]:9400").map(|a| a.to_string()), Ok("[fe80::1%1]:9400".to_owned()));
        let unknown = parse_listen("[fe80::1%nosuchif0]:9400").unwrap_err();
        assert!(unknown.contains("'nosuchif0'") && unknown.contains("no network interface"), "{unknown}");
        assert!(parse_listen("[fe80::1%../x]:9400").is_err());
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration("10m"), Ok(Duration::from_mins(10)));
        assert_eq!(parse_duration("1.5"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert!(parse_duration("soon").is_err());
        assert!(parse_duration("5y").is_err());
        assert!(parse_duration("0s").is_err());
    }

    #[test]
    fn at_takes_seconds_and_durations() {
        assert_eq!(parse_at("90"), Ok(90.0));
        assert_eq!(parse_at("2.5"), Ok(2.5));
        assert_eq!(parse_at("0"), Ok(0.0));
        assert_eq!(parse_at("90s"), Ok(90.0));
        assert_eq!(parse_at("1m"), Ok(60.0));
        assert_eq!(parse_at("1m30s"), Ok(90.0));
        assert_eq!(parse_at("1h2m3s"), Ok(3723.0));
        assert_eq!(parse_at("500ms"), Ok(0.5));
        for bad in ["-5", "NaN", "-inf", "soon", "1y", "m", "1m30", ""] {
            assert!(parse_at(bad).is_err_and(|e| e.contains("0 or more")), "{bad}");
        }
    }

    #[test]
    fn the_command_line_parses() {
        let cli = Cli::try_parse_from(["gpusight", "--demo", "--once", "--json"]).expect("parse");
        assert!(cli.data.demo && cli.view.once && cli.view.json);
        let cli =
            Cli::try_parse_from(["gpusight", "doctor", "--duration", "60s", "--replay", "x.jsonl"]).expect("parse");
        assert!(matches!(cli.command, Some(Command::Doctor { duration, .. }) if duration == Duration::from_mins(1)));
        let cli = Cli::try_parse_from(["gpusight", "doctor", "--color", "never", "--count-cleared"]).expect("parse");
        assert!(matches!(cli.command, Some(Command::Doctor { color: ColorWhen::Never, count_cleared: true, .. })));
        assert!(Cli::try_parse_from(["gpusight", "doctor", "--color", "sometimes"]).is_err());
        assert!(Cli::try_parse_from(["gpusight", "--demo", "--replay", "x"]).is_err());
        assert!(Cli::try_parse_from(["gpusight", "--headless"]).is_err());
    }
}
