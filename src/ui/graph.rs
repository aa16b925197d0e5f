//! History drawn as text: one-row sparklines (blocks or ASCII) and multi-row braille graphs. Gaps in the
//! history stay blank; they are never drawn as zero.

const BLOCKS: [char; 9] = [' ', '▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
const ASCII_LEVELS: [char; 5] = [' ', '.', ':', '|', '#'];

/// Reduces `values` (oldest first) to `n` buckets, keeping each bucket's maximum; a bucket of gaps is a gap.
#[must_use]
pub fn buckets(values: &[Option<f64>], n: usize) -> Vec<Option<f64>> {
    if n == 0 {
        return Vec::new();
    }
    if values.len() <= n {
        let mut out = vec![None; n - values.len()];
        out.extend_from_slice(values);
        return out;
    }
    (0..n)
        .map(|i| {
            let from = i * values.len() / n;
            let to = ((i + 1) * values.len() / n).max(from + 1);
            values[from..to].iter().flatten().copied().reduce(f64::max)
        })
        .collect()
}

/// A one-row sparkline of `width` cells for values between 0 and `max`.
#[must_use]
pub fn sparkline(values: &[Option<f64>], max: f64, width: usize, ascii: bool) -> String {
    let levels: &[char] = if ascii { &ASCII_LEVELS } else { &BLOCKS };
    let top = levels.len() - 1;
    buckets(values, width)
        .into_iter()
        .map(|v| match v {
            None => ' ',
            Some(v) => {
                let share = if max > 0.0 { (v / max).clamp(0.0, 1.0) } else { 0.0 };
                #[expect(
                    clippy::cast_possible_truncation,
                    clippy::cast_sign_loss,
                    reason = "a level from a share in 0..=1 of the graph's height"
                )]
                let level = (share * top as f64).round() as usize;
                // A present nonzero reading shows at least the lowest mark, so it differs from a gap.
                levels[if v > 0.0 { level.max(1) } else { level }]
            }
        })
        .collect()
}

/// The dots of the left side of a braille cell filled from the bottom, by how many (0 to 4) are filled.
const LEFT_DOTS: [u32; 5] = [0, 0x40, 0x44, 0x46, 0x47];
/// The same for the right side.
const RIGHT_DOTS: [u32; 5] = [0, 0x80, 0xa0, 0xb0, 0xb8];

/// A braille graph `width` cells wide and `height` rows high (2 samples per cell, 4 dots per row), filled
/// from the bottom; ASCII draws one sample per cell with '#'.
#[must_use]
pub fn area_graph(values: &[Option<f64>], max: f64, width: usize, height: usize, ascii: bool) -> Vec<String> {
    let per_cell = if ascii { 1 } else { 2 };
    let dots_per_row = if ascii { 1 } else { 4 };
    let samples = buckets(values, width * per_cell);
    let total_dots = height * dots_per_row;
    #[expect(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "heights from shares in 0..=1 of the graph's height"
    )]
    let heights: Vec<Option<usize>> = samples
        .iter()
        .map(|v| {
            v.map(|v| {
                let share = if max > 0.0 { (v / max).clamp(0.0, 1.0) } else { 0.0 };
                let dots = (share * total_dots as f64).round() as usize;
                if v > 0.0 { dots.max(1) } else { dots }
            })
        })
        .collect();
    (0..height)
        .map(|row| {
            // Row 0 is the top; the dots of this row cover heights (bottom-up) from `base` to `base + dots_per_row`.
            let base = (height - 1 - row) * dots_per_row;
            let mut line = String::with_capacity(width * if ascii { 1 } else { 3 });
            for cell in 0..width {
                if ascii {
                    line.push(if heights[cell].is_some_and(|h| h > base) { '#' } else { ' ' });
                    continue;
                }
                let filled = |side: usize| heights[cell * 2 + side].unwrap_or(0).saturating_sub(base).min(4);
                let bits = LEFT_DOTS[filled(0)] | RIGHT_DOTS[filled(1)];
                line.push(char::from_u32(0x2800 + bits).unwrap_or(' '));
            }
            line
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sparkline_keeps_gaps_blank_and_scales() {
        let values = [Some(0.0), None, Some(50.0), Some(100.0)];
        assert_eq!(
            sparkline(&values, 100.0, 4, false),
            " ▄█".chars().fold(String::from(" "), |mut s, c| {
                s.push(c);
                s
            })
        );
        assert_eq!(
            sparkline(&values, 100.0, 6, true),
            "   :#".chars().fold(String::from(" "), |mut s, c| {
                s.push(c);
                s
            })
        );
    }

    /// The braille cell for two columns `left` and `right` dots high (bottom-up), dot by dot.
    fn cell_by_dots(left: usize, right: usize) -> char {
        let mut bits = 0u32;
        for (h, column_bits) in [(left, [0x40, 0x04, 0x02, 0x01]), (right, [0x80, 0x20, 0x10, 0x08])] {
            for (dot, bit) in column_bits.iter().enumerate() {
                if h > dot {
                    bits |= bit;
                }
            }
        }
        char::from_u32(0x2800 + bits).unwrap_or(' ')
    }

    #[test]
    fn every_braille_cell_is_its_dots() {
        for left in 0..=4 {
            for right in 0..=4 {
                let values = [Some(left as f64 * 25.0), Some(right as f64 * 25.0)];
                let graph = area_graph(&values, 100.0, 1, 1, false);
                assert_eq!(graph, vec![cell_by_dots(left, right).to_string()], "{left} {right}");
            }
        }
    }

    #[test]
    fn braille_fills_from_the_bottom() {
        let full = area_graph(&[Some(100.0), Some(100.0)], 100.0, 1, 2, false);
        assert_eq!(full, vec!["⣿".to_owned(), "⣿".to_owned()]);
        let half = area_graph(&[Some(50.0), None], 100.0, 1, 2, false);
        assert_eq!(half, vec!["⠀".to_owned(), "⡇".to_owned()]);
        let ascii = area_graph(&[Some(100.0), Some(40.0)], 100.0, 2, 2, true);
        assert_eq!(ascii, vec!["# ".to_owned(), "##".to_owned()]);
    }
}
