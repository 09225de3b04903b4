//! Counts per congestion control and peer group since bbrtop started, closed sockets included:
//! they never fall, as Prometheus counters must (the engine keeps them so).

use super::group_key::GroupKey;
use super::responses::{ResponseRow, Responses, cc_rows, rows};
use crate::model::Tally;
use serde::{Deserialize, Serialize};

/// The counts of one congestion control's sockets towards one peer group, since bbrtop started
/// (sockets open then count their whole life so far).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CcTotals {
    pub cc: String,
    pub peer_group: String,
    /// The peers' AS (`AS15169`, `unknown`, or `other` past the top ones), with an AS database.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub asn: Option<String>,
    /// The peers' country (ISO code, `unknown` or `other`), with a country database.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub country: Option<String>,
    /// The experiment arm its sockets were drawn into, under `bbrtop experiment`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arm: Option<String>,
    pub counts: Tally,
    /// Response delivery times of its senders (eBPF), loopback left out unless `--loopback`.
    #[serde(default, skip_serializing_if = "Responses::is_empty")]
    pub responses: Responses,
}

impl CcTotals {
    /// Nothing counted yet for `key`.
    pub fn of(key: GroupKey) -> CcTotals {
        CcTotals {
            cc: key.cc.to_string(),
            peer_group: key.peer_group.to_string(),
            asn: key.asn.map(str::to_string),
            country: key.country.map(str::to_string),
            arm: key.arm.map(str::to_string),
            counts: Tally::default(),
            responses: Responses::default(),
        }
    }

    /// Whose counts these are.
    pub fn key(&self) -> GroupKey<'_> {
        GroupKey {
            cc: &self.cc,
            peer_group: &self.peer_group,
            asn: self.asn.as_deref(),
            country: self.country.as_deref(),
            arm: self.arm.as_deref(),
        }
    }
}

/// The response times of `totals` (sorted by cc and peer group, as the engine publishes them)
/// as JSON and the TUI show them.
pub fn response_rows(totals: &[CcTotals]) -> Vec<ResponseRow> {
    rows(&groups_of(totals))
}

/// The per-cc rows alone (every group together), for a view that shows no group's own.
pub fn cc_response_rows(totals: &[CcTotals]) -> Vec<ResponseRow> {
    cc_rows(&groups_of(totals))
}

fn groups_of(totals: &[CcTotals]) -> Vec<(GroupKey<'_>, &Responses)> {
    totals.iter().map(|t| (t.key(), &t.responses)).collect()
}
