//! `gpusight ssh` end to end with a real OpenSSH server: the test starts its own `sshd` on a free loopback port
//! (its own host key, an authorized key it made, as the current user), and an ssh config with host aliases whose
//! remote gpusight runs a synthetic machine each. Without `/usr/sbin/sshd` the tests are skipped (with a line
//! saying why) outside CI and fail in CI (`CI` set): `.ci/install-sshd.sh` installs it.

#[path = "../common/mod.rs"]
mod common;

mod end_to_end;
mod list;
mod sshd;
