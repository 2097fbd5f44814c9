//! Schema IDs in the Confluent wire format: a key or value that starts with the magic byte 0
//! and is at least 5 bytes long carries a 4-byte big-endian schema ID after it. Translating
//! rewrites those 4 bytes in place, so no length changes.

use std::collections::HashMap;

use crate::batch::Fields;

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
    /// Records whose key and value are both not in the wire format (null counts as not).
    pub plain_records: u64,
    /// Source IDs with no mapping, each once, in the order first met.
    pub unmapped: Vec<u32>,
}

/// Rewrite the IDs of one record's key and value (headers are never rewritten). `rest` is the
/// record after its offset delta, `fields` where its key and value lie in it.
pub fn rewrite(rest: &mut [u8], fields: &Fields, map: &HashMap<u32, u32>, tally: &mut Tally) {
    let mut wire = false;
    if let Some(key) = &fields.key {
        if field(&mut rest[key.clone()], map, tally) {
            wire = true;
        } else {
            tally.plain_keys += 1;
        }
    }
    if let Some(value) = &fields.value {
        if field(&mut rest[value.clone()], map, tally) {
            wire = true;
        } else {
            tally.plain_values += 1;
        }
    }
    if !wire {
        tally.plain_records += 1;
    }
}

/// Whether `bytes` is in the wire format (then its ID is rewritten, or reported unmapped).
fn field(bytes: &mut [u8], map: &HashMap<u32, u32>, tally: &mut Tally) -> bool {
    if bytes.len() < WIRE_PREFIX || bytes[0] != WIRE_MAGIC {
        return false;
    }
    let id = u32::from_be_bytes(bytes[1..WIRE_PREFIX].try_into().expect("4 bytes"));
    match map.get(&id) {
        Some(target) => {
            bytes[1..WIRE_PREFIX].copy_from_slice(&target.to_be_bytes());
            tally.rewritten += 1;
        }
        None if tally.unmapped.contains(&id) => {}
        None => tally.unmapped.push(id),
    }
    true
}
