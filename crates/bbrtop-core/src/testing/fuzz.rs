//! The fuzz harness every crate's parser fuzzing shares: generated inputs (valid ones mutated,
//! and random bytes) fed to a parser that must never panic. Each crate's `fuzz` tests are
//! `#[ignore]`d; `scripts/test.sh` runs 20,000 inputs per parser, and the full run is
//!
//! ```text
//! BBRTOP_FUZZ_CASES=1000000 cargo test --profile fuzz --workspace --lib fuzz -- --ignored --nocapture
//! ```
//!
//! (the `fuzz` profile is release with overflow checks: a plain release build wraps an overflow
//! silently, and the first debug run found one in the close record's delivery rate).

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use std::time::Instant;

pub fn cases() -> u32 {
    std::env::var("BBRTOP_FUZZ_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(20_000)
}

/// Inputs: one of `corpus` with up to eight bytes overwritten and perhaps truncated, or random
/// bytes.
pub fn inputs(corpus: Vec<Vec<u8>>) -> impl Strategy<Value = Vec<u8>> {
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
pub fn fuzz(name: &str, corpus: Vec<Vec<u8>>, parse: impl Fn(&[u8])) {
    fuzz_n(name, cases(), corpus, parse)
}

/// [`fuzz`] on `n` inputs (a target whose input costs many parsers' worth runs fewer). Reports
/// its rate on stderr: a test harness, not the product, so the lint on stderr is off here.
#[allow(clippy::print_stderr)]
pub fn fuzz_n(name: &str, n: u32, corpus: Vec<Vec<u8>>, parse: impl Fn(&[u8])) {
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
