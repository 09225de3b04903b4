//! Parser fuzzing at scale: the netlink, BPF-record and configuration parsers each take a stream
//! of generated inputs, valid ones mutated (bytes overwritten, truncated) and random bytes, and
//! must never panic. Out of the default `cargo test`; `scripts/test.sh` runs 20,000 inputs per
//! parser, and the full run is
//!
//!     BBRTOP_FUZZ_CASES=1000000 cargo test --profile fuzz --lib fuzz -- --ignored --nocapture
//!
//! (the `fuzz` profile is release with overflow checks: a plain release build wraps an overflow
//! silently, and the first debug run found one in the close record's delivery rate).

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use std::time::Instant;

fn cases() -> u32 {
    std::env::var("BBRTOP_FUZZ_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(20_000)
}

/// Inputs: one of `corpus` with up to eight bytes overwritten and perhaps truncated, or random
/// bytes.
fn inputs(corpus: Vec<Vec<u8>>) -> impl Strategy<Value = Vec<u8>> {
    let n = corpus.len();
    let mutated =
        (0..n, proptest::collection::vec((any::<usize>(), any::<u8>()), 0..8), any::<usize>(), any::<bool>())
            .prop_map(move |(i, edits, cut, truncate)| {
                let mut b = corpus[i].clone();
                for (at, v) in edits {
                    if !b.is_empty() {
                        let len = b.len();
                        b[at % len] = v;
                    }
                }
                if truncate && !b.is_empty() {
                    b.truncate(cut % b.len());
                }
                b
            });
    prop_oneof![4 => mutated, 1 => proptest::collection::vec(any::<u8>(), 0..700)]
}

/// Runs `parse` on `cases()` inputs; a panic fails the test with the smallest input found.
/// Reports its rate on stderr: a test harness, not the product, so the lint on stderr is off here.
#[allow(clippy::print_stderr)]
fn fuzz(name: &str, corpus: Vec<Vec<u8>>, parse: impl Fn(&[u8])) {
    let n = cases();
    let mut runner = TestRunner::new(Config { cases: n, failure_persistence: None, ..Config::default() });
    let start = Instant::now();
    let result = runner.run(&inputs(corpus), |b| {
        parse(&b);
        Ok(())
    });
    let secs = start.elapsed().as_secs_f64();
    eprintln!("fuzz {name}: {n} inputs in {secs:.1} s ({:.0} per second)", f64::from(n) / secs);
    if let Err(e) = result {
        panic!("fuzz {name}: {e}");
    }
}

#[test]
#[ignore = "fuzzing: scripts/test.sh runs it, see the module's comment"]
fn fuzz_netlink_dumps() {
    use bbrtop_core::wire::fixtures::{done, full_attrs, v4};
    use bbrtop_core::wire::{DumpParser, ends_dump};
    let corpus = vec![
        bbrtop_core::wire::fixtures::mixed_dump(),
        [v4(9, &full_attrs(1)), done(0x22)].concat(),
        [v4(9, &[]), done(2)].concat(),
    ];
    fuzz("netlink", corpus, |b| {
        let mut p = DumpParser::new();
        let _ = p.feed(b);
        // The same bytes split across two buffers, as two receives would hand them over.
        let mut p = DumpParser::new();
        let (a, rest) = b.split_at(b.len() / 2);
        let _ = p.feed(a).and_then(|_| p.feed(rest));
        let _ = p.fresh();
        let _ = p.finish();
        let _ = ends_dump(b);
    });
}

#[test]
#[ignore = "fuzzing: scripts/test.sh runs it, see the module's comment"]
fn fuzz_bpf_records() {
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
    let window: Vec<u8> =
        [7u32, 3, 1200, 1000, 1500].iter().flat_map(|v| v.to_ne_bytes()).chain([1, 2, 5, 1]).collect();
    let walked = bbrtop_core::wire::walk::fixture::Rec::v4(1, "bbr").0.to_vec();
    let corpus = vec![record(1, INFL_LEN), record(2, INFL_LEN), record(3, PHASE_LEN), close, window, walked];
    fuzz("bpf records", corpus, |b| {
        let _ = bbrtop_core::wire::walk::parse([b], 7, u64::MAX, &mut bbrtop_core::wire::CcNames::default());
        let _ = event::decode(b);
        let _ = bbrtop_core::model::RttWindow::parse(b, 7);
        let _ = bbrtop_core::model::BbrInfo::parse(b, Some("bbr"));
        let _ = bbrtop_core::model::BbrInfo::parse(b, Some("bbr2"));
        let _ = bbrtop_core::model::DctcpInfo::parse(b);
        let _ = bbrtop_core::model::MemInfo::parse(b);
    });
}

#[test]
#[ignore = "fuzzing: scripts/test.sh runs it, see the module's comment"]
fn fuzz_configuration() {
    use crate::export::web_config::WebConfig;
    use bbrtop_core::peer_groups::PeerGroups;
    let corpus: Vec<Vec<u8>> = [
        "groups:\n  edge-as1: [10.0.0.0/8, \"2001:db8::/32\"]\n  transit: [192.0.2.0/24]\n",
        "basic_auth_users:\n  prom: '$2b$04$abcdefghijklmnopqrstuuJZbTvV2pDT5yQMbyGgDy4XdNVcsvTg2'\n",
        "tls_server_config: {cert_file: c.pem, key_file: k.pem, min_version: TLS13}\n",
        "cc bbr port 443 10.0.0.0/8 state established",
    ]
    .iter()
    .map(|s| s.as_bytes().to_vec())
    .collect();
    fuzz("configuration", corpus, |b| {
        let text = String::from_utf8_lossy(b);
        let _ = PeerGroups::parse(&text);
        let _ = WebConfig::parse(&text);
        let _ = bbrtop_core::filter::Filter::parse_words(&text);
    });
}
