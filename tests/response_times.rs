//! Response delivery times, timed in the kernel, against the times the client itself measures:
//! request/response traffic on keep-alive connections across the lab's bottleneck (40 ms round
//! trip, 20 Mbit/s), 15 KB and 200 KB answers, served by BBR. `bbrtop export` watches the
//! server's namespace; its `/api/sockets` gives p50/p95/p99 per size class, and the client's
//! own timings (request written to last byte read, `lab::exchange`) are the reference.
//! Privileged.
//!
//! The two clocks time different spans: the kernel's runs from the server's first write to
//! the ACK of the last byte, the client's from its request to its last byte. The server answers
//! at once, so the two differ by the request's one-way trip less the last ACK's (equal on this
//! path) plus however long the client held that ACK: it acks as soon as it has read the last
//! byte (no delayed ACK once the receive queue is empty). The test holds them to 10% or 5 ms,
//! whichever is larger.
//!
//! The exporter is given AS and country databases of the lab's own addresses, written by a real
//! MMDB writer (mmdb-writer): the responses and the counters carry the client's AS and country,
//! and SIGHUP reads the databases again without stopping the exporter.

mod support;

use bbrtop::lab::exchange::{Arrivals, ExchangeConfig};
use bbrtop::lab::{Lab, LabConfig};
use serde_json::Value;
use std::time::Duration;
use support::guard;

/// The busy server test's unshaped traffic loads both cores: the timing tests, which compare two
/// clocks to 10%, run beside each other but never beside it.
static TRAFFIC: std::sync::RwLock<()> = std::sync::RwLock::new(());

fn quiet() -> std::sync::RwLockReadGuard<'static, ()> {
    TRAFFIC.read().unwrap_or_else(|e| e.into_inner())
}

/// AS and country databases that place the lab's client in AS64501 and BR, written by a real
/// MMDB writer into `dir`: (AS file, country file), or None once its absence is said.
fn client_databases(lab: &Lab, dir: &std::path::Path) -> Option<(std::path::PathBuf, std::path::PathBuf)> {
    let (asn_db, country_db) = (dir.join("asn.mmdb"), dir.join("country.mmdb"));
    let client = format!("{}/32", lab.receiver_addr());
    let asn = serde_json::json!({"database_type": "bbrtop-lab-ASN", "networks": {
        &client: {"autonomous_system_number": 64501, "autonomous_system_organization": "Lab mobile"}}});
    let country = serde_json::json!({"database_type": "bbrtop-lab-Country", "networks": {
        &client: {"country": {"iso_code": "BR"}}}});
    (support::mmdb_write(&asn_db, &asn) && support::mmdb_write(&country_db, &country))
        .then_some((asn_db, country_db))
}

/// The kernel timed what the clients timed, `kernel_n` responses: the clients had timed `before`
/// when the exporter was asked and `times` just after, give or take the one in flight at each end
/// of each of `exchanges` connections. And the p50 and p95 of `row` (a response row of
/// `/api/sockets`) are the clients' `times`' (sorted), to 10% or 5 ms, whichever is larger.
fn agree(size: &str, row: &Value, kernel_n: u64, before: usize, times: &[Duration], exchanges: usize) {
    let (lo, hi) = (before.saturating_sub(2 * exchanges), times.len() + 2 * exchanges);
    assert!(
        (lo..=hi).contains(&(kernel_n as usize)),
        "{size}: {kernel_n} responses timed, the clients {lo}..{hi}"
    );
    for (q, key) in [(0.5, "p50_seconds"), (0.95, "p95_seconds")] {
        let (got, want) = (row[key].as_f64().unwrap(), support::quantile(times, q));
        eprintln!("{size} p{}: kernel {:.2} ms, client {:.2} ms", q * 100.0, got * 1e3, want * 1e3);
        let tolerance = (0.1 * want).max(0.005);
        assert!((got - want).abs() <= tolerance, "{size} p{}: kernel {got} s, client {want} s", q * 100.0);
    }
}

#[test]
fn root_response_times_agree_with_the_clients() {
    if !guard::lab("the response time test") || !guard::bpf("the response time test") {
        return;
    }
    let _quiet = quiet();
    let lab = Lab::new(LabConfig { delay: Some(Duration::from_millis(20)), ..LabConfig::default() })
        .expect("a lab");
    let tmp = tempfile::tempdir().unwrap();
    let Some((asn_db, country_db)) = client_databases(&lab, tmp.path()) else { return };
    let (asn_flag, country_flag) = (
        format!("--peer-groups.asn.file={}", asn_db.display()),
        format!("--peer-groups.country.file={}", country_db.display()),
    );
    let small = ExchangeConfig {
        response_bytes: 15_000,
        interval: Duration::from_millis(250),
        think: Duration::ZERO,
        ..ExchangeConfig::default()
    };
    let large = ExchangeConfig { response_bytes: 200_000, interval: Duration::from_millis(700), ..small };
    // The 200 KB connection is older than bbrtop, as a keep-alive connection usually is: its
    // server is known by its port's bind bucket, whatever the ports' order.
    let older = lab.start_exchange("bbr", large).expect("the 200 KB exchange");
    std::thread::sleep(Duration::from_secs(2));
    let (export, port) = support::lab::exporter_with(&lab, &["--web.enable-api", &asn_flag, &country_flag]);
    let before = older.times().len();
    let exchanges = [
        ("le15kB", lab.start_exchange("bbr", small).expect("the 15 KB exchange"), 0),
        ("le200kB", older, before),
    ];
    std::thread::sleep(Duration::from_secs(25));
    let (status, body) = support::http::get(port, "/api/sockets", None).expect("the API");
    assert_eq!(status, 200, "{body}");
    let doc: Value = serde_json::from_str(&body).expect("JSON");
    let rows = doc["responses"].as_array().cloned().unwrap_or_default();
    for (size, ex, before) in &exchanges {
        // What the client timed since bbrtop loaded.
        let mut times = ex.times().split_off(*before);
        times.sort();
        assert!(times.len() >= 20, "{size}: the client timed {} responses", times.len());
        // Labelled once its bytes ranked the client's AS (every 10 s): the rows of both labels
        // together are every response.
        let ours: Vec<&Value> = rows
            .iter()
            .filter(|r| r["cc"] == "bbr" && r["size"] == *size && r["peer_group"] != "all")
            .collect();
        assert!(ours.iter().any(|r| r["asn"] == "AS64501" && r["country"] == "BR"), "{rows:?}");
        let row = ours.iter().max_by_key(|r| r["count"].as_u64()).unwrap();
        let count: u64 = ours.iter().map(|r| r["count"].as_u64().unwrap()).sum();
        agree(size, row, count, times.len(), &times, 1);
    }
    // The client's requests are not responses: nothing counted in the client's direction.
    assert!(rows.iter().all(|r| r["cc"] == "bbr"), "{rows:?}");
    let (_, metrics) = support::http::get(port, "/metrics", None).expect("the metrics");
    let sent = metrics.lines().find(|l| {
        l.starts_with("bbrtop_sent_bytes_total{")
            && l.contains(r#"asn="AS64501""#)
            && l.contains(r#"country="BR""#)
    });
    assert!(sent.is_some(), "no bbrtop_sent_bytes_total of AS64501 in BR");
    // Response times per AS and country are native histograms; a text scrape has them summed
    // over AS and country (the series budget, docs/export-and-alert.md, "Series per host").
    assert!(
        metrics
            .contains(r#"bbrtop_response_delivery_seconds_count{cc="bbr",peer_group="other",size="le15kB"}"#)
    );
    let per_as =
        metrics.lines().find(|l| l.starts_with("bbrtop_response_delivery_seconds") && l.contains("asn="));
    assert!(per_as.is_none(), "per AS in a text scrape: {per_as:?}");
    // SIGHUP reads the databases again; the exporter goes on.
    support::signal(export.proc.0.id(), "HUP");
    std::thread::sleep(Duration::from_secs(1));
    assert_eq!(support::http::get(port, "/-/ready", None).expect("still serving").0, 200);
}

/// A recording made with the AS database carries the response times by AS, and `bbrtop compare`
/// compares two ranges of it per AS and size class. The connection is older than the recorder
/// (which once lost it half the time, judging its server by the order of its ports).
#[test]
fn root_recorded_response_times_compare_by_as() {
    if !guard::lab("the recorded response time test") || !guard::bpf("the recorded response time test") {
        return;
    }
    let _quiet = quiet();
    let lab = Lab::new(LabConfig { delay: Some(Duration::from_millis(10)), ..LabConfig::default() })
        .expect("a lab");
    let tmp = tempfile::tempdir().unwrap();
    let Some((asn_db, _)) = client_databases(&lab, tmp.path()) else { return };
    let ask = ExchangeConfig {
        interval: Duration::from_millis(50),
        think: Duration::ZERO,
        ..ExchangeConfig::default()
    };
    let _ex = lab.start_exchange("bbr", ask).expect("the exchange");
    let rec = tmp.path().join("rec");
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_bbrtop"))
        .args(["record", "--interval", "250ms", "--count", "80"])
        .arg(format!("--netns={}", lab.sender_netns().display()))
        .arg(format!("--peer-groups.asn.file={}", asn_db.display()))
        .arg(&rec)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let side = |range: &str| format!("{}@{range}", rec.display());
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_bbrtop"))
        .args(["compare", "--json", &side("..+10s"), &side("+10s..")])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    let rows = doc["responses"].as_array().cloned().unwrap_or_default();
    let labelled = rows
        .iter()
        .find(|r| r["group"]["by"] == "asn" && r["group"]["name"] == "AS64501" && r["size"] == "le15kB")
        .unwrap_or_else(|| panic!("no AS64501 rows: {rows:?}"));
    // Some 20 answers a second, labelled once the AS ranked (within 10 s).
    let (a, b) = (labelled["responses_a"].as_u64().unwrap(), labelled["responses_b"].as_u64().unwrap());
    assert!(b > 100, "{labelled}");
    assert!(a + b > 150, "{labelled}");
    let p50 = &labelled["quantiles"][0];
    assert_eq!(p50["metric"], "response_p50_ms");
    assert!(p50["b"].as_f64().unwrap() > 20.0, "a 20 ms round trip at least: {p50}");
}

/// On a short path (no added delay, under a millisecond) a client's ACK of a response's lone
/// last segment is often held by its delayed-ACK timer, 40 ms here: ten times the response's
/// own time. The user had the bytes when they arrived, so the kernel's time leaves the hold
/// out: its p50 and p95 are the clients' (before, the kernel's p95 read 17 to 44 ms against the
/// clients' 4.4 in `lab rollout`'s local population). Clients ask at random moments, as users do.
#[test]
fn root_held_acks_are_not_delivery_time() {
    if !guard::lab("the held-ACK test") || !guard::bpf("the held-ACK test") {
        return;
    }
    let _quiet = quiet();
    let lab = Lab::new(LabConfig::default()).expect("a lab");
    let (_export, port) = support::lab::exporter_with(&lab, &["--web.enable-api"]);
    let ask = ExchangeConfig {
        response_bytes: 15_000,
        interval: Duration::from_millis(100),
        arrivals: Arrivals::Random,
        think: Duration::ZERO,
        ..ExchangeConfig::default()
    };
    let (a, b) = (
        lab.start_exchange("cubic", ask).expect("an exchange"),
        lab.start_exchange("cubic", ask).expect("an exchange"),
    );
    std::thread::sleep(Duration::from_secs(15));
    let before = a.times().len() + b.times().len();
    let (status, body) = support::http::get(port, "/api/sockets", None).expect("the API");
    assert_eq!(status, 200, "{body}");
    let doc: Value = serde_json::from_str(&body).expect("JSON");
    let rows = doc["responses"].as_array().cloned().unwrap_or_default();
    let row = rows
        .iter()
        .find(|r| r["cc"] == "cubic" && r["size"] == "le15kB" && r["peer_group"] == "all")
        .unwrap_or_else(|| panic!("no row of cubic's 15 KB responses: {rows:?}"));
    let mut times = a.times();
    times.extend(b.times());
    times.sort();
    assert!(times.len() >= 100, "the clients timed {} responses", times.len());
    agree("le15kB", row, row["count"].as_u64().unwrap(), before, &times, 2);
}

/// `TcpExt: TCPBacklogCoalesce` of the lab's sender namespace: the segments the kernel merged
/// into the one before them in a socket's backlog (`tcp_add_backlog`), while the server held
/// the socket.
fn backlog_coalesced(lab: &Lab) -> u64 {
    let o = std::process::Command::new("ip")
        .args(["netns", "exec", lab.sender_name(), "cat", "/proc/net/netstat"])
        .output()
        .unwrap();
    assert!(o.status.success(), "netstat: {}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout);
    let mut tcp_ext = text.lines().filter(|l| l.starts_with("TcpExt:"));
    let (names, values) = (tcp_ext.next().unwrap_or(""), tcp_ext.next().unwrap_or(""));
    let at = names.split_whitespace().position(|n| n == "TCPBacklogCoalesce");
    let value = at.and_then(|i| values.split_whitespace().nth(i)?.parse().ok());
    value.unwrap_or_else(|| panic!("no TCPBacklogCoalesce in {text}"))
}

/// Drops the lab's client's requests from now on: the receiver's segments that carry the PSH
/// flag (a write's last segment: each 8-byte request, and never a pure ACK), turned by a tc
/// filter on its egress to its own loopback, where nothing takes them. The responses under way
/// finish, ACKs and all; no new one starts.
fn hold_requests(lab: &Lab) {
    let ns = lab.receiver_name();
    let tc = |args: &[&str]| {
        let o = std::process::Command::new("tc").args(["-n", ns]).args(args).output().unwrap();
        assert!(o.status.success(), "tc {args:?}: {}", String::from_utf8_lossy(&o.stderr));
    };
    tc(&["qdisc", "add", "dev", "lan0", "clsact"]);
    // IPv4 with a 20-byte header (0x45), TCP, and PSH in the flags byte (13 bytes into TCP).
    tc(&[
        "filter", "add", "dev", "lan0", "egress", "protocol", "ip", "prio", "1", "u32", "match", "u8",
        "0x45", "0xff", "at", "0", "match", "ip", "protocol", "6", "0xff", "match", "u8", "0x08", "0x08",
        "at", "33", "action", "mirred", "egress", "redirect", "dev", "lo",
    ]);
}

/// Responses counted by `bbrtop_response_delivery_seconds_count` of congestion control `cc`,
/// every peer group and size together.
fn counted(port: u16, cc: &str) -> u64 {
    let (status, metrics) = support::http::get(port, "/metrics", None).expect("the metrics");
    assert_eq!(status, 200, "{metrics}");
    let ours = format!(r#"bbrtop_response_delivery_seconds_count{{cc="{cc}","#);
    metrics
        .lines()
        .filter(|l| l.starts_with(&ours))
        .map(|l| l.rsplit(' ').next().and_then(|n| n.parse::<u64>().ok()).expect("a count"))
        .sum()
}

/// `bbrtop_bpf_recursion_misses_total{program="tcp_probe"}`: the segments whose hook the kernel
/// skipped because the program was already running on that CPU (preempted or interrupted).
fn probe_skips(port: u16) -> u64 {
    let (_, metrics) = support::http::get(port, "/metrics", None).expect("the metrics");
    let line =
        metrics.lines().find(|l| l.starts_with(r#"bbrtop_bpf_recursion_misses_total{program="tcp_probe"}"#));
    line.and_then(|l| l.rsplit(' ').next()?.parse().ok()).unwrap_or(0)
}

/// `read`'s value once two readings `apart` are equal, within five seconds.
fn settled(apart: Duration, read: impl Fn() -> u64) -> u64 {
    let mut last = read();
    let still = support::poll_until(Duration::from_secs(5), || {
        std::thread::sleep(apart);
        let now = read();
        (std::mem::replace(&mut last, now) == now).then_some(now)
    });
    still.expect("a count that settles")
}

/// What [`answers_against_clients`] saw: the answers the clients received and the kernel counted
/// (while the connections were open, and once closed), the segments merged in the server's
/// backlog and the tcp_probe runs the kernel skipped.
struct Counted {
    clients: u64,
    open: u64,
    closed: u64,
    coalesced: u64,
    skipped: u64,
}

/// Twelve keep-alive connections ask for `bytes` answers back to back through a lab path of
/// `rate` for 4 s, `bbrtop export` started first, so every connection and answer is its to see.
/// The server's send buffer holds a whole answer (tcp_wmem 4 MB), so an answer is one write that
/// never waits for room: a server that fell behind mid-answer would let everything written be
/// acked, and the kernel rightly counts two responses there. Then the clients' requests are held
/// (dropped on their egress): the answers under way finish, no new one starts, and the clients'
/// count and the kernel's settle; then the connections close.
fn answers_against_clients(rate: u64, bytes: u64) -> Counted {
    let lab = Lab::new(LabConfig {
        rate_bit_per_sec: rate,
        burst_bytes: bbrtop::lab::burst_for(rate),
        ..LabConfig::default()
    })
    .expect("a lab");
    let o = std::process::Command::new("ip")
        .args(["netns", "exec", lab.sender_name(), "sysctl", "-qw", "net.ipv4.tcp_wmem=4096 4194304 4194304"])
        .output()
        .unwrap();
    assert!(o.status.success(), "sysctl: {}", String::from_utf8_lossy(&o.stderr));
    let (_export, port) = support::lab::exporter_with(&lab, &["--interval=250ms"]);
    let (coalesced, skipped) = (backlog_coalesced(&lab), probe_skips(port));
    let ask = ExchangeConfig {
        response_bytes: bytes,
        interval: Duration::ZERO,
        think: Duration::ZERO,
        ..ExchangeConfig::default()
    };
    let exchanges: Vec<_> = (0..12).map(|_| lab.start_exchange("cubic", ask).expect("an exchange")).collect();
    std::thread::sleep(Duration::from_secs(4));
    hold_requests(&lab);
    let clients =
        settled(Duration::from_millis(300), || exchanges.iter().map(|e| e.times().len() as u64).sum());
    // A last answer whose ACK rode on a held request is acked again once the server probes.
    let open = settled(Duration::from_millis(600), || counted(port, "cubic"));
    let (coalesced, skipped) = (backlog_coalesced(&lab) - coalesced, probe_skips(port) - skipped);
    drop(exchanges);
    let closed = settled(Duration::from_millis(600), || counted(port, "cubic"));
    eprintln!(
        "the clients received {clients}, the kernel counted {open}, {closed} once closed; \
         {coalesced} coalesced, {skipped} skipped"
    );
    assert!(clients > 1000, "the clients received {clients}");
    Counted { clients, open, closed, coalesced, skipped }
}

/// None is counted that the clients did not receive, and every answer they received is counted:
/// while the connections are open, all but at most each connection's last, and all once they
/// closed. An answer whose end no tcp_probe run saw is counted at the server's next write to the
/// socket, dated by RACK, and a connection's last as its socket closes.
fn all_counted(c: &Counted) {
    assert!(c.open <= c.clients, "{} counted, {} received", c.open, c.clients);
    assert!(
        c.clients - c.open <= 12,
        "{} counted, {} received, {} runs skipped",
        c.open,
        c.clients,
        c.skipped
    );
    assert_eq!(c.closed, c.clients, "counted once the connections closed, against the clients' count");
}

/// A busy server's responses are all counted (issue 39): 200 KB answers unshaped (10 Gbit/s), so
/// the client's ACKs often come while the server thread holds its socket (copying a write, or
/// preempted on two busy cores) and wait in its backlog, where the kernel merges each into the
/// one before (`TCPBacklogCoalesce`, asserted to rise: the busy condition held). A merged
/// segment's ACK is in its control block, not its header.
#[test]
fn root_a_busy_servers_responses_are_all_counted() {
    if !guard::lab("the busy server test") || !guard::bpf("the busy server test") {
        return;
    }
    let _alone = TRAFFIC.write().unwrap_or_else(|e| e.into_inner());
    let c = answers_against_clients(10_000_000_000, 200_000);
    assert!(c.coalesced > 0, "no segment waited in a backlog: the server was not busy");
    all_counted(&c);
}

/// Answers whose end no tcp_probe run saw are counted all the same. Through a 1 Gbit/s
/// bottleneck, 15 KB answers back to back end about one in a thousand with the ACK that covered
/// them never seen by tcp_probe, with no run skipped (the cause is not known): the server's next
/// write finds everything acked and counts it. Without that count, 19 and 30 of some 32,000 went
/// uncounted (two runs); with it, none.
#[test]
fn root_answers_whose_end_no_probe_saw_are_counted() {
    if !guard::lab("the unseen end test") || !guard::bpf("the unseen end test") {
        return;
    }
    let _alone = TRAFFIC.write().unwrap_or_else(|e| e.into_inner());
    all_counted(&answers_against_clients(1_000_000_000, 15_000));
}
