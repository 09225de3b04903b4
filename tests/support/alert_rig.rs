//! The whole alert path on real kernels and servers, for the alert test and the latency
//! benchmark: a real Alertmanager, a lab, and `bbrtop export --netns` on the lab's sender.

use super::http::{free_port, get};
use super::servers::Alertmanager;
use super::{Proc, poll_until};
use bbrtop::lab::{Flow, Lab, LabConfig};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_bbrtop");

/// Alertmanager, a lab, and `bbrtop export` on the lab's sender namespace.
pub struct Rig {
    pub am: Alertmanager,
    pub port: u16,
    _exporter: Proc,
    _hindsight: tempfile::TempDir,
    pub lab: Lab,
}

impl Rig {
    pub fn start() -> Rig {
        let am = Alertmanager::start();
        let lab = Lab::new(LabConfig::default()).unwrap();
        let port = free_port();
        let (hindsight, hindsight_flag) = super::hindsight_dir();
        let exporter = Proc(
            Command::new(BIN)
                .arg("export")
                .arg(format!("--netns={}", lab.sender_netns().display()))
                .args(["--web.listen-address", &format!("127.0.0.1:{port}")])
                .args(["--interval", "250ms", "--cc", "cubic", "--alertmanager.url", &am.url()])
                .args(["--alertmanager.resend-interval", "5s"])
                .arg(hindsight_flag)
                .stdout(Stdio::null())
                .spawn()
                .unwrap(),
        );
        let ready =
            poll_until(Duration::from_secs(10), || get(port, "/-/ready", None).ok().filter(|r| r.0 == 200));
        assert!(ready.is_some(), "bbrtop export never became ready");
        Rig { am, port, _exporter: exporter, _hindsight: hindsight, lab }
    }

    /// Starts a CUBIC flow; returns the first alert Alertmanager lists, how long after the start
    /// it appeared, and the flow (stop it with `lab.stop_flow`).
    pub fn onset(&mut self) -> (serde_json::Value, Duration, Flow) {
        let t0 = Instant::now();
        let flow = self.lab.start_flow("cubic").unwrap();
        let alert = poll_until(Duration::from_secs(15), || self.am.active_rtt_alerts().into_iter().next());
        let took = t0.elapsed();
        let alert = alert.expect("no TcpRttInflation alert reached Alertmanager within 15 s");
        (alert, took, flow)
    }

    pub fn wait_resolved(&self) {
        let resolved =
            poll_until(Duration::from_secs(15), || self.am.active_rtt_alerts().is_empty().then_some(()));
        assert!(
            resolved.is_some(),
            "the alert did not resolve after the flow stopped: {:?}",
            self.am.active_rtt_alerts()
        );
    }
}
