//! The OpenTelemetry Collector that the OTLP log export tests run (tests/support/otelcol.rs), on
//! its own: a hand-made OTLP/HTTP JSON export request goes in, and comes back out of the file
//! exporter through `Collector::log_records` with its values intact; a killed and restarted
//! collector keeps what it had and takes more. Not `root_`: the collector needs no privilege.

mod support;

use serde_json::{Value, json};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;
use support::otelcol::{self, Collector};

/// One log record as OTLP JSON: `intValue` is a string there, and this one is past 2^53, which a
/// double would round.
fn request(body: &str, flow: i64) -> Value {
    json!({"resourceLogs": [{
        "resource": {"attributes": [
            {"key": "service.name", "value": {"stringValue": "bbrtop"}},
            {"key": "host.name", "value": {"stringValue": "harness"}},
        ]},
        "scopeLogs": [{
            "scope": {"name": "bbrtop", "version": "0.1.0"},
            "logRecords": [{
                "timeUnixNano": "1700000000123456789",
                "severityNumber": 9,
                "severityText": "INFO",
                "body": {"stringValue": body},
                "attributes": [
                    {"key": "bbrtop.flow", "value": {"intValue": flow.to_string()}},
                    {"key": "network.peer.address", "value": {"stringValue": "10.1.0.2"}},
                    {"key": "bbrtop.bytes_acked", "value": {"intValue": "9007199254740993"}},
                    {"key": "bbrtop.delta", "value": {"intValue": "-42"}},
                    {"key": "bbrtop.srtt_ms", "value": {"doubleValue": 12.25}},
                    {"key": "bbrtop.app_limited", "value": {"boolValue": true}},
                    {"key": "bbrtop.ccs", "value": {"arrayValue": {"values": [{"stringValue": "bbr"}]}}},
                ],
            }],
        }],
    }]})
}

/// POSTs `body` to `{endpoint}/v1/logs` as OTLP/HTTP JSON: (status, response body).
fn post_logs(endpoint: &str, body: &Value) -> (u16, String) {
    let addr = endpoint.strip_prefix("http://").expect("an http:// endpoint");
    let body = body.to_string();
    let mut s = TcpStream::connect(addr).expect("connect to the collector");
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "POST /v1/logs HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut resp = String::new();
    s.read_to_string(&mut resp).expect("the collector answers");
    let status = resp.get(9..12).and_then(|c| c.parse().ok()).unwrap_or(0);
    (status, resp.split_once("\r\n\r\n").map_or("", |(_, b)| b).to_string())
}

fn by_flow(records: &[Value], flow: i64) -> &Value {
    let found = records.iter().find(|r| r["attributes"]["bbrtop.flow"] == flow);
    found.unwrap_or_else(|| panic!("no record of flow {flow} among {records:#?}"))
}

#[test]
fn otelcol_round_trips_otlp_json_logs_and_keeps_them_across_a_restart() {
    if !otelcol::available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut collector = Collector::start(dir.path());

    let (status, answer) = post_logs(&collector.endpoint(), &request("tcp flow closed", 1));
    assert_eq!(status, 200, "{answer}\n{}", collector.current_log());
    let records = collector.wait_for_records(1, Duration::from_secs(10));
    assert_eq!(records.len(), 1, "{records:#?}");
    let r = &records[0];
    let a = &r["attributes"];
    assert_eq!(a["bbrtop.flow"], 1);
    assert_eq!(a["network.peer.address"], "10.1.0.2");
    assert_eq!(a["bbrtop.bytes_acked"].as_i64(), Some(9_007_199_254_740_993), "{r:#?}");
    assert_eq!(a["bbrtop.delta"].as_i64(), Some(-42), "{r:#?}");
    assert_eq!(a["bbrtop.srtt_ms"].as_f64(), Some(12.25), "{r:#?}");
    assert_eq!(a["bbrtop.app_limited"], true);
    assert_eq!(a["bbrtop.ccs"], json!(["bbr"]));
    assert_eq!(r["body"], "tcp flow closed");
    assert_eq!(r["timeUnixNano"].as_u64(), Some(1_700_000_000_123_456_789), "{r:#?}");
    assert_eq!(r["severityText"], "INFO");
    assert_eq!(r["resource"], json!({"service.name": "bbrtop", "host.name": "harness"}));
    assert_eq!(r["scope"]["name"], "bbrtop");

    // Killed, it refuses connections; restarted on the same port, it takes more, and what the
    // first run received is still there.
    collector.kill();
    assert!(
        TcpStream::connect(("127.0.0.1", collector.port())).is_err(),
        "the killed collector still listens"
    );
    collector.restart();
    let (status, answer) = post_logs(&collector.endpoint(), &request("tcp flow closed again", 2));
    assert_eq!(status, 200, "{answer}\n{}", collector.current_log());
    let records = collector.wait_for_records(2, Duration::from_secs(10));
    assert_eq!(records.len(), 2, "{records:#?}");
    assert_eq!(by_flow(&records, 1)["body"], "tcp flow closed");
    assert_eq!(by_flow(&records, 2)["body"], "tcp flow closed again");
    assert_eq!(by_flow(&records, 2)["attributes"]["bbrtop.srtt_ms"].as_f64(), Some(12.25));

    // A request that is not OTLP is refused, and adds nothing.
    let (status, _) = post_logs(&collector.endpoint(), &json!({"resourceLogs": "no"}));
    assert_eq!(status, 400);
    assert_eq!(collector.log_records().len(), 2);
    drop(collector);
}

/// What the harness promises (tests/support/otelcol.rs): a record the collector answered 200 for
/// is in its file at once, so a SIGKILL straight after the answer loses nothing, and no restart
/// writes onto an earlier run's file.
#[test]
fn otelcol_keeps_every_acknowledged_record_through_a_kill() {
    if !otelcol::available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut collector = Collector::start(dir.path());
    for flow in 1..=5 {
        let (status, answer) = post_logs(&collector.endpoint(), &request("killed after", flow));
        assert_eq!(status, 200, "{answer}\n{}", collector.current_log());
        collector.restart();
    }
    let records = collector.log_records();
    assert_eq!(records.len(), 5, "{records:#?}");
    for flow in 1..=5 {
        assert_eq!(by_flow(&records, flow)["body"], "killed after");
    }
}
