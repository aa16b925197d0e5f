//! A fake `libnvidia-ml.so.1` for testing gpusight without a GPU.
//!
//! Built as a cdylib, it exports with NVML's C ABI (the struct layouts of nvml-wrapper-sys's bindings) every NVML
//! entry point gpusight and nvml-wrapper call on gpusight's paths. Its machine comes from a TOML scenario named by
//! `GPUSIGHT_FAKE_NVML` (a path, or a built-in name: `h200`, `hgx8-mig`, `nvl72`, `consumer`); docs/fake-nvml.md
//! describes the format. Load it with `GPUSIGHT_NVML_LIB=/path/to/libgpusight_fake_nvml.so`.
//!
//! An entry point it does not export fails in nvml-wrapper as a missing symbol; one it exports but a scenario does
//! not describe answers `NVML_ERROR_NOT_SUPPORTED`. Nothing here panics across the C boundary: every body runs
//! under `catch_unwind` and a panic answers `NVML_ERROR_UNKNOWN`.
//!
//! It enforces NVML's contract and fails loudly (a line "fake NVML: CONTRACT VIOLATION: ..." on stderr, then
//! `abort()`) where the real library would misbehave: GPM sample or metrics calls overlapping on one GPU (or on
//! any two GPUs, unless the scenario allows it: real libnvidia-ml crashed when they did), and any call before
//! `nvmlInit` or after the last `nvmlShutdown`.
//!
//! # Safety
//! Every exported function is `unsafe extern "C"` with NVML's own contract: handles are ones this library gave
//! out, and output pointers are null (answered with `NVML_ERROR_INVALID_ARGUMENT`) or valid for writes of the
//! type and length NVML documents.

pub mod api;
pub mod machine;
pub mod scenario;

use std::ffi::c_char;
use std::panic::{AssertUnwindSafe, catch_unwind};

use nvml_wrapper_sys::bindings::nvmlReturn_t;

/// NVML's return codes (`nvmlReturn_t`).
pub mod ret {
    use nvml_wrapper_sys::bindings::nvmlReturn_t;
    pub const SUCCESS: nvmlReturn_t = 0;
    pub const UNINITIALIZED: nvmlReturn_t = 1;
    pub const INVALID_ARGUMENT: nvmlReturn_t = 2;
    pub const NOT_SUPPORTED: nvmlReturn_t = 3;
    pub const NO_PERMISSION: nvmlReturn_t = 4;
    pub const NOT_FOUND: nvmlReturn_t = 6;
    pub const INSUFFICIENT_SIZE: nvmlReturn_t = 7;
    pub const DRIVER_NOT_LOADED: nvmlReturn_t = 9;
    pub const TIMEOUT: nvmlReturn_t = 10;
    pub const GPU_IS_LOST: nvmlReturn_t = 15;
    pub const LIB_RM_VERSION_MISMATCH: nvmlReturn_t = 18;
    pub const UNKNOWN: nvmlReturn_t = 999;
}

/// Runs an entry point's body: its error, or success; a panic is `NVML_ERROR_UNKNOWN`, never an unwind into C.
pub(crate) fn guard(body: impl FnOnce() -> Result<(), nvmlReturn_t>) -> nvmlReturn_t {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => ret::SUCCESS,
        Ok(Err(code)) => code,
        Err(_) => ret::UNKNOWN,
    }
}

/// Writes an output; a null pointer is an invalid argument.
pub(crate) unsafe fn put<T>(out: *mut T, value: T) -> Result<(), nvmlReturn_t> {
    if out.is_null() {
        return Err(ret::INVALID_ARGUMENT);
    }
    // SAFETY: not null, and the caller passes a pointer valid for writes of T (NVML's contract).
    unsafe { out.write(value) };
    Ok(())
}

/// Writes a NUL-terminated string into a caller's buffer of `length` bytes.
pub(crate) unsafe fn put_str(out: *mut c_char, length: u32, text: &str) -> Result<(), nvmlReturn_t> {
    if out.is_null() {
        return Err(ret::INVALID_ARGUMENT);
    }
    let bytes = text.as_bytes();
    if bytes.len() + 1 > length as usize {
        return Err(ret::INSUFFICIENT_SIZE);
    }
    // SAFETY: the caller's buffer holds `length` bytes, and we write at most that many.
    unsafe {
        std::ptr::copy_nonoverlapping(bytes.as_ptr().cast::<c_char>(), out, bytes.len());
        out.add(bytes.len()).write(0);
    }
    Ok(())
}

/// Declares an exported device entry point: resolves the handle (playing the GPU's faults), then runs the body.
macro_rules! device_fn {
    ($name:ident($($arg:ident: $ty:ty),*) |$d:ident| $body:block) => {
        #[unsafe(no_mangle)]
        #[allow(unused_unsafe, clippy::missing_errors_doc)]
        pub unsafe extern "C" fn $name(
            device: nvml_wrapper_sys::bindings::nvmlDevice_t
            $(, $arg: $ty)*
        ) -> nvml_wrapper_sys::bindings::nvmlReturn_t {
            $crate::guard(|| {
                let $d = $crate::machine::device(stringify!($name), device)?;
                unsafe { $body }
            })
        }
    };
}
pub(crate) use device_fn;
