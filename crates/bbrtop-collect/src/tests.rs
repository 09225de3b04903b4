//! The collector over scripted kernel bytes: restarts, failures midway, and what reaches the sink.

use super::InetDiag;
use super::socket::scripted::Scripted;
use bbrtop_core::model::{SocketRecord, StateSet};
use bbrtop_core::seam::Now;
use bbrtop_core::seam::{Aborted, DumpSink};
use bbrtop_core::snapshot::status::{Cause, Health};
use bbrtop_core::wire::Dump;
use bbrtop_core::wire::fixtures::{done, full_attrs, v4};
use bbrtop_engine::{Engine, EngineConfig};
use netlink_packet_core::NLM_F_DUMP_INTR;

const MULTI: u16 = 2;

fn collector(replies: Vec<Vec<Vec<u8>>>) -> InetDiag {
    InetDiag::over(Box::new(Scripted::new(replies)), StateSet::default_filter(), Some(7))
}

/// The IPv4 family interrupted once (sockets 1 and 2 then a flagged DONE), read again in another
/// order with a new socket, and an empty IPv6 family.
fn interrupted_then_whole() -> Vec<Vec<Vec<u8>>> {
    let first = vec![
        [v4(1, &full_attrs(10_000)), v4(2, &full_attrs(10_000))].concat(),
        done(NLM_F_DUMP_INTR | MULTI),
    ];
    let again = vec![
        [v4(3, &full_attrs(13_000)), v4(1, &full_attrs(11_000)), v4(2, &full_attrs(12_000)), done(MULTI)]
            .concat(),
    ];
    vec![first, again, vec![done(MULTI)]]
}

/// Where the sink last saw each cookie, and how it ended.
#[derive(Default)]
struct Places {
    last: Vec<(u64, u32)>,
    ended: Option<Dump>,
    aborted: Option<Aborted>,
}

impl DumpSink for Places {
    fn begin(&mut self, _: Now) {}
    fn record(&mut self, idx: u32, rec: &SocketRecord) {
        self.last.retain(|(c, _)| *c != rec.cookie);
        self.last.push((rec.cookie, idx));
    }
    fn end(&mut self, dump: Dump) {
        self.ended = Some(dump);
    }
    fn abort(&mut self, why: Aborted) {
        self.aborted = Some(why);
    }
    fn walk_part(&mut self, _: Now, _: Vec<SocketRecord>, _: Vec<bbrtop_core::model::Cookie>) {
        unreachable!("netlink does not walk")
    }
    fn walked(&mut self, _: Result<bbrtop_core::seam::Walk, bbrtop_core::seam::WalkFailed>) {
        unreachable!("netlink does not walk")
    }
}

#[test]
fn a_restarted_family_is_handed_over_again_and_each_socket_ends_at_its_place() {
    let mut places = Places::default();
    collector(interrupted_then_whole()).dump_into(&mut places, Now::system()).unwrap();
    let dump = places.ended.expect("the dump ended");
    assert_eq!(dump.stats.intr_retries, 1);
    assert!(dump.sockets.is_empty(), "a streamed dump keeps no records");
    // Every socket's last place is its place in the dump, the re-read's first buffer included.
    let mut last = places.last;
    last.sort();
    assert_eq!(last, [(1, 1), (2, 2), (3, 0)]);
}

#[test]
fn a_whole_dump_keeps_each_socket_of_a_restarted_family_once() {
    // A streamed dump first: the same collector keeps the next whole.
    let mut c = collector([interrupted_then_whole(), interrupted_then_whole()].concat());
    c.dump_into(&mut Places::default(), Now::system()).unwrap();
    let dump = c.dump().unwrap();
    let listed: Vec<u64> = dump.sockets.iter().map(|r| r.cookie).collect();
    assert_eq!(listed, [3, 1, 2], "each socket once, as the re-read listed them");
    assert_eq!(dump.stats.intr_retries, 1);
}

#[test]
fn the_engine_sees_every_socket_of_a_restarted_dump_exactly_once() {
    let mut engine = Engine::new(EngineConfig::default());
    let now = Now::system();
    collector(interrupted_then_whole()).dump_into(&mut engine, now).unwrap();
    let snap = engine.tick(now);
    let mut seen: Vec<(u64, Option<u32>)> =
        snap.sockets.iter().map(|s| (s.record.cookie, s.record.tcp_info.srtt_us())).collect();
    seen.sort();
    assert_eq!(seen, [(1, Some(11_000)), (2, Some(12_000)), (3, Some(13_000))], "the re-read's values");
    assert_eq!(snap.collectors[0].dump_intr_retries_total, 1);
}

#[test]
fn a_dump_that_fails_midway_aborts_and_the_last_one_stands() {
    let mut engine = Engine::new(EngineConfig::default());
    let now = Now::system();
    let whole = vec![vec![[v4(1, &full_attrs(10_000)), done(MULTI)].concat()], vec![done(MULTI)]];
    collector(whole).dump_into(&mut engine, now).unwrap();
    // The next dump's IPv4 family ends without a DONE: the script runs dry, as a dead socket would.
    let broken = vec![vec![v4(1, &full_attrs(20_000)), v4(2, &full_attrs(20_000))]];
    let mut places = Places::default();
    let err = collector(broken.clone()).dump_into(&mut places, now).unwrap_err();
    assert!(err.to_string().contains("no more datagrams"), "{err}");
    assert!(matches!(places.aborted, Some(Aborted::Failed { .. })) && places.ended.is_none());

    assert!(collector(broken).dump_into(&mut engine, now).is_err());
    let snap = engine.tick(now);
    assert_eq!(snap.sockets.len(), 1, "socket 2 was never in a complete dump");
    assert_eq!(
        snap.sockets.to_vec()[0].record.tcp_info.srtt_us(),
        Some(10_000),
        "still the last complete dump"
    );
    let netlink = &snap.collectors[0];
    assert!(matches!(&netlink.health, Health::Degraded(r) if r.cause == Cause::DumpFailed), "{netlink:?}");
}
