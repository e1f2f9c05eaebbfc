//! Criterion benchmarks of the simulation loop: each scheme over the built-in `default`
//! workload on the `small` device, with the timing model and in mapping-only mode.
//! `ftlab bench` measures the same on the standard 1 M-request trace.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use ftlab_core::controller::simulator::Simulator;
use ftlab_core::device::nand::Flash;
use ftlab_core::ftl::{self, is_append_only, Ftl, Visitor, SCHEMES};
use ftlab_core::io::workload;
use ftlab_core::run::config::{self, Config, Layout};
use ftlab_core::Request;

struct Replay<'a> {
    cfg: &'a Config,
    layout: &'a Layout,
    requests: &'a [Request],
}

impl Visitor for Replay<'_> {
    type Output = u64;
    fn visit<F: Ftl>(self, ftl: F, flash: Flash) -> u64 {
        let mut sim = Simulator::new(&self.cfg.controller(), self.layout, ftl, flash, false);
        for r in self.requests {
            sim.submit(r).expect("benchmark workload runs");
        }
        sim.flash().stats.total_programs()
    }
}

fn simulate(c: &mut Criterion) {
    let mut group = c.benchmark_group("simulate");
    group.sample_size(10);
    for timing in [true, false] {
        let sets = vec![format!("replay.timing={timing}")];
        let wl = vec![(
            "workload".to_string(),
            toml::Value::Table(
                toml::Table::try_from(workload::builtin("default").expect("default workload"))
                    .unwrap(),
            ),
        )];
        let cfg =
            config::resolve(Some("small"), Some(wl.into_iter().collect()), &[], &sets).unwrap();
        let layout = cfg.validate().unwrap();
        let requests: Vec<Request> =
            workload::generate(&cfg.workload, layout.logical_bytes(), layout.page_size)
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap();
        group.throughput(Throughput::Elements(requests.len() as u64));
        // An append-only device needs its host stack (`ftlab bench` runs it under ALFS).
        for (scheme, _) in SCHEMES.iter().filter(|(s, _)| !is_append_only(s)) {
            let mode = if timing { "timed" } else { "mapping-only" };
            group.bench_function(format!("{scheme}/{mode}"), |b| {
                b.iter(|| {
                    ftl::build(
                        scheme,
                        &cfg.scheme_context(),
                        &layout,
                        Replay {
                            cfg: &cfg,
                            layout: &layout,
                            requests: &requests,
                        },
                    )
                    .unwrap()
                })
            });
        }
    }
    group.finish();
}

criterion_group!(benches, simulate);
criterion_main!(benches);
