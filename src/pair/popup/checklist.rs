//! The address checklist's state and its keys: which row the cursor is on,
//! which rows are checked, and what a key does to them.
//!
//! Pure, so every key rule is a unit test. Quitting is not here: `q`,
//! escape and Ctrl-C close the popup from every screen, so the popup
//! handles them before a key reaches the checklist.

use crate::base::keys::Key;
use crate::pair::addresses::Candidate;

/// The checklist: its rows, their checks and the cursor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checklist {
    pub candidates: Vec<Candidate>,
    pub checked: Vec<bool>,
    pub cursor: usize,
}

/// What a key did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The state changed; paint again.
    Changed,
    /// Nothing to do (no repaint).
    Ignored,
    /// Enter with these addresses checked, in checklist order.
    Confirmed(Vec<String>),
    /// Enter with nothing checked.
    NothingSelected,
}

impl Checklist {
    pub fn new(candidates: Vec<Candidate>) -> Checklist {
        let checked = candidates.iter().map(|c| c.pre_checked).collect();
        Checklist {
            candidates,
            checked,
            cursor: 0,
        }
    }

    /// The checked addresses, in checklist order.
    pub(crate) fn selected(&self) -> Vec<String> {
        self.candidates
            .iter()
            .zip(&self.checked)
            .filter(|(_, checked)| **checked)
            .map(|(candidate, _)| candidate.address.clone())
            .collect()
    }

    pub fn handle(&mut self, key: Key) -> Outcome {
        let last = self.candidates.len().saturating_sub(1);
        match key {
            Key::Up | Key::Char('k') => {
                self.cursor = self.cursor.saturating_sub(1);
                Outcome::Changed
            }
            Key::Down | Key::Char('j') => {
                self.cursor = (self.cursor + 1).min(last);
                Outcome::Changed
            }
            Key::Space => {
                if let Some(checked) = self.checked.get_mut(self.cursor) {
                    *checked = !*checked;
                }
                Outcome::Changed
            }
            Key::Char('a') => {
                let all = self.checked.iter().all(|c| *c);
                self.checked.iter_mut().for_each(|c| *c = !all);
                Outcome::Changed
            }
            Key::Enter => {
                let selected = self.selected();
                if selected.is_empty() {
                    Outcome::NothingSelected
                } else {
                    Outcome::Confirmed(selected)
                }
            }
            _ => Outcome::Ignored,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pair::addresses::Origin;

    fn list() -> Checklist {
        let row = |address: &str, pre_checked| Candidate {
            address: address.into(),
            origin: Origin::Interface("eth0".into()),
            pre_checked,
        };
        Checklist::new(vec![
            row("10.0.0.1", true),
            row("10.0.0.2", false),
            row("10.0.0.3", false),
        ])
    }

    #[test]
    fn starts_with_the_pre_checked_rows() {
        let list = list();
        assert_eq!(list.checked, vec![true, false, false]);
        assert_eq!(list.cursor, 0);
        assert_eq!(list.selected(), vec!["10.0.0.1"]);
    }

    #[test]
    fn cursor_moves_and_clamps() {
        let mut list = list();
        assert_eq!(list.handle(Key::Up), Outcome::Changed);
        assert_eq!(list.cursor, 0);
        list.handle(Key::Char('j'));
        list.handle(Key::Down);
        list.handle(Key::Down);
        assert_eq!(list.cursor, 2);
        list.handle(Key::Char('k'));
        assert_eq!(list.cursor, 1);
    }

    #[test]
    fn space_toggles_the_cursor_row() {
        let mut list = list();
        list.handle(Key::Down);
        list.handle(Key::Space);
        assert_eq!(list.selected(), vec!["10.0.0.1", "10.0.0.2"]);
        list.handle(Key::Space);
        assert_eq!(list.selected(), vec!["10.0.0.1"]);
    }

    #[test]
    fn a_checks_all_then_unchecks_all() {
        let mut list = list();
        list.handle(Key::Char('a'));
        assert_eq!(list.checked, vec![true, true, true]);
        list.handle(Key::Char('a'));
        assert_eq!(list.checked, vec![false, false, false]);
    }

    #[test]
    fn enter_confirms_or_asks_for_a_selection() {
        let mut list = list();
        assert_eq!(
            list.handle(Key::Enter),
            Outcome::Confirmed(vec!["10.0.0.1".into()])
        );
        list.handle(Key::Space);
        assert_eq!(list.handle(Key::Enter), Outcome::NothingSelected);
    }

    #[test]
    fn other_keys_are_ignored() {
        let mut list = list();
        for key in [Key::Char('x'), Key::Other, Key::Char('c')] {
            assert_eq!(list.handle(key), Outcome::Ignored);
        }
    }

    #[test]
    fn empty_list_never_panics() {
        let mut list = Checklist::new(Vec::new());
        for key in [Key::Down, Key::Up, Key::Space, Key::Char('a')] {
            list.handle(key);
        }
        assert_eq!(list.handle(Key::Enter), Outcome::NothingSelected);
    }
}
