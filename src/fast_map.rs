//! The hash map and set of the per-tick paths (the history's processes, the rules' lookups, the process table):
//! foldhash instead of the standard library's SipHash. Their keys are PIDs and finding keys from this machine,
//! not from an adversary, and at 8 GPUs × 1,000 processes a tick hashes tens of thousands of them.

/// A `HashMap` hashed by foldhash (seeded per process, as the standard one is).
pub type FastMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;

/// A `HashSet` hashed by foldhash.
pub type FastSet<K> = std::collections::HashSet<K, foldhash::fast::RandomState>;

/// An empty [`FastMap`] with room for `capacity` entries.
#[must_use]
pub fn map_with_capacity<K, V>(capacity: usize) -> FastMap<K, V> {
    FastMap::with_capacity_and_hasher(capacity, foldhash::fast::RandomState::default())
}

/// An empty [`FastSet`] with room for `capacity` keys.
#[must_use]
pub fn set_with_capacity<K>(capacity: usize) -> FastSet<K> {
    FastSet::with_capacity_and_hasher(capacity, foldhash::fast::RandomState::default())
}
