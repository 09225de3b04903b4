//! A closed flow as one OTLP log record, and a batch of them as one export request. Pure: what a
//! flow's socket was (its origin) and its peer's AS and country are looked up by the caller.
//!
//! Attribute names follow OpenTelemetry's semantic conventions where one exists (`network.*`,
//! `k8s.*`, `host.name`, `service.*`); bbrtop's own are under `bbrtop.`, and a count keeps the
//! name tcp_info and `ss -tin` give it (`bbrtop.tcp.bytes_acked`).

use bbrtop_core::geo::PeerGeo;
use bbrtop_core::model::{ClosedFlow, Count, Origin};
use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, InstrumentationScope, KeyValue, any_value};
use opentelemetry_proto::tonic::logs::v1::{LogRecord, ResourceLogs, ScopeLogs, SeverityNumber};
use opentelemetry_proto::tonic::resource::v1::Resource;
use std::net::SocketAddr;
use std::time::SystemTime;

/// The log record's event name, which a collector's pipeline can route on.
pub const EVENT_NAME: &str = "bbrtop.flow.closed";

/// What is known of a closed flow besides its close record.
#[derive(Clone, Debug, Default)]
pub struct FlowContext<'a> {
    pub peer_group: &'a str,
    /// None when no AS or country database is given.
    pub geo: Option<&'a PeerGeo>,
    /// Its socket's namespace name, cgroup and pod, when the socket was seen open.
    pub origin: Option<&'a Origin>,
}

/// Who sends: the resource every record of this exporter shares.
#[derive(Clone, Debug)]
pub struct Source {
    pub host: String,
    /// Which BBR the host runs (`SystemInfo::bbr`).
    pub bbr: String,
}

fn value(v: any_value::Value) -> Option<AnyValue> {
    Some(AnyValue { value: Some(v) })
}

fn s(key: &str, v: impl Into<String>) -> KeyValue {
    KeyValue { key: key.into(), value: value(any_value::Value::StringValue(v.into())), ..Default::default() }
}

fn i(key: &str, v: impl TryInto<i64>) -> KeyValue {
    let v = v.try_into().unwrap_or(i64::MAX);
    KeyValue { key: key.into(), value: value(any_value::Value::IntValue(v)), ..Default::default() }
}

fn f(key: &str, v: f64) -> KeyValue {
    KeyValue { key: key.into(), value: value(any_value::Value::DoubleValue(v)), ..Default::default() }
}

fn nanos(t: SystemTime) -> u64 {
    t.duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

fn endpoints(local: SocketAddr, peer: SocketAddr) -> [KeyValue; 6] {
    [
        s("network.transport", "tcp"),
        s("network.type", if peer.is_ipv4() { "ipv4" } else { "ipv6" }),
        s("network.local.address", local.ip().to_string()),
        i("network.local.port", local.port()),
        s("network.peer.address", peer.ip().to_string()),
        i("network.peer.port", peer.port()),
    ]
}

fn origin_attributes(o: &Origin, out: &mut Vec<KeyValue>) {
    if let Some(n) = &o.netns_name {
        out.push(s("bbrtop.netns.name", n.clone()));
    }
    if let Some(c) = &o.cgroup {
        out.push(s("bbrtop.cgroup", c.clone()));
    }
    if let Some(p) = &o.pod {
        out.push(s("k8s.pod.uid", p.uid.clone()));
        let named = [
            ("k8s.namespace.name", &p.namespace),
            ("k8s.pod.name", &p.name),
            ("k8s.container.name", &p.container),
        ];
        out.extend(named.into_iter().filter_map(|(k, v)| Some(s(k, v.clone()?))));
    }
}

fn geo_attributes(g: &PeerGeo, out: &mut Vec<KeyValue>) {
    if let Some(asn) = g.asn {
        out.push(i("bbrtop.peer.asn", asn));
    }
    if let Some(org) = &g.as_org {
        out.push(s("bbrtop.peer.as_org", org.clone()));
    }
    if let Some(c) = &g.country {
        out.push(s("bbrtop.peer.country", c.clone()));
    }
}

/// One closed flow as a log record, observed at `observed`.
pub fn log_record(flow: &ClosedFlow, ctx: &FlowContext, observed: SystemTime) -> LogRecord {
    let mut a: Vec<KeyValue> = endpoints(flow.local, flow.peer).into();
    a.extend([
        s("bbrtop.cc", flow.cc.clone()),
        i("bbrtop.socket.cookie", flow.cookie),
        i("bbrtop.netns.inode", flow.netns),
        s("bbrtop.peer.group", ctx.peer_group),
    ]);
    if let Some(g) = ctx.geo {
        geo_attributes(g, &mut a);
    }
    if let Some(o) = ctx.origin {
        origin_attributes(o, &mut a);
    }
    if let Some(l) = flow.lifetime_seconds {
        a.push(f("bbrtop.flow.lifetime_seconds", l));
    }
    a.extend(Count::ALL.iter().map(|c| i(&format!("bbrtop.tcp.{}", c.name()), flow.counts[*c])));
    a.extend([i("bbrtop.tcp.srtt_us", flow.srtt_us), i("bbrtop.tcp.min_rtt_us", flow.min_rtt_us)]);
    if let Some(r) = flow.delivery_rate_bytes_per_sec {
        a.push(i("bbrtop.tcp.delivery_rate_bytes_per_second", r));
    }
    if let Some(b) = &flow.bbr {
        a.extend([
            s("bbrtop.bbr.mode", b.mode.to_string()),
            i("bbrtop.bbr.min_rtt_us", b.min_rtt_us),
            i("bbrtop.bbr.bw_bytes_per_second", b.bw_bytes_per_sec),
        ]);
    }
    a.push(f("bbrtop.peak_inflation_ratio", flow.peak_inflation_ratio));
    LogRecord {
        time_unix_nano: nanos(flow.closed_at),
        observed_time_unix_nano: nanos(observed),
        severity_number: SeverityNumber::Info as i32,
        severity_text: "INFO".into(),
        body: value(any_value::Value::StringValue(format!(
            "{} flow {} -> {} closed",
            flow.cc, flow.local, flow.peer
        ))),
        attributes: a,
        event_name: EVENT_NAME.into(),
        ..Default::default()
    }
}

/// One export request carrying `records`, from `source`.
pub fn request(source: &Source, records: Vec<LogRecord>) -> ExportLogsServiceRequest {
    let resource = Resource {
        attributes: vec![
            s("service.name", "bbrtop"),
            s("service.version", env!("CARGO_PKG_VERSION")),
            s("host.name", source.host.clone()),
            s("bbrtop.bbr", source.bbr.clone()),
        ],
        ..Default::default()
    };
    let scope = InstrumentationScope {
        name: "bbrtop".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        ..Default::default()
    };
    ExportLogsServiceRequest {
        resource_logs: vec![ResourceLogs {
            resource: Some(resource),
            scope_logs: vec![ScopeLogs { scope: Some(scope), log_records: records, ..Default::default() }],
            ..Default::default()
        }],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bbrtop_core::model::{ClosedBbr, Pod, Tally};
    use prost::Message;

    fn attr<'a>(r: &'a LogRecord, key: &str) -> Option<&'a any_value::Value> {
        r.attributes.iter().find(|kv| kv.key == key)?.value.as_ref()?.value.as_ref()
    }

    fn flow() -> ClosedFlow {
        ClosedFlow {
            seq: 7,
            cookie: 42,
            cc: "bbr".into(),
            local: "10.0.0.1:443".parse().unwrap(),
            peer: "[2001:db8::2]:40000".parse().unwrap(),
            closed_at: SystemTime::UNIX_EPOCH + std::time::Duration::from_millis(1_500),
            counts: Tally::from_counts([(Count::BytesAcked, 1_000_001), (Count::Rto, 2)]),
            bbr: Some(ClosedBbr { mode: "probe_bw", min_rtt_us: 20_000, bw_bytes_per_sec: 5_000_000 }),
            ..ClosedFlow::example("bbr", 25_000, Some(4_000_000))
        }
    }

    #[test]
    fn a_flow_carries_its_endpoints_counts_and_what_is_known_of_its_peer() {
        let origin = Origin {
            netns_name: Some("web".into()),
            cgroup: None,
            pod: Some(Pod {
                uid: "u1".into(),
                namespace: Some("shop".into()),
                name: Some("front-1".into()),
                ..Pod::default()
            }),
        };
        let geo = PeerGeo { asn: Some(64501), country: Some("BR".into()), ..PeerGeo::default() };
        let ctx = FlowContext { peer_group: "mobile", geo: Some(&geo), origin: Some(&origin) };
        let r = log_record(&flow(), &ctx, SystemTime::UNIX_EPOCH);
        use any_value::Value::{DoubleValue, IntValue, StringValue};
        assert_eq!(r.time_unix_nano, 1_500_000_000);
        assert_eq!(r.event_name, EVENT_NAME);
        assert_eq!(attr(&r, "network.type"), Some(&StringValue("ipv6".into())));
        assert_eq!(attr(&r, "network.peer.address"), Some(&StringValue("2001:db8::2".into())));
        assert_eq!(attr(&r, "network.local.port"), Some(&IntValue(443)));
        assert_eq!(attr(&r, "bbrtop.socket.cookie"), Some(&IntValue(42)));
        assert_eq!(attr(&r, "bbrtop.tcp.bytes_acked"), Some(&IntValue(1_000_001)));
        assert_eq!(attr(&r, "bbrtop.tcp.total_rto"), Some(&IntValue(2)));
        assert_eq!(attr(&r, "bbrtop.tcp.delivery_rate_bytes_per_second"), Some(&IntValue(4_000_000)));
        assert_eq!(attr(&r, "bbrtop.bbr.mode"), Some(&StringValue("probe_bw".into())));
        assert_eq!(attr(&r, "bbrtop.flow.lifetime_seconds"), Some(&DoubleValue(2.0)));
        assert_eq!(attr(&r, "bbrtop.peer.asn"), Some(&IntValue(64501)));
        assert_eq!(attr(&r, "bbrtop.peer.country"), Some(&StringValue("BR".into())));
        assert_eq!(attr(&r, "bbrtop.peer.group"), Some(&StringValue("mobile".into())));
        assert_eq!(attr(&r, "k8s.pod.name"), Some(&StringValue("front-1".into())));
        assert_eq!(attr(&r, "k8s.container.name"), None, "not known: left out");
        assert_eq!(attr(&r, "bbrtop.netns.name"), Some(&StringValue("web".into())));
    }

    #[test]
    fn unknowns_are_left_out_and_a_request_round_trips_through_protobuf() {
        let plain = ClosedFlow {
            lifetime_seconds: None,
            delivery_rate_bytes_per_sec: None,
            ..ClosedFlow::example("cubic", 1, None)
        };
        let r = log_record(
            &plain,
            &FlowContext { peer_group: "other", ..FlowContext::default() },
            SystemTime::now(),
        );
        for key in ["bbrtop.peer.asn", "bbrtop.flow.lifetime_seconds", "bbrtop.bbr.mode", "k8s.pod.uid"] {
            assert!(attr(&r, key).is_none(), "{key}");
        }
        let req = request(&Source { host: "edge-1".into(), bbr: "bbr v1".into() }, vec![r.clone(), r]);
        let back = ExportLogsServiceRequest::decode(req.encode_to_vec().as_slice()).unwrap();
        assert_eq!(back, req);
        assert_eq!(back.resource_logs[0].scope_logs[0].log_records.len(), 2);
    }
}
