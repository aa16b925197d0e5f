//! NVLink links of a GPU: state, version and data-link error counters, read on the slow tier (each link is four
//! calls; the counters only matter as they climb over minutes); each link's speed (one field-values call for all
//! links, slow tier) and its throughput counters (one field-values call for all links that are up, medium tier),
//! whose deltas between reads are the rates.

use nvml_wrapper::enum_wrappers::nv_link::ErrorCounter;
use nvml_wrapper::error::{NvmlError, nvml_try};
use nvml_wrapper::struct_wrappers::device::FieldValueSample;
use nvml_wrapper::{Device, Nvml};
use nvml_wrapper_sys::bindings::nvmlFieldValue_t;

use super::fields::as_counter;
use crate::sample::NvLinkTick;

/// NVLink link slots NVML knows (`NVML_NVLINK_MAX_LINKS`).
pub const MAX_NVLINKS: u32 = 18;

/// Reads every link NVML answers for: the first link's error is the error (no NVLink); a later link's error ends
/// the list (fewer links than the maximum).
pub fn read_nvlinks(device: &Device<'_>) -> Result<Vec<NvLinkTick>, NvmlError> {
    let mut out = Vec::new();
    for link in 0..MAX_NVLINKS {
        let wrapper = device.link_wrapper_for(link);
        let up = match wrapper.is_active() {
            Ok(up) => up,
            Err(e) if link == 0 => return Err(e),
            Err(_) => break,
        };
        out.push(NvLinkTick {
            link,
            up,
            version: wrapper.version().ok(),
            crc_flit_errors: wrapper.error_counter(ErrorCounter::DlCrcFlit).ok(),
            replay_errors: wrapper.error_counter(ErrorCounter::DlReplay).ok(),
            recovery_errors: wrapper.error_counter(ErrorCounter::DlRecovery).ok(),
            ..NvLinkTick::default()
        });
    }
    Ok(out)
}

/// `NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX`: data transmitted on the link named by the scope, KiB since the driver
/// loaded.
pub const THROUGHPUT_TX_FIELD: u32 = 138;
/// `NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX`: data received, as above.
pub const THROUGHPUT_RX_FIELD: u32 = 139;
/// `NVML_FI_DEV_NVLINK_GET_SPEED`: the link's speed in MB/s (per direction), link as the scope. The older
/// `NVML_FI_DEV_NVLINK_SPEED_MBPS_L0`..`L11` stop at twelve links; Hopper and Blackwell have eighteen.
pub const SPEED_FIELD: u32 = 164;

/// Reads field values whose scope is a link, `(field id, link)` each, in one `nvmlDeviceGetFieldValues` call.
/// nvml-wrapper's `field_values_for` always sends scope 0, so the call goes through its loaded symbol. Each
/// answer is the field's counter, or its own error. None of these ids is renumbered by the drivers of 580.82 on.
#[expect(unsafe_code, reason = "an NVML call nvml-wrapper does not wrap with a scope, through its loaded symbol")]
pub fn link_field_values(
    nvml: &Nvml,
    device: &Device<'_>,
    asks: &[(u32, u32)],
) -> Result<Vec<Result<u64, NvmlError>>, NvmlError> {
    let sym = nvml.lib().nvmlDeviceGetFieldValues.as_ref().map_err(|e| NvmlError::FailedToLoadSymbol(e.to_string()))?;
    let count = i32::try_from(asks.len()).map_err(|_| NvmlError::InvalidArg)?;
    let mut values: Vec<nvmlFieldValue_t> = asks
        .iter()
        .map(|&(field, link)| {
            // SAFETY: `nvmlFieldValue_t` is a plain C struct of integers and a union of numbers; all zeroes is a
            // valid value of it (NVML's own examples zero it before setting the ids).
            let mut raw: nvmlFieldValue_t = unsafe { std::mem::zeroed() };
            raw.fieldId = field;
            raw.scopeId = link;
            raw
        })
        .collect();
    // SAFETY: `sym` is nvmlDeviceGetFieldValues as loaded from the NVML library, with the header's signature
    // (device handle, count, pointer to `count` field values). The handle comes from a live `Device` of the same
    // `Nvml`, which outlives this call; `values` holds exactly `count` entries and lives across the call; NVML
    // writes only into them.
    let code = unsafe { sym(device.handle(), count, values.as_mut_ptr()) };
    nvml_try(code)?;
    Ok(values
        .into_iter()
        .map(|raw| {
            let sample = FieldValueSample::try_from(raw)?;
            let value = sample.value?;
            as_counter(&value).ok_or(NvmlError::UnexpectedVariant(0))
        })
        .collect())
}

/// What a batch of per-link answers says about the field: every answer NotSupported or an unknown id means the
/// driver will never answer it on this GPU.
#[must_use]
pub fn never_answers(answers: &[Result<u64, NvmlError>]) -> bool {
    !answers.is_empty() && answers.iter().all(|a| matches!(a, Err(NvmlError::NotSupported | NvmlError::InvalidArg)))
}

/// One link's last throughput counters and the rates between its last two reads.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct LinkTraffic {
    at_ms: u64,
    rx_kib: Option<u64>,
    tx_kib: Option<u64>,
    rx_bytes_s: Option<u64>,
    tx_bytes_s: Option<u64>,
}

/// Each link's throughput counters and the rates from their deltas, by link number; and each link's speed.
#[derive(Debug, Clone, Default)]
pub struct LinkReadings {
    traffic: Vec<Option<LinkTraffic>>,
    speed_mb_s: Vec<Option<u32>>,
}

/// Bytes a second between two readings of a KiB counter `dt_ms` apart; `None` when the counter went back (the
/// driver reloaded) or no time passed.
#[must_use]
pub fn kib_rate(before: Option<u64>, after: Option<u64>, dt_ms: u64) -> Option<u64> {
    let (before, after) = (before?, after?);
    if after < before || dt_ms == 0 {
        return None;
    }
    let bytes_ms = u128::from(after - before) * 1024 * 1000 / u128::from(dt_ms);
    u64::try_from(bytes_ms).ok()
}

impl LinkReadings {
    /// Records the throughput counters of `link` read at `at_ms`, and the rates since the previous read.
    pub fn record_traffic(&mut self, link: u32, at_ms: u64, rx_kib: Option<u64>, tx_kib: Option<u64>) {
        let Ok(slot) = usize::try_from(link) else { return };
        if self.traffic.len() <= slot {
            self.traffic.resize(slot + 1, None);
        }
        let prev = self.traffic[slot];
        let (rx_bytes_s, tx_bytes_s) = match prev {
            Some(p) if at_ms > p.at_ms => {
                (kib_rate(p.rx_kib, rx_kib, at_ms - p.at_ms), kib_rate(p.tx_kib, tx_kib, at_ms - p.at_ms))
            }
            Some(p) if at_ms == p.at_ms => (p.rx_bytes_s, p.tx_bytes_s),
            _ => (None, None),
        };
        self.traffic[slot] = Some(LinkTraffic { at_ms, rx_kib, tx_kib, rx_bytes_s, tx_bytes_s });
    }

    /// Forgets the counters of `link` (it went down, or stopped answering): its next read starts a new rate.
    pub fn forget_traffic(&mut self, link: u32) {
        if let Some(slot) = usize::try_from(link).ok().and_then(|i| self.traffic.get_mut(i)) {
            *slot = None;
        }
    }

    /// Records the speed of `link`; 0 (a link that is not trained) is no speed.
    pub fn record_speed(&mut self, link: u32, speed_mb_s: Option<u32>) {
        let Ok(slot) = usize::try_from(link) else { return };
        if self.speed_mb_s.len() <= slot {
            self.speed_mb_s.resize(slot + 1, None);
        }
        self.speed_mb_s[slot] = speed_mb_s.filter(|&s| s > 0);
    }

    /// Fills the links of a tick with the speeds and throughput last read.
    pub fn apply(&self, links: &mut [NvLinkTick]) {
        for l in links {
            let Ok(slot) = usize::try_from(l.link) else { continue };
            l.speed_mb_s = self.speed_mb_s.get(slot).copied().flatten();
            if let Some(t) = self.traffic.get(slot).copied().flatten() {
                (l.rx_kib, l.tx_kib, l.rx_bytes_s, l.tx_bytes_s) = (t.rx_kib, t.tx_kib, t.rx_bytes_s, t.tx_bytes_s);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_from_counter_deltas() {
        // 2,048 KiB over 2 s: 1,048,576 bytes a second.
        assert_eq!(kib_rate(Some(1_000), Some(3_048), 2_000), Some(1_048_576));
        assert_eq!(kib_rate(Some(5), Some(4), 1_000), None, "a counter that went back is no rate");
        assert_eq!(kib_rate(Some(5), Some(6), 0), None);
        assert_eq!(kib_rate(None, Some(6), 1_000), None);
    }

    #[test]
    fn readings_fill_the_links() {
        let mut r = LinkReadings::default();
        r.record_traffic(2, 1_000, Some(100), Some(10));
        r.record_speed(2, Some(26_562));
        r.record_speed(0, Some(0));
        let mut links = vec![
            NvLinkTick { link: 0, up: false, ..NvLinkTick::default() },
            NvLinkTick { link: 2, up: true, ..NvLinkTick::default() },
        ];
        r.apply(&mut links);
        assert_eq!(links[0].speed_mb_s, None, "speed 0 is no speed");
        assert_eq!((links[1].speed_mb_s, links[1].rx_kib, links[1].rx_bytes_s), (Some(26_562), Some(100), None));
        r.record_traffic(2, 3_000, Some(2_148), Some(10));
        r.apply(&mut links);
        assert_eq!((links[1].rx_bytes_s, links[1].tx_bytes_s), (Some(1_048_576), Some(0)));
        r.forget_traffic(2);
        r.record_traffic(2, 4_000, Some(9_000), Some(10));
        let mut again = vec![NvLinkTick { link: 2, up: true, ..NvLinkTick::default() }];
        r.apply(&mut again);
        assert_eq!(again[0].rx_bytes_s, None, "a forgotten link starts a new rate");
    }

    #[test]
    fn a_field_that_never_answers() {
        assert!(never_answers(&[Err(NvmlError::NotSupported), Err(NvmlError::InvalidArg)]));
        assert!(!never_answers(&[Err(NvmlError::NotSupported), Ok(3)]));
        assert!(!never_answers(&[Err(NvmlError::Unknown)]));
        assert!(!never_answers(&[]));
    }
}
