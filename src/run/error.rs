//! Why a command failed: one variant per cause, each message one line for a person (what happened, with what,
//! what to do).

use crate::source::SourceError;

/// Why a command failed; each message is one line for a person.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The source could not be opened or failed (no driver, an unreadable recording, `--only` a missing GPU).
    #[error(transparent)]
    Source(#[from] SourceError),
    /// The config file is unreadable or out of range.
    #[error(transparent)]
    Config(#[from] crate::config::ConfigError),
    /// `--record` could not write.
    #[error(transparent)]
    Record(#[from] crate::source::replay::RecordError),
    /// The exporter could not listen or serve.
    #[error(transparent)]
    Export(#[from] crate::export::ExportError),
    /// The Prometheus server of `--prometheus` could not be asked.
    #[error(transparent)]
    Fleet(#[from] crate::fleet::FleetError),
    /// The command line asks for something that cannot be done; the text says what to give instead.
    #[error("{0}")]
    Usage(String),
    /// A recording without a single sample.
    #[error("recording {0} has no samples")]
    EmptyRecording(String),
    /// The source ended before its first sample.
    #[error("the source ended before its first sample")]
    NoFirstSample,
    /// A live watch (`doctor`, `report`) ended before any sample came.
    #[error("no sample arrived during the window")]
    NoSampleInWindow,
    /// A live sample did not come within the deadline (NVML's init or a call hangs).
    #[error(
        "no sample within {0} s: the NVIDIA driver did not answer (a hung NVML call); `gpusight --status` and the \
         monitor show which GPU"
    )]
    NoAnswer(u64),
    /// The source failed while sampling; the text is the source's.
    #[error("{0}")]
    SamplingStopped(String),
    /// Standard output could not be written (a full disk; a reader that went away is not an error).
    #[error("cannot write to standard output: {0}")]
    Stdout(std::io::Error),
    /// The man page could not be rendered.
    #[error("cannot write the man page: {0}")]
    ManPage(std::io::Error),
    /// A signal handler could not be installed.
    #[error("cannot install the {what} handler: {source}")]
    Signals { what: &'static str, source: std::io::Error },
    /// The sampler thread could not be started.
    #[error("cannot start the sampler thread: {0}")]
    Thread(std::io::Error),
    /// The interactive monitor or fleet view failed (the terminal could not be used, a bad key binding).
    #[error("{0}")]
    Interactive(color_eyre::Report),
}
