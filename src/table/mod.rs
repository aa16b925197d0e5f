//! The process table's model: which rows there are (flat or as a tree, [`row`]), how they are sorted ([`sort`])
//! and filtered, the table's own state (selection, tags, sort, filters: [`state`]), and its one list of columns
//! ([`columns`]). The monitor's widget (`ui/processes.rs`), `--once` and the fleet view's drill-down read it; none
//! of it knows the terminal.

pub mod columns;
pub mod row;
pub mod sort;
pub mod state;

pub use row::{ProcessRow, RowKey};
pub use sort::SortColumn;
pub use state::{FixedFilters, TableState, scroll_offset};

/// A synthetic machine's tick at 5 s, for the table's tests.
#[cfg(test)]
pub(crate) fn test_tick(spec: &str) -> crate::sample::Tick {
    use crate::source::synthetic::{SyntheticSource, SyntheticSpec};
    SyntheticSource::new(SyntheticSpec::parse(spec).expect("spec")).tick_at(5)
}
