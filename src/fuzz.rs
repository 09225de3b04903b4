//! Fuzzing of what the binary parses itself (see `bbrtop_core::testing::fuzz`): the exporter's
//! web configuration, and the recording reader on chunks whose files are mutated, cut short or
//! another chunk's (a fortieth as many inputs: each is a chunk written and read back).

use bbrtop_core::testing::fuzz::{cases, fuzz, fuzz_n};

#[test]
#[ignore = "fuzzing: scripts/test.sh runs it, see bbrtop_core::testing::fuzz"]
fn fuzz_web_configuration() {
    use crate::export::web_config::WebConfig;
    let corpus: Vec<Vec<u8>> = [
        "basic_auth_users:\n  prom: '$2b$04$abcdefghijklmnopqrstuuJZbTvV2pDT5yQMbyGgDy4XdNVcsvTg2'\n",
        "tls_server_config: {cert_file: c.pem, key_file: k.pem, min_version: TLS13}\n",
    ]
    .iter()
    .map(|s| s.as_bytes().to_vec())
    .collect();
    fuzz("web configuration", corpus, |b| {
        let _ = WebConfig::parse(&String::from_utf8_lossy(b));
    });
}

/// The recording reader on damaged chunks: a chunk's sockets or polls file replaced by a mutated
/// copy of either (bytes overwritten, cut short, or another chunk's file whole), beside two good
/// chunks. Opening and reading every poll must never panic, and the good chunks must stay.
#[test]
#[ignore = "fuzzing: scripts/test.sh runs it, see bbrtop_core::testing::fuzz"]
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
