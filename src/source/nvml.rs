//! Live GPU readings through NVML (nvml-wrapper), in tiers, with per-GPU workers so one hung GPU does not stop
//! the others.
