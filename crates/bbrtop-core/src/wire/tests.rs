//! The parser over byte fixtures in the kernel's layouts (built by hand in `fixtures`), and a
//! property test.

use super::fixtures::*;
use super::*;
use crate::model::TcpInfo;
use proptest::prelude::*;

fn parse_all(bufs: &[Vec<u8>]) -> (Result<Progress, WireError>, Dump) {
    let mut p = DumpParser::new();
    let mut last = Ok(Progress::More);
    for b in bufs {
        last = p.feed(b);
        if !matches!(last, Ok(Progress::More)) {
            break;
        }
    }
    (last, p.finish())
}

#[test]
fn ipv4_socket_with_bbr_info() {
    let buf = [v4(0x1_0000_0002, &full_attrs(1234)), done(2)].concat();
    let (res, d) = parse_all(&[buf]);
    assert_eq!(res, Ok(Progress::Done { interrupted: false }));
    assert_eq!(d.sockets.len(), 1);
    let s = &d.sockets[0];
    assert_eq!(s.cookie, 0x1_0000_0002);
    assert_eq!(s.local, "10.0.0.1:40000".parse().unwrap());
    assert_eq!(s.peer, "10.0.0.2:5201".parse().unwrap());
    assert_eq!(s.state, TcpState::Established);
    assert_eq!((s.uid, s.inode), (1000, 4242));
    assert_eq!(s.cc.as_deref(), Some("bbr"));
    assert_eq!(s.tcp_info.srtt_us(), Some(1234));
    assert_eq!(s.tcp_info.snd_cwnd_segs(), Some(10));
    let b = s.bbr.unwrap();
    assert_eq!(
        (b.bw_bytes_per_sec, b.min_rtt_us, b.pacing_gain, b.cwnd_gain),
        (2_500_000, 40_000, 1.25, 2.0)
    );
    assert_eq!((d.stats.info_short, d.stats.info_long), (0, 0));
}

#[test]
fn ipv6_socket() {
    let m = sock_msg(
        AF_INET6,
        "2001:db8::1".parse().unwrap(),
        443,
        "2001:db8::2".parse().unwrap(),
        50000,
        9,
        &[nla(INET_DIAG_CONG, b"cubic\0")],
    );
    let (_, d) = parse_all(&[[m, done(2)].concat()]);
    assert_eq!(d.sockets[0].local, "[2001:db8::1]:443".parse().unwrap());
    assert_eq!(d.sockets[0].peer, "[2001:db8::2]:50000".parse().unwrap());
    assert_eq!(d.sockets[0].cc.as_deref(), Some("cubic"));
    assert_eq!(d.sockets[0].bbr, None);
    assert_eq!(d.sockets[0].tcp_info, TcpInfo::default(), "no INFO attribute: every field unknown");
}

#[test]
fn several_messages_in_one_buffer_and_duplicates() {
    let buf = [v4(1, &full_attrs(1)), v4(2, &full_attrs(2)), v4(1, &full_attrs(3)), done(2)].concat();
    let (_, d) = parse_all(&[buf]);
    assert_eq!(d.sockets.iter().map(|s| s.cookie).collect::<Vec<_>>(), vec![1, 2]);
    assert_eq!(d.stats.duplicates, 1);
    assert_eq!(d.stats.messages, 4);
}

#[test]
fn dump_split_over_buffers() {
    let bufs = [v4(1, &full_attrs(1)), [v4(2, &full_attrs(2)), v4(3, &[])].concat(), done(2)];
    let mut p = DumpParser::new();
    assert_eq!(p.feed(&bufs[0]), Ok(Progress::More));
    assert_eq!(p.feed(&bufs[1]), Ok(Progress::More));
    assert_eq!(p.feed(&bufs[2]), Ok(Progress::Done { interrupted: false }));
    assert_eq!(p.finish().sockets.len(), 3);
}

#[test]
fn kernel_error() {
    let mut payload = (-libc::ENOENT).to_ne_bytes().to_vec();
    payload.extend_from_slice(&[0u8; 16]);
    let (res, _) = parse_all(&[nlmsg(NLMSG_ERROR, 0, &payload)]);
    assert_eq!(res, Err(WireError::Kernel { errno: libc::ENOENT }));
    assert!(res.unwrap_err().to_string().contains("No such file"));
    // An ack (error 0) is not an error.
    let (res, _) = parse_all(&[[nlmsg(NLMSG_ERROR, 0, &[0u8; 20]), done(0)].concat()]);
    assert_eq!(res, Ok(Progress::Done { interrupted: false }));
}

#[test]
fn dump_intr_is_reported() {
    let intr = NLM_F_DUMP_INTR | 2;
    let mut m = v4(1, &[]);
    m[6..8].copy_from_slice(&intr.to_ne_bytes());
    let (res, d) = parse_all(&[[m, done(2)].concat()]);
    assert_eq!(res, Ok(Progress::Done { interrupted: true }));
    assert_eq!(d.sockets.len(), 1);
}

/// An interrupted family is read again from its mark: one dump holds both families, each
/// socket once, and the retry's sockets are not counted as duplicates.
#[test]
fn rewind_forgets_an_interrupted_family() {
    let intr = NLM_F_DUMP_INTR | 2;
    let mut p = DumpParser::new();
    p.begin(4);
    assert_eq!(p.feed(&[v4(1, &[]), done(2)].concat()), Ok(Progress::Done { interrupted: false }));
    let mark = p.begin(4);
    let mut m = v4(2, &[]);
    m[6..8].copy_from_slice(&intr.to_ne_bytes());
    assert_eq!(p.feed(&[m, v4(3, &[]), done(2)].concat()), Ok(Progress::Done { interrupted: true }));
    p.rewind(mark);
    let mark = p.begin(4);
    assert_eq!(
        p.feed(&[v4(2, &[]), v4(3, &[]), done(2)].concat()),
        Ok(Progress::Done { interrupted: false })
    );
    assert_eq!(p.since(mark), 2);
    let d = p.finish();
    assert_eq!(d.sockets.iter().map(|r| r.cookie).collect::<Vec<_>>(), vec![1, 2, 3]);
    assert_eq!(d.stats.duplicates, 0);
    assert!(p.finish().sockets.is_empty(), "finish starts afresh");
}

/// A streaming parser drops what it handed over, and a rewind past dropped records forgets
/// them too: the re-read's sockets come again from the mark, none counted a duplicate.
#[test]
fn a_streaming_parser_hands_each_record_over_and_keeps_none() {
    let intr = NLM_F_DUMP_INTR | 2;
    let mut p = DumpParser::new();
    p.stream(true);
    let mut handed = Vec::new();
    let mut take = |p: &mut DumpParser| {
        let (from, fresh) = p.fresh();
        handed.extend(fresh.iter().enumerate().map(|(i, r)| (from + i, r.cookie)));
    };
    p.begin(0);
    assert_eq!(p.feed(&[v4(1, &[]), done(2)].concat()), Ok(Progress::Done { interrupted: false }));
    take(&mut p);
    let mark = p.begin(0);
    assert_eq!(p.feed(&v4(2, &[])), Ok(Progress::More));
    take(&mut p);
    let mut m = v4(3, &[]);
    m[6..8].copy_from_slice(&intr.to_ne_bytes());
    assert_eq!(p.feed(&[m, done(2)].concat()), Ok(Progress::Done { interrupted: true }));
    take(&mut p);
    assert_eq!(p.records().len(), 1, "only the last buffer's record is held");
    p.rewind(mark);
    let mark = p.begin(0);
    assert_eq!(
        p.feed(&[v4(3, &[]), v4(2, &[]), done(2)].concat()),
        Ok(Progress::Done { interrupted: false })
    );
    take(&mut p);
    assert_eq!(p.since(mark), 2);
    assert_eq!(handed, [(0, 1), (1, 2), (2, 3), (1, 3), (2, 2)]);
    let d = p.finish();
    assert!(d.sockets.is_empty() && p.records().is_empty());
    assert_eq!(d.stats.duplicates, 0);
}

#[test]
fn truncated_message_is_an_error() {
    let m = v4(1, &full_attrs(1));
    for cut in [3, 15, 40, 100, m.len() - 1] {
        let (res, _) = parse_all(&[m[..cut].to_vec()]);
        assert!(matches!(res, Err(WireError::Malformed(_))), "cut at {cut}: {res:?}");
    }
    // A message whose length says less than its header.
    let mut bad = v4(1, &[]);
    bad[0..4].copy_from_slice(&8u32.to_ne_bytes());
    assert!(matches!(parse_all(&[bad]).0, Err(WireError::Malformed(_))));
}

#[test]
fn short_and_long_tcp_info() {
    let short = v4(1, &[nla(INET_DIAG_INFO, &tcp_info(104, 500))]);
    let long = v4(2, &[nla(INET_DIAG_INFO, &tcp_info(300, 600))]);
    let (_, d) = parse_all(&[[short, long, done(2)].concat()]);
    assert_eq!((d.stats.info_short, d.stats.info_long), (1, 1));
    let s = &d.sockets[0].tcp_info;
    assert_eq!(s.srtt_us(), Some(500));
    assert_eq!(s.pacing_rate_bytes_per_sec(), None, "past a 104-byte tcp_info: unknown");
    assert_eq!(d.sockets[1].tcp_info.pacing_rate_bytes_per_sec(), Some(2_500_000));
}

#[test]
fn unknown_attribute_is_skipped() {
    let attrs =
        vec![nla(200, b"future"), nla(INET_DIAG_CONG, b"bbr\0"), nla(15 /* MARK */, &7u32.to_ne_bytes())];
    let (_, d) = parse_all(&[[v4(1, &attrs), done(2)].concat()]);
    assert_eq!(d.sockets[0].cc.as_deref(), Some("bbr"));
}

#[test]
fn ends_dump_reads_headers_only() {
    assert!(!ends_dump(&v4(1, &[])));
    assert!(ends_dump(&[v4(1, &[]), done(2)].concat()));
    assert!(ends_dump(&[0u8; 16]), "a zero length ends the walk");
    assert!(!ends_dump(&[]));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, .. ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
        let _ = DumpParser::new().feed(&bytes);
        let _ = ends_dump(&bytes);
        let _ = parse_socket(&bytes, &mut DumpStats::default(), &mut CcNames::default(), 0);
    }

    /// Any bytes in the cc info slot, under any cc name, whichever attribute carries them.
    #[test]
    fn arbitrary_cc_info_never_panics(
        info in proptest::collection::vec(any::<u8>(), 0..100),
        cc in proptest::sample::select(vec![&b"bbr\0"[..], b"bbr2\0", b"dctcp\0", b"cubic\0"]),
        kind in proptest::sample::select(vec![INET_DIAG_BBRINFO, INET_DIAG_DCTCPINFO]),
    ) {
        let attrs = vec![nla(kind, &info), nla(INET_DIAG_CONG, cc)];
        let _ = DumpParser::new().feed(&[v4(1, &attrs), done(2)].concat());
    }

    #[test]
    fn mutated_valid_dumps_never_panic(idx in 0usize..400, val in any::<u8>(), cut in 0usize..400) {
        let mut b = [v4(1, &full_attrs(7)), v4(2, &full_attrs(8)), done(2)].concat();
        let i = idx % b.len();
        b[i] = val;
        b.truncate(cut.max(1).min(b.len()));
        let _ = DumpParser::new().feed(&b);
    }
}

/// The eBPF RTT window comes as a socket-local storage value, two attributes deep.
#[test]
fn bpf_storage_window() {
    // The storage value starts with two windows, by the read epoch's parity: epoch 0's is read.
    let mut window: Vec<u8> = [0u32, 4, 900, 800, 1100, 0].iter().flat_map(|v| v.to_ne_bytes()).collect();
    window.resize(2 * crate::model::RttWindow::LEN, 0);
    let storage = nla(1, &[nla(2, &7u32.to_ne_bytes()), nla(3, &window)].concat());
    let (res, d) = parse_all(&[[v4(1, &[nla(20, &storage)]), done(2)].concat()]);
    assert_eq!(res, Ok(Progress::Done { interrupted: false }));
    let w = d.sockets[0].kernel_rtt.expect("window");
    assert_eq!((w.samples, w.last_srtt_us, w.min_srtt_us, w.max_srtt_us), (4, 900, Some(800), Some(1100)));
    // A storage attribute without a value, or none at all: no window.
    let (_, d) = parse_all(&[[v4(1, &[nla(20, &nla(1, &nla(2, &7u32.to_ne_bytes())))]), done(2)].concat()]);
    assert_eq!(d.sockets[0].kernel_rtt, None);
    let (_, d) = parse_all(&[[v4(1, &[]), done(2)].concat()]);
    assert_eq!(d.sockets[0].kernel_rtt, None);
}

/// A 52-byte BBR attribute with cc "bbr" is v3's layout; the cc name may come after it.
#[test]
fn bbr_v3_attribute() {
    use crate::model::BbrVersion;
    use crate::model::bbr::fixtures;
    let info = nla(INET_DIAG_BBRINFO, &fixtures::ext(3, 2, 7));
    let attrs = vec![info, nla(INET_DIAG_CONG, b"bbr\0")];
    let (res, d) = parse_all(&[[v4(1, &attrs), done(2)].concat()]);
    assert_eq!(res, Ok(Progress::Done { interrupted: false }));
    let b = d.sockets[0].bbr.expect("bbr info");
    assert_eq!((b.version, b.bw_bytes_per_sec, b.min_rtt_us), (BbrVersion::V3, 2_500_000, 40_000));
    let e = b.ext.expect("v3's fields");
    assert_eq!((e.kernel_phase, e.bw_hi_bytes_per_sec, e.inflight_hi_pkts), (7, Some(3_000_000), Some(120)));
    // The same bytes from a "bbr2" socket are v2alpha's.
    let attrs = vec![nla(INET_DIAG_CONG, b"bbr2\0"), nla(INET_DIAG_BBRINFO, &fixtures::ext(2, 2, 7))];
    let (_, d) = parse_all(&[[v4(1, &attrs), done(2)].concat()]);
    assert_eq!(d.sockets[0].bbr.map(|b| b.version), Some(BbrVersion::V2Alpha));
}

/// DCTCP answers the same request with its own struct: decoded as DCTCP's, never as BBR's.
#[test]
fn dctcp_attribute_is_not_bbr() {
    let mut v = [1u16, 0].iter().flat_map(|v| v.to_ne_bytes()).collect::<Vec<u8>>();
    v.extend([1024u32, 100, 200, 0, 0].iter().flat_map(|v| v.to_ne_bytes()));
    for kind in [INET_DIAG_DCTCPINFO, INET_DIAG_BBRINFO] {
        let attrs = vec![nla(INET_DIAG_CONG, b"dctcp\0"), nla(kind, &v)];
        let (_, d) = parse_all(&[[v4(1, &attrs), done(2)].concat()]);
        let s = &d.sockets[0];
        assert_eq!(s.bbr, None, "attribute {kind}");
        assert_eq!(
            s.dctcp.map(|i| (i.enabled, i.alpha, i.ab_ecn_bytes, i.ab_tot_bytes)),
            Some((true, 1024, 100, 200))
        );
    }
    // Another cc's bytes in the BBR slot are not read as BBR's.
    let attrs = vec![nla(INET_DIAG_CONG, b"cubic\0"), nla(INET_DIAG_BBRINFO, &bbr_info())];
    let (_, d) = parse_all(&[[v4(1, &attrs), done(2)].concat()]);
    assert_eq!((d.sockets[0].bbr, d.sockets[0].dctcp), (None, None));
}
