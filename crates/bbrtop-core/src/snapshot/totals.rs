//! Counts per congestion control and peer group since bbrtop started, closed sockets included:
//! they never fall, as Prometheus counters must (the engine keeps them so).

use super::responses::{ResponseRow, Responses, rows};
use crate::model::Tally;
use serde::{Deserialize, Serialize};

/// The counts of one congestion control's sockets towards one peer group, since bbrtop started
/// (sockets open then count their whole life so far).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CcTotals {
    pub cc: String,
    pub peer_group: String,
    pub counts: Tally,
    /// Response delivery times of its senders (eBPF), loopback left out unless `--loopback`.
    #[serde(default, skip_serializing_if = "Responses::is_empty")]
    pub responses: Responses,
}

/// The response times of `totals` (sorted by cc and peer group, as the engine publishes them)
/// as JSON and the TUI show them.
pub fn response_rows(totals: &[CcTotals]) -> Vec<ResponseRow> {
    let groups: Vec<_> =
        totals.iter().map(|t| (t.cc.as_str(), t.peer_group.as_str(), &t.responses)).collect();
    rows(&groups)
}
