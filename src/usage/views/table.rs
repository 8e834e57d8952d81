//! Tables for a terminal and for CSV: columns, grouped numbers, and the one
//! rule of fitting a width (drop the least important columns first, then
//! cut the flexible text column), so a wide view still reads in 80 columns.

use crate::usage::views::picture::Glyphs;

/// How a column's cells line up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Align {
    Left,
    Right,
}

/// One column: its header, alignment, and importance (a lower `keep` is
/// dropped first when the table is too wide; 0 is never dropped).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column {
    pub header: &'static str,
    pub(crate) align: Align,
    pub keep: u8,
    /// The one column whose cells may be cut (with `…`) to fit.
    pub(crate) flexible: bool,
    /// What [`dropped_note`] calls it: its header unless that alone is
    /// ambiguous ([`Column::named`]).
    pub name: &'static str,
}

impl Column {
    pub fn text(header: &'static str, keep: u8) -> Column {
        Column {
            header,
            align: Align::Left,
            keep,
            flexible: false,
            name: header,
        }
    }
    pub fn number(header: &'static str, keep: u8) -> Column {
        Column {
            align: Align::Right,
            ..Column::text(header, keep)
        }
    }
    /// The column called `name` where its header is not enough.
    pub fn named(self, name: &'static str) -> Column {
        Column { name, ..self }
    }
    pub(crate) fn flexible(header: &'static str, keep: u8) -> Column {
        Column {
            flexible: true,
            ..Column::text(header, keep)
        }
    }
}

/// How a row is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowKind {
    Plain,
    /// A breakdown line under a row (dim when coloured).
    Detail,
    /// The totals line (bold when coloured, ruled off above).
    Total,
}

/// A table: plain cells (CSV gets the raw values separately).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Table {
    pub columns: Vec<Column>,
    pub rows: Vec<(RowKind, Vec<String>)>,
}

/// Terminal styling: the width to fit, whether to colour, the glyphs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Style {
    pub width: usize,
    pub color: bool,
    /// How pictures (the daily view's cost bars) are drawn.
    pub glyphs: Glyphs,
}

const GAP: usize = 2;
/// A flexible column is cut no narrower than this (or its header), so a
/// path or model list stays readable: number columns go first.
const FLEX_FLOOR: usize = 20;
const BOLD: &str = "\x1b[1m";
const DIM: &str = "\x1b[2m";
const RESET: &str = "\x1b[0m";

fn chars(s: &str) -> usize {
    s.chars().count()
}

/// `s` cut to `width` characters, ending in `…` when cut.
pub fn cut(s: &str, width: usize) -> String {
    if chars(s) <= width {
        return s.to_string();
    }
    if width == 0 {
        return String::new();
    }
    let mut out: String = s.chars().take(width - 1).collect();
    out.push('…');
    out
}

/// `line` broken at spaces into lines of at most `width` characters, each
/// after the first indented by `indent` spaces (at most half the width): a
/// note under a table, or a row whose text continues under its picture. A
/// word longer than a line is cut where the line ends.
pub(crate) fn wrap(line: &str, width: usize, indent: usize) -> Vec<String> {
    let width = width.max(1);
    let indent = indent.min(width / 2);
    let mut out = Vec::new();
    let (mut rest, mut lead) = (line, 0);
    loop {
        let room = width - lead;
        if chars(rest) <= room {
            out.push(format!("{}{rest}", " ".repeat(lead)));
            return out;
        }
        // The last space within the first `room` + 1 characters (a space
        // right after a full line breaks there), not a leading one.
        let space = rest
            .char_indices()
            .take(room + 1)
            .filter(|&(i, c)| c == ' ' && !rest[..i].trim().is_empty())
            .map(|(i, _)| i)
            .last();
        let (head, tail) = match space {
            Some(i) => (rest[..i].trim_end(), rest[i..].trim_start()),
            None => {
                let at = rest.char_indices().nth(room).map_or(rest.len(), |(i, _)| i);
                (&rest[..at], &rest[at..])
            }
        };
        out.push(format!("{}{head}", " ".repeat(lead)));
        if tail.is_empty() {
            return out;
        }
        (rest, lead) = (tail, indent);
    }
}

/// The line under a table that had to leave columns out to fit: which
/// ones, so a narrow terminal never shows a partial sum as if it were
/// whole (Input + Output alone can be a few percent of Total).
pub(crate) fn dropped_note(width: usize, dropped: &[&str]) -> Option<String> {
    if dropped.is_empty() {
        return None;
    }
    Some(format!(
        "Hidden to fit {width} columns: {}.",
        dropped.join(", ")
    ))
}

impl Table {
    /// The lines of the table fitted to `style.width` (pure), then, when
    /// columns were left out, the [`dropped_note`] naming them.
    pub fn lines(&self, style: Style) -> Vec<String> {
        let (shown, widths) = self.fit(style.width);
        let at = (&shown[..], &widths[..]);
        let headers: Vec<String> = self.columns.iter().map(|c| c.header.to_string()).collect();
        let mut out = vec![self.line(at, &headers, (RowKind::Plain, true), style)];
        for (kind, cells) in &self.rows {
            if *kind == RowKind::Total {
                out.push("─".repeat(span(&shown, &widths).min(style.width)));
            }
            out.push(self.line(at, cells, (*kind, false), style));
        }
        let dropped: Vec<&str> = (0..self.columns.len())
            .filter(|i| !shown.contains(i))
            .map(|i| self.columns[i].name)
            .collect();
        if let Some(note) = dropped_note(style.width, &dropped) {
            out.extend(wrap(&note, style.width, 0));
        }
        out
    }

    /// The columns shown at `width` and every column's width: the
    /// flexible column is cut (down to FLEX_FLOOR characters) while that
    /// is enough, else the least important column (the rightmost of
    /// equals) is dropped and the fit tried again. Then each dropped column
    /// that fits beside those left (a narrow one dropped before a wide
    /// one), the most important first, is shown again: the widest set the
    /// order allows, every hidden column named under the table.
    fn fit(&self, width: usize) -> (Vec<usize>, Vec<usize>) {
        let mut shown: Vec<usize> = (0..self.columns.len()).collect();
        let natural = |i: usize| {
            self.rows
                .iter()
                .map(|(_, cells)| cells.get(i).map_or(0, |c| chars(c)))
                .chain(std::iter::once(chars(self.columns[i].header)))
                .max()
                .unwrap_or(0)
        };
        let natural: Vec<usize> = (0..self.columns.len()).map(natural).collect();
        let mut widths = natural.clone();
        loop {
            let over = span(&shown, &natural).saturating_sub(width);
            widths.clone_from(&natural);
            if over == 0 {
                break;
            }
            let flexible = shown.iter().copied().find(|&i| self.columns[i].flexible);
            if let Some(f) = flexible {
                let floor = chars(self.columns[f].header).max(natural[f].min(FLEX_FLOOR));
                if natural[f].saturating_sub(over) >= floor {
                    widths[f] = natural[f] - over;
                    break;
                }
            }
            let victim = shown
                .iter()
                .enumerate()
                .filter(|(_, i)| self.columns[**i].keep > 0)
                .min_by_key(|(pos, i)| (self.columns[**i].keep, usize::MAX - pos));
            match victim {
                Some((pos, _)) => {
                    shown.remove(pos);
                }
                None => {
                    if let Some(f) = flexible {
                        widths[f] = natural[f].min(chars(self.columns[f].header).max(4));
                    }
                    break;
                }
            }
        }
        let mut dropped: Vec<usize> = (0..self.columns.len())
            .filter(|i| !shown.contains(i))
            .collect();
        dropped.sort_by_key(|&i| (std::cmp::Reverse(self.columns[i].keep), i));
        for i in dropped {
            let mut with = shown.clone();
            with.push(i);
            with.sort_unstable();
            if span(&with, &widths) <= width {
                shown = with;
            }
        }
        (shown, widths)
    }

    /// One line of `cells` in the columns `shown` at `widths`: padded and
    /// aligned, the header and the total bold and a detail dim in colour.
    fn line(
        &self,
        (shown, widths): (&[usize], &[usize]),
        cells: &[String],
        (kind, header): (RowKind, bool),
        style: Style,
    ) -> String {
        let mut out = String::new();
        for (n, &i) in shown.iter().enumerate() {
            let w = widths[i];
            let text = cut(cells.get(i).map_or("", String::as_str), w);
            let pad = " ".repeat(w - chars(&text));
            if n > 0 {
                out.push_str(&" ".repeat(GAP));
            }
            match self.columns[i].align {
                Align::Left if n + 1 == shown.len() => out.push_str(&text),
                Align::Left => {
                    out.push_str(&text);
                    out.push_str(&pad);
                }
                Align::Right => {
                    out.push_str(&pad);
                    out.push_str(&text);
                }
            }
        }
        let out = out.trim_end().to_string();
        match (style.color, header, kind) {
            (true, true, _) | (true, false, RowKind::Total) => format!("{BOLD}{out}{RESET}"),
            (true, false, RowKind::Detail) => format!("{DIM}{out}{RESET}"),
            _ => out,
        }
    }
}

/// The width of the columns `shown` at `widths`, with the gaps between.
fn span(shown: &[usize], widths: &[usize]) -> usize {
    shown.iter().map(|&i| widths[i]).sum::<usize>() + GAP * shown.len().saturating_sub(1)
}

/// `1234567` as `1,234,567`.
pub fn group(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Dollars with cents, grouped: `$1,234.56`; `<$0.01` for a cost that
/// rounds to no cent (so spend is never shown as `$0.00`).
pub(crate) fn dollars(usd: f64) -> String {
    let cents = cents(usd);
    if cents == 0 && usd > 0.0 {
        return LESS_THAN_A_CENT.to_string();
    }
    cents_text(cents)
}

/// A cost too small to round to a cent.
pub(crate) const LESS_THAN_A_CENT: &str = "<$0.01";

/// Dollars rounded to whole cents, as [`dollars`] shows them.
pub(crate) fn cents(usd: f64) -> u64 {
    (usd * 100.0).round().max(0.0) as u64
}

/// Whole cents as `$1,234.56`.
pub(crate) fn cents_text(cents: u64) -> String {
    format!("${}.{:02}", group(cents / 100), cents % 100)
}

/// One CSV field (RFC 4180 quoting when needed).
pub(crate) fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// CSV text of a header and rows.
pub fn csv(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut out = String::new();
    let line = |cells: &mut dyn Iterator<Item = String>, out: &mut String| {
        let joined: Vec<String> = cells.map(|c| csv_field(&c)).collect();
        out.push_str(&joined.join(","));
        out.push_str("\r\n");
    };
    line(&mut header.iter().map(|h| h.to_string()), &mut out);
    for r in rows {
        line(&mut r.iter().cloned(), &mut out);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> Table {
        Table {
            columns: vec![
                Column::text("Day", 0),
                Column::flexible("Models", 1),
                Column::number("Input", 2),
                Column::number("Cost", 0),
            ],
            rows: vec![
                (
                    RowKind::Plain,
                    vec![
                        "2026-11-29".into(),
                        "claude-opus-4-6, gpt-5".into(),
                        "1,000".into(),
                        "$1.00".into(),
                    ],
                ),
                (
                    RowKind::Total,
                    vec![
                        "Total".into(),
                        String::new(),
                        "1,000".into(),
                        "$1.00".into(),
                    ],
                ),
            ],
        }
    }

    #[test]
    fn numbers_are_grouped_and_dollars_have_cents() {
        assert_eq!(group(0), "0");
        assert_eq!(group(999), "999");
        assert_eq!(group(1000), "1,000");
        assert_eq!(group(1_234_567), "1,234,567");
        assert_eq!(dollars(1_234.565_1), "$1,234.57");
        assert_eq!(dollars(0.004), "<$0.01");
        assert_eq!(dollars(0.005), "$0.01");
        assert_eq!(dollars(0.0), "$0.00");
    }

    #[test]
    fn a_wide_table_fits_by_cutting_then_dropping() {
        let wide = table().lines(Style {
            width: 160,
            color: false,
            glyphs: Glyphs::Unicode,
        });
        assert_eq!(
            wide,
            [
                "Day         Models                  Input   Cost",
                "2026-11-29  claude-opus-4-6, gpt-5  1,000  $1.00",
                "────────────────────────────────────────────────",
                "Total                               1,000  $1.00",
            ]
        );
        // 46 columns: Models is cut to 20; 40: that is not enough, so
        // Models (keep 1) goes and Input (keep 2) stays.
        let cut = table().lines(Style {
            width: 46,
            color: false,
            glyphs: Glyphs::Unicode,
        });
        assert_eq!(cut[1], "2026-11-29  claude-opus-4-6, gp…  1,000  $1.00");
        let narrow = table().lines(Style {
            width: 40,
            color: false,
            glyphs: Glyphs::Unicode,
        });
        assert_eq!(
            narrow,
            [
                "Day         Input   Cost",
                "2026-11-29  1,000  $1.00",
                "────────────────────────",
                "Total       1,000  $1.00",
                "Hidden to fit 40 columns: Models.",
            ]
        );
        // A table that fits says nothing more.
        assert_eq!(wide.len(), 4);
        let colored = table().lines(Style {
            width: 30,
            color: true,
            glyphs: Glyphs::Unicode,
        });
        assert_eq!(colored[0], "\x1b[1mDay         Input   Cost\x1b[0m");
    }

    #[test]
    fn a_narrow_column_dropped_before_a_wide_one_is_shown_again() {
        // Day (10, never dropped), a 60-character Models (keep 2), Cache
        // (5, keep 1), Cost (5, keep 3). At 40 columns: 10 + 2 + 60 + 2 +
        // 5 + 2 + 5 = 86 is over; Cache goes first (keep 1), 79 is still
        // over; then Models, 10 + 2 + 5 = 17. Cache fits again beside
        // them: 10 + 2 + 5 + 2 + 5 = 24 <= 40.
        let models = "m".repeat(60);
        let t = Table {
            columns: vec![
                Column::text("Day", 0),
                Column::text("Models", 2),
                Column::number("Cache", 1),
                Column::number("Cost", 3),
            ],
            rows: vec![(
                RowKind::Plain,
                vec!["2026-11-29".into(), models, "1,000".into(), "$1.00".into()],
            )],
        };
        let lines = t.lines(Style {
            width: 40,
            color: false,
            glyphs: Glyphs::Unicode,
        });
        assert_eq!(
            lines,
            [
                "Day         Cache   Cost",
                "2026-11-29  1,000  $1.00",
                "Hidden to fit 40 columns: Models.",
            ]
        );
    }

    #[test]
    fn notes_wrap_at_spaces_to_the_width() {
        let note = "Hidden to fit 20 columns: Models, Cache write, Cache read.";
        assert_eq!(
            wrap(note, 20, 0),
            [
                "Hidden to fit 20",
                "columns: Models,",
                "Cache write, Cache",
                "read."
            ]
        );
        // A hanging indent, and a word longer than a line cut at its end.
        assert_eq!(
            wrap("Cost  ▁▂▃▄▅▆▇█  $1.00 in all", 12, 6),
            [
                "Cost",
                "      ▁▂▃▄▅▆",
                "      ▇█",
                "      $1.00",
                "      in all"
            ]
        );
        // A line that fits is itself; nothing is ever wider than the width.
        assert_eq!(wrap("short", 20, 4), ["short"]);
        for width in 1..30 {
            for line in wrap(note, width, 3) {
                assert!(line.chars().count() <= width, "{width}: {line:?}");
            }
        }
    }

    #[test]
    fn csv_quotes_only_when_needed() {
        let text = csv(&["a", "b"], &[vec!["x,y".into(), "say \"hi\"".into()]]);
        assert_eq!(text, "a,b\r\n\"x,y\",\"say \"\"hi\"\"\"\r\n");
    }
}
