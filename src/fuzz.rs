//! Parser fuzzing at scale: the netlink, BPF-record and configuration parsers each take a stream
//! of generated inputs, valid ones mutated (bytes overwritten, truncated) and random bytes, and
//! must never panic; so must the recording reader, on chunks whose files are mutated, cut short
//! or another chunk's (a fortieth as many inputs: each is a chunk written and read back). Out of the default `cargo test`; `scripts/test.sh` runs 20,000 inputs per
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
fn fuzz(name: &str, corpus: Vec<Vec<u8>>, parse: impl Fn(&[u8])) {
    fuzz_n(name, cases(), corpus, parse)
}

/// [`fuzz`] on `n` inputs.
#[allow(clippy::print_stderr)]
fn fuzz_n(name: &str, n: u32, corpus: Vec<Vec<u8>>, parse: impl Fn(&[u8])) {
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
    use crate::wire::fixtures::{done, full_attrs, v4};
    use crate::wire::{DumpParser, ends_dump};
    let corpus = vec![
        crate::wire::fixtures::mixed_dump(),
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
    let walked = crate::wire::walk::fixture::Rec::v4(1, "bbr").0.to_vec();
    let corpus = vec![record(1, INFL_LEN), record(2, INFL_LEN), record(3, PHASE_LEN), close, window, walked];
    fuzz("bpf records", corpus, |b| {
        let _ = crate::wire::walk::parse([b], 7, u64::MAX, &mut crate::wire::CcNames::default());
        let _ = event::decode(b);
        let _ = crate::model::RttWindow::parse(b, 7);
        let _ = crate::model::BbrInfo::parse(b, Some("bbr"));
        let _ = crate::model::BbrInfo::parse(b, Some("bbr2"));
        let _ = crate::model::DctcpInfo::parse(b);
        let _ = crate::model::MemInfo::parse(b);
    });
}

#[test]
#[ignore = "fuzzing: scripts/test.sh runs it, see the module's comment"]
fn fuzz_configuration() {
    use crate::export::web_config::WebConfig;
    use crate::peer_groups::PeerGroups;
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
        let _ = crate::filter::Filter::parse_words(&text);
    });
}

/// The recording reader on damaged chunks: a chunk's sockets or polls file replaced by a mutated
/// copy of either (bytes overwritten, cut short, or another chunk's file whole), beside two good
/// chunks. Opening and reading every poll must never panic, and the good chunks must stay.
#[test]
#[ignore = "fuzzing: scripts/test.sh runs it, see the module's comment"]
fn fuzz_recordings() {
    use crate::record::Recording;
    use crate::record::tests::{file, three_chunks};
    use crate::record::writer::{POLLS_SUFFIX, SOCKETS_SUFFIX};
    let (dir, stems) = three_chunks();
    let good: Vec<(std::path::PathBuf, Vec<u8>)> = [POLLS_SUFFIX, SOCKETS_SUFFIX]
        .iter()
        .flat_map(|suffix| stems.iter().map(move |s| file(s, suffix)))
        .map(|p| {
            let bytes = std::fs::read(&p).unwrap();
            (p, bytes)
        })
        .collect();
    let corpus: Vec<Vec<u8>> = good.iter().map(|(_, b)| b.clone()).collect();
    let (polls, sockets) = (file(&stems[1], POLLS_SUFFIX), file(&stems[1], SOCKETS_SUFFIX));
    let kept: usize = [&stems[0], &stems[2]]
        .iter()
        .map(|s| Recording::open(&file(s, POLLS_SUFFIX)).unwrap().polls().len())
        .sum();
    // An input here is a chunk written and a recording read back, some 40 parser inputs' worth:
    // a fortieth as many of them.
    fuzz_n("recordings", (cases() / 40).max(1), corpus, |b| {
        for (p, bytes) in &good {
            std::fs::write(p, bytes).unwrap();
        }
        // The first byte picks which of the middle chunk's files the input replaces.
        let target = if b.first().is_some_and(|x| x % 2 == 0) { &polls } else { &sockets };
        std::fs::write(target, b).unwrap();
        let mut rec = Recording::open(dir.path()).expect("the good chunks stay a recording");
        let n = rec.polls().len();
        assert!(n >= kept, "{n} polls: a good chunk was lost");
        let _ = rec.read(0..n);
    });
}
