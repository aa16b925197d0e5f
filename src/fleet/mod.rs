//! The fleet view (`gpusight --prometheus URL`), in one home: every node's GPUs, processes and findings read back
//! from a Prometheus server that scrapes `gpusight export` (or only dcgm-exporter) on each node.
//!
//! - [`query`]: the reader and its model ([`query::Fleet`]); it queries the metric names of
//!   [`crate::export::names`], the table the exporter renders from.
//! - [`view`]: the text grid (`--once`), the JSON document (`--json`) and the interactive state ([`view::FleetView`]).
//! - [`screen`]: the interactive view's state, changed by the monitor's actions; its widget is `ui/fleet.rs`, its
//!   event loop the fleet mode's (`run/fleet.rs`).

pub mod query;
pub mod screen;
pub mod view;

pub use query::{Fleet, FleetError, FleetOptions};
pub use view::FleetView;
