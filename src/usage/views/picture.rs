//! The pictures of usage: horizontal bars (a limit's share used, a 5-hour
//! block's time gone) and sparklines (cost per day), drawn in block
//! characters or, where the terminal may not show them, in ASCII. The live
//! screen and the plain views both draw through here, so a bar means the
//! same everywhere; which glyphs a terminal gets is decided once, by
//! [`Glyphs::from_env`].

/// The characters pictures are drawn with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Glyphs {
    /// Block elements: eighths of a cell for bars, eight bar heights for
    /// sparklines.
    Unicode,
    /// Printable ASCII only: whole cells for bars, eight marks of growing
    /// weight for sparklines.
    Ascii,
}

/// A bar's filled part in eighths of a cell: `▏` is one eighth, `█` all.
const EIGHTHS: [char; 8] = ['▏', '▎', '▍', '▌', '▋', '▊', '▉', '█'];
/// A bar's empty part.
const TRACK: char = '░';
/// A sparkline's eight heights, lowest first.
const HEIGHTS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
/// The ASCII sparkline's eight marks, lightest first.
const ASCII_HEIGHTS: [char; 8] = ['.', ',', ':', '-', '=', '+', '*', '#'];

impl Glyphs {
    /// The glyphs for a terminal (pure): ASCII when `NO_COLOR` is set (a
    /// request for plain output) or when the locale's character set is not
    /// UTF-8. The locale is the first non-empty of `LC_ALL`, `LC_CTYPE` and
    /// `LANG`, as POSIX orders them; none at all is the C locale, ASCII.
    pub(crate) fn for_locale(
        no_color: bool,
        lc_all: Option<&str>,
        lc_ctype: Option<&str>,
        lang: Option<&str>,
    ) -> Glyphs {
        let locale = [lc_all, lc_ctype, lang]
            .into_iter()
            .flatten()
            .find(|v| !v.is_empty())
            .unwrap_or("C");
        let codeset = locale.split_once('.').map_or("", |(_, rest)| rest);
        let codeset = codeset.split_once('@').map_or(codeset, |(set, _)| set);
        let utf8 = matches!(codeset.to_ascii_lowercase().as_str(), "utf-8" | "utf8");
        if no_color || !utf8 {
            Glyphs::Ascii
        } else {
            Glyphs::Unicode
        }
    }

    /// The glyphs for this process's locale (`no_color`: whether
    /// `NO_COLOR` asks for plain output, `views::no_color`).
    pub(crate) fn from_env(no_color: bool) -> Glyphs {
        let var = |name| std::env::var(name).ok();
        Glyphs::for_locale(
            no_color,
            var("LC_ALL").as_deref(),
            var("LC_CTYPE").as_deref(),
            var("LANG").as_deref(),
        )
    }
}

/// A bar `width` cells wide, filled to `fraction` (clamped to 0..=1):
/// with Unicode to the nearest eighth of a cell, the rest drawn as a track;
/// with ASCII to the nearest whole cell, `#` filled and `.` empty. Any
/// fraction above zero shows at least the smallest mark, so a little use
/// never reads as none.
pub(crate) fn bar(fraction: f64, width: usize, glyphs: Glyphs) -> String {
    let fraction = if fraction.is_nan() {
        0.0
    } else {
        fraction.clamp(0.0, 1.0)
    };
    let steps = match glyphs {
        Glyphs::Unicode => 8,
        Glyphs::Ascii => 1,
    };
    let total = width * steps;
    let mut filled = (fraction * total as f64).round() as usize;
    if fraction > 0.0 && filled == 0 && total > 0 {
        filled = 1;
    }
    let full = filled / steps;
    let part = filled % steps;
    let mut out = String::with_capacity(width * 3);
    match glyphs {
        Glyphs::Unicode => {
            out.extend(std::iter::repeat_n(EIGHTHS[7], full));
            if part > 0 {
                out.push(EIGHTHS[part - 1]);
            }
            let drawn = full + usize::from(part > 0);
            out.extend(std::iter::repeat_n(TRACK, width - drawn));
        }
        Glyphs::Ascii => {
            out.extend(std::iter::repeat_n('#', full));
            out.extend(std::iter::repeat_n('.', width - full));
        }
    }
    out
}

/// One character per value, its height the value's share of the largest
/// (rounded up to the next of eight heights, so any value above zero shows);
/// a value of zero (or below) is a space. All zero is all spaces.
pub(crate) fn sparkline(values: &[f64], glyphs: Glyphs) -> String {
    let max = values.iter().copied().fold(0.0, f64::max);
    let heights = match glyphs {
        Glyphs::Unicode => &HEIGHTS,
        Glyphs::Ascii => &ASCII_HEIGHTS,
    };
    values
        .iter()
        .map(|&v| {
            if v.is_nan() || v <= 0.0 || max <= 0.0 {
                return ' ';
            }
            let level = ((v / max) * 8.0).ceil().clamp(1.0, 8.0) as usize;
            heights[level - 1]
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bar_fills_to_the_nearest_eighth_and_keeps_its_width() {
        // 10 cells are 80 eighths: 0.5 is 40 (five full cells), 0.3125 is
        // 25 (three full cells and one eighth), 0.99 is 79.2, so 79.
        assert_eq!(bar(0.5, 10, Glyphs::Unicode), "█████░░░░░");
        assert_eq!(bar(0.3125, 10, Glyphs::Unicode), "███▏░░░░░░");
        assert_eq!(bar(0.99, 10, Glyphs::Unicode), "█████████▉");
        assert_eq!(bar(1.0, 4, Glyphs::Unicode), "████");
        assert_eq!(bar(0.0, 4, Glyphs::Unicode), "░░░░");
        // Past full or below empty is clamped; NaN is empty.
        assert_eq!(bar(1.7, 4, Glyphs::Unicode), "████");
        assert_eq!(bar(-0.2, 4, Glyphs::Unicode), "░░░░");
        assert_eq!(bar(f64::NAN, 4, Glyphs::Unicode), "░░░░");
        // A little use shows the smallest mark.
        assert_eq!(bar(0.001, 4, Glyphs::Unicode), "▏░░░");
        assert_eq!(bar(0.5, 0, Glyphs::Unicode), "");
    }

    #[test]
    fn an_ascii_bar_fills_whole_cells() {
        // 0.67 of 10 cells is 6.7, so 7.
        assert_eq!(bar(0.67, 10, Glyphs::Ascii), "#######...");
        assert_eq!(bar(0.01, 10, Glyphs::Ascii), "#.........");
        assert_eq!(bar(0.0, 3, Glyphs::Ascii), "...");
        assert_eq!(bar(2.0, 3, Glyphs::Ascii), "###");
    }

    #[test]
    fn a_sparkline_scales_to_its_largest_value() {
        // Shares of 8: 0 (none), 1/8, 2/8, 4/8, 8/8; 3 of 8 is 3/8; 0.1 of
        // 8 is 0.1 of an eighth, rounded up to the lowest height.
        assert_eq!(
            sparkline(&[0.0, 1.0, 2.0, 4.0, 8.0, 3.0, 0.1], Glyphs::Unicode),
            " ▁▂▄█▃▁"
        );
        assert_eq!(
            sparkline(&[0.0, 1.0, 2.0, 4.0, 8.0, 3.0, 0.1], Glyphs::Ascii),
            " .,-#:."
        );
        assert_eq!(sparkline(&[0.0, 0.0], Glyphs::Unicode), "  ");
        assert_eq!(sparkline(&[], Glyphs::Unicode), "");
        assert_eq!(sparkline(&[f64::NAN, -1.0, 5.0], Glyphs::Unicode), "  █");
    }

    #[test]
    fn the_glyphs_follow_the_locale_and_no_color() {
        let g = Glyphs::for_locale;
        assert_eq!(g(false, None, None, Some("en_US.UTF-8")), Glyphs::Unicode);
        assert_eq!(g(false, None, None, Some("C.utf8")), Glyphs::Unicode);
        assert_eq!(
            g(false, None, None, Some("de_DE.UTF-8@euro")),
            Glyphs::Unicode
        );
        // LC_ALL wins over LANG, an empty one is skipped.
        assert_eq!(
            g(false, Some("C"), None, Some("en_US.UTF-8")),
            Glyphs::Ascii
        );
        assert_eq!(
            g(false, Some(""), Some("en_US.UTF-8"), Some("C")),
            Glyphs::Unicode
        );
        assert_eq!(
            g(false, None, None, Some("en_US.ISO-8859-1")),
            Glyphs::Ascii
        );
        assert_eq!(g(false, None, None, None), Glyphs::Ascii);
        assert_eq!(g(true, None, None, Some("en_US.UTF-8")), Glyphs::Ascii);
    }
}
