//! Init, shutdown, error strings, the driver's versions and device handles by index.

use std::ffi::{c_char, c_int, c_uint};

use nvml_wrapper_sys::bindings::{nvmlDevice_t, nvmlReturn_t};

use crate::machine::{self, live};
use crate::{guard, put, put_str, ret};

#[unsafe(no_mangle)]
pub extern "C" fn nvmlInit_v2() -> nvmlReturn_t {
    guard(|| match machine::init() {
        ret::SUCCESS => Ok(()),
        e => Err(e),
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn nvmlInitWithFlags(_flags: c_uint) -> nvmlReturn_t {
    nvmlInit_v2()
}

#[unsafe(no_mangle)]
pub extern "C" fn nvmlInit() -> nvmlReturn_t {
    nvmlInit_v2()
}

#[unsafe(no_mangle)]
pub extern "C" fn nvmlShutdown() -> nvmlReturn_t {
    guard(|| match machine::shutdown() {
        ret::SUCCESS => Ok(()),
        e => Err(e),
    })
}

/// NVML's message for a return code (static strings, as the real library's are).
#[unsafe(no_mangle)]
pub extern "C" fn nvmlErrorString(result: nvmlReturn_t) -> *const c_char {
    let text: &'static std::ffi::CStr = match result {
        ret::SUCCESS => c"Success",
        ret::UNINITIALIZED => c"Uninitialized",
        ret::INVALID_ARGUMENT => c"Invalid Argument",
        ret::NOT_SUPPORTED => c"Not Supported",
        ret::NO_PERMISSION => c"Insufficient Permissions",
        ret::NOT_FOUND => c"Not Found",
        ret::INSUFFICIENT_SIZE => c"Insufficient Size",
        ret::DRIVER_NOT_LOADED => c"Driver Not Loaded",
        ret::TIMEOUT => c"Timeout",
        ret::GPU_IS_LOST => c"GPU is lost",
        ret::LIB_RM_VERSION_MISMATCH => c"RM has detected an NVML/RM version mismatch",
        _ => c"Unknown Error",
    };
    text.as_ptr()
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlSystemGetDriverVersion(version: *mut c_char, length: c_uint) -> nvmlReturn_t {
    guard(|| unsafe { put_str(version, length, &live("nvmlSystemGetDriverVersion").scenario.driver_version) })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlSystemGetNVMLVersion(version: *mut c_char, length: c_uint) -> nvmlReturn_t {
    guard(|| unsafe { put_str(version, length, &live("nvmlSystemGetNVMLVersion").scenario.nvml_version) })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlSystemGetCudaDriverVersion_v2(version: *mut c_int) -> nvmlReturn_t {
    guard(|| unsafe { put(version, live("nvmlSystemGetCudaDriverVersion_v2").scenario.cuda_driver_version) })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlSystemGetCudaDriverVersion(version: *mut c_int) -> nvmlReturn_t {
    unsafe { nvmlSystemGetCudaDriverVersion_v2(version) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetCount_v2(count: *mut c_uint) -> nvmlReturn_t {
    guard(|| {
        let n = live("nvmlDeviceGetCount_v2").gpus.len();
        unsafe { put(count, u32::try_from(n).unwrap_or(0)) }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlDeviceGetHandleByIndex_v2(index: c_uint, device: *mut nvmlDevice_t) -> nvmlReturn_t {
    guard(|| {
        let m = live("nvmlDeviceGetHandleByIndex_v2");
        let gpu = m.gpus.get(index as usize).ok_or(ret::INVALID_ARGUMENT)?;
        machine::faults("nvmlDeviceGetHandleByIndex_v2", gpu, m.now())?;
        unsafe { put(device, m.handle(index as usize)) }
    })
}
