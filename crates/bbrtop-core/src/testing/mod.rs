//! Test support, shared by every crate's tests, examples and benches: synthetic socket records
//! (the one builder) and the fuzz harness ([`fuzz`]). Compiled for this crate's unit tests and
//! under the `test-support` feature, which the other crates turn on for their test targets only:
//! a `cargo build` never has it.

pub mod fuzz;

/// MaxMind's published test databases (`testdata/maxmind/`, whose README names their source):
/// AS 15169 at 1.0.0.0/24, GB at 81.2.69.142/31, SE at 89.160.20.112/28, among others.
pub const MAXMIND_ASN_TEST: &[u8] = include_bytes!("../../testdata/maxmind/GeoLite2-ASN-Test.mmdb");
pub const MAXMIND_COUNTRY_TEST: &[u8] = include_bytes!("../../testdata/maxmind/GeoLite2-Country-Test.mmdb");

/// Both test databases, as `--peer-groups.asn.file` and `--peer-groups.country.file` load them.
pub fn maxmind_test_geo() -> crate::geo::Geo {
    use crate::geo::{Db, Geo, Kind};
    Geo {
        asn: Some(Db::new(Kind::Asn, MAXMIND_ASN_TEST.to_vec()).expect("the ASN test database")),
        country: Some(
            Db::new(Kind::Country, MAXMIND_COUNTRY_TEST.to_vec()).expect("the Country test database"),
        ),
    }
}

use crate::model::{BbrInfo, SocketRecord, TcpState};
use std::fmt::Debug;
use std::net::{SocketAddr, ToSocketAddrs};

/// An ESTABLISHED socket from 10.0.0.1:5201 to 10.0.0.2:5201 using `cc`, with no `tcp_info`
/// field known yet: each setter adds one, as a kernel's longer `tcp_info` would.
pub fn record(cookie: u64, cc: &str) -> RecordBuilder {
    let mut r =
        SocketRecord::new(cookie, addr("10.0.0.1:5201"), addr("10.0.0.2:5201"), TcpState::Established);
    r.cc = Some(cc.into());
    RecordBuilder(r)
}

/// An address literal ("10.0.0.1:5201", "[::1]:80") or a `SocketAddr`.
fn addr(a: impl ToSocketAddrs + Debug) -> SocketAddr {
    a.to_socket_addrs().ok().and_then(|mut it| it.next()).unwrap_or_else(|| panic!("not an address: {a:?}"))
}

#[must_use = "a builder does nothing until `build`"]
pub struct RecordBuilder(SocketRecord);

/// Chainable setters named after the `tcp_info` fields they set.
macro_rules! tcp_info_setters {
    ($($name:ident => $set:ident: $ty:ty),* $(,)?) => {$(
        pub fn $name(mut self, v: $ty) -> Self {
            self.0.tcp_info.$set(v);
            self
        }
    )*};
}

impl RecordBuilder {
    pub fn local(mut self, a: impl ToSocketAddrs + Debug) -> Self {
        self.0.local = addr(a);
        self
    }

    pub fn peer(mut self, a: impl ToSocketAddrs + Debug) -> Self {
        self.0.peer = addr(a);
        self
    }

    pub fn inode(mut self, inode: u32) -> Self {
        self.0.inode = inode;
        self
    }

    pub fn netns(mut self, netns: u64) -> Self {
        self.0.netns = Some(netns);
        self
    }

    tcp_info_setters! {
        srtt_us => set_srtt_us: u32,
        min_rtt_us => set_min_rtt_us: u32,
        snd_cwnd_segs => set_snd_cwnd_segs: u32,
        bytes_acked => set_bytes_acked: u64,
        bytes_received => set_bytes_received: u64,
        total_retrans_segs => set_total_retrans_segs: u32,
        bytes_sent => set_bytes_sent: u64,
        bytes_retrans => set_bytes_retrans: u64,
        last_ack_recv_ms => set_last_ack_recv_ms: u32,
        last_data_recv_ms => set_last_data_recv_ms: u32,
        pacing_rate_bytes_per_sec => set_pacing_rate_bytes_per_sec: u64,
        delivery_rate_bytes_per_sec => set_delivery_rate_bytes_per_sec: u64,
        options => set_options: u8,
        delivered_segs => set_delivered_segs: u32,
        delivered_ce_segs => set_delivered_ce_segs: u32,
        unacked_segs => set_unacked_segs: u32,
        app_limited_flags => set_app_limited_flags: u8,
    }

    /// A sender the netlink path's alert rule judges: data in flight, its last delivery-rate
    /// sample not limited by the application.
    pub fn sending(self) -> Self {
        self.unacked_segs(10).app_limited_flags(0)
    }

    /// `tcp_bbr_info`, which the kernel sends for BBR sockets only: a socket using another
    /// congestion control is left without it.
    pub fn bbr(mut self, bw_bytes_per_sec: u64, min_rtt_us: u32, pacing_gain: f64, cwnd_gain: f64) -> Self {
        if self.0.cc.as_deref() == Some("bbr") {
            self.0.bbr = Some(BbrInfo::v1(bw_bytes_per_sec, min_rtt_us, pacing_gain, cwnd_gain));
        }
        self
    }

    pub fn build(self) -> SocketRecord {
        self.0
    }
}

/// A socket whose every catalog value (`crate::columns`) is known: the fixture the tests that
/// hold the catalog's names to the JSON document and the recording use.
pub fn full_view() -> crate::snapshot::SocketView {
    use crate::model::derive::LimitedBy;
    use crate::model::{Origin, Phase, ProbeBwStep, Source};
    use crate::snapshot::{Derived, HistoryView, RecordRef};
    let mut r = record(7, "bbr");
    // Every tcp_info field known (field i is i + 1), so a column of any of them has a value;
    // the ones below are set to values that read well.
    for (i, &(_, off, size)) in crate::model::tcp_info::TCP_INFO_LAYOUT.iter().enumerate() {
        r.0.tcp_info.set_field(off, size, i as u64 + 1);
    }
    let mut r = r
        .inode(4242)
        .srtt_us(30_000)
        .min_rtt_us(20_000)
        .snd_cwnd_segs(40)
        .total_retrans_segs(3)
        .bytes_sent(100_000)
        .bytes_retrans(1_000)
        .pacing_rate_bytes_per_sec(2_500_000)
        .delivery_rate_bytes_per_sec(2_400_000)
        .last_ack_recv_ms(0)
        .bbr(2_450_000, 20_000, 1.25, 2.0)
        .build();
    r.origin = Some(std::sync::Arc::new(Origin { netns_name: Some("blue".into()), ..Origin::default() }));
    let derived = Derived {
        phase: Some(Phase::ProbeBw(ProbeBwStep::Up)),
        phase_source: Some(Source::Inferred),
        baseline_rtt_us: Some(20_000),
        queue_delay_us: Some(10_000),
        inflation_ratio: Some(1.5),
        inflated: true,
        inflated_for_seconds: Some(6.0),
        alert_firing: true,
        limited_by: Some(LimitedBy::Network),
        retrans_ratio: r.tcp_info.retrans_ratio(),
        seen_for_seconds: 60.0,
        ..Derived::default()
    };
    crate::snapshot::SocketView { record: RecordRef::single(r), derived, history: HistoryView::none() }
}
