//! Reading what the eBPF programs send, for the tests that load them through the library.

use bbrtop_collect::bpf::event::{Close, Event};
use bbrtop_collect::bpf::loader::Loaded;
use std::os::unix::fs::MetadataExt;
use std::time::{Duration, Instant};

/// Drains the ring buffer until `done` holds for the events so far (bounded in time).
pub fn collect_until(l: &Loaded, limit: Duration, mut done: impl FnMut(&[Event]) -> bool) -> Vec<Event> {
    let start = Instant::now();
    let mut all = Vec::new();
    loop {
        l.consume().expect("consume");
        let batch = l.take_events();
        all.extend(batch.into_iter().map(|e| e.expect("every kernel event decodes")));
        if done(&all) || start.elapsed() > limit {
            return all;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

pub fn closes(events: &[Event]) -> impl Iterator<Item = &Close> {
    events.iter().filter_map(|e| if let Event::Close(c) = e { Some(&**c) } else { None })
}

pub fn netns_inode(path: &std::path::Path) -> u32 {
    std::fs::metadata(path).expect("netns path").ino() as u32
}
