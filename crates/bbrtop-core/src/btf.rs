//! Raw BTF (the kernel's type information, `/sys/kernel/btf/*`) read just far enough for the
//! questions bbrtop asks of a kernel: which `struct bbr` it has, and which tracepoints and
//! functions its programs can attach to or call (names by kind). Pure: the caller reads the file.
//! Module BTF is split BTF: its type ids and string offsets continue the base's (vmlinux), so it
//! is parsed with the base beside it, and [`merge_split`] makes the two one complete blob.

/// BTF kinds (include/uapi/linux/btf.h) whose entries this reader needs to tell apart.
pub const KIND_STRUCT: u32 = 4;
/// A typedef: each tracepoint a BTF-enabled program can attach to has one, `btf_trace_NAME`.
pub const KIND_TYPEDEF: u32 = 8;
/// A function: kfuncs, fentry targets and the kernel's helper implementations are ones.
pub const KIND_FUNC: u32 = 12;
const MAGIC: u16 = 0xeb9f;
const HEADER_LEN: usize = 24;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum BtfError {
    #[error("not raw BTF (bad magic or header)")]
    Header,
    #[error("BTF type section truncated at byte {0}")]
    Truncated(usize),
}

/// One parsed BTF blob: its type and string sections, and where its ids and strings start.
#[derive(Clone, Copy, Debug)]
pub struct Btf<'a> {
    bytes: &'a [u8],
    types: (usize, usize),
    strs: (usize, usize),
    /// The base's strings and type count, for split BTF.
    base: Option<(&'a [u8], u32)>,
}

/// One type entry: its id, kind, name and where its bytes lie in the blob.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TypeEntry {
    pub id: u32,
    pub kind: u32,
    pub name_off: u32,
    pub kind_flag: bool,
    pub vlen: usize,
    /// Byte offset of the entry in the blob, and its length (header and what follows it).
    pub pos: usize,
    pub len: usize,
}

/// A struct member: its name, type id, bit offset, and bitfield width (0: not a bitfield).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Member {
    pub name: String,
    pub type_id: u32,
    pub bit_offset: u32,
    pub bitfield_size: u32,
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    b.get(at..at + 4).map(|s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
}

/// Bytes that follow an entry's 12-byte header, by kind.
fn extra_len(kind: u32, vlen: usize) -> usize {
    match kind {
        1 | 14 | 17 => 4,             // int, var, decl_tag
        3 => 12,                      // array
        4 | 5 | 15 | 19 => 12 * vlen, // struct, union, datasec, enum64
        6 | 13 => 8 * vlen,           // enum, func_proto
        _ => 0,
    }
}

impl<'a> Btf<'a> {
    /// Parses a complete (vmlinux) BTF blob. Only little-endian BTF is read.
    pub fn parse(bytes: &'a [u8]) -> Result<Btf<'a>, BtfError> {
        let h = |i: usize| u32_at(bytes, i).ok_or(BtfError::Header);
        if bytes.get(..2) != Some(&MAGIC.to_le_bytes()[..]) {
            return Err(BtfError::Header);
        }
        let hdr = h(4)? as usize;
        let span = |off: u32, len: u32| (hdr + off as usize, len as usize);
        let (types, strs) = (span(h(8)?, h(12)?), span(h(16)?, h(20)?));
        if hdr < HEADER_LEN || types.0 + types.1 > bytes.len() || strs.0 + strs.1 > bytes.len() {
            return Err(BtfError::Header);
        }
        Ok(Btf { bytes, types, strs, base: None })
    }

    /// Parses module BTF split from `base`.
    pub fn parse_split(bytes: &'a [u8], base: &Btf<'a>) -> Result<Btf<'a>, BtfError> {
        let count = u32::try_from(base.types()?.len()).map_err(|_| BtfError::Header)?;
        Ok(Btf { base: Some((base.strings(), count)), ..Btf::parse(bytes)? })
    }

    fn section(&self, (at, len): (usize, usize)) -> &'a [u8] {
        &self.bytes[at..at + len]
    }

    fn strings(&self) -> &'a [u8] {
        self.section(self.strs)
    }

    /// The name at a string offset ("" if out of range).
    pub fn name(&self, off: u32) -> &'a str {
        let (strs, off) = match self.base {
            Some((base, _)) if (off as usize) < base.len() => (base, off as usize),
            Some((base, _)) => (self.strings(), off as usize - base.len()),
            None => (self.strings(), off as usize),
        };
        let s = strs.get(off..).unwrap_or_default();
        std::str::from_utf8(&s[..s.iter().position(|&c| c == 0).unwrap_or(s.len())]).unwrap_or("")
    }

    /// Every type entry, in id order.
    pub fn types(&self) -> Result<Vec<TypeEntry>, BtfError> {
        let (start, end) = (self.types.0, self.types.0 + self.types.1);
        let mut id = self.base.map_or(0, |(_, n)| n);
        let (mut pos, mut out) = (start, Vec::new());
        while pos < end {
            let (name_off, info) = (u32_at(self.bytes, pos), u32_at(self.bytes, pos + 4));
            let (Some(name_off), Some(info)) = (name_off, info) else { return Err(BtfError::Truncated(pos)) };
            let (kind, vlen) = ((info >> 24) & 0x1f, (info & 0xffff) as usize);
            let len = 12 + extra_len(kind, vlen);
            if pos + len > end {
                return Err(BtfError::Truncated(pos));
            }
            id += 1;
            out.push(TypeEntry { id, kind, name_off, kind_flag: info >> 31 != 0, vlen, pos, len });
            pos += len;
        }
        Ok(out)
    }

    /// The members of the struct named `name`, if this BTF has one.
    pub fn struct_members(&self, name: &str) -> Result<Option<Vec<Member>>, BtfError> {
        let found =
            self.types()?.into_iter().find(|t| t.kind == KIND_STRUCT && self.name(t.name_off) == name);
        Ok(found.map(|t| self.members(&t)))
    }

    /// The names of every entry of `kind`, in id order.
    pub fn names_of_kind(&self, kind: u32) -> Result<Vec<&'a str>, BtfError> {
        Ok(self.types()?.into_iter().filter(|t| t.kind == kind).map(|t| self.name(t.name_off)).collect())
    }

    /// A struct's or union's members (those its entry holds in full).
    pub fn members(&self, t: &TypeEntry) -> Vec<Member> {
        (0..t.vlen)
            .filter_map(|i| {
                let at = t.pos + 12 + 12 * i;
                let (name, ty, off) =
                    (u32_at(self.bytes, at)?, u32_at(self.bytes, at + 4)?, u32_at(self.bytes, at + 8)?);
                let (bit_offset, bitfield_size) =
                    if t.kind_flag { (off & 0xff_ffff, off >> 24) } else { (off, 0) };
                Some(Member { name: self.name(name).to_string(), type_id: ty, bit_offset, bitfield_size })
            })
            .collect()
    }
}

/// One complete BTF blob of `base` (vmlinux) and `module`, BTF split from it: the module's type
/// ids and string offsets already continue the base's, so its type section follows the base's and
/// its strings follow the base's strings, and every id and offset stays what it was. A tool that
/// reads complete BTF only (libbpf's `btf_custom_path`) then sees the module's types.
pub fn merge_split(base: &[u8], module: &[u8]) -> Result<Vec<u8>, BtfError> {
    let (b, m) = (Btf::parse(base)?, Btf::parse(module)?);
    let (bt, mt) = (b.section(b.types), m.section(m.types));
    let (bs, ms) = (b.strings(), m.strings());
    let types_len = u32::try_from(bt.len() + mt.len()).map_err(|_| BtfError::Header)?;
    let strs_len = u32::try_from(bs.len() + ms.len()).map_err(|_| BtfError::Header)?;
    let mut out = Vec::with_capacity(HEADER_LEN + bt.len() + mt.len() + bs.len() + ms.len());
    out.extend_from_slice(&base[..4]); // magic, version, flags
    for v in [HEADER_LEN as u32, 0, types_len, types_len, strs_len] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    for part in [bt, mt, bs, ms] {
        out.extend_from_slice(part);
    }
    Ok(out)
}

/// Test BTF blobs, built by hand: a few ints and structs.
#[cfg(test)]
pub(crate) mod fixtures {
    /// A raw BTF blob of `types` (each entry's bytes) and `strs` (starting with the empty name).
    pub fn blob(types: &[Vec<u8>], strs: &[u8]) -> Vec<u8> {
        let types: Vec<u8> = types.concat();
        let mut b = vec![0x9f, 0xeb, 1, 0];
        for v in [24, 0, types.len() as u32, types.len() as u32, strs.len() as u32] {
            b.extend(v.to_le_bytes());
        }
        b.extend(types);
        b.extend(strs);
        b
    }

    pub fn words(w: &[u32]) -> Vec<u8> {
        w.iter().flat_map(|v| v.to_le_bytes()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::fixtures::*;
    use super::*;

    /// "\0u32\0bbr\0min_rtt_us\0mode\0x\0": an int u32 (id 1) and struct bbr (id 2) with a plain
    /// member and a 3-bit bitfield at bit 32 (kind_flag set).
    fn sample() -> Vec<u8> {
        let strs = b"\0u32\0bbr\0min_rtt_us\0mode\0x\0";
        let int = words(&[1, 1 << 24, 4, 32]);
        let bbr = words(&[5, 1 << 31 | 4 << 24 | 2, 8, 9, 1, 0, 20, 1, 3 << 24 | 32]);
        blob(&[int, bbr], strs)
    }

    #[test]
    fn lists_a_structs_members_with_bitfields() {
        let b = sample();
        let btf = Btf::parse(&b).unwrap();
        let m = btf.struct_members("bbr").unwrap().unwrap();
        let want = [
            Member { name: "min_rtt_us".into(), type_id: 1, bit_offset: 0, bitfield_size: 0 },
            Member { name: "mode".into(), type_id: 1, bit_offset: 32, bitfield_size: 3 },
        ];
        assert_eq!(m, want);
        assert_eq!(btf.struct_members("u32").unwrap(), None, "an int is no struct");
        assert_eq!(btf.struct_members("tcp_sock").unwrap(), None);
        assert_eq!(btf.types().unwrap().iter().map(|t| t.id).collect::<Vec<_>>(), [1, 2]);
    }

    #[test]
    fn split_btf_continues_the_base_ids_and_strings() {
        let base_bytes = sample();
        let base = Btf::parse(&base_bytes).unwrap();
        // A module's struct named by its own string (offset base_len + 1) with a member named
        // by the base's "mode" (offset 20).
        let base_len = base.strings().len() as u32;
        let strs = b"\0cubic\0";
        let st = words(&[base_len + 1, 4 << 24 | 1, 4, 20, 1, 0]);
        let module = blob(&[st], strs);
        let split = Btf::parse_split(&module, &base).unwrap();
        let t = split.types().unwrap();
        assert_eq!((t[0].id, split.name(t[0].name_off)), (3, "cubic"));
        assert_eq!(split.struct_members("cubic").unwrap().unwrap()[0].name, "mode");

        // Merged, the module's struct reads as part of one complete blob, with the same id.
        let merged_bytes = merge_split(&base_bytes, &module).unwrap();
        let merged = Btf::parse(&merged_bytes).unwrap();
        let t = merged.types().unwrap();
        assert_eq!(t.iter().map(|t| t.id).collect::<Vec<_>>(), [1, 2, 3]);
        assert_eq!(merged.struct_members("cubic").unwrap().unwrap()[0].name, "mode");
        assert_eq!(merged.struct_members("bbr").unwrap(), base.struct_members("bbr").unwrap());
        assert_eq!(merge_split(&base_bytes, &[]).err(), Some(BtfError::Header));
    }

    #[test]
    fn names_by_kind() {
        // A typedef (kind 8) btf_trace_x and a func (kind 12) f, both of type 1.
        let strs = b"\0u32\0btf_trace_x\0f\0";
        let int = words(&[1, 1 << 24, 4, 32]);
        let td = words(&[5, KIND_TYPEDEF << 24, 1]);
        let func = words(&[17, KIND_FUNC << 24, 1]);
        let b = blob(&[int, td, func], strs);
        let btf = Btf::parse(&b).unwrap();
        assert_eq!(btf.names_of_kind(KIND_TYPEDEF).unwrap(), ["btf_trace_x"]);
        assert_eq!(btf.names_of_kind(KIND_FUNC).unwrap(), ["f"]);
        assert!(btf.names_of_kind(KIND_STRUCT).unwrap().is_empty());
    }

    #[test]
    fn bad_input_is_an_error_not_a_panic() {
        assert_eq!(Btf::parse(&[]).err(), Some(BtfError::Header));
        assert_eq!(Btf::parse(&[0x9f, 0xeb, 1, 0, 24]).err(), Some(BtfError::Header));
        let mut b = sample();
        b[12..16].copy_from_slice(&20u32.to_le_bytes()); // the struct's members cut short
        b[16..20].copy_from_slice(&20u32.to_le_bytes());
        assert!(matches!(Btf::parse(&b).unwrap().types(), Err(BtfError::Truncated(_))));
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_bytes_never_panic(tail in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..200)) {
            let mut b = sample()[..24].to_vec();
            b.extend(tail);
            if let Ok(btf) = Btf::parse(&b) {
                let _ = btf.struct_members("bbr");
            }
        }
    }
}
