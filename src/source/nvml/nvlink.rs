//! NVLink links of a GPU: state, version and data-link error counters, read on the slow tier (each link is four
//! calls; the counters only matter as they climb over minutes).

use nvml_wrapper::Device;
use nvml_wrapper::enum_wrappers::nv_link::ErrorCounter;
use nvml_wrapper::error::NvmlError;

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
        });
    }
    Ok(out)
}
