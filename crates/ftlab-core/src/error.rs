//! The one error type of the core. Every variant says what went wrong and where.

use std::fmt;
use std::path::PathBuf;

#[derive(Debug, Clone, PartialEq)]
pub enum Error {
    /// A configuration key with a bad or impossible value, or an unknown key.
    Config { key: String, message: String },
    /// A malformed trace line or record.
    Trace {
        file: PathBuf,
        line: u64,
        message: String,
    },
    /// An I/O failure opening or reading a file.
    Io { file: PathBuf, message: String },
    /// The FTL asked the flash for something real NAND refuses.
    Nand(NandError),
    /// Verification mode found a read that returned the wrong data.
    Verify {
        request: u64,
        lpa: u64,
        expected: String,
        served: String,
    },
    /// A request addresses pages beyond the logical capacity of the device.
    OutOfRange {
        request: u64,
        lpa: u64,
        logical_pages: u64,
    },
    /// The FTL cannot find space for a write (over-provisioning exhausted).
    DeviceFull { message: String },
    /// The device refused a write its interface does not allow (an overwrite of an
    /// append-only AMF segment). The device is unchanged: the host may carry on.
    Refused { message: String },
    /// Anything else a caller did wrong (unknown scheme, preset or workload name).
    Usage(String),
}

pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    pub fn config(key: impl Into<String>, message: impl Into<String>) -> Self {
        Error::Config {
            key: key.into(),
            message: message.into(),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Config { key, message } => write!(f, "configuration key `{key}`: {message}"),
            Error::Trace {
                file,
                line,
                message,
            } => write!(f, "{}:{line}: {message}", file.display()),
            Error::Io { file, message } => write!(f, "{}: {message}", file.display()),
            Error::Nand(e) => write!(f, "NAND rule violated: {e}"),
            Error::Verify {
                request,
                lpa,
                expected,
                served,
            } => write!(
                f,
                "verification failed at request #{request}: logical page {lpa} should hold {expected} but the FTL served {served}"
            ),
            Error::OutOfRange {
                request,
                lpa,
                logical_pages,
            } => write!(
                f,
                "request #{request} addresses logical page {lpa}, beyond the device's {logical_pages} logical pages \
                 (use a larger device or address compaction)"
            ),
            Error::DeviceFull { message } => write!(f, "device full: {message}"),
            Error::Refused { message } => write!(f, "write refused by the device: {message}"),
            Error::Usage(m) => write!(f, "{m}"),
        }
    }
}

impl std::error::Error for Error {}

impl From<NandError> for Error {
    fn from(e: NandError) -> Self {
        Error::Nand(e)
    }
}

/// A NAND rule the FTL broke (pages and blocks by their physical number; the device
/// model, `device::nand`, raises it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NandError {
    AddressOutOfRange {
        ppn: u64,
    },
    BlockOutOfRange {
        block: u64,
    },
    ProgramNotErased {
        ppn: u32,
    },
    ProgramOutOfOrder {
        ppn: u32,
        expected_page: u32,
    },
    /// Ascending order: a page at or below the block's highest programmed page.
    ProgramBelowHighest {
        ppn: u32,
        lowest_page: u32,
    },
    OobTooLarge {
        ppn: u32,
        bytes: usize,
        limit: usize,
    },
    ReadErased {
        ppn: u32,
    },
    InvalidateNotValid {
        ppn: u32,
    },
    EraseWithValidPages {
        block: u32,
        valid: u32,
    },
    /// A page beyond those its block holds in its mode (an SLC-mode block holds fewer).
    ProgramBeyondCapacity {
        ppn: u32,
        pages: u32,
    },
    /// A block's mode (SLC or native) changed while it holds programmed pages.
    ModeNotErased {
        block: u32,
    },
    /// A retired (bad) block programmed, erased or its mode changed.
    RetiredBlock {
        block: u32,
    },
    /// A block retired while it still holds valid pages (which would lose data).
    RetireWithValidPages {
        block: u32,
        valid: u32,
    },
}

impl fmt::Display for NandError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NandError::AddressOutOfRange { ppn } => write!(f, "physical page {ppn} does not exist"),
            NandError::BlockOutOfRange { block } => write!(f, "block {block} does not exist"),
            NandError::ProgramNotErased { ppn } => {
                write!(f, "page {ppn} programmed twice without an erase")
            }
            NandError::ProgramOutOfOrder { ppn, expected_page } => write!(
                f,
                "page {ppn} programmed out of order: the block's next page is offset {expected_page}"
            ),
            NandError::ProgramBelowHighest { ppn, lowest_page } => write!(
                f,
                "page {ppn} programmed below a higher programmed page of its block (ascending \
                 order: the next page must be at offset {lowest_page} or above)"
            ),
            NandError::OobTooLarge { ppn, bytes, limit } => write!(
                f,
                "page {ppn} programmed with {bytes} extra OOB bytes, more than the {limit} available"
            ),
            NandError::ReadErased { ppn } => write!(f, "page {ppn} read while erased"),
            NandError::InvalidateNotValid { ppn } => {
                write!(f, "page {ppn} invalidated but it holds no valid data")
            }
            NandError::EraseWithValidPages { block, valid } => write!(
                f,
                "block {block} erased while it still holds {valid} valid pages (data loss)"
            ),
            NandError::ProgramBeyondCapacity { ppn, pages } => write!(
                f,
                "page {ppn} programmed beyond the {pages} pages its block holds in its mode (SLC)"
            ),
            NandError::ModeNotErased { block } => {
                write!(f, "block {block} switched between SLC and native mode while it holds data")
            }
            NandError::RetiredBlock { block } => write!(
                f,
                "block {block} is retired (a bad block) and may not be programmed, erased or switched"
            ),
            NandError::RetireWithValidPages { block, valid } => write!(
                f,
                "block {block} retired while it still holds {valid} valid pages (data loss)"
            ),
        }
    }
}
