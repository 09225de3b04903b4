//! What the kernel half of bbrtop can do on a host, feature by feature: declared once here, so
//! `check`, `doctor`, the TUI header, `/metrics`, the logs and docs/kernels.md's table say the
//! same. A kernel that cannot carry a feature loses that feature only, and says why.

use super::health::Reason;
use serde::{Deserialize, Serialize};

/// One thing the eBPF programs give, and the kernel it needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Feature {
    /// tcp_probe: the queue alert judged in the kernel on every ACK, RTT windows.
    Alert,
    /// `struct bbr` read on the ACK path: BBR's true mode and cycle step.
    BbrState,
    /// The socket walk: the sockets that moved, in every network namespace.
    Walk,
    /// One record per closed socket, short flows included.
    ClosedFlows,
    /// Each response's delivery time, from its first byte written to the ACK of its last.
    Responses,
    /// `bbrtop experiment`'s sock_ops program: each new connection's cc drawn by a hash.
    Experiment,
}

impl Feature {
    /// In the order the table lists them.
    pub const ALL: [Feature; 6] = [
        Feature::Alert,
        Feature::BbrState,
        Feature::Walk,
        Feature::ClosedFlows,
        Feature::Responses,
        Feature::Experiment,
    ];

    /// Those the eBPF collector reports (the experiment has a command of its own).
    pub const COLLECTOR: [Feature; 5] =
        [Feature::Alert, Feature::BbrState, Feature::Walk, Feature::ClosedFlows, Feature::Responses];

    /// The `feature` label's value, and the name `check` prints.
    pub fn label(self) -> &'static str {
        match self {
            Feature::Alert => "alert",
            Feature::BbrState => "bbr_state",
            Feature::Walk => "walk",
            Feature::ClosedFlows => "closed_flows",
            Feature::Responses => "responses",
            Feature::Experiment => "experiment",
        }
    }

    /// What it gives, for people.
    pub fn gives(self) -> &'static str {
        match self {
            Feature::Alert => "queue alert judged per ACK in the kernel (prompt RTT samples), RTT windows",
            Feature::BbrState => "BBR's mode, cycle step, min RTT and bandwidth read from struct bbr",
            Feature::Walk => "the sockets that moved, in every network namespace (pods)",
            Feature::ClosedFlows => "a record of every closed socket, short flows included",
            Feature::Responses => "response delivery times (first byte written to last byte acked)",
            Feature::Experiment => "`bbrtop experiment`: a cc per new connection, by a seeded hash",
        }
    }

    /// The oldest kernel it runs on, and what it takes there.
    pub fn floor(self) -> &'static str {
        match self {
            Feature::Alert | Feature::Walk | Feature::ClosedFlows => {
                "5.12 (socket storage 5.11 and socket cookies 5.12 in tracing programs)"
            }
            Feature::BbrState => "5.12, with BBR built in or tcp_bbr loaded (read from then on)",
            Feature::Responses => {
                "5.12 with BPF trampolines (fentry on tcp_sendmsg_locked); the tracepoint from 6.16"
            }
            Feature::Experiment => "5.10, the matrix's oldest (sock_ops setting TCP_CONGESTION is older)",
        }
    }

    /// The oldest release (major, minor) it runs on: what the kernel matrix expects of each
    /// kernel, and the number [`Feature::floor`] begins with.
    pub fn since(self) -> (u32, u32) {
        match self {
            Feature::Experiment => (5, 10),
            _ => (5, 12),
        }
    }

    /// What bbrtop does without it.
    pub fn below(self) -> &'static str {
        match self {
            Feature::Alert => "netlink judges srtt at each poll, of network-limited senders only",
            Feature::BbrState => "BBR's phase inferred from the gains netlink reports",
            Feature::Walk => "netlink reads bbrtop's own network namespace (or --netns)",
            Feature::ClosedFlows => "sockets that open and close between two polls are not seen",
            Feature::Responses => "no response delivery times",
            Feature::Experiment => "`bbrtop experiment` refuses to start",
        }
    }
}

/// The kernels tests/kernel_matrix.rs proves each feature on: Debian's 5.10, 6.1 and 6.12, booted
/// under QEMU, and the CI machine's own 6.18.
pub const MATRIX: [(u32, u32); 4] = [(5, 10), (6, 1), (6, 12), (6, 18)];

/// docs/kernels.md's kernel table (between its `kernel-table` markers; a test holds it to this).
pub fn kernel_table() -> String {
    let mut t = String::from(
        "| feature | what it gives | needs Linux | below that, bbrtop | on the matrix |\n| --- | --- | --- | --- | --- |\n",
    );
    for f in Feature::ALL {
        let matrix: Vec<String> = MATRIX
            .iter()
            .map(|&(major, minor)| {
                format!("{major}.{minor} {}", if (major, minor) >= f.since() { "on" } else { "off" })
            })
            .collect();
        t += &format!(
            "| `{}` | {} | {} | {} | {} |\n",
            f.label(),
            f.gives(),
            f.floor(),
            f.below(),
            matrix.join(", ")
        );
    }
    t
}

/// A feature, and why it is off here (None: on).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FeatureState {
    pub feature: Feature,
    pub off: Option<Reason>,
}

impl FeatureState {
    pub fn on(feature: Feature) -> FeatureState {
        FeatureState { feature, off: None }
    }

    pub fn off(feature: Feature, why: Reason) -> FeatureState {
        FeatureState { feature, off: Some(why) }
    }
}

/// In JSON: `{"feature":"responses","enabled":false,"cause":"kernel_lacks","reason":"..."}`.
#[derive(Serialize, Deserialize)]
struct Fields {
    feature: Feature,
    enabled: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    cause: Option<super::health::Cause>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
}

impl Serialize for FeatureState {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        Fields {
            feature: self.feature,
            enabled: self.off.is_none(),
            cause: self.off.as_ref().map(|r| r.cause),
            reason: self.off.as_ref().map(|r| r.detail.clone()),
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for FeatureState {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<FeatureState, D::Error> {
        let f = Fields::deserialize(d)?;
        let off = match (f.enabled, f.cause) {
            (true, _) => None,
            (false, cause) => Some(Reason::new(
                cause.unwrap_or(super::health::Cause::NotAttached),
                f.reason.unwrap_or_default(),
            )),
        };
        Ok(FeatureState { feature: f.feature, off })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::seam::health::Cause;

    #[test]
    fn labels_are_distinct_and_every_feature_says_its_floor() {
        let labels: std::collections::BTreeSet<_> = Feature::ALL.iter().map(|f| f.label()).collect();
        assert_eq!(labels.len(), Feature::ALL.len());
        for f in Feature::ALL {
            let (major, minor) = f.since();
            assert!(f.floor().starts_with(&format!("{major}.{minor}")), "{f:?}");
            assert!(!f.gives().is_empty() && !f.below().is_empty(), "{f:?}");
        }
        assert!(Feature::COLLECTOR.iter().all(|f| Feature::ALL.contains(f)));
    }

    /// docs/kernels.md's table is this catalog's, as generated.
    #[test]
    fn the_docs_kernel_table_is_the_catalog() {
        let doc =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/kernels.md")).unwrap();
        let (start, end) = ("<!-- kernel-table:start -->\n", "<!-- kernel-table:end -->");
        let at = doc.find(start).expect("docs/kernels.md's kernel-table:start marker") + start.len();
        let len = doc[at..].find(end).expect("its end marker");
        assert_eq!(
            &doc[at..at + len],
            kernel_table(),
            "docs/kernels.md's kernel table: paste kernel_table()"
        );
    }

    #[test]
    fn a_state_reads_back_from_its_json() {
        let off = FeatureState::off(
            Feature::Responses,
            Reason::new(Cause::KernelLacks, "no tracepoint tcp:tcp_sendmsg_locked (Linux 6.16)"),
        );
        let json = serde_json::to_string(&off).unwrap();
        assert_eq!(
            json,
            r#"{"feature":"responses","enabled":false,"cause":"kernel_lacks","reason":"no tracepoint tcp:tcp_sendmsg_locked (Linux 6.16)"}"#
        );
        assert_eq!(serde_json::from_str::<FeatureState>(&json).unwrap(), off);
        let on = FeatureState::on(Feature::Alert);
        let json = serde_json::to_string(&on).unwrap();
        assert_eq!(json, r#"{"feature":"alert","enabled":true}"#);
        assert_eq!(serde_json::from_str::<FeatureState>(&json).unwrap(), on);
    }
}
