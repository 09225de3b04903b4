//! The lab: two network namespaces joined by a shaped link, and real TCP flows through it, for
//! tests, `bbrtop --lab` and `bbrtop lab`. Everything it creates is removed when it drops, on
//! error and on panic (Drop runs on unwind).
//!
//! ```text
//!  <name>-s (sender)        <name>-m (router)                        <name>-r (receiver)
//!  flows ──► wan0 ────────► wan0  lan0 [tbf: rate, deep queue] ──────► lan0 ──► sinks
//!            (veth, or TUN through a userspace delay line: this kernel has no netem)
//! ```
//!
//! The bottleneck sits in a router of its own, as it does on a real path: a queue on the
//! sender's own interface would be capped by TCP Small Queues and never bloat.

pub mod cc;
pub mod delayline;
pub mod exchange;
pub mod fidelity;
pub mod flows;
pub mod loss;
pub mod meter;
pub mod owner;
pub mod path_check;
pub mod plot;
pub mod rollout;
pub mod run;
pub mod scenario;
/// `ss -tin` parsed: the reference the tests and the lab figures compare with, not the product.
#[cfg(any(test, feature = "test-support"))]
pub mod ss;

use bbrtop_collect::caps::{Cap, CapSet};
use bbrtop_collect::netns::{NetnsSpec, run_in};
use delayline::DelayLine;
use flows::{Flows, Sink};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

/// The shaped link.
#[derive(Clone, Debug, PartialEq)]
pub struct LabConfig {
    /// tbf rate on the sender's egress.
    pub rate_bit_per_sec: u64,
    /// tbf queue (limit): deep, so a loss-based flow builds a standing queue.
    pub queue_bytes: u32,
    /// tbf bucket: the burst that leaves at line rate after the queue has emptied ([`burst_for`]).
    pub burst_bytes: u32,
    /// One-way propagation delay, through a userspace delay line (this kernel has no netem).
    pub delay: Option<Duration>,
    /// Random loss on the sender's egress (0..1), by a tc BPF program.
    pub loss: f64,
    /// ECN on in the sender's and receiver's namespaces (net.ipv4.tcp_ecn=1).
    pub ecn: bool,
    /// The fraction of ECN-capable packets the bottleneck marks CE (0..1), by the same program.
    pub ce_mark: f64,
    /// Keep one of this many of the receiver's pure ACKs (0 or 1: all), by the same program on
    /// the receiver's egress: a stretch-ACK peer.
    pub ack_every: u32,
    /// The second octet of the lab's addresses, 10.NET.1.1 (sender) to 10.NET.2.2 (receiver):
    /// labs' namespaces are apart, so two labs may share it; `lab rollout` gives each client
    /// population its own block.
    pub net: u8,
}

impl Default for LabConfig {
    /// 20 Mbit/s with a 1.5 MB queue: 600 ms of buffer for a flow that fills it.
    fn default() -> Self {
        LabConfig {
            rate_bit_per_sec: 20_000_000,
            queue_bytes: 1_500_000,
            burst_bytes: burst_for(20_000_000),
            delay: None,
            loss: 0.0,
            ecn: false,
            ce_mark: 0.0,
            ack_every: 0,
            net: 77,
        }
    }
}

/// The bytes of one full-size packet on the wire (an Ethernet frame of a 1500-byte MTU).
pub const PACKET_BYTES: u32 = 1514;

/// A tbf bucket for `rate`: a millisecond of it, and never less than one full packet. A bucket
/// is a burst at line rate whenever the queue has emptied, and BBR reads a burst as bandwidth.
pub fn burst_for(rate_bit_per_sec: u64) -> u32 {
    ((rate_bit_per_sec / 8 / 1000) as u32).max(PACKET_BYTES)
}

#[derive(Debug, thiserror::Error)]
pub enum LabError {
    #[error("the lab needs {0} (network namespaces, links and qdiscs)")]
    Privilege(String),
    #[error("`{cmd}` failed: {stderr}")]
    Command { cmd: String, stderr: String },
    #[error("congestion control {0:?} is not available here (see net.ipv4.tcp_available_congestion_control)")]
    NoCc(String),
    #[error("{0}")]
    Collect(String),
    #[error("lab I/O: {0}")]
    Io(#[from] std::io::Error),
    #[error("{0}")]
    Unsupported(String),
}

/// One bulk flow, as the lab started it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Flow {
    pub id: u32,
    pub cc: String,
    /// The sender's end (in the sender namespace).
    pub local: SocketAddr,
    pub peer: SocketAddr,
}

/// The lab's four addresses in 10.NET.0.0/16.
#[derive(Clone, Copy, Debug)]
struct Addrs {
    sender: Ipv4Addr,
    router_up: Ipv4Addr,
    router_down: Ipv4Addr,
    receiver: Ipv4Addr,
}

impl Addrs {
    fn of(net: u8) -> Addrs {
        Addrs {
            sender: Ipv4Addr::new(10, net, 1, 1),
            router_up: Ipv4Addr::new(10, net, 1, 2),
            router_down: Ipv4Addr::new(10, net, 2, 1),
            receiver: Ipv4Addr::new(10, net, 2, 2),
        }
    }
}

static NEXT: AtomicU32 = AtomicU32::new(0);

pub struct Lab {
    name: String,
    addrs: Addrs,
    sender: PathBuf,
    receiver: PathBuf,
    // Field order is drop order: flows stop before the sink, the line before the namespaces.
    flows: Flows,
    sink: Option<Sink>,
    line: Option<DelayLine>,
    created: Vec<String>,
    path: String,
    /// The delay on the return path (receiver to sender), which the meter's probes cross.
    return_delay: Duration,
    rate_bits_per_sec: u64,
}

fn run(cmd: &str, args: &[&str]) -> Result<(), LabError> {
    let o = Command::new(cmd).args(args).output()?;
    if o.status.success() {
        return Ok(());
    }
    Err(LabError::Command {
        cmd: format!("{cmd} {}", args.join(" ")),
        // One line: tc and ip print usage text over several.
        stderr: String::from_utf8_lossy(&o.stderr).trim().lines().collect::<Vec<_>>().join("; "),
    })
}

impl Lab {
    pub fn new(cfg: LabConfig) -> Result<Lab, LabError> {
        let missing = CapSet::effective().missing(&[Cap::NetAdmin, Cap::SysAdmin]);
        if !missing.is_empty() {
            return Err(LabError::Privilege(bbrtop_collect::caps::names(&missing)));
        }
        owner::remove_dead();
        let name = owner::Owner::me().lab_name(NEXT.fetch_add(1, Ordering::Relaxed));
        let (s, m, r) = (format!("{name}-s"), format!("{name}-m"), format!("{name}-r"));
        let a = Addrs::of(cfg.net);
        let mut lab = Lab {
            addrs: a,
            sender: Path::new("/run/netns").join(&s),
            receiver: Path::new("/run/netns").join(&r),
            name,
            flows: Flows::default(),
            sink: None,
            line: None,
            created: Vec::new(),
            path: String::new(),
            return_delay: Duration::ZERO,
            rate_bits_per_sec: cfg.rate_bit_per_sec,
        };
        // A failure part way leaves `lab` to drop, which removes what was made.
        for ns in [&s, &r, &m] {
            run("ip", &["netns", "add", ns])?;
            lab.created.push(ns.clone());
            run("ip", &["-n", ns, "link", "set", "lo", "up"])?;
        }
        run("ip", &["netns", "exec", &m, "sysctl", "-qw", "net.ipv4.ip_forward=1"])?;
        if cfg.ecn {
            for ns in [&s, &r] {
                run("ip", &["netns", "exec", ns, "sysctl", "-qw", "net.ipv4.tcp_ecn=1"])?;
            }
        }
        lab.veth(&s, &m, "wan0", a.sender, a.router_up)?;
        if let Some(d) = cfg.delay
            && !lab.netem(&m, d * 2)?
        {
            // No netem in this kernel: replace the veth with the userspace delay line.
            run("ip", &["-n", &s, "link", "del", "wan0"])?;
            lab.path.clear();
            lab.delay_line(&s, &m, d)?;
        }
        lab.veth(&m, &r, "lan0", a.router_down, a.receiver)?;
        run("ip", &["-n", &s, "route", "add", "default", "via", &a.router_up.to_string()])?;
        run("ip", &["-n", &r, "route", "add", "default", "via", &a.router_down.to_string()])?;
        lab.shape(&m, "lan0", &cfg)?;
        if cfg.ack_every > 1 {
            let fx = loss::Effects { ack_every: cfg.ack_every, ..Default::default() };
            loss::attach(&NetnsSpec(lab.receiver.clone()), "lan0", fx)?;
            lab.path.push_str(&format!(", the receiver's ACKs thinned to 1 in {} (tc eBPF)", cfg.ack_every));
        }
        let ns = NetnsSpec(lab.receiver.clone());
        lab.sink = Some(Sink::start(&ns, SocketAddr::new(a.receiver.into(), 0))?);
        Ok(lab)
    }

    /// A veth pair named `dev` on both sides, from namespace `a` to `b`.
    fn veth(
        &mut self,
        a: &str,
        b: &str,
        dev: &str,
        a_addr: Ipv4Addr,
        b_addr: Ipv4Addr,
    ) -> Result<(), LabError> {
        run("ip", &["-n", a, "link", "add", dev, "type", "veth", "peer", "name", dev, "netns", b])?;
        for (ns, addr) in [(a, a_addr), (b, b_addr)] {
            run("ip", &["-n", ns, "addr", "add", &format!("{addr}/30"), "dev", dev])?;
            run("ip", &["-n", ns, "link", "set", dev, "up"])?;
        }
        if self.path.is_empty() {
            self.path = "veth, router with tbf".into();
        }
        Ok(())
    }

    /// The whole round trip's delay on the router's return path (towards the sender), with netem
    /// if the kernel has it: on the router, not the sender, where TCP Small Queues would cap it.
    /// `Ok(false)` when there is no netem.
    fn netem(&mut self, m: &str, rtt: Duration) -> Result<bool, LabError> {
        let delay = format!("{}us", rtt.as_micros());
        match run(
            "tc",
            &["-n", m, "qdisc", "add", "dev", "wan0", "root", "netem", "delay", &delay, "limit", "100000"],
        ) {
            Ok(()) => {
                self.path = format!("veth, netem {} ms on the return path, router with tbf", rtt.as_millis());
                self.return_delay = rtt;
                Ok(true)
            }
            Err(LabError::Command { stderr, .. })
                if stderr.contains("unknown")
                    || stderr.contains("No such file")
                    || stderr.contains("not supported") =>
            {
                Ok(false)
            }
            Err(e) => Err(e),
        }
    }

    /// The sender's uplink through a userspace delay line: TUN "wan0" in the sender and the router.
    fn delay_line(&mut self, s: &str, m: &str, one_way: Duration) -> Result<(), LabError> {
        let router = Path::new("/run/netns").join(m);
        self.line = Some(DelayLine::start(&self.sender, "wan0", &router, "wan0", one_way)?);
        self.return_delay = one_way;
        let (sender, up) = (self.addrs.sender, self.addrs.router_up);
        for (ns, a, b) in [(s, sender, up), (m, up, sender)] {
            run("ip", &["-n", ns, "addr", "add", &a.to_string(), "peer", &b.to_string(), "dev", "wan0"])?;
            run("ip", &["-n", ns, "link", "set", "wan0", "up"])?;
        }
        let ms = one_way.as_secs_f64() * 1000.0;
        let ms = if ms.fract() == 0.0 { format!("{ms:.0}") } else { format!("{ms:.1}") };
        self.path = format!("userspace delay line ({ms} ms each way; no netem), router with tbf");
        Ok(())
    }

    fn shape(&mut self, router: &str, dev: &str, cfg: &LabConfig) -> Result<(), LabError> {
        let rate = format!("{}bit", cfg.rate_bit_per_sec);
        let (burst, limit) = (cfg.burst_bytes.to_string(), cfg.queue_bytes.to_string());
        run(
            "tc",
            &[
                "-n", router, "qdisc", "add", "dev", dev, "root", "tbf", "rate", &rate, "burst", &burst,
                "limit", &limit,
            ],
        )?;
        self.path.push_str(&format!(
            ", {:.0} Mbit/s, {} KB queue",
            cfg.rate_bit_per_sec as f64 / 1e6,
            cfg.queue_bytes / 1000
        ));
        if cfg.loss > 0.0 || cfg.ce_mark > 0.0 {
            let fx = loss::Effects { loss: cfg.loss, ce: cfg.ce_mark, ..Default::default() };
            loss::attach(&NetnsSpec(Path::new("/run/netns").join(router)), dev, fx)?;
        }
        if cfg.loss > 0.0 {
            self.path.push_str(&format!(", {:.1}% loss (tc eBPF)", cfg.loss * 100.0));
        }
        if cfg.ce_mark > 0.0 {
            self.path.push_str(&format!(
                ", {:.1}% of ECN-capable packets marked CE (tc eBPF)",
                cfg.ce_mark * 100.0
            ));
        }
        Ok(())
    }

    /// The delay on the return path (receiver to sender): the delay line's one way, or netem's
    /// whole round trip.
    pub fn return_delay(&self) -> Duration {
        self.return_delay
    }

    /// Packets the delay line dropped because it held too many (0 without one).
    pub fn line_dropped(&self) -> u64 {
        self.line.as_ref().map_or(0, DelayLine::dropped)
    }

    /// What the path was set to do, as the meter's figures are judged against it.
    pub fn target(&self) -> path_check::Target {
        path_check::Target { one_way: self.return_delay, rate_bits_per_sec: self.rate_bits_per_sec }
    }

    /// A description of the path, for reports.
    pub fn path_description(&self) -> String {
        self.path.clone()
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn sender_netns(&self) -> &Path {
        &self.sender
    }

    pub fn receiver_netns(&self) -> &Path {
        &self.receiver
    }

    /// The `ip netns` name of the sender namespace.
    pub fn sender_name(&self) -> &str {
        self.created.first().map_or("", String::as_str)
    }

    pub fn receiver_name(&self) -> &str {
        self.created.get(1).map_or("", String::as_str)
    }

    /// The `ip netns` name of the router namespace, where the bottleneck queue is.
    pub fn router_name(&self) -> &str {
        self.created.get(2).map_or("", String::as_str)
    }

    pub fn sender_addr(&self) -> IpAddr {
        self.addrs.sender.into()
    }

    pub fn receiver_addr(&self) -> IpAddr {
        self.addrs.receiver.into()
    }

    /// Where the receiver's sink listens (it reads and discards what comes).
    pub fn sink_addr(&self) -> Result<SocketAddr, LabError> {
        self.sink
            .as_ref()
            .map(Sink::addr)
            .ok_or_else(|| LabError::Unsupported("the lab has no receiver".into()))
    }

    /// Starts a bulk flow from the sender to the receiver with congestion control `cc`. It runs
    /// until stopped or until the lab drops.
    pub fn start_flow(&mut self, cc: &str) -> Result<Flow, LabError> {
        let to = self.sink_addr()?;
        self.flows.start(&NetnsSpec(self.sender.clone()), to, cc)
    }

    pub fn stop_flow(&mut self, flow: &Flow) {
        self.flows.stop(flow.id);
    }

    /// `n` short connections (connect, send 4 KB, close), one after another. Returns how many
    /// completed; bounded by a minute in all.
    pub fn short_flows(&self, cc: &str, n: usize) -> Result<usize, LabError> {
        let to = self.sink_addr()?;
        flows::short(&NetnsSpec(self.sender.clone()), to, cc, n)
    }

    /// Starts request/response traffic on one keep-alive connection: a server in the sender
    /// namespace with congestion control `cc`, answering a client in the receiver namespace
    /// (the responses cross the bottleneck). It runs until the handle drops, which must be
    /// before the lab.
    pub fn start_exchange(
        &self,
        cc: &str,
        cfg: exchange::ExchangeConfig,
    ) -> Result<exchange::Exchange, LabError> {
        let server = SocketAddr::new(self.sender_addr(), 0);
        let (s, r) = (NetnsSpec(self.sender.clone()), NetnsSpec(self.receiver.clone()));
        exchange::Exchange::start(&s, server, &r, cc, cfg)
    }

    /// Runs `f` on a thread inside the sender namespace (to run `ss` there, say).
    pub fn run_in_sender<T: Send + 'static>(
        &self,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, LabError> {
        run_in(&NetnsSpec(self.sender.clone()), f).map_err(|e| LabError::Collect(e.to_string()))
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        self.flows.stop_all();
        self.sink = None;
        self.line = None;
        for ns in self.created.drain(..).rev() {
            let _ = Command::new("ip").args(["netns", "del", &ns]).output();
        }
    }
}
