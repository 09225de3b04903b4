//! What an idle socket costs the engine and its snapshots, history included: 10,000 real
//! loopback sockets dumped over netlink, then polls in which none of them moves (the walk reads
//! nothing). Every byte the engine and its last snapshot hold is counted by this binary's
//! allocator, each allocation rounded as glibc's malloc rounds it (a 16-byte multiple with its
//! 8-byte header, 32 at least), so the figure is what the heap holds, not what was asked for.
//! The bound is the issue's: 600 bytes per idle socket.

mod support;

use bbrtop_collect::InetDiag;
use bbrtop_core::model::StateSet;
use bbrtop_core::seam::{DumpSink, Now, Walk};
use bbrtop_engine::{Engine, EngineConfig};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

/// The heap's bytes in use, as malloc would hold them.
struct Counting;

static HELD: AtomicI64 = AtomicI64::new(0);

fn chunk(size: usize) -> i64 {
    ((size + 8).div_ceil(16) * 16).max(32) as i64
}

// SAFETY: every call is passed on to the system allocator unchanged; only a count is kept.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        HELD.fetch_add(chunk(l.size()), Ordering::Relaxed);
        // SAFETY: the caller's layout, as GlobalAlloc::alloc requires.
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        HELD.fetch_sub(chunk(l.size()), Ordering::Relaxed);
        // SAFETY: `p` came from `alloc` with this layout.
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        HELD.fetch_add(chunk(new) - chunk(l.size()), Ordering::Relaxed);
        // SAFETY: as GlobalAlloc::realloc requires, passed on.
        unsafe { System.realloc(p, l, new) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

#[test]
#[ignore = "a helper process of idle_sockets_cost_at_most_600_bytes_each"]
fn holder() {
    support::holder::hold_if_asked();
}

/// Bytes per socket the engine and its snapshot hold after a dump and `quiet` seconds of polls
/// in which nothing moves; with `walk`, the engine is told the walk reads the sockets that move
/// (as `bbrtop export` runs by default).
fn held_per_socket(walk: bool, quiet: u64) -> i64 {
    let mut diag = InetDiag::open(None, StateSet::default_filter()).expect("netlink");
    let t0 = Now::system();
    let before = HELD.load(Ordering::Relaxed);
    let mut engine = Engine::new(EngineConfig::default());
    if walk {
        engine.set_roles("seeds".into(), Some("reads what moves".into()));
    }
    diag.dump_into(&mut engine, t0).expect("a dump");
    drop(diag);
    let mut snap = engine.tick(t0);
    for s in 1..=quiet {
        let now = t0.after(Duration::from_secs(s));
        let stats = bbrtop_core::wire::walk::WalkStats::default();
        engine.walked(Ok(Walk {
            sockets: Vec::new(),
            gone: Vec::new(),
            stats,
            duration: Duration::ZERO,
            now,
        }));
        snap = engine.tick(now);
    }
    let n = snap.sockets.len() as i64;
    assert!(n >= 10_000, "{n} sockets seen");
    (HELD.load(Ordering::Relaxed) - before) / n
}

#[test]
fn idle_sockets_cost_at_most_600_bytes_each() {
    let _holders = support::holder::Holder::many(10_000);
    let (fresh, quiet) = (held_per_socket(false, 0), held_per_socket(false, 15));
    let seeded = held_per_socket(true, 0);
    eprintln!(
        "per idle socket: {fresh} bytes as first read, {quiet} after 15 s quiet, {seeded} when seeded beside the walk"
    );
    assert!(quiet <= 600, "{quiet} bytes per idle socket, quiet");
    assert!(seeded <= 600, "{seeded} bytes per idle socket, seeded beside the walk");
}
