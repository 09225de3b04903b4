//! The default routes' initial windows: `initcwnd`, the congestion window a new connection starts
//! with (the kernel's default is 10 segments), and `initrwnd`, the receive window it advertises
//! first. Both are set per route. Pure: `ip -j route show table all default` is parsed here and
//! run in [`super::host`].

use super::{Check, Status, check};
use serde::Serialize;
use serde_json::Value;

/// The check's name; a namespace's routes are its own, as its qdiscs are.
pub const NAME: &str = "initcwnd";

/// TCP_INIT_CWND: the initial window of a route that sets none.
pub const KERNEL_INITCWND: u32 = 10;

/// One default route, of any table.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DefaultRoute {
    pub ipv6: bool,
    /// Its device, or each next hop's of a multipath route.
    pub devs: Vec<String>,
    /// `None` for the main table.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub table: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub initcwnd: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub initrwnd: Option<u32>,
}

/// The default routes that carry traffic (not `unreachable`, `blackhole` or `prohibit`) from the
/// output of `ip -j -4|-6 route show table all default`.
pub fn parse(json: &str, ipv6: bool) -> Result<Vec<DefaultRoute>, String> {
    // iproute2 prints nothing for an empty table on some versions, "[]" on others.
    if json.trim().is_empty() {
        return Ok(Vec::new());
    }
    let routes: Vec<Value> = serde_json::from_str(json).map_err(|e| format!("ip -j route show: {e}"))?;
    Ok(routes
        .iter()
        .filter(|r| r["type"].as_str().is_none_or(|t| t == "unicast"))
        .map(|r| DefaultRoute {
            ipv6,
            devs: match r["dev"].as_str() {
                Some(dev) => vec![dev.to_string()],
                None => r["nexthops"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|h| h["dev"].as_str().map(str::to_string))
                    .collect(),
            },
            table: r["table"].as_str().map(str::to_string),
            initcwnd: metric(r, "initcwnd"),
            initrwnd: metric(r, "initrwnd"),
        })
        .collect())
}

/// A route metric: iproute2 prints them as `"metrics":[{"initcwnd":32,...}]`.
fn metric(route: &Value, key: &str) -> Option<u32> {
    let all = route["metrics"].as_array()?;
    all.iter().find_map(|m| m[key].as_u64()).and_then(|v| u32::try_from(v).ok())
}

impl DefaultRoute {
    /// "10", or "32, initrwnd 64".
    fn windows(&self) -> String {
        let cwnd = self.initcwnd.unwrap_or(KERNEL_INITCWND);
        match self.initrwnd {
            Some(rwnd) => format!("{cwnd}, initrwnd {rwnd}"),
            None => cwnd.to_string(),
        }
    }

    /// "eth0", "d0+d2 table 300", "eth0 (IPv6)".
    fn label(&self) -> String {
        let family = if self.ipv6 { " (IPv6)" } else { "" };
        let table = self.table.as_ref().map_or(String::new(), |t| format!(" table {t}"));
        format!("{}{family}{table}", self.devs.join("+"))
    }
}

const WHY: &str = "New connections start with this many segments in flight (the kernel's default 10; set per route: ip route change default ... initcwnd N), and initrwnd is the first receive window they advertise. A short response takes a few rounds of it, so response times of BBR and CUBIC compare fairly only between hosts with the same initial windows.";

/// The default routes' initial windows, as information: no value is wrong, but a value that
/// differs between hosts confounds a comparison of response times between them.
pub fn check_routes(routes: Option<&[DefaultRoute]>) -> Check {
    let Some(routes) = routes else {
        return check(NAME, Status::Info, "unknown", "ip -j route show could not be run.", &[]);
    };
    let Some(first) = routes.first() else {
        let why = format!(
            "No default route: connections start with the kernel's default ({KERNEL_INITCWND}) unless a more specific route sets it."
        );
        return check(NAME, Status::Info, "no default route", &why, &[]);
    };
    if routes.iter().all(|r| r.windows() == first.windows()) {
        return check(NAME, Status::Info, first.windows(), WHY, &[]);
    }
    let each: Vec<String> = routes.iter().map(|r| format!("{}: {}", r.label(), r.windows())).collect();
    let why = format!("{WHY} The default routes differ: a connection starts with its route's.");
    check(NAME, Status::Info, each.join("; "), &why, &[])
}
