//! gpusight's one Xid table: what each code means, the action NVIDIA's Xid catalogue gives for it, where it
//! usually comes from, and how serious gpusight calls it. The kernel-log and NVML event messages and the
//! gpu-errors rule all read it.
//!
//! Source: "Analyzing Xid Errors with the Xid Catalog" (<https://docs.nvidia.com/deploy/xid-errors/>), the
//! catalogue for Ampere and newer GPUs: each code's mnemonic, description and "Resolution Bucket (Immediate
//! Action)" ([`XidAction`]) are the catalogue's. Two columns are ours, not NVIDIA's: the origin ([`XidOrigin`],
//! read from the catalogue's trigger conditions) and the severity ([`XidSeverity`]): the catalogue gives actions,
//! not severities. Each entry's `why` says where its severity comes from; docs/advice.md, "gpu-errors", prints the
//! whole table.

/// NVIDIA's Xid catalogue, where any code gpusight does not know is to be looked up.
pub const CATALOG_URL: &str = "https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html";

/// The catalogue's "Resolution Bucket (Immediate Action)" of a code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum XidAction {
    /// RESTART_APP: restart the application; the GPU needs nothing.
    RestartApp,
    /// RESET_GPU: stop the GPU's processes and reset it; reboot if that fails.
    ResetGpu,
    /// RESTART_BM: reboot the machine (bare metal).
    RestartBm,
    /// CHECK_MECHANICALS: check the board's power cables and seating.
    CheckMechanicals,
    /// CONTACT_SUPPORT: not expected on this GPU generation; report it.
    ContactSupport,
    /// IGNORE: nothing to do now.
    Ignore,
    /// WORKFLOW_XID_45: after another Xid, follow that one; alone, restart the Fabric Manager.
    WorkflowXid45,
    /// WORKFLOW_XID_48: an uncorrectable memory error: reset the GPU, follow Xid 63/64 when they come with it, and
    /// check the SRAM error threshold.
    WorkflowXid48,
    /// WORKFLOW_NVLINK_ERR: an NVLink error; a GPU reset or a reboot clears it.
    WorkflowNvlinkErr,
    /// WORKFLOW_NVLINK5_ERR: an NVLink 5 error whose registers must be decoded (the catalogue's decode sheet).
    WorkflowNvlink5Err,
    /// XID_154: the recovery action the driver asks for, stated in the message itself.
    Xid154,
}

impl XidAction {
    /// The catalogue's name of the bucket, as printed in the evidence.
    #[must_use]
    pub fn bucket(self) -> &'static str {
        match self {
            Self::RestartApp => "RESTART_APP",
            Self::ResetGpu => "RESET_GPU",
            Self::RestartBm => "RESTART_BM",
            Self::CheckMechanicals => "CHECK_MECHANICALS",
            Self::ContactSupport => "CONTACT_SUPPORT",
            Self::Ignore => "IGNORE",
            Self::WorkflowXid45 => "WORKFLOW_XID_45",
            Self::WorkflowXid48 => "WORKFLOW_XID_48",
            Self::WorkflowNvlinkErr => "WORKFLOW_NVLINK_ERR",
            Self::WorkflowNvlink5Err => "WORKFLOW_NVLINK5_ERR",
            Self::Xid154 => "XID_154",
        }
    }

    /// What to do, in a sentence, for this bucket.
    #[must_use]
    pub fn remedy(self) -> &'static str {
        match self {
            Self::RestartApp => {
                "Restart the application; the GPU needs nothing. If it recurs, debug the program (compute-sanitizer \
                 memcheck, cuda-gdb); if it recurs across different jobs, treat it as hardware."
            }
            Self::ResetGpu => {
                "Stop the GPU's processes and reset it (`nvidia-smi -r -i <GPU>`, or drain the node and reboot); if \
                 the error returns after a reset, collect `nvidia-bug-report.sh` and replace the board."
            }
            Self::RestartBm => {
                "Drain the node and reboot it: the GPU no longer answers. If it falls off again, check the PCIe slot, \
                 risers and power, collect `nvidia-bug-report.sh` and replace the board."
            }
            Self::CheckMechanicals => "Power the node off and check the board's power cables and seating.",
            Self::ContactSupport => {
                "Not expected on current GPUs: collect `nvidia-bug-report.sh` and report it to NVIDIA or the vendor."
            }
            Self::Ignore => "Nothing to do now (NVIDIA's catalogue: IGNORE); act only if it keeps coming back.",
            Self::WorkflowXid45 => {
                "Follow the Xid it came with; alone and with no job stopped, restart the Fabric Manager \
                 (NVSwitch systems) as NVIDIA's catalogue says."
            }
            Self::WorkflowXid48 => {
                "Drain and reset the GPU (an uncorrectable memory error needs a reset); with Xid 63 or 64 follow those; \
                 check `nvidia-smi -q -d ECC` for the SRAM threshold flag and run the field diagnostics if it is set."
            }
            Self::WorkflowNvlinkErr => {
                "Reset the GPU or reboot the node to clear the link; check `nvidia-smi nvlink -s` and the GPU at the \
                 other end (it may be the one that failed). If it persists, contact the hardware vendor."
            }
            Self::WorkflowNvlink5Err => {
                "Decode the message's intrInfo and errorStatus with the catalogue's \"XID 144-150 Decode\" sheet: a \
                 fatal error on a link that stays down needs a reset or reboot; a non-fatal one alone needs nothing."
            }
            Self::Xid154 => {
                "Do what the message says: reset the GPU (`nvidia-smi -r -i <GPU>`) or reboot the node, after \
                 draining it; the action summarizes the Xids logged with it."
            }
        }
    }
}

/// Where a code usually comes from (ours, read from the catalogue's trigger conditions).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum XidOrigin {
    /// The application (bad address, illegal instruction, a killed context): the GPU is fine.
    Application,
    /// The driver or the GPU's firmware (GSP, micro-controllers).
    Driver,
    /// The hardware: memory, the PCIe or NVLink link, power.
    Hardware,
    /// A consequence of another Xid or of a process being stopped.
    Secondary,
}

impl XidOrigin {
    /// A word for people.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Application => "application",
            Self::Driver => "driver or firmware",
            Self::Hardware => "hardware",
            Self::Secondary => "follows another event",
        }
    }
}

/// How serious gpusight calls a code (ours: the catalogue has actions, not severities).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum XidSeverity {
    Info,
    Warning,
    Critical,
}

/// One row of the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct XidEntry {
    pub code: u32,
    /// The catalogue's mnemonic.
    pub mnemonic: &'static str,
    /// The catalogue's description, in a few words.
    pub description: &'static str,
    pub action: XidAction,
    pub origin: XidOrigin,
    pub severity: XidSeverity,
    /// Why this severity (where it comes from).
    pub why: &'static str,
}

const fn row(
    code: u32,
    mnemonic: &'static str,
    description: &'static str,
    action: XidAction,
    origin: XidOrigin,
    severity: XidSeverity,
    why: &'static str,
) -> XidEntry {
    XidEntry { code, mnemonic, description, action, origin, severity, why }
}

/// Why an action bucket gives its severity, for the rows that follow their bucket.
const FOLLOWS_RESET: &str = "RESET_GPU: the GPU cannot be trusted until reset";
const FOLLOWS_APP: &str = "RESTART_APP: the job died, the GPU is fine";
const FOLLOWS_IGNORE: &str = "IGNORE: nothing to do unless it repeats";

/// The table, by code. Rows say the catalogue's words in short; see the module documentation for the columns.
pub const XID_TABLE: &[XidEntry] = {
    use XidAction::{
        CheckMechanicals, ContactSupport, Ignore, ResetGpu, RestartApp, RestartBm, WorkflowNvlink5Err,
        WorkflowNvlinkErr, WorkflowXid45, WorkflowXid48, Xid154,
    };
    use XidOrigin::{Application, Driver, Hardware, Secondary};
    use XidSeverity::{Critical, Info, Warning};
    &[
        row(
            8,
            "ROBUST_CHANNEL_FIFO_ERROR_IDLE_TIMEOUT",
            "GPU stopped processing (a channel timed out)",
            RestartApp,
            Application,
            Warning,
            FOLLOWS_APP,
        ),
        row(
            13,
            "ROBUST_CHANNEL_GR_EXCEPTION",
            "graphics engine exception (usually an out-of-bounds access or illegal instruction in the application)",
            RestartApp,
            Application,
            Warning,
            FOLLOWS_APP,
        ),
        row(
            31,
            "ROBUST_CHANNEL_FIFO_ERROR_MMU_ERR_FLT",
            "GPU memory page fault (usually an illegal address in the application)",
            RestartApp,
            Application,
            Warning,
            FOLLOWS_APP,
        ),
        row(
            32,
            "ROBUST_CHANNEL_PBDMA_ERROR",
            "invalid or corrupted push buffer stream (mostly PCIe signal quality, not the application)",
            RestartApp,
            Hardware,
            Warning,
            FOLLOWS_APP,
        ),
        row(
            38,
            "ROBUST_CHANNEL_FECS_ERR_WATCHDOG_TIMEOUT",
            "driver firmware error (watchdog timeout)",
            Ignore,
            Driver,
            Info,
            FOLLOWS_IGNORE,
        ),
        row(
            43,
            "ROBUST_CHANNEL_RESETCHANNEL_VERIF_ERROR",
            "GPU stopped processing: the application hit a fault and had to stop; the GPU stays healthy",
            Ignore,
            Application,
            Info,
            FOLLOWS_IGNORE,
        ),
        row(
            45,
            "ROBUST_CHANNEL_PREEMPTIVE_REMOVAL",
            "preemptive cleanup: the driver tore down a context (Ctrl-C, a kill, a reset, or an earlier error)",
            WorkflowXid45,
            Secondary,
            Warning,
            "ours: a warning until its cause is known; info when it follows another Xid or its process exited within seconds of it (a job stopped with work in flight)",
        ),
        row(
            46,
            "ROBUST_CHANNEL_GPU_TIMEOUT_ERROR",
            "GPU stopped processing (GPU timeout)",
            ResetGpu,
            Hardware,
            Critical,
            FOLLOWS_RESET,
        ),
        row(
            48,
            "ROBUST_CHANNEL_GPU_ECC_DBE",
            "double-bit ECC error (uncorrectable memory error)",
            WorkflowXid48,
            Hardware,
            Critical,
            "WORKFLOW_XID_48: a reset or reboot is needed to clear it",
        ),
        row(
            54,
            "SILENT_RUNNING_PWR_REDUCED_CLOCKING",
            "auxiliary power is not connected to the GPU board",
            CheckMechanicals,
            Hardware,
            Critical,
            "CHECK_MECHANICALS: the board runs without its power",
        ),
        row(
            61,
            "PMU_BREAKPOINT",
            "internal micro-controller breakpoint (not used on Ampere and newer)",
            ContactSupport,
            Driver,
            Warning,
            "ours: CONTACT_SUPPORT for a code the catalogue lists as unused",
        ),
        row(62, "PMU_HALT_ERROR", "internal micro-controller halt", ResetGpu, Driver, Critical, FOLLOWS_RESET),
        row(
            63,
            "INFOROM_DRAM_RETIREMENT_EVENT",
            "GPU memory row remapping (or page retirement) recorded after memory errors",
            Ignore,
            Hardware,
            Info,
            "IGNORE: the hardware handled it; a pending remap shows in the row-remap counters",
        ),
        row(
            64,
            "INFOROM_DRAM_RETIREMENT_FAILURE",
            "GPU memory row remapping (or page retirement) failed",
            ResetGpu,
            Hardware,
            Critical,
            FOLLOWS_RESET,
        ),
        row(
            68,
            "ROBUST_CHANNEL_NVDEC0_ERROR",
            "video decoder (NVDEC0) exception",
            RestartApp,
            Application,
            Warning,
            FOLLOWS_APP,
        ),
        row(
            69,
            "ROBUST_CHANNEL_GR_CLASS_ERROR",
            "graphics engine class error",
            RestartApp,
            Application,
            Warning,
            FOLLOWS_APP,
        ),
        row(
            74,
            "NVLINK_ERROR",
            "NVLink error (this link, or the GPU at its other end)",
            WorkflowNvlinkErr,
            Hardware,
            Critical,
            "WORKFLOW_NVLINK_ERR: a reset or reboot is needed to clear it",
        ),
        row(
            79,
            "ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS",
            "GPU has fallen off the bus (PCIe link, power or the GPU itself)",
            RestartBm,
            Hardware,
            Critical,
            "RESTART_BM: the GPU is gone until a reboot",
        ),
        row(
            92,
            "EXCESSIVE_SBE_INTERRUPTS",
            "high single-bit (corrected) ECC error rate",
            Ignore,
            Hardware,
            Warning,
            "ours: the catalogue says IGNORE; a high corrected-error rate is how failing memory starts, so watch it",
        ),
        row(
            94,
            "ROBUST_CHANNEL_CONTAINED_ERROR",
            "contained memory error: only the affected application was stopped",
            RestartApp,
            Hardware,
            Warning,
            "RESTART_APP: other applications are unaffected; reset when convenient",
        ),
        row(
            95,
            "ROBUST_CHANNEL_UNCONTAINED_ERROR",
            "uncontained memory error: every application on the GPU is affected",
            ResetGpu,
            Hardware,
            Critical,
            FOLLOWS_RESET,
        ),
        row(
            109,
            "ROBUST_CHANNEL_CTXSW_TIMEOUT_ERROR",
            "context switch timeout",
            ResetGpu,
            Hardware,
            Critical,
            FOLLOWS_RESET,
        ),
        row(
            119,
            "GSP_RPC_TIMEOUT",
            "GSP RPC timeout (the GPU's firmware did not answer the driver)",
            ResetGpu,
            Driver,
            Critical,
            FOLLOWS_RESET,
        ),
        row(120, "GSP_ERROR", "GSP error (the GPU's firmware failed)", ResetGpu, Driver, Critical, FOLLOWS_RESET),
        row(
            121,
            "C2C_ERROR",
            "corrected errors on the C2C NVLink to the Grace CPU",
            Ignore,
            Hardware,
            Info,
            "IGNORE: corrected, no operational impact; a reset at a service window retrains the link",
        ),
        row(136, "ALI_TRAINING_FAIL", "NVLink link training failed", ResetGpu, Hardware, Critical, FOLLOWS_RESET),
        row(
            137,
            "NVLINK_PRIV_ERR",
            "NVLink privilege error (an illegal peer-to-peer access, usually the application)",
            Ignore,
            Application,
            Info,
            FOLLOWS_IGNORE,
        ),
        row(
            140,
            "UNRECOVERABLE_ECC_ERROR_ESCAPE",
            "unrecovered ECC error: the driver could not retire or remap the memory",
            ResetGpu,
            Hardware,
            Critical,
            FOLLOWS_RESET,
        ),
        row(143, "GPU_INIT_ERROR", "GPU initialization error", ResetGpu, Hardware, Critical, FOLLOWS_RESET),
        row(144, "NVLINK_SAW_ERROR", "NVLink 5 SAW error", WorkflowNvlink5Err, Hardware, Warning, NVLINK5),
        row(145, "NVLINK_RLW_ERROR", "NVLink 5 RLW error", WorkflowNvlink5Err, Hardware, Warning, NVLINK5),
        row(146, "NVLINK_TLW_ERROR", "NVLink 5 TLW error", WorkflowNvlink5Err, Hardware, Warning, NVLINK5),
        row(147, "NVLINK_TREX_ERROR", "NVLink 5 TREX error", WorkflowNvlink5Err, Hardware, Warning, NVLINK5),
        row(
            148,
            "NVLINK_NVLPW_CTRL_ERROR",
            "NVLink 5 NVLPW_CTRL error",
            WorkflowNvlink5Err,
            Hardware,
            Warning,
            NVLINK5,
        ),
        row(149, "NVLINK_NETIR_ERROR", "NVLink 5 NETIR error", WorkflowNvlink5Err, Hardware, Warning, NVLINK5),
        row(150, "NVLINK_MSE_ERROR", "NVLink 5 MSE error", WorkflowNvlink5Err, Hardware, Warning, NVLINK5),
        row(
            154,
            "GPU_RECOVERY_ACTION_CHANGED",
            "GPU recovery action changed: the driver says what the Xids logged with it need",
            Xid154,
            Secondary,
            Critical,
            "XID_154: critical when the message asks for a reset or a reboot (see recovery_action)",
        ),
        row(158, "GPU_FATAL_TIMEOUT", "GPU fatal timeout", ResetGpu, Hardware, Critical, FOLLOWS_RESET),
    ]
};

const NVLINK5: &str =
    "ours: fatal or not is in the registers the catalogue's decode sheet reads, so a warning until decoded";

/// The table's row for `code`; `None` for a code gpusight does not know (look it up at [`CATALOG_URL`]).
#[must_use]
pub fn xid_entry(code: u32) -> Option<&'static XidEntry> {
    XID_TABLE.iter().find(|e| e.code == code)
}

/// What gpusight says of a code it does not know: a warning, to be looked up in the catalogue.
pub const UNKNOWN_MEANING: &str = "not in gpusight's table: look it up in NVIDIA's Xid catalogue";

/// One-line meaning of a code, for event messages: the table's description, or [`UNKNOWN_MEANING`].
#[must_use]
pub fn xid_meaning(code: u32) -> &'static str {
    xid_entry(code).map_or(UNKNOWN_MEANING, |e| e.description)
}

/// The recovery action an Xid 154 message names ("GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot
/// Required)"): the text in the parentheses after "to", with the severity it carries. `None` when the message does
/// not say.
#[must_use]
pub fn recovery_action(message: &str) -> Option<(&str, XidSeverity)> {
    let lower = message.to_ascii_lowercase();
    let after = lower.rfind(" to ")? + 4;
    let open = after + message.get(after..)?.find('(')? + 1;
    let close = open + message.get(open..)?.find(')')?;
    let action = message.get(open..close)?.trim();
    let severity = match action.to_ascii_lowercase().as_str() {
        "none" => XidSeverity::Info,
        "drain p2p" => XidSeverity::Warning,
        _ => XidSeverity::Critical,
    };
    Some((action, severity))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The codes the table must cover, each with its catalogue bucket.
    const REQUIRED: [(u32, XidAction); 28] = [
        (8, XidAction::RestartApp),
        (13, XidAction::RestartApp),
        (31, XidAction::RestartApp),
        (32, XidAction::RestartApp),
        (38, XidAction::Ignore),
        (43, XidAction::Ignore),
        (45, XidAction::WorkflowXid45),
        (48, XidAction::WorkflowXid48),
        (61, XidAction::ContactSupport),
        (62, XidAction::ResetGpu),
        (63, XidAction::Ignore),
        (64, XidAction::ResetGpu),
        (68, XidAction::RestartApp),
        (69, XidAction::RestartApp),
        (74, XidAction::WorkflowNvlinkErr),
        (79, XidAction::RestartBm),
        (92, XidAction::Ignore),
        (94, XidAction::RestartApp),
        (95, XidAction::ResetGpu),
        (109, XidAction::ResetGpu),
        (119, XidAction::ResetGpu),
        (120, XidAction::ResetGpu),
        (121, XidAction::Ignore),
        (140, XidAction::ResetGpu),
        (143, XidAction::ResetGpu),
        (149, XidAction::WorkflowNvlink5Err),
        (150, XidAction::WorkflowNvlink5Err),
        (154, XidAction::Xid154),
    ];

    #[test]
    fn the_table_covers_the_common_codes_with_the_catalogues_action() {
        for (code, action) in REQUIRED {
            let entry = xid_entry(code).unwrap_or_else(|| panic!("Xid {code} is in the table"));
            assert_eq!(entry.action, action, "Xid {code}");
            assert!(!entry.description.is_empty() && !entry.why.is_empty() && !entry.mnemonic.is_empty());
        }
        assert_eq!(xid_entry(12_345), None);
        assert_eq!(xid_meaning(12_345), UNKNOWN_MEANING);
    }

    #[test]
    fn the_table_is_sorted_with_one_row_per_code() {
        assert!(XID_TABLE.windows(2).all(|w| w[0].code < w[1].code));
    }

    #[test]
    fn severities_follow_the_buckets_unless_the_row_says_they_are_ours() {
        for e in XID_TABLE {
            let expected = match e.action {
                XidAction::ResetGpu
                | XidAction::RestartBm
                | XidAction::WorkflowXid48
                | XidAction::WorkflowNvlinkErr => Some(XidSeverity::Critical),
                XidAction::RestartApp => Some(XidSeverity::Warning),
                XidAction::Ignore => Some(XidSeverity::Info),
                _ => None,
            };
            if let Some(expected) = expected.filter(|s| *s != e.severity) {
                assert!(e.why.starts_with("ours:"), "Xid {} is {:?}, its bucket says {expected:?}", e.code, e.severity);
            }
        }
        assert_eq!(xid_entry(79).map(|e| e.severity), Some(XidSeverity::Critical));
        assert_eq!(xid_entry(45).map(|e| e.origin), Some(XidOrigin::Secondary));
        assert_eq!(xid_entry(31).map(|e| e.origin), Some(XidOrigin::Application));
    }

    #[test]
    fn xid_154_names_its_recovery_action() {
        let reboot = "Xid 154 GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)";
        assert_eq!(recovery_action(reboot), Some(("Node Reboot Required", XidSeverity::Critical)));
        let reset =
            "NVRM: Xid (PCI:0000:3b:00): 154, GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)";
        assert_eq!(recovery_action(reset), Some(("GPU Reset Required", XidSeverity::Critical)));
        let none = "GPU recovery action changed from 0x2 (Node Reboot Required) to 0x0 (None)";
        assert_eq!(recovery_action(none), Some(("None", XidSeverity::Info)));
        assert_eq!(recovery_action("Xid 154 (NVML event)"), None);
    }
}
