//! `bbrtop check`: say which BBR the host runs, load and attach the eBPF programs, make one
//! netlink dump, one ring-buffer poll and one read of the socket walk (which `watch`, `export`
//! and the TUI use by default), print what attached and what did not. Exit 0 when everything
//! attached and read, else 1.

use super::Failure;
use super::args::SourceArgs;
use bbrtop_collect::InetDiag;
use bbrtop_core::model::StateSet;
use clap::Args;

#[derive(Args, Debug)]
pub struct CheckArgs {
    #[command(flatten)]
    pub source: SourceArgs,
}

pub fn run(a: CheckArgs) -> Result<u8, Failure> {
    let mut ok = true;
    println!("host: {}", bbrtop_collect::host::host_bbr());
    match InetDiag::open(a.source.netns.as_ref(), StateSet::default_filter()).and_then(|mut d| d.dump()) {
        Ok(d) => println!("netlink: ok, {} sockets", d.sockets.len()),
        Err(e) => {
            println!("netlink: FAILED: {e}");
            ok = false;
        }
    }
    ok &= bpf();
    Ok(if ok { 0 } else { 1 })
}

#[cfg(feature = "bpf")]
fn bpf() -> bool {
    use bbrtop_collect::bpf::{self, loader};
    use std::path::Path;
    if let Some(reason) =
        bpf::unavailable(bbrtop_collect::caps::CapSet::effective(), Path::new(bpf::BTF_PATH))
    {
        println!("bpf: {reason}");
        return false;
    }
    let cfg = loader::LoadConfig {
        walk: true,
        ..loader::LoadConfig::from_rule(&bbrtop_core::rule::RuleConfig::default())
    };
    let l = match loader::load(&cfg) {
        Ok(l) => l,
        Err(e) => {
            println!("bpf: {e}");
            return false;
        }
    };
    for (name, _) in &l.links {
        let id = l.prog_ids.iter().find(|(n, _)| n == name).map_or(0, |(_, id)| *id);
        println!("bpf: attached {name} (prog id {id})");
    }
    for (name, e) in &l.failed {
        println!("bpf: NOT attached {name}: {e}");
    }
    if let Some(s) = &l.struct_bbr {
        println!("bpf: {s}: reads {}", s.fields.join(", "));
    }
    for limit in l.status().limits {
        println!("bpf: {limit}");
    }
    let polled = l.consume();
    let events = l.inbox.lock().map(|v| v.len()).unwrap_or(0);
    match &polled {
        Ok(()) => println!("bpf: ring buffer ok, {events} events, {} lost", l.lost_total()),
        Err(e) => println!("bpf: ring buffer FAILED: {e}"),
    }
    let walked = walk(&l);
    l.failed.is_empty() && polled.is_ok() && walked
}

/// One read of the socket walk, as the long-running commands make each poll.
#[cfg(feature = "bpf")]
fn walk(l: &bbrtop_collect::bpf::loader::Loaded) -> bool {
    if bbrtop_collect::bpf::walk::kernel_config().is_none() {
        println!(
            "walk: off: the kernel's config (/proc/config.gz or /boot/config-RELEASE) is not readable, and \
             the walk needs its HZ; netlink reads one namespace instead"
        );
        return false;
    }
    let resolver = bbrtop_collect::attrib::Resolver::new(None);
    match l.walker(StateSet::default_filter(), resolver).and_then(|mut w| w.walk()) {
        Ok(read) => {
            println!(
                "walk: ok, {} sockets moved since the programs attached, in every namespace ({} records dropped)",
                read.sockets.len(),
                read.stats.dropped_total
            );
            true
        }
        Err(e) => {
            println!("walk: FAILED: {e}");
            false
        }
    }
}

#[cfg(not(feature = "bpf"))]
fn bpf() -> bool {
    println!("bpf: eBPF off: built without the `bpf` feature (netlink-only)");
    false
}
