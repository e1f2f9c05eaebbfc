//! Python bindings of the ftlab core (`ftlab._core`). Thin: options in, JSON or TOML text
//! out; long runs release the GIL and stay entirely in Rust.

use ftlab_core::device::nand;
use ftlab_core::ftl;
use ftlab_core::io::{trace, workload};
use ftlab_core::run::api::{self, RunOptions};
use ftlab_core::run::config;
use pyo3::exceptions::{PyException, PyKeyboardInterrupt, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

mod scheme;

pyo3::create_exception!(
    _core,
    FtlabError,
    PyException,
    "An error reported by the ftlab core."
);

fn to_py(e: ftlab_core::Error) -> PyErr {
    FtlabError::new_err(e.to_string())
}

/// Run options from the keyword arguments every entry point takes: `trace`, `workload`,
/// `preset`, `config` (files), `sets` (`key=value` overrides), `verify`, `format`,
/// `time_unit`; all optional, an unknown one is an error.
fn options(ftl: String, source: Option<&Bound<'_, PyDict>>) -> PyResult<RunOptions> {
    let mut opts = RunOptions {
        ftl,
        ..RunOptions::default()
    };
    for (key, value) in source.into_iter().flat_map(|d| d.iter()) {
        let key: String = key.extract()?;
        match key.as_str() {
            "trace" => opts.trace = value.extract()?,
            "workload" => opts.workload = value.extract()?,
            "preset" => opts.preset = value.extract()?,
            "config" => opts.config_files = value.extract()?,
            "sets" => opts.sets = value.extract()?,
            "verify" => opts.verify = value.extract()?,
            "format" => opts.format = value.extract()?,
            "time_unit" => opts.time_unit = value.extract()?,
            _ => {
                return Err(PyTypeError::new_err(format!(
                    "unexpected keyword argument `{key}`"
                )))
            }
        }
    }
    Ok(opts)
}

/// A flag that stops the runs it is given to: set from any thread (the one that catches
/// Ctrl-C while runs go on in others), seen by each run at its next progress point (every
/// 65,536 requests or trace records), which then raises KeyboardInterrupt.
#[pyclass(frozen)]
struct Cancel(AtomicBool);

#[pymethods]
impl Cancel {
    #[new]
    fn new() -> Self {
        Cancel(AtomicBool::new(false))
    }

    /// Stops every run given this flag.
    fn set(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    /// Whether `set` was called.
    #[getter]
    fn is_set(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

/// What a long run does at each of its progress points, the GIL released in between: stop
/// if `cancel` is set (no GIL needed); else take the GIL briefly to check for signals
/// (Ctrl-C, in the main thread only) and call `progress`. The exception that stopped the
/// run (KeyboardInterrupt, or the callback's own) is kept to be raised when it returns.
struct Poll<'a> {
    cancel: Option<&'a Cancel>,
    progress: Option<&'a PyObject>,
    stopped_by: Option<PyErr>,
}

impl<'a> Poll<'a> {
    fn new(cancel: Option<&'a Py<Cancel>>, progress: Option<&'a PyObject>) -> Self {
        Poll {
            cancel: cancel.map(|c| c.get()),
            progress,
            stopped_by: None,
        }
    }

    /// Whether the run goes on; `args` are the progress callback's.
    fn tick<A>(&mut self, args: A) -> bool
    where
        A: for<'py> IntoPyObject<'py, Target = pyo3::types::PyTuple>,
    {
        if self.cancel.is_some_and(Cancel::is_set) {
            self.stopped_by = Some(PyKeyboardInterrupt::new_err("cancelled"));
            return false;
        }
        let progress = self.progress;
        let outcome = Python::with_gil(|py| {
            py.check_signals()?;
            match progress {
                Some(cb) => cb.call1(py, args).map(drop),
                None => Ok(()),
            }
        });
        match outcome {
            Ok(()) => true,
            Err(e) => {
                self.stopped_by = Some(e);
                false
            }
        }
    }

    /// The run's outcome: the exception that stopped it, if any, over its own error.
    fn finish<T>(self, result: ftlab_core::Result<T>) -> PyResult<T> {
        match self.stopped_by {
            Some(e) => Err(e),
            None => result.map_err(to_py),
        }
    }
}

/// Runs one scheme; returns (report JSON, wall-clock seconds). `progress(done, fraction,
/// phase)` is called every 65,536 requests (or trace records while a trace is scanned
/// first): `phase` is "scan" or "simulate", `fraction` the share done (None if unknown).
/// Ctrl-C (in the main thread), `cancel` being set or `progress` raising stops the run
/// and raises KeyboardInterrupt (or `progress`'s exception). An empty `format` or
/// `time_unit` keeps the configuration's (`auto`).
#[pyfunction]
#[pyo3(signature = (ftl, progress=None, cancel=None, **source))]
fn run(
    py: Python<'_>,
    ftl: String,
    progress: Option<PyObject>,
    cancel: Option<Py<Cancel>>,
    source: Option<&Bound<'_, PyDict>>,
) -> PyResult<(String, f64)> {
    let opts = options(ftl, source)?;
    let out = py.allow_threads(|| {
        let mut poll = Poll::new(cancel.as_ref(), progress.as_ref());
        let result = api::run_with_progress(&opts, &mut |p: &api::Progress| {
            poll.tick((p.done, p.fraction, p.phase))
        });
        poll.finish(result)
    })?;
    Ok((out.report.to_json(), out.wall_seconds))
}

/// Loads the requests into memory, then times the simulation alone; returns JSON.
#[pyfunction]
#[pyo3(signature = (ftl, **source))]
#[pyo3(name = "bench")]
fn bench_scheme(
    py: Python<'_>,
    ftl: String,
    source: Option<&Bound<'_, PyDict>>,
) -> PyResult<String> {
    let opts = options(ftl, source)?;
    let result = py.allow_threads(|| api::bench(&opts)).map_err(to_py)?;
    serde_json::to_string(&result).map_err(|e| FtlabError::new_err(e.to_string()))
}

/// The scheme's DRAM on a fresh device and its host stack's memory, by component, without
/// running: JSON `{"device": [[name, bytes], ...], "host": [...], "logical_pages",
/// "app_pages"}`.
#[pyfunction]
#[pyo3(signature = (ftl, **source))]
fn memory(py: Python<'_>, ftl: String, source: Option<&Bound<'_, PyDict>>) -> PyResult<String> {
    let opts = options(ftl, source)?;
    let result = py.allow_threads(|| api::memory(&opts)).map_err(to_py)?;
    serde_json::to_string(&result).map_err(|e| FtlabError::new_err(e.to_string()))
}

/// When the runs would fit the device to the trace: the `geometry.blocks_per_plane` that
/// every scheme of `ftls` accepts (so that `compare` puts them all on one device).
#[pyfunction]
#[pyo3(signature = (ftls, **source))]
fn fitted_blocks_per_plane(
    py: Python<'_>,
    ftls: Vec<String>,
    source: Option<&Bound<'_, PyDict>>,
) -> PyResult<Option<u32>> {
    let opts = options(String::new(), source)?;
    py.allow_threads(|| api::fitted_blocks_per_plane(&opts, &ftls))
        .map_err(to_py)
}

/// The resolved configuration as TOML (with what scheme `ftl`, if named, assumes of the
/// device).
#[pyfunction]
#[pyo3(signature = (ftl = None, **source))]
fn config_show(ftl: Option<String>, source: Option<&Bound<'_, PyDict>>) -> PyResult<String> {
    let opts = options(ftl.unwrap_or_default(), source)?;
    Ok(api::resolve_config(&opts).map_err(to_py)?.to_toml())
}

fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
    items
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

/// (name, description) of each preset.
#[pyfunction]
fn presets() -> Vec<(String, String)> {
    pairs(&config::preset_names())
}

/// (name, description) of each FTL scheme: the ones shipped with ftlab, then (unless
/// `builtin`) the ones users registered.
#[pyfunction]
#[pyo3(signature = (builtin=false))]
fn schemes(builtin: bool) -> Vec<(String, String)> {
    if builtin {
        return ftl::scheme_info()
            .into_iter()
            .filter(|s| s.builtin)
            .map(|s| (s.name, s.description))
            .collect();
    }
    ftl::scheme_list()
}

/// Every scheme's facts (name, description, family, builtin, append_only, section,
/// device_defaults, advise), built-in ones first: JSON.
#[pyfunction]
fn scheme_info() -> PyResult<String> {
    serde_json::to_string(&ftl::scheme_info()).map_err(|e| FtlabError::new_err(e.to_string()))
}

/// The headline numbers of a report (its JSON): JSON, fields in `summary_columns` order.
#[pyfunction]
fn summarize(report_json: &str) -> PyResult<String> {
    let report: serde_json::Value = serde_json::from_str(report_json)
        .map_err(|e| FtlabError::new_err(format!("not a report: {e}")))?;
    let summary = ftlab_core::run::summary::summarize(&report).map_err(to_py)?;
    serde_json::to_string(&summary).map_err(|e| FtlabError::new_err(e.to_string()))
}

/// (name, type) of each summary field: `str`, `int`, `float` or `bool`.
#[pyfunction]
fn summary_columns() -> Vec<(String, String)> {
    pairs(&ftlab_core::run::summary::columns())
}

/// A scheme named with its host stack, `STACK+SCHEME`: (the stack or None, the scheme).
#[pyfunction]
fn split_stack(name: &str) -> (Option<String>, String) {
    let (stack, scheme) = ftlab_core::run::api::split_stack(name);
    (stack.map(str::to_string), scheme.to_string())
}

/// (name, description) of each scheme family.
#[pyfunction]
fn families() -> Vec<(String, String)> {
    pairs(ftl::FAMILIES)
}

/// (name, description) of each host stack (`host.stack`).
#[pyfunction]
fn stacks() -> Vec<(String, String)> {
    pairs(ftlab_core::host::StackKind::ALL)
}

/// (name, group, description) of each flash operation cause, in report order: the keys of
/// `flash.reads`, `flash.programs` and `flash.erases` (before `total`).
#[pyfunction]
fn causes() -> Vec<(String, String, String)> {
    nand::CAUSES
        .iter()
        .map(|c| {
            (
                c.name().to_string(),
                c.group().to_string(),
                c.description().to_string(),
            )
        })
        .collect()
}

/// The configuration of `config` files and `sets` overrides over the defaults (how a trace
/// is read, for `trace_info` and `convert_trace`).
fn files_and_sets(config: Vec<PathBuf>, sets: Vec<String>) -> PyResult<config::Config> {
    let opts = RunOptions {
        config_files: config,
        sets,
        ..RunOptions::default()
    };
    api::resolve_config(&opts).map_err(to_py)
}

/// Describes a trace: returns the `ftlab trace info` JSON. `sets` are `trace.*`
/// overrides (`trace.format=msr`, `trace.devices=["0"]`, ...) over `config` files;
/// `progress(records, fraction)` is called every 65,536 records.
#[pyfunction]
#[pyo3(signature = (path, page_size=4096, config=Vec::new(), sets=Vec::new(), progress=None))]
fn trace_info(
    py: Python<'_>,
    path: PathBuf,
    page_size: u64,
    config: Vec<PathBuf>,
    sets: Vec<String>,
    progress: Option<PyObject>,
) -> PyResult<String> {
    let cfg = files_and_sets(config, sets)?;
    let info = py.allow_threads(|| {
        let mut poll = Poll::new(None, progress.as_ref());
        let result = api::trace_info(&path, &cfg.trace, page_size, &mut |done, fraction| {
            poll.tick((done, fraction))
        });
        poll.finish(result)
    })?;
    Ok(info.to_json())
}

/// Converts a trace to ftlab's binary form; returns JSON (records, bytes in and out).
#[pyfunction]
#[pyo3(signature = (path, output, config=Vec::new(), sets=Vec::new(), progress=None))]
fn convert_trace(
    py: Python<'_>,
    path: PathBuf,
    output: PathBuf,
    config: Vec<PathBuf>,
    sets: Vec<String>,
    progress: Option<PyObject>,
) -> PyResult<String> {
    let cfg = files_and_sets(config, sets)?;
    let converted = py.allow_threads(|| {
        let mut poll = Poll::new(None, progress.as_ref());
        let result = api::convert_trace(&path, &cfg.trace, &output, &mut |done, fraction| {
            poll.tick((done, fraction))
        });
        poll.finish(result)
    })?;
    serde_json::to_string(&converted).map_err(|e| FtlabError::new_err(e.to_string()))
}

/// Reads a whole trace and times it; returns JSON (lines per second, ...).
#[pyfunction]
#[pyo3(signature = (path, sets=Vec::new()))]
fn read_speed(py: Python<'_>, path: PathBuf, sets: Vec<String>) -> PyResult<String> {
    let opts = RunOptions {
        sets,
        ..RunOptions::default()
    };
    let cfg = api::resolve_config(&opts).map_err(to_py)?;
    let result = py
        .allow_threads(|| api::read_speed(&path, &cfg.trace))
        .map_err(to_py)?;
    serde_json::to_string(&result).map_err(|e| FtlabError::new_err(e.to_string()))
}

/// (name, aliases, description, time unit, example line) of each trace format.
#[pyfunction]
fn trace_formats() -> Vec<(String, Vec<String>, String, String, String)> {
    trace::FORMATS
        .iter()
        .map(|f| {
            (
                f.name.to_string(),
                f.aliases.iter().map(|a| a.to_string()).collect(),
                f.description.to_string(),
                f.time_unit.to_string(),
                f.example.to_string(),
            )
        })
        .collect()
}

/// (name, description) of each built-in workload.
#[pyfunction]
fn workloads() -> Vec<(String, String)> {
    pairs(workload::builtin_names())
}

/// Peak resident set size of this process in bytes (Linux; 0 elsewhere).
#[pyfunction]
fn peak_rss_bytes() -> u64 {
    api::peak_rss_bytes()
}

/// The requests a run over `trace` would simulate, after the configuration's trace
/// handling (format detection, device layout, address compaction): a list of
/// (time_ns, offset_bytes, len_bytes, op) with op 0 = write, 1 = read, 2 = trim, and the
/// logical pages of the (possibly fitted) device. For experiments that transform real
/// traces (fold them onto a device, repeat them).
#[pyfunction]
#[pyo3(signature = (trace, preset=None, sets=Vec::new()))]
#[allow(clippy::type_complexity)]
fn trace_requests(
    py: Python<'_>,
    trace: PathBuf,
    preset: Option<String>,
    sets: Vec<String>,
) -> PyResult<(Vec<(u64, u64, u32, u8)>, u64)> {
    let opts = RunOptions {
        ftl: "page".into(),
        trace: Some(trace),
        preset,
        sets,
        ..RunOptions::default()
    };
    let (requests, cfg) = py
        .allow_threads(|| api::load_requests(&opts))
        .map_err(to_py)?;
    let layout = cfg.validate().map_err(to_py)?;
    let out = requests
        .iter()
        .map(|r| {
            let op = match r.op {
                ftlab_core::Op::Write => 0,
                ftlab_core::Op::Read => 1,
                ftlab_core::Op::Trim => 2,
            };
            (r.time_ns, r.offset_bytes, r.len_bytes, op)
        })
        .collect();
    Ok((out, layout.logical_pages))
}

/// Serves scheme `ftl` as an NBD export until `tick` returns False or a signal (Ctrl-C,
/// SIGTERM turned into KeyboardInterrupt) arrives, then shuts down cleanly; returns the
/// report JSON. `on_start(startup_json, address)` is called once the server listens;
/// `tick(status_json)` about every 200 ms (live counters, connection events).
#[pyfunction]
#[pyo3(signature = (
    ftl, store, listen, timing_real, verify, on_start, tick, preallocate=false,
    max_connections=64, handshake_timeout=10.0, read_only=false, status=None, tls_psk=None,
    tls_cert=None, tls_key=None, sync_poll=true, **source
))]
#[allow(clippy::too_many_arguments)]
fn serve(
    py: Python<'_>,
    ftl: String,
    store: PathBuf,
    listen: String,
    timing_real: bool,
    verify: bool,
    on_start: PyObject,
    tick: PyObject,
    preallocate: bool,
    max_connections: usize,
    handshake_timeout: f64,
    read_only: bool,
    status: Option<String>,
    tls_psk: Option<PathBuf>,
    tls_cert: Option<PathBuf>,
    tls_key: Option<PathBuf>,
    sync_poll: bool,
    source: Option<&Bound<'_, PyDict>>,
) -> PyResult<String> {
    let tls = match (tls_psk, tls_cert, tls_key) {
        (None, None, None) => None,
        (Some(psk), None, None) => Some(ftlab_nbd::tls::TlsConfig::Psk(psk)),
        (None, Some(cert), Some(key)) => Some(ftlab_nbd::tls::TlsConfig::Cert { cert, key }),
        _ => {
            return Err(FtlabError::new_err(
                "TLS takes either a PSK file (tls_psk) or a certificate and its key \
                 (tls_cert and tls_key, both)",
            ))
        }
    };
    if max_connections == 0 || !(handshake_timeout > 0.0 && handshake_timeout < 1e6) {
        return Err(FtlabError::new_err(format!(
            "max_connections must be at least 1 and handshake_timeout a positive number of \
             seconds (got {max_connections} and {handshake_timeout})"
        )));
    }
    let mut opts = options(ftl.clone(), source)?;
    // A served device starts empty (or from its store) and its requests arrive when the
    // clients send them: open loop at wall-clock time. The user's keys come after.
    let mut sets = vec![
        "precondition.mode=\"none\"".to_string(),
        "replay.mode=\"open\"".to_string(),
        "replay.time_scale=1.0".to_string(),
    ];
    sets.append(&mut opts.sets);
    opts.sets = sets;
    let cfg = api::resolve_config(&opts).map_err(to_py)?;
    let serve_opts = ftlab_nbd::ServeOptions {
        scheme: opts.ftl.clone(),
        cfg,
        store,
        listen,
        timing_real,
        verify,
        export_name: "ftlab".into(),
        preallocate,
        sync_poll,
        limits: ftlab_nbd::server::Limits {
            max_connections,
            handshake_timeout: std::time::Duration::from_secs_f64(handshake_timeout),
            read_only,
        },
        status,
        tls,
    };
    let result = py.allow_threads(|| {
        // A signal that lands while `on_start` runs Python code raises there: remembered,
        // so that the first tick stops the server rather than the interrupt being lost.
        let interrupted = std::cell::Cell::new(false);
        let mut started = |startup: &ftlab_nbd::recovery::Startup, address: &str| {
            let text = serde_json::to_string(startup).unwrap_or_default();
            Python::with_gil(|py| {
                if let Err(e) = on_start.call1(py, (text, address)) {
                    if e.is_instance_of::<pyo3::exceptions::PyKeyboardInterrupt>(py) {
                        interrupted.set(true);
                    } else {
                        e.print(py);
                    }
                }
            });
        };
        let mut tick_cb = |status: &ftlab_nbd::Status| -> bool {
            Python::with_gil(|py| {
                if interrupted.get() || py.check_signals().is_err() {
                    return false;
                }
                let l = &status.live;
                let text = serde_json::json!({
                    "address": status.address,
                    "elapsed_s": status.elapsed_s,
                    "requests": l.requests,
                    "pages_written": l.pages_written,
                    "pages_read": l.pages_read,
                    "flash_programs": l.flash_programs,
                    "gc_invocations": l.gc_invocations,
                    "memory_bytes": l.memory_bytes,
                    "connections": status.connections,
                    "flushes": status.flushes,
                    "errors": status.errors,
                    "media_errors": status.media_errors,
                    "fsyncs": status.fsyncs,
                    "pacing": status.pacing,
                    "events": status.events,
                })
                .to_string();
                match tick.call1(py, (text,)) {
                    Ok(v) => v.extract::<bool>(py).unwrap_or(true),
                    Err(e) => {
                        if !e.is_instance_of::<pyo3::exceptions::PyKeyboardInterrupt>(py) {
                            e.print(py);
                        }
                        false
                    }
                }
            })
        };
        ftlab_nbd::serve(&serve_opts, &mut started, &mut tick_cb)
    });
    let outcome = result.map_err(FtlabError::new_err)?;
    Ok(outcome.report.to_json())
}

/// Verifies (`repair`: false) or repairs the page store in `store`, holding its lock;
/// returns the findings as JSON (`damage`, `repaired`, `unrepairable`, `records`,
/// `pages_checked`, `torn`).
#[pyfunction]
fn store_check(py: Python<'_>, store: PathBuf, repair: bool) -> PyResult<String> {
    let findings = py.allow_threads(|| {
        let _lock = ftlab_nbd::lock::StoreLock::acquire(&store)?;
        if repair {
            ftlab_nbd::check::repair(&store)
        } else {
            ftlab_nbd::check::check(&store)
        }
    });
    let findings = findings.map_err(FtlabError::new_err)?;
    serde_json::to_string(&findings).map_err(|e| FtlabError::new_err(e.to_string()))
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    // Schemes from the workspace's own crates, registered like any external scheme.
    ftlab_learnedftl::register().map_err(|e| FtlabError::new_err(e.to_string()))?;
    m.add("FtlabError", m.py().get_type::<FtlabError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(bench_scheme, m)?)?;
    m.add_function(wrap_pyfunction!(memory, m)?)?;
    m.add_function(wrap_pyfunction!(config_show, m)?)?;
    m.add_function(wrap_pyfunction!(presets, m)?)?;
    m.add_function(wrap_pyfunction!(schemes, m)?)?;
    m.add_function(wrap_pyfunction!(scheme_info, m)?)?;
    m.add_function(wrap_pyfunction!(families, m)?)?;
    m.add_function(wrap_pyfunction!(split_stack, m)?)?;
    m.add_function(wrap_pyfunction!(summarize, m)?)?;
    m.add_function(wrap_pyfunction!(summary_columns, m)?)?;
    m.add_function(wrap_pyfunction!(stacks, m)?)?;
    m.add_function(wrap_pyfunction!(causes, m)?)?;
    m.add_function(wrap_pyfunction!(workloads, m)?)?;
    m.add_function(wrap_pyfunction!(peak_rss_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(trace_info, m)?)?;
    m.add_function(wrap_pyfunction!(read_speed, m)?)?;
    m.add_function(wrap_pyfunction!(convert_trace, m)?)?;
    m.add_function(wrap_pyfunction!(trace_formats, m)?)?;
    m.add_function(wrap_pyfunction!(fitted_blocks_per_plane, m)?)?;
    m.add_function(wrap_pyfunction!(trace_requests, m)?)?;
    m.add_function(wrap_pyfunction!(serve, m)?)?;
    m.add_function(wrap_pyfunction!(store_check, m)?)?;
    m.add_function(wrap_pyfunction!(scheme::register_scheme, m)?)?;
    m.add_function(wrap_pyfunction!(scheme::unregister_scheme, m)?)?;
    m.add_function(wrap_pyfunction!(scheme::register_native_scheme, m)?)?;
    m.add_class::<Cancel>()?;
    m.add_class::<scheme::FlashHandle>()?;
    m.add_class::<scheme::Device>()?;
    m.add_class::<scheme::PageAllocator>()?;
    m.add_class::<scheme::TranslationStore>()?;
    Ok(())
}
