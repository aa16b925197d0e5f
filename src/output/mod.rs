//! One-shot outputs: the `--once` table (nvidia-smi/nvitop style), the versioned JSON document, CSV rows, and
//! the `--status` line. All read the same `Pipeline` as the monitor; the `--status` line can also come from the
//! state file a watcher leaves ([`status_file`]).

pub mod csv;
pub mod fit;
pub mod json;
pub mod status;
pub mod status_file;
pub mod table;
