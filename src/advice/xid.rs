//! What Xid codes mean, for the gpu-errors rule: a short description and whether the code usually points at the
//! application rather than the hardware. Source: NVIDIA's Xid catalogue ("XID Errors" in the GPU deployment and
//! management documentation, <https://docs.nvidia.com/deploy/xid-errors/>); docs/advice.md, "gpu-errors", says how
//! gpusight reads each class.

/// How an Xid code is usually read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum XidClass {
    /// Usually a fault of the application (bad memory access, a killed context): fix the program.
    Application,
    /// Hardware, firmware, power or the PCIe link: drain the node.
    Hardware,
    /// Recorded by the hardware and handled: a reset at the next maintenance window is enough (row remap pending).
    Maintenance,
    /// Not in gpusight's table: look it up in NVIDIA's Xid catalog before acting.
    Unknown,
}

/// The meaning of an Xid code and how it is usually read; unknown codes are [`XidClass::Unknown`].
#[must_use]
pub fn meaning(code: u32) -> (&'static str, XidClass) {
    use XidClass::{Application, Hardware, Maintenance, Unknown};
    match code {
        13 => ("graphics engine exception (usually an application fault such as an out-of-range access)", Application),
        31 => ("GPU memory page fault (MMU fault; usually an application bug)", Application),
        43 => ("GPU stopped processing (the faulting context was reset)", Application),
        45 => ("preemptive cleanup after earlier errors (a context was killed)", Application),
        48 => ("double-bit ECC error (uncorrectable memory error)", Hardware),
        61 | 62 => ("internal micro-controller breakpoint or halt", Hardware),
        63 => ("ECC page retirement or row remapping recorded (a reset applies it)", Maintenance),
        64 => ("ECC page retirement or row remapping failed", Hardware),
        74 => ("NVLink error", Hardware),
        79 => ("GPU has fallen off the bus (PCIe signal, firmware or power)", Hardware),
        92 => ("high single-bit ECC error rate", Hardware),
        94 => ("contained ECC error (the affected application was stopped)", Hardware),
        95 => ("uncontained ECC error (the GPU needs a reset)", Hardware),
        109 => ("context switch timeout", Hardware),
        119 => ("GSP RPC timeout (the GPU's firmware did not answer)", Hardware),
        120 => ("GSP error (the GPU's firmware failed)", Hardware),
        _ => ("not in gpusight's table: see NVIDIA's Xid catalog", Unknown),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_codes_have_meanings_and_classes() {
        assert_eq!(meaning(79).1, XidClass::Hardware);
        assert!(meaning(79).0.contains("fallen off the bus"));
        assert_eq!(meaning(31).1, XidClass::Application);
        assert_eq!(meaning(9999), ("not in gpusight's table: see NVIDIA's Xid catalog", XidClass::Unknown));
        assert_eq!(meaning(63).1, XidClass::Maintenance);
    }
}
