//! Usage under live use, modelled: transcripts grow, are rewritten,
//! replaced, archived and deleted between refreshes, the way agents and
//! people change them while the cache keeps up.
//!
//! Each run is a seeded random sequence of steps over Claude Code, Codex and pi
//! files. After every step the cache is refreshed through the worker's own
//! path (`worker::refresh_cache`, what `heeler usage worker` runs under its
//! lock) and checked against two oracles that owe nothing to the
//! incremental code:
//! - the test's own bookkeeping: every call it wrote, deduplicated by the
//!   rules of the transcript formats (`reference/usage.md`,
//!   `reference/codex-accounting.md`), summed per 15-minute slot, agent,
//!   model and directory; requests and every token counter must match the
//!   cached aggregate exactly;
//! - a from-scratch rebuild: the same worker path on an empty cache; the
//!   snapshot, the whole aggregate history and every view's JSON document
//!   must be identical.
//!
//! A failing run shrinks its steps to a minimal sequence that still fails
//! and prints it with the seed. `HEELER_LIVE_STEPS` sets the steps per seed
//! and `HEELER_LIVE_SEEDS` the number of seeds: by default 100 steps of 3
//! seeds (about 3 s, sized for `cargo test`), 250 steps of 8 seeds under
//! `HEELER_DEEP=1` (about 45 s).

use crate::usage_fixture;

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use heeler::base::tz::Zone;
use heeler::usage::aggregate::{SLOT, SlotAcc, sum_sessions};
use heeler::usage::event::Agent;
use heeler::usage::paths::UsageDir;
use heeler::usage::pricing::PriceTable;
use heeler::usage::store::state::{StateStore, Tables};
use heeler::usage::views::data::{Data, Period, Request};
use heeler::usage::views::render::{self, Format, View};
use heeler::usage::worker::{self, CacheRefresh, Pass, Roots};
use usage_fixture::*;

use crate::common::Xorshift as Rng;
use crate::depth;

const CLAUDE_MODELS: [&str; 3] = ["claude-opus-4-6", "claude-sonnet-4-5", "claude-mystery-9"];
const CODEX_MODELS: [&str; 2] = ["gpt-5.5", "gpt-5-codex"];
const PI_MODELS: [&str; 3] = ["claude-sonnet-4-5", "gpt-5", "pi-mystery-1"];

/// One Claude assistant record as the test wrote it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct ClaudeRecord {
    msg: String,
    req: String,
    at: i64,
    model: &'static str,
    cwd: String,
    sidechain: bool,
    input: u64,
    read: u64,
    write_5m: u64,
    write_1h: u64,
    output: u64,
}

impl ClaudeRecord {
    fn line(&self) -> String {
        Claude {
            at: self.at,
            msg: &self.msg,
            req: &self.req,
            model: self.model,
            cwd: &self.cwd,
            sidechain: self.sidechain,
            input: self.input,
            output: self.output,
            read: self.read,
            split: Some((self.write_5m, self.write_1h)),
            write: 0,
            speed: None,
        }
        .line()
    }

    fn total(&self) -> u64 {
        self.input + self.read + self.write_5m + self.write_1h + self.output
    }
}

/// One Codex `token_count` event: `[input, cached, output, reasoning]`
/// (input includes cached, output includes reasoning, as Codex writes).
#[derive(Debug, Clone, PartialEq, Eq)]
struct CodexEvent {
    at: i64,
    total: [u64; 4],
    last: [u64; 4],
    /// The response this event reports, `None` for a re-emit of the
    /// previous totals (which counts nothing).
    response: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Rollout {
    thread: String,
    /// A fork by reference: the parent thread and the ordinal its history
    /// ends at (exclusive).
    parent: Option<(String, u64)>,
    meta_at: i64,
    model: &'static str,
    cwd: &'static str,
    /// The totals a fork inherits (zero for a rollout of its own).
    base: [u64; 4],
    events: Vec<CodexEvent>,
}

impl Rollout {
    /// The lines before the first event: `session_meta`, `turn_context`.
    const HEAD_LINES: u64 = 2;

    fn text(&self) -> String {
        let extra = match &self.parent {
            Some((parent, end)) => format!(
                r#","forked_from_id":"{parent}","forked_from_ordinal_exclusive":{end},"history_base":{{"thread_id":"{parent}","end_ordinal_exclusive":{end},"end_byte_offset":1200}}"#
            ),
            None => String::new(),
        };
        let mut list = vec![
            session_meta(self.meta_at, &self.thread, &extra),
            turn_context(self.meta_at + 1, self.model, self.cwd),
        ];
        for e in &self.events {
            list.push(token_count(e.at, e.total, e.last, ""));
        }
        lines(&list)
    }

    /// The totals at the end of the history a fork of this rollout at
    /// `end` (an exclusive ordinal) inherits.
    fn totals_before(&self, end: u64) -> [u64; 4] {
        let mut totals = [0; 4];
        for (i, e) in self.events.iter().enumerate() {
            if Self::HEAD_LINES + (i as u64) < end {
                totals = e.total;
            }
        }
        totals
    }
}

/// One assistant message of a pi session as pi's `SessionManager` writes
/// it (badlogic/pi-mono `session-manager.ts`: a `SessionMessageEntry`
/// whose `AssistantMessage` has `usage` {input, output, cacheRead,
/// cacheWrite}).
#[derive(Debug, Clone, PartialEq, Eq)]
struct PiMessage {
    id: String,
    at: i64,
    model: &'static str,
    /// `[input, output, cacheRead, cacheWrite]`.
    usage: [u64; 4],
}

/// A pi session file: its `SessionHeader` (id, time, cwd, and for a fork
/// `parentSession`), then its messages; a fork starts with its parent's
/// messages, copied with their own older times.
#[derive(Debug, Clone, PartialEq, Eq)]
struct PiSession {
    id: String,
    at: i64,
    parent: Option<String>,
    messages: Vec<PiMessage>,
}

impl PiSession {
    const CWD: &'static str = "/home/dev/pi-proj";

    fn header(&self) -> String {
        let parent = match &self.parent {
            Some(p) => format!(r#","parentSession":"/home/dev/{p}""#),
            None => String::new(),
        };
        format!(
            r#"{{"type":"session","version":3,"id":"{}","timestamp":"{}","cwd":"{}"{parent}}}"#,
            self.id,
            ts(self.at),
            Self::CWD
        )
    }

    fn message(m: &PiMessage) -> String {
        let [input, output, read, write] = m.usage;
        format!(
            r#"{{"type":"message","id":"{}","parentId":null,"timestamp":"{}","message":{{"role":"assistant","content":[{{"type":"text","text":"done"}}],"api":"anthropic-messages","provider":"anthropic","model":"{}","usage":{{"input":{input},"output":{output},"cacheRead":{read},"cacheWrite":{write},"totalTokens":{},"cost":{{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}}}},"stopReason":"stop","timestamp":{}}}}}"#,
            m.id,
            ts(m.at),
            m.model,
            input + output + read + write,
            m.at * 1000
        )
    }

    fn text(&self) -> String {
        let mut list = vec![self.header()];
        list.extend(self.messages.iter().map(Self::message));
        lines(&list)
    }

    /// Whether `m` is one this file copied from its parent: pi counts a
    /// forked file's messages stamped at or before its header as the
    /// parent's.
    fn copied(&self, m: &PiMessage) -> bool {
        self.parent.is_some() && m.at <= self.at
    }
}

/// A record and how many bytes of its line are written.
type Torn = (ClaudeRecord, usize);

#[derive(Debug, Clone, PartialEq, Eq)]
enum Body {
    Claude {
        records: Vec<ClaudeRecord>,
        /// A record whose line is being written: its first bytes are in
        /// the file, no newline yet.
        torn: Option<Torn>,
    },
    Codex(Rollout),
    Pi(PiSession),
}

#[derive(Debug, Clone)]
struct TestFile {
    body: Body,
    /// A Codex archive (`.jsonl.zst`), written whole once.
    archive: bool,
}

impl TestFile {
    fn bytes(&self) -> Vec<u8> {
        match &self.body {
            Body::Claude { records, torn } => {
                let mut text = String::new();
                for r in records {
                    text.push_str(&r.line());
                    text.push('\n');
                }
                if let Some((record, written)) = torn {
                    text.push_str(&record.line()[..*written]);
                }
                text.into_bytes()
            }
            Body::Codex(rollout) if self.archive => zstd(&rollout.text()),
            Body::Codex(rollout) => rollout.text().into_bytes(),
            Body::Pi(session) => session.text().into_bytes(),
        }
    }
}

/// A step, with every value it needs decided when it was drawn, so that a
/// shorter sequence replays the same steps (a step whose file is gone, or
/// has the other agent's name, does nothing).
#[derive(Debug, Clone)]
enum Step {
    /// Calls appended to a Claude file (created if missing); a call of
    /// `n` blocks is written as `n` records of one key whose output grows,
    /// the last one complete. A torn line in the file is completed first.
    ClaudeAppend {
        file: String,
        calls: Vec<(ClaudeRecord, usize)>,
    },
    /// Half of a new record's line written, or (`whole`) all of it but
    /// its newline; the next append completes it.
    ClaudeTear {
        file: String,
        record: ClaudeRecord,
        whole: bool,
    },
    /// A resumed session: a new file that starts with a copy of another's
    /// records (duplicates to drop), then calls of its own.
    ClaudeResume {
        from: String,
        file: String,
        calls: Vec<ClaudeRecord>,
    },
    /// A subagent's records in a file: a replay of one of its main-chain
    /// messages (under a request id of its own) and a message of its own.
    Sidechain {
        file: String,
        replay_of: usize,
        own: ClaudeRecord,
    },
    /// One complete record's output changed to another 3-digit number in
    /// place: the size stays and the mtime is set back.
    RewriteInPlace {
        file: String,
        record: usize,
        output: u64,
    },
    /// The file's records minus one, written beside it and renamed over.
    ReplaceByRename {
        file: String,
        drop: usize,
    },
    Delete {
        file: String,
    },
    /// A new rollout, maybe a fork by reference of another rollout's
    /// history up to one of its events.
    CodexNew {
        file: String,
        thread: String,
        parent: Option<(String, usize)>,
        model: &'static str,
        cwd: &'static str,
    },
    /// Responses appended to a rollout (`None`: a re-emit of the previous
    /// totals).
    CodexAppend {
        file: String,
        lasts: Vec<Option<[u64; 4]>>,
    },
    /// A rollout compressed whole into `archived_sessions/`; the plain
    /// file stays until a later step deletes it.
    Archive {
        file: String,
    },
    /// pi messages appended to a session file (created, with its header,
    /// if missing).
    PiAppend {
        file: String,
        messages: Vec<PiMessage>,
    },
    /// A pi fork (`createBranchedSession`): a new file whose header names
    /// its parent, then the parent's messages copied, then its own.
    PiFork {
        from: String,
        file: String,
        id: String,
        messages: Vec<PiMessage>,
    },
    /// Time passes.
    Advance {
        seconds: i64,
    },
}

/// The transcripts on disk and the test's record of what each holds.
struct World {
    home: PathBuf,
    files: BTreeMap<String, TestFile>,
    now: i64,
    /// The last Codex timestamp written: every response has a second of
    /// its own (two responses never share a dedupe key by accident).
    codex_clock: i64,
    /// Responses and calls written so far (unique ids).
    next_id: u64,
    /// Steps that appended a call or a response into a 15-minute slot that
    /// already held one of the same file (the case once counted twice).
    same_slot_appends: u64,
}

fn claude_name(dir: u64, n: u64) -> String {
    format!(".claude/projects/-home-dev-p{dir}/session-{n}.jsonl")
}

fn codex_name(thread: &str) -> String {
    format!(".codex/sessions/2026/11/29/rollout-2026-11-29T08-00-00-{thread}.jsonl")
}

fn pi_name(id: &str) -> String {
    format!(".pi/agent/sessions/--home-dev-pi-proj--/2026-11-29T08-00-00-000Z_{id}.jsonl")
}

fn archive_name(thread: &str) -> String {
    format!(".codex/archived_sessions/rollout-2026-11-29T08-00-00-{thread}.jsonl.zst")
}

/// Waits (without sleeping: by writing a probe) until the file system's
/// clock has moved past `path`'s ctime, so that a rewrite now gets a ctime
/// of its own. File times advance in ticks of a few milliseconds; two
/// writes within one tick are indistinguishable by their times, which no
/// reader of `stat` can see through.
fn wait_for_a_new_ctime(path: &Path) {
    use std::os::unix::fs::MetadataExt;
    let before = fs::metadata(path).unwrap();
    let probe = path.with_extension("probe");
    for _ in 0..100_000 {
        fs::write(&probe, b"p").unwrap();
        let now = fs::metadata(&probe).unwrap();
        if (now.ctime(), now.ctime_nsec()) > (before.ctime(), before.ctime_nsec()) {
            break;
        }
    }
    let _ = fs::remove_file(&probe);
}

impl World {
    fn new(home: PathBuf) -> World {
        World {
            home,
            files: BTreeMap::new(),
            now: NOW,
            codex_clock: NOW,
            next_id: 0,
            same_slot_appends: 0,
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.home.join(name)
    }

    fn write_whole(&self, name: &str) {
        let path = self.path(name);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(&path, self.files[name].bytes()).unwrap();
    }

    fn append_bytes(&self, name: &str, bytes: &[u8]) {
        let path = self.path(name);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        let mut f = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .unwrap();
        f.write_all(bytes).unwrap();
    }

    fn claude_mut(&mut self, name: &str) -> Option<(&mut Vec<ClaudeRecord>, &mut Option<Torn>)> {
        match self.files.get_mut(name).map(|f| &mut f.body) {
            Some(Body::Claude { records, torn }) => Some((records, torn)),
            _ => None,
        }
    }

    fn rollout_mut(&mut self, name: &str) -> Option<&mut Rollout> {
        match self.files.get_mut(name) {
            Some(TestFile {
                body: Body::Codex(r),
                archive: false,
            }) => Some(r),
            _ => None,
        }
    }

    fn pi_mut(&mut self, name: &str) -> Option<&mut PiSession> {
        match self.files.get_mut(name).map(|f| &mut f.body) {
            Some(Body::Pi(session)) => Some(session),
            _ => None,
        }
    }

    /// The names of the files whose body `is` accepts.
    fn names(&self, is: fn(&Body) -> bool) -> Vec<String> {
        self.files
            .iter()
            .filter(|(_, f)| is(&f.body))
            .map(|(n, _)| n.clone())
            .collect()
    }

    /// Appends `messages` to the pi session `file`, a message stamped no
    /// earlier than a second after the session's header (pi writes in
    /// time order); `fork` is the session a new file starts as.
    fn pi_append(&mut self, file: &str, messages: &[PiMessage], fork: Option<PiSession>) {
        let now = self.now;
        let new = !self.files.contains_key(file);
        if new {
            let session = fork.unwrap_or_else(|| PiSession {
                id: file.rsplit('_').next().unwrap_or("").replace(".jsonl", ""),
                at: now - 300,
                parent: None,
                messages: Vec::new(),
            });
            let body = Body::Pi(session);
            let archive = false;
            self.files
                .insert(file.to_string(), TestFile { body, archive });
        }
        let Some(session) = self.pi_mut(file) else {
            return;
        };
        let slot_of = |at: i64| at.div_euclid(SLOT);
        let mut same_slot = false;
        let mut written = Vec::new();
        for m in messages {
            let mut m = m.clone();
            m.at = m.at.max(session.at + 1);
            same_slot |= session
                .messages
                .iter()
                .any(|o| slot_of(o.at) == slot_of(m.at));
            written.push(PiSession::message(&m));
            session.messages.push(m);
        }
        self.same_slot_appends += u64::from(same_slot);
        if new {
            self.write_whole(file);
        } else {
            self.append_bytes(file, lines(&written).as_bytes());
        }
    }

    /// Performs `step` on the files and on the test's record of them.
    fn apply(&mut self, step: &Step) {
        match step {
            Step::ClaudeAppend { file, calls } => {
                if self.files.contains_key(file) && self.claude_mut(file).is_none() {
                    return;
                }
                self.files.entry(file.clone()).or_insert(TestFile {
                    body: Body::Claude {
                        records: Vec::new(),
                        torn: None,
                    },
                    archive: false,
                });
                let (records, torn) = self.claude_mut(file).unwrap();
                let mut text = String::new();
                if let Some((record, written)) = torn.take() {
                    text.push_str(&record.line()[written..]);
                    text.push('\n');
                    records.push(record);
                }
                let mut same_slot = false;
                for (call, blocks) in calls {
                    let slot = call.at.div_euclid(SLOT);
                    same_slot |= records.iter().any(|r| r.at.div_euclid(SLOT) == slot);
                    for b in 1..=*blocks {
                        let mut block = call.clone();
                        if b < *blocks {
                            // An earlier content block: the output so far.
                            block.output = b as u64;
                            block.at = call.at - (blocks - b) as i64;
                        }
                        text.push_str(&block.line());
                        text.push('\n');
                        records.push(block);
                    }
                }
                self.same_slot_appends += u64::from(same_slot);
                self.append_bytes(file, text.as_bytes());
            }
            Step::ClaudeTear {
                file,
                record,
                whole,
            } => {
                let Some((_, torn)) = self.claude_mut(file) else {
                    return;
                };
                if torn.is_some() {
                    return;
                }
                let line = record.line();
                // Half a line is a prefix of an object, not valid JSON: no
                // reader counts it until its end is written. The whole
                // line without its newline is a complete object: counted
                // now, and once only when its newline follows.
                let written = if *whole { line.len() } else { line.len() / 2 };
                *torn = Some((record.clone(), written));
                self.append_bytes(file, &line.as_bytes()[..written]);
            }
            Step::ClaudeResume { from, file, calls } => {
                if self.files.contains_key(file) {
                    return;
                }
                let Some((copied, _)) = self.claude_mut(from) else {
                    return;
                };
                let mut records = copied.clone();
                records.extend(calls.iter().cloned());
                let body = Body::Claude {
                    records,
                    torn: None,
                };
                let archive = false;
                self.files.insert(file.clone(), TestFile { body, archive });
                self.write_whole(file);
            }
            Step::Sidechain {
                file,
                replay_of,
                own,
            } => {
                let Some((records, torn)) = self.claude_mut(file) else {
                    return;
                };
                let mains: Vec<usize> = (0..records.len())
                    .filter(|&i| !records[i].sidechain)
                    .collect();
                if mains.is_empty() || torn.is_some() {
                    return;
                }
                let mut replay = records[mains[replay_of % mains.len()]].clone();
                // A replay without a request id keeps its (absent) one:
                // one key with its main-chain record.
                if !replay.req.is_empty() {
                    replay.req = format!("{}-side", replay.req);
                }
                replay.sidechain = true;
                let slot = own.at.div_euclid(SLOT);
                let same_slot = records.iter().any(|r| r.at.div_euclid(SLOT) == slot);
                let text = format!("{}\n{}\n", replay.line(), own.line());
                records.push(replay);
                records.push(own.clone());
                self.same_slot_appends += u64::from(same_slot);
                self.append_bytes(file, text.as_bytes());
            }
            Step::RewriteInPlace {
                file,
                record,
                output,
            } => {
                let Some((records, _)) = self.claude_mut(file) else {
                    return;
                };
                let complete: Vec<usize> = (0..records.len())
                    .filter(|&i| records[i].output >= 100)
                    .collect();
                if complete.is_empty() {
                    return;
                }
                records[complete[record % complete.len()]].output = *output;
                let path = self.path(file);
                let bytes = self.files[file].bytes();
                let before = fs::metadata(&path).unwrap();
                assert_eq!(before.len(), bytes.len() as u64, "a same-size rewrite");
                wait_for_a_new_ctime(&path);
                let mut f = fs::OpenOptions::new().write(true).open(&path).unwrap();
                f.write_all(&bytes).unwrap();
                f.set_modified(before.modified().unwrap()).unwrap();
            }
            Step::ReplaceByRename { file, drop } => {
                let Some((records, torn)) = self.claude_mut(file) else {
                    return;
                };
                if !records.is_empty() {
                    records.remove(drop % records.len());
                }
                *torn = None;
                let path = self.path(file);
                let temp = path.with_extension("tmp");
                fs::write(&temp, self.files[file].bytes()).unwrap();
                fs::rename(&temp, &path).unwrap();
            }
            Step::Delete { file } => {
                if self.files.remove(file).is_some() {
                    fs::remove_file(self.path(file)).unwrap();
                }
            }
            Step::CodexNew {
                file,
                thread,
                parent,
                model,
                cwd,
            } => {
                if self.files.contains_key(file) {
                    return;
                }
                // A fork by reference continues its parent's totals where
                // the inherited history ends (an exclusive ordinal).
                let fork = parent.as_ref().and_then(|(name, at)| {
                    match self.files.get(name).map(|f| &f.body) {
                        Some(Body::Codex(p)) if !p.events.is_empty() => {
                            let events = p.events.len() as u64;
                            let end = Rollout::HEAD_LINES + 1 + (*at as u64) % events;
                            Some((p.thread.clone(), end, p.totals_before(end)))
                        }
                        _ => None,
                    }
                });
                self.codex_clock = (self.codex_clock + 1).max(self.now);
                let rollout = Rollout {
                    thread: thread.clone(),
                    parent: fork.as_ref().map(|(t, end, _)| (t.clone(), *end)),
                    meta_at: self.codex_clock,
                    model,
                    cwd,
                    base: fork.map_or([0; 4], |f| f.2),
                    events: Vec::new(),
                };
                let body = Body::Codex(rollout);
                let archive = false;
                self.files.insert(file.clone(), TestFile { body, archive });
                self.write_whole(file);
            }
            Step::CodexAppend { file, lasts } => {
                let (now, mut clock, mut id) = (self.now, self.codex_clock, self.next_id);
                let Some(rollout) = self.rollout_mut(file) else {
                    return;
                };
                let mut written = Vec::new();
                let mut same_slot = false;
                for last in lasts {
                    let previous = rollout.events.last().cloned();
                    let event = match (last, previous) {
                        // A re-emit repeats the previous event.
                        (None, Some(p)) => CodexEvent {
                            at: p.at.max(clock) + 1,
                            response: None,
                            ..p
                        },
                        (None, None) => continue,
                        (Some(last), p) => {
                            let base = p.map_or(rollout.base, |p| p.total);
                            id += 1;
                            CodexEvent {
                                at: (clock + 1).max(now),
                                total: [0, 1, 2, 3].map(|i| base[i] + last[i]),
                                last: *last,
                                response: Some(id),
                            }
                        }
                    };
                    clock = event.at;
                    let slot = event.at.div_euclid(SLOT);
                    same_slot |= rollout.events.iter().any(|e| e.at.div_euclid(SLOT) == slot);
                    written.push(token_count(event.at, event.total, event.last, ""));
                    rollout.events.push(event);
                }
                self.codex_clock = clock;
                self.next_id = id;
                self.same_slot_appends += u64::from(same_slot);
                if !written.is_empty() {
                    self.append_bytes(file, lines(&written).as_bytes());
                }
            }
            Step::Archive { file } => {
                let Some(rollout) = self.rollout_mut(file).cloned() else {
                    return;
                };
                let name = archive_name(&rollout.thread);
                if self.files.contains_key(&name) {
                    return;
                }
                let body = Body::Codex(rollout);
                self.files.insert(
                    name.clone(),
                    TestFile {
                        body,
                        archive: true,
                    },
                );
                self.write_whole(&name);
            }
            Step::PiAppend { file, messages } => {
                if self.files.contains_key(file) && self.pi_mut(file).is_none() {
                    return;
                }
                self.pi_append(file, messages, None);
            }
            Step::PiFork {
                from,
                file,
                id,
                messages,
            } => {
                if self.files.contains_key(file) {
                    return;
                }
                let Some(parent) = self.pi_mut(from).cloned() else {
                    return;
                };
                // The fork's header is stamped now, after every message it
                // copies.
                let last = parent.messages.iter().map(|m| m.at).max().unwrap_or(0);
                let fork = PiSession {
                    id: id.clone(),
                    at: self.now.max(last).max(parent.at),
                    parent: Some(from.clone()),
                    messages: parent.messages,
                };
                self.pi_append(file, messages, Some(fork));
            }
            Step::Advance { seconds } => self.now += seconds,
        }
    }

    fn pi_messages(&mut self, rng: &mut Rng) -> Vec<PiMessage> {
        (0..1 + rng.below(3))
            .map(|_| {
                self.next_id += 1;
                PiMessage {
                    id: format!("pm{}", self.next_id),
                    at: self.now - rng.below(240) as i64,
                    model: PI_MODELS[rng.below(3) as usize],
                    usage: [
                        rng.below(40),
                        100 + rng.below(900),
                        rng.below(3) * 1000,
                        rng.below(2) * 30,
                    ],
                }
            })
            .collect()
    }

    fn claude_record(&mut self, rng: &mut Rng, file: &str) -> ClaudeRecord {
        self.next_id += 1;
        let dir = file
            .split("-home-dev-p")
            .nth(1)
            .and_then(|s| s.chars().next())
            .unwrap_or('0');
        ClaudeRecord {
            msg: format!("msg_{}", self.next_id),
            // A quarter without a request id (written without
            // `requestId`, as behind a gateway): keyed by message alone.
            req: match rng.below(4) {
                0 => String::new(),
                _ => format!("req_{}", self.next_id),
            },
            // Mostly within the last minutes: into the slot the file's
            // previous calls are in.
            at: self.now - rng.below(240) as i64,
            model: CLAUDE_MODELS[rng.below(3) as usize],
            cwd: format!("/home/dev/p{dir}"),
            sidechain: false,
            input: rng.below(40),
            read: rng.below(3) * 1000,
            write_5m: rng.below(2) * 30,
            write_1h: rng.below(2) * 70,
            output: 100 + rng.below(900),
        }
    }

    /// Draws the next step from the files as they are.
    fn draw(&mut self, rng: &mut Rng) -> Step {
        let claude = self.names(|b| matches!(b, Body::Claude { .. }));
        let codex: Vec<String> = self
            .names(|b| matches!(b, Body::Codex(_)))
            .into_iter()
            .filter(|n| !n.ends_with(".zst"))
            .collect();
        let pi = self.names(|b| matches!(b, Body::Pi(_)));
        let crowded = self.files.len() > 28;
        let roll = rng.below(112);
        let existing_claude = |rng: &mut Rng, world: &mut World| -> String {
            if claude.is_empty() || rng.below(6) == 0 {
                world.next_id += 1;
                claude_name(rng.below(3), world.next_id)
            } else {
                rng.pick(&claude).clone()
            }
        };
        match roll {
            _ if crowded && roll < 30 => {
                let all: Vec<String> = self.files.keys().cloned().collect();
                Step::Delete {
                    file: rng.pick(&all).clone(),
                }
            }
            0..=29 => {
                let file = existing_claude(rng, self);
                let calls = (0..1 + rng.below(2))
                    .map(|_| (self.claude_record(rng, &file), 1 + rng.below(3) as usize))
                    .collect();
                Step::ClaudeAppend { file, calls }
            }
            30..=34 => {
                let file = existing_claude(rng, self);
                let record = self.claude_record(rng, &file);
                let whole = rng.below(2) == 0;
                Step::ClaudeTear {
                    file,
                    record,
                    whole,
                }
            }
            35..=38 if !claude.is_empty() => {
                let from = rng.pick(&claude).clone();
                self.next_id += 1;
                let file = claude_name(rng.below(3), self.next_id);
                let calls = (0..rng.below(3))
                    .map(|_| self.claude_record(rng, &file))
                    .collect();
                Step::ClaudeResume { from, file, calls }
            }
            39..=43 if !claude.is_empty() => {
                let file = rng.pick(&claude).clone();
                let mut own = self.claude_record(rng, &file);
                own.sidechain = true;
                Step::Sidechain {
                    file,
                    replay_of: rng.below(1000) as usize,
                    own,
                }
            }
            44..=48 if !claude.is_empty() => Step::RewriteInPlace {
                file: rng.pick(&claude).clone(),
                record: rng.below(1000) as usize,
                output: 100 + rng.below(900),
            },
            49..=52 if !claude.is_empty() => Step::ReplaceByRename {
                file: rng.pick(&claude).clone(),
                drop: rng.below(1000) as usize,
            },
            53..=56 if !self.files.is_empty() => {
                let all: Vec<String> = self.files.keys().cloned().collect();
                Step::Delete {
                    file: rng.pick(&all).clone(),
                }
            }
            57..=62 => {
                self.next_id += 1;
                let thread = format!("t{}", self.next_id);
                let parent = match codex.is_empty() || rng.below(5) < 3 {
                    true => None,
                    false => Some((rng.pick(&codex).clone(), rng.below(1000) as usize)),
                };
                Step::CodexNew {
                    file: codex_name(&thread),
                    thread,
                    parent,
                    model: CODEX_MODELS[rng.below(2) as usize],
                    cwd: ["/home/dev/gamma", "/home/dev/delta"][rng.below(2) as usize],
                }
            }
            63..=82 if !codex.is_empty() => {
                let lasts = (0..1 + rng.below(3))
                    .map(|_| {
                        (rng.below(5) != 0).then(|| {
                            let input = 100 + rng.below(900);
                            let output = 10 + rng.below(90);
                            [input, rng.below(input), output, rng.below(output)]
                        })
                    })
                    .collect();
                Step::CodexAppend {
                    file: rng.pick(&codex).clone(),
                    lasts,
                }
            }
            83..=85 if !codex.is_empty() => Step::Archive {
                file: rng.pick(&codex).clone(),
            },
            100..=107 => {
                let file = if pi.is_empty() || rng.below(5) == 0 {
                    self.next_id += 1;
                    pi_name(&format!("ps{}", self.next_id))
                } else {
                    rng.pick(&pi).clone()
                };
                let messages = self.pi_messages(rng);
                Step::PiAppend { file, messages }
            }
            108..=111 if !pi.is_empty() => {
                let from = rng.pick(&pi).clone();
                self.next_id += 1;
                let id = format!("pf{}", self.next_id);
                let messages = self.pi_messages(rng);
                Step::PiFork {
                    from,
                    file: pi_name(&id),
                    id,
                    messages,
                }
            }
            _ => Step::Advance {
                seconds: match rng.below(100) {
                    0..=59 => 30 + rng.below(570) as i64,
                    60..=89 => (15 + rng.below(45) as i64) * 60,
                    90..=98 => (2 + rng.below(10) as i64) * HOUR,
                    _ => (3 + rng.below(8) as i64) * DAY,
                },
            },
        }
    }
}

/// Exact sums per (slot, agent, model, directory).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Sum {
    requests: u64,
    input: u64,
    cache_read: u64,
    cache_write_5m: u64,
    cache_write_1h: u64,
    output: u64,
    reasoning: u64,
}

type Sums = BTreeMap<(i64, Agent, String, String), Sum>;

/// What the files hold by the formats' rules, worked out from the test's
/// record alone. Claude: one request per (`message.id`, `requestId`) (a
/// record without a request id: per `message.id` among such records), the
/// record with the largest total, a complete last line counted without its
/// newline; a sidechain record whose message the main
/// chain has is a replay. pi: every assistant message, but a fork's copies
/// of its parent's (stamped at or before its header). Codex: one request per response (re-emits count
/// nothing; an archive repeats its rollout's responses), tokens as
/// `last_token_usage` says, input split into uncached and cached.
fn expected(world: &World, since: i64) -> Sums {
    let mut best: BTreeMap<(&str, &str), &ClaudeRecord> = BTreeMap::new();
    let mut responses: BTreeMap<u64, (&CodexEvent, &Rollout)> = BTreeMap::new();
    let mut pis: Vec<&PiMessage> = Vec::new();
    for file in world.files.values() {
        match &file.body {
            Body::Claude { records, torn } => {
                // A line written whole but for its newline counts.
                let unterminated = torn
                    .as_ref()
                    .filter(|(r, written)| *written == r.line().len())
                    .map(|(r, _)| r);
                for r in records.iter().chain(unterminated) {
                    let key = (r.msg.as_str(), r.req.as_str());
                    if best.get(&key).is_none_or(|b| r.total() > b.total()) {
                        best.insert(key, r);
                    }
                }
            }
            Body::Codex(rollout) => {
                for e in &rollout.events {
                    if let Some(id) = e.response {
                        responses.entry(id).or_insert((e, rollout));
                    }
                }
            }
            Body::Pi(session) => {
                pis.extend(session.messages.iter().filter(|m| !session.copied(m)));
            }
        }
    }
    let on_main: BTreeSet<&str> = best
        .values()
        .filter(|r| !r.sidechain)
        .map(|r| r.msg.as_str())
        .collect();
    let mut sums = Sums::new();
    let mut add = |at: i64, agent: Agent, model: &str, cwd: &str, s: Sum| {
        if at < since {
            return;
        }
        let key = (
            at.div_euclid(SLOT) * SLOT,
            agent,
            model.to_string(),
            cwd.to_string(),
        );
        let sum = sums.entry(key).or_default();
        sum.requests += s.requests;
        sum.input += s.input;
        sum.cache_read += s.cache_read;
        sum.cache_write_5m += s.cache_write_5m;
        sum.cache_write_1h += s.cache_write_1h;
        sum.output += s.output;
        sum.reasoning += s.reasoning;
    };
    for r in best.values() {
        if r.sidechain && on_main.contains(r.msg.as_str()) {
            continue;
        }
        let sum = Sum {
            requests: 1,
            input: r.input,
            cache_read: r.read,
            cache_write_5m: r.write_5m,
            cache_write_1h: r.write_1h,
            output: r.output,
            reasoning: 0,
        };
        add(r.at, Agent::Claude, r.model, &r.cwd, sum);
    }
    for (e, rollout) in responses.values() {
        let [input, cached, output, reasoning] = e.last;
        let sum = Sum {
            requests: 1,
            input: input - cached,
            cache_read: cached,
            output,
            reasoning,
            ..Sum::default()
        };
        add(e.at, Agent::Codex, rollout.model, rollout.cwd, sum);
    }
    for m in pis {
        let [input, output, read, write] = m.usage;
        let sum = Sum {
            requests: 1,
            input,
            cache_read: read,
            cache_write_5m: write,
            output,
            ..Sum::default()
        };
        add(m.at, Agent::Pi, m.model, PiSession::CWD, sum);
    }
    sums
}

/// The cached aggregate's slots in the form of [`expected`].
fn sums_of<'a>(slots: impl Iterator<Item = (i64, Agent, &'a str, &'a str, &'a SlotAcc)>) -> Sums {
    let mut sums = Sums::new();
    for (slot, agent, model, cwd, acc) in slots {
        let sum = sums
            .entry((slot, agent, model.to_string(), cwd.to_string()))
            .or_default();
        let t = &acc.tokens;
        sum.requests += acc.requests;
        sum.input += t.input;
        sum.cache_read += t.cache_read;
        sum.cache_write_5m += t.cache_write_5m;
        sum.cache_write_1h += t.cache_write_1h;
        sum.output += t.output;
        sum.reasoning += t.reasoning;
    }
    sums
}

const VIEWS: [View; 9] = [
    View::Summary,
    View::Period(Period::Day),
    View::Period(Period::Week),
    View::Period(Period::Month),
    View::Session,
    View::Blocks,
    View::Models,
    View::Dirs,
    View::Statusline,
];

/// Every view's JSON document, read from the cache in `dir` as the views
/// read it.
fn view_documents(dir: &Path, refresh: &CacheRefresh, now: i64) -> Vec<String> {
    let zone = Zone::utc();
    let today = zone.local_day(now);
    let req = Request::new(None, None, None, None, false, today).unwrap();
    let first = heeler::usage::views::first_slot(&req, today);
    VIEWS
        .iter()
        .map(|&view| {
            let data = Data {
                slots: heeler::usage::views::read_slots(dir, view, first),
                zone: zone.clone(),
                now,
                generated_at: Some(refresh.result.snapshot.generated_at),
                refresh: "idle",
                coverage: refresh.result.snapshot.coverage.clone(),
                limits: Vec::new(),
            };
            render::render(&data, &req, view, Format::Json)
        })
        .collect()
}

/// What a run found, for the summary line.
#[derive(Debug, Default)]
struct Tally {
    steps: u64,
    incremental: u64,
    same_slot_appends: u64,
    requests: u64,
}

/// One refresh of the cache in `dir`, by the worker's own path.
fn refresh(dir: &Path, home: &Path, prices: &PriceTable, now: i64) -> CacheRefresh {
    let roots = Roots::resolve(home, &|_| None);
    let pass = Pass {
        roots: &roots,
        prices,
        retention_days: worker::WINDOW_DAYS,
        now,
        deadline: None,
    };
    // `heeler usage worker` makes its directory before it takes the lock.
    fs::create_dir_all(dir).unwrap();
    worker::refresh_cache(&UsageDir(dir.to_path_buf()), &pass).unwrap()
}

/// Compares the incremental cache with the oracles after one step.
fn check(world: &World, cache: &Path, scratch: &Path, prices: &PriceTable) -> Result<bool, String> {
    let now = world.now;
    let live = refresh(cache, &world.home, prices, now);
    let _ = fs::remove_dir_all(scratch);
    let cold = refresh(scratch, &world.home, prices, now);
    let since = worker::history_start(now, worker::WINDOW_DAYS);
    let stored = StateStore::in_dir(cache)
        .load_from(i64::MIN, Tables::Both)
        .ok_or("no stored aggregate")?
        .1;
    // Each slot's sums are its sessions' (the session view's table).
    if sum_sessions(&stored.sessions) != stored.slots {
        return Err("the stored slots are not the sum of their sessions".into());
    }
    let got = sums_of(
        stored
            .slots
            .iter()
            .map(|(k, acc)| (k.0, k.1, &*k.2, &*k.3, acc)),
    );
    let want = expected(world, since);
    if got != want {
        let keys: BTreeSet<_> = got.keys().chain(want.keys()).collect();
        let diff: Vec<String> = keys
            .into_iter()
            .filter(|k| got.get(k) != want.get(k))
            .take(4)
            .map(|k| {
                format!(
                    "  {k:?}: cached {:?}, written {:?}",
                    got.get(k),
                    want.get(k)
                )
            })
            .collect();
        return Err(format!(
            "the cached totals differ from the calls written:\n{}",
            diff.join("\n")
        ));
    }
    let rebuilt = StateStore::in_dir(scratch)
        .load_from(i64::MIN, Tables::Both)
        .ok_or("no rebuilt aggregate")?
        .1;
    if stored != rebuilt {
        return Err("the stored aggregate history differs from a rebuild's".into());
    }
    let mut live_snapshot = live.result.snapshot.clone();
    live_snapshot.aggregate = cold.result.snapshot.aggregate;
    if live_snapshot != cold.result.snapshot {
        return Err(format!(
            "the snapshot differs from a rebuild's:\n  live {:?}\n  cold {:?}",
            live_snapshot.coverage, cold.result.snapshot.coverage
        ));
    }
    let (a, b) = (
        view_documents(cache, &live, now),
        view_documents(scratch, &cold, now),
    );
    for ((view, a), b) in VIEWS.iter().zip(&a).zip(&b) {
        if a != b {
            return Err(format!(
                "the {} view differs from a rebuild's:\n  live {a}\n  cold {b}",
                view.name()
            ));
        }
    }
    Ok(live.result.incremental)
}

/// Runs `steps` (drawing them from `seed` when `None`), checking after
/// every step. Returns the steps run, and the failure with its step.
fn run(
    seed: u64,
    count: usize,
    replay: Option<&[Step]>,
    attempt: u64,
) -> (Vec<Step>, Tally, Option<(usize, String)>) {
    let root = temp_dir(&format!("usage-live-{seed}-{attempt}"));
    let (home, cache, scratch) = (root.join("home"), root.join("cache"), root.join("scratch"));
    let prices = PriceTable::bundled().unwrap();
    let mut world = World::new(home);
    let mut rng = Rng(seed);
    let mut steps = Vec::new();
    let mut tally = Tally::default();
    let total = replay.map_or(count, <[Step]>::len);
    for i in 0..total {
        let step = match replay {
            Some(list) => list[i].clone(),
            None => world.draw(&mut rng),
        };
        world.apply(&step);
        steps.push(step);
        match check(&world, &cache, &scratch, &prices) {
            Ok(incremental) => tally.incremental += u64::from(incremental),
            Err(e) => return (steps, tally, Some((i, e))),
        }
        tally.steps += 1;
    }
    tally.same_slot_appends = world.same_slot_appends;
    tally.requests = expected(&world, i64::MIN)
        .values()
        .map(|s| s.requests)
        .sum();
    (steps, tally, None)
}

/// The shortest sequence found (by removing chunks, then single steps)
/// that still fails.
fn shrink(seed: u64, mut steps: Vec<Step>) -> (Vec<Step>, String) {
    let mut attempt = 1;
    let mut fails = |list: &[Step]| {
        attempt += 1;
        run(seed, 0, Some(list), attempt).2
    };
    let mut failure = fails(&steps).map_or_else(String::new, |f| f.1);
    let started = std::time::Instant::now();
    let mut chunk = steps.len() / 2;
    while chunk >= 1 && started.elapsed().as_secs() < 120 {
        let mut at = 0;
        while at < steps.len() {
            let mut shorter = steps.clone();
            shorter.drain(at..(at + chunk).min(steps.len()));
            match fails(&shorter) {
                Some((i, e)) => {
                    shorter.truncate(i + 1);
                    steps = shorter;
                    failure = e;
                }
                None => at += chunk,
            }
        }
        chunk /= 2;
    }
    (steps, failure)
}

/// Steps per seed by default.
const QUICK_STEPS: usize = 100;
/// Seeds by default.
const QUICK_SEEDS: usize = 3;

fn env_number(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[test]
fn a_cache_refreshed_while_transcripts_change_counts_every_call_once() {
    let per_seed = env_number("HEELER_LIVE_STEPS", depth::rounds(QUICK_STEPS, 250));
    let seeds = env_number("HEELER_LIVE_SEEDS", depth::rounds(QUICK_SEEDS, 8)) as u64;
    let first = env_number("HEELER_LIVE_SEED", 0x5eed) as u64;
    let mut all = Tally::default();
    for seed in first..first + seeds {
        let (steps, tally, failure) = run(seed, per_seed, None, 0);
        if let Some((at, first_error)) = failure {
            let (minimal, error) = shrink(seed, steps[..=at].to_vec());
            let listing: Vec<String> = minimal.iter().map(|s| format!("  {s:?}")).collect();
            panic!(
                "seed {seed} failed at step {at}: {first_error}\n\
                 a minimal reproduction ({} steps; rerun with HEELER_LIVE_SEED={seed} \
                 HEELER_LIVE_SEEDS=1):\n{}\n{error}",
                minimal.len(),
                listing.join("\n")
            );
        }
        all.steps += tally.steps;
        all.incremental += tally.incremental;
        all.same_slot_appends += tally.same_slot_appends;
        all.requests += tally.requests;
    }
    println!(
        "usage live model: seeds {first}..{}, {} steps ({per_seed} a seed), {} refreshes \
         incremental, {} appends into a slot the file already used, {} requests written",
        first + seeds,
        all.steps,
        all.incremental,
        all.same_slot_appends,
        all.requests
    );
    // The sequences must exercise what they are for.
    assert!(all.incremental * 2 >= all.steps, "{all:?}");
    assert!(all.same_slot_appends * 10 >= all.steps, "{all:?}");
}
