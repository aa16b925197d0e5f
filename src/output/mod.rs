//! One-shot outputs: the `--once` table (nvidia-smi/nvitop style), the versioned JSON document, CSV rows, and
//! the `--status` line. All read the same `Pipeline` as the monitor.

pub mod csv;
pub mod fit;
pub mod json;
pub mod status;
pub mod table;
