//! Waiting on the terminal ourselves, before crossterm reads it: once the terminal hangs up
//! (its window closed, its ssh session dropped), crossterm's reader loops on the failed read
//! without returning, so the UI would spin a core and never see its stop flag.

use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::time::Duration;

/// What the terminal had for us within the wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ready {
    /// Bytes to read (keys), for crossterm.
    Input,
    /// Nothing within the timeout.
    Quiet,
    /// The terminal hung up or is no longer valid: nothing will come, and nothing can be drawn.
    Gone,
}

/// The terminal crossterm reads: stdin when it is one, else /dev/tty (as crossterm chooses).
pub struct Tty {
    fd: RawFd,
    _owned: Option<OwnedFd>,
}

impl Tty {
    pub fn open() -> std::io::Result<Tty> {
        use std::io::IsTerminal;
        if std::io::stdin().is_terminal() {
            return Ok(Tty { fd: 0, _owned: None });
        }
        let f = std::fs::OpenOptions::new().read(true).open("/dev/tty")?;
        let owned = OwnedFd::from(f);
        Ok(Tty { fd: owned.as_raw_fd(), _owned: Some(owned) })
    }

    /// Waits up to `timeout` for input or a hangup. EINTR (a signal) counts as quiet, so the
    /// caller looks at its stop flag at once.
    #[allow(unsafe_code)]
    pub fn wait(&self, timeout: Duration) -> std::io::Result<Ready> {
        let mut p = libc::pollfd { fd: self.fd, events: libc::POLLIN, revents: 0 };
        let ms = timeout.as_millis().min(i32::MAX as u128) as i32;
        // SAFETY: one pollfd that lives on this stack frame for the whole call.
        let n = unsafe { libc::poll(&mut p, 1, ms) };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            return if e.kind() == std::io::ErrorKind::Interrupted { Ok(Ready::Quiet) } else { Err(e) };
        }
        Ok(readiness(n, p.revents))
    }
}

/// Points stdin, stdout and stderr at /dev/null once the terminal has hung up: the restore, the
/// lab's teardown and the exit path still write there, and a failed write to stderr panics.
#[allow(unsafe_code)]
pub fn detach() {
    let Ok(null) = std::fs::OpenOptions::new().read(true).write(true).open("/dev/null") else {
        return;
    };
    for fd in 0..=2 {
        // SAFETY: dup2 onto the standard descriptors, which stay open for the process's life.
        unsafe { libc::dup2(null.as_raw_fd(), fd) };
    }
}

/// poll(2)'s answer for one descriptor, in our terms. A hangup wins over pending input: the
/// input of a terminal that is gone cannot be answered.
fn readiness(n: i32, revents: i16) -> Ready {
    if n == 0 {
        Ready::Quiet
    } else if revents & (libc::POLLHUP | libc::POLLERR | libc::POLLNVAL) != 0 {
        Ready::Gone
    } else if revents & libc::POLLIN != 0 {
        Ready::Input
    } else {
        Ready::Quiet
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hangup_wins_over_input_and_nothing_is_quiet() {
        assert_eq!(readiness(0, 0), Ready::Quiet);
        assert_eq!(readiness(1, libc::POLLIN), Ready::Input);
        assert_eq!(readiness(1, libc::POLLIN | libc::POLLHUP), Ready::Gone);
        assert_eq!(readiness(1, libc::POLLERR), Ready::Gone);
        assert_eq!(readiness(1, libc::POLLNVAL), Ready::Gone);
    }

    #[test]
    fn a_closed_pipe_reads_as_gone() {
        // A pipe whose writer is closed answers POLLHUP, as a pty does once its master closes.
        let (r, w) = std::io::pipe().unwrap();
        drop(w);
        let t = Tty { fd: r.as_raw_fd(), _owned: Some(OwnedFd::from(r)) };
        assert_eq!(t.wait(Duration::from_millis(1000)).unwrap(), Ready::Gone);
    }
}
