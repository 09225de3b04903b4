//! A churn soak: short connections through the lab, as fast as two threads make them, while
//! `bbrtop export` runs with eBPF on (hindsight off). Its memory must settle (RSS at the end within 10% of RSS
//! after the first 10 s), every close must be accounted for (a close record, or counted lost),
//! and no poll may fail. Privileged: namespaces and BPF.
//!
//! CI runs 20 s; the full soak is `BBRTOP_SOAK_SECONDS=60 cargo test --release --test soak --
//! --nocapture`.

mod support;

use bbrtop::lab::{Lab, LabConfig};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The churn's congestion control: one nothing else on the host uses, so its close count is ours.
const CC: &str = "reno";
/// Closes the kernel did not trace: tcp_destroy_sock's program was already running on that CPU.
const MISSES: &str = "bbrtop_bpf_recursion_misses_total{program=\"tcp_destroy_sock\"}";

fn metrics(port: u16) -> String {
    fetch(port, "/metrics")
}

fn fetch(port: u16, path: &str) -> String {
    let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else { return String::new() };
    let _ = s.set_read_timeout(Some(Duration::from_secs(10)));
    let _ = write!(s, "GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    let mut body = String::new();
    let _ = s.read_to_string(&mut body);
    body
}

/// The value of the first sample whose line starts with `series`.
fn value(text: &str, series: &str) -> Option<f64> {
    text.lines().find(|l| l.starts_with(series))?.rsplit(' ').next()?.parse().ok()
}

#[test]
fn root_churn_leaves_memory_flat_and_every_close_accounted_for() {
    if !support::guard::lab("a churn through the lab") || !support::guard::bpf("close records") {
        return;
    }
    let seconds: u64 = std::env::var("BBRTOP_SOAK_SECONDS").ok().and_then(|s| s.parse().ok()).unwrap_or(20);
    // A wide path with a deep bucket: the churn is limited by connection setup, and no packet is
    // dropped at the bottleneck (a lost FIN keeps its socket alive for seconds of retransmits).
    let wide = LabConfig {
        rate_bit_per_sec: 5_000_000_000,
        burst_bytes: 1 << 20,
        queue_bytes: 16 << 20,
        ..LabConfig::default()
    };
    let lab = Lab::new(wide).expect("lab");
    // Tens of thousands of connections a second to one sink: the sender may reuse a port in
    // TIME_WAIT (TCP timestamps keep that safe), and use the whole port range.
    lab.run_in_sender(|| {
        std::fs::write("/proc/sys/net/ipv4/tcp_tw_reuse", "1")?;
        std::fs::write("/proc/sys/net/ipv4/ip_local_port_range", "1024 65535")
    })
    .expect("enter the sender")
    .expect("sender sysctls");
    let port = support::http::free_port();
    let child = Command::new(env!("CARGO_BIN_EXE_bbrtop"))
        .args(["export", "--web.listen-address", &format!("127.0.0.1:{port}"), "--interval", "1s"])
        // Hindsight grows until it holds its window, by design, and under this churn its chunks
        // swing with the close records they hold: off here; its bound has tests of its own
        // (record::hindsight, tests/hindsight.rs).
        .args(["--hindsight.window", "0"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("bbrtop export");
    let exporter = support::Proc(child);
    let pid = exporter.0.id();
    let start = Instant::now();
    let attached = loop {
        let m = metrics(port);
        if value(&m, "bbrtop_bpf_programs_attached").is_some_and(|v| v >= 3.0) {
            break true;
        }
        if start.elapsed() > Duration::from_secs(20) {
            break false;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(attached, "the exporter never attached its eBPF programs: {}", metrics(port));
    let before = metrics(port);
    let ours = |m: &str| {
        let closed = value(m, &format!("bbrtop_closed_flows_total{{cc=\"{CC}\"}}")).unwrap_or(0.0);
        let lost = value(m, "bbrtop_bpf_ringbuf_lost_events_total").unwrap_or(0.0);
        [closed, lost, value(m, MISSES).unwrap_or(0.0)]
    };
    let at_start = ours(&before);

    // Two threads of back-to-back short connections, in rounds of 2,000, until the time is up.
    let churn_start = Instant::now();
    let end = churn_start + Duration::from_secs(seconds);
    let mut made = 0usize;
    let mut rss_at_10s = None;
    while Instant::now() < end {
        let (a, b) = std::thread::scope(|s| {
            let a = s.spawn(|| lab.short_flows(CC, 2_000).expect("short flows"));
            let b = s.spawn(|| lab.short_flows(CC, 2_000).expect("short flows"));
            (a.join().unwrap(), b.join().unwrap())
        });
        made += a + b;
        if rss_at_10s.is_none() && churn_start.elapsed() >= Duration::from_secs(10) {
            rss_at_10s = Some(support::rss_kib(pid));
        }
    }
    let churned = churn_start.elapsed().as_secs_f64();
    let rss_end = support::rss_kib(pid);
    // Close records, ring-buffer losses and untraced closes since the churn began.
    let counted = |m: &str| {
        let now = ours(m);
        [now[0] - at_start[0], now[1] - at_start[1], now[2] - at_start[2]]
    };
    // The last sockets close as their FINs are acknowledged, and their records are counted at
    // the next poll: wait for the count to catch up (bounded).
    let settle = Instant::now() + Duration::from_secs(15);
    let mut after = metrics(port);
    while counted(&after).iter().sum::<f64>() < made as f64 && Instant::now() < settle {
        std::thread::sleep(Duration::from_millis(500));
        after = metrics(port);
    }
    let [closed, lost, missed] = counted(&after);
    // A socket still open has not closed yet: it owes no close record.
    let open = lab
        .run_in_sender(|| {
            Command::new("ss").args(["-tanH", "state", "connected", "exclude", "time-wait"]).output()
        })
        .expect("enter the sender")
        .map(|o| String::from_utf8_lossy(&o.stdout).lines().count())
        .unwrap_or(0);
    let errors: f64 = after
        .lines()
        .filter(|l| l.starts_with("bbrtop_collector_errors_total"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum();
    let rss_10 = rss_at_10s.expect("the churn ran 10 s");
    eprintln!(
        "soak: {made} connections in {churned:.1} s ({:.0}/s); {closed} close records, {lost} lost in the \
         ring buffer, {missed} not traced (counted by the kernel), {open} still open; RSS {rss_10} KiB at \
         10 s, {rss_end} KiB at the end ({:+.1}%)",
        made as f64 / churned,
        (rss_end as f64 / rss_10 as f64 - 1.0) * 100.0
    );
    assert!(made > 0);
    // Close records, losses the ring buffer counted and closes the kernel counted as not traced
    // account for every close but a residue that no counter of ours or the kernel's explains
    // yet: 11 to 119 of 84,000 to 92,000 (0.01% to 0.14%) over six runs here, the most while
    // builds shared the machine's two cores. The test holds the accounting to 0.25%: a close
    // path that broke would lose far more.
    let closes_due = (made - open) as f64;
    let unexplained = closes_due - (closed + lost + missed);
    eprintln!("soak: {unexplained} closes unaccounted for");
    assert!(
        unexplained <= closes_due * 0.0025,
        "{closed} closes + {lost} lost + {missed} not traced leave {unexplained} of {closes_due} unaccounted for"
    );
    assert_eq!(errors, 0.0, "no poll failed: {after}");
    assert!(
        (rss_end as f64) <= rss_10 as f64 * 1.10,
        "RSS grew from {rss_10} KiB at 10 s to {rss_end} KiB at the end"
    );
}
