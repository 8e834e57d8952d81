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

/// Tries to take an exclusive `flock` on `file` without blocking: `Ok(true)`
/// when taken (held until the file is closed), `Ok(false)` when another
/// process holds it.
pub fn try_lock_exclusive(file: &std::fs::File) -> std::io::Result<bool> {
    use std::os::fd::AsRawFd;
    // SAFETY: `flock` only reads the descriptor number; `file` owns a valid
    // open descriptor for the duration of the call. No memory is passed.
    let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if rc == 0 {
        return Ok(true);
    }
    let err = std::io::Error::last_os_error();
    if err.raw_os_error() == Some(libc::EWOULDBLOCK) {
        Ok(false)
    } else {
        Err(err)
    }
}

/// Makes `command` start in a new session (`setsid`), detached from the
/// caller's terminal and process group, so it outlives an SSH session.
pub fn detach_on_spawn(command: &mut std::process::Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: the closure runs in the forked child before `exec`; it calls
    // only `setsid`, which is async-signal-safe, allocates nothing and
    // touches no locks. Its failure (already a group leader) is harmless.
    unsafe {
        command.pre_exec(|| {
            libc::setsid();
            Ok(())
        });
    }
}
