//! Kafka v2 record batches (KIP-98): the 61-byte header and the record varints.
//!
//! ```text
//! offset  size  field
//! 0       8     baseOffset            (a producer sends 0)
//! 8       4     batchLength           (bytes after this field)
//! 12      4     partitionLeaderEpoch  (not covered by the CRC; the broker sets it)
//! 16      1     magic                 (2)
//! 17      4     crc                   (CRC32C of bytes 21..end)
//! 21      2     attributes            (codec 0-2, timestamp type 3, transactional 4,
//!                                      control 5, delete horizon 6)
//! 23      4     lastOffsetDelta
//! 27      8     baseTimestamp
//! 35      8     maxTimestamp
//! 43      8     producerId
//! 51      2     producerEpoch
//! 53      4     baseSequence
//! 57      4     recordCount
//! ```

use std::ops::Range;

use crate::error::Error;

pub const HEADER_SIZE: usize = 61;
pub const LOG_OVERHEAD: usize = 12;
const MAGIC_OFFSET: usize = 16;
const CRC_OFFSET: usize = 17;
const ATTRIBUTES_OFFSET: usize = 21;

pub const CODEC_MASK: u16 = 0x07;
const TIMESTAMP_TYPE_MASK: u16 = 0x08;
pub const TRANSACTIONAL_MASK: u16 = 0x10;
const CONTROL_MASK: u16 = 0x20;
const DELETE_HORIZON_MASK: u16 = 0x40;

/// One complete v2 batch of the input, its header read.
pub struct Batch<'a> {
    pub data: &'a [u8],
    pub base_offset: i64,
    pub attributes: u16,
    pub last_offset_delta: i32,
    pub base_timestamp: i64,
    pub record_count: i32,
}

impl<'a> Batch<'a> {
    pub fn codec(&self) -> u16 {
        self.attributes & CODEC_MASK
    }

    pub fn next_offset(&self) -> i64 {
        self.base_offset + i64::from(self.last_offset_delta) + 1
    }

    /// The records section: everything after the header (compressed or not).
    pub fn records(&self) -> &'a [u8] {
        &self.data[HEADER_SIZE..]
    }
}

fn be_i64(b: &[u8], at: usize) -> i64 {
    i64::from_be_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

fn be_u32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

fn be_i32(b: &[u8], at: usize) -> i32 {
    i32::from_be_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

/// Every batch in `buf` (one or more complete batches, back to back), each checked to be one
/// the merge can take: magic 2, an intact CRC, not a control batch, CreateTime, dense (a
/// record for every offset of its range: compaction leaves gaps a producer may not send).
pub fn split<'a>(buf: &'a [u8], out: &mut Vec<Batch<'a>>) -> Result<(), Error> {
    let mut pos = 0;
    while pos < buf.len() {
        let rest = &buf[pos..];
        if rest.len() < HEADER_SIZE {
            return Err(Error::Input(format!(
                "{} bytes left after the last complete batch: a cut batch (pass complete batches)",
                rest.len()
            )));
        }
        let length = be_i32(rest, 8);
        let size = LOG_OVERHEAD + usize::try_from(length).unwrap_or(0);
        if size < HEADER_SIZE || size > rest.len() {
            return Err(Error::Input(format!(
                "batch at offset {} says it is {} bytes, {} are there",
                be_i64(rest, 0),
                size,
                rest.len()
            )));
        }
        let data = &rest[..size];
        let batch = Batch {
            data,
            base_offset: be_i64(data, 0),
            attributes: u16::from_be_bytes([data[ATTRIBUTES_OFFSET], data[ATTRIBUTES_OFFSET + 1]]),
            last_offset_delta: be_i32(data, 23),
            base_timestamp: be_i64(data, 27),
            record_count: be_i32(data, 57),
        };
        check(&batch, data[MAGIC_OFFSET])?;
        out.push(batch);
        pos += size;
    }
    Ok(())
}

fn check(batch: &Batch<'_>, magic: u8) -> Result<(), Error> {
    let at = batch.base_offset;
    let why = if magic != 2 {
        format!("message format v{magic} (only v2 batches merge)")
    } else if crc32c::crc32c(&batch.data[ATTRIBUTES_OFFSET..]) != be_u32(batch.data, CRC_OFFSET) {
        // The merged batch gets a new CRC: a corrupt source batch must stop here, not be
        // passed on looking sound (the Java consumer's check.crcs does the same).
        "its CRC32C does not match its contents (corrupt)".to_string()
    } else if batch.attributes & CONTROL_MASK != 0 {
        "a control batch (transaction marker)".to_string()
    } else if batch.attributes & TIMESTAMP_TYPE_MASK != 0 {
        "LogAppendTime timestamps".to_string()
    } else if batch.attributes & DELETE_HORIZON_MASK != 0 {
        "a delete horizon in its base timestamp (written by the log cleaner)".to_string()
    } else if batch.record_count < 1 || batch.record_count != batch.last_offset_delta + 1 {
        format!(
            "not dense ({} records over {} offsets: compacted)",
            batch.record_count,
            i64::from(batch.last_offset_delta) + 1
        )
    } else if batch.codec() > 4 {
        format!("unknown compression codec {}", batch.codec())
    } else {
        return Ok(());
    };
    Err(Error::Input(format!(
        "batch at offset {at} cannot be merged: {why}"
    )))
}

/// The header fields a merged batch gets (the rest are fixed: base offset 0, magic 2, the
/// partition leader epoch left to the broker).
pub struct Header {
    pub attributes: u16,
    pub last_offset_delta: i32,
    pub base_timestamp: i64,
    pub max_timestamp: i64,
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub base_sequence: i32,
    pub record_count: i32,
}

/// Fill in the first HEADER_SIZE bytes of `out` (a whole batch) and its CRC32C.
pub fn write_header(out: &mut [u8], h: &Header) {
    let length = i32::try_from(out.len() - LOG_OVERHEAD).expect("a batch under 2 GiB");
    out[0..8].copy_from_slice(&0i64.to_be_bytes());
    out[8..12].copy_from_slice(&length.to_be_bytes());
    out[12..16].copy_from_slice(&(-1i32).to_be_bytes());
    out[MAGIC_OFFSET] = 2;
    out[ATTRIBUTES_OFFSET..23].copy_from_slice(&h.attributes.to_be_bytes());
    out[23..27].copy_from_slice(&h.last_offset_delta.to_be_bytes());
    out[27..35].copy_from_slice(&h.base_timestamp.to_be_bytes());
    out[35..43].copy_from_slice(&h.max_timestamp.to_be_bytes());
    out[43..51].copy_from_slice(&h.producer_id.to_be_bytes());
    out[51..53].copy_from_slice(&h.producer_epoch.to_be_bytes());
    out[53..57].copy_from_slice(&h.base_sequence.to_be_bytes());
    out[57..61].copy_from_slice(&h.record_count.to_be_bytes());
    let crc = crc32c::crc32c(&out[ATTRIBUTES_OFFSET..]);
    out[CRC_OFFSET..ATTRIBUTES_OFFSET].copy_from_slice(&crc.to_be_bytes());
}

/// Where a record's key and value lie in `rest` (the record after its offset delta), None when
/// null. The whole layout is checked, headers included, to end exactly where the record's
/// length says: a merged batch whose records a broker would refuse must not be built.
pub struct Fields {
    pub key: Option<Range<usize>>,
    pub value: Option<Range<usize>>,
}

#[inline]
pub fn fields(rest: &[u8]) -> Result<Fields, Error> {
    let (key, pos) = bytes_field(rest, 0)?;
    let (value, pos) = bytes_field(rest, pos)?;
    let (count, mut pos) = read_varint(rest, pos)?;
    if count < 0 {
        return Err(Error::Input(format!(
            "a record says it has {count} headers"
        )));
    }
    for _ in 0..count {
        let (name, next) = bytes_field(rest, pos)?;
        if name.is_none() {
            return Err(Error::Input("a record header without a key".to_string()));
        }
        (_, pos) = bytes_field(rest, next)?;
    }
    if pos != rest.len() {
        return Err(Error::Input(format!(
            "a record's fields end {} bytes before its length says",
            rest.len() - pos
        )));
    }
    Ok(Fields { key, value })
}

/// A length-prefixed byte field at `pos` (length -1: null) and the position after it.
#[inline(always)]
fn bytes_field(b: &[u8], pos: usize) -> Result<(Option<Range<usize>>, usize), Error> {
    let (len, pos) = read_varint(b, pos)?;
    if len == -1 {
        return Ok((None, pos));
    }
    let end = usize::try_from(len)
        .ok()
        .map(|len| pos + len)
        .filter(|&end| end <= b.len())
        .ok_or_else(|| {
            Error::Input(format!(
                "a record field of {len} bytes runs past the record"
            ))
        })?;
    Ok((Some(pos..end), end))
}

/// A zig-zag varint or varlong (the record format's) at `pos`, and the position after it.
/// Most are one byte (small lengths and deltas): that case is kept short and inlined.
#[inline(always)]
pub fn read_varlong(b: &[u8], pos: usize) -> Result<(i64, usize), Error> {
    match b.get(pos) {
        Some(&byte) if byte < 0x80 => Ok((unzigzag(u64::from(byte)), pos + 1)),
        _ => read_long_varlong(b, pos),
    }
}

#[cold]
#[inline(never)]
fn read_long_varlong(b: &[u8], mut pos: usize) -> Result<(i64, usize), Error> {
    let mut raw: u64 = 0;
    let mut shift = 0;
    loop {
        let Some(&byte) = b.get(pos) else {
            return Err(Error::Input("a record ends inside a varint".to_string()));
        };
        pos += 1;
        raw |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Ok((unzigzag(raw), pos));
        }
        shift += 7;
        if shift > 63 {
            return Err(Error::Input("a varint longer than 10 bytes".to_string()));
        }
    }
}

#[inline(always)]
fn unzigzag(raw: u64) -> i64 {
    // The casts reinterpret the bits.
    #[allow(clippy::cast_possible_wrap)]
    {
        ((raw >> 1) as i64) ^ -((raw & 1) as i64)
    }
}

#[inline(always)]
pub fn read_varint(b: &[u8], pos: usize) -> Result<(i32, usize), Error> {
    let (v, pos) = read_varlong(b, pos)?;
    i32::try_from(v)
        .map(|v| (v, pos))
        .map_err(|_| Error::Input(format!("varint {v} does not fit 32 bits")))
}

#[inline]
fn zigzag(v: i64) -> u64 {
    #[allow(clippy::cast_sign_loss)]
    {
        ((v << 1) ^ (v >> 63)) as u64
    }
}

#[inline]
pub fn varlong_len(v: i64) -> usize {
    let z = zigzag(v);
    // Bits needed (at least 1) over 7, rounded up.
    let bits = 64 - (z | 1).leading_zeros() as usize;
    bits.div_ceil(7)
}

#[inline]
pub fn write_varlong(out: &mut Vec<u8>, v: i64) {
    let mut z = zigzag(v);
    while z >= 0x80 {
        #[allow(clippy::cast_possible_truncation)]
        out.push((z as u8) | 0x80);
        z >>= 7;
    }
    #[allow(clippy::cast_possible_truncation)]
    out.push(z as u8);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_round_trip() {
        for v in [
            0i64,
            1,
            -1,
            63,
            -64,
            64,
            8191,
            -8192,
            1 << 40,
            i64::MIN,
            i64::MAX,
        ] {
            let mut out = Vec::new();
            write_varlong(&mut out, v);
            assert_eq!(out.len(), varlong_len(v), "{v}");
            assert_eq!(read_varlong(&out, 0).unwrap(), (v, out.len()), "{v}");
        }
    }
}
