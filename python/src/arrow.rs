//! `snapshot()`'s columns as Arrow arrays, built in Rust, and how they leave for Python:
//! to pyarrow without a copy through the Arrow C data interface, exported with the Arrow
//! PyCapsule protocol (`__arrow_c_schema__`, `__arrow_c_array__`, `__arrow_c_stream__`,
//! which pyarrow 14 and later imports with `pa.record_batch(obj)` / `pa.table(obj)`), or
//! as a dict of Python lists (`to_pydict`) when pyarrow is not there. Both forms come from
//! the same arrays; what goes into them is [`crate::columns`]'s.
//!
//! The export is arrow-rs's own (`arrow_array::ffi`): each capsule owns an
//! `FFI_ArrowSchema` or `FFI_ArrowArray` whose release callback keeps the Rust buffers
//! alive until the consumer releases them. A consumer that imports a capsule moves the
//! structure out (its release becomes NULL), so the capsule's destructor only releases one
//! that was never imported.

use std::ffi::CStr;
use std::sync::Arc;

use arrow_array::ffi::{FFI_ArrowArray, FFI_ArrowSchema};
use arrow_array::ffi_stream::FFI_ArrowArrayStream;
use arrow_array::{
    Array, ArrayRef, BinaryArray, Float64Array, Int64Array, ListArray, RecordBatch,
    RecordBatchIterator, StringArray, StructArray, UInt64Array,
};
use arrow_schema::{ArrowError, DataType};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyCapsule, PyDict, PyList, PyString, PyTuple};

/// The capsule names the PyCapsule protocol fixes.
const SCHEMA: &CStr = c"arrow_schema";
const ARRAY: &CStr = c"arrow_array";
const STREAM: &CStr = c"arrow_array_stream";

/// An Arrow error as a Python exception.
fn arrow_error(e: ArrowError) -> PyErr {
    PyRuntimeError::new_err(format!("arrow: {e}"))
}

/// One `snapshot()` pass as one Arrow record batch (every column the same length).
#[pyclass(frozen, module = "tasksnap._tasksnap", name = "Columns")]
#[derive(Debug)]
pub(crate) struct Columns {
    batch: RecordBatch,
}

impl Columns {
    /// The batch of `columns` (name, array), in order.
    pub(crate) fn new(columns: Vec<(String, ArrayRef)>, rows: usize) -> PyResult<Columns> {
        let options = arrow_array::RecordBatchOptions::new().with_row_count(Some(rows));
        let fields: Vec<arrow_schema::Field> = columns
            .iter()
            .map(|(n, a)| arrow_schema::Field::new(n, a.data_type().clone(), true))
            .collect();
        let schema = Arc::new(arrow_schema::Schema::new(fields));
        let arrays = columns.into_iter().map(|(_, a)| a).collect();
        let batch =
            RecordBatch::try_new_with_options(schema, arrays, &options).map_err(arrow_error)?;
        Ok(Columns { batch })
    }

    /// A requested schema other than the batch's own is not honoured: the protocol lets a
    /// producer ignore it ("best effort"), and pyarrow casts afterwards if it must.
    fn schema_capsule<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyCapsule>> {
        let schema =
            FFI_ArrowSchema::try_from(self.batch.schema().as_ref()).map_err(arrow_error)?;
        PyCapsule::new_with_value(py, schema, SCHEMA)
    }
}

#[pymethods]
impl Columns {
    /// The number of rows (tasks).
    #[getter]
    fn num_rows(&self) -> usize {
        self.batch.num_rows()
    }

    /// The column names, in order.
    #[getter]
    fn column_names(&self) -> Vec<String> {
        self.batch
            .schema()
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect()
    }

    /// The schema as an `arrow_schema` capsule (a struct of the columns).
    fn __arrow_c_schema__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyCapsule>> {
        self.schema_capsule(py)
    }

    /// The batch as a struct array: (`arrow_schema`, `arrow_array`) capsules sharing the
    /// Rust buffers.
    #[pyo3(signature = (requested_schema=None))]
    fn __arrow_c_array__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let _ = requested_schema;
        let data = StructArray::from(self.batch.clone()).into_data();
        let array = FFI_ArrowArray::new(&data);
        let schema = self.schema_capsule(py)?;
        let array = PyCapsule::new_with_value(py, array, ARRAY)?;
        PyTuple::new(py, [schema.into_any(), array.into_any()])
    }

    /// The batch as a stream of one batch (`arrow_array_stream` capsule): `pa.table(obj)`.
    #[pyo3(signature = (requested_schema=None))]
    fn __arrow_c_stream__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let _ = requested_schema;
        let reader = RecordBatchIterator::new([Ok(self.batch.clone())], self.batch.schema());
        let stream = FFI_ArrowArrayStream::new(Box::new(reader));
        PyCapsule::new_with_value(py, stream, STREAM)
    }

    /// The address of the first byte of `column`'s values (its last buffer: the values of
    /// a number column, the bytes of a text one): a consumer that imported the columns
    /// without a copy reads this same memory (`python/tests`).
    fn values_address(&self, column: &str) -> PyResult<usize> {
        let a = self
            .batch
            .column_by_name(column)
            .ok_or_else(|| PyValueError::new_err(format!("no column {column}")))?;
        let data = a.to_data();
        let b = data
            .buffers()
            .last()
            .ok_or_else(|| PyValueError::new_err(format!("column {column} has no buffer")))?;
        Ok(b.as_ptr() as usize)
    }

    /// The columns as a dict of Python lists (None for a null), from the same arrays.
    fn to_pydict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let out = PyDict::new(py);
        for (f, a) in self
            .batch
            .schema()
            .fields()
            .iter()
            .zip(self.batch.columns())
        {
            out.set_item(f.name(), to_list(py, a.as_ref())?)?;
        }
        Ok(out)
    }
}

/// A column as a Python list: numbers, `str`, `bytes`, or lists of those.
fn to_list<'py>(py: Python<'py>, a: &dyn Array) -> PyResult<Bound<'py, PyList>> {
    let any = a.as_any();
    if let Some(a) = any.downcast_ref::<Int64Array>() {
        return PyList::new(py, a.iter());
    }
    if let Some(a) = any.downcast_ref::<UInt64Array>() {
        return PyList::new(py, a.iter());
    }
    if let Some(a) = any.downcast_ref::<Float64Array>() {
        return PyList::new(py, a.iter());
    }
    if let Some(a) = any.downcast_ref::<StringArray>() {
        return PyList::new(py, a.iter().map(|s| s.map(|s| PyString::new(py, s))));
    }
    if let Some(a) = any.downcast_ref::<BinaryArray>() {
        return PyList::new(py, a.iter().map(|b| b.map(|b| PyBytes::new(py, b))));
    }
    if let Some(a) = any.downcast_ref::<ListArray>() {
        let rows = (0..a.len())
            .map(|i| {
                if a.is_null(i) {
                    Ok(None)
                } else {
                    to_list(py, a.value(i).as_ref()).map(Some)
                }
            })
            .collect::<PyResult<Vec<_>>>()?;
        return PyList::new(py, rows);
    }
    Err(PyRuntimeError::new_err(format!(
        "no Python list for an Arrow {}",
        match a.data_type() {
            DataType::Null => "null column".to_string(),
            t => t.to_string(),
        }
    )))
}
