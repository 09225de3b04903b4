//! The lab's network: a sender and a receiver namespace joined through a router namespace by two
//! veth pairs, with tbf on the router's egress towards the receiver. Built with iproute2; torn
//! down on drop, on a failed setup and on unwind.
//!
//! Why a router and not tbf on the sender's own veth: a packet queued in the sender's qdisc still
//! counts against its socket (TCP small queues allows about two 64 KB GSO packets there), so the
//! queue could never grow past ~100 KB and CUBIC would never fill a deep buffer. Packets leaving
//! the sender's veth are orphaned, so a queue in the router behaves like a real bottleneck's.

use crate::caps::{Cap, CapSet};
use std::net::{IpAddr, Ipv4Addr};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

use super::flow::FlowRun;

/// Prefix of every namespace a lab creates: `bbrtop-<pid>-<n>-snd|rtr|rcv`.
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
    /// Namespace names: sender, router, receiver.
    names: [String; 3],
    paths: [PathBuf; 3],
    /// Interface tag: devices are `<tag>s` (sender), `<tag>a` (router, sender side), `<tag>b`
    /// (router, receiver side: the bottleneck), `<tag>r` (receiver).
    tag: String,
    /// 10.a.b.0/29 of this lab.
    net: (u8, u8),
    /// How many namespaces exist (and so must be deleted): counted as they are made.
    made: usize,
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
        let names = ["snd", "rtr", "rcv"].map(|r| format!("{PREFIX}{pid}-{n}-{r}"));
        let paths = names.clone().map(|n| Path::new("/run/netns").join(n));
        let mut lab = Lab {
            cfg,
            names,
            paths,
            // Interface names: at most 15 chars ("bt" + 6 hex pid digits + "x" + 3 hex + end).
            tag: format!("bt{pid:x}x{:x}", n & 0xfff),
            net: subnet(pid, n),
            made: 0,
            flows: Vec::new(),
            next_flow: 0,
        };
        // On any error below, dropping `lab` deletes what was made.
        lab.build()?;
        Ok(lab)
    }

    fn addr(&self, host: u8) -> Ipv4Addr {
        Ipv4Addr::new(10, self.net.0, self.net.1, host)
    }

    fn build(&mut self) -> Result<(), LabError> {
        for name in self.names.clone() {
            ip(&["netns", "add", &name])?;
            self.made += 1;
        }
        let [snd, rtr, rcv] = self.names.clone();
        let t = &self.tag;
        let (sd, ra, rb, rd) = (format!("{t}s"), format!("{t}a"), format!("{t}b"), format!("{t}r"));
        ip(&["link", "add", &sd, "netns", &snd, "type", "veth", "peer", "name", &ra, "netns", &rtr])?;
        ip(&["link", "add", &rb, "netns", &rtr, "type", "veth", "peer", "name", &rd, "netns", &rcv])?;
        // sender .1 -- .2 router .5 -- .6 receiver
        for (ns, dev, host) in [(&snd, &sd, 1), (&rtr, &ra, 2), (&rtr, &rb, 5), (&rcv, &rd, 6)] {
            ip(&["-n", ns, "addr", "add", &format!("{}/30", self.addr(host)), "dev", dev])?;
            ip(&["-n", ns, "link", "set", dev, "up"])?;
        }
        for ns in [&snd, &rtr, &rcv] {
            ip(&["-n", ns, "link", "set", "lo", "up"])?;
        }
        ip(&["-n", &snd, "route", "add", "default", "via", &self.addr(2).to_string()])?;
        ip(&["-n", &rcv, "route", "add", "default", "via", &self.addr(5).to_string()])?;
        in_netns(&self.paths[1], || std::fs::write("/proc/sys/net/ipv4/ip_forward", "1"))??;
        let c = &self.cfg;
        run(
            "tc",
            &[
                "-n",
                &rtr,
                "qdisc",
                "add",
                "dev",
                &rb,
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
        &self.paths[0]
    }
    pub fn router_netns(&self) -> &Path {
        &self.paths[1]
    }
    pub fn receiver_netns(&self) -> &Path {
        &self.paths[2]
    }
    pub fn sender_name(&self) -> &str {
        &self.names[0]
    }
    /// The namespace holding the bottleneck (`tc -n <router_name> qdisc show`).
    pub fn router_name(&self) -> &str {
        &self.names[1]
    }
    pub fn receiver_name(&self) -> &str {
        &self.names[2]
    }
    /// The router's device towards the receiver, where tbf sits.
    pub fn bottleneck_dev(&self) -> String {
        format!("{}b", self.tag)
    }
    pub fn receiver_addr(&self) -> IpAddr {
        IpAddr::V4(self.addr(6))
    }
    pub fn sender_addr(&self) -> IpAddr {
        IpAddr::V4(self.addr(1))
    }

    /// Runs `f` on a thread that has entered the sender namespace (children it spawns, such as
    /// `ss`, start there too).
    pub fn run_in_sender<T: Send>(&self, f: impl FnOnce() -> T + Send) -> Result<T, LabError> {
        in_netns(self.sender_netns(), f)
    }

    /// Runs `f` on a thread that has entered the receiver namespace.
    pub fn run_in_receiver<T: Send>(&self, f: impl FnOnce() -> T + Send) -> Result<T, LabError> {
        in_netns(self.receiver_netns(), f)
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        // Flows first, so no socket keeps a namespace alive after its name is gone.
        for f in self.flows.drain(..) {
            f.stop();
        }
        for name in &self.names[..self.made] {
            if let Err(e) = ip(&["netns", "del", name]) {
                eprintln!("bbrtop lab: teardown: {e}");
            }
        }
    }
}

/// 10.a.b.0/29 from the pid and the counter. Each lab has its own namespaces, so equal subnets in
/// two labs would not collide; distinct ones only make captures easier to read.
fn subnet(pid: u32, n: u32) -> (u8, u8) {
    let k = pid.wrapping_mul(2_654_435_761).wrapping_add(n.wrapping_mul(40_503));
    (((k >> 16) & 0xff) as u8, ((k >> 5) & 0xf8) as u8)
}

/// `bbrtop-<pid>-<n>-snd|rtr|rcv` -> pid; None for any name that is not a lab's.
pub(super) fn lab_pid(name: &str) -> Option<u32> {
    let rest = name.strip_prefix(PREFIX)?;
    let rest = ["-snd", "-rtr", "-rcv"].iter().find_map(|s| rest.strip_suffix(s))?;
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
    let out = Command::new(prog)
        .args(args)
        .output()
        .map_err(|source| LabError::Spawn { cmd: cmd.clone(), source })?;
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
    let msg =
        format!("{what} needs CAP_NET_ADMIN and CAP_SYS_ADMIN: missing {}", crate::caps::names(&missing));
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
        assert_eq!(lab_pid("bbrtop-99-3-rtr"), Some(99));
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
