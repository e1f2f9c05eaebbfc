//! The headline numbers of a run's report, one typed record: what `ftlab run` prints, one
//! row of a comparison and of a sweep's table. Computed from the report's JSON, so that a
//! report saved by an earlier run summarises the same way; [`COLUMNS`] gives each field's
//! type, for tables.
//!
//! Latencies are in microseconds; a field a run does not measure is `None` (no reads, a
//! mapping-only run, a scheme without the counter). `saturated` is true when an open-loop
//! replay outran the device, `saturated_in_bursts` when it did only in bursts; the
//! log-block fields come from those schemes' counters (merges per logical block, merge
//! times from the first to the last flash operation of each merge operation in timed runs,
//! the serial cost model in every run).

use crate::device::breakdown::{PARTS, SUMMARY_COLUMNS};
use crate::device::nand::CAUSES;
use crate::error::{Error, Result};
use serde::Serialize;
use serde_json::Value;

/// One run's headline numbers.
#[derive(Clone, Debug, Serialize)]
pub struct Summary {
    pub ftl: String,
    pub source: String,
    pub format: Option<String>,
    pub mode: String,
    pub requests: u64,
    pub read_requests: u64,
    pub write_requests: u64,
    pub trim_requests: u64,
    pub host_pages_read: u64,
    pub host_pages_written: u64,
    pub host_pages_trimmed: u64,
    pub unmapped_reads: u64,
    pub flash_reads: u64,
    pub flash_programs: u64,
    pub flash_erases: u64,
    pub gc_reads: u64,
    pub translation_reads: u64,
    pub translation_programs: u64,
    pub misprediction_reads: u64,
    pub merge_reads: u64,
    /// None when nothing was written (a block device only read, or idle).
    pub waf: Option<f64>,
    pub fs_waf: Option<f64>,
    pub total_waf: Option<f64>,
    /// The host stack (`inplace`, `f2fs`, `alfs`, `ext4`).
    pub stack: String,
    pub app_requests: u64,
    pub app_throughput_bytes_per_s: Option<f64>,
    pub host_memory_bytes: u64,
    pub sections_cleaned: Option<f64>,
    pub gc_invocations: u64,
    pub gc_pages_moved: u64,
    pub read_mean_us: Option<f64>,
    pub read_p99_us: Option<f64>,
    pub write_mean_us: Option<f64>,
    pub write_p99_us: Option<f64>,
    pub iops: Option<f64>,
    pub memory_final_bytes: u64,
    pub memory_peak_bytes: u64,
    pub logical_bytes: u64,
    pub page_table_bytes: Option<u64>,
    pub dram_budget_bytes: Option<u64>,
    pub devices: Option<u64>,
    pub compacted: Option<bool>,
    pub device_sized_to_trace: Option<bool>,
    pub bad_lines: Option<u64>,
    /// Demand-cached schemes only.
    pub cache_hit_ratio: Option<f64>,
    /// Log-block schemes only.
    pub log_blocks: Option<u64>,
    pub merges_switch: Option<u64>,
    pub merges_partial: Option<u64>,
    pub merges_full: Option<u64>,
    pub merge_pages_copied: Option<u64>,
    pub merge_time_mean_us: Option<f64>,
    pub merge_time_max_us: Option<f64>,
    pub merge_cost_mean_us: Option<f64>,
    pub merge_cost_max_us: Option<f64>,
    pub log_utilisation_at_merge: Option<f64>,
    pub saturated: bool,
    pub saturated_in_bursts: bool,
    pub peak_window_utilisation: Option<f64>,
    pub busiest_die_utilisation: Option<f64>,
    pub suggested_time_scale: Option<f64>,
    pub precondition_mode: Option<String>,
    pub precondition_waf: Option<f64>,
    /// How the write buffer flushes (`lru`, `sorted`), or None without one.
    pub buffer_flush: Option<String>,
    /// The largest stall of the load report (`read fg_host_cleaning 96%`), if any.
    pub top_stall: Option<String>,
    /// Where the time went: each part's mean per read, then per write, in microseconds
    /// ([`crate::device::breakdown::SUMMARY_COLUMNS`]).
    #[serde(flatten)]
    pub breakdown: BreakdownColumns,
}

/// The mean of each latency part per read and per write, serialised as the columns
/// [`crate::device::breakdown::SUMMARY_COLUMNS`] (None in mapping-only runs and older reports).
#[derive(Clone, Debug, Default)]
pub struct BreakdownColumns(pub Vec<Option<f64>>);

impl Serialize for BreakdownColumns {
    fn serialize<S: serde::Serializer>(
        &self,
        serializer: S,
    ) -> std::result::Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(Some(SUMMARY_COLUMNS.len()))?;
        for (i, name) in SUMMARY_COLUMNS.iter().enumerate() {
            map.serialize_entry(name, &self.0.get(i).copied().flatten())?;
        }
        map.end()
    }
}

/// Every summary column with its type: [`COLUMNS`], then the breakdown's.
pub fn columns() -> Vec<(&'static str, &'static str)> {
    COLUMNS
        .iter()
        .copied()
        .chain(SUMMARY_COLUMNS.iter().map(|&c| (c, "float")))
        .collect()
}

/// Every field of [`Summary`] with its type (`str`, `int`, `float`, `bool`), in order.
pub const COLUMNS: &[(&str, &str)] = &[
    ("ftl", "str"),
    ("source", "str"),
    ("format", "str"),
    ("mode", "str"),
    ("requests", "int"),
    ("read_requests", "int"),
    ("write_requests", "int"),
    ("trim_requests", "int"),
    ("host_pages_read", "int"),
    ("host_pages_written", "int"),
    ("host_pages_trimmed", "int"),
    ("unmapped_reads", "int"),
    ("flash_reads", "int"),
    ("flash_programs", "int"),
    ("flash_erases", "int"),
    ("gc_reads", "int"),
    ("translation_reads", "int"),
    ("translation_programs", "int"),
    ("misprediction_reads", "int"),
    ("merge_reads", "int"),
    ("waf", "float"),
    ("fs_waf", "float"),
    ("total_waf", "float"),
    ("stack", "str"),
    ("app_requests", "int"),
    ("app_throughput_bytes_per_s", "float"),
    ("host_memory_bytes", "int"),
    ("sections_cleaned", "float"),
    ("gc_invocations", "int"),
    ("gc_pages_moved", "int"),
    ("read_mean_us", "float"),
    ("read_p99_us", "float"),
    ("write_mean_us", "float"),
    ("write_p99_us", "float"),
    ("iops", "float"),
    ("memory_final_bytes", "int"),
    ("memory_peak_bytes", "int"),
    ("logical_bytes", "int"),
    ("page_table_bytes", "int"),
    ("dram_budget_bytes", "int"),
    ("devices", "int"),
    ("compacted", "bool"),
    ("device_sized_to_trace", "bool"),
    ("bad_lines", "int"),
    ("cache_hit_ratio", "float"),
    ("log_blocks", "int"),
    ("merges_switch", "int"),
    ("merges_partial", "int"),
    ("merges_full", "int"),
    ("merge_pages_copied", "int"),
    ("merge_time_mean_us", "float"),
    ("merge_time_max_us", "float"),
    ("merge_cost_mean_us", "float"),
    ("merge_cost_max_us", "float"),
    ("log_utilisation_at_merge", "float"),
    ("saturated", "bool"),
    ("saturated_in_bursts", "bool"),
    ("peak_window_utilisation", "float"),
    ("busiest_die_utilisation", "float"),
    ("suggested_time_scale", "float"),
    ("precondition_mode", "str"),
    ("precondition_waf", "float"),
    ("buffer_flush", "str"),
    ("top_stall", "str"),
];

/// A missing or mistyped field of a report: not a report this version wrote.
fn bad(path: &str) -> Error {
    Error::Usage(format!(
        "not an ftlab report: `{path}` is missing or of the wrong type"
    ))
}

fn at<'a>(v: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.')
        .try_fold(v, |v, key| v.get(key))
        .filter(|v| !v.is_null())
}

fn u(v: &Value, path: &str) -> Result<u64> {
    at(v, path)
        .and_then(|x| x.as_u64().or_else(|| x.as_f64().map(|f| f as u64)))
        .ok_or_else(|| bad(path))
}

fn f(v: &Value, path: &str) -> Option<f64> {
    at(v, path).and_then(Value::as_f64)
}

fn s(v: &Value, path: &str) -> Option<String> {
    at(v, path).and_then(Value::as_str).map(str::to_string)
}

/// A report's summary. Fails, naming the field, for JSON that is not an ftlab report.
pub fn summarize(report: &Value) -> Result<Summary> {
    let m = at(report, "metrics").ok_or_else(|| bad("metrics"))?;
    let mode = s(report, "mode").ok_or_else(|| bad("mode"))?;
    let timed = mode == "timed";
    let latency = |kind: &str, key: &str| -> Option<f64> {
        let stats = at(m, &format!("latency.{kind}"))?;
        if stats.get("count").and_then(Value::as_u64).unwrap_or(0) == 0 {
            return None;
        }
        f(stats, key).map(|ns| ns / 1000.0)
    };
    let stack = at(m, "host_stack");
    let counter = |name: &str| stack.and_then(|st| f(st, &format!("counters.{name}")));
    let span = f(m, "simulated_time_ns").filter(|&t| t > 0.0);
    let app_bytes = counter("app_bytes_read").unwrap_or(f(m, "host.bytes_read").unwrap_or(0.0))
        + counter("app_bytes_written").unwrap_or(f(m, "host.bytes_written").unwrap_or(0.0));
    let trace = at(report, "trace");
    let scheme = at(m, "scheme");
    let sc = |name: &str| scheme.and_then(|c| f(c, name));
    let merges = sc("merges_switch").is_some();
    let count = |name: &str| sc(name).map(|x| x as u64);
    let scaled = |name: &str, when: bool| sc(name).filter(|_| when).map(|x| x * 1e-3);
    let flash = |op: &str, cause: &str| u(m, &format!("flash.{op}.{cause}"));
    let mut merge_reads = 0;
    for c in CAUSES.iter().filter(|c| c.group() == "merge") {
        merge_reads += flash("reads", c.name())?;
    }
    let buffer_bytes = at(report, "config.buffer.size_bytes")
        .map(|b| {
            b.as_u64()
                .map_or_else(|| b.as_str().is_some_and(|t| t != "0"), |n| n > 0)
        })
        .unwrap_or(false);
    Ok(Summary {
        ftl: s(report, "ftl").ok_or_else(|| bad("ftl"))?,
        source: s(report, "source.name").ok_or_else(|| bad("source.name"))?,
        format: s(report, "source.format").filter(|f| !f.is_empty()),
        mode,
        requests: u(m, "host.requests")?,
        read_requests: u(m, "host.read_requests")?,
        write_requests: u(m, "host.write_requests")?,
        trim_requests: u(m, "host.trim_requests")?,
        host_pages_read: u(m, "host.pages_read")?,
        host_pages_written: u(m, "host.pages_written")?,
        host_pages_trimmed: u(m, "host.pages_trimmed")?,
        unmapped_reads: u(m, "host.unmapped_reads")?,
        flash_reads: flash("reads", "total")?,
        flash_programs: flash("programs", "total")?,
        flash_erases: flash("erases", "total")?,
        gc_reads: flash("reads", "gc")?,
        translation_reads: flash("reads", "translation")?,
        translation_programs: flash("programs", "translation")?,
        misprediction_reads: flash("reads", "misprediction")?,
        merge_reads,
        waf: f(m, "waf"),
        fs_waf: f(m, "fs_waf"),
        total_waf: f(m, "total_waf"),
        stack: stack
            .and_then(|st| s(st, "name"))
            .unwrap_or_else(|| "inplace".into()),
        app_requests: counter("app_requests")
            .map(|x| x as u64)
            .unwrap_or(u(m, "host.requests")?),
        app_throughput_bytes_per_s: span.map(|t| app_bytes / (t / 1e9)),
        host_memory_bytes: stack
            .and_then(|st| at(st, "memory_total_bytes"))
            .and_then(Value::as_u64)
            .unwrap_or(0),
        sections_cleaned: counter("sections_cleaned"),
        gc_invocations: u(m, "gc.invocations")?,
        gc_pages_moved: u(m, "gc.pages_moved")?,
        read_mean_us: latency("read", "mean_ns"),
        read_p99_us: latency("read", "p99_ns"),
        write_mean_us: latency("write", "mean_ns"),
        write_p99_us: latency("write", "p99_ns"),
        iops: f(m, "iops"),
        memory_final_bytes: u(m, "memory_bytes.final_total")?,
        memory_peak_bytes: u(m, "memory_bytes.peak_total")?,
        logical_bytes: u(report, "device.logical_bytes")?,
        page_table_bytes: at(report, "device.page_table_bytes").and_then(Value::as_u64),
        dram_budget_bytes: at(report, "device.dram_budget_bytes").and_then(Value::as_u64),
        devices: trace
            .and_then(|t| t.get("devices"))
            .and_then(Value::as_array)
            .map(|d| d.len() as u64),
        compacted: trace
            .and_then(|t| at(t, "compacted"))
            .and_then(Value::as_bool),
        device_sized_to_trace: trace
            .and_then(|t| at(t, "device_sized_to_trace"))
            .and_then(Value::as_bool),
        bad_lines: trace
            .and_then(|t| at(t, "diagnostics.bad_lines"))
            .and_then(Value::as_u64),
        cache_hit_ratio: sc("cache_hit_ratio"),
        log_blocks: count("log_blocks").filter(|_| merges),
        merges_switch: count("merges_switch"),
        merges_partial: count("merges_partial"),
        merges_full: count("merges_full"),
        merge_pages_copied: merges
            .then(|| {
                sc("merge_pages_partial").unwrap_or(0.0) + sc("merge_pages_full").unwrap_or(0.0)
            })
            .map(|x| x as u64),
        merge_time_mean_us: scaled("merge_time_ns_mean", timed),
        merge_time_max_us: scaled("merge_time_ns_max", timed),
        merge_cost_mean_us: scaled("merge_cost_ns_mean", true),
        merge_cost_max_us: scaled("merge_cost_ns_max", true),
        log_utilisation_at_merge: sc("log_utilisation_at_merge"),
        saturated: at(m, "load.saturated")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        saturated_in_bursts: at(m, "load.saturated_in_bursts")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        peak_window_utilisation: f(m, "load.peak_window_utilisation"),
        busiest_die_utilisation: f(m, "load.busiest_die_utilisation"),
        suggested_time_scale: f(m, "load.suggested_time_scale"),
        precondition_mode: s(report, "precondition.mode"),
        precondition_waf: f(report, "precondition.waf"),
        buffer_flush: if buffer_bytes {
            s(report, "config.buffer.flush")
        } else {
            None
        },
        top_stall: at(m, "load.stalls.0").map(|st| {
            format!(
                "{} {} {:.0}%",
                s(st, "op").unwrap_or_default(),
                s(st, "part").unwrap_or_default(),
                100.0 * f(st, "share").unwrap_or(0.0)
            )
        }),
        breakdown: breakdown_columns(m),
    })
}

/// The mean of each part per read, then per write, in us, by the part's name.
fn breakdown_columns(m: &Value) -> BreakdownColumns {
    let mut out = Vec::with_capacity(SUMMARY_COLUMNS.len());
    for op in ["read", "write"] {
        let parts = at(m, &format!("latency_breakdown.{op}"))
            .filter(|b| b.get("requests").and_then(Value::as_u64).unwrap_or(0) > 0)
            .and_then(|b| b.get("parts"))
            .and_then(Value::as_array);
        for p in PARTS {
            out.push(parts.and_then(|parts| {
                parts
                    .iter()
                    .find(|x| x.get("part").and_then(Value::as_str) == Some(p.name()))
                    .and_then(|x| f(x, "mean_ns"))
                    .map(|ns| ns / 1000.0)
            }));
        }
    }
    BreakdownColumns(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_are_the_fields_in_order() {
        let report = serde_json::json!({
            "ftl": "page", "mode": "timed", "source": {"name": "w"},
            "device": {"logical_bytes": 4096},
            "metrics": {
                "waf": 1.0,
                "host": {"requests": 1, "read_requests": 1, "write_requests": 0,
                         "trim_requests": 0, "pages_read": 1, "pages_written": 0,
                         "pages_trimmed": 0, "unmapped_reads": 1},
                "flash": {"reads": {"total": 0, "gc": 0, "translation": 0, "misprediction": 0,
                                    "merge_switch": 0, "merge_partial": 0, "merge_full": 0},
                          "programs": {"total": 0, "translation": 0},
                          "erases": {"total": 0}},
                "gc": {"invocations": 0, "pages_moved": 0},
                "memory_bytes": {"final_total": 0, "peak_total": 0},
            },
        });
        let text = serde_json::to_string(&summarize(&report).unwrap()).unwrap();
        // Field order as serialised (the struct's), against the columns.
        let order: Vec<usize> = columns()
            .iter()
            .map(|(k, _)| text.find(&format!("\"{k}\":")).unwrap())
            .collect();
        assert!(
            order.windows(2).all(|w| w[0] < w[1]),
            "COLUMNS out of the struct's order"
        );
        let summary: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(summary.as_object().unwrap().len(), columns().len());
        assert_eq!(summary["stack"], "inplace");
        assert!(summary["read_mean_us"].is_null());
    }

    #[test]
    fn a_json_that_is_no_report_names_what_is_missing() {
        let err = summarize(&serde_json::json!({"mode": "timed"})).unwrap_err();
        assert!(err.to_string().contains("metrics"), "{err}");
    }
}
