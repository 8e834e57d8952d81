//! The one place where heeler talks to the operating system below `std`,
//! or to the processor's vector instructions.
//!
//! Every `unsafe` block of the crate lives here, small and commented, so that
//! a reviewer can audit all of it in one sitting. Callers get safe functions.
#![allow(unsafe_code)]

use std::ffi::{CStr, OsString};
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::os::unix::ffi::OsStringExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

/// The effective user id of this process.
pub(crate) fn effective_uid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// How a `get*_r` database lookup ended with one buffer.
enum Lookup<T> {
    Found(T),
    NoEntry,
    /// The call's error status (`ERANGE`: the buffer was too small).
    Failed(i32),
}

/// Runs a reentrant database lookup (`getpwuid_r`, `getgrgid_r`) with a
/// scratch buffer that grows fourfold on `ERANGE`, up to `limit` bytes. The
/// closure makes the call and copies out what it needs while the buffer is
/// alive.
fn lookup_with_buffer<T>(
    limit: usize,
    mut call: impl FnMut(&mut [libc::c_char]) -> Lookup<T>,
) -> io::Result<Option<T>> {
    let mut buffer_len = 1024usize;
    loop {
        let mut buffer = vec![0 as libc::c_char; buffer_len];
        match call(&mut buffer) {
            Lookup::Found(value) => return Ok(Some(value)),
            Lookup::NoEntry => return Ok(None),
            Lookup::Failed(libc::ERANGE) if buffer_len < limit => buffer_len *= 4,
            Lookup::Failed(status) => return Err(io::Error::from_raw_os_error(status)),
        }
    }
}

/// The member names of group `gid` (`getgrgid_r`'s `gr_mem`; the users whose
/// primary group it is are not listed there). `Ok(None)` when there is no
/// such group.
pub(crate) fn group_members(gid: u32) -> io::Result<Option<Vec<Vec<u8>>>> {
    lookup_with_buffer(1 << 22, |buffer| {
        // SAFETY: an all-zero `group` is a valid value (null pointers and
        // zero integers); getgrgid_r only writes into it.
        let mut entry: libc::group = unsafe { std::mem::zeroed() };
        let mut result: *mut libc::group = std::ptr::null_mut();
        // SAFETY: every pointer is valid for the call: `entry` and `result`
        // are live locals, `buffer` is a live allocation of `buffer.len()`
        // bytes that getgrgid_r uses for the strings and the member array
        // `entry` points into.
        let status = unsafe {
            libc::getgrgid_r(
                gid,
                &mut entry,
                buffer.as_mut_ptr(),
                buffer.len(),
                &mut result,
            )
        };
        if status != 0 {
            return Lookup::Failed(status);
        }
        if result.is_null() {
            return Lookup::NoEntry;
        }
        let mut members = Vec::new();
        let mut cursor = entry.gr_mem;
        // SAFETY: on success `gr_mem` is null or a null-terminated array of
        // pointers to NUL-terminated strings, all inside `buffer`, which is
        // alive for the whole walk; each name is copied out before `buffer`
        // is dropped. The walk stops at the terminating null pointer.
        unsafe {
            while !cursor.is_null() && !(*cursor).is_null() {
                members.push(CStr::from_ptr(*cursor).to_bytes().to_vec());
                cursor = cursor.add(1);
            }
        }
        Lookup::Found(members)
    })
}

/// The parts of a passwd entry heeler needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PasswdEntry {
    pub(crate) name: String,
    pub(crate) home: PathBuf,
    /// The primary group id.
    pub(crate) gid: u32,
}

/// Looks up the passwd entry of `uid` (`getpwuid_r`). `Ok(None)` when there
/// is no such user; an error when the lookup itself fails or the user name
/// is not UTF-8.
pub(crate) fn passwd_entry(uid: u32) -> io::Result<Option<PasswdEntry>> {
    let raw = lookup_with_buffer(1 << 20, |buffer| {
        // SAFETY: an all-zero `passwd` is a valid value (null pointers and
        // zero integers); getpwuid_r only writes into it.
        let mut entry: libc::passwd = unsafe { std::mem::zeroed() };
        let mut result: *mut libc::passwd = std::ptr::null_mut();
        // SAFETY: every pointer is valid for the call: `entry` and `result`
        // are live locals, `buffer` is a live allocation of `buffer.len()`
        // bytes that getpwuid_r uses for the strings `entry` points into.
        let status = unsafe {
            libc::getpwuid_r(
                uid,
                &mut entry,
                buffer.as_mut_ptr(),
                buffer.len(),
                &mut result,
            )
        };
        if status != 0 {
            return Lookup::Failed(status);
        }
        if result.is_null() || entry.pw_name.is_null() || entry.pw_dir.is_null() {
            return Lookup::NoEntry;
        }
        // SAFETY: on success `pw_name` and `pw_dir` point to NUL-terminated
        // strings inside `buffer`, which is still alive here; we copy them
        // out before `buffer` is dropped.
        let (name, home) = unsafe {
            (
                CStr::from_ptr(entry.pw_name).to_bytes().to_vec(),
                CStr::from_ptr(entry.pw_dir).to_bytes().to_vec(),
            )
        };
        Lookup::Found((name, home, entry.pw_gid))
    })?;
    let Some((name, home, gid)) = raw else {
        return Ok(None);
    };
    let name = String::from_utf8(name)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "user name is not UTF-8"))?;
    Ok(Some(PasswdEntry {
        name,
        home: PathBuf::from(OsString::from_vec(home)),
        gid,
    }))
}

/// Every IPv4/IPv6 address of every interface (`getifaddrs`), in the order
/// the kernel lists them: `(interface name, address, is loopback)`.
pub(crate) fn interface_addresses() -> io::Result<Vec<(String, IpAddr, bool)>> {
    let mut head: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: `head` is a valid out-pointer; on success getifaddrs stores a
    // list we must release with freeifaddrs, which we do below.
    if unsafe { libc::getifaddrs(&mut head) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let mut out = Vec::new();
    let mut cursor = head;
    while !cursor.is_null() {
        // SAFETY: `cursor` is a non-null node of the list getifaddrs built,
        // which stays valid until freeifaddrs.
        let node = unsafe { &*cursor };
        cursor = node.ifa_next;
        if node.ifa_addr.is_null() || node.ifa_name.is_null() {
            continue;
        }
        // SAFETY: `ifa_name` is a NUL-terminated string owned by the list.
        let name = unsafe { CStr::from_ptr(node.ifa_name) }
            .to_string_lossy()
            .into_owned();
        let loopback = node.ifa_flags & (libc::IFF_LOOPBACK as libc::c_uint) != 0;
        // SAFETY: `ifa_addr` is non-null and points at a sockaddr whose
        // `sa_family` tells its real type; we only reinterpret it as
        // sockaddr_in / sockaddr_in6 when the family says so.
        let address = unsafe {
            match i32::from((*node.ifa_addr).sa_family) {
                libc::AF_INET => {
                    let sin = &*node.ifa_addr.cast::<libc::sockaddr_in>();
                    Some(IpAddr::V4(Ipv4Addr::from(u32::from_be(
                        sin.sin_addr.s_addr,
                    ))))
                }
                libc::AF_INET6 => {
                    let sin6 = &*node.ifa_addr.cast::<libc::sockaddr_in6>();
                    Some(IpAddr::V6(Ipv6Addr::from(sin6.sin6_addr.s6_addr)))
                }
                _ => None,
            }
        };
        if let Some(address) = address {
            out.push((name, address, loopback));
        }
    }
    // SAFETY: `head` came from a successful getifaddrs and is freed once.
    unsafe { libc::freeifaddrs(head) };
    Ok(out)
}

static TERMINATION_REQUESTED: AtomicBool = AtomicBool::new(false);
static TERMINATION_SIGNAL: AtomicI32 = AtomicI32::new(0);

extern "C" fn record_termination(signal: libc::c_int) {
    // Only lock-free atomic stores: async-signal-safe.
    TERMINATION_SIGNAL.store(signal, Ordering::SeqCst);
    TERMINATION_REQUESTED.store(true, Ordering::SeqCst);
}

/// Routes SIGINT, SIGTERM, SIGHUP and SIGQUIT to a flag instead of killing
/// the process, so a long-running command can clean up (remove its
/// bootstrap line, restore the terminal) before it exits. SIGQUIT (Ctrl-\\)
/// would otherwise end it at once, leaving the terminal raw on the
/// alternate screen. Poll [`termination_signal`].
pub(crate) fn catch_termination_signals() -> io::Result<()> {
    for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT] {
        // SAFETY: an all-zero sigaction is valid; we then set the handler,
        // an empty mask and flags. The handler only stores atomics, which is
        // async-signal-safe, and it lives for the whole program.
        let status = unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = record_termination as extern "C" fn(libc::c_int) as usize;
            libc::sigemptyset(&mut action.sa_mask);
            action.sa_flags = libc::SA_RESTART;
            libc::sigaction(signal, &action, std::ptr::null_mut())
        };
        if status != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// The termination signal caught since [`catch_termination_signals`], if any.
pub(crate) fn termination_signal() -> Option<i32> {
    if TERMINATION_REQUESTED.load(Ordering::SeqCst) {
        Some(TERMINATION_SIGNAL.load(Ordering::SeqCst))
    } else {
        None
    }
}

/// Waits until `fd` is readable (data, EOF or an error condition) or
/// `timeout` passes. `Ok(false)` on timeout. Retries on EINTR.
pub(crate) fn wait_readable(
    fd: std::os::fd::BorrowedFd<'_>,
    timeout: std::time::Duration,
) -> io::Result<bool> {
    use std::os::fd::AsRawFd;
    let deadline = std::time::Instant::now() + timeout;
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let millis = libc::c_int::try_from(left.as_millis()).unwrap_or(libc::c_int::MAX);
        let mut poll_fd = libc::pollfd {
            fd: fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: `poll_fd` is one valid, live pollfd and we pass a count of
        // 1; the descriptor is kept open by the `BorrowedFd` borrow.
        let ready = unsafe { libc::poll(&mut poll_fd, 1, millis) };
        if ready > 0 {
            return Ok(true);
        }
        if ready == 0 {
            if left.is_zero() {
                return Ok(false);
            }
            continue;
        }
        let error = io::Error::last_os_error();
        if error.kind() != io::ErrorKind::Interrupted {
            return Err(error);
        }
    }
}

/// Waits until one of `fds` is readable (data, EOF or an error condition)
/// or `timeout` passes; returns which are. Retries on EINTR.
pub(crate) fn poll_readable(
    fds: &[std::os::fd::BorrowedFd<'_>],
    timeout: std::time::Duration,
) -> io::Result<Vec<bool>> {
    use std::os::fd::AsRawFd;
    let mut poll_fds: Vec<libc::pollfd> = fds
        .iter()
        .map(|fd| libc::pollfd {
            fd: fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    let count = libc::nfds_t::try_from(poll_fds.len())
        .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    let millis = libc::c_int::try_from(timeout.as_millis()).unwrap_or(libc::c_int::MAX);
    loop {
        // SAFETY: `poll_fds` is a live array of `count` valid pollfds that
        // poll may write `revents` into; the descriptors are kept open by
        // the `BorrowedFd` borrows for the duration of the call.
        let ready = unsafe { libc::poll(poll_fds.as_mut_ptr(), count, millis) };
        if ready >= 0 {
            return Ok(poll_fds.iter().map(|p| p.revents != 0).collect());
        }
        let error = io::Error::last_os_error();
        if error.kind() != io::ErrorKind::Interrupted {
            return Err(error);
        }
    }
}

/// Sends SIGKILL to every process of the process group `group` (a child
/// spawned as the leader of its own group). Groups 0 and 1 are refused:
/// `kill(0)` and `kill(-1)` would reach this process's own group or every
/// process it may signal.
pub(crate) fn kill_process_group(group: u32) {
    let Ok(group) = libc::pid_t::try_from(group) else {
        return;
    };
    if group <= 1 {
        return;
    }
    // SAFETY: kill takes no memory; `-group` names exactly the process
    // group led by our child, whose id is above 1 (checked above). A group
    // that is already gone is an ESRCH we ignore.
    unsafe {
        libc::kill(-group, libc::SIGKILL);
    }
}

/// The machine's host name (`gethostname(2)`), when it is UTF-8.
pub(crate) fn hostname() -> Option<String> {
    let mut buffer = [0u8; 256];
    // SAFETY: `buffer` is valid for writes of `buffer.len()` bytes and
    // gethostname writes at most that many; we read only up to the first NUL
    // (or the whole buffer when the name was truncated without one).
    let status = unsafe { libc::gethostname(buffer.as_mut_ptr().cast(), buffer.len()) };
    if status != 0 {
        return None;
    }
    let end = buffer.iter().position(|&b| b == 0).unwrap_or(buffer.len());
    String::from_utf8(buffer[..end].to_vec()).ok()
}

/// Tries to take an exclusive `flock` on `file` without blocking: `Ok(true)`
/// when taken (held until the file is closed), `Ok(false)` when another
/// process holds it.
pub(crate) fn try_lock_exclusive(file: &std::fs::File) -> std::io::Result<bool> {
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

/// Atomically swaps the files at `a` and `b` (both must exist): Linux
/// `renameat2(RENAME_EXCHANGE)`, macOS `renamex_np(RENAME_SWAP)`.
/// `Ok(false)` when the system or the file system cannot swap (then
/// nothing happened and the caller falls back to a plain rename).
pub(crate) fn exchange(a: &std::path::Path, b: &std::path::Path) -> io::Result<bool> {
    use std::os::unix::ffi::OsStrExt;
    let c = |p: &std::path::Path| {
        std::ffi::CString::new(p.as_os_str().as_bytes())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a path holds a NUL byte"))
    };
    let (a, b) = (c(a)?, c(b)?);
    #[cfg(any(target_os = "linux", target_os = "android"))]
    // SAFETY: both paths are NUL-terminated and outlive the call; the raw
    // syscall (the libc wrapper is missing from older musl) takes two
    // directory descriptors (AT_FDCWD), two path pointers and a flag word,
    // and touches no other memory of ours.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_renameat2,
            libc::AT_FDCWD,
            a.as_ptr(),
            libc::AT_FDCWD,
            b.as_ptr(),
            libc::RENAME_EXCHANGE,
        )
    };
    #[cfg(target_vendor = "apple")]
    // SAFETY: both paths are NUL-terminated and outlive the call;
    // renamex_np only reads them.
    let rc = i64::from(unsafe { libc::renamex_np(a.as_ptr(), b.as_ptr(), libc::RENAME_SWAP) });
    #[cfg(not(any(target_os = "linux", target_os = "android", target_vendor = "apple")))]
    let rc: i64 = {
        let _ = (a, b);
        return Ok(false);
    };
    if rc == 0 {
        return Ok(true);
    }
    let err = io::Error::last_os_error();
    match err.raw_os_error() {
        Some(libc::EINVAL | libc::ENOSYS | libc::ENOTSUP) => Ok(false),
        _ => Err(err),
    }
}

/// Makes `command` start in a new session (`setsid`), detached from the
/// caller's terminal and process group, so it outlives an SSH session.
pub(crate) fn detach_on_spawn(command: &mut std::process::Command) {
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

/// Closes every descriptor above stderr this process inherited: a
/// detached worker must not keep open a pipe or socket of the process
/// that started its parent (herdr waits for its hooks' pipes to close).
/// The descriptors are listed from `/proc/self/fd` (`/dev/fd` elsewhere)
/// first, and closed after the listing's own descriptor is gone.
pub(crate) fn close_inherited_fds() {
    let listed = ["/proc/self/fd", "/dev/fd"].iter().find_map(|dir| {
        let entries = std::fs::read_dir(dir).ok()?;
        Some(
            entries
                .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<i32>().ok())
                .filter(|fd| *fd > 2)
                .collect::<Vec<_>>(),
        )
    });
    for fd in listed.unwrap_or_default() {
        // SAFETY: this runs first thing in a freshly started worker, before
        // any `File`, socket or other owner of a descriptor above 2 exists
        // in this process, so no owner is left holding a closed number. The
        // listing's own descriptor is already closed (EBADF, ignored).
        unsafe {
            libc::close(fd);
        }
    }
}

/// Opens `path` for appending, creating it as 0600, never through a
/// symbolic link in its last component (`O_NOFOLLOW`), and tightens an
/// existing file to 0600.
pub(crate) fn open_append_private(path: &std::path::Path) -> io::Result<std::fs::File> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let file = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} is not a regular file", path.display()),
        ));
    }
    if meta.permissions().mode() & 0o777 != 0o600 {
        file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    }
    Ok(file)
}

// ---- The pairing popup: terminal modes. ----

/// A terminal's modes as `tcgetattr` read them, to put back after a panic
/// (when no destructor runs).
#[derive(Clone, Copy)]
pub(crate) struct TerminalModes(libc::termios);

/// Reads the modes of the terminal on `fd`.
pub(crate) fn terminal_modes(fd: std::os::fd::BorrowedFd<'_>) -> io::Result<TerminalModes> {
    use std::os::fd::AsRawFd;
    // SAFETY: an all-zero `termios` is a valid value (integers and arrays
    // of integers); tcgetattr only writes into it.
    let mut modes: libc::termios = unsafe { std::mem::zeroed() };
    // SAFETY: `modes` is a live local and the descriptor is kept open by the
    // `BorrowedFd` borrow for the duration of the call.
    if unsafe { libc::tcgetattr(fd.as_raw_fd(), &mut modes) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(TerminalModes(modes))
}

/// Puts saved modes back on the terminal on `fd`.
pub(crate) fn restore_terminal_modes(
    fd: std::os::fd::BorrowedFd<'_>,
    modes: &TerminalModes,
) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    // SAFETY: `modes.0` is a valid termios read by tcgetattr; the descriptor
    // is kept open by the `BorrowedFd` borrow for the duration of the call.
    if unsafe { libc::tcsetattr(fd.as_raw_fd(), libc::TCSANOW, &modes.0) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

// ---- Access control lists (`dirs.rs`'s trust rule). ----

/// The largest `system.posix_acl_access` value read: 8 bytes an entry, far
/// more entries than any file system stores for one file.
#[cfg(target_os = "linux")]
const MAX_ACL_BYTES: usize = 64 * 1024;

/// The raw `system.posix_acl_access` extended attribute of `path`,
/// following symbolic links like `stat` (the trust rule judges what a
/// link resolves to). `Ok(None)` when the file has no extended ACL
/// (`ENODATA`) or its file system has no ACLs (`ENOTSUP`); the bytes are
/// parsed by `dirs::parse_posix_acl`.
#[cfg(target_os = "linux")]
pub(crate) fn posix_acl_access(path: &std::path::Path) -> io::Result<Option<Vec<u8>>> {
    use std::os::unix::ffi::OsStrExt;
    let path = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    let name = c"system.posix_acl_access";
    // An ACL of a few entries fits the first buffer; a larger one is
    // retried once at the size the kernel reports, within the cap.
    let mut buffer = vec![0u8; 256];
    for _ in 0..3 {
        // SAFETY: `path` and `name` are NUL-terminated strings that live
        // across the call; `buffer` is writable for `buffer.len()` bytes,
        // the size passed, and getxattr writes at most that many.
        let len = unsafe {
            libc::getxattr(
                path.as_ptr(),
                name.as_ptr(),
                buffer.as_mut_ptr().cast(),
                buffer.len(),
            )
        };
        if let Ok(len) = usize::try_from(len) {
            buffer.truncate(len);
            return Ok(Some(buffer));
        }
        let error = io::Error::last_os_error();
        match error.raw_os_error() {
            Some(libc::ENODATA | libc::ENOTSUP) => return Ok(None),
            Some(libc::ERANGE) => {}
            _ => return Err(error),
        }
        // SAFETY: a null buffer of size 0 asks only for the value's size;
        // nothing is written.
        let size = unsafe { libc::getxattr(path.as_ptr(), name.as_ptr(), std::ptr::null_mut(), 0) };
        let size = usize::try_from(size).map_err(|_| io::Error::last_os_error())?;
        if size > MAX_ACL_BYTES {
            return Err(io::Error::other(format!(
                "its ACL is {size} bytes, more than {MAX_ACL_BYTES}"
            )));
        }
        buffer = vec![0u8; size.max(1)];
    }
    Err(io::Error::other("its ACL kept changing size while read"))
}

/// macOS's ACL API, declared here because `libc` does not bind it
/// (`<sys/acl.h>`; the functions are in libSystem).
#[cfg(target_os = "macos")]
mod macos_acl {
    pub(super) type Acl = *mut libc::c_void;
    pub(super) type AclEntry = *mut libc::c_void;
    pub(super) type AclPermset = *mut libc::c_void;
    /// `ACL_TYPE_EXTENDED`, the only ACL type macOS file systems keep.
    pub(super) const ACL_TYPE_EXTENDED: libc::c_int = 0x0000_0100;
    pub(super) const ACL_FIRST_ENTRY: libc::c_int = 0;
    pub(super) const ACL_NEXT_ENTRY: libc::c_int = -1;
    /// `ACL_EXTENDED_ALLOW` (`acl_tag_t`): an entry that grants.
    pub(super) const ACL_EXTENDED_ALLOW: libc::c_int = 1;
    /// The permissions that let a grantee change a file or a directory's
    /// entries (`acl_perm_t`): write data / add file, delete, append /
    /// add subdirectory, delete child, write attributes, write extended
    /// attributes, write security (the ACL itself), take ownership.
    pub(super) const WRITE_PERMS: [libc::c_int; 8] = [
        1 << 2,
        1 << 4,
        1 << 5,
        1 << 6,
        1 << 8,
        1 << 10,
        1 << 12,
        1 << 13,
    ];
    unsafe extern "C" {
        pub(super) fn acl_get_file(path: *const libc::c_char, kind: libc::c_int) -> Acl;
        pub(super) fn acl_get_entry(
            acl: Acl,
            entry_id: libc::c_int,
            entry: *mut AclEntry,
        ) -> libc::c_int;
        pub(super) fn acl_get_tag_type(entry: AclEntry, tag: *mut libc::c_int) -> libc::c_int;
        pub(super) fn acl_get_permset(entry: AclEntry, permset: *mut AclPermset) -> libc::c_int;
        pub(super) fn acl_get_perm_np(permset: AclPermset, perm: libc::c_int) -> libc::c_int;
        pub(super) fn acl_free(object: *mut libc::c_void) -> libc::c_int;
    }
}

/// Whether `path` (following symbolic links) has an extended ACL entry
/// that allows anyone a write permission (macOS). Conservative: the
/// grantee is not looked at, so an entry granting the owner itself write
/// counts too (`chmod -a` removes it; the mode bits already say what the
/// owner may do). `Ok(false)` when the file has no extended ACL.
#[cfg(target_os = "macos")]
pub(crate) fn extended_acl_allows_write(path: &std::path::Path) -> io::Result<bool> {
    use macos_acl::*;
    use std::os::unix::ffi::OsStrExt;
    let path = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    // SAFETY: `path` is a NUL-terminated string alive across the call; a
    // non-null result is an ACL we own and free below.
    let acl = unsafe { acl_get_file(path.as_ptr(), ACL_TYPE_EXTENDED) };
    if acl.is_null() {
        let error = io::Error::last_os_error();
        return match error.raw_os_error() {
            Some(libc::ENOENT) => Ok(false),
            _ => Err(error),
        };
    }
    let mut allows = false;
    let mut entry: AclEntry = std::ptr::null_mut();
    let mut which = ACL_FIRST_ENTRY;
    // SAFETY: `acl` is a valid ACL until `acl_free`; `entry`, `tag` and
    // `permset` are out-parameters the calls fill with handles into it,
    // used only before it is freed.
    unsafe {
        while acl_get_entry(acl, which, &mut entry) == 0 {
            which = ACL_NEXT_ENTRY;
            let mut tag = 0;
            if acl_get_tag_type(entry, &mut tag) != 0 || tag != ACL_EXTENDED_ALLOW {
                continue;
            }
            let mut permset: AclPermset = std::ptr::null_mut();
            if acl_get_permset(entry, &mut permset) != 0 {
                allows = true;
                break;
            }
            if WRITE_PERMS
                .iter()
                .any(|perm| acl_get_perm_np(permset, *perm) == 1)
            {
                allows = true;
                break;
            }
        }
        acl_free(acl);
    }
    Ok(allows)
}

// ---- Lock files and temp files (`atomic_file.rs`). ----

/// Opens an existing file for reading without following a symbolic link in
/// its last component and without blocking on a FIFO, so that whatever sits
/// at a lock path can be inspected and `flock`ed safely, and a state file
/// read safely (`state_file.rs`). `std` adds `O_CLOEXEC` to every open.
pub(crate) fn open_no_follow(path: &std::path::Path) -> io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
}

/// Adds `O_NOFOLLOW|O_NONBLOCK` to `options`: the open refuses a symbolic
/// link in the path's last component and never blocks on a FIFO (a write
/// open of a FIFO nobody reads fails with `ENXIO` instead of waiting for a
/// reader). For heeler's own state files that are written in place (a
/// journal, a lock, a log) and its stores' files (`state_file.rs`).
pub(crate) fn no_follow_non_blocking(
    options: &mut std::fs::OpenOptions,
) -> &mut std::fs::OpenOptions {
    use std::os::unix::fs::OpenOptionsExt;
    options.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
}

/// Opens an existing file for reading, following symbolic links, without
/// blocking on a FIFO (`O_NONBLOCK`): the open of a config file a user may
/// keep as a link into a dotfiles checkout (`state_file.rs`). `std` adds
/// `O_CLOEXEC` to every open.
pub(crate) fn open_non_blocking(path: &std::path::Path) -> io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
}

/// Whether a process with id `pid` exists (`kill(pid, 0)`): `false` only
/// when the kernel says there is none (`ESRCH`); a process we may not
/// signal (`EPERM`) exists. Ids that are not positive `pid_t`s name no
/// single process and count as absent.
pub(crate) fn process_exists(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    if pid <= 0 {
        return false;
    }
    // SAFETY: signal 0 sends nothing; kill only checks that `pid` (a
    // positive id, so never a process group) exists and may be signalled.
    if unsafe { libc::kill(pid, 0) } == 0 {
        return true;
    }
    io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

/// Keeps this process from writing a core dump: its soft `RLIMIT_CORE`
/// becomes 0 (the hard limit stays, so a child may raise its own again)
/// and, on Linux, it is marked not dumpable, which stops a dump piped to a
/// handler such as systemd-coredump too. heeler holds seeds, Notification
/// Keys and tokens in memory and is built with `panic = "abort"`, so a
/// panic would otherwise leave them in a core file.
pub fn disable_core_dumps() -> io::Result<()> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes one rlimit into the valid struct we own.
    if unsafe { libc::getrlimit(libc::RLIMIT_CORE, &mut limit) } != 0 {
        return Err(io::Error::last_os_error());
    }
    limit.rlim_cur = 0;
    // SAFETY: setrlimit only reads the valid struct; lowering the soft
    // limit below the hard one is always allowed.
    if unsafe { libc::setrlimit(libc::RLIMIT_CORE, &limit) } != 0 {
        return Err(io::Error::last_os_error());
    }
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        // SAFETY: PR_SET_DUMPABLE takes one integer argument (0 here) and
        // touches no memory of ours; the unused arguments are zero.
        if unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 0 as libc::c_ulong, 0, 0, 0) } != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// A directory open for listing, whose files' metadata is read relative to
/// it (`fstatat`). The usage walk lists a thousand directories and `stat`s
/// thousands of transcripts on every refresh: this way no path is joined or
/// looked up again for a file's metadata, and an entry's name is not copied.
/// (On musl, `std`'s `DirEntry::metadata` is an `lstat` of the joined path:
/// an allocation and a walk of every component per file.)
pub(crate) struct Directory {
    stream: std::ptr::NonNull<libc::DIR>,
}

/// What a directory entry is, not following a symbolic link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EntryKind {
    Directory,
    File,
    Other,
}

/// One entry of a [`Directory`], borrowed until the next is read.
pub(crate) struct DirEntry<'a> {
    directory: &'a Directory,
    name: &'a CStr,
    kind: EntryKind,
}

/// What `lstat` reports of a file's identity, size and modification time,
/// as `std`'s `MetadataExt` converts them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FileStat {
    pub dev: u64,
    pub ino: u64,
    pub size: u64,
    pub(crate) mtime_sec: i64,
    pub mtime_nsec: i64,
    pub(crate) ctime_sec: i64,
    pub ctime_nsec: i64,
}

impl Directory {
    pub(crate) fn open(path: &std::path::Path) -> io::Result<Directory> {
        use std::os::unix::ffi::OsStrExt;
        let path = std::ffi::CString::new(path.as_os_str().as_bytes())
            .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
        // SAFETY: `path` is NUL-terminated and outlives the call; opendir
        // returns NULL or a stream we own until closedir (in `drop`).
        let stream = unsafe { libc::opendir(path.as_ptr()) };
        std::ptr::NonNull::new(stream)
            .map(|stream| Directory { stream })
            .ok_or_else(io::Error::last_os_error)
    }

    /// The next entry other than `.` and `..`; `None` at the end, an error
    /// when the listing fails (after which it should not be read on).
    pub(crate) fn next_entry(&mut self) -> Option<io::Result<DirEntry<'_>>> {
        let directory: &Directory = self;
        loop {
            // readdir reports the end and an error alike, by NULL; only an
            // error sets errno.
            clear_errno();
            // SAFETY: the stream is open (closed only in `drop`). The entry
            // it returns stays valid until the next readdir or closedir on
            // this stream; `&mut self` forbids both while the returned
            // entry borrows it.
            let entry = unsafe { libc::readdir(directory.stream.as_ptr()) };
            if entry.is_null() {
                let error = io::Error::last_os_error();
                return (error.raw_os_error() != Some(0)).then_some(Err(error));
            }
            // SAFETY: a non-NULL entry from readdir is valid (see above), and
            // its `d_name` is NUL-terminated within it.
            let (name, d_type) =
                unsafe { (CStr::from_ptr((*entry).d_name.as_ptr()), (*entry).d_type) };
            if name == c"." || name == c".." {
                continue;
            }
            let kind = match d_type {
                libc::DT_DIR => EntryKind::Directory,
                libc::DT_REG => EntryKind::File,
                // Some file systems do not say: then lstat does. An entry
                // gone before it could be asked is neither.
                libc::DT_UNKNOWN => directory
                    .lstat_raw(name)
                    .map_or(EntryKind::Other, |st| kind_of_mode(st.st_mode)),
                _ => EntryKind::Other,
            };
            return Some(Ok(DirEntry {
                directory,
                name,
                kind,
            }));
        }
    }

    fn lstat_raw(&self, name: &CStr) -> io::Result<libc::stat> {
        // SAFETY: the stream is open, so its descriptor is valid.
        let fd = unsafe { libc::dirfd(self.stream.as_ptr()) };
        // SAFETY: an all-zero `stat` is a valid value of the plain C struct.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: `fd` is valid, `name` NUL-terminated, and `st` a struct we
        // own for fstatat to fill.
        if unsafe { libc::fstatat(fd, name.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(st)
    }
}

impl Drop for Directory {
    fn drop(&mut self) {
        // SAFETY: the stream is open and closed only here, once.
        unsafe { libc::closedir(self.stream.as_ptr()) };
    }
}

impl DirEntry<'_> {
    pub(crate) fn name(&self) -> &std::ffi::OsStr {
        use std::os::unix::ffi::OsStrExt;
        std::ffi::OsStr::from_bytes(self.name.to_bytes())
    }

    pub(crate) fn kind(&self) -> EntryKind {
        self.kind
    }

    /// The entry's metadata (`lstat`), read relative to its directory.
    pub(crate) fn stat(&self) -> io::Result<FileStat> {
        let st = self.directory.lstat_raw(self.name)?;
        // The conversions of `std::os::unix::fs::MetadataExt`.
        #[allow(clippy::unnecessary_cast)]
        Ok(FileStat {
            dev: st.st_dev as u64,
            ino: st.st_ino as u64,
            size: st.st_size as u64,
            mtime_sec: st.st_mtime as i64,
            mtime_nsec: st.st_mtime_nsec as i64,
            ctime_sec: st.st_ctime as i64,
            ctime_nsec: st.st_ctime_nsec as i64,
        })
    }
}

fn kind_of_mode(mode: libc::mode_t) -> EntryKind {
    match mode & libc::S_IFMT {
        libc::S_IFDIR => EntryKind::Directory,
        libc::S_IFREG => EntryKind::File,
        _ => EntryKind::Other,
    }
}

/// Sets this thread's errno to 0.
fn clear_errno() {
    // SAFETY: the location is this thread's errno, valid for writing for
    // the thread's life.
    #[cfg(target_os = "linux")]
    unsafe {
        *libc::__errno_location() = 0;
    }
    // SAFETY: as above.
    #[cfg(target_os = "macos")]
    unsafe {
        *libc::__error() = 0;
    }
}

/// Where the first byte of `text` at or after `from` is that ends a run of
/// plain JSON string text: a quote, a backslash or a control byte (below
/// 0x20, which JSON forbids in a string). The usage scan reads every
/// transcript string through this, 16 bytes at a time with the vector
/// instructions every processor of its targets has (SSE2 on x86_64, NEON
/// on aarch64); elsewhere by [`first_string_stop_portable`].
#[inline(always)]
pub(crate) fn next_string_stop(text: &[u8], from: usize) -> Option<usize> {
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    {
        let mut at = from;
        while let Some(block) = text.get(at..).and_then(<[u8]>::first_chunk::<16>) {
            if let Some(k) = first_stop_in_block(block) {
                return Some(at + k);
            }
            at += 16;
        }
        let tail = text.get(at..)?;
        Some(at + tail.iter().position(|&b| is_string_stop(b))?)
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        Some(from + first_string_stop_portable(text.get(from..)?)?)
    }
}

/// Whether `b` ends a run of plain string text (the definition the searches
/// implement).
fn is_string_stop(b: u8) -> bool {
    b == b'"' || b == b'\\' || b < 0x20
}

/// The first string stop of a 16-byte block, with SSE2.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn first_stop_in_block(block: &[u8; 16]) -> Option<usize> {
    use std::arch::x86_64::{
        _mm_cmpeq_epi8, _mm_loadu_si128, _mm_min_epu8, _mm_movemask_epi8, _mm_or_si128,
        _mm_set1_epi8,
    };
    // SAFETY: SSE2 is part of every x86_64 processor, so the build target
    // always has these instructions; the unaligned load reads exactly the
    // 16 bytes `block` borrows.
    let mask = unsafe {
        let v = _mm_loadu_si128(block.as_ptr().cast());
        let quote = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'"' as i8));
        let backslash = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'\\' as i8));
        // Unsigned `v < 0x20` is `min(v, 0x1f) == v`.
        let control = _mm_cmpeq_epi8(_mm_min_epu8(v, _mm_set1_epi8(0x1f)), v);
        _mm_movemask_epi8(_mm_or_si128(_mm_or_si128(quote, backslash), control))
    };
    (mask != 0).then(|| mask.trailing_zeros() as usize)
}

/// The first string stop of a 16-byte block, with NEON.
#[cfg(target_arch = "aarch64")]
#[inline(always)]
fn first_stop_in_block(block: &[u8; 16]) -> Option<usize> {
    use std::arch::aarch64::{
        vceqq_u8, vcltq_u8, vdupq_n_u8, vget_lane_u64, vld1q_u8, vorrq_u8, vreinterpret_u64_u8,
        vreinterpretq_u16_u8, vshrn_n_u16,
    };
    // SAFETY: NEON (Advanced SIMD) is part of every aarch64 processor, so
    // the build target always has these instructions; the load reads
    // exactly the 16 bytes `block` borrows.
    let nibbles = unsafe {
        let v = vld1q_u8(block.as_ptr());
        let quote = vceqq_u8(v, vdupq_n_u8(b'"'));
        let backslash = vceqq_u8(v, vdupq_n_u8(b'\\'));
        let control = vcltq_u8(v, vdupq_n_u8(0x20));
        let stops = vorrq_u8(vorrq_u8(quote, backslash), control);
        // Each byte's 0x00 or 0xff narrowed to four bits: bits 4i to
        // 4i + 3 are byte i.
        vget_lane_u64::<0>(vreinterpret_u64_u8(vshrn_n_u16::<4>(vreinterpretq_u16_u8(
            stops,
        ))))
    };
    (nibbles != 0).then(|| (nibbles.trailing_zeros() / 4) as usize)
}

/// [`next_string_stop`] without vector instructions, from the start of
/// `hay`: the first 32 bytes (where most keys, ids and times end) a 64-bit
/// word at a time, each word's quotes, backslashes and control bytes
/// flagged at once; past them, the next quote or backslash by `memchr2`
/// (vectorised on every processor it knows), then the bytes passed over
/// checked for a control byte, four words per step.
#[cfg_attr(
    all(any(target_arch = "x86_64", target_arch = "aarch64"), not(test)),
    allow(dead_code)
)]
#[inline(always)]
fn first_string_stop_portable(hay: &[u8]) -> Option<usize> {
    const SHORT: usize = 32;
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    // Exact below the first byte flagged, all that is read of them.
    let below = |v: u64, n: u8| v.wrapping_sub(LO * u64::from(n)) & !v & HI;
    let equal = |v: u64, b: u8| below(v ^ (LO * u64::from(b)), 1);
    let word = |w: &[u8]| u64::from_le_bytes(w.try_into().unwrap_or_default());
    let near = &hay[..hay.len().min(SHORT)];
    let mut words = near.chunks_exact(8);
    for (at, w) in (&mut words).enumerate() {
        let v = word(w);
        let mask = equal(v, b'"') | equal(v, b'\\') | below(v, 0x20);
        if mask != 0 {
            return Some(at * 8 + (mask.trailing_zeros() / 8) as usize);
        }
    }
    let tail = words.remainder();
    if let Some(at) = tail.iter().position(|&b| is_string_stop(b)) {
        return Some(near.len() - tail.len() + at);
    }
    let far = hay.get(SHORT..)?;
    let next = memchr::memchr2(b'"', b'\\', far).unwrap_or(far.len());
    // Four words per step with one branch: past 32 bytes, a string is
    // message text or tool output, often kilobytes long.
    let passed = &far[..next];
    let mut blocks = passed.chunks_exact(32);
    let mut control = blocks.any(|b| {
        below(word(&b[..8]), 0x20)
            | below(word(&b[8..16]), 0x20)
            | below(word(&b[16..24]), 0x20)
            | below(word(&b[24..]), 0x20)
            != 0
    });
    if !control {
        let mut words = blocks.remainder().chunks_exact(8);
        control =
            words.any(|w| below(word(w), 0x20) != 0) || words.remainder().iter().any(|&b| b < 0x20);
    }
    // A control byte before the quote or backslash is the stop (rare: the
    // line is then not JSON).
    match control {
        true => Some(SHORT + passed.iter().position(|&b| b < 0x20)?),
        false => (next < far.len()).then_some(SHORT + next),
    }
}

#[cfg(test)]
pub(crate) fn may_dump_core() -> bool {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes one rlimit into the valid struct we own.
    let limited =
        unsafe { libc::getrlimit(libc::RLIMIT_CORE, &mut limit) } == 0 && limit.rlim_cur == 0;
    #[cfg(any(target_os = "linux", target_os = "android"))]
    // SAFETY: PR_GET_DUMPABLE reads a flag and touches no memory of ours.
    let dumpable = unsafe { libc::prctl(libc::PR_GET_DUMPABLE, 0, 0, 0, 0) } != 0;
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    let dumpable = false;
    !limited || dumpable
}

/// Caps the heap of every SQLite connection of the process at `bytes`
/// (`sqlite3_hard_heap_limit64`): past it an allocation fails and the
/// statement ends with `SQLITE_NOMEM`, so a hostile database cannot grow
/// the process without bound. Returns the limit now in force.
pub(crate) fn sqlite_hard_heap_limit(bytes: i64) -> i64 {
    // SAFETY: the call takes a plain integer, touches only SQLite's own
    // global state under its own mutex, and may be made at any time.
    unsafe { rusqlite::ffi::sqlite3_hard_heap_limit64(bytes) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_lists_what_std_lists_with_lstat_metadata() {
        use std::os::unix::fs::MetadataExt;
        // Oracle: `std::fs::read_dir` and `symlink_metadata`.
        let dir = crate::base::scratch::ScratchDir::new("sys-directory");
        std::fs::write(dir.join("a.jsonl"), b"one line\n").unwrap();
        std::fs::write(dir.join("b"), b"").unwrap();
        std::fs::create_dir(dir.join("sub")).unwrap();
        std::os::unix::fs::symlink(dir.join("a.jsonl"), dir.join("link.jsonl")).unwrap();
        std::os::unix::fs::symlink(dir.join("sub"), dir.join("link-dir")).unwrap();
        let mut want: Vec<(std::ffi::OsString, EntryKind, Option<FileStat>)> =
            std::fs::read_dir(dir.path())
                .unwrap()
                .map(|e| {
                    let e = e.unwrap();
                    let meta = std::fs::symlink_metadata(e.path()).unwrap();
                    let kind = if meta.file_type().is_dir() {
                        EntryKind::Directory
                    } else if meta.file_type().is_file() {
                        EntryKind::File
                    } else {
                        EntryKind::Other
                    };
                    let stat = FileStat {
                        dev: meta.dev(),
                        ino: meta.ino(),
                        size: meta.size(),
                        mtime_sec: meta.mtime(),
                        mtime_nsec: meta.mtime_nsec(),
                        ctime_sec: meta.ctime(),
                        ctime_nsec: meta.ctime_nsec(),
                    };
                    (e.file_name(), kind, Some(stat))
                })
                .collect();
        let mut listing = Directory::open(dir.path()).unwrap();
        let mut got = Vec::new();
        while let Some(entry) = listing.next_entry() {
            let entry = entry.unwrap();
            got.push((entry.name().to_owned(), entry.kind(), entry.stat().ok()));
        }
        want.sort_by(|a, b| a.0.cmp(&b.0));
        got.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(got.len(), 5);
        assert_eq!(got, want);
        assert_eq!(
            Directory::open(&dir.join("missing"))
                .err()
                .map(|e| e.kind()),
            Some(io::ErrorKind::NotFound)
        );
        assert_eq!(
            Directory::open(&dir.join("b")).err().map(|e| e.kind()),
            Some(io::ErrorKind::NotADirectory)
        );
    }

    #[test]
    fn the_first_string_stop_is_found_wherever_it_is() {
        // Oracle: the byte-by-byte definition. Text of every length up to
        // 100 bytes (past the 16-byte blocks and the portable search's
        // 32-byte start), a byte of every seventh value and each stop byte
        // at every position among random bytes that are mostly plain text,
        // searched from the start and from that position; both searches.
        let mut rng = crate::base::test_rng::Rng(0x9e37_79b9_7f4a_7c15);
        let mut next = move || rng.next();
        for len in 0..=100usize {
            for at in 0..len.max(1) {
                for value in (0..=255u8).step_by(7).chain([b'"', b'\\', 0x1f, 0x20]) {
                    let mut hay: Vec<u8> = (0..len)
                        .map(|_| match next() % 64 {
                            0 => (next() >> 8) as u8,
                            r => b'a' + (r % 26) as u8,
                        })
                        .collect();
                    if let Some(b) = hay.get_mut(at) {
                        *b = value;
                    }
                    let want = hay.iter().position(|&b| is_string_stop(b));
                    assert_eq!(next_string_stop(&hay, 0), want, "{hay:?}");
                    assert_eq!(first_string_stop_portable(&hay), want, "{hay:?}");
                    let from = at.min(len);
                    let want = hay[from..]
                        .iter()
                        .position(|&b| is_string_stop(b))
                        .map(|k| from + k);
                    assert_eq!(next_string_stop(&hay, from), want, "{hay:?} from {from}");
                }
            }
        }
        assert_eq!(next_string_stop(b"plain text here.", 0), None);
        assert_eq!(
            next_string_stop(b"ab\x7f\x80\xff\tgh\"\\xyzabc", 0),
            Some(5)
        );
        assert_eq!(
            next_string_stop(b"ab\x7f\x80\xff\tgh\"\\xyzabc", 6),
            Some(8)
        );
        assert_eq!(next_string_stop(b"ab", 3), None);
    }

    #[test]
    fn after_disabling_core_dumps_none_can_be_written() {
        // This marks the whole test process not dumpable, which no other
        // test depends on.
        disable_core_dumps().unwrap();
        assert!(!may_dump_core());
        // Idempotent: a second call changes nothing and still succeeds.
        disable_core_dumps().unwrap();
        assert!(!may_dump_core());
    }
}
