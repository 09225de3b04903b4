//! Counts per congestion control and peer group since bbrtop started, closed sockets included:
//! they never fall, as Prometheus counters must (the engine keeps them so).

use crate::model::Tally;
use serde::{Deserialize, Serialize};

/// The counts of one congestion control's sockets towards one peer group, since bbrtop started
/// (sockets open then count their whole life so far).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CcTotals {
    pub cc: String,
    pub peer_group: String,
    pub counts: Tally,
}
