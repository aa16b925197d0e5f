//! `gpusight ssh HOSTS…`: several machines at once, each streaming its samples over the system's OpenSSH client.
//!
//! - [`hostlist`]: Slurm hostlist expressions and host files, expanded (pure).
//! - [`ssh`]: the ssh child processes: the one module allowed to run a program.
//! - [`host`]: one reader thread per host: the stream read within the recording reader's bounds, a pipeline per
//!   host, owned updates sent to the UI thread; the host's link state (connecting, up, stale, lost, bad stream).
//! - [`nodes`]: a host's pipeline as a node of the fleet view (`fleet/`), which draws them.

pub mod host;
pub mod hostlist;
pub mod nodes;
pub mod ssh;
