//! Where each request's time went: its latency split into [`Part`]s that add up to it
//! exactly, in integer nanoseconds.
//!
//! The split follows the request's completion. A request ends when the last of what it
//! waits for ends (its flash operations, its buffer slot, its data across the link); each
//! time one of them pushes the request's end further, the stretch it adds is charged to
//! what that operation was doing during it: waiting for its die or channel (charged to
//! whoever held the die then, [`Occupants`]), being suspended into, sensing, transferring,
//! programming or erasing (charged by the operation's cause: a translation read's sensing
//! is `translation`, a foreground GC copy's is `fg_gc`). The host interface and the DRAM
//! add their own stretches before and after. Only counters are kept: per operation type a
//! sum and a histogram per part (`controller::breakdown`), no per-request record.

use crate::device::nand::Cause;

/// Declares the parts once: the [`Part`] enum, [`PARTS`], [`PART_COUNT`], each part's
/// name, description and summary column names.
macro_rules! parts {
    ($($variant:ident = $name:literal, $description:literal;)+) => {
        /// A cause of latency ([`PARTS`] in report order).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Part {
            $(
                #[doc = $description]
                $variant,
            )+
        }

        pub const PART_COUNT: usize = [$($name),+].len();

        /// Every part, in report order (`PARTS[p as usize] == p`).
        pub const PARTS: [Part; PART_COUNT] = [$(Part::$variant),+];

        /// The summary's columns: each part's mean share of a read's latency, then of a
        /// write's, in microseconds.
        pub const SUMMARY_COLUMNS: [&str; 2 * PART_COUNT] = [
            $(concat!("read_", $name, "_us"),)+
            $(concat!("write_", $name, "_us"),)+
        ];

        impl Part {
            /// The part's name in reports.
            pub const fn name(self) -> &'static str {
                match self {
                    $(Part::$variant => $name,)+
                }
            }

            /// What the part is, in a few words.
            pub const fn description(self) -> &'static str {
                match self {
                    $(Part::$variant => $description,)+
                }
            }
        }
    };
}

parts! {
    HostInterface = "host_interface", "the command and the data crossing the host link";
    Dram = "dram", "data copied into or out of the controller's DRAM (buffer hits, unmapped pages, buffered writes)";
    BufferWait = "buffer_wait", "a write waiting for a free write-buffer slot while the flash drains the buffer (a flush held by GC, merges, cleaning or mapping write-back is charged to them)";
    QueueHost = "queue_host", "queueing behind other host I/O on the die or channel";
    BgGc = "bg_gc", "waiting behind background garbage collection (folding included)";
    BgMerge = "bg_merge", "waiting behind background log-block merges";
    BgHostCleaning = "bg_host_cleaning", "waiting behind the host stack's background cleaning";
    BgMapping = "bg_mapping", "waiting behind background mapping write-back";
    FgGc = "fg_gc", "foreground garbage collection: behind it, or doing it (folding included)";
    FgMerge = "fg_merge", "foreground log-block merges: behind them, or doing them";
    FgHostCleaning = "fg_host_cleaning", "the host stack's cleaning in the foreground: behind it, or doing it";
    FgMapping = "fg_mapping", "mapping (translation page) write-back in the foreground";
    Suspension = "suspension", "suspending a program or erase to read";
    Sense = "sense", "sensing the page (tR)";
    Program = "program", "programming the page (tPROG)";
    Erase = "erase", "erasing a block (tBERS) in the request's path";
    Transfer = "transfer", "the page crossing the flash channel";
    Translation = "translation", "reading translation pages to locate the data";
    Misprediction = "misprediction", "extra reads after a wrong location prediction";
}

impl Part {
    /// What a request waiting behind an operation of `cause` (counted cause, see
    /// [`crate::device::nand::Flash::set_host_cause`]) waits behind.
    #[inline(always)]
    pub fn behind(cause: Cause, background: bool, program: bool) -> Part {
        match (cause, background) {
            (
                Cause::Gc | Cause::Fold | Cause::Retire | Cause::WearLevel | Cause::Refresh,
                false,
            ) => Part::FgGc,
            (Cause::Gc | Cause::Fold | Cause::Retire | Cause::WearLevel | Cause::Refresh, true) => {
                Part::BgGc
            }
            (Cause::MergeSwitch | Cause::MergePartial | Cause::MergeFull, false) => Part::FgMerge,
            (Cause::MergeSwitch | Cause::MergePartial | Cause::MergeFull, true) => Part::BgMerge,
            (Cause::HostCleaning, false) => Part::FgHostCleaning,
            (Cause::HostCleaning, true) => Part::BgHostCleaning,
            (Cause::Translation, true) => Part::BgMapping,
            (Cause::Translation, false) if program => Part::FgMapping,
            _ => Part::QueueHost,
        }
    }

    /// Whether the part is a phase of a flash operation's own service (sensing, program,
    /// erase, transfer: declared one after the other).
    #[inline(always)]
    fn is_service(self) -> bool {
        (self as u8).wrapping_sub(Part::Sense as u8) <= Part::Transfer as u8 - Part::Sense as u8
    }

    /// What the service phases of an operation of `cause` (a `program` or erase, or a
    /// read) in the request's own path count as, if not as themselves (host data).
    #[inline(always)]
    pub fn service_of(cause: Cause, program: bool) -> Option<Part> {
        match cause {
            Cause::Host | Cause::FsMetadata => None,
            Cause::Gc | Cause::Fold | Cause::Retire | Cause::WearLevel | Cause::Refresh => {
                Some(Part::FgGc)
            }
            Cause::MergeSwitch | Cause::MergePartial | Cause::MergeFull => Some(Part::FgMerge),
            Cause::HostCleaning => Some(Part::FgHostCleaning),
            Cause::Translation if program => Some(Part::FgMapping),
            Cause::Translation => Some(Part::Translation),
            Cause::Misprediction => Some(Part::Misprediction),
        }
    }

    /// What the phase `self` of an operation whose service counts as `service`
    /// ([`Part::service_of`]) counts as: waits as they are.
    #[inline(always)]
    pub fn own(self, service: Option<Part>) -> Part {
        match service {
            Some(s) if self.is_service() => s,
            _ => self,
        }
    }

    /// A stall: waiting behind other work, not the request's own service.
    pub fn is_stall(self) -> bool {
        matches!(
            self,
            Part::BufferWait
                | Part::QueueHost
                | Part::BgGc
                | Part::BgMerge
                | Part::BgHostCleaning
                | Part::BgMapping
                | Part::FgGc
                | Part::FgMerge
                | Part::FgHostCleaning
                | Part::FgMapping
        )
    }

    /// What to change when this stall dominates.
    pub fn remedy(self) -> &'static str {
        match self {
            Part::BufferWait => {
                "the write buffer fills faster than the flash drains its data (a flush held \
                 by GC or cleaning is charged to them instead): a larger buffer.size_bytes, \
                 or spread arrivals (replay.time_scale)"
            }
            Part::QueueHost => {
                "the host's own I/O queues on the dies: spread arrivals (replay.time_scale) or \
                 add parallelism (geometry.channels, dies)"
            }
            Part::BgGc | Part::FgGc => {
                "garbage collection is in the requests' path: more over-provisioning \
                 (geometry.over_provisioning), background GC (gc.mode), or read priority and \
                 suspension (scheduler.*)"
            }
            Part::BgMerge | Part::FgMerge => {
                "log-block merges are in the requests' path: more log blocks, or a page-mapped \
                 scheme"
            }
            Part::BgHostCleaning | Part::FgHostCleaning => {
                "the host file system's cleaning is in the requests' path: more free space for \
                 the file system (lfs.over_provisioning, a smaller working set), more of it \
                 cleaned in idle time (lfs.idle_ns, lfs.idle_free_fraction), or let it age \
                 in preconditioning (precondition.workload_requests)"
            }
            Part::BgMapping | Part::FgMapping => {
                "mapping write-back is in the requests' path: more mapping DRAM \
                 (dram.budget_fraction)"
            }
            _ => "",
        }
    }
}

/// One request's latency by part, in ns (read as an array, `parts[p as usize]`), with the
/// set of parts it has: summing a request into the report visits only those (a request
/// has a few of the 19), not every slot.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Parts {
    ns: [u64; PART_COUNT],
    /// Bit `p` set: `ns[p] > 0`.
    held: u32,
}

impl Parts {
    /// Adds `ns` to `part`.
    #[inline(always)]
    pub fn add(&mut self, part: Part, ns: u64) {
        self.ns[part as usize] += ns;
        self.held |= ((ns != 0) as u32) << part as u32;
    }

    /// No time in any part (only the held parts are non-zero: only they are zeroed).
    #[inline]
    pub fn clear(&mut self) {
        let mut left = self.held;
        while left != 0 {
            self.ns[left.trailing_zeros() as usize] = 0;
            left &= left - 1;
        }
        self.held = 0;
    }

    /// The parts the request has, with their time, in [`PARTS`] order.
    #[inline]
    pub fn held(&self) -> impl Iterator<Item = (usize, u64)> + '_ {
        let mut left = self.held;
        std::iter::from_fn(move || {
            (left != 0).then(|| {
                let i = left.trailing_zeros() as usize;
                left &= left - 1;
                (i, self.ns[i])
            })
        })
    }
}

impl std::ops::Deref for Parts {
    type Target = [u64; PART_COUNT];

    fn deref(&self) -> &Self::Target {
        &self.ns
    }
}

/// The phases of the last operation the timing model placed in a request's path: each
/// stretch `[start, end)` from its ready time to its end, with what it was. A request
/// whose end the operation pushes from `t` to the operation's end is charged the phases'
/// overlaps with `[t, end)`.
///
/// A wait for the die is kept as one stretch with the die's [`Occupants`] at the time, and
/// split between them only when the phases are read ([`Phases::charge`],
/// [`Phases::holder`]): most operations' phases are never read (only an operation that
/// pushes a request's end is charged), so placing one stays a few stores.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Phases {
    occupants: Occupants,
    stretches: [Stretch; Phases::STRETCHES],
    len: usize,
}

/// One stretch of an operation's time, `[start, end)` (empty if `start >= end`): what it
/// was, or `None` for a wait for the die, split between the die's occupants.
pub type Stretch = (u64, u64, Option<Part>);

impl Default for Phases {
    fn default() -> Self {
        Phases {
            occupants: Occupants::default(),
            stretches: [(0, 0, None); Phases::STRETCHES],
            len: 0,
        }
    }
}

impl Phases {
    /// Stretches per operation: a wait and three service phases (a multi-plane read's
    /// second wait takes the place of its channel wait).
    const STRETCHES: usize = 4;

    /// The phases of an operation: its `stretches` in order, its waits for the die split
    /// between `occupants`.
    #[inline(always)]
    pub fn set<const N: usize>(&mut self, occupants: &Occupants, stretches: [Stretch; N]) {
        self.occupants = *occupants;
        self.stretches[..N].copy_from_slice(&stretches);
        self.len = N;
    }

    /// Each non-empty stretch that may overlap `[from, to)`, in order, the waits split
    /// between the die's occupants, newest first. (At most seven: a wait split four ways
    /// and three service phases; a multi-plane read's second wait, after the group's
    /// sensing, is behind the die's last occupant only, which began by then.)
    #[inline(always)]
    fn each(&self, from: u64, to: u64, mut f: impl FnMut(u64, u64, Part)) {
        for &(start, end, part) in &self.stretches[..self.len] {
            if start >= end || end <= from || start >= to {
                continue;
            }
            match part {
                Some(part) => f(start, end, part),
                None => self.occupants.split(start, end, &mut f),
            }
        }
    }

    /// What held the operation longest before it ran: the background or foreground work
    /// (a `bg_*` or `fg_*` part) of its longest wait stretch, or `buffer_wait` when it
    /// waited only behind host I/O (for a buffer flush's program: the buffer draining).
    #[inline]
    pub fn holder(&self) -> Part {
        let mut best = (0, Part::BufferWait);
        self.each(0, u64::MAX, |start, end, part| {
            let held = end - start;
            if part.is_stall() && part != Part::QueueHost && held > best.0 {
                best = (held, part);
            }
        });
        best.1
    }

    /// Charges to `parts` the stretch `[from, to)` of a request's time that the operation
    /// (of `cause`) added: each phase's overlap with it, and what no phase covers to
    /// `rest` (`own`-mapped), so that exactly `to - from` is charged.
    /// `service` is what the operation's service phases count as ([`Part::service_of`]).
    #[inline]
    pub fn charge(&self, from: u64, to: u64, service: Option<Part>, rest: Part, parts: &mut Parts) {
        let mut left = to - from;
        self.each(from, to, |start, end, part| {
            let overlap = end.min(to).saturating_sub(start.max(from));
            parts.add(part.own(service), overlap);
            left -= overlap;
        });
        parts.add(rest.own(service), left);
    }
}

/// Who held a die lately: the starts of its last few runs of work of one kind ([`Part`]
/// as [`Part::behind`] names it), newest first, so that a wait for the die is split
/// between them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Occupants {
    start: [u64; Occupants::DEPTH],
    part: [Part; Occupants::DEPTH],
}

impl Default for Occupants {
    fn default() -> Self {
        Occupants {
            start: [0; Occupants::DEPTH],
            part: [Part::QueueHost; Occupants::DEPTH],
        }
    }
}

impl Occupants {
    pub const DEPTH: usize = 4;

    /// The die runs work of kind `part` from `start` on.
    #[inline(always)]
    pub fn occupy(&mut self, part: Part, start: u64) {
        if self.part[0] != part {
            self.start.copy_within(0..Self::DEPTH - 1, 1);
            self.part.copy_within(0..Self::DEPTH - 1, 1);
            self.start[0] = start;
            self.part[0] = part;
        }
    }

    /// The kind of work the die runs last.
    #[inline(always)]
    pub fn last(&self) -> Part {
        self.part[0]
    }

    /// When the die's last occupant began.
    pub fn since(&self) -> u64 {
        self.start[0]
    }

    /// Splits a wait for the die over `[from, to)` between its occupants, newest first:
    /// each its own stretch (given to `f`), the oldest remembered everything before.
    #[inline(always)]
    pub fn split(&self, from: u64, to: u64, mut f: impl FnMut(u64, u64, Part)) {
        let mut end = to;
        for i in 0..Self::DEPTH {
            if end <= from {
                return;
            }
            let start = if i == Self::DEPTH - 1 {
                from
            } else {
                self.start[i].clamp(from, end)
            };
            f(start, end, self.part[i]);
            end = start;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn occupants_split_a_wait_newest_first_and_cover_it() {
        let mut o = Occupants::default();
        o.occupy(Part::QueueHost, 0);
        o.occupy(Part::FgGc, 100);
        o.occupy(Part::FgGc, 150); // same kind: one run
        o.occupy(Part::BgMerge, 300);
        let mut ph = Phases::default();
        ph.set(&o, [(50, 400, None)]);
        let mut parts = Parts::default();
        ph.charge(50, 400, None, Part::Sense, &mut parts);
        assert_eq!(parts[Part::BgMerge as usize], 100);
        assert_eq!(parts[Part::FgGc as usize], 200);
        assert_eq!(parts[Part::QueueHost as usize], 50);
        assert_eq!(parts.iter().sum::<u64>(), 350);
    }

    #[test]
    fn a_stretch_no_phase_covers_goes_to_the_rest() {
        let mut ph = Phases::default();
        ph.set(&Occupants::default(), [(10, 20, Some(Part::Sense))]);
        let mut parts = Parts::default();
        let service = Part::service_of(Cause::Translation, false);
        ph.charge(0, 30, service, Part::Sense, &mut parts);
        assert_eq!(parts[Part::Translation as usize], 30);
    }

    #[test]
    fn held_parts_are_the_non_zero_ones_in_order() {
        let mut parts = Parts::default();
        parts.add(Part::Transfer, 7);
        parts.add(Part::HostInterface, 3);
        parts.add(Part::Sense, 0); // no time: not held
        parts.add(Part::Transfer, 2);
        let held: Vec<_> = parts.held().collect();
        assert_eq!(
            held,
            vec![
                (Part::HostInterface as usize, 3),
                (Part::Transfer as usize, 9)
            ]
        );
        assert_eq!(parts.iter().sum::<u64>(), 12);
        assert_eq!(parts[Part::Sense as usize], 0);
    }

    #[test]
    fn clear_zeroes_the_held_parts() {
        let mut parts = Parts::default();
        parts.add(Part::Sense, 5);
        parts.add(Part::FgMerge, 9);
        parts.clear();
        assert_eq!(parts, Parts::default());
        parts.add(Part::Dram, 4);
        assert_eq!(
            parts.held().collect::<Vec<_>>(),
            vec![(Part::Dram as usize, 4)]
        );
    }

    #[test]
    fn summary_columns_follow_the_parts() {
        assert_eq!(SUMMARY_COLUMNS[0], "read_host_interface_us");
        assert_eq!(SUMMARY_COLUMNS[PART_COUNT], "write_host_interface_us");
        assert_eq!(PARTS[Part::Misprediction as usize], Part::Misprediction);
    }
}
