//! BTF files made from the running kernel's own, for loading the programs against kernels this
//! machine is not: one without `struct bbr`, one whose `struct bbr` has BBRv3's layout.
//!
//! Why edit raw bytes rather than use a tool: bpftool can dump BTF but not write it, and libbpf's
//! BTF writer appends types but cannot change one in place. The programs need the kernel's type
//! ids to stay as they are (`tp_btf` targets and `bpf_core_type_id_kernel` resolve by id), so the
//! edit keeps every entry where it is: it renames an entry, or replaces `struct bbr`'s entry with
//! one of other members, and appends the few new types (arrays) and names at the ends of their
//! sections, where they take new ids and offsets. `bbrtop_core::btf` walks the entries.

use bbrtop_core::btf::{Btf, KIND_STRUCT, TypeEntry};
use std::io::Write;

const KIND_INT: u32 = 1;
const KIND_ARRAY: u32 = 3;
const KIND_TYPEDEF: u32 = 8;

fn le(words: &[u32]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

/// The kernel's BTF with some entries replaced and some types and names appended.
pub struct Edit {
    orig: Vec<u8>,
    types: Vec<TypeEntry>,
    names: Vec<String>,
    replaced: Vec<(u32, Vec<u8>)>,
    appended: Vec<Vec<u8>>,
    strs_len: u32,
    new_strs: Vec<u8>,
}

impl Edit {
    pub fn kernel() -> Edit {
        let orig = std::fs::read(bbrtop_collect::bpf::BTF_PATH).expect("kernel BTF");
        let btf = Btf::parse(&orig).expect("raw little-endian BTF");
        let types = btf.types().expect("BTF types");
        let names = types.iter().map(|t| btf.name(t.name_off).to_string()).collect();
        let strs_len = u32::from_le_bytes(orig[20..24].try_into().unwrap());
        Edit {
            orig,
            types,
            names,
            replaced: Vec::new(),
            appended: Vec::new(),
            strs_len,
            new_strs: Vec::new(),
        }
    }

    /// The id of the first type of this kind and name.
    pub fn id(&self, kind: u32, name: &str) -> Option<u32> {
        self.types
            .iter()
            .zip(&self.names)
            .find(|(t, n)| t.kind == kind && n.as_str() == name)
            .map(|(t, _)| t.id)
    }

    pub fn entry(&self, id: u32) -> &TypeEntry {
        &self.types[id as usize - 1]
    }

    /// The struct's members as the kernel has them.
    pub fn members(&self, id: u32) -> Vec<bbrtop_core::btf::Member> {
        Btf::parse(&self.orig).unwrap().members(self.entry(id))
    }

    /// A new name's string offset.
    pub fn add_str(&mut self, s: &str) -> u32 {
        let off = self.strs_len + self.new_strs.len() as u32;
        self.new_strs.extend_from_slice(s.as_bytes());
        self.new_strs.push(0);
        off
    }

    /// Appends a type; its id follows the last.
    pub fn add_type(&mut self, bytes: Vec<u8>) -> u32 {
        self.appended.push(bytes);
        (self.types.len() + self.appended.len()) as u32
    }

    /// An array of `n` of `elem` (indexed by int).
    pub fn add_array(&mut self, elem: u32, n: u32) -> u32 {
        let int = self.id(KIND_INT, "int").expect("int");
        self.add_type(le(&[0, KIND_ARRAY << 24, 0, elem, int, n]))
    }

    pub fn typedef(&self, name: &str) -> u32 {
        self.id(KIND_TYPEDEF, name).unwrap_or_else(|| panic!("typedef {name}"))
    }

    pub fn replace(&mut self, id: u32, bytes: Vec<u8>) {
        self.replaced.push((id, bytes));
    }

    /// Gives the type a name no program asks for.
    pub fn rename(&mut self, id: u32, new: &str) {
        let mut bytes = self.raw(id).to_vec();
        let off = self.add_str(new);
        bytes[..4].copy_from_slice(&off.to_le_bytes());
        self.replace(id, bytes);
    }

    fn raw(&self, id: u32) -> &[u8] {
        let t = self.entry(id);
        &self.orig[t.pos..t.pos + t.len]
    }

    /// The edited BTF, in a file that lives as long as the handle.
    pub fn write(&self) -> tempfile::NamedTempFile {
        let mut types = Vec::new();
        for t in &self.types {
            match self.replaced.iter().find(|(id, _)| *id == t.id) {
                Some((_, b)) => types.extend_from_slice(b),
                None => types.extend_from_slice(self.raw(t.id)),
            }
        }
        types.extend(self.appended.concat());
        let hdr_len = u32::from_le_bytes(self.orig[4..8].try_into().unwrap()) as usize;
        let strs_off = hdr_len + u32::from_le_bytes(self.orig[16..20].try_into().unwrap()) as usize;
        let strs = [&self.orig[strs_off..strs_off + self.strs_len as usize], &self.new_strs[..]].concat();
        let mut out = self.orig[..hdr_len].to_vec();
        let (tl, sl) = (types.len() as u32, strs.len() as u32);
        out[8..24].copy_from_slice(&le(&[0, tl, tl, sl]));
        out.extend(types);
        out.extend(strs);
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(&out).unwrap();
        f
    }
}

/// The kernel's BTF with `struct <name>` renamed, so that CO-RE finds no such type, as on a
/// kernel where BBR is a module that was not loaded.
pub fn kernel_without_struct(name: &str) -> tempfile::NamedTempFile {
    let mut e = Edit::kernel();
    let id = e.id(KIND_STRUCT, name).unwrap_or_else(|| panic!("struct {name} in the kernel BTF"));
    e.rename(id, &format!("renamed_{name}"));
    e.write()
}

/// A member of a struct layout: a plain one of a given type, size and alignment (bytes), or a
/// bitfield of a u32 with a width (bits).
#[derive(Clone, Copy, Debug)]
pub enum Field {
    Plain { ty: u32, size: u32, align: u32 },
    Bits(u32),
}

/// Bit offsets by the C rules the kernel is built with (SysV ABI), for these kinds of member:
/// a plain member at its alignment; a u32 bitfield packed after the previous one, unless it
/// would straddle a 32-bit unit. Returns the offsets and the struct's size in bytes.
pub fn layout(fields: &[Field]) -> (Vec<u32>, u32) {
    let (mut at, mut max_align, mut out) = (0u32, 4u32, Vec::new());
    for f in fields {
        match *f {
            Field::Plain { size, align, .. } => {
                at = at.next_multiple_of(align * 8);
                out.push(at);
                at += size * 8;
                max_align = max_align.max(align);
            }
            Field::Bits(w) => {
                if at % 32 + w > 32 {
                    at = at.next_multiple_of(32);
                }
                out.push(at);
                at += w;
            }
        }
    }
    (out, at.next_multiple_of(max_align * 8) / 8)
}

/// A struct entry (kind_flag set: bitfield widths in the members' offsets).
pub fn struct_entry(e: &mut Edit, name: &str, members: &[(&str, Field)]) -> Vec<u8> {
    let fields: Vec<Field> = members.iter().map(|m| m.1).collect();
    let (offsets, size) = layout(&fields);
    let name_off = e.add_str(name);
    let mut words = vec![name_off, 1 << 31 | KIND_STRUCT << 24 | members.len() as u32, size];
    let u32_ty = e.typedef("u32");
    for ((n, f), off) in members.iter().zip(offsets) {
        let (ty, width) = match *f {
            Field::Plain { ty, .. } => (ty, 0),
            Field::Bits(w) => (u32_ty, w),
        };
        words.extend([e.add_str(n), ty, width << 24 | off]);
    }
    le(&words)
}
