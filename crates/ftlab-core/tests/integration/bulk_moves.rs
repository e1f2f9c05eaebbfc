//! The bulk page moves of merges (`Flash::move_valid`, `Flash::move_pages`) against the
//! same moves made page by page (`Flash::copy`, then `Flash::invalidate`), and the filler
//! runs of merges (`Flash::program_fillers`) against a program and an invalidation per
//! page: on random small devices, program orders, timing models and histories, both ways
//! must leave the same pages, blocks, counters, dies and channels, tell a page store the
//! same, and fail with the same error at the same page.

use crate::common;

use common::small_config;
use ftlab_core::device::nand::{Cause, Flash, NandError, Oob, PageSink, Ppn, ServedPage};
use ftlab_core::device::timing::Timeline;
use ftlab_core::run::config::ProgramOrder;
use proptest::prelude::*;
use std::any::Any;

/// A page store that records what it is told.
#[derive(Default)]
struct Recorder(Vec<String>);

impl PageSink for Recorder {
    fn program(&mut self, ppn: Ppn, oob: Oob, content: Option<&[u8]>) {
        self.0.push(format!("program {ppn} {oob:?} {content:?}"));
    }
    fn copy(&mut self, src: Ppn, dst: Ppn, oob: Oob) {
        self.0.push(format!("copy {src} {dst} {oob:?}"));
    }
    fn erase(&mut self, block: u32) {
        self.0.push(format!("erase {block}"));
    }
    fn served(&mut self, lpa: u32, from: ServedPage, host_read: bool) {
        self.0.push(format!("served {lpa} {from:?} {host_read}"));
    }
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

/// A device and what happened to it before the moves.
#[derive(Clone, Debug)]
struct Setup {
    /// Channels, dies per chip, planes per die.
    shape: (u32, u32, u32),
    blocks_per_plane: u32,
    pages_per_block: u32,
    order: ProgramOrder,
    timed: bool,
    /// tR, tPROG, tBERS (ns) and the channel's bytes per second.
    latencies: (u64, u64, u64, u64),
    /// Read priority (with background queues), suspend, multi-plane.
    scheduler: (bool, bool, bool),
    extra_oob: bool,
    sink: bool,
    /// Operations before the moves: (kind, a, b), applied with every error ignored.
    history: Vec<(u8, u32, u32)>,
    cause: Cause,
}

fn setup() -> impl Strategy<Value = Setup> {
    (
        (1u32..=2, 1u32..=2, 1u32..=2),
        8u32..=12,
        prop_oneof![
            Just(8u32),
            Just(16),
            Just(64),
            Just(96),
            Just(128),
            Just(130)
        ],
        prop_oneof![
            Just(ProgramOrder::Sequential),
            Just(ProgramOrder::Ascending),
            Just(ProgramOrder::Any)
        ],
        any::<bool>(),
        (
            prop_oneof![Just(0u64), 1u64..100],
            prop_oneof![Just(0u64), 1u64..600, Just(50)],
            0u64..3000,
            prop_oneof![Just(400_000_000u64), Just(10_000_000_000_000)],
        ),
        (any::<bool>(), any::<bool>(), any::<bool>()),
        any::<bool>(),
        any::<bool>(),
        prop::collection::vec((0u8..10, any::<u32>(), any::<u32>()), 0..400),
        prop_oneof![
            Just(Cause::MergeFull),
            Just(Cause::MergePartial),
            Just(Cause::Gc),
            Just(Cause::Host)
        ],
    )
        .prop_map(
            |(
                shape,
                blocks_per_plane,
                pages_per_block,
                order,
                timed,
                latencies,
                scheduler,
                extra_oob,
                sink,
                history,
                cause,
            )| Setup {
                shape,
                blocks_per_plane,
                pages_per_block,
                order,
                timed,
                latencies,
                scheduler,
                extra_oob,
                sink,
                history,
                cause,
            },
        )
}

/// The device `s` describes, after its history.
fn build(s: &Setup) -> Flash {
    let (channels, dies, planes) = s.shape;
    let mut cfg = small_config(
        (channels, 1, dies, planes),
        s.blocks_per_plane,
        s.pages_per_block,
        0.5,
    );
    cfg.nand.program_order = s.order;
    let (read, program, erase, channel) = s.latencies;
    cfg.nand.read_latency_ns = read;
    cfg.nand.program_latency_ns = program;
    cfg.nand.erase_latency_ns = erase;
    cfg.nand.channel_bytes_per_s = channel;
    (
        cfg.scheduler.read_priority,
        cfg.scheduler.suspend,
        cfg.scheduler.multi_plane,
    ) = s.scheduler;
    let layout = cfg.validate().unwrap();
    let extra = if s.extra_oob { 4 } else { 0 };
    let mut f = Flash::new(&cfg.device(), &layout, extra, s.timed).unwrap();
    if s.sink {
        f.attach_sink(Box::new(Recorder::default()));
    }
    let blocks = layout.total_blocks;
    let ppb = layout.pages_per_block;
    let mut time = 0u64;
    for (i, &(kind, a, b)) in s.history.iter().enumerate() {
        // Most operations go to a few blocks of every unit, so that blocks fill up.
        let block = busy_block(&layout, a);
        let page = block * ppb + b % ppb;
        let _ = match kind {
            // A burst of programs where the order allows, sometimes skipping pages.
            0..=3 => {
                let (block, burst) = if kind == 3 {
                    (a % blocks, 1)
                } else {
                    (block, 1 + b % 50)
                };
                for k in 0..burst {
                    let skip = if s.order == ProgramOrder::Sequential || (b >> (k % 31)) & 3 != 0 {
                        0
                    } else {
                        1
                    };
                    let off = f.write_pointer(block) + skip;
                    if off >= ppb {
                        break;
                    }
                    let oob = Oob {
                        lpa: (b + k) % 1000,
                        seq: i as u64,
                    };
                    let bytes = (b as u16).wrapping_add(k as u16).to_le_bytes();
                    let extra = if s.extra_oob { &bytes[..] } else { &[][..] };
                    let _ = f.program(block * ppb + off, oob, extra, Cause::Host);
                }
                Ok(())
            }
            4 => f.invalidate(page),
            5 => f.read(page, Cause::Host).map(|_| ()),
            6 => {
                // Erase a block, its valid pages invalidated first.
                let valid: Vec<Ppn> = f.valid_pages(block).collect();
                for p in valid {
                    f.invalidate(p).unwrap();
                }
                f.erase(block, Cause::Gc)
            }
            7 => {
                time += b as u64 % 2_000_000;
                f.begin_request(time);
                // Blocks record when they last changed (in host pages written).
                f.clock = i as u64;
                f.set_flushing(b % 2 == 0);
                Ok(())
            }
            8 => {
                f.chain();
                f.set_background(b % 4 == 0);
                Ok(())
            }
            _ => {
                let to = b % blocks;
                f.copy(page, to * ppb + f.write_pointer(to), Cause::Gc)
                    .map(|_| ())
            }
        };
    }
    f
}

/// One of the first three blocks of a unit, chosen by `a`.
fn busy_block(layout: &ftlab_core::run::config::Layout, a: u32) -> u32 {
    (a % layout.units) * layout.blocks_per_unit + (a / layout.units) % 3
}

/// Every state the public interface shows.
fn assert_same(a: &mut Flash, b: &mut Flash) {
    let layout = *a.layout();
    for p in 0..layout.physical_pages as Ppn {
        assert_eq!(a.oob(p), b.oob(p), "page {p}");
        assert_eq!(a.oob_extra(p), b.oob_extra(p), "page {p}");
        assert_eq!(a.is_valid(p), b.is_valid(p), "page {p}");
        assert_eq!(a.is_programmed(p), b.is_programmed(p), "page {p}");
    }
    for block in 0..layout.total_blocks {
        assert_eq!(
            a.write_pointer(block),
            b.write_pointer(block),
            "block {block}"
        );
        assert_eq!(a.valid_count(block), b.valid_count(block), "block {block}");
        assert_eq!(a.erase_count(block), b.erase_count(block), "block {block}");
        assert_eq!(a.modified_at(block), b.modified_at(block), "block {block}");
    }
    assert_eq!(a.stats, b.stats);
    assert_eq!(a.request_done(), b.request_done());
    assert_eq!(a.cursor(), b.cursor());
    assert_eq!(a.last_read(), b.last_read());
    // The device's state; the last operation's phases (its latency account) differ between
    // one bulk run and its pages placed one by one.
    assert_eq!(
        a.timeline().map(Timeline::device_state),
        b.timeline().map(Timeline::device_state)
    );
    assert_eq!(a.host_transfers(), b.host_transfers());
    assert_eq!(a.die_work_ns(), b.die_work_ns());
    let told = |f: &mut Flash| {
        f.sink_mut()
            .map(|s| s.as_any_mut().downcast_mut::<Recorder>().unwrap().0.clone())
    };
    assert_eq!(told(a), told(b));
}

/// The moves one by one: a copy, then the source invalidated; stops at the first error.
fn page_by_page(f: &mut Flash, moves: &[(Ppn, Ppn)], cause: Cause) -> Result<u32, NandError> {
    for &(src, dst) in moves {
        f.copy(src, dst, cause)?;
        f.invalidate(src)?;
    }
    Ok(moves.len() as u32)
}

/// Then one more request on every die, so that any difference left in the dies or
/// channels shows in its completion time.
fn probe(f: &mut Flash) -> u64 {
    let t = f.request_done();
    f.begin_request(t / 2);
    let layout = *f.layout();
    for unit in 0..layout.units {
        let first = unit * layout.blocks_per_unit * layout.pages_per_block;
        let pages = layout.blocks_per_unit * layout.pages_per_block;
        if let Some(p) = (first..first + pages).find(|&p| f.is_programmed(p)) {
            f.read(p, Cause::Host).unwrap();
        }
    }
    f.request_done()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn a_block_to_block_move_equals_its_pages_moved_one_by_one(
        s in setup(),
        blocks in (any::<u32>(), any::<u32>()),
        range in (any::<u32>(), any::<u32>()),
    ) {
        let mut bulk = build(&s);
        let mut single = build(&s);
        assert_same(&mut bulk, &mut single);
        let layout = *bulk.layout();
        let (src, dst) = (busy_block(&layout, blocks.0), blocks.1 % layout.total_blocks);
        let ppb = layout.pages_per_block;
        let (a, b) = (range.0 % (ppb + 1), range.1 % (ppb + 1));
        // A whole block a quarter of the time (a merge's), else any part of it.
        let (from, to) = if range.0 % 4 == 0 { (0, ppb) } else { (a.min(b), a.max(b)) };
        let first = |block: u32| block * ppb;
        let moves: Vec<(Ppn, Ppn)> = single
            .valid_pages(src)
            .filter(|&p| (from..to).contains(&(p - first(src))))
            .map(|p| (p, p - first(src) + first(dst)))
            .collect();
        let want = page_by_page(&mut single, &moves, s.cause);
        let got = bulk.move_valid(src, dst, from, to, s.cause);
        prop_assert_eq!(got, want);
        assert_same(&mut bulk, &mut single);
        prop_assert_eq!(probe(&mut bulk), probe(&mut single));
        assert_same(&mut bulk, &mut single);
    }

    #[test]
    fn a_list_of_moves_equals_its_pages_moved_one_by_one(
        s in setup(),
        picks in prop::collection::vec((any::<u32>(), any::<u32>(), 0u8..20), 0..60),
    ) {
        let mut bulk = build(&s);
        let mut single = build(&s);
        let layout = *bulk.layout();
        let ppb = layout.pages_per_block;
        let valid: Vec<Ppn> = (0..layout.total_blocks)
            .flat_map(|b| single.valid_pages(b).collect::<Vec<_>>())
            .collect();
        // Mostly valid pages to the next pages of a few destination blocks (runs between the
        // same two blocks), sometimes anything at all (errors).
        let mut next: Vec<u32> = (0..layout.total_blocks).map(|b| single.write_pointer(b)).collect();
        let mut moves = Vec::new();
        for &(a, b, kind) in &picks {
            let src = if valid.is_empty() || kind == 0 {
                a % (layout.physical_pages as u32 + 2)
            } else {
                valid[a as usize % valid.len()]
            };
            let dst = if kind == 1 {
                b % (layout.physical_pages as u32 + 2)
            } else {
                let block = b % 3 % layout.total_blocks;
                let off = next[block as usize] + if kind == 2 { 1 } else { 0 };
                next[block as usize] = off + 1;
                block * ppb + off.min(ppb - 1)
            };
            moves.push((src, dst));
        }
        let want = page_by_page(&mut single, &moves, s.cause).map(|_| ());
        let got = bulk.move_pages(&moves, s.cause);
        prop_assert_eq!(got, want);
        assert_same(&mut bulk, &mut single);
        prop_assert_eq!(probe(&mut bulk), probe(&mut single));
    }
}

/// Fillers one by one: a program with no data, then the page invalidated; stops at the
/// first error.
fn fillers_one_by_one(
    f: &mut Flash,
    block: u32,
    from: u32,
    to: u32,
    cause: Cause,
) -> Result<(), NandError> {
    let first = block * f.layout().pages_per_block;
    for p in first + from..first + to {
        f.program(p, FILLER, &[], cause)?;
        f.invalidate(p)?;
    }
    Ok(())
}

const FILLER: Oob = Oob {
    lpa: u32::MAX,
    seq: 0,
};

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn a_filler_run_equals_its_pages_programmed_one_by_one(
        s in setup(),
        block in any::<u32>(),
        range in (any::<u32>(), any::<u32>()),
        at_pointer in any::<bool>(),
    ) {
        let mut bulk = build(&s);
        let mut single = build(&s);
        let layout = *bulk.layout();
        let ppb = layout.pages_per_block;
        let block = if block % 2 == 0 { busy_block(&layout, block) } else { block % layout.total_blocks };
        // From the write pointer (as merges pad) most of the time, else anywhere.
        let (a, b) = (range.0 % (ppb + 1), range.1 % (ppb + 1));
        let (from, to) = if at_pointer {
            let wp = single.write_pointer(block).min(ppb);
            (wp, wp.max(b))
        } else {
            (a.min(b), a.max(b))
        };
        let want = fillers_one_by_one(&mut single, block, from, to, s.cause);
        prop_assert_eq!(bulk.program_fillers(block, from, to, FILLER, s.cause), want);
        assert_same(&mut bulk, &mut single);
        prop_assert_eq!(probe(&mut bulk), probe(&mut single));
    }
}

/// Runs of fillers on a die that is idle, busy, backlogged, or programming on its other
/// plane, under every scheduler setting and with zero latencies.
#[test]
fn filler_runs_after_every_kind_of_operation() {
    for (flags, order) in
        (0..8u32).flat_map(|f| [ProgramOrder::Sequential, ProgramOrder::Ascending].map(|o| (f, o)))
    {
        for (t_read, t_prog) in [(50_000, 500_000), (0, 0), (500_000, 50_000)] {
            let s = Setup {
                shape: (2, 2, 2),
                blocks_per_plane: 8,
                pages_per_block: 128,
                order,
                timed: true,
                latencies: (t_read, t_prog, 3_000_000, 800_000_000),
                scheduler: (flags & 1 != 0, flags & 2 != 0, flags & 4 != 0),
                extra_oob: flags & 1 != 0,
                sink: false,
                history: Vec::new(),
                cause: Cause::MergeFull,
            };
            let mut bulk = build(&s);
            let mut single = build(&s);
            let layout = *bulk.layout();
            let die = |b: u32| layout.die_of_unit(layout.unit_of_block(b));
            let unit = |b: u32| layout.unit_of_block(b);
            let mate = (0..layout.total_blocks)
                .find(|&b| die(b) == die(0) && unit(b) != unit(0))
                .unwrap();
            for (step, (from, to)) in [(0, 1), (1, 40), (40, 41), (41, 128)]
                .into_iter()
                .enumerate()
            {
                for f in [&mut bulk, &mut single] {
                    f.begin_request(step as u64 * 1_000_000);
                    match step {
                        1 => f.erase(5, Cause::Gc).unwrap(),
                        2 => {
                            // At the first filler's offset where the order allows: the
                            // first filler may join it as a multi-plane program.
                            let off = match order {
                                ProgramOrder::Sequential => f.write_pointer(mate),
                                _ => from,
                            };
                            f.program(mate * 128 + off, FILLER, &[], Cause::Host)
                                .unwrap();
                        }
                        3 => {
                            f.read(0, Cause::Host).unwrap();
                        }
                        _ => {}
                    }
                }
                fillers_one_by_one(&mut single, 0, from, to, s.cause).unwrap();
                bulk.program_fillers(0, from, to, FILLER, s.cause).unwrap();
                assert_same(&mut bulk, &mut single);
            }
        }
    }
}

/// Whole blocks (and parts of them) moved within a plane, between the planes of a die and
/// between dies on the same and on different channels, under every scheduler setting, with
/// reads faster and slower than programs, zero latencies, and channels busy or idle when
/// the move starts (or everything at time 0, where transfers queue back to back): the
/// cases where the closed form of long runs applies, and the ties at the edges of its
/// conditions.
#[test]
fn whole_blocks_within_and_between_dies_and_channels() {
    let latencies = [
        (50_000, 500_000),
        (0, 500_000),
        (50_000, 0),
        (0, 0),
        (500_000, 50_000),
    ];
    for order in [ProgramOrder::Ascending, ProgramOrder::Sequential] {
        for flags in 0..8u32 {
            for (t_read, t_prog) in latencies {
                for start in [
                    Start::Idle,
                    Start::Busy,
                    Start::Backlog,
                    Start::ReadMate,
                    Start::ProgramMate,
                    Start::AtZero,
                ] {
                    let s = Setup {
                        shape: (2, 2, 2),
                        blocks_per_plane: 8,
                        pages_per_block: 128,
                        order,
                        timed: true,
                        latencies: (t_read, t_prog, 3_000_000, 800_000_000),
                        scheduler: (flags & 1 != 0, flags & 2 != 0, flags & 4 != 0),
                        extra_oob: false,
                        sink: false,
                        history: Vec::new(),
                        cause: Cause::MergeFull,
                    };
                    let what = format!("{order:?} flags {flags} {t_read}/{t_prog} {start:?}");
                    whole_block_moves(&s, start, &what);
                }
            }
        }
    }
}

/// How the dies and channels stand when a move starts.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Start {
    /// Long after everything before.
    Idle,
    /// Right after a read on every die.
    Busy,
    /// Right after an erase on the destination's die (programs wait for it at first).
    Backlog,
    /// Right after a read on the source die's other plane (which the first copy's read
    /// may join as a multi-plane read).
    ReadMate,
    /// Right after a program on the destination die's other plane, at the offset of the
    /// first page at first (which the first copy's program may join).
    ProgramMate,
    /// At time 0, as everything before.
    AtZero,
}

fn whole_block_moves(s: &Setup, start: Start, what: &str) {
    let mut bulk = build(s);
    let mut single = build(s);
    let layout = *bulk.layout();
    let ppb = layout.pages_per_block;
    let unit = |b: u32| layout.unit_of_block(b);
    let die = |b: u32| layout.die_of_unit(unit(b));
    let channel = |b: u32| layout.channel_of_unit(unit(b));
    let blocks = 0..layout.total_blocks;
    let find = |ok: &dyn Fn(u32) -> bool| blocks.clone().find(|&b| ok(b)).unwrap();
    // Destinations for block 0's pages: the same plane, the other plane of its die, a die
    // on its channel, a die on another channel.
    let dsts = [
        1,
        find(&|b| die(b) == die(0) && unit(b) != unit(0)),
        find(&|b| die(b) != die(0) && channel(b) == channel(0)),
        find(&|b| channel(b) != channel(0)),
    ];
    for (i, &dst) in dsts.iter().enumerate() {
        let src = if i == 0 { 0 } else { dsts[i - 1] };
        for f in [&mut bulk, &mut single] {
            if i == 0 {
                // Block 0 full, one page in every unit's last block (for the busy channels).
                for p in 0..ppb {
                    f.program(p, Oob { lpa: p, seq: 1 }, &[], Cause::Host)
                        .unwrap();
                }
                for u in 0..layout.units {
                    let b = (u + 1) * layout.blocks_per_unit - 1;
                    f.program(b * ppb, Oob { lpa: 0, seq: 2 }, &[], Cause::Host)
                        .unwrap();
                }
            }
            if start != Start::AtZero {
                f.begin_request(f.request_done() + 1_000_000_000 * (i as u64 + 1));
            }
            if start == Start::Busy {
                // Every channel busy when the first copy is ready.
                for u in 0..layout.units {
                    let b = (u + 1) * layout.blocks_per_unit - 1;
                    f.read(b * ppb, Cause::Host).unwrap();
                }
            }
        }
        // The blocks on the other plane of `block`'s die, if any.
        let mate = |block: u32| {
            blocks
                .clone()
                .find(|&b| die(b) == die(block) && unit(b) != unit(block) && b != 0)
        };
        for f in [&mut bulk, &mut single] {
            match start {
                Start::Backlog => f.erase(dst, Cause::Gc).unwrap(),
                Start::ReadMate => {
                    if let Some(m) = mate(src) {
                        if let Some(p) = (m * ppb..(m + 1) * ppb).find(|&p| f.is_programmed(p)) {
                            f.read(p, Cause::Host).unwrap();
                        }
                    }
                }
                Start::ProgramMate => {
                    if let Some(m) = mate(dst) {
                        let p = m * ppb + f.write_pointer(m);
                        if f.write_pointer(m) < ppb {
                            f.program(p, Oob { lpa: 7, seq: 3 }, &[], Cause::Host)
                                .unwrap();
                        }
                    }
                }
                _ => {}
            }
        }
        // Every other move only part of the block.
        let (from, to) = if i % 2 == 0 { (0, ppb) } else { (3, ppb - 5) };
        let moves: Vec<(Ppn, Ppn)> = single
            .valid_pages(src)
            .filter(|&p| (from..to).contains(&(p - src * ppb)))
            .map(|p| (p, p - src * ppb + dst * ppb))
            .collect();
        let want = page_by_page(&mut single, &moves, s.cause);
        assert_eq!(bulk.move_valid(src, dst, from, to, s.cause), want, "{what}");
        assert_eq!(
            bulk.timeline().map(Timeline::device_state),
            single.timeline().map(Timeline::device_state),
            "{what}: to block {dst}"
        );
        assert_same(&mut bulk, &mut single);
    }
}
