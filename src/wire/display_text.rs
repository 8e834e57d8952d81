//! Trimming of free text (workspace labels, terminal titles, agent names)
//! before it goes into an encrypted payload, so a long title cannot blow the
//! push size budget.
//!
//! Two rules exist because the Node plugin had two: notification and Live
//! Activity display fields keep 80 *code points* (79 plus `…`), Live Activity
//! row spans keep the first 80 *graphemes* with no ellipsis.

use unicode_segmentation::UnicodeSegmentation;

/// Longest display field, in code points.
pub(crate) const DISPLAY_LIMIT: usize = 80;

/// `forDisplay`: `None` for empty; over 80 code points keeps the first 79,
/// trims trailing whitespace and appends `…`.
pub(crate) fn for_display(text: &str) -> Option<String> {
    if text.is_empty() {
        return None;
    }
    if text.chars().count() <= DISPLAY_LIMIT {
        return Some(text.to_owned());
    }
    let head: String = text.chars().take(DISPLAY_LIMIT - 1).collect();
    Some(format!("{}…", trim_end_js(&head)))
}

/// JavaScript's `trimEnd`: white space and line terminators, including
/// U+FEFF, which Rust's `trim_end` keeps.
pub(crate) fn trim_end_js(text: &str) -> &str {
    text.trim_end_matches(|c: char| c.is_whitespace() || c == '\u{feff}')
}

/// The first `limit` extended grapheme clusters of `text`.
pub(crate) fn first_graphemes(text: &str, limit: usize) -> &str {
    match text.grapheme_indices(true).nth(limit) {
        Some((end, _)) => &text[..end],
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_text_is_kept_and_empty_is_absent() {
        assert_eq!(for_display(""), None);
        assert_eq!(for_display("x").as_deref(), Some("x"));
        let eighty = "a".repeat(80);
        assert_eq!(for_display(&eighty).as_deref(), Some(eighty.as_str()));
    }

    #[test]
    fn long_text_keeps_79_code_points_trims_and_ellipsizes() {
        let text = format!("{}  tail", "é".repeat(77));
        assert_eq!(for_display(&text), Some(format!("{}…", "é".repeat(77))));
    }

    #[test]
    fn graphemes_do_not_split_emoji_sequences() {
        let family = "👨‍👩‍👧";
        let text = family.repeat(81);
        assert_eq!(first_graphemes(&text, 80), family.repeat(80));
    }
}
