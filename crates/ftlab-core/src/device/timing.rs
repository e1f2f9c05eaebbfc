//! Analytic timing model: every die and every channel keeps the time at which it is next
//! free, and each flash operation is placed at the earliest instant its resources allow.
//! There is no event queue: each operation is a few max/add steps.
//!
//! - A read occupies its die for tR, then the die and its channel for the transfer out. A
//!   program first transfers over the channel (the die must be idle: cache programming is
//!   not modelled), then occupies the die for tPROG. An erase occupies the die for tBERS.
//! - **Multi-plane operations** (`scheduler.multi_plane`): a read or program to the same
//!   page offset as the die's current operation of that kind, on a plane that operation
//!   does not cover yet, joins it as one ONFI multi-plane command: one tR (each plane's
//!   data still crosses the channel) or one tPROG started once every plane's data is in.
//!   A read joins if it was ready when the group's sensing began; a program joins if its
//!   data arrives within one transfer per plane of the group's start (issued back to back).
//! - **Background work** (`scheduler.read_priority`): operations a controller issues on
//!   its own (garbage collection between requests, write-back) are queued per die instead
//!   of placed at once. The queue runs whenever the die has nothing else to do; host
//!   operations go ahead of what is still queued. Deferral is bounded: before a host program
//!   or erase, queued work beyond one block's reclaim (`pages_per_block` x (tR + tPROG) +
//!   tBERS) runs first, so that under sustained writes the die shares its time between host
//!   writes and GC as a real controller must, and free space is never reclaimed on credit.
//!   A queued operation is charged to its die only: a relocation within a plane is a
//!   copy-back (no channel transfer), and the order between a copy's read and its program
//!   is not modelled.
//! - **Program/erase suspend** (`scheduler.suspend`): a host read arriving while its die
//!   programs or erases suspends that operation, pays `suspend_ns`, runs, and the
//!   suspended operation resumes where it stopped (it ends later by the read's time).
//!
//! With `read_priority`, `suspend` and `multi_plane` off the model is the plain FIFO one:
//! every operation placed on its die and channel in the order the FTL issues it.

use crate::device::breakdown::{Occupants, Part, Phases};
use crate::device::geometry::Layout;
use crate::device::geometry::Nand;
use crate::device::DeviceConfig;
use crate::units;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// How the controller orders flash operations on a die.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SchedulerConfig {
    /// Host reads go ahead of queued background work (GC, write-back) on their die.
    pub read_priority: bool,
    /// A host read arriving while its die programs or erases suspends that operation
    /// (program/erase suspend), paying `suspend_ns`; the suspended operation resumes after.
    pub suspend: bool,
    /// Cost of one suspension (suspend plus resume), in ns.
    #[serde(with = "units::nanos")]
    pub suspend_ns: u64,
    /// Reads and programs to the same page offset on different planes of one die, issued
    /// back to back, run as one multi-plane operation (one tR or tPROG).
    pub multi_plane: bool,
}

impl Default for SchedulerConfig {
    fn default() -> Self {
        SchedulerConfig {
            read_priority: true,
            suspend: true,
            suspend_ns: 20_000,
            multi_plane: true,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Idle,
    Read,
    Program,
    Erase,
}

/// Background work waiting for its die.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Queued {
    ready: u64,
    duration: u64,
    kind: Kind,
    /// What a request waiting behind it waits behind.
    class: Part,
}

/// One die: when it is next free, the operation it runs last (for suspension and
/// multi-plane joins) and its queue of background work.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Die {
    free: u64,
    kind: Kind,
    /// Start of the last operation's array phase (sensing, programming or erasing).
    start: u64,
    /// Page offset and planes of the last operation (multi-plane joins).
    offset: u32,
    planes: u64,
    /// The last operation is the die's only committed work after `start` (so it may be
    /// suspended or joined).
    joinable: bool,
    queue: VecDeque<Queued>,
    /// Total duration of the queued work.
    queued_ns: u64,
    busy_ns: u64,
    /// Times the queue ran empty (see [`Timeline::background_busy_until`]).
    drained: u64,
    /// Who held the die lately (a wait for it is charged to them).
    occupants: Occupants,
}

impl Die {
    /// Whether a foreground read of the plane `plane` (a bit) ready at `ready` would follow
    /// the die's last operation (starting when both are there) rather than join it as a
    /// multi-plane read or suspend it, whatever the page offsets.
    #[inline]
    fn read_follows(&self, plane: u64, ready: u64) -> bool {
        let joins = self.kind == Kind::Read && self.planes & plane == 0;
        let suspends = matches!(self.kind, Kind::Program | Kind::Erase)
            && self.start <= ready
            && ready < self.free;
        !joins && !suspends
    }

    /// Whether a foreground program of the plane `plane` (a bit) would follow the die's last
    /// operation rather than join it as a multi-plane program, whatever the page offsets.
    #[inline]
    fn program_follows(&self, plane: u64) -> bool {
        self.kind != Kind::Program || self.planes & plane != 0
    }

    /// Records the die's new last operation: it is busy until `free` with a `kind` whose
    /// array phase began at `start`, at page `offset` of the planes `planes` (what a later
    /// operation may join or suspend while `joinable`).
    #[inline(always)]
    fn runs(
        &mut self,
        kind: Kind,
        start: u64,
        free: u64,
        offset: u32,
        planes: u64,
        joinable: bool,
    ) {
        self.free = free;
        self.kind = kind;
        self.start = start;
        self.offset = offset;
        self.planes = planes;
        self.joinable = joinable;
    }

    fn new() -> Self {
        Die {
            free: 0,
            kind: Kind::Idle,
            start: 0,
            offset: 0,
            planes: 0,
            joinable: false,
            queue: VecDeque::new(),
            queued_ns: 0,
            busy_ns: 0,
            drained: 0,
            occupants: Occupants::default(),
        }
    }
}

/// Scheduling counters.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct SchedulerStats {
    /// Reads that joined another plane's read as one multi-plane read.
    pub multi_plane_reads: u64,
    /// Programs that joined another plane's program as one multi-plane program.
    pub multi_plane_programs: u64,
    /// Programs or erases suspended by a host read.
    pub suspensions: u64,
    /// Operations queued as background work.
    pub background_operations: u64,
}

/// The state of every die and channel (comparable, so that tests can check that two ways
/// of issuing the same operations leave the same state).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Timeline {
    dies: Vec<Die>,
    channel_free: Vec<u64>,
    read_ns: u64,
    program_ns: u64,
    erase_ns: u64,
    /// tR, tPROG and tBERS of a block in SLC mode ([`Place::slc`]).
    slc_ns: [u64; 3],
    /// Channel time to move one page with its OOB.
    transfer_ns: u64,
    read_priority: bool,
    /// Queued background work a host program or erase may overtake, per die.
    defer_limit_ns: u64,
    suspend: bool,
    suspend_ns: u64,
    multi_plane: bool,
    /// Times a die's background queue ran empty (see [`Timeline::background_busy_until`]).
    drained: u64,
    pub stats: SchedulerStats,
    /// Per channel, what its last transfer was ([`Part::behind`]).
    channel_last: Vec<Part>,
    /// What the operations placed from now on are, for those who wait behind them
    /// ([`Timeline::set_class`]).
    class: Part,
    /// The phases of the last foreground operation placed ([`Timeline::phases`]).
    phases: Phases,
}

/// When an operation's phases end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Span {
    /// The data crossed the channel (for a program: the host buffer slot is free again).
    pub transferred: u64,
    /// The operation is complete.
    pub done: u64,
}

/// When the operations of a run of page copies ended ([`Timeline::copy_run`]): the
/// latest a read and a program of the run ended (each run's operations end in order).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CopyRun {
    pub read_done: u64,
    pub program: Span,
}

/// Where an operation takes place.
#[derive(Clone, Copy, Debug)]
pub struct Place {
    pub die: u32,
    pub channel: u32,
    pub plane: u32,
    /// Page offset within the block (multi-plane operations need equal offsets).
    pub offset: u32,
    /// The block is in SLC mode: its own tR, tPROG and tBERS, and no multi-plane
    /// operation with it (a group shares one array time).
    pub slc: bool,
}

/// Books a channel transfer of `len` ns that starts at `start` (at or after the channel's
/// free instant); returns its end. The channel keeps only the instant it is next free, so a
/// transfer that starts after a gap (its die was busy until then) leaves the gap open to
/// other dies' transfers instead of closing the channel until its end: a program waiting
/// behind a die's long backlog must not hold the channel its sibling dies share. (Such a
/// transfer may overlap one placed in the gap later by at most its own length.) With
/// `keep_gaps` false (the plain FIFO model, `read_priority` off) every transfer books the
/// channel to its end, as before 0.2.
#[inline]
fn book_channel(channel_free: &mut u64, start: u64, len: u64, keep_gaps: bool) -> u64 {
    if start <= *channel_free || !keep_gaps {
        *channel_free = start + len;
    }
    start + len
}

/// One block's whole reclaim: every page read and programmed, then the block erased.
pub fn block_reclaim_ns(nand: &Nand, layout: &Layout) -> u64 {
    layout.pages_per_block as u64 * (nand.read_latency_ns + nand.program_latency_ns)
        + nand.erase_latency_ns
}

impl Timeline {
    pub fn new(cfg: &DeviceConfig, layout: &Layout) -> Self {
        let bytes = layout.page_size as u128 + layout.oob_size as u128;
        let transfer_ns =
            (bytes * 1_000_000_000).div_ceil(cfg.nand.channel_bytes_per_s as u128) as u64;
        let s = &cfg.scheduler;
        Timeline {
            dies: vec![Die::new(); layout.dies as usize],
            channel_free: vec![0; layout.channels as usize],
            read_ns: cfg.nand.read_latency_ns,
            program_ns: cfg.nand.program_latency_ns,
            erase_ns: cfg.nand.erase_latency_ns,
            slc_ns: [
                cfg.slc.read_latency_ns,
                cfg.slc.program_latency_ns,
                cfg.slc.erase_latency_ns,
            ],
            transfer_ns,
            read_priority: s.read_priority,
            defer_limit_ns: block_reclaim_ns(&cfg.nand, layout),
            suspend: s.suspend,
            suspend_ns: s.suspend_ns,
            multi_plane: s.multi_plane && layout.planes_per_die > 1,
            drained: 0,
            stats: SchedulerStats::default(),
            channel_last: vec![Part::QueueHost; layout.channels as usize],
            class: Part::QueueHost,
            phases: Phases::default(),
        }
    }

    /// What the operations placed from now on are, for the requests that wait behind them
    /// ([`Part::behind`]).
    #[inline(always)]
    pub fn set_class(&mut self, class: Part) {
        self.class = class;
    }

    /// The dies' and channels' state without the phases of the last operation placed:
    /// those are that operation's account (one bulk run has one, the same pages placed one
    /// by one have one each), not the device's state, which is what tests compare.
    pub fn device_state(&self) -> Timeline {
        Timeline {
            phases: Phases::default(),
            ..self.clone()
        }
    }

    /// The phases of the last foreground read, program or erase placed, from its ready
    /// time to its end (see [`crate::device::breakdown`]).
    #[inline(always)]
    pub fn phases(&self) -> &Phases {
        &self.phases
    }

    /// Starts the queued background work of die `d` that the die reaches before `t`
    /// (everything, with `t = u64::MAX`), and beyond that whatever exceeds `keep_ns`.
    #[inline]
    fn run_queue(&mut self, d: usize, t: u64, keep_ns: u64) {
        let die = &mut self.dies[d];
        while let Some(q) = die.queue.front() {
            let start = die.free.max(q.ready);
            if start >= t && die.queued_ns <= keep_ns {
                break;
            }
            die.queued_ns -= q.duration;
            die.free = start + q.duration;
            die.busy_ns += q.duration;
            die.occupants.occupy(q.class, start);
            die.kind = q.kind;
            die.start = start;
            die.planes = 0;
            die.joinable = true;
            die.queue.pop_front();
            if die.queue.is_empty() {
                die.drained += 1;
                self.drained += 1;
            }
        }
    }

    #[inline]
    fn enqueue(&mut self, d: usize, ready: u64, duration: u64, kind: Kind) -> Span {
        self.stats.background_operations += 1;
        self.dies[d].queued_ns += duration;
        self.dies[d].queue.push_back(Queued {
            ready,
            duration,
            kind,
            class: self.class,
        });
        Span {
            transferred: ready,
            done: ready,
        }
    }

    /// Places a read; a foreground one leaves its phases ([`Timeline::phases`]).
    #[inline(always)]
    pub fn read(&mut self, at: Place, ready: u64, background: bool) -> Span {
        self.place_read::<true>(at, ready, background)
    }

    /// Places a program; a foreground one leaves its phases ([`Timeline::phases`]).
    #[inline(always)]
    pub fn program(&mut self, at: Place, ready: u64, background: bool) -> Span {
        self.place_program::<true>(at, ready, background)
    }

    // Always inlined: the flash's read and program are the simulator's hottest path.
    // `PHASES` false: the caller times a run of operations as a whole and needs no phases
    // (building them is most of the breakdown's cost where merges copy page by page).
    #[inline(always)]
    fn place_read<const PHASES: bool>(&mut self, at: Place, ready: u64, background: bool) -> Span {
        let d = at.die as usize;
        let read_ns = if at.slc { self.slc_ns[0] } else { self.read_ns };
        if background && self.read_priority {
            return self.enqueue(d, ready, read_ns, Kind::Read);
        }
        if self.read_priority {
            self.run_queue(d, ready, u64::MAX);
        }
        let plane = 1u64 << (at.plane & 63);
        let transfer_ns = self.transfer_ns;
        let keep_gaps = self.read_priority;
        let die = &mut self.dies[d];
        let channel_free = &mut self.channel_free[at.channel as usize];
        // Non-short-circuit `&`: one branch on the outcome, not one per condition.
        if self.multi_plane
            & die.joinable
            & (die.kind == Kind::Read)
            & (die.offset == at.offset)
            & (die.planes & plane == 0)
            & (ready <= die.start)
            & !background
            & !at.slc
        {
            // One more plane of a multi-plane read: sensed with the group, then out.
            let sensed = die.start + self.read_ns;
            let start = sensed.max(*channel_free).max(die.free);
            if PHASES {
                // The wait after the group's sensing is behind its last occupant only.
                debug_assert!(die.occupants.since() <= die.start);
                self.phases.set(
                    &die.occupants,
                    [
                        (ready, die.start, None),
                        (die.start.max(ready), sensed, Some(Part::Sense)),
                        (sensed, start, None),
                        (start, start + transfer_ns, Some(Part::Transfer)),
                    ],
                );
            }
            let done = book_channel(channel_free, start, transfer_ns, keep_gaps);
            die.busy_ns += done - die.free.max(sensed);
            die.free = done;
            die.planes |= plane;
            self.stats.multi_plane_reads += 1;
            return Span {
                transferred: done,
                done,
            };
        }
        if self.suspend
            && !background
            && die.joinable
            && matches!(die.kind, Kind::Program | Kind::Erase)
            && die.start <= ready
            && ready < die.free
        {
            // Suspend the program or erase in progress, read, resume.
            let sensed = ready + self.suspend_ns + read_ns;
            let out = sensed.max(*channel_free);
            if PHASES {
                let suspended = ready + self.suspend_ns;
                self.phases.set(
                    &die.occupants,
                    [
                        (ready, suspended, Some(Part::Suspension)),
                        (suspended, sensed, Some(Part::Sense)),
                        (sensed, out, Some(self.channel_last[at.channel as usize])),
                        (out, out + transfer_ns, Some(Part::Transfer)),
                    ],
                );
            }
            let done = book_channel(channel_free, out, transfer_ns, keep_gaps);
            let held = done - ready;
            die.free += held;
            die.busy_ns += held;
            self.stats.suspensions += 1;
            return Span {
                transferred: done,
                done,
            };
        }
        let start = ready.max(die.free);
        let sensed = start + read_ns;
        let out = sensed.max(*channel_free);
        let channel_last = &mut self.channel_last[at.channel as usize];
        if PHASES && !background {
            self.phases.set(
                &die.occupants,
                [
                    (ready, start, None),
                    (start, sensed, Some(Part::Sense)),
                    (sensed, out, Some(*channel_last)),
                    (out, out + transfer_ns, Some(Part::Transfer)),
                ],
            );
        }
        let done = book_channel(channel_free, out, transfer_ns, keep_gaps);
        die.occupants.occupy(self.class, start);
        *channel_last = self.class;
        die.busy_ns += done - start;
        die.runs(
            Kind::Read,
            start,
            done,
            at.offset,
            plane,
            !background & !at.slc,
        );
        Span {
            transferred: done,
            done,
        }
    }

    #[inline(always)]
    fn place_program<const PHASES: bool>(
        &mut self,
        at: Place,
        ready: u64,
        background: bool,
    ) -> Span {
        let d = at.die as usize;
        let program_ns = if at.slc {
            self.slc_ns[1]
        } else {
            self.program_ns
        };
        if background && self.read_priority {
            return self.enqueue(d, ready, program_ns, Kind::Program);
        }
        if self.read_priority {
            self.run_queue(d, ready, self.defer_limit_ns);
        }
        let plane = 1u64 << (at.plane & 63);
        let transfer_ns = self.transfer_ns;
        let keep_gaps = self.read_priority;
        let die = &mut self.dies[d];
        let channel_free = &mut self.channel_free[at.channel as usize];
        // Non-short-circuit `&`: one branch on the outcome, not one per condition.
        if self.multi_plane
            & die.joinable
            & (die.kind == Kind::Program)
            & (die.offset == at.offset)
            & (die.planes & plane == 0)
            & !background
            & !at.slc
        {
            // After the group's last transfer (`die.start`): the channel need not say so
            // when that transfer began after a gap (`book_channel` keeps gaps open).
            let begin = ready.max(*channel_free).max(die.start);
            let transferred = begin + transfer_ns;
            let window = transfer_ns * die.planes.count_ones() as u64;
            if transferred <= die.start + window {
                // The group's tPROG starts once this plane's data is in too.
                book_channel(channel_free, begin, transfer_ns, keep_gaps);
                // (A suspension may already have pushed the group's end further.)
                let done = (transferred + program_ns).max(die.free);
                if PHASES {
                    self.phases.set(
                        &die.occupants,
                        [
                            (ready, begin, Some(self.channel_last[at.channel as usize])),
                            (begin, transferred, Some(Part::Transfer)),
                            (transferred, done, Some(Part::Program)),
                        ],
                    );
                }
                die.busy_ns += done - die.free;
                die.free = done;
                die.start = transferred;
                die.planes |= plane;
                self.stats.multi_plane_programs += 1;
                return Span { transferred, done };
            }
        }
        let begin = ready.max(die.free).max(*channel_free);
        let channel_last = &mut self.channel_last[at.channel as usize];
        if PHASES && !background {
            let die_free = die.free.clamp(ready, begin);
            let transferred = begin + transfer_ns;
            self.phases.set(
                &die.occupants,
                [
                    (ready, die_free, None),
                    (die_free, begin, Some(*channel_last)),
                    (begin, transferred, Some(Part::Transfer)),
                    (transferred, transferred + program_ns, Some(Part::Program)),
                ],
            );
        }
        die.occupants.occupy(self.class, begin);
        *channel_last = self.class;
        let transferred = book_channel(channel_free, begin, transfer_ns, keep_gaps);
        let done = transferred + program_ns;
        die.busy_ns += done - begin;
        die.runs(
            Kind::Program,
            transferred,
            done,
            at.offset,
            plane,
            !background & !at.slc,
        );
        Span { transferred, done }
    }

    #[inline]
    pub fn erase(&mut self, die: u32, slc: bool, ready: u64, background: bool) -> Span {
        let d = die as usize;
        let erase_ns = if slc { self.slc_ns[2] } else { self.erase_ns };
        if background && self.read_priority {
            return self.enqueue(d, ready, erase_ns, Kind::Erase);
        }
        if self.read_priority {
            self.run_queue(d, ready, self.defer_limit_ns);
        }
        let die = &mut self.dies[d];
        let start = ready.max(die.free);
        let done = start + erase_ns;
        if !background {
            self.phases.set(
                &die.occupants,
                [(ready, start, None), (start, done, Some(Part::Erase))],
            );
        }
        die.occupants.occupy(self.class, start);
        die.busy_ns += erase_ns;
        die.free = done;
        die.kind = Kind::Erase;
        die.start = start;
        die.planes = 0;
        die.joinable = true;
        Span {
            transferred: done,
            done,
        }
    }

    /// Times `count` page copies from one parallel unit to another (or to itself): each a
    /// read at `src`, ready at `ready`, then a program at `dst`, ready when its read is done,
    /// exactly as `count` calls of [`Timeline::read`] and [`Timeline::program`] in turn
    /// would. `src` and `dst` hold the first copy's page offsets, `last` the last copy's
    /// (source, destination) offsets; the others do not matter, because after the first
    /// copy each die's last operation is one of the run's, on the run's own plane, which
    /// no later one can join as a multi-plane operation. As soon as the dies are in a state
    /// from which every copy repeats the one before ([`Timeline::steady_copies`]; often
    /// from the start, when the run follows another) the rest of the run is computed in
    /// closed form, so that a block's worth of copies costs about as much as one.
    pub fn copy_run(
        &mut self,
        src: Place,
        dst: Place,
        last: (u32, u32),
        count: u32,
        ready: u64,
        background: bool,
    ) -> CopyRun {
        debug_assert!(count > 0);
        let first = (src, dst);
        let src = Place {
            offset: last.0,
            ..src
        };
        let dst = Place {
            offset: last.1,
            ..dst
        };
        if let Some(run) = self.steady_copies(src, dst, count as u64, ready, background) {
            return run;
        }
        let read = self.place_read::<false>(first.0, ready, background);
        let program = self.place_program::<false>(first.1, read.done, background);
        let mut run = CopyRun {
            read_done: read.done,
            program,
        };
        let mut left = count as u64 - 1;
        while left > 0 {
            let (read_done, program) = match self.steady_copies(src, dst, left, ready, background) {
                Some(rest) => {
                    left = 0;
                    (rest.read_done, rest.program)
                }
                None => {
                    left -= 1;
                    let read = self.place_read::<false>(src, ready, background);
                    let program = self.place_program::<false>(dst, read.done, background);
                    (read.done, program)
                }
            };
            run.read_done = run.read_done.max(read_done);
            run.program.transferred = run.program.transferred.max(program.transferred);
            run.program.done = run.program.done.max(program.done);
        }
        run
    }

    /// Times `count` programs on one plane, all ready at `ready`, at increasing page offsets
    /// from `at`'s to `last`, exactly as `count` calls of [`Timeline::program`] would; returns
    /// the latest end of a transfer and of a program. As in [`Timeline::copy_run`], only the
    /// first program can join another, and the rest is computed in closed form once it
    /// cannot ([`Timeline::steady_programs`]).
    pub fn program_run(
        &mut self,
        at: Place,
        last: u32,
        count: u32,
        ready: u64,
        background: bool,
    ) -> Span {
        debug_assert!(count > 0);
        let first = at;
        let at = Place { offset: last, ..at };
        if let Some(span) = self.steady_programs(at, count as u64, ready, background) {
            return span;
        }
        let mut run = self.place_program::<false>(first, ready, background);
        let mut left = count as u64 - 1;
        while left > 0 {
            let span = match self.steady_programs(at, left, ready, background) {
                Some(rest) => {
                    left = 0;
                    rest
                }
                None => {
                    left -= 1;
                    self.place_program::<false>(at, ready, background)
                }
            };
            run.transferred = run.transferred.max(span.transferred);
            run.done = run.done.max(span.done);
        }
        run
    }

    /// The next `k` programs of a run ([`Timeline::program_run`]) in closed form, if each
    /// would follow the one before on the die (no background work, the first cannot join
    /// the die's last operation) with the channel free when its transfer may start: each
    /// then takes a transfer and tPROG.
    fn steady_programs(&mut self, at: Place, k: u64, ready: u64, background: bool) -> Option<Span> {
        let d = at.die as usize;
        let plane = 1u64 << (at.plane & 63);
        let die = &self.dies[d];
        if background || at.slc || !die.queue.is_empty() || !die.program_follows(plane) {
            return None;
        }
        let start = ready.max(die.free);
        let channel = self.channel_free[at.channel as usize];
        let channel_ok = if self.read_priority {
            start > channel
        } else {
            start >= channel
        };
        if !channel_ok {
            return None;
        }
        let period = self.transfer_ns + self.program_ns;
        let done = start + k * period;
        let transferred = done - self.program_ns;
        let die = &mut self.dies[d];
        die.occupants.occupy(self.class, start);
        die.busy_ns += k * period;
        die.runs(Kind::Program, transferred, done, at.offset, plane, true);
        if !self.read_priority {
            self.channel_free[at.channel as usize] = transferred;
        }
        // As each program placed alone: the channel's last user is this run's class.
        self.channel_last[at.channel as usize] = self.class;
        Some(Span { transferred, done })
    }

    /// The next `k` copies of a run ([`Timeline::copy_run`]) in closed form, if the dies
    /// and channels are in a state from which each copy repeats the one before, shifted in
    /// time: no background work (queued or issued), the dies' last operations such that no
    /// read can suspend or join one and no program join one (whatever the page offsets),
    /// and channels free when each transfer may start (with
    /// `read_priority` a channel's free instant then stays where it is, without it follows
    /// the transfers). Otherwise None: the caller issues the next copy as it is.
    /// - One die: read and program alternate, a copy takes tR + 2 transfers + tPROG.
    /// - Two dies: the reads follow one another every tR + transfer on the source die,
    ///   the programs every transfer + tPROG on the destination die, and the slower of the
    ///   two sets the pace once the faster is not behind it.
    fn steady_copies(
        &mut self,
        src: Place,
        dst: Place,
        k: u64,
        ready: u64,
        background: bool,
    ) -> Option<CopyRun> {
        let (s, d) = (src.die as usize, dst.die as usize);
        if background
            || src.slc
            || dst.slc
            || !self.dies[s].queue.is_empty()
            || !self.dies[d].queue.is_empty()
        {
            return None;
        }
        let (t_read, t_prog, xfer) = (self.read_ns, self.program_ns, self.transfer_ns);
        let keep_gaps = self.read_priority;
        let (cs, cd) = (src.channel as usize, dst.channel as usize);
        let src_plane = 1u64 << (src.plane & 63);
        let dst_plane = 1u64 << (dst.plane & 63);
        if s == d {
            debug_assert_eq!(cs, cd, "one die, one channel");
            let die = &self.dies[d];
            // When the first read starts.
            let start = ready.max(die.free);
            let channel = self.channel_free[cd];
            // The first read follows the die's last operation (then each program follows a
            // read, and each read a program that began after `ready`), and the channel is
            // free once each read is sensed.
            let channel_ok = if keep_gaps {
                start + t_read > channel
            } else {
                start + t_read >= channel
            };
            if !die.read_follows(src_plane, ready) || !channel_ok {
                return None;
            }
            let period = t_read + 2 * xfer + t_prog;
            let done = start + k * period;
            let transferred = done - t_prog;
            let die = &mut self.dies[d];
            die.occupants.occupy(self.class, start);
            die.busy_ns += k * period;
            die.runs(
                Kind::Program,
                transferred,
                done,
                dst.offset,
                dst_plane,
                true,
            );
            if !keep_gaps {
                self.channel_free[cd] = transferred;
            }
            self.channel_last[cd] = self.class;
            return Some(CopyRun {
                read_done: transferred - xfer,
                program: Span { transferred, done },
            });
        }
        let (sd, dd) = (&self.dies[s], &self.dies[d]);
        // When the first read starts (each later one when the one before is done), and when
        // the destination die is free.
        let (read_free, free) = (ready.max(sd.free), dd.free);
        // The first read and program follow the dies' last operations (then each read
        // follows a read of its plane, each program a program of its plane).
        if !sd.read_follows(src_plane, ready) || !dd.program_follows(dst_plane) {
            return None;
        }
        let channels_ok = if keep_gaps {
            read_free + t_read > self.channel_free[cs] && free > self.channel_free[cd]
        } else {
            // Each transfer moves its channel's free instant: separate channels only.
            cs != cd && read_free + t_read >= self.channel_free[cs] && free >= self.channel_free[cd]
        };
        if !channels_ok {
            return None;
        }
        let (r, q) = (t_read + xfer, xfer + t_prog);
        let read_done = read_free + k * r;
        let done = if r <= q && read_free + r <= free {
            // Each program waits for the die, its read being done already.
            free + k * q
        } else if r >= q && read_free + r >= free {
            // Each program waits for its read.
            read_done + q
        } else {
            return None;
        };
        let sd = &mut self.dies[s];
        sd.occupants.occupy(self.class, read_free);
        sd.busy_ns += k * r;
        sd.runs(
            Kind::Read,
            read_done - r,
            read_done,
            src.offset,
            src_plane,
            true,
        );
        let dd = &mut self.dies[d];
        // The first program begins when both its read and the die are done.
        dd.occupants.occupy(self.class, free.max(read_free + r));
        dd.busy_ns += k * q;
        dd.runs(
            Kind::Program,
            done - t_prog,
            done,
            dst.offset,
            dst_plane,
            true,
        );
        if !keep_gaps {
            self.channel_free[cs] = read_done;
            self.channel_free[cd] = done - t_prog;
        }
        self.channel_last[cs] = self.class;
        self.channel_last[cd] = self.class;
        Some(CopyRun {
            read_done,
            program: Span {
                transferred: done - t_prog,
                done,
            },
        })
    }

    /// Whether die `die` still has queued background work at time `t` that has not started:
    /// background GC waits for it rather than pile more on (it runs in idle time).
    pub fn background_busy(&mut self, die: u32, t: u64) -> bool {
        let d = die as usize;
        self.run_queue(d, t, u64::MAX);
        !self.dies[d].queue.is_empty()
    }

    /// The earliest instant at which die `die` may have started all its queued background
    /// work, if it has any: until then [`Timeline::background_busy`] holds. Each item starts
    /// no earlier than the one before it ended, so the last one starts at least the queued
    /// durations but its own after the first one's start. Until the queue runs empty
    /// ([`Timeline::die_drained`]) this only grows: the die's free time never goes back, and
    /// new work joins the end of the queue.
    pub fn background_busy_until(&self, die: u32) -> Option<u64> {
        let die = &self.dies[die as usize];
        let first = die.queue.front()?;
        let last = die.queue.back()?;
        Some(die.free.max(first.ready) + die.queued_ns - last.duration)
    }

    /// When die `die` is done with the operations placed on it.
    pub fn die_free(&self, die: u32) -> u64 {
        self.dies[die as usize].free
    }

    /// How many times a die's background queue has run empty.
    pub fn drained(&self) -> u64 {
        self.drained
    }

    /// How many times die `die`'s background queue has run empty.
    pub fn die_drained(&self, die: u32) -> u64 {
        self.dies[die as usize].drained
    }

    pub fn transfer_ns(&self) -> u64 {
        self.transfer_ns
    }

    /// Runs every die's queued background work to its end; returns when the last die is
    /// done.
    pub fn settle(&mut self) -> u64 {
        (0..self.dies.len()).for_each(|d| self.run_queue(d, u64::MAX, 0));
        self.dies.iter().map(|d| d.free).max().unwrap_or(0)
    }

    /// Work given to each die so far, in ns: what it has done or started, and the
    /// background work queued on it (after [`Timeline::settle`], what it did in all).
    /// Queued work counts as soon as it is queued, so the figure does not depend on when
    /// the queue happens to be looked at.
    pub fn die_work_ns(&self) -> impl Iterator<Item = u64> + '_ {
        self.dies.iter().map(|d| d.busy_ns + d.queued_ns)
    }
}
