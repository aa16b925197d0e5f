//! One-shot outputs: the `--once` table and the versioned JSON document.
