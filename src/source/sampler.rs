//! The sampler thread: paces a source, sends owned snapshots over a channel, and a watchdog that notices when
//! a sample is late.
