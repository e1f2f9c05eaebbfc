//! A scheme built in its own crate against the `ftlab-scheme` C ABI (the template in
//! examples/rust-scheme), registered by the address of its ABI table and run through the
//! bridge (`ftl::native`) like a built-in scheme.

use ftlab_core::ftl::native;
use ftlab_core::run::api::{self, RunOptions};

fn register() {
    let name = unsafe { native::register(ftlab_rust_scheme::ftlab_scheme_api()) }.unwrap();
    assert_eq!(name, "rustpage");
}

fn report(ftl: &str, sets: &[&str]) -> serde_json::Value {
    let opts = RunOptions {
        ftl: ftl.into(),
        preset: Some("small".into()),
        workload: Some("default".into()),
        sets: sets.iter().map(|s| s.to_string()).collect(),
        verify: true,
        ..RunOptions::default()
    };
    let out = api::run(&opts, &mut |_| true).unwrap_or_else(|e| panic!("{ftl}: {e}"));
    let mut json: serde_json::Value = serde_json::from_str(&out.report.to_json()).unwrap();
    json.as_object_mut().unwrap().remove("ftl");
    json
}

/// Through the C ABI, with ftlab's allocator and its background GC, the template's page
/// FTL takes the built-in page FTL's decisions: the reports are equal, timed and
/// mapping-only, on a device in steady state with GC active.
#[test]
fn template_scheme_equals_the_built_in_page_ftl() {
    register();
    for timing in ["true", "false"] {
        let sets = [
            "workload.requests=20000",
            "geometry.blocks_per_plane=64",
            "precondition.mode=\"steady\"",
            &format!("replay.timing={timing}"),
        ];
        let theirs = report("rustpage", &sets);
        assert!(theirs["metrics"]["gc"]["invocations"].as_u64().unwrap() > 0);
        assert_eq!(theirs["metrics"]["gc"]["scheduling"], "background");
        assert_eq!(theirs, report("page", &sets), "timing={timing}");
    }
}

#[test]
fn template_scheme_is_listed_and_its_unknown_keys_refused() {
    register();
    assert!(ftlab_core::ftl::scheme_list()
        .iter()
        .any(|(n, d)| n == "rustpage" && d.contains("own Rust crate")));
    let opts = RunOptions {
        ftl: "rustpage".into(),
        preset: Some("small".into()),
        sets: vec!["rustpage.anything=1".into()],
        ..RunOptions::default()
    };
    let err = api::run(&opts, &mut |_| true).err().unwrap().to_string();
    assert!(err.contains("rustpage"), "{err}");
}

#[test]
fn a_wrong_abi_version_is_refused() {
    let real = unsafe { &*ftlab_rust_scheme::ftlab_scheme_api() };
    let old = ftlab_scheme::SchemeApi {
        abi_version: ftlab_scheme::ABI_VERSION + 1,
        ..*real
    };
    let err = unsafe { native::register(&old) }.unwrap_err().to_string();
    assert!(err.contains("rebuild it"), "{err}");
}
