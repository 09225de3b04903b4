//! Closed flows per congestion control since start: counts and cumulative histograms of their
//! final srtt and life-long throughput.

use super::hist::{Hist, RATE_BOUNDS, RTT_BOUNDS};
use crate::model::{ClosedFlow, Count};
use serde::{Deserialize, Serialize};

/// Closed flows of one congestion control since start.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClosedAggregate {
    pub cc: String,
    pub count: u64,
    pub bytes_acked_total: u64,
    /// Final smoothed RTTs, in seconds.
    pub srtt_seconds: Hist,
    /// Bytes acked over the flow's life, per second (flows whose lifetime is known).
    pub throughput_bytes_per_second: Hist,
}

impl ClosedAggregate {
    pub fn new(cc: &str) -> ClosedAggregate {
        ClosedAggregate {
            cc: cc.to_string(),
            count: 0,
            bytes_acked_total: 0,
            srtt_seconds: Hist::new(RTT_BOUNDS),
            throughput_bytes_per_second: Hist::new(RATE_BOUNDS),
        }
    }

    pub fn add(&mut self, c: &ClosedFlow) {
        self.count += 1;
        let acked = c.counts[Count::BytesAcked];
        self.bytes_acked_total += acked;
        self.srtt_seconds.observe(f64::from(c.srtt_us) / 1e6);
        if let Some(life) = c.lifetime_seconds.filter(|l| *l > 0.0) {
            self.throughput_bytes_per_second.observe(acked as f64 / life);
        }
    }
}
