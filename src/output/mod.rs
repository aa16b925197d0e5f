//! One-shot outputs: the `--once` table (nvidia-smi/nvitop style) and the versioned JSON document. Both read
//! the same `Pipeline` as the monitor.

pub mod format;
pub mod json;
pub mod table;
