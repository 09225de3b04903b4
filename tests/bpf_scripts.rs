//! The bpftrace scripts in tests/bpftrace/, run with the real bpftrace on lab flows.

mod support;

use bbrtop::lab::{Lab, LabConfig, ss};
use bbrtop_collect::caps::Cap;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};
use support::guard;

/// A running bpftrace; killed (by its own PID) on drop.
struct Bpftrace {
    child: Child,
    lines: Receiver<String>,
    seen: Vec<String>,
}

impl Bpftrace {
    fn start(script: &str) -> Bpftrace {
        let path = format!("{}/tests/bpftrace/{script}", env!("CARGO_MANIFEST_DIR"));
        let mut child = Command::new("bpftrace")
            .arg(path)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("bpftrace is installed");
        let out = child.stdout.take().unwrap();
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for l in BufReader::new(out).lines().map_while(Result::ok) {
                if tx.send(l).is_err() {
                    break;
                }
            }
        });
        let mut b = Bpftrace { child, lines, seen: Vec::new() };
        assert!(
            b.wait_for(Duration::from_secs(30), |l| l.starts_with("Attaching")).is_some(),
            "bpftrace attached"
        );
        b
    }

    /// The first line (from now on) matching `pred`, within `limit`.
    fn wait_for(&mut self, limit: Duration, pred: impl Fn(&str) -> bool) -> Option<String> {
        let end = Instant::now() + limit;
        while let Some(left) = end.checked_duration_since(Instant::now()) {
            let l = self.lines.recv_timeout(left).ok()?;
            self.seen.push(l.clone());
            if pred(&l) {
                return Some(l);
            }
        }
        None
    }
}

impl Drop for Bpftrace {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A lab, CAP_BPF for bpftrace, and tracefs for its tracepoints.
fn privileged(what: &str) -> bool {
    guard::lab(what) && guard::caps(what, &[Cap::Bpf]) && guard::tracefs(what)
}

/// `key=value` from a script's line.
fn field(line: &str, key: &str) -> Option<u64> {
    line.split_whitespace().find_map(|w| w.strip_prefix(key)?.strip_prefix('=')?.parse().ok())
}

#[test]
fn root_rtt_inflation_flags_a_cubic_flow_in_a_deep_buffer() {
    if !privileged("rtt_inflation.bt") {
        return;
    }
    let mut lab = Lab::new(LabConfig::default()).expect("lab");
    let mut bt = Bpftrace::start("rtt_inflation.bt");
    let flow = lab.start_flow("cubic").expect("cubic flow");
    let port = flow.local.port();
    let line = bt.wait_for(Duration::from_secs(40), |l| {
        l.starts_with("INFLATED") && field(l, "sport") == Some(port.into())
    });
    lab.stop_flow(&flow);
    let line = line.unwrap_or_else(|| panic!("no INFLATED line for port {port}: {:?}", bt.seen));
    let (srtt, min, held) =
        (field(&line, "srtt_us").unwrap(), field(&line, "min_us").unwrap(), field(&line, "for_ms").unwrap());
    assert!(srtt * 2 >= min * 3 && srtt >= min + 1000, "{line}");
    assert!(held >= 5000, "{line}");
}

#[test]
fn root_srtt_cwnd_prints_the_flow_in_microseconds() {
    if !privileged("srtt_cwnd.bt") {
        return;
    }
    let mut lab = Lab::new(LabConfig::default()).expect("lab");
    let mut bt = Bpftrace::start("srtt_cwnd.bt");
    // CUBIC keeps the deep tbf queue full, so its RTT sits within a factor two of itself
    // (hundreds of ms) and one sample of ss can be compared with the script's next print.
    let flow = lab.start_flow("cubic").expect("cubic flow");
    let (sport, dport) = (flow.local.port(), flow.peer.port());
    let key = format!(", {sport}, {dport}]: ");
    let value = |l: &str| l.rsplit(": ").next().unwrap().trim().parse::<f64>().unwrap_or(0.0);
    // Wait for the queue to fill (srtt above 200 ms in µs, or 200 s if the unit were wrong).
    let full = bt.wait_for(Duration::from_secs(30), |l| {
        l.starts_with("@srtt_us[") && l.contains(&key) && value(l) > 200_000.0
    });
    assert!(full.is_some(), "the flow's queue filled: {:?}", bt.seen);
    let peer = flow.peer;
    let ss_rtt_ms = lab
        .run_in_sender(move || {
            let out = Command::new("ss").args(["-tin", "dst", &peer.to_string()]).output().unwrap();
            ss::parse_ss_tin(&String::from_utf8_lossy(&out.stdout))
                .into_iter()
                .find(|s| s.peer == Some(peer))
                .and_then(|s| s.rtt_ms)
        })
        .expect("ss in the sender namespace")
        .expect("ss shows the flow");
    let srtt = bt
        .wait_for(Duration::from_secs(5), |l| l.starts_with("@srtt_us[") && l.contains(&key))
        .expect("srtt line");
    let cwnd =
        bt.wait_for(Duration::from_secs(5), |l| l.starts_with("@cwnd[") && l.contains(&key)).expect("cwnd");
    lab.stop_flow(&flow);
    let (srtt_us, cwnd) = (value(&srtt), value(&cwnd));
    assert!(cwnd >= 1.0, "{cwnd}");
    // Microseconds, not ms and not srtt_us<<3: within a factor two of ss's rtt.
    let ratio = srtt_us / (ss_rtt_ms * 1000.0);
    assert!((0.5..=2.0).contains(&ratio), "bpftrace srtt {srtt_us} us vs ss rtt {ss_rtt_ms} ms");
}
