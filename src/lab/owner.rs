//! Which process a lab's namespaces belong to, so that a later run removes those of dead labs
//! (killed with SIGKILL, or a machine whose run was cut short) and never a live lab's.
//!
//! A lab's namespaces are named `bbrtop-<pid>-<start>-<n>-<s|m|r>`: the owner's PID and its start
//! time (clock ticks since boot, field 22 of /proc/PID/stat). A PID alone is not enough: once
//! the owner dies the PID can be reused, and the new process would keep a dead lab alive, or
//! be taken for its owner.

use std::path::Path;
use std::process::Command;

const PREFIX: &str = "bbrtop-";
const ROLES: [&str; 3] = ["-s", "-m", "-r"];

/// A process, as the kernel knows it across PID reuse.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Owner {
    pub pid: u32,
    pub start: u64,
}

impl Owner {
    /// This process.
    pub fn me() -> Owner {
        let pid = std::process::id();
        Owner { pid, start: start_of(pid).unwrap_or(0) }
    }

    /// The name prefix of this owner's `n`th lab: `bbrtop-<pid>-<start>-<n>`.
    pub fn lab_name(self, n: u32) -> String {
        format!("{PREFIX}{}-{}-{n}", self.pid, self.start)
    }

    /// Whether this very process still runs: its PID is taken by a process that started when it
    /// did.
    pub fn alive(self) -> bool {
        start_of(self.pid) == Some(self.start)
    }
}

/// The owner of a lab namespace named `bbrtop-<pid>-<start>-<n>-<role>`; None for any other name,
/// even with our prefix (it is somebody else's).
pub fn owner_of(name: &str) -> Option<Owner> {
    let rest = name.strip_prefix(PREFIX)?;
    let rest = ROLES.iter().find_map(|role| rest.strip_suffix(role))?;
    let mut parts = rest.split('-');
    let (pid, start, n) = (parts.next()?, parts.next()?, parts.next()?);
    let digits = |x: &str| !x.is_empty() && x.bytes().all(|c| c.is_ascii_digit());
    if parts.next().is_some() || !digits(pid) || !digits(start) || !digits(n) {
        return None;
    }
    Some(Owner { pid: pid.parse().ok()?, start: start.parse().ok()? })
}

/// Field 22 (starttime) of a /proc/PID/stat text. The command name (field 2) is in parentheses
/// and may hold spaces and parentheses itself, so fields are counted after the last ')'.
pub fn starttime(stat: &str) -> Option<u64> {
    let after = &stat[stat.rfind(')')? + 1..];
    after.split_whitespace().nth(19)?.parse().ok()
}

fn start_of(pid: u32) -> Option<u64> {
    starttime(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// Removes the namespaces of labs whose owner is gone; returns their names.
pub fn remove_dead() -> Vec<String> {
    let Ok(dir) = std::fs::read_dir("/run/netns") else { return Vec::new() };
    let mut removed = Vec::new();
    for e in dir.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(owner) = owner_of(&name) else { continue };
        if !owner.alive() && Path::new("/run/netns").join(&name).exists() {
            let deleted = Command::new("ip").args(["netns", "del", &name]).output();
            if deleted.is_ok_and(|o| o.status.success()) {
                removed.push(name);
            }
        }
    }
    removed.sort();
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_lab_names_are_ours() {
        let o = |pid, start| Some(Owner { pid, start });
        assert_eq!(owner_of("bbrtop-1234-5678-0-s"), o(1234, 5678));
        assert_eq!(owner_of("bbrtop-1234-5678-17-m"), o(1234, 5678));
        assert_eq!(owner_of("bbrtop-9-1-3-r"), o(9, 1));
        for other in [
            "bbrtop-1234-0-s",
            "bbrtop-1234-prod",
            "bbrtop-1234-5678-keep-s",
            "bbrtop-1234-5678-0",
            "bbrtop--1-0-s",
            "bbrtop-x-1-0-r",
            "bbrtop-1-2-3-4-s",
            "lab-1-2-0-s",
        ] {
            assert_eq!(owner_of(other), None, "{other}");
        }
        assert_eq!(owner_of(&format!("{}-s", Owner { pid: 7, start: 8 }.lab_name(2))), o(7, 8));
    }

    #[test]
    fn starttime_counts_fields_after_the_command_name() {
        let stat = "4242 (a (b) c) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 12345 \
                    67 18446744073709551615";
        assert_eq!(starttime(stat), Some(987_654));
        assert_eq!(starttime("garbage"), None);
    }

    #[test]
    fn this_process_is_alive_and_one_with_another_start_is_not() {
        let me = Owner::me();
        assert!(me.start > 0 && me.alive());
        assert!(!Owner { start: me.start + 1, ..me }.alive(), "the PID reused by another start");
    }
}
