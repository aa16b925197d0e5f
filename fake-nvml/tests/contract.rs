//! NVML's contract, enforced: each case runs in a child process (this test binary again, one ignored test) and
//! must end in SIGABRT with the "CONTRACT VIOLATION" line, or, for the healthy neighbours, pass.
#![allow(clippy::disallowed_methods, reason = "a test runs its own binary as a child")]

use std::os::unix::process::ExitStatusExt;
use std::process::Command;
use std::sync::{Arc, Barrier, Mutex};

use gpusight_fake_nvml::api::device::nvmlDeviceGetPowerUsage;
use gpusight_fake_nvml::api::gpm::{nvmlGpmSampleAlloc, nvmlGpmSampleFree, nvmlGpmSampleGet};
use gpusight_fake_nvml::api::system::{
    nvmlDeviceGetCount_v2, nvmlDeviceGetHandleByIndex_v2, nvmlInit_v2, nvmlShutdown,
};
use nvml_wrapper_sys::bindings::{nvmlDevice_t, nvmlGpmSample_t};

/// Runs one ignored test of this binary in a child and returns (signal, stderr).
fn child(name: &str) -> (Option<i32>, String) {
    let exe = std::env::current_exe().expect("test binary");
    let out = Command::new(exe)
        .args(["--exact", name, "--ignored", "--test-threads=1", "--nocapture"])
        .env("GPUSIGHT_FAKE_NVML", "hgx8-mig")
        .output()
        .expect("run child");
    (out.status.signal(), String::from_utf8_lossy(&out.stderr).into_owned())
}

fn assert_violation(name: &str, what: &str) {
    let (signal, stderr) = child(name);
    assert_eq!(signal, Some(libc_sigabrt()), "{name} must abort; stderr:\n{stderr}");
    assert!(stderr.contains("fake NVML: CONTRACT VIOLATION:"), "{name}: {stderr}");
    assert!(stderr.contains(what), "{name} should say {what:?}: {stderr}");
}

const fn libc_sigabrt() -> i32 {
    6
}

fn handle(index: u32) -> nvmlDevice_t {
    let mut h: nvmlDevice_t = std::ptr::null_mut();
    // SAFETY: a valid out pointer.
    assert_eq!(unsafe { nvmlDeviceGetHandleByIndex_v2(index, &raw mut h) }, 0);
    h
}

/// Takes `rounds` GPM samples of GPU `index` from this thread, each round under `lock` when one is given.
fn sample_rounds(index: u32, rounds: u32, lock: Option<&Mutex<()>>) {
    let h = handle(index);
    for _ in 0..rounds {
        let _held = lock.map(|l| l.lock().expect("lock"));
        let mut s: nvmlGpmSample_t = std::ptr::null_mut();
        // SAFETY: valid out pointers; the sample is freed once.
        unsafe {
            assert_eq!(nvmlGpmSampleAlloc(&raw mut s), 0);
            assert_eq!(nvmlGpmSampleGet(h, s), 0);
            assert_eq!(nvmlGpmSampleFree(s), 0);
        }
    }
}

fn two_threads(gpu_a: u32, gpu_b: u32, serialise: bool) {
    assert_eq!(nvmlInit_v2(), 0);
    let lock = Arc::new(Mutex::new(()));
    let start = Arc::new(Barrier::new(2));
    let threads: Vec<_> = [gpu_a, gpu_b]
        .into_iter()
        .map(|gpu| {
            let (lock, start) = (Arc::clone(&lock), Arc::clone(&start));
            std::thread::spawn(move || {
                start.wait();
                sample_rounds(gpu, 200, serialise.then_some(&*lock));
            })
        })
        .collect();
    for t in threads {
        t.join().expect("thread");
    }
}

#[test]
#[ignore = "run as a child by gpm_calls_overlapping_on_one_gpu_abort"]
fn child_gpm_overlapping_on_one_gpu() {
    two_threads(0, 0, false);
}

#[test]
#[ignore = "run as a child by gpm_calls_overlapping_on_two_gpus_abort"]
fn child_gpm_overlapping_on_two_gpus() {
    two_threads(0, 1, false);
}

#[test]
#[ignore = "run as a child by gpm_calls_one_at_a_time_pass"]
fn child_gpm_one_at_a_time() {
    two_threads(0, 1, true);
}

#[test]
#[ignore = "run as a child by a_call_before_init_aborts"]
fn child_call_before_init() {
    let mut n = 0;
    // SAFETY: a valid out pointer.
    unsafe { nvmlDeviceGetCount_v2(&raw mut n) };
}

#[test]
#[ignore = "run as a child by a_handle_after_shutdown_aborts"]
fn child_handle_after_shutdown() {
    assert_eq!(nvmlInit_v2(), 0);
    let h = handle(0);
    assert_eq!(nvmlShutdown(), 0);
    let mut mw = 0;
    // SAFETY: a valid out pointer.
    unsafe { nvmlDeviceGetPowerUsage(h, &raw mut mw) };
}

#[test]
fn gpm_calls_overlapping_on_one_gpu_abort() {
    assert_violation("child_gpm_overlapping_on_one_gpu", "on the same GPU");
}

#[test]
fn gpm_calls_overlapping_on_two_gpus_abort() {
    assert_violation("child_gpm_overlapping_on_two_gpus", "on another GPU");
}

#[test]
fn gpm_calls_one_at_a_time_pass() {
    let (signal, stderr) = child("child_gpm_one_at_a_time");
    assert_eq!(signal, None, "serialised GPM calls must pass: {stderr}");
    assert!(!stderr.contains("CONTRACT VIOLATION"), "{stderr}");
}

#[test]
fn a_call_before_init_aborts() {
    assert_violation("child_call_before_init", "before nvmlInit");
}

#[test]
fn a_handle_after_shutdown_aborts() {
    assert_violation("child_handle_after_shutdown", "after nvmlShutdown");
}
