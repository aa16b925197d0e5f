//! Reading more about one process on demand (its CUDA libraries, its environment). The app asks through this
//! trait so tests use a fake and the binary plugs in the real reader from `host`.

use std::fmt;

/// Name/value pairs, or why they could not be read (phrased for a person).
pub type Pairs = Result<Vec<(String, String)>, String>;

/// Reads details of a process that the table does not carry.
pub trait ProcessInspector: fmt::Debug + Send {
    /// The CUDA libraries the process has mapped, as (library, version or path).
    fn cuda_libraries(&self, pid: u32) -> Pairs;
    /// The process's environment variables, sorted by name.
    fn environment(&self, pid: u32) -> Pairs;
}

/// An inspector that can read nothing; used until a real one is plugged in.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoInspector;

impl ProcessInspector for NoInspector {
    fn cuda_libraries(&self, _pid: u32) -> Pairs {
        Err("reading the CUDA libraries is not available in this build".to_owned())
    }

    fn environment(&self, _pid: u32) -> Pairs {
        Err("reading the environment is not available in this build".to_owned())
    }
}

/// The inspector of a synthetic or recorded machine: its processes do not run here, so a PID it shows may be
/// any local process's; nothing is read from `/proc`.
#[derive(Debug, Clone, Copy)]
pub struct NotOnThisMachine {
    /// "synthetic" or "recorded".
    pub what: &'static str,
}

impl ProcessInspector for NotOnThisMachine {
    fn cuda_libraries(&self, _pid: u32) -> Pairs {
        Err(format!("not available for a {} process: it does not run on this machine", self.what))
    }

    fn environment(&self, _pid: u32) -> Pairs {
        Err(format!("not available for a {} process: it does not run on this machine", self.what))
    }
}

/// The real inspector: reads `/proc/PID/maps` and `/proc/PID/environ` through `host`.
#[derive(Debug, Clone, Default)]
pub struct HostInspector {
    pub root: crate::host::HostRoot,
}

impl ProcessInspector for HostInspector {
    fn cuda_libraries(&self, pid: u32) -> Pairs {
        let libraries = crate::host::cuda_libraries(&self.root, pid)?;
        Ok(libraries.into_iter().map(|lib| (lib.name, lib.version.unwrap_or(lib.path))).collect())
    }

    fn environment(&self, pid: u32) -> Pairs {
        crate::host::environment(&self.root, pid)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_synthetic_or_recorded_process_reads_nothing_from_proc() {
        // Our own PID: a real process whose environment the host inspector can read.
        let own = std::process::id();
        assert!(HostInspector::default().environment(own).is_ok());
        for what in ["synthetic", "recorded"] {
            let inspector = NotOnThisMachine { what };
            let said = inspector.environment(own).expect_err("nothing read");
            assert_eq!(said, format!("not available for a {what} process: it does not run on this machine"));
            assert!(inspector.cuda_libraries(own).is_err());
        }
    }
}
