//! A throwaway OpenSSH server for the tests: `/usr/sbin/sshd -D -f CONFIG` on a free loopback port, a host key
//! and a client key made with `ssh-keygen` in a temp dir, and a client config (`-F`) with aliases:
//!
//! - `hostA` serves `--synthetic mixed:2`, `hostB` `--synthetic input-bound:1`, `hostC` `compute:1`;
//! - `garbage` sends a line that is not a recording;
//! - `denied` logs in as a user the server refuses, `refused` connects to a closed port.
//!
//! Every alias runs the remote command through a wrapper (`--remote-gpusight WRAPPER`) that writes its PID to
//! `DIR/ALIAS.pid` and then execs the test-built gpusight with the alias's scenario, so a test can kill one host's
//! remote gpusight or check that none is left. When `DIR/attach` holds `PID:START_TICKS`, the synthetic machine
//! lists that real process as a GPU process (`--synthetic-attach`), for the signal test.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods, reason = "test scaffolding")]

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::common::{BIN, KillOnDrop, free_port, poll, temp_dir};

pub const SSHD: &str = "/usr/sbin/sshd";

pub struct Sshd {
    _server: KillOnDrop,
    pub dir: tempfile::TempDir,
    pub port: u16,
}

/// The sshd binary, or `None` (and a line saying why) when it is not installed outside CI; in CI it must be.
pub fn sshd_binary() -> Option<PathBuf> {
    let path = PathBuf::from(SSHD);
    if path.is_file() && crate::common::find_program("ssh").is_some() {
        return Some(path);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "{SSHD} or ssh is missing: run .ci/install-sshd.sh (apt-get install openssh-server openssh-client)"
    );
    eprintln!("skipped: {SSHD} or ssh is not installed (Debian packages openssh-server, openssh-client)");
    None
}

fn keygen(path: &Path) {
    let status = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-f"])
        .arg(path)
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "ssh-keygen failed");
}

fn user() -> String {
    let output = Command::new("id").arg("-un").output().unwrap();
    String::from_utf8_lossy(&output.stdout).trim().to_owned()
}

/// The aliases and what each serves.
pub const ALIASES: [(&str, &str); 4] =
    [("hostA", "mixed:2"), ("hostB", "input-bound:1"), ("hostC", "compute:1"), ("garbage", "garbage")];

impl Sshd {
    /// Starts the server and waits until it accepts a session; `None` when sshd is not installed (outside CI).
    pub fn start() -> Option<Self> {
        let sshd = sshd_binary()?;
        let dir = temp_dir();
        let d = dir.path();
        keygen(&d.join("host_key"));
        keygen(&d.join("id"));
        std::fs::copy(d.join("id.pub"), d.join("authorized_keys")).unwrap();
        if rustix::process::geteuid().is_root() {
            // sshd started as root wants its privilege separation directory.
            let _ = std::fs::create_dir_all("/run/sshd");
        }
        let port = free_port();
        let config = format!(
            "Port {port}\nListenAddress 127.0.0.1\nHostKey {d}/host_key\nPidFile {d}/sshd.pid\n\
             AuthorizedKeysFile {d}/authorized_keys\nStrictModes no\nUsePAM no\nPasswordAuthentication no\n\
             KbdInteractiveAuthentication no\nPermitRootLogin prohibit-password\nAcceptEnv GPUSIGHT_TEST_*\n\
             LogLevel ERROR\nMaxStartups 200\nMaxSessions 200\n",
            d = d.display()
        );
        std::fs::write(d.join("sshd_config"), config).unwrap();
        let server = Command::new(sshd)
            .args(["-D", "-e", "-f"])
            .arg(d.join("sshd_config"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let sshd = Self { _server: KillOnDrop(server), dir, port };
        sshd.write_client_files();
        poll("sshd accepts a session", Duration::from_secs(20), || {
            let out = Command::new("ssh")
                .args(sshd.ssh_args())
                .args(["hostA", "true"])
                .output()
                .map_err(|e| e.to_string())?;
            if out.status.success() { Ok(()) } else { Err(String::from_utf8_lossy(&out.stderr).into_owned()) }
        });
        Some(sshd)
    }

    fn write_client_files(&self) {
        let d = self.dir.path();
        let mut config = String::new();
        for (alias, scenario) in ALIASES {
            let _ = write!(
                config,
                "Host {alias}\n  SetEnv GPUSIGHT_TEST_SCENARIO={scenario} GPUSIGHT_TEST_PIDFILE={d}/{alias}.pid\n",
                d = d.display()
            );
        }
        // Two aliases that fail: a user the server does not know (authentication refused) and a closed port.
        let closed = free_port();
        let _ = write!(config, "Host denied\n  User nosuchuser-gpusight\nHost refused\n  Port {closed}\n");
        let _ = write!(
            config,
            "Host *\n  HostName 127.0.0.1\n  Port {}\n  User {}\n  IdentityFile {}/id\n  IdentitiesOnly yes\n  \
             StrictHostKeyChecking no\n  UserKnownHostsFile /dev/null\n  LogLevel ERROR\n",
            self.port,
            user(),
            d.display()
        );
        std::fs::write(d.join("ssh_config"), config).unwrap();
        let wrapper = format!(
            "#!/bin/sh\necho $$ > \"$GPUSIGHT_TEST_PIDFILE\"\n\
             if [ -f {d}/attach ]; then set -- --synthetic-attach \"$(cat {d}/attach)\" \"$@\"; fi\n\
             if [ \"$GPUSIGHT_TEST_SCENARIO\" = garbage ]; then echo 'this is not a recording'; exec cat; fi\n\
             XDG_CONFIG_HOME=/nonexistent-gpusight-test-config XDG_RUNTIME_DIR=/nonexistent-gpusight-test-runtime \
             exec {BIN} --synthetic \"$GPUSIGHT_TEST_SCENARIO\" \"$@\"\n",
            d = d.display()
        );
        let path = d.join("gpusight-remote");
        std::fs::write(&path, wrapper).unwrap();
        let mut perms = std::fs::metadata(&path).unwrap().permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
        std::fs::set_permissions(&path, perms).unwrap();
    }

    /// `-F CONFIG`, for a plain `ssh`.
    pub fn ssh_args(&self) -> Vec<String> {
        vec![
            "-F".to_owned(),
            self.dir.path().join("ssh_config").display().to_string(),
            "-o".into(),
            "BatchMode=yes".into(),
        ]
    }

    /// The flags `gpusight ssh` needs to reach the aliases through the wrapper, sampling every 0.2 s.
    pub fn flags(&self) -> Vec<String> {
        let d = self.dir.path();
        vec![
            "--ssh-config".to_owned(),
            d.join("ssh_config").display().to_string(),
            "--remote-gpusight".to_owned(),
            d.join("gpusight-remote").display().to_string(),
            "--interval".to_owned(),
            "0.2".to_owned(),
            "--connect-timeout".to_owned(),
            "5".to_owned(),
        ]
    }

    /// The PID the wrapper of `alias` wrote (its remote gpusight), once it has written it.
    pub fn remote_pid(&self, alias: &str) -> i32 {
        let path = self.dir.path().join(format!("{alias}.pid"));
        poll(&format!("{alias}'s remote PID"), Duration::from_secs(20), || {
            std::fs::read_to_string(&path).ok().and_then(|t| t.trim().parse().ok()).ok_or_else(|| "not yet".to_owned())
        })
    }

    /// Whether a remote gpusight of `alias` still runs (its PID alive and still a gpusight recorder).
    pub fn remote_running(&self, alias: &str) -> bool {
        let Ok(text) = std::fs::read_to_string(self.dir.path().join(format!("{alias}.pid"))) else { return false };
        let pid = text.trim();
        std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| String::from_utf8_lossy(&c).contains("--record"))
    }
}
