//! The native part of the `tessera` Python package (`tessera._tessera`): thin bindings over
//! the app libraries. The pure-Python layer (`python/tessera/`) turns torch tensors and
//! sequences into numpy arrays and wraps the results; every check on the data, every error
//! and the work itself are here, with the GIL released around the work ([`errors::run`]).

mod arrays;
mod composite;
mod compositor;
mod devices;
mod errors;
mod lightfield;
mod mad;
mod mosaic;
mod smoe;

use pyo3::prelude::*;

#[pymodule]
fn _tessera(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(devices::devices, m)?)?;
    m.add_function(wrap_pyfunction!(devices::set_memory_budget, m)?)?;
    m.add_function(wrap_pyfunction!(devices::memory_budget, m)?)?;
    m.add_function(wrap_pyfunction!(devices::validation_messages, m)?)?;
    m.add_class::<mad::MadScorer>()?;
    m.add_function(wrap_pyfunction!(mosaic::mosaic_solve, m)?)?;
    m.add_function(wrap_pyfunction!(mosaic::mosaic_build, m)?)?;
    m.add_function(wrap_pyfunction!(composite::composite_blend, m)?)?;
    m.add_class::<compositor::PyCompositor>()?;
    m.add_function(wrap_pyfunction!(lightfield::lightfield_train, m)?)?;
    m.add_function(wrap_pyfunction!(lightfield::lightfield_load_ensemble, m)?)?;
    m.add_function(wrap_pyfunction!(lightfield::lightfield_encode, m)?)?;
    m.add_function(wrap_pyfunction!(lightfield::lightfield_decode, m)?)?;
    m.add_function(wrap_pyfunction!(lightfield::lightfield_render, m)?)?;
    m.add_class::<lightfield::LfEnsemble>()?;
    m.add_function(wrap_pyfunction!(smoe::smoe_fit, m)?)?;
    m.add_function(wrap_pyfunction!(smoe::smoe_load, m)?)?;
    m.add_class::<smoe::SmoeModel>()?;
    Ok(())
}
