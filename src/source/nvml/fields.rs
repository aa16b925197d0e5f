//! NVML field values: the cumulative throttle counters, and the field-id renumbering of drivers from 580.82 on.
//!
//! We always ask for the canonical (CUDA 12.x) ids. nvml-wrapper 0.13 rewrites ids 251-273 for drivers that use
//! the CUDA 13.0 Update 1 numbering (251-255 become 269-273) before the call, and NVML writes the rewritten id
//! back into the answer. So answers are matched by position, and the id in each answer is accepted in either
//! numbering.

use nvml_wrapper::enums::device::SampleValue;

use crate::sample::ThrottleCounters;

/// The canonical field ids of the cumulative throttle counters, in the order of [`ThrottleCounters`]'s fields:
/// SW power cap (74), sync boost (76), SW thermal (251), HW thermal (252), HW power brake (253).
pub const THROTTLE_COUNTER_FIELDS: [u32; 5] = [74, 76, 251, 252, 253];

/// The field id of the memory (HBM) temperature in °C, `NVML_FI_DEV_MEMORY_TEMP` (not renumbered).
pub const MEM_TEMP_FIELD: u32 = 82;

/// Whether a driver version uses the CUDA 13.0 Update 1 field numbering (from 580.82 on).
#[must_use]
pub fn uses_renumbered_fields(driver_version: &str) -> bool {
    let mut parts = driver_version.trim().split('.');
    let major: u32 = parts.next().and_then(|s| s.parse().ok()).unwrap_or(0);
    let minor: u32 = parts.next().and_then(|s| s.parse().ok()).unwrap_or(0);
    major > 580 || (major == 580 && minor >= 82)
}

/// The id a canonical field id has on the wire for a driver with or without the renumbering.
#[must_use]
pub fn wire_field_id(canonical: u32, renumbered: bool) -> u32 {
    if !renumbered {
        return canonical;
    }
    match canonical {
        251..=255 => canonical + 18,
        256..=273 => canonical - 5,
        other => other,
    }
}

/// Whether an answer's field id belongs to the request with this canonical id, in either numbering.
#[must_use]
pub fn answer_matches(canonical: u32, answered_id: u32) -> bool {
    answered_id == canonical || answered_id == wire_field_id(canonical, true)
}

/// A field value as an unsigned counter; negative or fractional values are not counters.
#[must_use]
pub fn as_counter(value: &SampleValue) -> Option<u64> {
    match *value {
        SampleValue::U64(v) => Some(v),
        SampleValue::U32(v) => Some(u64::from(v)),
        SampleValue::I64(v) => u64::try_from(v).ok(),
        SampleValue::F64(_) => None,
    }
}

/// Builds [`ThrottleCounters`] from the five answers in request order; `None` where a slot had no value.
/// Returns `None` when no slot answered.
#[must_use]
pub fn throttle_counters(slots: [Option<u64>; 5]) -> Option<ThrottleCounters> {
    if slots.iter().all(Option::is_none) {
        return None;
    }
    Some(ThrottleCounters {
        sw_power_cap_ns: slots[0],
        sync_boost_ns: slots[1],
        sw_thermal_ns: slots[2],
        hw_thermal_ns: slots[3],
        hw_power_brake_ns: slots[4],
    })
}

/// A GPM percentage, or `None` when NVML gave something that is not a number.
#[must_use]
pub fn gpm_pct(value: f64) -> Option<f32> {
    #[expect(clippy::cast_possible_truncation, reason = "a percentage clamped to 0..=100 fits an f32")]
    value.is_finite().then(|| value.clamp(0.0, 100.0) as f32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renumbering_by_driver_version() {
        assert!(!uses_renumbered_fields("575.51.03"));
        assert!(!uses_renumbered_fields("580.65.06"));
        assert!(uses_renumbered_fields("580.82.07"));
        assert!(uses_renumbered_fields("580.159.04"));
        assert!(uses_renumbered_fields("590.1"));
        assert!(!uses_renumbered_fields("garbage"));
    }

    #[test]
    fn throttle_counter_ids_on_the_wire() {
        let old: Vec<u32> = THROTTLE_COUNTER_FIELDS.iter().map(|&id| wire_field_id(id, false)).collect();
        assert_eq!(old, vec![74, 76, 251, 252, 253]);
        let new: Vec<u32> = THROTTLE_COUNTER_FIELDS.iter().map(|&id| wire_field_id(id, true)).collect();
        assert_eq!(new, vec![74, 76, 269, 270, 271]);
        // The power-smoothing ids move the other way, so the two ranges never collide.
        assert_eq!(wire_field_id(256, true), 251);
        assert_eq!(wire_field_id(186, true), 186);
    }

    #[test]
    fn answers_match_in_either_numbering() {
        assert!(answer_matches(251, 251));
        assert!(answer_matches(251, 269));
        assert!(answer_matches(74, 74));
        assert!(!answer_matches(251, 252));
        assert!(!answer_matches(252, 269));
    }

    #[test]
    fn counter_values() {
        assert_eq!(as_counter(&SampleValue::U64(5)), Some(5));
        assert_eq!(as_counter(&SampleValue::U32(7)), Some(7));
        assert_eq!(as_counter(&SampleValue::I64(-1)), None);
        assert_eq!(as_counter(&SampleValue::F64(1.0)), None);
        assert_eq!(throttle_counters([None; 5]), None);
        let c = throttle_counters([Some(1), None, Some(3), None, None]).expect("some slots");
        assert_eq!((c.sw_power_cap_ns, c.sync_boost_ns, c.sw_thermal_ns), (Some(1), None, Some(3)));
    }

    #[test]
    fn gpm_values() {
        assert_eq!(gpm_pct(96.1), Some(96.1));
        assert_eq!(gpm_pct(f64::NAN), None);
        assert_eq!(gpm_pct(100.4), Some(100.0));
    }
}
