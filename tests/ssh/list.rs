//! `gpusight ssh --list`: hosts expanded as Slurm expands them, and bad expressions refused with a reason.

use crate::common::{gpusight, stderr, stdout};

#[test]
fn list_expands_hostlists_hostfiles_and_the_slurm_nodelist() {
    let out = gpusight(&["ssh", "--list", "node[01-03,12]", "rack[1-2]-n[1-2]", "a,b"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stdout(&out).lines().collect::<Vec<_>>(),
        ["node01", "node02", "node03", "node12", "rack1-n1", "rack1-n2", "rack2-n1", "rack2-n2", "a", "b"]
    );
    let dir = crate::common::temp_dir();
    let file = dir.path().join("hosts");
    std::fs::write(&file, "# rack 1\nnode[08-10]\n\nnode01  # login\n").unwrap();
    let out = gpusight(&["ssh", "--list", "--hostfile", file.to_str().unwrap()]);
    assert_eq!(stdout(&out).lines().collect::<Vec<_>>(), ["node08", "node09", "node10", "node01"]);
    let out = crate::common::command(&["ssh", "--list"]).env("SLURM_JOB_NODELIST", "gpu[1-2]").output().unwrap();
    assert_eq!(stdout(&out).lines().collect::<Vec<_>>(), ["gpu1", "gpu2"]);
}

#[test]
fn bad_hostlists_and_no_hosts_are_refused_with_a_reason() {
    let out = gpusight(&["ssh", "--list", "gpu-[a-c]"]);
    assert_eq!(out.status.code(), Some(3));
    assert!(stderr(&out).contains("numeric ranges only"), "{}", stderr(&out));
    let out = gpusight(&["ssh", "--list", "node[1-3"]);
    assert!(stderr(&out).contains("without its ']'"), "{}", stderr(&out));
    let out = crate::common::command(&["ssh"]).env_remove("SLURM_JOB_NODELIST").output().unwrap();
    assert_eq!(out.status.code(), Some(3));
    assert!(stderr(&out).contains("no hosts"), "{}", stderr(&out));
    let out = gpusight(&["ssh", "--synthetic", "mixed", "hostA"]);
    assert!(stderr(&out).contains("do not apply"), "{}", stderr(&out));
}

/// The remote side: `--record - --headless --exit-on-stdin-eof` ends, flushing, when its standard input ends,
/// as it does when the ssh session that runs it goes away.
#[test]
fn the_remote_recorder_exits_when_its_stdin_ends() {
    use std::io::Read as _;
    let mut child = crate::common::command(&[
        "--synthetic",
        "mixed:1",
        "--interval",
        "0.2",
        "--record",
        "-",
        "--headless",
        "--exit-on-stdin-eof",
    ])
    .stdin(std::process::Stdio::piped())
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::null())
    .spawn()
    .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut header = [0_u8; 64];
    stdout.read_exact(&mut header).unwrap();
    assert!(String::from_utf8_lossy(&header).contains("gpusight-recording"));
    drop(child.stdin.take());
    let status = crate::common::poll("the recorder exits", std::time::Duration::from_secs(10), || {
        child.try_wait().map_err(|e| e.to_string())?.ok_or_else(|| "still running".to_owned())
    });
    assert!(status.success(), "{status:?}");
}

#[test]
fn json_without_once_or_doctor_is_refused() {
    let out = gpusight(&["ssh", "--json", "hostA"]);
    assert_eq!(out.status.code(), Some(3));
    assert!(stderr(&out).contains("add one of them"), "{}", stderr(&out));
}
