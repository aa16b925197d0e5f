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
