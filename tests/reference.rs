//! The reference test: a BBR flow and a CUBIC flow through a 20 Mbit/s tbf with a deep buffer,
//! and bbrtop's values for them checked against `ss -tin` on the same sockets, in the same
//! namespace, at the same moment. `ss` is read just before and just after bbrtop, so the only
//! slack allowed is what changed between the two reads (plus ss's printed precision).

mod support;

use std::time::Duration;
use support::guard;

#[test]
fn root_bbrtop_agrees_with_ss_on_bbr_and_cubic_flows() {
    if !guard::lab("reference test") {
        return;
    }
    support::reference::bbr_and_cubic_agree_with_ss(Duration::from_secs(40));
}
