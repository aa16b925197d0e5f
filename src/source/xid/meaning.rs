//! What common Xid codes mean, in one line each, and how serious they are. Drawn from NVIDIA's public Xid
//! catalog and page-retirement documentation, in our own words.

/// How serious an Xid is for the machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum XidSeverity {
    /// Usually a fault of the application (bad address, killed context): the GPU itself is fine.
    Application,
    /// Worth a look; may be the driver, firmware or a transient condition.
    Warning,
    /// Hardware or driver trouble: memory errors, a lost GPU, a GPU that needs a reset.
    Critical,
}

/// One-line meaning and severity of a known Xid code.
#[must_use]
pub fn xid_meaning(code: u32) -> Option<(&'static str, XidSeverity)> {
    use XidSeverity::{Application, Critical, Warning};
    let entry = match code {
        8 => ("GPU stopped processing: a channel timed out", Warning),
        13 => ("graphics engine exception: usually the application (illegal instruction or address)", Application),
        31 => ("GPU memory page fault: usually the application accessed an invalid address", Application),
        32 => ("invalid or corrupted push buffer stream: driver or PCIe trouble", Warning),
        38 => ("driver firmware error", Warning),
        43 => ("GPU stopped processing the application's work after a fault in that application", Application),
        45 => (
            "preemptive cleanup: the driver tore down a context after an earlier error or a killed process",
            Application,
        ),
        48 => ("double-bit (uncorrectable) ECC error in GPU memory", Critical),
        56 => ("display engine error", Warning),
        57 => ("error programming the video memory interface", Warning),
        61 => ("internal micro-controller breakpoint or warning: the GPU may need a reset", Critical),
        62 => ("internal micro-controller halted: the GPU needs a reset", Critical),
        63 => ("ECC page retirement or row remapping recorded after memory errors", Critical),
        64 => ("ECC page retirement or row remapping failed to be recorded", Critical),
        68 => ("video decoder (NVDEC) exception", Warning),
        69 => ("graphics engine class error", Warning),
        74 => ("NVLink error: a link between GPUs reported a fault", Critical),
        79 => ("GPU has fallen off the bus: it no longer answers on PCIe", Critical),
        92 => ("high rate of single-bit (corrected) ECC errors", Critical),
        94 => ("contained uncorrectable ECC error: only the affected application was stopped", Critical),
        95 => ("uncontained uncorrectable ECC error: every application on the GPU is affected; reset needed", Critical),
        109 => ("context switch timeout: the application or the GPU stopped responding", Warning),
        119 => ("GSP firmware did not answer a driver request in time", Critical),
        120 => ("GSP firmware reported an error", Critical),
        121 => ("C2C (chip-to-chip) link error", Critical),
        140 => ("unrecovered ECC error in GPU memory", Critical),
        143 => ("GPU initialization failed", Critical),
        154 => ("GPU recovery action changed: a GPU reset or node reboot may be required", Critical),
        _ => return None,
    };
    Some(entry)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn common_codes_have_meanings() {
        for code in [13, 31, 43, 45, 48, 61, 62, 63, 64, 68, 69, 74, 79, 92, 94, 95, 109, 119, 120, 154] {
            let (text, _) = xid_meaning(code).unwrap_or_else(|| panic!("Xid {code} has a meaning"));
            assert!(!text.is_empty() && !text.contains('\n'));
        }
        assert_eq!(xid_meaning(12_345), None);
    }

    #[test]
    fn severities() {
        for code in [48, 63, 64, 74, 79, 92, 94, 95, 119, 120] {
            assert_eq!(xid_meaning(code).map(|m| m.1), Some(XidSeverity::Critical), "Xid {code}");
        }
        for code in [13, 31, 43, 45] {
            assert_eq!(xid_meaning(code).map(|m| m.1), Some(XidSeverity::Application), "Xid {code}");
        }
    }
}
