//! The exported NVML entry points, by family.

pub mod device;
pub mod events;
pub mod gpm;
pub mod mig;
pub mod nvlink;
pub mod procs;
pub mod system;
