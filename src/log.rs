//! Logs: levelled and structured, through `tracing`. The library logs with tracing's macros and
//! fields (`warn!(url, error = %e, "...")`); the CLI sets up the one sink at start
//! (`--log.level`, `--log.format`): logfmt by default, as Prometheus exporters log, or JSON, on
//! stderr, or in `--log.file` while the terminal UI owns the screen.

use std::io::Write;
use std::str::FromStr;
use std::sync::{Arc, Mutex};
use tracing::level_filters::LevelFilter;
use tracing_subscriber::Layer;
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::registry::LookupSpan;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Format {
    /// `ts=... level=info target=... message="..." key=value`.
    #[default]
    Logfmt,
    /// One JSON object per line.
    Json,
}

impl FromStr for Format {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "logfmt" => Ok(Format::Logfmt),
            "json" => Ok(Format::Json),
            _ => Err(format!("unknown log format {s:?} (expected logfmt or json)")),
        }
    }
}

/// `--log.level`: debug, info, warn or error.
pub fn parse_level(s: &str) -> Result<LevelFilter, String> {
    match s {
        "debug" => Ok(LevelFilter::DEBUG),
        "info" => Ok(LevelFilter::INFO),
        "warn" => Ok(LevelFilter::WARN),
        "error" => Ok(LevelFilter::ERROR),
        _ => Err(format!("unknown log level {s:?} (expected debug, info, warn or error)")),
    }
}

/// Where the lines go.
pub enum Sink {
    Stderr,
    File(std::fs::File),
    /// The terminal UI without --log.file: it owns stderr's terminal.
    Nowhere,
}

/// The formatting layer of `format` at `level`, writing to `w`.
pub fn layer<S, W>(format: Format, level: LevelFilter, w: W) -> Box<dyn Layer<S> + Send + Sync>
where
    S: tracing::Subscriber + for<'a> LookupSpan<'a>,
    W: for<'w> MakeWriter<'w> + Send + Sync + 'static,
{
    match format {
        Format::Logfmt => {
            tracing_logfmt::builder().with_span_name(false).layer().with_writer(w).with_filter(level).boxed()
        }
        Format::Json => tracing_subscriber::fmt::layer()
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .with_span_list(false)
            .with_writer(w)
            .with_filter(level)
            .boxed(),
    }
}

/// Sets up the process's one sink. Called once, by the CLI, before anything logs.
pub fn init(format: Format, level: LevelFilter, sink: Sink) {
    let registry = tracing_subscriber::registry();
    let result = match sink {
        Sink::Stderr => {
            tracing::subscriber::set_global_default(registry.with(layer(format, level, std::io::stderr)))
        }
        Sink::File(f) => {
            let f = Shared(Arc::new(Mutex::new(f)));
            tracing::subscriber::set_global_default(registry.with(layer(format, level, f)))
        }
        Sink::Nowhere => tracing::subscriber::set_global_default(registry.with(LevelFilter::OFF)),
    };
    // A second init (tests) keeps the first sink.
    let _ = result;
}

/// A file shared by the threads that log.
#[derive(Clone)]
struct Shared(Arc<Mutex<std::fs::File>>);

impl Write for Shared {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).write(b)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).flush()
    }
}

impl<'a> MakeWriter<'a> for Shared {
    type Writer = Shared;
    fn make_writer(&'a self) -> Shared {
        self.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lines written to memory.
    #[derive(Clone, Default)]
    struct Buf(Arc<Mutex<Vec<u8>>>);

    impl Write for Buf {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl<'a> MakeWriter<'a> for Buf {
        type Writer = Buf;
        fn make_writer(&'a self) -> Buf {
            self.clone()
        }
    }

    fn logged(format: Format, level: LevelFilter) -> String {
        let buf = Buf::default();
        let sub = tracing_subscriber::registry().with(layer(format, level, buf.clone()));
        tracing::subscriber::with_default(sub, || {
            tracing::debug!("hidden at info");
            tracing::warn!(url = "http://am:9093", attempt = 2, "alertmanager post failed");
        });
        String::from_utf8(buf.0.lock().unwrap().clone()).unwrap()
    }

    #[test]
    fn logfmt_and_json_lines_with_fields() {
        let text = logged(Format::Logfmt, LevelFilter::INFO);
        assert_eq!(text.lines().count(), 1, "{text}");
        for part in
            ["level=warn", "message=\"alertmanager post failed\"", "url=http://am:9093", "attempt=2", "ts="]
        {
            assert!(text.contains(part), "{part} in {text}");
        }
        let text = logged(Format::Json, LevelFilter::DEBUG);
        let lines: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(lines.len(), 2, "{text}");
        assert_eq!(
            (lines[1]["level"].as_str(), lines[1]["url"].as_str()),
            (Some("WARN"), Some("http://am:9093"))
        );
        assert_eq!(lines[1]["message"], "alertmanager post failed");
        assert_eq!(lines[1]["attempt"], 2);
    }

    #[test]
    fn flags_parse_or_say_what_is_expected() {
        assert_eq!("json".parse::<Format>(), Ok(Format::Json));
        assert!("xml".parse::<Format>().unwrap_err().contains("logfmt or json"));
        assert_eq!(parse_level("warn"), Ok(LevelFilter::WARN));
        assert!(parse_level("loud").unwrap_err().contains("debug, info, warn or error"));
    }
}
