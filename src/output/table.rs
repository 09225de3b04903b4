//! The aligned table `bbrtop snapshot` prints: one row per socket, ss-like units, its columns
//! from the catalog (`bbrtop_core::columns`), each header one word (spaces become `_`) so that
//! `awk` and `column -t` split it.

use bbrtop_core::columns::{self, Column};
use bbrtop_core::snapshot::SocketView;
use std::io::Write;
use std::sync::LazyLock;

/// The columns, in order: the catalog's that say they are shown here.
pub static COLUMNS: LazyLock<Vec<&'static Column>> = LazyLock::new(|| columns::in_table().collect());

/// A column's header as this table writes it.
pub fn header(c: &Column) -> String {
    c.header.replace(' ', "_")
}

/// Writes the header and one aligned row per socket.
pub fn write<W: Write>(w: &mut W, sockets: &[&SocketView]) -> std::io::Result<()> {
    let head: Vec<String> = COLUMNS.iter().map(|c| header(c)).collect();
    let rows: Vec<Vec<String>> =
        sockets.iter().map(|s| COLUMNS.iter().map(|c| c.text(s)).collect()).collect();
    let mut width: Vec<usize> = head.iter().map(String::len).collect();
    for r in &rows {
        for (w, c) in width.iter_mut().zip(r) {
            *w = (*w).max(c.len());
        }
    }
    let line = |w: &mut W, cells: &[String]| -> std::io::Result<()> {
        let mut out = String::new();
        for (i, (c, wd)) in cells.iter().zip(&width).enumerate() {
            if i + 1 == cells.len() {
                out.push_str(c);
            } else {
                out.push_str(&format!("{c:<wd$}  "));
            }
        }
        writeln!(w, "{}", out.trim_end())
    };
    line(w, &head)?;
    for r in &rows {
        line(w, r)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use bbrtop_core::testing::record;

    /// docs/reference/columns.md's table of columns is the catalog's, row for row.
    #[test]
    fn the_columns_reference_lists_the_catalog() {
        let doc = include_str!("../../docs/reference/columns.md");
        let table = columns::markdown();
        assert!(
            doc.contains(&table),
            "docs/reference/columns.md's column table differs from the catalog; it should read:\n{table}"
        );
    }

    #[test]
    fn headers_are_one_word_and_rows_align() {
        let s = bbrtop_core::snapshot::SocketView {
            record: bbrtop_core::snapshot::RecordRef::single(record(1, "bbr").srtt_us(1234).build()),
            derived: Default::default(),
            history: bbrtop_core::snapshot::HistoryView::none(),
        };
        let mut out = Vec::new();
        write(&mut out, &[&s]).unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let head: Vec<&str> = lines[0].split_whitespace().collect();
        assert_eq!(head.len(), COLUMNS.len(), "{text}");
        assert_eq!(&head[5..7], ["BBR_BW", "BBR_MRTT"]);
        assert_eq!(&head[9..11], ["SRTT", "MIN_RTT"]);
        let srtt = lines[0].find("SRTT").unwrap();
        assert_eq!(&lines[1][srtt..srtt + 7], "1.234ms", "{text}");
    }
}
