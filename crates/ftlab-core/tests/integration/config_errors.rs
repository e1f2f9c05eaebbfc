//! A bad configuration gets an error naming the key and saying why.

use ftlab_core::run::config::{self, preset_names, Config};

fn resolve(sets: &[&str]) -> Result<Config, String> {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    config::resolve(None, None, &[], &sets).map_err(|e| e.to_string())
}

#[test]
fn unknown_key_is_named_with_a_suggestion() {
    let err = resolve(&["geometry.chanels=4"]).unwrap_err();
    assert!(err.contains("`geometry.chanels`"), "{err}");
    assert!(err.contains("did you mean `geometry.channels`"), "{err}");
    let err = resolve(&["nosuchsection.x=1"]).unwrap_err();
    assert!(
        err.contains("`nosuchsection`") && err.contains("unknown key"),
        "{err}"
    );
}

#[test]
fn wrong_types_and_shapes() {
    let err = resolve(&["geometry.channels=four"]).unwrap_err();
    assert!(err.contains("channels"), "{err}");
    let err = resolve(&["geometry=4"]).unwrap_err();
    assert!(
        err.contains("`geometry`") && err.contains("section"),
        "{err}"
    );
    let err = resolve(&["gc.policy=random"]).unwrap_err();
    assert!(err.contains("random") || err.contains("policy"), "{err}");
    let err = resolve(&["nand.read_latency_ns=5 fortnights"]).unwrap_err();
    assert!(err.contains("unknown time unit"), "{err}");
    let err = resolve(&["justakey"]).unwrap_err();
    assert!(err.contains("key=value"), "{err}");
}

#[test]
fn impossible_geometries_name_their_key() {
    let cases = [
        ("geometry.channels=0", "geometry.channels", "at least 1"),
        (
            "geometry.pages_per_block=1",
            "geometry.pages_per_block",
            "at least 2",
        ),
        (
            "geometry.page_size=1000",
            "geometry.page_size",
            "multiple of 512",
        ),
        ("geometry.oob_size=4", "geometry.oob_size", "header"),
        (
            "ftl.over_provisioning=0",
            "ftl.over_provisioning",
            "spare pages",
        ),
        (
            "ftl.over_provisioning=1.5",
            "ftl.over_provisioning",
            "fraction",
        ),
        (
            "gc.hard_threshold=0.5",
            "gc.hard_threshold",
            "no larger than gc.threshold",
        ),
        (
            "geometry.blocks_per_plane=100000000",
            "geometry.blocks_per_plane",
            "32-bit",
        ),
        (
            "buffer.size_bytes=1TiB",
            "buffer.size_bytes",
            "smaller than the logical capacity",
        ),
        ("replay.queue_depth=0", "replay.queue_depth", "at least 1"),
        ("replay.time_scale=-1", "replay.time_scale", "positive"),
    ];
    for (set, key, why) in cases {
        let err = resolve(&[set]).unwrap_err();
        assert!(
            err.contains(&format!("`{key}`")) && err.contains(why),
            "{set}: {err}"
        );
    }
}

#[test]
fn sizes_and_durations_accept_units() {
    let cfg = resolve(&[
        "geometry.page_size=8KiB",
        "nand.erase_latency_ns=1.5ms",
        "buffer.size_bytes=1MiB",
    ])
    .unwrap();
    assert_eq!(cfg.geometry.page_size, 8192);
    assert_eq!(cfg.nand.erase_latency_ns, 1_500_000);
    assert_eq!(cfg.buffer.size_bytes, 1 << 20);
}

#[test]
fn every_preset_resolves_and_the_small_device_matches_the_anchor() {
    for (name, _) in preset_names() {
        let cfg =
            config::resolve(Some(name), None, &[], &[]).unwrap_or_else(|e| panic!("{name}: {e}"));
        cfg.validate().unwrap();
    }
    let small = config::resolve(Some("small"), None, &[], &[]).unwrap();
    let layout = small.validate().unwrap();
    assert_eq!(layout.physical_pages * layout.page_size as u64, 2 << 30);
    assert_eq!(layout.units, 32);
    assert_eq!(small.nand.program_latency_ns, 500_000);
    // LeaFTL: 2 TiB raw, 512 Mi pages.
    let leaftl = config::resolve(Some("leaftl"), None, &[], &[])
        .unwrap()
        .validate()
        .unwrap();
    assert_eq!(leaftl.physical_pages, 512 << 20);
    // SlimFTL: exactly 16 GiB logical.
    let slim = config::resolve(Some("slimftl"), None, &[], &[])
        .unwrap()
        .validate()
        .unwrap();
    assert_eq!(slim.logical_bytes(), 16 << 30);
    assert!(config::resolve(Some("nosuch"), None, &[], &[])
        .unwrap_err()
        .to_string()
        .contains("unknown preset"));
}

#[test]
fn files_are_read_and_their_errors_name_the_file() {
    let dir = std::env::temp_dir().join(format!("ftlab-config-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let good = dir.join("good.toml");
    std::fs::write(
        &good,
        "[geometry]\nchannels = 4\n[gc]\npolicy = \"cost-benefit\"\n",
    )
    .unwrap();
    let bad = dir.join("bad.toml");
    std::fs::write(&bad, "[geometry]\nchannels = \n").unwrap();
    let cfg = config::resolve(
        None,
        None,
        &[good.as_path()],
        &["geometry.channels=8".into()],
    )
    .unwrap();
    assert_eq!(cfg.geometry.channels, 8, "overrides apply after files");
    assert_eq!(
        cfg.gc.policy,
        ftlab_core::run::config::VictimPolicy::CostBenefit
    );
    let err = config::resolve(None, None, &[bad.as_path()], &[])
        .unwrap_err()
        .to_string();
    assert!(err.contains("bad.toml"), "{err}");
    let missing = dir.join("missing.toml");
    let err = config::resolve(None, None, &[missing.as_path()], &[])
        .unwrap_err()
        .to_string();
    assert!(err.contains("missing.toml"), "{err}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn config_round_trips_through_toml() {
    let cfg = config::resolve(Some("small"), None, &[], &[]).unwrap();
    let text = cfg.to_toml();
    let back = Config::from_toml(&text).unwrap();
    assert_eq!(back, cfg);
}
