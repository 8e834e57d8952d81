//! Stress and fault tests for authorized_keys edits, across processes.
//!
//! The worker processes are this test binary re-executed with
//! `HEELER_STRESS_ROLE` set: the `worker_entry` test then plays a worker
//! instead of returning at once. No hidden heeler subcommand is involved;
//! the workers call the same library functions heeler uses.
//!
//! * 16 processes, 320 mixed append / remove-by-id / sweep / revoke
//!   operations on one file (1,000 under `HEELER_DEEP=1`): every foreign
//!   line survives, in order, once.
//! * A writer killed with SIGKILL at random points never leaves a torn or
//!   truncated file.
//! * Two concurrent `heeler accept` runs for one pairing enroll exactly once.
//! * Twelve `heeler accept` runs started at staggered moments, some after
//!   the enrollment: one enrolls, the others are refused, and the enrolled
//!   record the ceremony polls for survives every refusal.

use crate::common::Xorshift as Rng;
use crate::depth;
use crate::scratch;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

use heeler::pair::authorized_keys::{self, EditError, Location};
use heeler::pair::bootstrap_key::BootstrapKey;

const ROLE_ENV: &str = "HEELER_STRESS_ROLE";
const HOME_ENV: &str = "HEELER_STRESS_HOME";
const WORKERS: usize = 16;
/// The operations of the sixteen processes: 320, 1,000 when deep.
fn total_operations() -> usize {
    depth::rounds(320, 1_000)
}

/// The ceremonies run beside another writer: 50, 200 when deep.
fn ceremonies_beside_a_writer() -> usize {
    depth::rounds(50, 200)
}

/// A generator seeded from the clock and `salt`: the stress tests need
/// variety, not a replayable sequence.
fn seeded(salt: u64) -> Rng {
    let nanos = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    Rng((nanos ^ salt.wrapping_mul(0x9E37_79B9_7F4A_7C15)) | 1)
}

/// The user's own lines: every shape a real file has, including a line
/// with quoted options, a comment, a blank line, CRLF and non-UTF-8 bytes.
fn foreign_lines() -> Vec<Vec<u8>> {
    let mut lines: Vec<Vec<u8>> = vec![
        b"# my keys".to_vec(),
        b"".to_vec(),
        b"from=\"10.0.0.0/8\",command=\"echo a b\" ssh-ed25519 AAAAforeignopts backup".to_vec(),
        b"ssh-rsa AAAAB3NzaC1yc2EAAAADAQABforeignrsa laptop\r".to_vec(),
        b"ssh-ed25519 AAAAC3foreign\xff\xfe bytes".to_vec(),
        b"ecdsa-sha2-nistp256 AAAAE2foreignecdsa herdr-pairing-lookalike".to_vec(),
        b"ssh-ed25519 AAAAforeignmarker herdr-pairing:zz:exp:99999999999 \r".to_vec(),
    ];
    for i in 0..40 {
        lines.push(format!("ssh-ed25519 AAAAforeign{i:03} user{i}@host").into_bytes());
    }
    lines
}

fn temp_home(tag: &str) -> scratch::TempDir {
    let home = scratch::TempDir::new(&format!("heeler-stress-{tag}"));
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    home
}

fn write_initial(home: &Path, extra_last_line_without_newline: bool) {
    let mut bytes = authorized_keys::join_lines(&foreign_lines());
    if extra_last_line_without_newline {
        bytes.extend_from_slice(b"ssh-ed25519 AAAAforeignlast no-newline");
    }
    std::fs::write(home.join(".ssh/authorized_keys"), bytes).unwrap();
}

/// Checks the file: every foreign line present exactly once and in the
/// original order, every other line one a worker could have written, and a
/// final newline (no truncation).
fn assert_intact(home: &Path, with_last: bool) -> usize {
    let bytes = std::fs::read(home.join(".ssh/authorized_keys")).unwrap();
    assert!(
        bytes.ends_with(b"\n"),
        "the file ends with a newline (not truncated)"
    );
    let lines = authorized_keys::split_lines(&bytes);
    let mut expected = foreign_lines();
    if with_last {
        expected.push(b"ssh-ed25519 AAAAforeignlast no-newline".to_vec());
    }
    let foreign: Vec<&Vec<u8>> = lines.iter().filter(|l| expected.contains(l)).collect();
    assert_eq!(
        foreign,
        expected.iter().collect::<Vec<_>>(),
        "foreign lines kept, in order, once"
    );
    let mut ours = 0;
    for line in lines.iter().filter(|l| !expected.contains(l)) {
        let text = std::str::from_utf8(line).unwrap();
        let well_formed = (text.starts_with("restrict,command=\"")
            && authorized_keys::marker_of(line).is_some())
            || (text.starts_with("ssh-ed25519 AAAAworker") && text.split(' ').count() == 3);
        assert!(well_formed, "unexpected line {text:?}");
        ours += 1;
    }
    ours
}

fn edit_retrying(
    location: &Location,
    change: impl Fn(&[Vec<u8>]) -> authorized_keys::Edited,
) -> u32 {
    locked_retrying(location, |locked| locked.rewrite(&change).map(drop))
}

/// Runs `step` under the lock, retrying lock timeouts; returns how many.
fn locked_retrying(
    location: &Location,
    step: impl Fn(&authorized_keys::Locked) -> Result<(), EditError>,
) -> u32 {
    let mut timeouts = 0;
    loop {
        match authorized_keys::Locked::acquire(location).and_then(|locked| step(&locked)) {
            Ok(()) => return timeouts,
            Err(EditError::Lock(_)) => timeouts += 1,
            Err(e) => panic!("edit failed: {e}"),
        }
    }
}

/// One worker: `operations` random edits on `$HEELER_STRESS_HOME`.
fn run_worker(home: &Path, worker: usize, operations: usize) {
    let location = Location::for_home(home);
    let mut rng = seeded(worker as u64);
    let mut timeouts = 0;
    for n in 0..operations {
        let id = format!("w{worker}-{}", rng.below(4));
        let blob = format!("AAAAworker{worker}x{}", rng.below(4));
        let now = heeler::base::clock::unix_seconds();
        timeouts += match rng.below(5) {
            0 => {
                let exp = if rng.below(2) == 0 {
                    now - 10
                } else {
                    now + 1000
                };
                let line = format!(
                    "restrict,command=\"'/h' accept --state-dir '/s' --pairing-id {id}\" ssh-ed25519 AAAAboot{worker}x{n} herdr-pairing:{id}:exp:{exp}"
                );
                locked_retrying(&location, |locked| locked.append(&line))
            }
            1 => edit_retrying(&location, |l| authorized_keys::remove_pairing(l, &id)),
            2 => edit_retrying(&location, |l| authorized_keys::sweep_expired(l, now)),
            3 => edit_retrying(&location, |l| authorized_keys::revoke_blob(l, &blob)),
            _ => {
                let line = format!("ssh-ed25519 {blob} device{worker}");
                locked_retrying(&location, |locked| {
                    if authorized_keys::has_blob(&locked.read()?, &blob) {
                        Ok(())
                    } else {
                        locked.append(&line)
                    }
                })
            }
        };
    }
    println!("worker {worker}: {operations} operations, {timeouts} lock timeouts retried");
}

/// Re-executed workers land here; a normal test run returns at once.
#[test]
fn worker_entry() {
    let Ok(role) = std::env::var(ROLE_ENV) else {
        return;
    };
    let home = PathBuf::from(std::env::var(HOME_ENV).unwrap());
    if let Some(spec) = role.strip_prefix("worker:") {
        let (worker, operations) = spec.split_once(':').unwrap();
        run_worker(&home, worker.parse().unwrap(), operations.parse().unwrap());
    } else if role == "endless-writer" {
        run_worker(&home, 99, usize::MAX);
    }
}

fn worker_command(role: &str, home: &Path) -> Command {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args([
        "--exact",
        "authorized_keys_stress::worker_entry",
        "--nocapture",
        "--test-threads",
        "1",
    ])
    .env(ROLE_ENV, role)
    .env(HOME_ENV, home)
    .stdin(Stdio::null());
    cmd
}

#[test]
fn sixteen_processes_lose_no_foreign_line() {
    if std::env::var(ROLE_ENV).is_ok() {
        return;
    }
    let home = temp_home("many");
    write_initial(&home, true);
    let total = total_operations();
    let per_worker = total / WORKERS;
    let remainder = total % WORKERS;
    let children: Vec<_> = (0..WORKERS)
        .map(|w| {
            let ops = per_worker + usize::from(w < remainder);
            worker_command(&format!("worker:{w}:{ops}"), &home)
                .stdout(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut reported = 0;
    for child in children {
        let output = child.wait_with_output().unwrap();
        assert!(output.status.success(), "{output:?}");
        let text = String::from_utf8_lossy(&output.stdout);
        reported += text
            .lines()
            // The harness may print "test worker_entry ... " on the same line.
            .filter_map(|l| l.split_once("worker ").map(|(_, rest)| rest))
            .filter_map(|l| {
                l.split(": ")
                    .nth(1)?
                    .split(' ')
                    .next()?
                    .parse::<usize>()
                    .ok()
            })
            .sum::<usize>();
    }
    assert_eq!(reported, total, "every operation ran");
    let ours = assert_intact(&home, true);
    println!(
        "{WORKERS} processes, {total} operations: foreign lines intact, {ours} worker lines left"
    );
    let leftovers: Vec<_> = std::fs::read_dir(home.join(".ssh"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n != "authorized_keys")
        .collect();
    assert!(
        leftovers.is_empty(),
        "no lock or temp file left: {leftovers:?}"
    );
    std::fs::remove_dir_all(&home).unwrap();
}

#[test]
fn sigkill_at_random_points_never_truncates() {
    if std::env::var(ROLE_ENV).is_ok() {
        return;
    }
    let home = temp_home("kill");
    // A big file makes each write take long enough to be interrupted.
    let mut bytes = authorized_keys::join_lines(&foreign_lines());
    for i in 0..3000 {
        bytes.extend_from_slice(format!("ssh-ed25519 AAAAworkerbulk{i} bulk{i}\n").as_bytes());
    }
    std::fs::write(home.join(".ssh/authorized_keys"), &bytes).unwrap();
    let mut rng = seeded(7);
    let lock = home.join(".ssh/authorized_keys.herdr-pairing.lock");
    let rounds = 30;
    let mut changed_rounds = 0;
    for _ in 0..rounds {
        let before = std::fs::read(home.join(".ssh/authorized_keys")).unwrap();
        let mut child = worker_command("endless-writer", &home)
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(20 + rng.below(80)));
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        assert_intact(&home, false);
        if std::fs::read(home.join(".ssh/authorized_keys")).unwrap() != before {
            changed_rounds += 1;
        }
        // A killed writer leaves its lock (taken over after 10 s in real
        // use) and maybe a temp file; neither is the user's file.
        let _ = std::fs::remove_file(&lock);
    }
    assert!(changed_rounds > 0, "the writer never got to write");
    println!(
        "{rounds} SIGKILLs at random points ({changed_rounds} rounds wrote): authorized_keys intact every time"
    );
    std::fs::remove_dir_all(&home).unwrap();
}

#[test]
fn concurrent_accepts_enroll_exactly_once() {
    if std::env::var(ROLE_ENV).is_ok() {
        return;
    }
    let rounds = 10;
    for round in 0..rounds {
        let home = temp_home(&format!("accept{round}"));
        let state = home.join("state");
        let config = heeler::pair::ceremony::CeremonyConfig::new(
            &home,
            &state,
            Path::new(env!("CARGO_BIN_EXE_heeler")),
        );
        let ceremony = heeler::pair::ceremony::begin(&config).unwrap();
        let lines: Vec<String> = (0..2u8)
            .map(|i| {
                let key = BootstrapKey::from_seed([round as u8 * 2 + i + 1; 32]).unwrap();
                format!("{} phone{i}", key.public_line())
            })
            .collect();
        // Each stops once it has read its submission, before the lock
        // (`HEELER_TEST_PAUSE`, the `accept` step), until both stand there;
        // then both go on at once.
        let pauses: Vec<PathBuf> = (0..lines.len())
            .map(|i| home.join(format!("paused-{i}")))
            .collect();
        let mut children: Vec<_> = pauses
            .iter()
            .map(|pause| {
                Command::new(env!("CARGO_BIN_EXE_heeler"))
                    .args(["accept", "--state-dir"])
                    .arg(&state)
                    .args(["--pairing-id", ceremony.pairing_id()])
                    .env_clear()
                    .env("HOME", &home)
                    .env("HEELER_TEST_PAUSE", format!("accept:{}", pause.display()))
                    .stdin(Stdio::piped())
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        for (child, line) in children.iter_mut().zip(&lines) {
            let mut stdin = child.stdin.take().unwrap();
            stdin.write_all(format!("{line}\n").as_bytes()).unwrap();
        }
        let deadline = Instant::now() + Duration::from_secs(30);
        while !pauses.iter().all(|p| p.exists()) {
            assert!(
                Instant::now() < deadline,
                "round {round}: never both paused"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        let started = Instant::now();
        for pause in &pauses {
            std::fs::remove_file(pause).unwrap();
        }
        let outputs: Vec<_> = children
            .into_iter()
            .map(|c| c.wait_with_output().unwrap())
            .collect();
        let answers: Vec<String> = outputs
            .iter()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .collect();
        let oks = answers
            .iter()
            .filter(|a| a.starts_with("HERDR-ENROLL:OK:"))
            .count();
        let unknown = answers
            .iter()
            .filter(|a| *a == "HERDR-ENROLL:ERR:unknown_pairing\n")
            .count();
        assert_eq!(
            (oks, unknown),
            (1, 1),
            "{answers:?} after {:?}",
            started.elapsed()
        );
        let text = std::fs::read_to_string(home.join(".ssh/authorized_keys")).unwrap();
        let enrolled: Vec<_> = lines.iter().filter(|l| text.contains(l.as_str())).collect();
        assert_eq!(enrolled.len(), 1, "exactly one device line: {text}");
        assert_eq!(text.lines().count(), 1, "the bootstrap line is gone");
        let record = ceremony.poll_enrolled().unwrap();
        assert_eq!(&record.line, enrolled[0]);
        ceremony.end().unwrap();
        std::fs::remove_dir_all(&home).unwrap();
    }
    println!("{rounds} rounds of two concurrent accepts: exactly one enrollment each");
}

#[test]
fn an_expiry_racing_accept_never_loses_an_enrollment() {
    if std::env::var(ROLE_ENV).is_ok() {
        return;
    }
    let mut rng = seeded(11);
    let rounds = 20;
    let (mut won_by_accept, mut won_by_expiry) = (0, 0);
    for round in 0..rounds {
        let home = temp_home(&format!("race{round}"));
        let state = home.join("state");
        let config = heeler::pair::ceremony::CeremonyConfig::new(
            &home,
            &state,
            Path::new(env!("CARGO_BIN_EXE_heeler")),
        );
        let ceremony = heeler::pair::ceremony::begin(&config).unwrap();
        let line = format!(
            "{} racer",
            BootstrapKey::from_seed([round as u8 + 1; 32])
                .unwrap()
                .public_line()
        );
        let mut child = Command::new(env!("CARGO_BIN_EXE_heeler"))
            .args(["accept", "--state-dir"])
            .arg(&state)
            .args(["--pairing-id", ceremony.pairing_id()])
            .env_clear()
            .env("HOME", &home)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(format!("{line}\n").as_bytes())
            .unwrap();
        std::thread::sleep(Duration::from_millis(rng.below(15)));
        let expired = ceremony.end().unwrap();
        let output = child.wait_with_output().unwrap();
        let answer = String::from_utf8_lossy(&output.stdout).into_owned();
        let text = std::fs::read_to_string(home.join(".ssh/authorized_keys")).unwrap();
        if answer.starts_with("HERDR-ENROLL:OK:") {
            won_by_accept += 1;
            let enrolled = expired.expect("an OK enrollment is reported by expire");
            assert_eq!(enrolled.line, line);
            assert_eq!(text, format!("{line}\n"));
        } else {
            won_by_expiry += 1;
            assert_eq!(answer, "HERDR-ENROLL:ERR:unknown_pairing\n");
            assert!(expired.is_none());
            assert_eq!(text, "", "neither the bootstrap nor the device line");
        }
        ceremony.end().unwrap();
        std::fs::remove_dir_all(&home).unwrap();
    }
    println!(
        "{rounds} expiry/accept races: {won_by_accept} enrolled (expire reported them), {won_by_expiry} expired first (nothing enrolled)"
    );
}

/// A temp home removed on drop, also when the test panics.
struct RemovedOnDrop(scratch::TempDir);

#[test]
fn staggered_accepts_never_hide_the_enrollment() {
    if std::env::var(ROLE_ENV).is_ok() {
        return;
    }
    const ACCEPTS: usize = 12;
    let rounds = 10;
    let mut rng = seeded(23);
    let mut late_refusals = 0;
    for round in 0..rounds {
        let home = RemovedOnDrop(temp_home(&format!("stagger{round}")));
        let state = home.0.join("state");
        let config = heeler::pair::ceremony::CeremonyConfig::new(
            &home.0,
            &state,
            Path::new(env!("CARGO_BIN_EXE_heeler")),
        );
        let ceremony = heeler::pair::ceremony::begin(&config).unwrap();
        let id = ceremony.pairing_id().to_owned();
        let delays: Vec<u64> = (0..ACCEPTS).map(|_| rng.below(60)).collect();
        let answers: Vec<(String, String)> = std::thread::scope(|scope| {
            let runs: Vec<_> = delays
                .iter()
                .enumerate()
                .map(|(i, delay)| {
                    let (state, home, id) = (&state, &home.0, &id);
                    scope.spawn(move || {
                        std::thread::sleep(Duration::from_millis(*delay));
                        let seed = [(round * ACCEPTS + i + 1) as u8; 32];
                        let line = format!(
                            "{} racer{i}",
                            BootstrapKey::from_seed(seed).unwrap().public_line()
                        );
                        let mut child = Command::new(env!("CARGO_BIN_EXE_heeler"))
                            .args(["accept", "--state-dir"])
                            .arg(state)
                            .args(["--pairing-id", id])
                            .env_clear()
                            .env("HOME", home)
                            .stdin(Stdio::piped())
                            .stdout(Stdio::piped())
                            .stderr(Stdio::piped())
                            .spawn()
                            .unwrap();
                        let mut stdin = child.stdin.take().unwrap();
                        // A refusal may come before the read: a broken pipe then.
                        let _ = stdin.write_all(format!("{line}\n").as_bytes());
                        drop(stdin);
                        let output = child.wait_with_output().unwrap();
                        let answer = String::from_utf8_lossy(&output.stdout).into_owned();
                        let detail = String::from_utf8_lossy(&output.stderr).into_owned();
                        let ok = answer.starts_with("HERDR-ENROLL:OK:");
                        (answer, if ok { line } else { detail })
                    })
                })
                .collect();
            runs.into_iter().map(|r| r.join().unwrap()).collect()
        });
        let oks: Vec<&(String, String)> = answers
            .iter()
            .filter(|(answer, _)| answer.starts_with("HERDR-ENROLL:OK:"))
            .collect();
        assert_eq!(oks.len(), 1, "{answers:?}");
        for (answer, detail) in answers
            .iter()
            .filter(|a| !a.0.starts_with("HERDR-ENROLL:OK:"))
        {
            assert_eq!(answer, "HERDR-ENROLL:ERR:unknown_pairing\n", "{detail}");
            if detail.starts_with("pairing") && !detail.contains("no pending") {
                late_refusals += 1;
            }
        }
        let line = &oks[0].1;
        let text = std::fs::read_to_string(home.0.join(".ssh/authorized_keys")).unwrap();
        assert_eq!(
            text,
            format!("{line}\n"),
            "one device line, no bootstrap line"
        );
        let enrolled = ceremony.poll_enrolled().unwrap_or_else(|| {
            panic!("round {round}: the enrollment report was lost: {answers:?}")
        });
        assert_eq!(&enrolled.line, line);
        assert!(enrolled.appended);
        assert_eq!(ceremony.end().unwrap(), Some(enrolled));
        ceremony.end().unwrap();
    }
    println!(
        "{rounds} rounds of {ACCEPTS} staggered accepts: one enrollment each, reported every time ({late_refusals} refusals said already used)"
    );
}

/// The numbers of the lines `tag` wrote that are in `text`, each counted.
fn numbered(text: &str, tag: &str) -> std::collections::BTreeMap<usize, usize> {
    let mut seen = std::collections::BTreeMap::new();
    for line in text.lines() {
        if let Some(n) = line
            .strip_prefix("ssh-ed25519 AAAA")
            .and_then(|rest| rest.strip_prefix(tag))
            .and_then(|rest| rest.split(' ').next())
            .and_then(|n| n.parse::<usize>().ok())
        {
            *seen.entry(n).or_insert(0) += 1;
        }
    }
    seen
}

/// A writer that knows nothing of heeler's lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outsider {
    /// `>>` (ssh-copy-id): opens the file `O_APPEND` and writes one
    /// numbered line, every 2 ms.
    Appender,
    /// An editor's save: reads the whole file, adds a numbered line (and
    /// every third save deletes the line it added two saves before, an
    /// edit in the middle) and renames its copy over the file, every 5 ms.
    Editor,
}

impl Outsider {
    fn tag(self) -> &'static str {
        match self {
            Outsider::Appender => "append",
            Outsider::Editor => "editor",
        }
    }

    /// Line `n` of this outsider.
    fn line(self, n: usize) -> String {
        format!("ssh-ed25519 AAAA{}{n} outsider", self.tag())
    }

    /// The earlier line the `n`th write deletes, if it deletes one.
    fn deletes(self, n: usize) -> Option<usize> {
        match self {
            Outsider::Appender => None,
            Outsider::Editor => (n % 3 == 2).then(|| n - 2),
        }
    }

    /// Writes line `n` (and deletes the line [`Outsider::deletes`] names).
    fn write(self, file: &Path, n: usize) {
        let line = format!("{}\n", self.line(n));
        match self {
            Outsider::Appender => {
                let mut out = std::fs::OpenOptions::new().append(true).open(file).unwrap();
                out.write_all(line.as_bytes()).unwrap();
            }
            Outsider::Editor => {
                let saved = file.with_file_name("authorized_keys.editor-save");
                let old = std::fs::read(file).unwrap();
                let deleted = self.deletes(n).map(|k| self.line(k));
                let mut text: Vec<u8> = old
                    .split_inclusive(|&b| b == b'\n')
                    .filter(|l| deleted.as_deref().map(str::as_bytes) != Some(l.trim_ascii_end()))
                    .flatten()
                    .copied()
                    .collect();
                text.extend_from_slice(line.as_bytes());
                std::fs::write(&saved, &text).unwrap();
                std::fs::rename(&saved, file).unwrap();
            }
        }
    }

    fn period(self) -> Duration {
        match self {
            Outsider::Appender => Duration::from_millis(2),
            Outsider::Editor => Duration::from_millis(5),
        }
    }
}

/// Runs `ceremonies` ceremonies while `outsider` writes, then checks that
/// every line it wrote is in the file exactly once and the user's own
/// lines are intact. The ceremonies are the library's own steps, as the
/// commands run them: `begin` (the bootstrap line), `accept` (the record,
/// the Device Key line, the bootstrap line's removal) and `end`. An
/// editor's save may drop heeler's own lines, as any editor would; those
/// are not counted.
fn ceremonies_beside(outsider: Outsider, ceremonies: usize) {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    let home = temp_home(&format!("beside-{}", outsider.tag()));
    write_initial(&home, false);
    let file = home.join(".ssh/authorized_keys");
    let stop = Arc::new(AtomicBool::new(false));
    let wrote = Arc::new(AtomicUsize::new(0));
    let writer = {
        let (file, stop, wrote) = (file.clone(), stop.clone(), wrote.clone());
        std::thread::spawn(move || {
            let mut n = 0;
            while !stop.load(Ordering::SeqCst) {
                outsider.write(&file, n);
                n += 1;
                wrote.store(n, Ordering::SeqCst);
                std::thread::sleep(outsider.period());
            }
            n
        })
    };
    // Each ceremony starts only once the outsider has written once more,
    // so the two interleave however loaded the machine is (a count, not a
    // sleep, is what the test waits on).
    let outsider_wrote = |at_least: usize| {
        let deadline = Instant::now() + Duration::from_secs(30);
        while wrote.load(Ordering::SeqCst) < at_least {
            assert!(
                Instant::now() < deadline,
                "the {outsider:?} stopped writing"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
    };
    let state = home.join("state");
    let config = heeler::pair::ceremony::CeremonyConfig::new(
        &home,
        &state,
        Path::new(env!("CARGO_BIN_EXE_heeler")),
    );
    let started = Instant::now();
    for round in 0..ceremonies {
        outsider_wrote(round + 1);
        let ceremony = heeler::pair::ceremony::begin(&config).unwrap();
        let seed = [u8::try_from(round % 250).unwrap() + 1; 32];
        let device = format!(
            "{} ceremony{round}",
            BootstrapKey::from_seed(seed).unwrap().public_line()
        );
        let (mut phone, stdin) = std::os::unix::net::UnixStream::pair().unwrap();
        phone.write_all(format!("{device}\n").as_bytes()).unwrap();
        let request = heeler::pair::accept::Request {
            state_dir: Some(state.clone()),
            pairing_id: Some(ceremony.pairing_id().to_owned()),
            home: Some(home.to_path_buf()),
        };
        let answer = heeler::pair::accept::accept(
            &request,
            stdin,
            Duration::from_secs(5),
            &heeler::base::clock::unix_seconds,
        );
        assert!(answer.is_ok(), "round {round}: {answer:?}");
        let _ = ceremony.end();
    }
    let took = started.elapsed();
    stop.store(true, Ordering::SeqCst);
    let written = writer.join().unwrap();
    let bytes = std::fs::read(&file).unwrap();
    let text = String::from_utf8_lossy(&bytes);
    let seen = numbered(&text, outsider.tag());
    let deleted: std::collections::BTreeSet<usize> =
        (0..written).filter_map(|n| outsider.deletes(n)).collect();
    let missing: Vec<usize> = (0..written)
        .filter(|n| !deleted.contains(n) && !seen.contains_key(n))
        .collect();
    let doubled: Vec<usize> = seen
        .iter()
        .filter(|(_, count)| **count > 1)
        .map(|(n, _)| *n)
        .collect();
    let revived: Vec<usize> = deleted
        .iter()
        .copied()
        .filter(|n| seen.contains_key(n))
        .collect();
    println!(
        "{ceremonies} ceremonies in {took:?} beside {outsider:?}: it wrote {written} lines and deleted {}; {} lost, {} doubled, {} deleted lines back",
        deleted.len(),
        missing.len(),
        doubled.len(),
        revived.len()
    );
    assert!(
        missing.is_empty() && doubled.is_empty() && revived.is_empty(),
        "{outsider:?}: lost {missing:?}, doubled {doubled:?}, deleted but back {revived:?}"
    );
    assert!(written >= ceremonies, "the {outsider:?} ran throughout");
    let foreign: Vec<Vec<u8>> = authorized_keys::split_lines(&bytes)
        .into_iter()
        .filter(|l| foreign_lines().contains(l))
        .collect();
    assert_eq!(
        foreign,
        foreign_lines(),
        "the user's own lines, in order, once"
    );
}

/// ssh-copy-id's `>>` against the ceremonies: no line lost or doubled.
#[test]
fn ceremonies_lose_no_line_a_concurrent_appender_writes() {
    if std::env::var(ROLE_ENV).is_ok() {
        return;
    }
    ceremonies_beside(Outsider::Appender, ceremonies_beside_a_writer());
}

/// An editor saving by rename against the ceremonies: no line of its saves
/// lost or doubled.
#[test]
fn ceremonies_lose_no_line_a_concurrent_editor_saves() {
    if std::env::var(ROLE_ENV).is_ok() {
        return;
    }
    ceremonies_beside(Outsider::Editor, ceremonies_beside_a_writer());
}
