//! Parser fuzzing of this crate's decoders (see [`crate::testing::fuzz`]): the netlink dump,
//! the socket walk's records, the kernel structs, and the configuration texts.

use crate::testing::fuzz::fuzz;

#[test]
#[ignore = "fuzzing: scripts/test.sh runs it, see crate::testing::fuzz"]
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
#[ignore = "fuzzing: scripts/test.sh runs it, see crate::testing::fuzz"]
fn fuzz_kernel_records() {
    let window: Vec<u8> =
        [7u32, 3, 1200, 1000, 1500].iter().flat_map(|v| v.to_ne_bytes()).chain([1, 2, 5, 1]).collect();
    let walked = crate::wire::walk::fixture::Rec::v4(1, "bbr").0.to_vec();
    let bbr: Vec<u8> = [0x10u32, 0x1, 5000, 320, 512].iter().flat_map(|v| v.to_ne_bytes()).collect();
    fuzz("kernel records", vec![window, walked, bbr], |b| {
        let _ = crate::wire::walk::parse([b], 7, u64::MAX, &mut crate::wire::CcNames::default());
        let _ = crate::model::RttWindow::parse(b, 7);
        let _ = crate::model::RttWindow::parse_stored(b, 7);
        let _ = crate::model::BbrInfo::parse(b, Some("bbr"));
        let _ = crate::model::BbrInfo::parse(b, Some("bbr2"));
        let _ = crate::model::DctcpInfo::parse(b);
        let _ = crate::model::MemInfo::parse(b);
    });
}

#[test]
#[ignore = "fuzzing: scripts/test.sh runs it, see crate::testing::fuzz"]
fn fuzz_configuration() {
    let corpus: Vec<Vec<u8>> = [
        "groups:\n  edge-as1: [10.0.0.0/8, \"2001:db8::/32\"]\n  transit: [192.0.2.0/24]\n",
        "cc bbr port 443 10.0.0.0/8 state established",
        "not (cc bbr or lo) and srtt > 100ms || retx >= 1% && dport = :443",
    ]
    .iter()
    .map(|s| s.as_bytes().to_vec())
    .collect();
    fuzz("configuration", corpus, |b| {
        let text = String::from_utf8_lossy(b);
        let _ = crate::peer_groups::PeerGroups::parse(&text);
        let _ = crate::filter::Expr::parse(&text);
    });
}
