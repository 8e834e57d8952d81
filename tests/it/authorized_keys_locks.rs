//! The authorized_keys lock under hostile or odd conditions, across
//! processes: whatever sits at the lock path, an edit ends in bounded time
//! with an error and leaves the file alone; a live holder is never taken
//! over however old its lock file looks, and a dead one's stale lock is; a
//! lock file of an older process (plain `O_EXCL`, no `flock`) is respected;
//! a symlinked authorized_keys stays a link and a revoke reaches its target.
//!
//! The holder process is this test binary re-executed with
//! `HEELER_LOCKS_ROLE` set: the `holder_entry` test then holds the lock
//! until it is killed.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

use heeler::base::atomic_file::LockPolicy;
use heeler::pair::authorized_keys::{self, EditError, Location, Locked};

const ROLE_ENV: &str = "HEELER_LOCKS_ROLE";
const HOME_ENV: &str = "HEELER_LOCKS_HOME";

const QUICK: LockPolicy = LockPolicy {
    deadline: Duration::from_millis(300),
    stale_after: Duration::from_secs(10),
    retry_every: Duration::from_millis(25),
};

/// A home directory for one test, removed on drop (also on panic).
struct Home(PathBuf);

impl Home {
    fn new(tag: &str) -> Home {
        let path = std::env::temp_dir().join(format!("heeler-locks-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(path.join(".ssh")).unwrap();
        Home(path)
    }

    fn location(&self) -> Location {
        Location::for_home(&self.0)
    }
}

impl Drop for Home {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A holder process, killed on drop (also on panic).
struct Holder(Child);

impl Holder {
    /// Starts a process that takes the lock of `home` and reports it.
    fn start(home: &Home) -> Holder {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "authorized_keys_locks::holder_entry",
                "--nocapture",
                "--test-threads",
                "1",
            ])
            .env(ROLE_ENV, "hold")
            .env(HOME_ENV, &home.0)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let holder = Holder(child);
        let mut lines = BufReader::new(stdout).lines();
        let held = lines.any(|line| line.is_ok_and(|l| l.contains("lock held")));
        assert!(held, "the holder took the lock");
        holder
    }

    fn kill(mut self) {
        self.0.kill().unwrap();
        self.0.wait().unwrap();
    }
}

impl Drop for Holder {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Re-executed holders land here; a normal test run returns at once.
#[test]
fn holder_entry() {
    if std::env::var(ROLE_ENV).as_deref() != Ok("hold") {
        return;
    }
    let home = PathBuf::from(std::env::var(HOME_ENV).unwrap());
    let _locked = Locked::acquire(&Location::for_home(&home)).unwrap();
    println!("lock held");
    std::thread::sleep(Duration::from_secs(60));
}

fn is_holder() -> bool {
    std::env::var(ROLE_ENV).is_ok()
}

fn age(path: &Path, by: Duration) {
    std::fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(SystemTime::now() - by)
        .unwrap();
}

/// An edit with the quick policy, timed.
fn quick_edit(location: &Location) -> (Result<(), EditError>, Duration) {
    let started = Instant::now();
    let outcome = Locked::acquire_with(location, QUICK)
        .and_then(|locked| locked.append("ssh-ed25519 AAAAnew"));
    (outcome, started.elapsed())
}

fn assert_fails_in_time(location: &Location, expected: &str) {
    let (outcome, took) = quick_edit(location);
    let error = outcome.unwrap_err().to_string();
    assert!(error.contains(expected), "{error}");
    // Generous: the point is "ends", not a precise time.
    assert!(took < QUICK.deadline + Duration::from_secs(3), "{took:?}");
}

#[test]
fn odd_things_at_the_lock_path_end_in_an_error_in_time() {
    if is_holder() {
        return;
    }
    let home = Home::new("odd");
    let location = home.location();
    std::fs::write(&location.file, b"ssh-rsa AAAAmine me\n").unwrap();

    std::os::unix::fs::symlink(home.0.join("nowhere"), &location.lock).unwrap();
    assert_fails_in_time(&location, "is a symbolic link");
    assert!(
        !home.0.join("nowhere").exists(),
        "the link was not followed"
    );
    std::fs::remove_file(&location.lock).unwrap();

    std::fs::create_dir(&location.lock).unwrap();
    assert_fails_in_time(&location, "is not a regular file");
    std::fs::remove_dir(&location.lock).unwrap();

    assert_eq!(
        std::fs::read(&location.file).unwrap(),
        b"ssh-rsa AAAAmine me\n",
        "no edit happened"
    );
    quick_edit(&location).0.unwrap();
}

#[test]
fn a_live_holder_is_never_taken_over_and_a_dead_ones_lock_is() {
    if is_holder() {
        return;
    }
    let home = Home::new("live");
    let location = home.location();
    let holder = Holder::start(&home);
    // However old the lock file looks, its holder is alive.
    age(&location.lock, Duration::from_secs(3600));
    assert_fails_in_time(&location, "timed out waiting for authorized_keys lock");
    holder.kill();
    assert!(location.lock.exists(), "a killed holder leaves its file");
    // Stale by the shared rule (older than 10 s), and nobody holds it.
    quick_edit(&location).0.unwrap();
    assert!(!location.lock.exists(), "released");
    assert_eq!(
        std::fs::read(&location.file).unwrap(),
        b"ssh-ed25519 AAAAnew\n"
    );
}

#[test]
fn an_older_processes_lock_file_is_respected_until_stale() {
    if is_holder() {
        return;
    }
    let home = Home::new("old");
    let location = home.location();
    // An older process's lock: O_EXCL, its pid, no flock.
    std::fs::write(&location.lock, format!("{}\n", std::process::id())).unwrap();
    assert_fails_in_time(&location, "timed out waiting for authorized_keys lock");
    age(&location.lock, Duration::from_secs(11));
    quick_edit(&location).0.unwrap();
    assert!(!location.lock.exists());
}

#[test]
fn a_revoke_reaches_the_target_of_a_symlinked_file() {
    if is_holder() {
        return;
    }
    let home = Home::new("link");
    let location = home.location();
    let managed = home.0.join("dotfiles");
    std::fs::create_dir(&managed).unwrap();
    let real = managed.join("authorized_keys");
    std::fs::write(&real, b"ssh-ed25519 AAAAphone phone\nssh-rsa AAAAmine me\n").unwrap();
    std::os::unix::fs::symlink(&real, &location.file).unwrap();
    let changed =
        authorized_keys::edit(&location, |l| authorized_keys::revoke_blob(l, "AAAAphone")).unwrap();
    assert!(changed);
    assert!(
        std::fs::symlink_metadata(&location.file)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(std::fs::read(&real).unwrap(), b"ssh-rsa AAAAmine me\n");
}
