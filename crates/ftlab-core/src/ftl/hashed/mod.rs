//! The hash-based family (HPFTL, SlimFTL: one module each) and the pieces they share
//! (SlimFTL thesis chapters 2-3): the md5 hasher whose HID-th hash function is the digest
//! shifted right by HID bits, the primary table of encoded page addresses (hash id + page id in the block),
//! the validation of their bit widths, and the memory accounting they share.
//!
//! Choices where the thesis is silent: the md5 input is the (shifted) logical page address
//! as 8 little-endian bytes; the digest is read as a big-endian 128-bit number; the HID-th
//! hash is the low 32 bits of `digest >> HID`, modulo the number of (virtual) blocks
//! (computed by multiplication, Lemire's "fastmod": the divisor is fixed per run).

pub mod hpftl;
pub mod slimftl;

use crate::device::geometry::Layout;
use crate::error::{Error, Result};
use crate::ftl::MemoryBreakdown;
use md5::{Digest, Md5};

/// md5 of `lpa >> lpa_shift`, computed once per logical page access. The simulator keeps
/// recent digests in a small direct-mapped cache (a sequential run sharing one shifted
/// address, or a page read soon after it was written, costs one md5); a controller would
/// hash in hardware, so the cache is not modelled DRAM.
#[derive(Clone, Debug)]
pub struct Md5Hasher {
    lpa_shift: u32,
    modulus: u32,
    /// ceil(2^64 / modulus), for the remainder by multiplication.
    inverse: u64,
    cache: Vec<(u64, u128)>,
    cache_mask: usize,
}

/// Most entries of the digest cache (512 KiB: it must stay in the CPU caches to pay).
const DIGEST_CACHE_MAX: u64 = 1 << 14;

impl Md5Hasher {
    /// Hashes the addresses of `logical_pages` onto `modulus` (physical or virtual)
    /// blocks, at least 2.
    pub fn new(lpa_shift: u32, modulus: u32, logical_pages: u64) -> Self {
        debug_assert!(modulus >= 2);
        let keys = (logical_pages >> lpa_shift).max(1);
        let entries = keys.next_power_of_two().min(DIGEST_CACHE_MAX) as usize;
        Md5Hasher {
            lpa_shift,
            modulus,
            inverse: (u64::MAX / modulus as u64).wrapping_add(1),
            cache: vec![(u64::MAX, 0); entries],
            cache_mask: entries - 1,
        }
    }

    #[inline]
    pub fn digest(&mut self, lpa: u32) -> u128 {
        let key = (lpa as u64) >> self.lpa_shift;
        let slot = &mut self.cache[key as usize & self.cache_mask];
        if slot.0 != key {
            let d = Md5::digest(key.to_le_bytes());
            *slot = (key, u128::from_be_bytes(d.into()));
        }
        slot.1
    }

    /// The block chosen by hash function `hid` (1-based) for a digest.
    #[inline]
    pub fn target(&self, digest: u128, hid: u32) -> u32 {
        let x = (digest >> hid) as u32;
        let fraction = self.inverse.wrapping_mul(x as u64);
        ((fraction as u128 * self.modulus as u128) >> 64) as u32
    }
}

/// One entry per logical page: hash id (HID) in the high bits, page id in the block (PPID)
/// in the low `ppid_bits`. HID 0 means unmapped. Stored as u32 in the simulator; DRAM is
/// counted at `hid_bits + ppid_bits` bits per entry.
#[derive(Clone, Debug)]
pub struct EncodedTable {
    entries: Vec<u32>,
    ppid_bits: u32,
    bits_per_entry: u32,
}

impl EncodedTable {
    pub fn new(logical_pages: u64, hid_bits: u32, ppid_bits: u32) -> Self {
        EncodedTable {
            entries: vec![0; logical_pages as usize],
            ppid_bits,
            bits_per_entry: hid_bits + ppid_bits,
        }
    }

    /// (HID, PPID) of a logical page; HID 0 means unmapped.
    #[inline]
    pub fn get(&self, lpa: u32) -> (u32, u32) {
        let e = self.entries[lpa as usize];
        (e >> self.ppid_bits, e & ((1 << self.ppid_bits) - 1))
    }

    #[inline]
    pub fn set(&mut self, lpa: u32, hid: u32, ppid: u32) {
        self.entries[lpa as usize] = (hid << self.ppid_bits) | ppid;
    }

    #[inline]
    pub fn set_ppid(&mut self, lpa: u32, ppid: u32) {
        let hid = self.entries[lpa as usize] >> self.ppid_bits;
        self.set(lpa, hid, ppid);
    }

    #[inline]
    pub fn clear(&mut self, lpa: u32) {
        self.entries[lpa as usize] = 0;
    }

    /// DRAM of the table: `HID + PPID` bits per logical page, packed.
    pub fn bytes(&self) -> u64 {
        (self.entries.len() as u64 * self.bits_per_entry as u64).div_ceil(8)
    }
}

/// Checks the bit widths of a hashed scheme's primary entry: at least `min_hid_bits` of HID
/// (at most 7, as the digest is shifted by at most 127), and a PPID that can address every
/// page of a block (the thesis's rule: a PPID that cannot would make blocks unusable).
pub fn check_bits(
    scheme: &str,
    hid_bits: u32,
    min_hid_bits: u32,
    ppid_bits: u32,
    layout: &Layout,
) -> Result<()> {
    if !(min_hid_bits..=7).contains(&hid_bits) {
        return Err(Error::config(
            format!("{scheme}.hid_bits"),
            format!("{hid_bits} is not between {min_hid_bits} and 7"),
        ));
    }
    let needed = 32 - (layout.pages_per_block - 1).leading_zeros();
    if ppid_bits < needed || ppid_bits > 24 {
        return Err(Error::config(
            format!("{scheme}.ppid_bits"),
            format!(
                "{ppid_bits} bits cannot address the {} pages of a block: it must be between {needed} and 24",
                layout.pages_per_block
            ),
        ));
    }
    Ok(())
}

/// Bookkeeping every hashed scheme keeps beside its map, as the page-level FTL does: a valid
/// bitmap (1 bit per physical page) and per-block valid count, erase count and write
/// pointer (4 bytes each: any block may be open at once under hashing).
pub fn bookkeeping_memory(layout: &Layout, out: &mut MemoryBreakdown) {
    out.push(("valid_bitmap", layout.physical_pages.div_ceil(8)));
    out.push(("block_counters", layout.total_blocks as u64 * 12));
}

/// The page-level table the thesis normalises to: 4 bytes per logical page.
pub fn page_table_bytes(layout: &Layout) -> u64 {
    layout.logical_pages * 4
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn target_is_the_remainder_of_the_shifted_digest() {
        for modulus in [2u32, 3, 7, 320, 4064, 9008, 9016, 1 << 20, u32::MAX / 2 + 7] {
            let mut h = Md5Hasher::new(0, modulus, 1 << 20);
            for lpa in [0u32, 1, 77, 123_456, u32::MAX] {
                let d = h.digest(lpa);
                for hid in 1..=63 {
                    let expected = ((d >> hid) as u32) % modulus;
                    assert_eq!(h.target(d, hid), expected, "{modulus} {lpa} {hid}");
                }
            }
        }
    }

    #[test]
    fn shifted_addresses_share_a_digest() {
        let mut h = Md5Hasher::new(8, 1000, 1 << 20);
        let a = h.digest(256);
        assert_eq!(h.digest(511), a);
        assert_ne!(h.digest(512), a);
        // md5 of 1u64 as little-endian bytes, read big-endian.
        let mut plain = Md5Hasher::new(0, 1000, 16);
        assert_eq!(
            plain.digest(1),
            u128::from_be_bytes(Md5::digest(1u64.to_le_bytes()).into())
        );
    }
}
