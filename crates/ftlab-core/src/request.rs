//! Host requests as they come out of a trace reader or a synthetic generator.

/// What the host asks of the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Read,
    Write,
    /// TRIM / discard: the host declares the byte range unused.
    Trim,
}

/// One host request, in bytes and nanoseconds, before it is split into logical pages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Request {
    /// Arrival time in nanoseconds from the start of the trace.
    pub time_ns: u64,
    /// Byte offset on the logical device.
    pub offset_bytes: u64,
    /// Length in bytes (0 is legal and touches no page).
    pub len_bytes: u32,
    pub op: Op,
}

/// A stream of requests: a trace reader or a synthetic workload. Errors carry the
/// position (file and line) of the bad input.
pub type RequestStream<'a> = Box<dyn Iterator<Item = Result<Request, crate::Error>> + Send + 'a>;
