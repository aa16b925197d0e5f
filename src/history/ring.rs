//! The fixed-capacity ring every series is made of, and [`Series`], a ring of readings with gaps.

use std::collections::VecDeque;

/// A fixed-capacity ring: pushing past the capacity drops the oldest value. Index 0 is the oldest.
#[derive(Debug, Clone, PartialEq)]
pub struct Ring<T> {
    values: VecDeque<T>,
    capacity: usize,
}

impl<T> Ring<T> {
    /// An empty ring that holds at most `capacity` values (at least one).
    #[must_use]
    pub fn new(capacity: usize) -> Self {
        let capacity = capacity.max(1);
        Self { values: VecDeque::new(), capacity }
    }

    /// Appends a value, dropping the oldest when full. The buffer grows by doubling up to the capacity and never
    /// past it (a `VecDeque` left to itself would round 9,000 slots up to 16,384).
    pub fn push(&mut self, value: T) {
        let len = self.values.len();
        if len == self.capacity {
            self.values.pop_front();
        } else if len == self.values.capacity() {
            let want = (len * 2).max(4).min(self.capacity);
            self.values.reserve_exact(want - len);
        }
        self.values.push_back(value);
    }

    /// Removes and returns the oldest value.
    pub fn pop_front(&mut self) -> Option<T> {
        self.values.pop_front()
    }

    #[must_use]
    pub fn len(&self) -> usize {
        self.values.len()
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    #[must_use]
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// The newest value.
    #[must_use]
    pub fn last(&self) -> Option<&T> {
        self.values.back()
    }

    /// The value at `index` (0 is the oldest).
    #[must_use]
    pub fn get(&self, index: usize) -> Option<&T> {
        self.values.get(index)
    }

    /// Oldest to newest.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &T> + ExactSizeIterator + '_ {
        self.values.iter()
    }

    /// Bytes this ring holds on the heap (its allocated slots, full or not).
    #[must_use]
    pub fn heap_bytes(&self) -> usize {
        self.values.capacity() * std::mem::size_of::<T>()
    }

    /// The values from `start` (an index, 0 = oldest) to the newest.
    pub fn iter_from(&self, start: usize) -> impl DoubleEndedIterator<Item = &T> + '_ {
        self.values.range(start.min(self.values.len())..)
    }
}

/// A ring of optional readings, each in the bytes of the reading (`None`, a gap, is a value the reading never
/// takes: see [`Compact`](super::Compact)).
pub type Series<T> = Ring<super::Compact<T>>;
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ring_drops_the_oldest_when_full() {
        let mut ring = Ring::new(3);
        for v in 1..=5 {
            ring.push(v);
        }
        assert_eq!(ring.iter().copied().collect::<Vec<_>>(), vec![3, 4, 5]);
        assert_eq!(ring.len(), 3);
        assert_eq!(ring.last(), Some(&5));
    }

    #[test]
    fn ring_buffers_never_grow_past_their_capacity() {
        let mut ring = Ring::new(9000);
        for v in 0..20_000_u64 {
            ring.push(v);
        }
        assert_eq!(ring.len(), 9000);
        assert_eq!(ring.heap_bytes(), 9000 * std::mem::size_of::<u64>(), "no slack past the capacity");
    }
}
