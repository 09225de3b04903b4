//! Network namespaces for tests: one of a test's own, those `ip netns` lists, and `ss` inside a
//! lab's sender.

use bbrtop::lab::Lab;
use bbrtop::lab::ss::{SsSocket, parse_ss_tin};
use std::path::PathBuf;
use std::process::Command;

/// Runs `ip ARGS`, which must succeed.
pub fn ip(args: &[&str]) {
    let o = Command::new("ip").args(args).output().expect("ip");
    assert!(o.status.success(), "ip {args:?}: {}", String::from_utf8_lossy(&o.stderr));
}

/// A network namespace with its loopback up, deleted on drop (even when the test fails).
pub struct Netns(pub String);

impl Netns {
    pub fn new(name: String) -> Netns {
        let ns = Netns(name);
        ip(&["netns", "add", &ns.0]);
        ip(&["-n", &ns.0, "link", "set", "lo", "up"]);
        ns
    }

    pub fn path(&self) -> PathBuf {
        PathBuf::from("/run/netns").join(&self.0)
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.0]).status();
    }
}

/// The lines of `ip netns list` that start with `prefix`.
pub fn namespaces(prefix: &str) -> Vec<String> {
    let o = Command::new("ip").args(["netns", "list"]).output().unwrap();
    String::from_utf8_lossy(&o.stdout).lines().filter(|l| l.starts_with(prefix)).map(str::to_string).collect()
}

/// `ss -tinH state established` in the lab's sender namespace, parsed.
pub fn ss_established(lab: &Lab) -> Vec<SsSocket> {
    let o = Command::new("ip")
        .args(["netns", "exec", lab.sender_name(), "ss", "-tinH", "state", "established"])
        .output()
        .unwrap();
    assert!(o.status.success(), "ss: {}", String::from_utf8_lossy(&o.stderr));
    parse_ss_tin(&String::from_utf8_lossy(&o.stdout))
}

/// `bbrtop export` watching the lab's sender namespace on a free loopback port, once ready; the
/// process ends (by its PID) when the returned handle drops.
pub fn exporter(lab: &Lab) -> (super::Exporter, u16) {
    exporter_with(lab, &[])
}

/// [`exporter`] with more flags.
pub fn exporter_with(lab: &Lab, args: &[&str]) -> (super::Exporter, u16) {
    let port = super::http::free_port();
    let (hindsight, hindsight_flag) = super::hindsight_dir();
    let child = Command::new(env!("CARGO_BIN_EXE_bbrtop"))
        .arg("export")
        .arg(format!("--netns={}", lab.sender_netns().display()))
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .arg(hindsight_flag)
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let export = super::Exporter { proc: super::Proc(child), _hindsight: hindsight };
    let ready = super::poll_until(std::time::Duration::from_secs(20), || {
        super::http::get(port, "/-/ready", None).ok().filter(|r| r.0 == 200)
    });
    assert!(ready.is_some(), "exporter for {} not ready", lab.name());
    (export, port)
}

/// The tbf queue's backlog on the lab's router, in bytes: the reference for whether a queue
/// stands.
pub fn tbf_backlog(lab: &Lab) -> u64 {
    let o = Command::new("ip")
        .args(["netns", "exec", lab.router_name(), "tc", "-s", "-j", "qdisc", "show", "dev", "lan0"])
        .output()
        .expect("tc");
    let qdiscs: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap_or_default();
    let tbf = qdiscs.as_array().and_then(|q| q.iter().find(|q| q["kind"] == "tbf"));
    tbf.and_then(|q| q["backlog"].as_u64()).expect("the router's tbf and its backlog")
}
