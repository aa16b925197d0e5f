//! Fuzzes the kernel-log Xid parser: a /dev/kmsg record and a bare NVRM message.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let _ = gpusight::source::xid::kmsg::parse_kmsg_record(&text);
    let _ = gpusight::source::xid::kmsg::parse_nvrm_message(&text);
    let _ = gpusight::source::xid::kmsg::parse_uptime_ms(&text);
});
