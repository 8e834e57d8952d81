//! A real terminal for the full-screen programs' tests (the pairing popup,
//! the live usage screen): a private tmux server running one script in a
//! pane of a given size, keys typed with `send-keys`, the screen read back
//! with `capture-pane`, and waits that poll the screen up to a bound,
//! never a fixed sleep. The server's socket and the test's files live in
//! one root directory, removed with the server when the pane is dropped.

use std::fs;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long a wait for the screen or an exit lasts before it fails.
pub const WAIT: Duration = Duration::from_secs(15);

pub fn tmux_available() -> bool {
    Command::new("tmux")
        .arg("-V")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Skips the test (saying so) where tmux is missing.
macro_rules! require_tmux {
    () => {
        if !crate::tmux::tmux_available() {
            crate::common::skip("tmux is not installed");
            return;
        }
    };
}
pub(crate) use require_tmux;

pub fn sh_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

/// One pane of one private tmux server.
pub struct Pane {
    pub root: PathBuf,
    socket: String,
}

impl Pane {
    /// Starts a server whose one pane, `width`×`height`, runs `script` (a
    /// shell script written to `root/run.sh`). `root` must exist; it is
    /// removed when the pane is dropped.
    pub fn start(root: PathBuf, script: &str, width: u16, height: u16) -> Pane {
        let run = root.join("run.sh");
        crate::support::write_executable(&run, script).unwrap();
        // The server's socket lives in the root (`-S`), not in
        // /tmp/tmux-<uid>, so the test leaves nothing behind in /tmp.
        let socket = root.join("tmux.sock").to_string_lossy().into_owned();
        let status = Command::new("tmux")
            .args(["-S", &socket, "-f", "/dev/null", "new-session", "-d"])
            .args(["-x", &width.to_string(), "-y", &height.to_string()])
            .arg(run.to_string_lossy().as_ref())
            .status()
            .unwrap();
        assert!(status.success());
        Pane { root, socket }
    }

    pub fn tmux(&self, args: &[&str]) -> String {
        let output = Command::new("tmux")
            .args(["-S", &self.socket])
            .args(args)
            .output()
            .unwrap();
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    /// The screen, wrapped lines joined.
    pub fn screen(&self) -> String {
        self.tmux(&["capture-pane", "-p", "-J"])
    }

    pub fn keys(&self, keys: &[&str]) {
        for key in keys {
            self.tmux(&["send-keys", key]);
            // One key per read, as a person types.
            std::thread::sleep(Duration::from_millis(60));
        }
    }

    /// Waits until the screen passes `test` and has settled (two captures
    /// 40 ms apart agree), so a frame still being drawn is never read.
    pub fn wait_for(&self, what: &str, test: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + WAIT;
        loop {
            let screen = self.screen();
            if test(&screen) {
                std::thread::sleep(Duration::from_millis(40));
                if self.screen() == screen {
                    return screen;
                }
                continue;
            }
            if Instant::now() > deadline {
                panic!("timed out waiting for {what}; screen:\n{screen}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub fn wait_for_text(&self, text: &str) -> String {
        self.wait_for(text, |s| s.contains(text))
    }

    /// The pid of the pane shell's child whose command is `name` (the
    /// program the script runs), read from /proc: no procps needed.
    pub fn child_pid(&self, name: &str) -> u32 {
        let shell: u32 = self
            .tmux(&["display-message", "-p", "#{pane_pid}"])
            .trim()
            .parse()
            .unwrap();
        let comm = format!("({name})");
        for entry in fs::read_dir("/proc").unwrap() {
            let entry_name = entry.unwrap().file_name().to_string_lossy().into_owned();
            let Ok(pid) = entry_name.parse::<u32>() else {
                continue;
            };
            let Ok(stat) = fs::read_to_string(format!("/proc/{pid}/stat")) else {
                continue;
            };
            let after = stat.rsplit_once(')').map(|(_, rest)| rest).unwrap_or("");
            let ppid: u32 = after
                .split_whitespace()
                .nth(1)
                .unwrap_or("0")
                .parse()
                .unwrap_or(0);
            if ppid == shell && stat.contains(&comm) {
                return pid;
            }
        }
        panic!("{name} is not running in the pane");
    }

    /// Sends `signal` (a name such as `TERM`) to the pane's `name` with
    /// the shell's own kill.
    pub fn signal_child(&self, name: &str, signal: &str) {
        let status = Command::new("/bin/sh")
            .arg("-c")
            .arg(format!("kill -{signal} {}", self.child_pid(name)))
            .status()
            .unwrap();
        assert!(status.success(), "kill -{signal}");
    }

    /// The status the script wrote to `root/exit`, once it is there.
    pub fn exit_status(&self) -> i32 {
        let path = self.root.join("exit");
        let deadline = Instant::now() + WAIT;
        while !path.exists() {
            assert!(Instant::now() < deadline, "the program did not exit");
            std::thread::sleep(Duration::from_millis(50));
        }
        std::thread::sleep(Duration::from_millis(50));
        fs::read_to_string(&path).unwrap().trim().parse().unwrap()
    }
}

impl Drop for Pane {
    fn drop(&mut self) {
        // kill-server leaves the socket file behind: remove it too.
        let socket_path = self.tmux(&["display-message", "-p", "#{socket_path}"]);
        self.tmux(&["kill-server"]);
        let socket_path = socket_path.trim();
        if !socket_path.is_empty() {
            let _ = fs::remove_file(socket_path);
        }
        let _ = fs::remove_dir_all(&self.root);
    }
}
