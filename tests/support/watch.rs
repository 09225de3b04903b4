//! `bbrtop watch --ndjson` as a child process: its lines parsed as they come, on a thread, and
//! the process ended (by its PID) when the handle drops.

use super::Proc;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

pub struct Watch {
    _proc: Proc,
    lines: Receiver<serde_json::Value>,
}

impl Watch {
    /// `bbrtop watch --ndjson ARGS`.
    pub fn start(args: &[&str]) -> Watch {
        let mut child = Command::new(env!("CARGO_BIN_EXE_bbrtop"))
            .args(["watch", "--ndjson"])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("bbrtop watch");
        let out = child.stdout.take().expect("its stdout");
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                if let Ok(v) = serde_json::from_str(&line)
                    && tx.send(v).is_err()
                {
                    return;
                }
            }
        });
        Watch { _proc: Proc(child), lines }
    }

    /// Every line until `deadline` (and those already waiting, past it), handed to `f`, which
    /// returns true to stop early.
    pub fn until(&self, deadline: Instant, mut f: impl FnMut(&serde_json::Value) -> bool) {
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left.min(Duration::from_millis(200))) {
                Ok(v) if f(&v) => return,
                Ok(_) => {}
                Err(RecvTimeoutError::Timeout) if left.is_zero() => return,
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => panic!("bbrtop watch ended"),
            }
        }
    }
}
