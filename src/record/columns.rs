//! Typed columns: how a Rust value becomes an Arrow array and comes back. A table declares each
//! column once (name, type, how to read it from a row, how to put it back), and this module turns
//! the declarations into a schema, arrays, and values again.

use arrow_array::builder::{
    ArrayBuilder, BooleanBuilder, Float64Builder, Int64Builder, StringBuilder, UInt8Builder, UInt16Builder,
    UInt32Builder, UInt64Builder,
};
use arrow_array::{
    Array, ArrayRef, BooleanArray, Float64Array, Int64Array, StringArray, UInt8Array, UInt16Array,
    UInt32Array, UInt64Array,
};
use arrow_schema::DataType;
use std::sync::Arc;

/// A value type a column can hold. Every column is nullable: an unknown value is null, never 0.
pub trait ColumnType: Sized {
    type Builder: ArrayBuilder;
    const DATA_TYPE: DataType;
    fn builder(capacity: usize) -> Self::Builder;
    fn append(b: &mut Self::Builder, v: Option<Self>);
    fn finish(b: &mut Self::Builder) -> ArrayRef;
    /// The `i`th value of `a`; `None` when null. `Err` when `a` is not of this type.
    fn column(a: &dyn Array) -> Result<Getter<'_, Self>, TypeMismatch>;
}

/// A column of the wrong type: a file written by another version, or not by bbrtop.
#[derive(Debug, thiserror::Error)]
#[error("column of type {found}, expected {expected}")]
pub struct TypeMismatch {
    pub found: DataType,
    pub expected: DataType,
}

/// Reads values out of one array of a known type.
pub struct Getter<'a, T> {
    get: Box<dyn Fn(usize) -> Option<T> + 'a>,
}

impl<'a, T> Getter<'a, T> {
    pub fn from_fn(get: Box<dyn Fn(usize) -> Option<T> + 'a>) -> Getter<'a, T> {
        Getter { get }
    }

    pub fn get(&self, i: usize) -> Option<T> {
        (self.get)(i)
    }
}

macro_rules! primitive {
    ($t:ty, $builder:ident, $array:ident, $dt:expr) => {
        impl ColumnType for $t {
            type Builder = $builder;
            const DATA_TYPE: DataType = $dt;
            fn builder(capacity: usize) -> $builder {
                $builder::with_capacity(capacity)
            }
            fn append(b: &mut $builder, v: Option<$t>) {
                b.append_option(v)
            }
            fn finish(b: &mut $builder) -> ArrayRef {
                Arc::new(b.finish())
            }
            fn column(a: &dyn Array) -> Result<Getter<'_, $t>, TypeMismatch> {
                let arr = a
                    .as_any()
                    .downcast_ref::<$array>()
                    .ok_or_else(|| TypeMismatch { found: a.data_type().clone(), expected: $dt })?;
                Ok(Getter { get: Box::new(move |i| (!arr.is_null(i)).then(|| arr.value(i))) })
            }
        }
    };
}

primitive!(u8, UInt8Builder, UInt8Array, DataType::UInt8);
primitive!(u16, UInt16Builder, UInt16Array, DataType::UInt16);
primitive!(u32, UInt32Builder, UInt32Array, DataType::UInt32);
primitive!(u64, UInt64Builder, UInt64Array, DataType::UInt64);
primitive!(i64, Int64Builder, Int64Array, DataType::Int64);
primitive!(f64, Float64Builder, Float64Array, DataType::Float64);
primitive!(bool, BooleanBuilder, BooleanArray, DataType::Boolean);

impl ColumnType for String {
    type Builder = StringBuilder;
    const DATA_TYPE: DataType = DataType::Utf8;
    fn builder(capacity: usize) -> StringBuilder {
        StringBuilder::with_capacity(capacity, capacity * 16)
    }
    fn append(b: &mut StringBuilder, v: Option<String>) {
        b.append_option(v)
    }
    fn finish(b: &mut StringBuilder) -> ArrayRef {
        Arc::new(b.finish())
    }
    fn column(a: &dyn Array) -> Result<Getter<'_, String>, TypeMismatch> {
        let arr = a
            .as_any()
            .downcast_ref::<StringArray>()
            .ok_or_else(|| TypeMismatch { found: a.data_type().clone(), expected: DataType::Utf8 })?;
        Ok(Getter { get: Box::new(move |i| (!arr.is_null(i)).then(|| arr.value(i).to_string())) })
    }
}

/// Declares a table: its columns, each with a type, how to read it from a row (`&$row`, giving
/// an `Option`), and how to put a value back into what decoding builds (`&mut $out`). Generates
/// `schema()`, `encode(rows)` and `decode(batch, outs)`.
macro_rules! table {
    (<$lt:lifetime> $row:ty => $out:ty { $( $name:ident : $t:ty = |$r:ident| $get:expr, |$o:ident, $v:ident| $set:expr; )* }) => {
        /// The table's Arrow schema (every column nullable).
        pub fn schema() -> arrow_schema::Schema {
            arrow_schema::Schema::new(vec![
                $( arrow_schema::Field::new(stringify!($name), <$t as $crate::record::columns::ColumnType>::DATA_TYPE, true), )*
            ])
        }

        /// One array per column, from `rows`.
        pub fn encode<'r, $lt>(rows: impl Iterator<Item = &'r $row> + Clone, n: usize) -> Vec<arrow_array::ArrayRef>
        where $row: 'r {
            use $crate::record::columns::ColumnType;
            vec![ $( {
                let mut b = <$t>::builder(n);
                for $r in rows.clone() {
                    // A closure, so that `?` in a getter means "absent", not "return".
                    #[allow(clippy::redundant_closure_call)]
                    let v: Option<$t> = (|| $get)();
                    <$t>::append(&mut b, v);
                }
                <$t>::finish(&mut b)
            }, )* ]
        }

        /// Puts every row of `batch` into `outs` (one per row, made by the caller). A column the
        /// file lacks is left as it was; a column of another type is an error.
        pub fn decode(batch: &arrow_array::RecordBatch, outs: &mut [$out]) -> anyhow::Result<()> {
            use $crate::record::columns::ColumnType;
            $( if let Some(a) = batch.column_by_name(stringify!($name)) {
                let g = <$t>::column(a.as_ref())
                    .map_err(|e| anyhow::anyhow!("column {}: {e}", stringify!($name)))?;
                for (i, $o) in outs.iter_mut().enumerate() {
                    if let Some($v) = g.get(i) {
                        $set;
                    }
                }
            } )*
            Ok(())
        }
    };
}

pub(crate) use table;
