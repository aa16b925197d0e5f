//! Xid and ECC events: the NVML event thread and the kernel log (`/dev/kmsg`) parser.
