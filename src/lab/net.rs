//! The lab's network: two namespaces (sender, receiver) joined by a veth pair, with tbf on the
//! sender's egress. Built with iproute2; torn down on drop, on a failed setup and on unwind.

use crate::caps::{Cap, CapSet};
use std::net::{IpAddr, Ipv4Addr};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

use super::flow::FlowRun;

/// Prefix of every namespace a lab creates: `bbrtop-<pid>-<n>-snd|rcv`.
const PREFIX: &str = "bbrtop-";

/// The path's shape.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LabConfig {
    /// tbf rate on the sender's egress.
    pub rate_bit_per_sec: u64,
    /// tbf queue (`limit`), in bytes: deep by default so loss-based CC builds a standing queue.
    pub queue_bytes: u32,
    /// tbf bucket (`burst`), in bytes.
    pub burst_bytes: u32,
}

impl Default for LabConfig {
    fn default() -> Self {
        // 1.5 MB at 20 Mbit/s is 600 ms of queue. tbf segments GSO packets larger than the
        // bucket, so a bucket of a few full-size frames keeps the rate exact without turning
        // offloads off; 32 KB also covers the timer granularity at this rate.
        LabConfig { rate_bit_per_sec: 20_000_000, queue_bytes: 1_500_000, burst_bytes: 32_000 }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum LabError {
    #[error("the lab needs CAP_NET_ADMIN and CAP_SYS_ADMIN: missing {0}")]
    Privilege(String),
    #[error("`{cmd}` failed: {stderr}")]
    Command { cmd: String, stderr: String },
    #[error("cannot run `{cmd}`: {source}")]
    Spawn { cmd: String, source: std::io::Error },
    #[error("congestion control {cc:?} is not available in the lab (available: {available})")]
    CcUnavailable { cc: String, available: String },
    #[error("entering namespace {path}: {source}")]
    Netns { path: String, source: std::io::Error },
    #[error("lab flow: {0}")]
    Flow(String),
    #[error("lab I/O: {0}")]
    Io(#[from] std::io::Error),
}

/// A running lab. See the module docs.
pub struct Lab {
    cfg: LabConfig,
    snd_name: String,
    rcv_name: String,
    snd_path: PathBuf,
    rcv_path: PathBuf,
    snd_dev: String,
    rcv_dev: String,
    snd_addr: Ipv4Addr,
    rcv_addr: Ipv4Addr,
    /// Which namespaces exist (and so must be deleted): set as they are made.
    made: [bool; 2],
    pub(super) flows: Vec<FlowRun>,
    pub(super) next_flow: u64,
}

static COUNTER: AtomicU32 = AtomicU32::new(0);

impl Lab {
    pub fn new(cfg: LabConfig) -> Result<Lab, LabError> {
        let missing = CapSet::effective().missing(&[Cap::NetAdmin, Cap::SysAdmin]);
        if !missing.is_empty() {
            return Err(LabError::Privilege(crate::caps::names(&missing)));
        }
        remove_stale();
        let pid = std::process::id();
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let snd_name = format!("{PREFIX}{pid}-{n}-snd");
        let rcv_name = format!("{PREFIX}{pid}-{n}-rcv");
        // Interface names: at most 15 chars ("bt" + 6 hex pid digits + "x" + hex counter + end).
        let tag = format!("bt{pid:x}x{:x}", n & 0xfff);
        let (a, b) = subnet(pid, n);
        let mut lab = Lab {
            cfg,
            snd_path: Path::new("/run/netns").join(&snd_name),
            rcv_path: Path::new("/run/netns").join(&rcv_name),
            snd_name,
            rcv_name,
            snd_dev: format!("{tag}s"),
            rcv_dev: format!("{tag}r"),
            snd_addr: Ipv4Addr::new(10, a, b, 1),
            rcv_addr: Ipv4Addr::new(10, a, b, 2),
            made: [false; 2],
            flows: Vec::new(),
            next_flow: 0,
        };
        // On any error below, dropping `lab` deletes what was made.
        lab.build()?;
        Ok(lab)
    }

    fn build(&mut self) -> Result<(), LabError> {
        ip(&["netns", "add", &self.snd_name])?;
        self.made[0] = true;
        ip(&["netns", "add", &self.rcv_name])?;
        self.made[1] = true;
        let (snd, rcv) = (self.snd_name.clone(), self.rcv_name.clone());
        let (sd, rd) = (self.snd_dev.clone(), self.rcv_dev.clone());
        ip(&["link", "add", &sd, "netns", &snd, "type", "veth", "peer", "name", &rd, "netns", &rcv])?;
        for (ns, dev, addr) in [(&snd, &sd, self.snd_addr), (&rcv, &rd, self.rcv_addr)] {
            ip(&["-n", ns, "addr", "add", &format!("{addr}/30"), "dev", dev])?;
            ip(&["-n", ns, "link", "set", "lo", "up"])?;
            ip(&["-n", ns, "link", "set", dev, "up"])?;
        }
        let c = &self.cfg;
        run(
            "tc",
            &[
                "-n",
                &snd,
                "qdisc",
                "add",
                "dev",
                &sd,
                "root",
                "tbf",
                "rate",
                &format!("{}bit", c.rate_bit_per_sec),
                "burst",
                &c.burst_bytes.to_string(),
                "limit",
                &c.queue_bytes.to_string(),
            ],
        )?;
        Ok(())
    }

    pub fn config(&self) -> &LabConfig {
        &self.cfg
    }
    pub fn sender_netns(&self) -> &Path {
        &self.snd_path
    }
    pub fn receiver_netns(&self) -> &Path {
        &self.rcv_path
    }
    pub fn sender_name(&self) -> &str {
        &self.snd_name
    }
    pub fn receiver_name(&self) -> &str {
        &self.rcv_name
    }
    /// The sender's veth device (where tbf sits).
    pub fn sender_dev(&self) -> &str {
        &self.snd_dev
    }
    pub fn receiver_addr(&self) -> IpAddr {
        IpAddr::V4(self.rcv_addr)
    }
    pub fn sender_addr(&self) -> IpAddr {
        IpAddr::V4(self.snd_addr)
    }

    /// Runs `f` on a thread that has entered the sender namespace (children it spawns, such as
    /// `ss`, start there too).
    pub fn run_in_sender<T: Send>(&self, f: impl FnOnce() -> T + Send) -> Result<T, LabError> {
        in_netns(&self.snd_path, f)
    }

    /// Runs `f` on a thread that has entered the receiver namespace.
    pub fn run_in_receiver<T: Send>(&self, f: impl FnOnce() -> T + Send) -> Result<T, LabError> {
        in_netns(&self.rcv_path, f)
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        // Flows first, so no socket keeps a namespace alive after its name is gone.
        for f in self.flows.drain(..) {
            f.stop();
        }
        for (made, name) in [(self.made[0], &self.snd_name), (self.made[1], &self.rcv_name)] {
            if made && let Err(e) = ip(&["netns", "del", name]) {
                eprintln!("bbrtop lab: teardown: {e}");
            }
        }
    }
}

/// 10.a.b.0/30 from the pid and the counter. Each lab has its own namespaces, so equal subnets in
/// two labs would not collide; distinct ones only make captures easier to read.
fn subnet(pid: u32, n: u32) -> (u8, u8) {
    let k = pid.wrapping_mul(2_654_435_761).wrapping_add(n.wrapping_mul(40_503));
    (((k >> 16) & 0xff) as u8, ((k >> 8) & 0xff) as u8)
}

/// `bbrtop-<pid>-<n>-snd|rcv` -> pid; None for any name that is not a lab's.
pub(super) fn lab_pid(name: &str) -> Option<u32> {
    let rest = name.strip_prefix(PREFIX)?;
    let rest = rest.strip_suffix("-snd").or_else(|| rest.strip_suffix("-rcv"))?;
    let (pid, n) = rest.split_once('-')?;
    if n.is_empty() || !n.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    pid.parse().ok()
}

/// Deletes lab namespaces left behind by processes that no longer run (a killed test).
fn remove_stale() {
    let Ok(dir) = std::fs::read_dir("/run/netns") else { return };
    for e in dir.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if let Some(pid) = lab_pid(&name)
            && !Path::new(&format!("/proc/{pid}")).exists()
        {
            // Another process may be removing it at the same moment: failures are fine.
            let _ = ip(&["netns", "del", &name]);
        }
    }
}

pub(super) fn ip(args: &[&str]) -> Result<String, LabError> {
    run("ip", args)
}

fn run(prog: &str, args: &[&str]) -> Result<String, LabError> {
    let cmd = format!("{prog} {}", args.join(" "));
    let out = Command::new(prog).args(args).output().map_err(|source| LabError::Spawn { cmd: cmd.clone(), source })?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr).trim().replace('\n', "; ");
        return Err(LabError::Command { cmd, stderr });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Runs `f` on a scoped thread that has entered the namespace at `ns`. Sockets `f` creates stay
/// in that namespace and can be used from any thread afterwards.
pub(super) fn in_netns<T: Send>(ns: &Path, f: impl FnOnce() -> T + Send) -> Result<T, LabError> {
    use std::os::fd::AsRawFd;
    let netns_err = |source| LabError::Netns { path: ns.display().to_string(), source };
    let file = std::fs::File::open(ns).map_err(netns_err)?;
    std::thread::scope(|s| {
        std::thread::Builder::new()
            .name("bbrtop-lab-ns".into())
            .spawn_scoped(s, move || {
                #[allow(unsafe_code)]
                // SAFETY: setns gets an fd kept open by `file` for the call; it changes only this
                // thread's network namespace, and the thread ends when `f` returns.
                let rc = unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) };
                if rc != 0 {
                    return Err(netns_err(std::io::Error::last_os_error()));
                }
                Ok(f())
            })
            .map_err(LabError::Io)?
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p))
    })
}

/// True if this process holds CAP_NET_ADMIN and CAP_SYS_ADMIN (the effective set, not the uid).
/// Otherwise under CI=true it panics naming what is missing; elsewhere it prints a loud SKIP.
pub fn privileged(what: &str) -> bool {
    let missing = CapSet::effective().missing(&[Cap::NetAdmin, Cap::SysAdmin]);
    if missing.is_empty() {
        return true;
    }
    let msg = format!(
        "{what} needs CAP_NET_ADMIN and CAP_SYS_ADMIN: missing {}",
        crate::caps::names(&missing)
    );
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!("{msg}");
    }
    eprintln!("\n*** SKIP: {msg} ***\n");
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lab_names_are_recognised_and_others_are_not() {
        assert_eq!(lab_pid("bbrtop-1234-0-snd"), Some(1234));
        assert_eq!(lab_pid("bbrtop-1234-17-rcv"), Some(1234));
        for other in ["bbrtop-1234-0-x", "bbrtop-abc-0-snd", "bbrtop-1234--snd", "mylab", "bbrtop-12-snd"] {
            assert_eq!(lab_pid(other), None, "{other}");
        }
    }

    #[test]
    fn interface_names_fit() {
        let tag = format!("bt{:x}x{:x}s", 4_194_304u32, 0xfffu32);
        assert!(tag.len() < libc::IFNAMSIZ, "{tag}");
    }
}
