//! Loads a BPF object file and attaches its programs until stdin closes. `bench/bpf.sh` and
//! `bench/edge.sh` use it for the floor of their ns-per-run figures: empty programs on the same
//! hooks. It also runs a candidate build of bbrtop's own object (`bench/edge.sh`'s
//! EDGE_OBJECTS) roughly as bbrtop does at its default interval: its ring buffers are read every
//! 100 ms (bbrtop's drain thread: every 50 ms while events come) and a `read_epoch` array is
//! bumped each second, so that the programs' cost is the one they have under bbrtop (a full ring
//! buffer would make every event a cheap failure). The socket walk's records
//! are left in their map, not taken.
//!
//!     cargo run --release --example bpf_floor -- OBJECT.o

use anyhow::Context;
use libbpf_rs::{MapCore, MapFlags, MapType};
use std::io::{Read, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

fn main() -> anyhow::Result<()> {
    let path = std::env::args().nth(1).context("usage: bpf_floor OBJECT.o")?;
    let obj = libbpf_rs::ObjectBuilder::default()
        .open_file(&path)
        .with_context(|| format!("opening {path}"))?
        .load()
        .with_context(|| format!("loading {path}"))?;
    let links = obj.progs_mut().map(|p| p.attach()).collect::<Result<Vec<_>, _>>().context("attaching")?;
    let maps: Vec<_> = obj.maps().collect();
    let mut rings = libbpf_rs::RingBufferBuilder::new();
    let mut any = false;
    for m in maps.iter().filter(|m| m.map_type() == MapType::RingBuf) {
        rings.add(m, |_: &[u8]| 0).context("draining a ring buffer")?;
        any = true;
    }
    let rings = if any { Some(rings.build().context("draining the ring buffers")?) } else { None };
    let epoch = maps.iter().find(|m| m.name() == "read_epoch");
    println!("ready");
    std::io::stdout().flush()?;

    static DONE: AtomicBool = AtomicBool::new(false);
    std::thread::spawn(|| {
        let _ = std::io::stdin().read_to_end(&mut Vec::new());
        DONE.store(true, Ordering::Relaxed);
    });
    // Ticks of 100 ms, so that a closed stdin ends it promptly; a poll every tenth.
    for tick in 1u64.. {
        if DONE.load(Ordering::Relaxed) {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
        // Drained in batches, as bbrtop's drain thread does: a reader that consumed each record
        // as it came would make each submit wake it, a cost bbrtop's programs do not have.
        if let Some(r) = &rings {
            r.consume().context("reading the ring buffers")?;
        }
        if tick % 10 != 0 {
            continue;
        }
        if let Some(m) = epoch {
            let key = 0u32.to_ne_bytes();
            let now =
                m.lookup(&key, MapFlags::ANY)?.and_then(|v| v.try_into().ok()).map_or(0, u32::from_ne_bytes);
            m.update(&key, &(now + 1).to_ne_bytes(), MapFlags::ANY)?;
        }
    }
    drop(links);
    Ok(())
}
