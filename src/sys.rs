//! The one place where heeler talks to the operating system below `std`.
//!
//! Every `unsafe` block of the crate lives here, small and commented, so that
//! a reviewer can audit all of it in one sitting. Callers get safe functions.
#![allow(unsafe_code)]
