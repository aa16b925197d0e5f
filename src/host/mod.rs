//! The host sampler: CPU, memory, load, PSI, and the GPU processes with their relatives, from procfs.
pub mod parse;
