//! The one way heeler reads another program's SQLite database (opencode's
//! and Kilo's `opencode.db`, `kilo.db`): read-only, never in the writer's
//! way, and bounded whatever the file holds.
//!
//! The database is opened read-only (`SQLITE_OPEN_READ_ONLY`, one thread,
//! `PRAGMA query_only`), so nothing heeler does can change it. The agent
//! writes it in WAL mode: a reader then never blocks the writer, and the
//! writer never blocks a reader except for the moments it holds an
//! exclusive lock (a recovery, a database in another journal mode); heeler
//! waits at most [`BUSY_WAIT`] for those and then gives up with
//! [`Error::Busy`], to read it on a later refresh. A hostile file (garbage,
//! truncated, a loop of pages, a row of a gigabyte) ends in an error, not a
//! hang: every statement is cut off at [`DEADLINE`] by a progress handler,
//! a value longer than [`MAX_VALUE`] is refused by SQLite itself, and every
//! connection's heap is capped at [`HEAP_LIMIT`] (`sys::sqlite_hard_heap_limit`).

use std::path::Path;
use std::time::{Duration, Instant};

use rusqlite::{Connection, ErrorCode, OpenFlags, limits::Limit, types::ValueRef};

/// How long a read waits for a writer's exclusive lock before giving up.
pub(crate) const BUSY_WAIT: Duration = Duration::from_millis(100);
/// How long one read may run.
pub(crate) const DEADLINE: Duration = Duration::from_secs(10);
/// The heap SQLite may hold for all connections of the process.
pub(crate) const HEAP_LIMIT: i64 = 128 << 20;
/// The longest text or blob a read accepts (SQLite refuses a longer one).
pub(crate) const MAX_VALUE: i32 = 16 << 20;
/// Virtual machine steps between two looks at the clock.
const STEPS_PER_CHECK: i32 = 10_000;

/// Why a database could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Error {
    /// Its writer held it locked for longer than [`BUSY_WAIT`]: try later.
    Busy,
    /// The read ran past [`DEADLINE`].
    TimedOut,
    /// Not a database, damaged, of another schema, or over a limit.
    Refused(String),
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Busy => write!(f, "the database is locked by its writer"),
            Error::TimedOut => write!(f, "reading the database took over {DEADLINE:?}"),
            Error::Refused(why) => write!(f, "the database cannot be read: {why}"),
        }
    }
}

impl std::error::Error for Error {}

impl From<rusqlite::Error> for Error {
    fn from(e: rusqlite::Error) -> Error {
        match e.sqlite_error_code() {
            Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => Error::Busy,
            Some(ErrorCode::OperationInterrupted) => Error::TimedOut,
            _ => Error::Refused(e.to_string()),
        }
    }
}

/// Opens `path` read-only with the limits of the module's doc, its
/// statements cut off at `deadline`.
fn open(path: &Path, deadline: Instant) -> Result<Connection, Error> {
    crate::base::sys::sqlite_hard_heap_limit(HEAP_LIMIT);
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let mut conn = Connection::open_with_flags(path, flags)?;
    conn.busy_timeout(BUSY_WAIT)?;
    conn.set_limit(Limit::SQLITE_LIMIT_LENGTH, MAX_VALUE)?;
    conn.set_limit(Limit::SQLITE_LIMIT_SQL_LENGTH, 1 << 16)?;
    conn.progress_handler(STEPS_PER_CHECK, Some(move || Instant::now() > deadline))?;
    conn.execute_batch("PRAGMA query_only = 1; PRAGMA cache_size = -2048; PRAGMA mmap_size = 0")?;
    Ok(conn)
}

/// Runs the query `sql` on the database at `path` and hands each row's
/// first `N` columns to `row`, as bytes (text and blobs as they are,
/// numbers as their decimal text, NULL as nothing), until `row` returns
/// false. Returns the rows read.
pub(crate) fn for_each_row<const N: usize>(
    path: &Path,
    sql: &str,
    mut row: impl FnMut([&[u8]; N]) -> bool,
) -> Result<u64, Error> {
    let deadline = Instant::now() + DEADLINE;
    let conn = open(path, deadline)?;
    let mut stmt = conn.prepare(sql)?;
    let mut rows = stmt.query([])?;
    let mut count = 0u64;
    let mut numbers: [String; N] = std::array::from_fn(|_| String::new());
    while let Some(r) = rows.next()? {
        let mut values: [&[u8]; N] = [&[]; N];
        for (i, number) in numbers.iter_mut().enumerate() {
            number.clear();
            match r.get_ref(i)? {
                ValueRef::Integer(n) => *number = n.to_string(),
                ValueRef::Real(x) => *number = x.to_string(),
                _ => {}
            }
        }
        for (i, value) in values.iter_mut().enumerate() {
            *value = match r.get_ref(i)? {
                ValueRef::Text(b) | ValueRef::Blob(b) => b,
                ValueRef::Integer(_) | ValueRef::Real(_) => numbers[i].as_bytes(),
                ValueRef::Null => &[],
            };
        }
        count += 1;
        if !row(values) {
            break;
        }
    }
    Ok(count)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::scratch::ScratchDir;

    fn db_with_rows(path: &Path, n: usize) {
        let conn = Connection::open(path).unwrap();
        conn.execute_batch(
            "PRAGMA journal_mode = WAL; CREATE TABLE t (id TEXT PRIMARY KEY, n INTEGER, v TEXT);",
        )
        .unwrap();
        for i in 0..n {
            conn.execute(
                "INSERT INTO t VALUES (?1, ?2, ?3)",
                rusqlite::params![format!("r{i}"), i as i64, None::<String>],
            )
            .unwrap();
        }
    }

    #[test]
    fn rows_come_as_bytes_with_numbers_as_text_and_null_as_nothing() {
        let scratch = ScratchDir::new("sqlite-rows");
        let path = scratch.path().join("a.db");
        db_with_rows(&path, 3);
        let mut seen = Vec::new();
        let n = for_each_row(&path, "SELECT id, n, v FROM t ORDER BY id", |[id, n, v]| {
            seen.push((id.to_vec(), n.to_vec(), v.to_vec()));
            true
        })
        .unwrap();
        assert_eq!(n, 3);
        assert_eq!(seen[2], (b"r2".to_vec(), b"2".to_vec(), Vec::new()));
    }

    #[test]
    fn garbage_a_truncated_file_and_a_missing_table_are_refused() {
        let scratch = ScratchDir::new("sqlite-hostile");
        let garbage = scratch.path().join("garbage.db");
        std::fs::write(&garbage, vec![0x5a; 10_000]).unwrap();
        let whole = scratch.path().join("whole.db");
        db_with_rows(&whole, 2_000);
        // Checkpointed into the main file, then cut in the middle.
        Connection::open(&whole)
            .unwrap()
            .execute_batch("PRAGMA wal_checkpoint(TRUNCATE); PRAGMA journal_mode = DELETE")
            .unwrap();
        let bytes = std::fs::read(&whole).unwrap();
        let cut = scratch.path().join("cut.db");
        std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
        for path in [&garbage, &cut] {
            let got = for_each_row(path, "SELECT id FROM t", |[_]| true);
            assert!(matches!(got, Err(Error::Refused(_))), "{path:?}: {got:?}");
        }
        let got = for_each_row(&whole, "SELECT id FROM nothing", |[_]| true);
        assert!(matches!(got, Err(Error::Refused(_))), "{got:?}");
    }

    #[test]
    fn a_writer_s_exclusive_lock_is_waited_on_briefly_then_reported_busy() {
        let scratch = ScratchDir::new("sqlite-busy");
        let path = scratch.path().join("a.db");
        db_with_rows(&path, 1);
        let writer = Connection::open(&path).unwrap();
        writer
            .execute_batch("PRAGMA journal_mode = DELETE; BEGIN EXCLUSIVE")
            .unwrap();
        let start = Instant::now();
        let got = for_each_row(&path, "SELECT id FROM t", |[_]| true);
        assert_eq!(got, Err(Error::Busy));
        assert!(
            start.elapsed() < Duration::from_secs(2),
            "{:?}",
            start.elapsed()
        );
        writer.execute_batch("COMMIT").unwrap();
        assert_eq!(for_each_row(&path, "SELECT id FROM t", |[_]| true), Ok(1));
    }

    #[test]
    fn a_reader_sees_what_a_live_writer_committed_to_its_wal() {
        let scratch = ScratchDir::new("sqlite-wal");
        let path = scratch.path().join("a.db");
        db_with_rows(&path, 1);
        let writer = Connection::open(&path).unwrap();
        writer
            .execute("INSERT INTO t VALUES ('late', 9, 'x')", [])
            .unwrap();
        // An open write transaction of the writer does not block the read.
        writer
            .execute_batch("BEGIN IMMEDIATE; INSERT INTO t VALUES ('open', 1, 'y')")
            .unwrap();
        assert_eq!(for_each_row(&path, "SELECT id FROM t", |[_]| true), Ok(2));
        writer.execute_batch("COMMIT").unwrap();
        assert_eq!(for_each_row(&path, "SELECT id FROM t", |[_]| true), Ok(3));
    }

    #[test]
    fn a_read_that_runs_past_its_deadline_is_cut_off() {
        let scratch = ScratchDir::new("sqlite-slow");
        let path = scratch.path().join("a.db");
        db_with_rows(&path, 1);
        // A query that would run for ages: cut off by the progress handler
        // (a deadline already passed ends it at its first check).
        let deadline = Instant::now();
        let conn = open(&path, deadline).unwrap();
        let got = conn
            .query_row(
                "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c",
                [],
                |r| r.get::<_, i64>(0),
            )
            .map_err(Error::from);
        assert_eq!(got, Err(Error::TimedOut));
    }
}
