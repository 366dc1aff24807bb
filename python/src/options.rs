//! The keyword options of `segment()` and `stereo()`, made from segcut's table of options
//! (`segcut::options`): the same names as the command line's flags in snake_case, parsed and
//! range-checked by the library, with "not given" kept apart from "equal to the default".

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use segcut::options::{OptionError, Table, Values};

/// A keyword's value as the text the options model parses: `True` → `true`, numbers as Rust
/// writes them (so `nan` reaches the range check), `(255, 0, 0)` → `255,0,0`.
fn option_text(v: &Bound<'_, PyAny>) -> PyResult<String> {
    if v.is_instance_of::<PyBool>() {
        return Ok(v.extract::<bool>()?.to_string());
    }
    if v.is_instance_of::<PyInt>() {
        return Ok(v.extract::<i128>()?.to_string());
    }
    if v.is_instance_of::<PyFloat>() {
        return Ok(v.extract::<f64>()?.to_string());
    }
    if v.is_instance_of::<PyString>() {
        return v.extract::<String>();
    }
    if v.is_instance_of::<PyTuple>() || v.is_instance_of::<PyList>() {
        let parts: Vec<String> = v
            .try_iter()?
            .map(|x| option_text(&x?))
            .collect::<PyResult<_>>()?;
        return Ok(parts.join(","));
    }
    // numpy scalars and the like: their own text.
    Ok(v.str()?.to_string())
}

/// An option error as Python's: the keyword's name and what is wrong.
pub(crate) fn option_err(e: OptionError) -> PyErr {
    PyValueError::new_err(format!("{}: {}", e.option.replace('-', "_"), e.msg))
}

/// The options in `opts` (keywords of `table`; `None` values are not given). Keys not in the
/// table are a `TypeError`, bad values a `ValueError` naming the keyword.
pub(crate) fn option_values(opts: &Bound<'_, PyDict>, table: Table) -> PyResult<Values> {
    let mut v = Values::new(table);
    for (k, val) in opts.iter() {
        let key: String = k.extract()?;
        if table.find(&key).is_none() || key.contains('-') {
            let names: Vec<String> = table.specs().iter().map(|s| s.snake()).collect();
            return Err(PyTypeError::new_err(format!(
                "unknown option {key}; options: {}",
                names.join(", ")
            )));
        }
        if val.is_none() {
            continue;
        }
        v.set(&key, &option_text(&val)?).map_err(option_err)?;
    }
    Ok(v)
}

/// The keyword names of `segment()` (`"segment"`) or `stereo()` (`"stereo"`), with their
/// defaults as the help shows them.
#[pyfunction]
pub fn option_table(kind: &str) -> PyResult<Vec<(String, String)>> {
    let table = match kind {
        "segment" => Table::Segment,
        "stereo" => Table::Stereo,
        k => {
            return Err(PyValueError::new_err(format!(
                "kind must be 'segment' or 'stereo', got '{k}'"
            )))
        }
    };
    Ok(table
        .specs()
        .iter()
        .map(|s| (s.snake(), s.default.text()))
        .collect())
}
