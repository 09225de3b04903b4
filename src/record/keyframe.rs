//! A keyframe at the cost of what moved: a chunk's keyframe copies, as their bytes are, the row
//! groups of the chunk before's keyframe in which no socket moved, and encodes the rest. Only the
//! poll's columns (`seq`, `at_ms`) of a copied row group are encoded anew: a row says nothing that
//! changes with time alone (`sockets.rs`), so an idle socket's keyframe row is the one before.
//! Each chunk's file still holds every socket's row, and reads and is deleted on its own.
//!
//! A row group is a set of sockets, not a span of cookies: cookies are given when a socket is
//! first looked at, so a busy socket's sits among idle ones'. The rows encoded are ordered so
//! that the next keyframe can copy more: the sockets that did not move in the chunk before
//! first, in cookie order, then those that moved or came. Readers take a keyframe's rows in any
//! order (`rebuild.rs`; DuckDB by the SQL of docs/recordings.md).
//!
//! While a chunk is written, each row of a later poll marks its socket, and its row group, moved
//! (`KeyGroups`). When the chunk has closed, its file's row groups of keyframe rows in which
//! nothing moved are the next keyframe's `Base`, which also takes what moved between the chunk's
//! last poll and the next keyframe.

use super::format::Meta;
use super::sockets;
use bbrtop_core::model::Cookie;
use bbrtop_core::snapshot::Sockets;
use bbrtop_core::snapshot::sockets::Change;
use bytes::Bytes;
use parquet::basic::Compression;
use parquet::file::metadata::{ParquetMetaData, RowGroupMetaData};
use parquet::file::reader::{ChunkReader, Length};
use std::fs::File;
use std::io::Read;

/// One row group of a keyframe: its lowest and highest cookies, its rows, and whether one of its
/// sockets moved or went since.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeyGroup {
    pub first: Cookie,
    pub last: Cookie,
    pub rows: usize,
    pub moved: bool,
}

/// A keyframe's sockets, each with its row group and whether it moved since: some 11 bytes a
/// socket while its chunk is written (1.1 MB at 100k).
#[derive(Clone, Debug, Default)]
pub struct KeyGroups {
    /// In cookie order.
    cookies: Vec<Cookie>,
    group: Vec<u32>,
    moved: Vec<bool>,
    groups: Vec<KeyGroup>,
}

impl KeyGroups {
    /// A row for socket `cookie` was written (it came, moved or went): it, and its row group if
    /// it has one, moved. A binary search: what a poll's rows cost here is what moved.
    pub fn moved(&mut self, cookie: Cookie) {
        if let Ok(i) = self.cookies.binary_search(&cookie) {
            self.moved[i] = true;
            self.groups[self.group[i] as usize].moved = true;
        }
    }

    #[cfg(test)]
    pub fn groups(&self) -> &[KeyGroup] {
        &self.groups
    }

    /// A row group of the sockets at places `m` of `cookies` (the keyframe's).
    fn add(&mut self, cookies: &[Cookie], m: &[u32]) {
        let g = self.groups.len() as u32;
        let span = m.iter().map(|&i| cookies[i as usize]);
        let (first, last) = (span.clone().min().unwrap_or(0), span.max().unwrap_or(0));
        self.groups.push(KeyGroup { first, last, rows: m.len(), moved: false });
        m.iter().for_each(|&i| self.group[i as usize] = g);
    }

    /// The socket's row group, and whether it moved; `None` for a socket not in the keyframe.
    fn of(&self, cookie: Cookie) -> Option<(usize, bool)> {
        let i = self.cookies.binary_search(&cookie).ok()?;
        Some((self.group[i] as usize, self.moved[i]))
    }
}

/// The cookies a row group of keyframe rows spans, read from its column statistics; `None` for a
/// row group with another kind of row, or not compressed (a later segment's).
pub fn keyframe_span(rg: &RowGroupMetaData) -> Option<(Cookie, Cookie)> {
    let column = |name: &str| rg.columns().iter().find(|c| c.column_path().string() == name);
    let stats = |name: &str| column(name).and_then(|c| c.statistics());
    let kind = stats("row")?;
    let key = sockets::Kind::Key.label().as_bytes();
    if kind.null_count_opt() != Some(0) || kind.min_bytes_opt()? != key || kind.max_bytes_opt()? != key {
        return None;
    }
    if rg.columns().iter().any(|c| c.compression() == Compression::UNCOMPRESSED) {
        return None;
    }
    let cookie = stats("cookie")?;
    let int = |b: &[u8]| Some(u64::from_le_bytes(b.try_into().ok()?));
    Some((int(cookie.min_bytes_opt()?)?, int(cookie.max_bytes_opt()?)?))
}

/// A closed chunk's sockets file: on disk (a recording, hindsight's spool; open, for retention
/// may remove its name first) or in memory (hindsight held in memory).
pub enum Source {
    File(File),
    Bytes(Bytes),
}

impl Length for Source {
    fn len(&self) -> u64 {
        match self {
            Source::File(f) => f.len(),
            Source::Bytes(b) => b.len() as u64,
        }
    }
}

impl ChunkReader for Source {
    type T = Box<dyn Read>;

    fn get_read(&self, start: u64) -> parquet::errors::Result<Self::T> {
        Ok(match self {
            Source::File(f) => Box::new(f.get_read(start)?),
            Source::Bytes(b) => Box::new(b.get_read(start)?),
        })
    }

    fn get_bytes(&self, start: u64, length: usize) -> parquet::errors::Result<Bytes> {
        match self {
            Source::File(f) => f.get_bytes(start, length),
            Source::Bytes(b) => b.get_bytes(start, length),
        }
    }
}

/// The keyframe of a closed chunk, for the next keyframe to copy from.
pub struct Base {
    pub from: Source,
    key: KeyGroups,
    /// Each keyframe row group's row group in the file, where it is one of its own (a small one
    /// a chunk's compaction merged with the changes is not).
    files: Vec<Option<RowGroupMetaData>>,
    /// The chunk's last poll: what moved since is marked at the next keyframe.
    last: Sockets,
    pub meta: Meta,
}

impl Base {
    /// The chunk whose sockets file is `from` (read as `metadata`), its keyframe `key` and its
    /// last poll's sockets `last`.
    pub fn new(from: Source, metadata: &ParquetMetaData, key: KeyGroups, last: Sockets, meta: Meta) -> Base {
        let mut files = vec![None; key.groups.len()];
        for rg in metadata.row_groups() {
            let Some((first, last)) = keyframe_span(rg) else { continue };
            let same = |g: &KeyGroup| g.first == first && g.last == last && g.rows as i64 == rg.num_rows();
            if let Some(i) = key.groups.iter().position(same) {
                files[i] = Some(rg.clone());
            }
        }
        Base { from, key, files, last, meta }
    }

    /// Marks what moved between the chunk's last poll and `now`, the next keyframe's; the
    /// keyframe, and which of its row groups may be copied (none of their sockets moved, and the
    /// file holds each as one), for `plan`.
    pub fn settle(&mut self, now: &Sockets) -> (&KeyGroups, Vec<bool>) {
        for c in now.changes_since(&self.last) {
            let (Change::Added(e) | Change::Changed { new: e, .. } | Change::Gone(e)) = c;
            self.key.moved(e.cookie);
        }
        let copyable =
            self.key.groups.iter().zip(&self.files).map(|(g, f)| !g.moved && f.is_some()).collect();
        (&self.key, copyable)
    }

    /// Row group `g` of the keyframe, in the file.
    pub fn row_group(&self, g: usize) -> Option<&RowGroupMetaData> {
        self.files.get(g)?.as_ref()
    }
}

/// One row group of a keyframe to write.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// The base's row group `g`, of `rows` rows, copied.
    Copy { g: usize, rows: usize },
    /// The sockets at these places of the keyframe's (in cookie order), encoded.
    Encode(Vec<u32>),
}

/// A keyframe's row groups, and its sockets' for the chunk's later polls to mark.
pub struct Plan {
    pub steps: Vec<Step>,
    pub key: KeyGroups,
}

/// The row groups of a keyframe of sockets `cookies` (in cookie order), `before` the chunk
/// before's keyframe and which of its row groups may be copied (`Base::settle`): each of those
/// whose sockets are all here, copied; the other sockets encoded in row groups of up to
/// `max_rows`, those that did not move apart from (and before) those that moved or came.
pub fn plan(cookies: Vec<Cookie>, before: Option<(&KeyGroups, Vec<bool>)>, max_rows: usize) -> Plan {
    let (base, copyable) = before.map_or((None, Vec::new()), |(k, c)| (Some(k), c));
    // Each socket's base row group if that is copied, else whether it moved.
    let mut members = vec![Vec::new(); copyable.len()];
    let (mut still, mut moved) = (Vec::new(), Vec::new());
    for (i, &c) in cookies.iter().enumerate() {
        match base.and_then(|b| b.of(c)) {
            Some((g, _)) if copyable.get(g) == Some(&true) => members[g].push(i as u32),
            Some((_, false)) => still.push(i as u32),
            _ => moved.push(i as u32),
        }
    }
    let n = cookies.len();
    let mut key = KeyGroups { group: vec![0; n], moved: vec![false; n], ..KeyGroups::default() };
    let mut steps = Vec::new();
    for (g, m) in members.into_iter().enumerate() {
        if m.is_empty() {
            continue;
        }
        // Short of a socket that went without a row: a guard, as the marks say so first.
        if base.is_some_and(|b| b.groups[g].rows == m.len()) {
            key.add(&cookies, &m);
            steps.push(Step::Copy { g, rows: m.len() });
        } else {
            still.extend(m);
        }
    }
    still.sort_unstable();
    // Apart, so that a socket that moves leaves those that did not copyable next time.
    for fresh in [still, moved] {
        for m in fresh.chunks(max_rows.max(1)) {
            key.add(&cookies, m);
            steps.push(Step::Encode(m.to_vec()));
        }
    }
    key.cookies = cookies;
    Plan { steps, key }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encoded(plan: &Plan) -> Vec<Vec<Cookie>> {
        let cookies = &plan.key.cookies;
        let rows = |m: &[u32]| m.iter().map(|&i| cookies[i as usize]).collect();
        plan.steps.iter().filter_map(|s| if let Step::Encode(m) = s { Some(rows(m)) } else { None }).collect()
    }

    #[test]
    fn without_a_base_a_keyframe_is_encoded_in_cookie_order_in_groups_of_at_most_max_rows() {
        let plan = plan((10..17).collect(), None, 3);
        assert_eq!(encoded(&plan), [vec![10, 11, 12], vec![13, 14, 15], vec![16]]);
        let spans: Vec<_> = plan.key.groups().iter().map(|g| (g.first, g.last, g.rows)).collect();
        assert_eq!(spans, [(10, 12, 3), (13, 15, 3), (16, 16, 1)]);
        assert!(super::plan(Vec::new(), None, 3).steps.is_empty());
    }

    #[test]
    fn a_row_marks_its_socket_and_its_group_and_nothing_else() {
        let mut plan = plan(vec![1, 5, 9, 12], None, 2);
        for c in [0, 6, 40] {
            plan.key.moved(c);
        }
        assert!(plan.key.groups().iter().all(|g| !g.moved), "sockets not in the keyframe");
        plan.key.moved(12);
        assert_eq!(plan.key.groups().iter().map(|g| g.moved).collect::<Vec<_>>(), [false, true]);
        assert_eq!(plan.key.of(9), Some((1, false)));
        assert_eq!(plan.key.of(12), Some((1, true)));
    }

    #[test]
    fn unmoved_groups_are_copied_and_the_rest_encoded_still_ones_first() {
        // The chunk before: groups {1, 2, 3}, {4, 5, 6}, {7, 8, 9}.
        let mut key = plan((1..=9).collect(), None, 3).key;
        key.moved(5);
        // Now 4 went (its row marked it), 10 came; group 2 is not in the file as one.
        key.moved(4);
        let copyable = vec![true, false, false];
        let cookies = vec![1, 2, 3, 5, 6, 7, 8, 9, 10];
        let plan = plan(cookies, Some((&key, copyable)), 3);
        assert_eq!(plan.steps[0], Step::Copy { g: 0, rows: 3 });
        // 6 and 7..9 did not move: first, in cookie order; then, apart, 5 (moved) and 10 (came).
        assert_eq!(encoded(&plan), [vec![6, 7, 8], vec![9], vec![5, 10]]);
        let spans: Vec<_> = plan.key.groups().iter().map(|g| (g.first, g.last, g.rows)).collect();
        assert_eq!(spans, [(1, 3, 3), (6, 8, 3), (9, 9, 1), (5, 10, 2)]);
        assert_eq!(plan.key.of(10), Some((3, false)), "each socket's new group");
    }

    #[test]
    fn a_group_missing_a_socket_is_encoded() {
        // Offered as copyable though 2 is gone: never copied (a guard; the marks say so first).
        let key = plan(vec![1, 2, 3], None, 3).key;
        let plan = plan(vec![1, 3], Some((&key, vec![true])), 3);
        assert_eq!(plan.steps, [Step::Encode(vec![0, 1])]);
    }
}
