//! Every family `/metrics` serves, declared once: its name as Prometheus stores it, type, unit,
//! help, labels and the bound on each label's values, and when it is served. The encoder takes
//! name, type and help from here; `docs/reference/metrics.md` is generated from here; the
//! shipped rules and dashboards are checked against it (`tests/metric_catalog.rs`). The
//! per-socket families are the columns' (`bbrtop_core::columns`), which declare them.

use bbrtop_core::columns;

mod doc;
mod families;
pub use doc::markdown;
pub use families::*;
#[cfg(test)]
mod tests;

/// What a family's samples are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Counter,
    Gauge,
    /// Cumulative: `rate()` applies.
    Histogram,
    /// Of the sockets open now, whose counts fall as they close (OpenMetrics `gaugehistogram`,
    /// protobuf `GAUGE_HISTOGRAM`; text 0.0.4 has no such type and gets `histogram`).
    GaugeHistogram,
}

impl Kind {
    /// The type OpenMetrics text writes on the family's `# TYPE` line.
    pub fn openmetrics(self) -> &'static str {
        match self {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
            Kind::Histogram => "histogram",
            Kind::GaugeHistogram => "gaugehistogram",
        }
    }

    pub fn is_histogram(self) -> bool {
        matches!(self, Kind::Histogram | Kind::GaugeHistogram)
    }
}

/// The base unit a family's values are in; its name ends with it (before `_total`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// A count, a state (1 or 0) or a label carrier.
    None,
    Seconds,
    Bytes,
    BytesPerSecond,
    Ratio,
}

impl Unit {
    pub fn suffix(self) -> &'static str {
        match self {
            Unit::None => "",
            Unit::Seconds => "_seconds",
            Unit::Bytes => "_bytes",
            Unit::BytesPerSecond => "_bytes_per_second",
            Unit::Ratio => "_ratio",
        }
    }

    /// A column's metric unit: what [`columns::Column::base_value`] converts its values to.
    fn of_column(u: columns::Unit) -> Unit {
        match u {
            columns::Unit::Micros => Unit::Seconds,
            columns::Unit::BytesPerSec => Unit::BytesPerSecond,
            columns::Unit::Ratio | columns::Unit::Share => Unit::Ratio,
            _ => Unit::None,
        }
    }
}

/// What keeps a label's values few.
#[derive(Clone, Copy, Debug)]
pub enum Bound {
    /// One of these values.
    OneOf(fn() -> Vec<&'static str>),
    /// A set bounded by configuration or by the host, in words.
    Set(&'static str),
}

#[derive(Clone, Copy, Debug)]
pub struct Label {
    pub name: &'static str,
    pub bound: Bound,
}

/// One metric family.
#[derive(Clone, Copy, Debug)]
pub struct Family {
    /// As Prometheus stores it: counters end in `_total`; a histogram's series add `_bucket`,
    /// `_sum` and `_count`.
    pub name: &'static str,
    pub kind: Kind,
    pub unit: Unit,
    pub help: &'static str,
    /// Every label its series may carry (some only where their source is configured).
    pub labels: &'static [Label],
    /// When it is served.
    pub served: &'static str,
}

impl Family {
    /// The name the encoder is given: prometheus-client appends `_total` to a counter's.
    pub fn descriptor_name(&self) -> &'static str {
        match self.kind {
            Kind::Counter => self.name.strip_suffix("_total").unwrap_or(self.name),
            _ => self.name,
        }
    }

    /// Whether `series` (a name a query reads) is one of this family's.
    pub fn has_series(&self, series: &str) -> bool {
        match series.strip_prefix(self.name) {
            Some("") => true,
            Some(tail) => self.kind.is_histogram() && ["_bucket", "_sum", "_count"].contains(&tail),
            None => false,
        }
    }
}

/// Every family: the declared ones, then the per-socket ones of the columns.
pub fn all() -> impl Iterator<Item = Family> {
    FAMILIES.iter().copied().chain(columns::ALL.iter().filter_map(|c| per_socket(c)))
}

/// The family a queried series name belongs to.
pub fn family_of(series: &str) -> Option<Family> {
    all().find(|f| f.has_series(series))
}
