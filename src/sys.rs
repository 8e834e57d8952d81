//! The one place where heeler talks to the operating system below `std`.
//!
//! Every `unsafe` block of the crate lives here, small and commented, so that
//! a reviewer can audit all of it in one sitting. Callers get safe functions.
#![allow(unsafe_code)]

/// A deserialization slot for `miniserde`'s visitor protocol.
///
/// `miniserde::Deserialize::begin` hands us `&mut Option<T>` and wants a
/// `&mut dyn Visitor` back that writes into it. `Place` is a `repr(C)`
/// wrapper around that `Option<T>`, so the reference can be reinterpreted.
#[repr(C)]
pub(crate) struct Place<T> {
    pub(crate) out: Option<T>,
}

impl<T> Place<T> {
    pub(crate) fn new(out: &mut Option<T>) -> &mut Place<T> {
        // SAFETY: `Place<T>` is `repr(C)` with `Option<T>` as its only field,
        // so it has the same size, alignment and layout as `Option<T>`. The
        // returned reference borrows `out` for the same lifetime, so no
        // aliasing is introduced. This mirrors `miniserde::make_place!`.
        unsafe { &mut *std::ptr::addr_of_mut!(*out).cast::<Place<T>>() }
    }
}

/// The effective user id of this process (whose `~/.ssh` sshd checks).
pub(crate) fn effective_uid() -> u32 {
    // SAFETY: geteuid takes no arguments, cannot fail and touches no memory
    // of ours (POSIX: "shall always be successful").
    unsafe { libc::geteuid() }
}
