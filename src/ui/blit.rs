//! Writing lines of styled text straight into the buffer: the cells ratatui's `Clear` followed by a left-aligned,
//! unwrapped `Paragraph` would leave, in one pass and without splitting plain text into graphemes. Nearly every
//! widget draws through [`super::paint::fill`], so this is where a frame's drawing time goes.
//!
//! The result is the same cell for cell: the area is reset and given the base style; each line is cut at the
//! first grapheme that does not fit (a grapheme wider than the whole area is skipped), and each grapheme written
//! takes the span's style over the line's. Spans made only of characters that are each one grapheme one cell wide
//! ([`simple`]: printable ASCII, Latin-1, arrows, box drawing, blocks, shapes and braille) are written a character
//! to a cell; any other span goes through ratatui's own grapheme split and widths.

use ratatui::buffer::{Buffer, Cell, CellWidth};
use ratatui::layout::{Alignment, Rect};
use ratatui::style::Style;
use ratatui::symbols::border;
use ratatui::text::Line;
use ratatui::widgets::{Clear, Paragraph, Widget};

/// Whether `c` is a whole grapheme one cell wide next to any other such character: it neither joins the one
/// before (no combining mark, joiner or spacing mark) nor the one after (no prepended mark), and it is no control.
#[must_use]
pub fn simple(c: char) -> bool {
    matches!(c,
        ' '..='~'
        | '\u{a1}'..='\u{ac}'
        | '\u{ae}'..='\u{ff}'
        | '\u{2190}'..='\u{21ff}'
        | '\u{2500}'..='\u{25fa}'
        | '\u{2800}'..='\u{28ff}')
}

/// Resets `area` to `style` and writes `lines` into it from the top, each cut to the width; lines past the
/// bottom are not drawn. The same cells as `Clear` then `Paragraph::new(lines).style(style)`.
pub fn fill(area: Rect, buf: &mut Buffer, lines: &[Line<'_>], style: Style) {
    if lines.iter().any(|l| l.alignment.is_some_and(|a| a != Alignment::Left)) {
        // Not drawn by the monitor; ratatui places aligned lines.
        Clear.render(area, buf);
        Paragraph::new(lines.to_vec()).style(style).render(area, buf);
        return;
    }
    let area = area.intersection(buf.area);
    if area.is_empty() {
        return;
    }
    let mut blank = Cell::EMPTY;
    blank.set_style(style);
    let (x0, width) = (area.x - buf.area.x, usize::from(area.width));
    let stride = usize::from(buf.area.width);
    for row in 0..area.height {
        let from = usize::from(area.y - buf.area.y + row) * stride + usize::from(x0);
        let cells = &mut buf.content[from..from + width];
        cells.fill(blank.clone());
        if let Some(line) = lines.get(usize::from(row)) {
            write_line(cells, line);
        }
    }
}

/// Gives every cell of `area` `style` over its own (what a `Block` with only a style draws), row by row.
pub fn restyle(area: Rect, buf: &mut Buffer, style: Style) {
    let area = area.intersection(buf.area);
    let stride = usize::from(buf.area.width);
    for row in area.top()..area.bottom() {
        let from = usize::from(row - buf.area.y) * stride + usize::from(area.x - buf.area.x);
        for cell in &mut buf.content[from..from + usize::from(area.width)] {
            cell.set_style(style);
        }
    }
}

/// Draws a border of `set` in `style` around `area` with `title` at the left of its top side: the cells a
/// `Block` with all borders and that title draws, without restyling the whole area first as the block does.
pub fn boxed(area: Rect, buf: &mut Buffer, set: &border::Set<'_>, style: Style, title: &Line<'_>) {
    let area = area.intersection(buf.area);
    if area.is_empty() {
        return;
    }
    let (left, top) = (area.left(), area.top());
    let (right, bottom) = (area.right() - 1, area.bottom() - 1);
    let mut put = |x: u16, y: u16, symbol: &str| {
        buf[(x, y)].set_symbol(symbol).set_style(style);
    };
    // The order a block draws in: the sides, then the corners.
    for y in top..=bottom {
        put(left, y, set.vertical_left);
    }
    for x in left..=right {
        put(x, top, set.horizontal_top);
    }
    for y in top..=bottom {
        put(right, y, set.vertical_right);
    }
    for x in left..=right {
        put(x, bottom, set.horizontal_bottom);
    }
    put(right, bottom, set.bottom_right);
    put(right, top, set.top_right);
    put(left, bottom, set.bottom_left);
    put(left, top, set.top_left);
    let room = area.width.saturating_sub(2);
    if room > 0 {
        let width = u16::try_from(title.width()).unwrap_or(u16::MAX).min(room);
        title.render(Rect { x: left + 1, y: top, width, height: 1 }, buf);
    }
}

/// Writes `line` into `cells` (already reset to the base style) from the first, cut at the first
/// grapheme that does not fit.
fn write_line(cells: &mut [Cell], line: &Line<'_>) {
    let max = cells.len();
    let mut x = 0;
    for span in &line.spans {
        let style = line.style.patch(span.style);
        let text = span.content.as_ref();
        if text.chars().all(simple) {
            for c in text.chars() {
                let Some(cell) = cells.get_mut(x) else { return };
                cell.set_char(c).set_style(style);
                x += 1;
            }
            continue;
        }
        for grapheme in span.styled_graphemes(line.style) {
            let w = usize::from(grapheme.symbol.cell_width());
            if w > max {
                continue;
            }
            if x + w > max {
                return;
            }
            if w > 0 {
                cells[x].set_symbol(grapheme.symbol).set_style(grapheme.style);
            }
            x += w;
        }
    }
}

#[cfg(test)]
mod tests {
    use ratatui::style::{Color, Modifier};
    use ratatui::text::Span;

    use super::*;

    /// Every simple character is one grapheme, one cell wide, beside an ASCII letter on either side and beside
    /// itself.
    #[test]
    fn simple_characters_are_single_cells_that_join_nothing() {
        let all = (0..=0x2fff_u32).filter_map(char::from_u32).filter(|&c| simple(c));
        for c in all {
            for pair in [format!("a{c}"), format!("{c}a"), format!("{c}{c}")] {
                let span = Span::raw(pair.clone());
                let graphemes: Vec<_> = span.styled_graphemes(Style::default()).collect();
                assert_eq!(graphemes.len(), 2, "{c:?} in {pair:?}");
                assert!(graphemes.iter().all(|g| g.symbol.cell_width() == 1), "{c:?} in {pair:?}");
            }
        }
    }

    fn by_paragraph(area: Rect, lines: &[Line<'_>], style: Style, under: &Buffer) -> Buffer {
        let mut buf = under.clone();
        Clear.render(area, &mut buf);
        Paragraph::new(lines.to_vec()).style(style).render(area, &mut buf);
        buf
    }

    #[test]
    fn the_same_cells_as_clear_and_a_paragraph() {
        let base = Style::default().fg(Color::White).bg(Color::Black);
        let red = Style::default().fg(Color::Red).add_modifier(Modifier::BOLD);
        let lines = vec![
            Line::from(vec![Span::styled("UTL ", red), Span::raw("████░░░░ 50%"), Span::raw(" SM 1980MHz")]),
            Line::from(vec![Span::raw("wide 漢字 and e\u{301} combining"), Span::styled("⣿⡇→▲", red)])
                .style(Style::default().bg(Color::Blue)),
            Line::from("a line far too long for the area it is drawn into, cut at the edge"),
            Line::from(vec![Span::raw("tab\there"), Span::raw("漢漢漢漢漢漢漢漢漢漢漢漢漢漢漢漢漢漢")]),
            Line::from(""),
            Line::from("past the bottom"),
        ];
        let mut under = Buffer::empty(Rect::new(0, 0, 40, 8));
        under.set_string(0, 0, "x".repeat(40 * 8), Style::default().fg(Color::Green));
        for area in [Rect::new(2, 1, 30, 5), Rect::new(0, 0, 40, 8), Rect::new(5, 2, 1, 3), Rect::new(30, 6, 20, 9)] {
            let mut buf = under.clone();
            fill(area, &mut buf, &lines, base);
            assert_eq!(buf, by_paragraph(area, &lines, base, &under), "{area:?}");
            let (mut restyled, mut block) = (under.clone(), under.clone());
            restyle(area, &mut restyled, red);
            ratatui::widgets::Block::default().style(red).render(area, &mut block);
            assert_eq!(restyled, block, "{area:?}");
        }
    }

    #[test]
    fn the_same_cells_as_a_block_with_borders_and_a_title() {
        use ratatui::widgets::{Block, Borders};
        let red = Style::default().fg(Color::Red);
        let title = Line::from(vec![Span::styled(" GPU 0 ", red.add_modifier(Modifier::BOLD)), Span::raw("│ H200 ")]);
        let mut under = Buffer::empty(Rect::new(0, 0, 20, 6));
        under.set_string(0, 0, "x".repeat(20 * 6), Style::default().fg(Color::Green));
        for set in [border::ROUNDED, border::PLAIN] {
            for area in [Rect::new(1, 1, 18, 4), Rect::new(0, 0, 8, 2), Rect::new(3, 3, 1, 1), Rect::new(5, 0, 2, 9)] {
                let (mut drawn, mut block) = (under.clone(), under.clone());
                boxed(area, &mut drawn, &set, red, &title);
                Block::default()
                    .borders(Borders::ALL)
                    .border_set(set)
                    .border_style(red)
                    .title(title.clone())
                    .render(area, &mut block);
                assert_eq!(drawn, block, "{area:?}");
            }
        }
    }
}
