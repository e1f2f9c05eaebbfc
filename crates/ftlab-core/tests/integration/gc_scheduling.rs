//! Every run's report states its GC scheduling (`metrics.gc.scheduling`): "background" for
//! the schemes that collect in idle time with `gc.mode = "background"`, "foreground" for
//! the others and for every scheme with `gc.mode = "foreground"`.

use crate::common;

use common::*;
use ftlab_core::ftl::SCHEMES;
use ftlab_core::run::config::GcMode;

/// The schemes with an idle hook: they collect in the background when asked to.
const BACKGROUND: [&str; 8] = [
    "page",
    "dftl",
    "selective",
    "sftl",
    "tpftl",
    "leaftl",
    "hpftl",
    "slimftl",
];

#[test]
fn every_report_states_the_gc_scheduling_of_its_scheme() {
    for mode in [GcMode::Background, GcMode::Foreground] {
        for &(scheme, _) in SCHEMES {
            let mut cfg = small_config((2, 1, 1, 1), 32, 16, 0.25);
            cfg.gc.mode = mode;
            let layout = cfg.validate().unwrap();
            // Each logical page once, in order: every scheme (append-only ones too) takes it.
            let reqs: Vec<_> = (0..layout.logical_pages / 2)
                .map(|p| write(p, 1, layout.page_size))
                .collect();
            let report = run(scheme, &cfg, &reqs, true).unwrap();
            let expected = if mode == GcMode::Background && BACKGROUND.contains(&scheme) {
                "background"
            } else {
                "foreground"
            };
            assert_eq!(
                report.metrics.gc.scheduling, expected,
                "{scheme} with gc.mode = {mode:?}"
            );
            let json: serde_json::Value = serde_json::from_str(&report.to_json()).unwrap();
            assert_eq!(json["metrics"]["gc"]["scheduling"], expected, "{scheme}");
        }
    }
}
