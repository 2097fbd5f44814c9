//! Merge a run of v2 batches of one partition into one batch.
//!
//! Every record keeps its bytes (attributes, key, value, headers) and its timestamp; only its
//! length, timestamp delta and offset delta are written anew (the deltas are relative to the
//! merged batch's base, and varints change width with their values). The merged batch takes
//! the first batch's base timestamp, the run's largest record timestamp, the caller's producer
//! id, epoch, base sequence and transactional bit, base offset 0 and a fresh CRC32C.
//!
//! A run is contiguous (each batch starts at the offset after the previous one), dense and of
//! one codec, so record i of the merged batch is source offset `first_offset + i`: the
//! progress book's translation stays one run per merged batch.

use std::collections::HashMap;

use crate::batch::{self, Batch, Header, HEADER_SIZE, TRANSACTIONAL_MASK};
use crate::codec::{self, Decoder, NONE};
use crate::error::Error;
use crate::ids::{self, Tally};

pub struct Options<'m> {
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub base_sequence: i32,
    pub transactional: bool,
    /// Upper bound of the merged batch in bytes, 0 for none. Batches are taken while the
    /// merged records, uncompressed, fit; the first batch is always taken.
    pub max_bytes: usize,
    /// Schema IDs to translate (source -> target), or None to leave records untouched.
    pub ids: Option<&'m HashMap<u32, u32>>,
}

pub struct Merged {
    /// The merged batch; empty when `tally.unmapped` is not (the caller must wait).
    pub data: Vec<u8>,
    /// How many input batches it holds (a prefix of the run when `max_bytes` cut it).
    pub batches: usize,
    pub records: i32,
    pub first_offset: i64,
    pub next_offset: i64,
    pub max_timestamp: i64,
    pub tally: Tally,
}

/// Where the merged records stood after each input batch, to cut the run back to a prefix.
struct Mark {
    end: usize,
    records: i32,
    max_timestamp: i64,
    tally: Tally,
}

pub fn merge(buffers: &[&[u8]], opts: &Options<'_>) -> Result<Merged, Error> {
    let mut batches = Vec::new();
    for buf in buffers {
        batch::split(buf, &mut batches)?;
    }
    check_run(&batches)?;
    let first = &batches[0];
    let codec = first.codec();
    // Uncompressed, the records go straight behind room for the header.
    let at = if codec == NONE { HEADER_SIZE } else { 0 };
    let mut body = Vec::with_capacity(at + buffers.iter().map(|b| b.len()).sum::<usize>());
    body.resize(at, 0);
    let mut decoder = Decoder::new();
    let mut scratch = Vec::new();
    let mut marks: Vec<Mark> = Vec::with_capacity(batches.len());
    for b in &batches {
        let section = if codec == NONE {
            b.records()
        } else {
            decoder.decode(codec, b.records(), &mut scratch)?;
            &scratch[..]
        };
        let before = marks
            .last()
            .map_or((0, i64::MIN), |m| (m.records, m.max_timestamp));
        let mut tally = Tally::default();
        let max_ts = copy_records(
            section,
            b,
            first.base_timestamp,
            before.0,
            &mut body,
            opts.ids,
            &mut tally,
        )?;
        let fits = opts.max_bytes == 0 || HEADER_SIZE + body.len() - at <= opts.max_bytes;
        if !fits && !marks.is_empty() {
            break;
        }
        marks.push(Mark {
            end: body.len(),
            records: before.0 + b.record_count,
            max_timestamp: before.1.max(max_ts),
            tally,
        });
        if !fits {
            break; // a first batch over the bound goes alone: the caller's size check names it
        }
    }
    let (data, used) = finish(codec, decoder.xerial.unwrap_or(true), body, &marks, opts)?;
    let last = &marks[used - 1];
    let mut tally = Tally::default();
    for mark in &marks[..used] {
        add(&mut tally, &mark.tally);
    }
    let mut data = data;
    if tally.unmapped.is_empty() {
        batch::write_header(
            &mut data,
            &Header {
                attributes: codec
                    | if opts.transactional {
                        TRANSACTIONAL_MASK
                    } else {
                        0
                    },
                last_offset_delta: last.records - 1,
                base_timestamp: first.base_timestamp,
                max_timestamp: last.max_timestamp,
                producer_id: opts.producer_id,
                producer_epoch: opts.producer_epoch,
                base_sequence: opts.base_sequence,
                record_count: last.records,
            },
        );
    } else {
        data.clear(); // half-translated: never to be sent
    }
    Ok(Merged {
        data,
        batches: used,
        records: last.records,
        first_offset: first.base_offset,
        next_offset: batches[used - 1].next_offset(),
        max_timestamp: last.max_timestamp,
        tally,
    })
}

fn check_run(batches: &[Batch<'_>]) -> Result<(), Error> {
    let Some(first) = batches.first() else {
        return Err(Error::Input("no batches to merge".to_string()));
    };
    for pair in batches.windows(2) {
        let (prev, next) = (&pair[0], &pair[1]);
        if next.base_offset != prev.next_offset() {
            return Err(Error::Input(format!(
                "batch at offset {} does not follow the one ending before {}: a gap (or \
                 overlap) in source offsets starts a new run",
                next.base_offset,
                prev.next_offset()
            )));
        }
        if next.codec() != first.codec() {
            return Err(Error::Input(format!(
                "batch at offset {} has codec {}, the run {}: one codec per run",
                next.base_offset,
                next.codec(),
                first.codec()
            )));
        }
    }
    Ok(())
}

/// The merged batch (header still to be written) and how many input batches it holds.
/// Compressed, the run was bounded by its uncompressed size; incompressible data can come
/// out slightly larger, and then the run is cut back until the batch fits.
fn finish(
    codec: u16,
    xerial: bool,
    mut body: Vec<u8>,
    marks: &[Mark],
    opts: &Options<'_>,
) -> Result<(Vec<u8>, usize), Error> {
    let mut used = marks.len();
    if codec == NONE {
        body.truncate(marks[used - 1].end);
        return Ok((body, used));
    }
    loop {
        let records = &body[..marks[used - 1].end];
        let mut out = Vec::with_capacity(HEADER_SIZE + records.len() / 2);
        out.resize(HEADER_SIZE, 0);
        codec::encode(codec, xerial, records, &mut out)?;
        if opts.max_bytes == 0 || out.len() <= opts.max_bytes || used == 1 {
            return Ok((out, used));
        }
        let keep = records.len() * opts.max_bytes / out.len();
        used = marks[..used - 1]
            .iter()
            .take_while(|m| m.end <= keep)
            .count()
            .max(1);
    }
}

fn add(total: &mut Tally, part: &Tally) {
    total.rewritten += part.rewritten;
    total.plain_keys += part.plain_keys;
    total.plain_values += part.plain_values;
    total.plain_records += part.plain_records;
    for id in &part.unmapped {
        if !total.unmapped.contains(id) {
            total.unmapped.push(*id);
        }
    }
}

fn input(why: String) -> Error {
    Error::Input(why)
}

/// The records of one batch's (uncompressed) section appended to `out`, renumbered from
/// `first_index` and re-timed against `base_ts`. Returns the largest record timestamp.
fn copy_records(
    section: &[u8],
    b: &Batch<'_>,
    base_ts: i64,
    first_index: i32,
    out: &mut Vec<u8>,
    ids: Option<&HashMap<u32, u32>>,
    tally: &mut Tally,
) -> Result<i64, Error> {
    let at = b.base_offset;
    let mut pos = 0;
    let mut max_ts = i64::MIN;
    for j in 0..b.record_count {
        let (len, start) = batch::read_varint(section, pos)?;
        let end = usize::try_from(len)
            .ok()
            .and_then(|len| start.checked_add(len))
            .filter(|&end| end <= section.len() && end > start)
            .ok_or_else(|| {
                input(format!(
                    "batch at offset {at}: record {j} runs past the batch"
                ))
            })?;
        let record = &section[start..end];
        let (ts_delta, p) = batch::read_varlong(record, 1)?;
        let (offset_delta, p) = batch::read_varint(record, p)?;
        let fields = batch::fields(&record[p..])
            .map_err(|e| input(format!("batch at offset {at}: record {j}: {e}")))?;
        if offset_delta != j {
            return Err(input(format!(
                "batch at offset {at}: record {j} has offset delta {offset_delta} (not dense)"
            )));
        }
        let ts = b
            .base_timestamp
            .checked_add(ts_delta)
            .ok_or_else(|| input(format!("batch at offset {at}: timestamp overflows")))?;
        max_ts = max_ts.max(ts);
        let new_ts_delta = ts
            .checked_sub(base_ts)
            .ok_or_else(|| input(format!("batch at offset {at}: timestamp delta overflows")))?;
        let new_offset_delta = first_index + j;
        let rest_at = if new_ts_delta == ts_delta && new_offset_delta == offset_delta {
            out.extend_from_slice(&section[pos..end]);
            out.len() - (record.len() - p)
        } else {
            let rest = &record[p..];
            let new_offset_delta = i64::from(new_offset_delta);
            let new_len = 1
                + batch::varlong_len(new_ts_delta)
                + batch::varlong_len(new_offset_delta)
                + rest.len();
            batch::write_varlong(out, i64::try_from(new_len).expect("a record under 2 GiB"));
            out.push(record[0]); // the record's attributes (unused in v2), as they were
            batch::write_varlong(out, new_ts_delta);
            batch::write_varlong(out, new_offset_delta);
            out.extend_from_slice(rest);
            out.len() - rest.len()
        };
        if let Some(map) = ids {
            ids::rewrite(&mut out[rest_at..], &fields, map, tally);
        }
        pos = end;
    }
    if pos != section.len() {
        return Err(input(format!(
            "batch at offset {at}: {} bytes after its {} records",
            section.len() - pos,
            b.record_count
        )));
    }
    Ok(max_ts)
}
