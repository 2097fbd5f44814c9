//! `kmirror_batches`: kmirror's record-batch kernel, one call per run of batches.
//!
//! `merge` turns a run of small Kafka v2 batches of one partition (contiguous source offsets,
//! dense, one codec, CreateTime) into one batch a producer can send, optionally translating
//! Confluent schema IDs on the way (`IdMap`). One run of a single batch is how a batch that is
//! not merged gets its IDs translated. See docs/architecture.md, "Re-batching".

mod batch;
mod codec;
mod error;
mod ids;
mod run;

use std::collections::HashMap;

use pyo3::buffer::PyBuffer;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

pyo3::create_exception!(
    kmirror_batches,
    MergeError,
    PyValueError,
    "The batches are not a run that can be merged, or one is malformed."
);

/// Schema IDs of the source registry mapped to the target registry's.
#[pyclass(module = "kmirror_batches")]
#[derive(Default)]
struct IdMap {
    map: HashMap<u32, u32>,
}

#[pymethods]
impl IdMap {
    #[new]
    #[pyo3(signature = (mapping=None))]
    fn new(mapping: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        let mut ids = IdMap::default();
        if let Some(mapping) = mapping {
            for item in mapping.call_method0("items")?.try_iter()? {
                let (source, target): (u32, u32) = item?.extract()?;
                ids.set(source, target);
            }
        }
        Ok(ids)
    }

    /// Map source ID `source` to target ID `target` (replacing an earlier mapping).
    fn set(&mut self, source: u32, target: u32) {
        self.map.insert(source, target);
    }

    fn get(&self, source: u32) -> Option<u32> {
        self.map.get(&source).copied()
    }

    fn __len__(&self) -> usize {
        self.map.len()
    }
}

/// One merged batch and what went into it.
#[pyclass(module = "kmirror_batches", frozen)]
struct Merged {
    /// The batch, ready to send (empty when `unmapped` is not).
    #[pyo3(get)]
    data: Py<PyBytes>,
    /// Input batches it holds: a prefix of the run when `max_bytes` cut it.
    #[pyo3(get)]
    batches: usize,
    #[pyo3(get)]
    records: i32,
    /// Source offset of its first record, and the one after its last.
    #[pyo3(get)]
    first_offset: i64,
    #[pyo3(get)]
    next_offset: i64,
    #[pyo3(get)]
    max_timestamp: i64,
    /// Schema IDs rewritten; non-null keys and values not in the wire format (left as they
    /// were); records with neither key nor value in it; source IDs with no mapping (then
    /// nothing was built: map them and merge again).
    #[pyo3(get)]
    rewritten_ids: u64,
    #[pyo3(get)]
    plain_keys: u64,
    #[pyo3(get)]
    plain_values: u64,
    #[pyo3(get)]
    plain_records: u64,
    #[pyo3(get)]
    unmapped: Vec<u32>,
}

#[pymethods]
impl Merged {
    fn __repr__(&self) -> String {
        format!(
            "Merged(batches={}, records={}, offsets={}..{}, unmapped={:?})",
            self.batches, self.records, self.first_offset, self.next_offset, self.unmapped
        )
    }
}

/// Merge a run of batches into one. `batches`: buffers (bytes, memoryview, ...) each holding
/// one or more complete v2 batches, in offset order. The merged batch gets base offset 0,
/// the given producer id, epoch, base sequence and transactional bit, and a CRC32C.
#[pyfunction]
#[pyo3(signature = (
    batches, *, producer_id=-1, producer_epoch=-1, base_sequence=-1, transactional=false,
    max_bytes=0, ids=None
))]
#[allow(clippy::too_many_arguments)]
fn merge(
    py: Python<'_>,
    batches: &Bound<'_, PyAny>,
    producer_id: i64,
    producer_epoch: i16,
    base_sequence: i32,
    transactional: bool,
    max_bytes: usize,
    ids: Option<PyRef<'_, IdMap>>,
) -> PyResult<Merged> {
    let mut buffers = Vec::new();
    for item in batches.try_iter()? {
        let buffer = PyBuffer::<u8>::get(&item?)?;
        if !buffer.is_c_contiguous() {
            return Err(MergeError::new_err("a batch buffer is not contiguous"));
        }
        buffers.push(buffer);
    }
    // SAFETY: each buffer stays acquired (PyBuffer) until this function returns, and the
    // batches handed in are fetched bytes nobody writes while the merge reads them.
    let slices: Vec<&[u8]> = buffers
        .iter()
        .map(|b| unsafe { std::slice::from_raw_parts(b.buf_ptr().cast::<u8>(), b.len_bytes()) })
        .collect();
    let options = run::Options {
        producer_id,
        producer_epoch,
        base_sequence,
        transactional,
        max_bytes,
        ids: ids.as_ref().map(|m| &m.map),
    };
    let merged = py
        .detach(|| run::merge(&slices, &options))
        .map_err(|e| MergeError::new_err(e.to_string()))?;
    Ok(Merged {
        data: PyBytes::new(py, &merged.data).unbind(),
        batches: merged.batches,
        records: merged.records,
        first_offset: merged.first_offset,
        next_offset: merged.next_offset,
        max_timestamp: merged.max_timestamp,
        rewritten_ids: merged.tally.rewritten,
        plain_keys: merged.tally.plain_keys,
        plain_values: merged.tally.plain_values,
        plain_records: merged.tally.plain_records,
        unmapped: merged.tally.unmapped,
    })
}

#[pymodule]
fn kmirror_batches(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(merge, m)?)?;
    m.add_class::<IdMap>()?;
    m.add_class::<Merged>()?;
    m.add("MergeError", m.py().get_type::<MergeError>())?;
    Ok(())
}
