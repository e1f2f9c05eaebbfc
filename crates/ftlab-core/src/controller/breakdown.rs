//! The latency breakdown summed over a run: per request type, each part's sum and
//! distribution ([`BreakdownStats`]), what the report shows of it, and the stalls worth a
//! warning. The parts themselves and how a request's time is split into them:
//! [`crate::device::breakdown`].

use crate::controller::metrics::Latency;
use crate::device::breakdown::{Part, Parts, PARTS, PART_COUNT};
use serde::Serialize;

/// The breakdown of one request type's latencies: per part, the sum and the distribution
/// over every request (requests without the part count as 0).
#[derive(Default)]
pub struct BreakdownStats {
    requests: u64,
    /// In ns (a u64 holds 584 years).
    sums: [u64; PART_COUNT],
    /// Only the requests with the part (the others are zeros, added at the end).
    hists: [Latency; PART_COUNT],
}

impl BreakdownStats {
    /// Counts one request: only the parts it has ([`Parts::held`]).
    #[inline]
    pub fn record(&mut self, parts: &Parts) {
        self.requests += 1;
        for (i, ns) in parts.held() {
            self.sums[i] += ns;
            self.hists[i].record_for_quantiles(ns);
        }
    }

    pub fn report(&self) -> OpBreakdown {
        let n = self.requests.max(1) as f64;
        let total: u128 = self.sums.iter().map(|&s| s as u128).sum();
        let parts = PARTS
            .iter()
            .map(|&p| {
                let i = p as usize;
                let held = self.hists[i].count();
                // Every request's part is 0 if none has it (most parts, in most runs).
                let p99_ns = if held == 0 {
                    0
                } else {
                    self.hists[i].quantile_with_zeros(self.requests - held, 0.99)
                };
                PartStats {
                    part: p.name(),
                    mean_ns: self.sums[i] as f64 / n,
                    p99_ns,
                    share: if total == 0 {
                        0.0
                    } else {
                        self.sums[i] as f64 / total as f64
                    },
                    requests: held,
                }
            })
            .collect();
        OpBreakdown {
            requests: self.requests,
            total_ns: total,
            parts,
        }
    }
}

/// One part of one request type's latency.
#[derive(Clone, Debug, Serialize)]
pub struct PartStats {
    pub part: &'static str,
    /// Its mean over every request (the parts' means add up to the mean latency).
    pub mean_ns: f64,
    /// Its 99th percentile over every request.
    pub p99_ns: u64,
    /// Its share of the total latency.
    pub share: f64,
    /// Requests whose latency has some of it.
    pub requests: u64,
}

/// One request type's latency by part ([`PARTS`] order).
#[derive(Clone, Debug, Serialize)]
pub struct OpBreakdown {
    pub requests: u64,
    /// The requests' latencies added up (the parts add up to it exactly).
    pub total_ns: u128,
    pub parts: Vec<PartStats>,
}

impl OpBreakdown {
    pub fn get(&self, part: Part) -> &PartStats {
        &self.parts[part as usize]
    }
}

/// Where the time went, per request type.
#[derive(Clone, Debug, Serialize)]
pub struct LatencyBreakdown {
    pub read: OpBreakdown,
    pub write: OpBreakdown,
}

/// A wait that holds a large share of a request type's latency ([`stalls`]).
#[derive(Clone, Debug, Serialize)]
pub struct Stall {
    /// `read` or `write`.
    pub op: &'static str,
    pub part: &'static str,
    pub description: &'static str,
    /// Requests of that type it held.
    pub requests: u64,
    /// Its share of that type's total latency.
    pub share: f64,
    pub mean_ns: f64,
    pub remedy: &'static str,
}

/// Stalls holding at least this share of a request type's latency are reported.
pub const STALL_SHARE: f64 = 0.2;
/// ...when they add at least this much to the mean (a 20% stall of a 10 us mean is noise).
pub const STALL_MIN_MEAN_NS: f64 = 100_000.0;

/// The dominant stalls of a breakdown, largest first.
pub fn stalls(breakdown: &LatencyBreakdown) -> Vec<Stall> {
    let mut out = Vec::new();
    for (op, b) in [("read", &breakdown.read), ("write", &breakdown.write)] {
        for &p in PARTS.iter().filter(|p| p.is_stall()) {
            let s = b.get(p);
            if s.share >= STALL_SHARE && s.mean_ns >= STALL_MIN_MEAN_NS {
                out.push(Stall {
                    op,
                    part: p.name(),
                    description: p.description(),
                    requests: s.requests,
                    share: s.share,
                    mean_ns: s.mean_ns,
                    remedy: p.remedy(),
                });
            }
        }
    }
    out.sort_by(|a, b| b.share.total_cmp(&a.share).then(a.op.cmp(b.op)));
    out
}
