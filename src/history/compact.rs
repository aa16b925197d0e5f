//! Optional readings kept in the bytes of the reading itself, which every [`Series`](super::Series) holds.
//! `Option<u64>` takes 16 bytes where a `u64` takes 8, and `Option<u32>` or `Option<f32>` 8 where the reading takes
//! 4: a process keeps up to 301 samples of a dozen series (8 GPUs × 1,000 processes keep 300,000 of them), and a GPU
//! 9,000 samples of 26 series at 0.1 s.

use std::fmt;

use super::Ring;

/// A reading type with a value it never takes as a reading, which then stands for "no reading".
pub trait Niche: Copy {
    /// The value that stands for `None`.
    const NONE: Self;
    /// Whether this is the value that stands for `None`.
    fn is_none(self) -> bool;
    /// A reading moved off the `None` value: a count or rate at the type's maximum keeps the maximum less one
    /// (it was saturated anyway). A NaN stays NaN and reads back as a gap, which is what a NaN reading is.
    #[must_use]
    fn to_some(self) -> Self;
}

macro_rules! niche_at_max {
    ($($ty:ty),+) => {$(
        impl Niche for $ty {
            const NONE: Self = <$ty>::MAX;
            fn is_none(self) -> bool {
                self == <$ty>::MAX
            }
            fn to_some(self) -> Self {
                self.min(<$ty>::MAX - 1)
            }
        }
    )+};
}

niche_at_max!(u32, u64);

impl Niche for f32 {
    const NONE: Self = f32::NAN;
    fn is_none(self) -> bool {
        self.is_nan()
    }
    fn to_some(self) -> Self {
        self
    }
}

/// An `Option<T>` in the size of a `T`: `None` is stored as [`Niche::NONE`].
#[derive(Clone, Copy)]
pub struct Compact<T: Niche>(T);

impl<T: Niche> Compact<T> {
    /// No reading.
    pub const NONE: Self = Self(T::NONE);

    /// Packs a reading (see [`Niche::to_some`] for the one value a reading cannot keep).
    #[must_use]
    pub fn new(value: Option<T>) -> Self {
        Self(value.map_or(T::NONE, T::to_some))
    }

    /// The reading, or `None` for a gap.
    #[must_use]
    pub fn get(self) -> Option<T> {
        (!self.0.is_none()).then_some(self.0)
    }
}

impl<T: Niche> From<Option<T>> for Compact<T> {
    fn from(value: Option<T>) -> Self {
        Self::new(value)
    }
}

impl<T: Niche + PartialEq> PartialEq for Compact<T> {
    fn eq(&self, other: &Self) -> bool {
        self.get() == other.get()
    }
}

impl<T: Niche + fmt::Debug> fmt::Debug for Compact<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.get().fmt(f)
    }
}

/// What reads a ring of optional readings, whichever way it stores them: a [`Series`](super::Series) (compact
/// readings) or a ring of `Option`s (a process's state and input record, which have no spare value).
pub trait Readings<T: Copy> {
    /// The readings from `start` (an index, 0 = oldest) to the newest, `None` for a gap.
    fn readings_from(&self, start: usize) -> impl DoubleEndedIterator<Item = Option<T>> + '_;
    /// The reading at `index` (`None`: a gap or past the end).
    fn reading(&self, index: usize) -> Option<T>;
    /// The newest reading (`None`: a gap or no sample).
    fn last_reading(&self) -> Option<T>;
    /// Every reading, oldest first.
    fn readings(&self) -> impl DoubleEndedIterator<Item = Option<T>> + '_ {
        self.readings_from(0)
    }
}

impl<T: Copy> Readings<T> for Ring<Option<T>> {
    fn readings_from(&self, start: usize) -> impl DoubleEndedIterator<Item = Option<T>> + '_ {
        self.iter_from(start).copied()
    }
    fn reading(&self, index: usize) -> Option<T> {
        self.get(index).copied().flatten()
    }
    fn last_reading(&self) -> Option<T> {
        self.last().copied().flatten()
    }
}

impl<T: Niche> Readings<T> for Ring<Compact<T>> {
    fn readings_from(&self, start: usize) -> impl DoubleEndedIterator<Item = Option<T>> + '_ {
        self.iter_from(start).map(|c| c.get())
    }
    fn reading(&self, index: usize) -> Option<T> {
        self.get(index).and_then(|c| c.get())
    }
    fn last_reading(&self) -> Option<T> {
        self.last().and_then(|c| c.get())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_compact_reading_takes_the_size_of_the_reading() {
        assert_eq!(std::mem::size_of::<Compact<u64>>(), 8);
        assert_eq!(std::mem::size_of::<Compact<u32>>(), 4);
        assert_eq!(std::mem::size_of::<Compact<f32>>(), 4);
    }

    #[test]
    fn readings_and_gaps_read_back_as_they_were_pushed() {
        for value in [None, Some(0_u64), Some(1), Some(u64::MAX - 1)] {
            assert_eq!(Compact::new(value).get(), value);
        }
        for value in [None, Some(0_u32), Some(7), Some(u32::MAX - 1)] {
            assert_eq!(Compact::new(value).get(), value);
        }
        for value in [None, Some(0.0_f32), Some(-3.5), Some(f32::INFINITY)] {
            assert_eq!(Compact::new(value).get(), value);
        }
    }

    #[test]
    fn the_one_value_a_reading_cannot_keep_reads_back_saturated_not_as_a_gap() {
        assert_eq!(Compact::new(Some(u64::MAX)).get(), Some(u64::MAX - 1));
        assert_eq!(Compact::new(Some(u32::MAX)).get(), Some(u32::MAX - 1));
        assert_eq!(Compact::new(Some(f32::NAN)).get(), None, "a NaN reading is a gap");
        assert_eq!(Compact::<u64>::NONE, Compact::new(None));
        assert_eq!(format!("{:?}", Compact::new(Some(3_u32))), "Some(3)");
    }
}
