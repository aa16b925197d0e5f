//! Event sets: registration and waits; the scenario's Xid errors are delivered once each, at their time.

use std::collections::HashSet;
use std::ffi::{c_uint, c_ulonglong};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use nvml_wrapper_sys::bindings::{nvmlEventData_t, nvmlEventSet_st, nvmlEventSet_t, nvmlReturn_t};

use crate::machine::{live, violation};
use crate::{device_fn, guard, put, ret};

/// `nvmlEventTypeXidCriticalError`.
const XID: u64 = 0x8;
/// Single- and double-bit ECC error events.
const ECC: u64 = 0x1 | 0x2;

#[derive(Debug, Default)]
struct Set {
    /// (GPU, event mask) registered on this set.
    registered: Vec<(usize, u64)>,
    /// (GPU, Xid entry) already delivered.
    delivered: HashSet<(usize, usize)>,
}

/// The sets created and not yet freed, by address.
static SETS: Mutex<Option<HashSet<usize>>> = Mutex::new(None);

fn sets() -> std::sync::MutexGuard<'static, Option<HashSet<usize>>> {
    SETS.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn set_mut<'a>(handle: nvmlEventSet_t, call: &str) -> &'a Mutex<Set> {
    if !sets().as_ref().is_some_and(|s| s.contains(&(handle as usize))) {
        violation(&format!("{call} with an event set that was never created or is already freed"));
    }
    // SAFETY: the address is in the registry: a live `Box<Mutex<Set>>` from `nvmlEventSetCreate`.
    unsafe { &*handle.cast::<Mutex<Set>>() }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlEventSetCreate(set: *mut nvmlEventSet_t) -> nvmlReturn_t {
    guard(|| {
        live("nvmlEventSetCreate");
        let raw = Box::into_raw(Box::new(Mutex::new(Set::default())));
        sets().get_or_insert_with(HashSet::new).insert(raw as usize);
        unsafe { put(set, raw.cast::<nvmlEventSet_st>()) }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlEventSetFree(set: nvmlEventSet_t) -> nvmlReturn_t {
    guard(|| {
        live("nvmlEventSetFree");
        if !sets().as_mut().is_some_and(|s| s.remove(&(set as usize))) {
            violation("nvmlEventSetFree with an event set that was never created or is already freed");
        }
        // SAFETY: removed from the registry just now: a `Box<Mutex<Set>>` freed once.
        drop(unsafe { Box::from_raw(set.cast::<Mutex<Set>>()) });
        Ok(())
    })
}

device_fn!(nvmlDeviceGetSupportedEventTypes(types: *mut c_ulonglong) |d| {
    put(types, if d.gpu.spec.ecc { XID | ECC } else { XID })
});

device_fn!(nvmlDeviceRegisterEvents(types: c_ulonglong, set: nvmlEventSet_t) |d| {
    let supported = if d.gpu.spec.ecc { XID | ECC } else { XID };
    if types & !supported != 0 {
        return Err(ret::NOT_SUPPORTED);
    }
    let s = set_mut(set, "nvmlDeviceRegisterEvents");
    s.lock().unwrap_or_else(std::sync::PoisonError::into_inner).registered.push((d.gpu.index as usize, types));
    Ok(())
});

#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlEventSetWait_v2(
    set: nvmlEventSet_t,
    data: *mut nvmlEventData_t,
    timeout_ms: c_uint,
) -> nvmlReturn_t {
    guard(|| {
        let m = live("nvmlEventSetWait_v2");
        let s = set_mut(set, "nvmlEventSetWait_v2");
        let until = Instant::now() + Duration::from_millis(u64::from(timeout_ms));
        loop {
            let t = m.now();
            {
                let mut set = s.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                let due = set.registered.iter().filter(|(_, mask)| mask & XID != 0).find_map(|&(g, _)| {
                    let gpu = m.gpus.get(g)?;
                    let i = gpu
                        .spec
                        .xids
                        .iter()
                        .enumerate()
                        .position(|(i, x)| x.at_s <= t && !set.delivered.contains(&(g, i)))?;
                    Some((g, i, gpu.spec.xids[i].xid))
                });
                if let Some((g, i, xid)) = due {
                    set.delivered.insert((g, i));
                    let event = nvmlEventData_t {
                        device: m.handle(g),
                        eventType: XID,
                        eventData: xid,
                        gpuInstanceId: u32::MAX,
                        computeInstanceId: u32::MAX,
                    };
                    return unsafe { put(data, event) };
                }
            }
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(ret::TIMEOUT);
            }
            std::thread::sleep(left.min(Duration::from_millis(20)));
        }
    })
}
