//! Waiting on the terminal ourselves, before crossterm reads it: once the terminal hangs up
//! (its window closed, its ssh session dropped), crossterm's reader loops on the failed read
//! without returning, so the UI would spin a core and never see its stop flag.

use rustix::event::{PollFd, PollFlags, Timespec};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
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
pub struct Tty(Source);

enum Source {
    Stdin(std::io::Stdin),
    Owned(OwnedFd),
}

impl AsFd for Tty {
    fn as_fd(&self) -> BorrowedFd<'_> {
        match &self.0 {
            Source::Stdin(s) => s.as_fd(),
            Source::Owned(f) => f.as_fd(),
        }
    }
}

impl Tty {
    pub fn open() -> std::io::Result<Tty> {
        use std::io::IsTerminal;
        let stdin = std::io::stdin();
        if stdin.is_terminal() {
            return Ok(Tty(Source::Stdin(stdin)));
        }
        let f = std::fs::OpenOptions::new().read(true).open("/dev/tty")?;
        Ok(Tty(Source::Owned(OwnedFd::from(f))))
    }

    /// Waits up to `timeout` for input (unless `input` is false: a hangup only) or a hangup.
    /// EINTR (a signal) counts as quiet, so the caller looks at its stop flag at once.
    pub fn wait(&self, timeout: Duration, input: bool) -> std::io::Result<Ready> {
        // POLLHUP, POLLERR and POLLNVAL are reported whatever is asked for.
        let events = if input { PollFlags::IN } else { PollFlags::empty() };
        let mut fds = [PollFd::new(self, events)];
        let timeout = Timespec::try_from(timeout).unwrap_or(Timespec { tv_sec: i64::MAX, tv_nsec: 0 });
        match rustix::event::poll(&mut fds, Some(&timeout)) {
            Ok(n) => Ok(readiness(n, fds[0].revents())),
            Err(rustix::io::Errno::INTR) => Ok(Ready::Quiet),
            Err(e) => Err(e.into()),
        }
    }

    /// Makes crossterm look at the terminal again. Its reader is edge-triggered (mio) and takes at
    /// most 1 KiB before it hands the first key over: the rest of a longer burst (a paste) stays in
    /// the terminal, unseen until another key comes, while our level-triggered wait sees input at
    /// once, again and again (the filter prompt spun a core holding a 1,500-character paste). Setting
    /// the terminal's attributes to what they are wakes its readers (Linux's n_tty does so on every
    /// change), which is the new edge crossterm waits for.
    pub fn nudge(&self) -> std::io::Result<()> {
        let t = rustix::termios::tcgetattr(self)?;
        rustix::termios::tcsetattr(self, rustix::termios::OptionalActions::Now, &t)?;
        Ok(())
    }
}

/// Points stdin, stdout and stderr at /dev/null once the terminal has hung up: the restore, the
/// lab's teardown and the exit path still write there, and a failed write to stderr panics.
pub fn detach() {
    let Ok(null) = std::fs::OpenOptions::new().read(true).write(true).open("/dev/null") else {
        return;
    };
    // Best effort: a descriptor that cannot be replaced stays as it was.
    let _ = rustix::stdio::dup2_stdin(&null);
    let _ = rustix::stdio::dup2_stdout(&null);
    let _ = rustix::stdio::dup2_stderr(&null);
}

/// poll(2)'s answer for one descriptor, in our terms. A hangup wins over pending input: the
/// input of a terminal that is gone cannot be answered.
fn readiness(n: usize, revents: PollFlags) -> Ready {
    if n == 0 {
        Ready::Quiet
    } else if revents.intersects(PollFlags::HUP | PollFlags::ERR | PollFlags::NVAL) {
        Ready::Gone
    } else if revents.contains(PollFlags::IN) {
        Ready::Input
    } else {
        Ready::Quiet
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::{AsRawFd, FromRawFd};

    #[test]
    fn a_hangup_wins_over_input_and_nothing_is_quiet() {
        assert_eq!(readiness(0, PollFlags::empty()), Ready::Quiet);
        assert_eq!(readiness(1, PollFlags::IN), Ready::Input);
        assert_eq!(readiness(1, PollFlags::IN | PollFlags::HUP), Ready::Gone);
        assert_eq!(readiness(1, PollFlags::ERR), Ready::Gone);
        assert_eq!(readiness(1, PollFlags::NVAL), Ready::Gone);
    }

    /// A burst longer than crossterm's read (a paste) left in the terminal past an edge-triggered
    /// reader, as crossterm's is: our wait sees it at once (the filter prompt's spin), the wait
    /// for a hangup only does not, and a nudge is the new edge that gets the reader to take it.
    #[test]
    #[allow(unsafe_code)]
    fn a_nudge_hands_an_edge_triggered_reader_the_input_it_left() {
        // SAFETY: plain syscalls on descriptors this test opens and owns; buffers outlive each call.
        unsafe {
            let (mut master, mut slave) = (0, 0);
            let made = libc::openpty(
                &mut master,
                &mut slave,
                std::ptr::null_mut(),
                std::ptr::null(),
                std::ptr::null(),
            );
            assert_eq!(made, 0, "openpty: {}", std::io::Error::last_os_error());
            let (master, slave) = (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave));
            let mut t: libc::termios = std::mem::zeroed();
            assert_eq!(libc::tcgetattr(slave.as_raw_fd(), &mut t), 0);
            libc::cfmakeraw(&mut t);
            assert_eq!(libc::tcsetattr(slave.as_raw_fd(), libc::TCSANOW, &t), 0);
            let ep = OwnedFd::from_raw_fd(libc::epoll_create1(libc::EPOLL_CLOEXEC));
            let mut ev = libc::epoll_event { events: (libc::EPOLLIN | libc::EPOLLET) as u32, u64: 0 };
            assert_eq!(libc::epoll_ctl(ep.as_raw_fd(), libc::EPOLL_CTL_ADD, slave.as_raw_fd(), &mut ev), 0);
            let edges = |ms| {
                let mut out = [libc::epoll_event { events: 0, u64: 0 }];
                libc::epoll_wait(ep.as_raw_fd(), out.as_mut_ptr(), 1, ms)
            };
            let paste = [b'a'; 1500];
            assert_eq!(libc::write(master.as_raw_fd(), paste.as_ptr().cast(), paste.len()), 1500);
            // The pty hands bytes over on a kernel worker: wait until all of them are there.
            let pending = || {
                let mut n: libc::c_int = 0;
                libc::ioctl(slave.as_raw_fd(), libc::FIONREAD, &mut n);
                n
            };
            for _ in 0..500 {
                if pending() == 1500 {
                    break;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            assert_eq!(pending(), 1500);
            assert_eq!(edges(5000), 1, "the burst's edge");
            let mut buf = [0u8; 1024];
            assert_eq!(libc::read(slave.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()), 1024);
            assert_eq!(edges(0), 0, "476 bytes left and no new edge: the reader would never look");
            let tty = Tty(Source::Owned(slave.try_clone().unwrap()));
            assert_eq!(tty.wait(Duration::ZERO, true).unwrap(), Ready::Input, "what made the loop spin");
            assert_eq!(tty.wait(Duration::ZERO, false).unwrap(), Ready::Quiet, "a hangup only");
            tty.nudge().expect("nudge");
            assert_eq!(edges(5000), 1, "the nudge's edge");
            assert_eq!(libc::read(slave.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()), 476);
        }
    }

    #[test]
    fn a_closed_pipe_reads_as_gone() {
        // A pipe whose writer is closed answers POLLHUP, as a pty does once its master closes.
        let (r, w) = std::io::pipe().unwrap();
        drop(w);
        let t = Tty(Source::Owned(OwnedFd::from(r)));
        assert_eq!(t.wait(Duration::from_millis(1000), true).unwrap(), Ready::Gone);
    }
}
