//! Parser fuzzing of the ring buffer's events (see `bbrtop_core::testing::fuzz`).

use bbrtop_core::testing::fuzz::fuzz;

#[test]
#[ignore = "fuzzing: scripts/test.sh runs it, see bbrtop_core::testing::fuzz"]
fn fuzz_bpf_events() {
    use crate::bpf::event::{self, CLOSE_LEN, INFL_LEN, PHASE_LEN};
    let record = |kind: u32, len: usize| {
        let mut b = vec![0u8; len];
        b[..4].copy_from_slice(&kind.to_ne_bytes());
        // An IPv4 close with "bbr" as its congestion control.
        b[event::off::close::FAMILY.min(len - 2)] = 2;
        b
    };
    let mut close = record(4, CLOSE_LEN);
    close[event::off::close::CC..event::off::close::CC + 3].copy_from_slice(b"bbr");
    let corpus = vec![record(1, INFL_LEN), record(2, INFL_LEN), record(3, PHASE_LEN), close];
    fuzz("bpf events", corpus, |b| {
        let _ = event::decode(b);
    });
}
