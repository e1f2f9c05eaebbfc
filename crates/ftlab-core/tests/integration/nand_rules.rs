//! Every NAND rule violation is an error, never silent.

use crate::common;

use common::small_config;
use ftlab_core::device::nand::{Cause, Flash, NandError, Oob};
use ftlab_core::run::config::ProgramOrder;

fn flash(order: ProgramOrder, extra: usize) -> Flash {
    let mut cfg = small_config((1, 1, 1, 1), 8, 8, 0.5);
    cfg.nand.program_order = order;
    let layout = cfg.validate().unwrap();
    Flash::new(&cfg.device(), &layout, extra, true).unwrap()
}

const OOB: Oob = Oob { lpa: 1, seq: 1 };

#[test]
fn program_twice_without_erase() {
    let mut f = flash(ProgramOrder::Sequential, 0);
    f.program(0, OOB, &[], Cause::Host).unwrap();
    assert_eq!(
        f.program(0, OOB, &[], Cause::Host),
        Err(NandError::ProgramNotErased { ppn: 0 })
    );
    let mut f = flash(ProgramOrder::Any, 0);
    f.program(3, OOB, &[], Cause::Host).unwrap();
    assert_eq!(
        f.program(3, OOB, &[], Cause::Host),
        Err(NandError::ProgramNotErased { ppn: 3 })
    );
}

#[test]
fn program_out_of_order() {
    let mut f = flash(ProgramOrder::Sequential, 0);
    f.program(0, OOB, &[], Cause::Host).unwrap();
    let err = f.program(2, OOB, &[], Cause::Host).unwrap_err();
    assert_eq!(
        err,
        NandError::ProgramOutOfOrder {
            ppn: 2,
            expected_page: 1
        }
    );
    assert!(err.to_string().contains("out of order"));
    // Any order: fixed offsets are fine.
    let mut f = flash(ProgramOrder::Any, 0);
    f.program(5, OOB, &[], Cause::Host).unwrap();
    f.program(1, OOB, &[], Cause::Host).unwrap();
    assert!(f.is_programmed(5) && f.is_programmed(1) && !f.is_programmed(0));
}

#[test]
fn ascending_order_allows_skipping_never_going_back() {
    let mut f = flash(ProgramOrder::Ascending, 0);
    // Pages 0 and 3 of block 0, skipping 1 and 2.
    f.program(0, OOB, &[], Cause::Host).unwrap();
    f.program(3, OOB, &[], Cause::Host).unwrap();
    assert_eq!(f.write_pointer(0), 4);
    assert!(f.is_programmed(3) && !f.is_programmed(1) && !f.is_full(0));
    // A skipped page stays erased: it cannot be programmed below page 3, nor read.
    let err = f.program(1, OOB, &[], Cause::Host).unwrap_err();
    assert_eq!(
        err,
        NandError::ProgramBelowHighest {
            ppn: 1,
            lowest_page: 4
        }
    );
    assert!(err.to_string().contains("ascending"));
    assert_eq!(
        f.read(2, Cause::Host),
        Err(NandError::ReadErased { ppn: 2 })
    );
    assert_eq!(
        f.program(3, OOB, &[], Cause::Host),
        Err(NandError::ProgramNotErased { ppn: 3 })
    );
    // Programming the last page closes the block; an erase reopens every page.
    f.program(7, OOB, &[], Cause::Host).unwrap();
    assert!(f.is_full(0));
    for p in [0, 3, 7] {
        f.invalidate(p).unwrap();
    }
    f.erase(0, Cause::Gc).unwrap();
    assert!(f.is_erased(0) && !f.is_programmed(3));
    f.program(1, OOB, &[], Cause::Host).unwrap();
}

#[test]
fn oob_size_is_enforced() {
    // The default OOB is 128 bytes, 8 of them the header.
    let mut cfg = small_config((1, 1, 1, 1), 8, 8, 0.5);
    let layout = cfg.validate().unwrap();
    assert!(Flash::new(&cfg.device(), &layout, 121, false).is_err());
    cfg.geometry.oob_size = 16;
    let layout = cfg.validate().unwrap();
    let mut f = Flash::new(&cfg.device(), &layout, 8, false).unwrap();
    assert_eq!(
        f.program(0, OOB, &[7; 9], Cause::Host),
        Err(NandError::OobTooLarge {
            ppn: 0,
            bytes: 9,
            limit: 8
        })
    );
    f.program(0, OOB, &[7; 5], Cause::Host).unwrap();
    assert_eq!(f.oob_extra(0), &[7, 7, 7, 7, 7, 0, 0, 0]);
    // A copy keeps the extra bytes.
    f.copy(0, 1, Cause::Gc).unwrap();
    assert_eq!(f.oob_extra(1), &[7, 7, 7, 7, 7, 0, 0, 0]);
    assert_eq!(f.oob(1), OOB);
}

#[test]
fn read_of_erased_page_and_out_of_range() {
    let mut f = flash(ProgramOrder::Sequential, 0);
    assert_eq!(
        f.read(0, Cause::Host),
        Err(NandError::ReadErased { ppn: 0 })
    );
    assert!(matches!(
        f.read(1_000_000, Cause::Host),
        Err(NandError::AddressOutOfRange { .. })
    ));
    assert!(matches!(
        f.erase(999, Cause::Gc),
        Err(NandError::BlockOutOfRange { .. })
    ));
}

#[test]
fn erase_with_valid_pages_loses_data() {
    let mut f = flash(ProgramOrder::Sequential, 0);
    f.program(0, OOB, &[], Cause::Host).unwrap();
    f.program(1, OOB, &[], Cause::Host).unwrap();
    f.invalidate(0).unwrap();
    assert_eq!(
        f.erase(0, Cause::Gc),
        Err(NandError::EraseWithValidPages { block: 0, valid: 1 })
    );
    assert_eq!(
        f.invalidate(0),
        Err(NandError::InvalidateNotValid { ppn: 0 })
    );
    f.invalidate(1).unwrap();
    f.erase(0, Cause::Gc).unwrap();
    assert!(f.is_erased(0));
    assert_eq!(f.erase_count(0), 1);
    // Erased pages may be programmed again from the start.
    f.program(0, OOB, &[], Cause::Host).unwrap();
    assert_eq!(f.stats.programs[Cause::Host as usize], 3);
    assert_eq!(f.stats.erases[Cause::Gc as usize], 1);
}

#[test]
fn timing_overlaps_dies_and_serialises_one_die() {
    let mut cfg = small_config((2, 1, 1, 1), 8, 8, 0.5);
    cfg.nand.read_latency_ns = 50_000;
    cfg.nand.program_latency_ns = 500_000;
    cfg.nand.channel_bytes_per_s = 4096 + 128; // one page+OOB per second... scaled below
    cfg.nand.channel_bytes_per_s = (4096 + 128) * 1_000_000; // 1 us per page transfer
    let layout = cfg.validate().unwrap();
    let mut f = Flash::new(&cfg.device(), &layout, 0, true).unwrap();
    let ppb = layout.pages_per_block;
    let unit1 = layout.blocks_per_unit * ppb; // first page of unit 1 (other channel, other die)
    f.begin_request(0);
    f.program(0, OOB, &[], Cause::Host).unwrap();
    f.program(unit1, OOB, &[], Cause::Host).unwrap();
    // Two dies on two channels: both done after 1 us transfer + 500 us program.
    assert_eq!(f.request_done(), 501_000);
    f.begin_request(0);
    f.program(1, OOB, &[], Cause::Host).unwrap();
    // Same die: waits for the first program.
    assert_eq!(f.request_done(), 501_000 + 501_000);
    f.begin_request(2_000_000);
    f.read(0, Cause::Host).unwrap();
    assert_eq!(f.request_done(), 2_000_000 + 50_000 + 1_000);
}

#[test]
fn host_operations_count_under_the_host_cause() {
    let mut f = flash(ProgramOrder::Sequential, 0);
    assert_eq!(f.host_cause(), Cause::Host);
    f.program(0, OOB, &[], Cause::Host).unwrap();
    f.set_host_cause(Cause::HostCleaning);
    f.program(1, OOB, &[], Cause::Host).unwrap();
    f.read(0, Cause::Host).unwrap();
    // Other causes are counted as issued.
    f.copy(1, 2, Cause::Gc).unwrap();
    f.program(3, OOB, &[], Cause::Translation).unwrap();
    f.set_host_cause(Cause::FsMetadata);
    f.program(4, OOB, &[], Cause::Host).unwrap();
    f.set_host_cause(Cause::Host);
    f.read(4, Cause::Host).unwrap();
    let s = &f.stats;
    let count = |counts: &[u64], c: Cause| counts[c as usize];
    assert_eq!(count(&s.programs, Cause::Host), 1);
    assert_eq!(count(&s.programs, Cause::HostCleaning), 1);
    assert_eq!(count(&s.programs, Cause::FsMetadata), 1);
    assert_eq!(count(&s.programs, Cause::Gc), 1);
    assert_eq!(count(&s.programs, Cause::Translation), 1);
    assert_eq!(count(&s.reads, Cause::HostCleaning), 1);
    assert_eq!(count(&s.reads, Cause::Gc), 1);
    assert_eq!(count(&s.reads, Cause::Host), 1);
    assert_eq!(s.total_programs(), 5);
}

#[test]
fn causes_are_listed_once_in_report_order() {
    use ftlab_core::device::nand::{CAUSES, CAUSE_COUNT};
    assert_eq!(CAUSES.len(), CAUSE_COUNT);
    for (i, c) in CAUSES.iter().enumerate() {
        assert_eq!(*c as usize, i);
        assert_eq!(Cause::from_name(c.name()), Some(*c));
        assert!(!c.description().is_empty());
    }
    let names: Vec<&str> = CAUSES.iter().map(|c| c.name()).collect();
    assert_eq!(
        names,
        [
            "host",
            "gc",
            "translation",
            "misprediction",
            "merge_switch",
            "merge_partial",
            "merge_full",
            "host_cleaning",
            "fs_metadata",
            "fold",
            "retire",
            "wear_level",
            "refresh"
        ]
    );
    let merges: Vec<&str> = CAUSES
        .iter()
        .filter(|c| c.group() == "merge")
        .map(|c| c.name())
        .collect();
    assert_eq!(merges, ["merge_switch", "merge_partial", "merge_full"]);
}

#[test]
fn oob_headers_keep_64_bit_sequence_numbers() {
    let mut f = flash(ProgramOrder::Sequential, 0);
    // Programmed before any high half is stored, read back after.
    let small = Oob { lpa: 3, seq: 4 };
    f.program(8, small, &[], Cause::Host).unwrap();
    let big = [
        Oob {
            lpa: 0,
            seq: u32::MAX as u64 + 1,
        },
        Oob {
            lpa: 7,
            seq: (5 << 32) | 3,
        },
        Oob {
            lpa: u32::MAX - 1,
            seq: u64::MAX,
        },
    ];
    for (p, &oob) in big.iter().enumerate() {
        f.program(p as u32, oob, &[], Cause::Host).unwrap();
    }
    for (p, &oob) in big.iter().enumerate() {
        assert_eq!(f.read(p as u32, Cause::Host).unwrap(), oob);
    }
    assert_eq!(f.oob(8), small);
    // A copy keeps the whole header, one by one or moved in bulk; an erased page reads
    // back as erased.
    f.copy(2, 3, Cause::Gc).unwrap();
    assert_eq!(f.oob(3), big[2]);
    f.move_pages(&[(1, 16)], Cause::Gc).unwrap();
    assert_eq!(f.oob(16), big[1]);
    assert_eq!(f.oob(4), Oob::ERASED);
    // Translation pages carry their page number in the sequence field.
    f.program(4, Oob::translation(u32::MAX - 3), &[], Cause::Translation)
        .unwrap();
    assert_eq!(f.oob(4).translation_page(), u32::MAX - 3);
    for p in [0, 2, 3, 4] {
        f.invalidate(p).unwrap(); // page 1 moved out
    }
    f.erase(0, Cause::Gc).unwrap();
    assert!((0..8).all(|p| f.oob(p) == Oob::ERASED));
    // An erased page programmed again with a small number loses the old high half.
    f.program(0, small, &[], Cause::Host).unwrap();
    assert_eq!(f.oob(0), small);
}

#[test]
fn an_slc_block_holds_a_third_of_the_pages_and_keeps_its_mode_while_it_holds_data() {
    for order in [
        ProgramOrder::Sequential,
        ProgramOrder::Ascending,
        ProgramOrder::Any,
    ] {
        // 8 pages a block: 2 in SLC mode (3 bits per cell).
        let mut f = flash(order, 0);
        f.set_slc(1, true).unwrap();
        assert!(f.is_slc(1) && !f.is_slc(0));
        assert_eq!(f.capacity(1), 2);
        f.program(8, OOB, &[], Cause::Host).unwrap();
        assert_eq!(
            f.set_slc(1, false),
            Err(NandError::ModeNotErased { block: 1 })
        );
        f.program(9, OOB, &[], Cause::Host).unwrap();
        assert!(f.is_full(1));
        assert_eq!(
            f.program(10, OOB, &[], Cause::Host),
            Err(NandError::ProgramBeyondCapacity { ppn: 10, pages: 2 })
        );
        assert_eq!(f.stats.slc_host_programs, 2);
        f.invalidate(8).unwrap();
        f.invalidate(9).unwrap();
        f.erase(1, Cause::Fold).unwrap();
        // The mode outlives the erase, until changed.
        assert!(f.is_slc(1) && !f.is_full(1));
        f.set_slc(1, false).unwrap();
        assert_eq!(f.capacity(1), 8);
    }
}

#[test]
fn slc_operations_take_the_slc_timings() {
    let mut cfg = small_config((1, 1, 1, 1), 8, 8, 0.5);
    cfg.nand.channel_bytes_per_s = (4096 + 128) * 1_000_000;
    cfg.slc.read_latency_ns = 20_000;
    cfg.slc.program_latency_ns = 100_000;
    cfg.slc.erase_latency_ns = 1_000_000;
    let layout = cfg.validate().unwrap();
    let mut f = Flash::new(&cfg.device(), &layout, 0, true).unwrap();
    f.set_slc(1, true).unwrap();
    f.begin_request(0);
    f.program(8, OOB, &[], Cause::Host).unwrap();
    // The transfer (1 us), then the SLC tPROG.
    assert_eq!(f.request_done(), 101_000);
    f.begin_request(200_000);
    f.read(8, Cause::Host).unwrap();
    // The SLC tR, then the transfer out.
    assert_eq!(f.request_done(), 221_000);
    f.invalidate(8).unwrap();
    f.begin_request(300_000);
    f.erase(1, Cause::Fold).unwrap();
    assert_eq!(f.request_done(), 1_300_000);
}
