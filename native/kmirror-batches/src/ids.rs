//! Schema IDs in the Confluent wire format: a key or value that starts with the magic byte 0
//! and is at least 5 bytes long carries a 4-byte big-endian schema ID after it. Translating
//! rewrites those 4 bytes in place, so no length changes.

use std::collections::HashMap;

use crate::batch::read_varint;
use crate::error::Error;

const WIRE_MAGIC: u8 = 0;
const WIRE_PREFIX: usize = 5;

/// What the rewrite saw in a run, counted only for the batches that went into the output.
#[derive(Default, Clone)]
pub struct Tally {
    /// IDs rewritten (keys and values).
    pub rewritten: u64,
    /// Non-null keys / values not in the wire format: copied unchanged.
    pub plain_keys: u64,
    pub plain_values: u64,
    /// Source IDs with no mapping, each once, in the order first met.
    pub unmapped: Vec<u32>,
}

/// Rewrite the IDs of one record's key and value. `rest` is the record after its offset
/// delta: key length, key, value length, value, headers (headers are never rewritten).
pub fn rewrite(rest: &mut [u8], map: &HashMap<u32, u32>, tally: &mut Tally) -> Result<(), Error> {
    let (key_len, pos) = read_varint(rest, 0)?;
    let pos = field(rest, pos, key_len, map, tally, true)?;
    let (value_len, pos) = read_varint(rest, pos)?;
    field(rest, pos, value_len, map, tally, false)?;
    Ok(())
}

fn field(
    rest: &mut [u8],
    pos: usize,
    len: i32,
    map: &HashMap<u32, u32>,
    tally: &mut Tally,
    key: bool,
) -> Result<usize, Error> {
    let Ok(len) = usize::try_from(len) else {
        return Ok(pos); // null (-1)
    };
    let Some(bytes) = rest.get_mut(pos..pos + len) else {
        return Err(Error::Input(
            "a record's key or value runs past the record".to_string(),
        ));
    };
    if len >= WIRE_PREFIX && bytes[0] == WIRE_MAGIC {
        let id = u32::from_be_bytes(bytes[1..WIRE_PREFIX].try_into().expect("4 bytes"));
        match map.get(&id) {
            Some(target) => {
                bytes[1..WIRE_PREFIX].copy_from_slice(&target.to_be_bytes());
                tally.rewritten += 1;
            }
            None if tally.unmapped.contains(&id) => {}
            None => tally.unmapped.push(id),
        }
    } else if key {
        tally.plain_keys += 1;
    } else {
        tally.plain_values += 1;
    }
    Ok(pos + len)
}
