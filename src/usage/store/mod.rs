//! The usage cache on disk.

pub mod index;
pub mod journal;
pub mod owners;
pub mod state;
