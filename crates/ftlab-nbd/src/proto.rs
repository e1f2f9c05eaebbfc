//! The NBD protocol's wire format (the fixed newstyle handshake, simple and structured
//! replies, the `base:allocation` metadata context), as the protocol document of the NBD
//! project describes it. Everything is big-endian.

use std::io::{self, Read, Write};

pub const NBDMAGIC: u64 = 0x4e42_444d_4147_4943; // "NBDMAGIC"
pub const IHAVEOPT: u64 = 0x4948_4156_454f_5054; // "IHAVEOPT"
pub const REPLY_MAGIC: u64 = 0x0003_e889_0455_65a9;
pub const REQUEST_MAGIC: u32 = 0x2560_9513;
pub const SIMPLE_REPLY_MAGIC: u32 = 0x6744_6698;
pub const STRUCTURED_REPLY_MAGIC: u32 = 0x668e_33ef;

// Handshake flags (server) and client flags.
pub const FLAG_FIXED_NEWSTYLE: u16 = 1;
pub const FLAG_NO_ZEROES: u16 = 2;
pub const FLAG_C_FIXED_NEWSTYLE: u32 = 1;
pub const FLAG_C_NO_ZEROES: u32 = 2;

// Transmission flags.
pub const FLAG_HAS_FLAGS: u16 = 1;
pub const FLAG_READ_ONLY: u16 = 1 << 1;
pub const FLAG_SEND_FLUSH: u16 = 1 << 2;
pub const FLAG_SEND_FUA: u16 = 1 << 3;
pub const FLAG_SEND_TRIM: u16 = 1 << 5;
pub const FLAG_SEND_WRITE_ZEROES: u16 = 1 << 6;
pub const FLAG_CAN_MULTI_CONN: u16 = 1 << 8;

// Options.
pub const OPT_EXPORT_NAME: u32 = 1;
pub const OPT_ABORT: u32 = 2;
pub const OPT_LIST: u32 = 3;
pub const OPT_STARTTLS: u32 = 5;
pub const OPT_INFO: u32 = 6;
pub const OPT_GO: u32 = 7;
pub const OPT_STRUCTURED_REPLY: u32 = 8;
pub const OPT_LIST_META_CONTEXT: u32 = 9;
pub const OPT_SET_META_CONTEXT: u32 = 10;

// Option replies.
pub const REP_ACK: u32 = 1;
pub const REP_SERVER: u32 = 2;
pub const REP_INFO: u32 = 3;
pub const REP_META_CONTEXT: u32 = 4;
pub const REP_ERR_UNSUP: u32 = 1 | 1 << 31;
pub const REP_ERR_INVALID: u32 = 3 | 1 << 31;
pub const REP_ERR_TLS_REQD: u32 = 5 | 1 << 31;
pub const REP_ERR_UNKNOWN: u32 = 6 | 1 << 31;

pub const INFO_EXPORT: u16 = 0;
pub const INFO_BLOCK_SIZE: u16 = 3;

// Commands and their flags.
pub const CMD_READ: u16 = 0;
pub const CMD_WRITE: u16 = 1;
pub const CMD_DISC: u16 = 2;
pub const CMD_FLUSH: u16 = 3;
pub const CMD_TRIM: u16 = 4;
pub const CMD_WRITE_ZEROES: u16 = 6;
pub const CMD_BLOCK_STATUS: u16 = 7;
pub const CMD_FLAG_FUA: u16 = 1;
pub const CMD_FLAG_NO_HOLE: u16 = 2;
pub const CMD_FLAG_REQ_ONE: u16 = 8;

// Structured reply chunks.
pub const REPLY_FLAG_DONE: u16 = 1;
pub const REPLY_TYPE_NONE: u16 = 0;
pub const REPLY_TYPE_OFFSET_DATA: u16 = 1;
pub const REPLY_TYPE_BLOCK_STATUS: u16 = 5;
pub const REPLY_TYPE_ERROR: u16 = (1 << 15) + 1;

/// The one metadata context served: which extents are allocated (`NBD_STATE_HOLE`: never
/// written or trimmed, reads as zeros, `NBD_STATE_ZERO` with it).
pub const BASE_ALLOCATION: &str = "base:allocation";
/// Its context ID on a connection that selected it.
pub const BASE_ALLOCATION_ID: u32 = 1;
/// Extents in one BLOCK_STATUS reply at most (the protocol's recommended limit).
pub const MAX_EXTENTS: usize = 1 << 20;
pub const STATE_HOLE: u32 = 1;
pub const STATE_ZERO: u32 = 2;

// Errors (errno values, as the protocol fixes them).
pub const EPERM: u32 = 1;
pub const EIO: u32 = 5;
pub const EINVAL: u32 = 22;
pub const ENOSPC: u32 = 28;
pub const ENOTSUP: u32 = 95;
pub const ESHUTDOWN: u32 = 108;

/// Largest request payload served (32 MiB, the protocol's customary maximum); a larger
/// WRITE is a protocol error that ends the connection (its payload cannot be trusted).
pub const MAX_PAYLOAD: u32 = 32 << 20;
/// Longest option payload accepted during the handshake.
pub const MAX_OPTION: u32 = 64 << 10;

pub fn read_u16(r: &mut impl Read) -> io::Result<u16> {
    let mut b = [0; 2];
    r.read_exact(&mut b)?;
    Ok(u16::from_be_bytes(b))
}

pub fn read_u32(r: &mut impl Read) -> io::Result<u32> {
    let mut b = [0; 4];
    r.read_exact(&mut b)?;
    Ok(u32::from_be_bytes(b))
}

pub fn read_u64(r: &mut impl Read) -> io::Result<u64> {
    let mut b = [0; 8];
    r.read_exact(&mut b)?;
    Ok(u64::from_be_bytes(b))
}

/// A transmission-phase request header (28 bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RequestHeader {
    pub flags: u16,
    pub kind: u16,
    pub handle: u64,
    pub offset: u64,
    pub length: u32,
}

/// Parses a request header; a bad magic is an error (the stream cannot be resynchronised).
pub fn parse_request(b: &[u8; 28]) -> Result<RequestHeader, String> {
    let magic = u32::from_be_bytes(b[0..4].try_into().unwrap());
    if magic != REQUEST_MAGIC {
        return Err(format!(
            "bad request magic {magic:#010x} (expected {REQUEST_MAGIC:#010x}): not an NBD client, \
             or the stream is corrupt"
        ));
    }
    Ok(RequestHeader {
        flags: u16::from_be_bytes(b[4..6].try_into().unwrap()),
        kind: u16::from_be_bytes(b[6..8].try_into().unwrap()),
        handle: u64::from_be_bytes(b[8..16].try_into().unwrap()),
        offset: u64::from_be_bytes(b[16..24].try_into().unwrap()),
        length: u32::from_be_bytes(b[24..28].try_into().unwrap()),
    })
}

/// A simple reply header (16 bytes).
pub fn simple_reply(error: u32, handle: u64) -> [u8; 16] {
    let mut b = [0; 16];
    b[0..4].copy_from_slice(&SIMPLE_REPLY_MAGIC.to_be_bytes());
    b[4..8].copy_from_slice(&error.to_be_bytes());
    b[8..16].copy_from_slice(&handle.to_be_bytes());
    b
}

/// A structured reply chunk: its 20-byte header, then `payload`.
pub fn structured_reply(flags: u16, kind: u16, handle: u64, payload: &[&[u8]]) -> Vec<u8> {
    let len: usize = payload.iter().map(|p| p.len()).sum();
    let mut b = Vec::with_capacity(20 + len);
    b.extend_from_slice(&STRUCTURED_REPLY_MAGIC.to_be_bytes());
    b.extend_from_slice(&flags.to_be_bytes());
    b.extend_from_slice(&kind.to_be_bytes());
    b.extend_from_slice(&handle.to_be_bytes());
    b.extend_from_slice(&(len as u32).to_be_bytes());
    for p in payload {
        b.extend_from_slice(p);
    }
    b
}

/// The final chunk of a failed request: its errno and a message for the user (at most the
/// protocol's 4096 bytes).
pub fn structured_error(handle: u64, error: u32, message: &str) -> Vec<u8> {
    let mut end = message.len().min(4096);
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    let message = &message.as_bytes()[..end];
    structured_reply(
        REPLY_FLAG_DONE,
        REPLY_TYPE_ERROR,
        handle,
        &[
            &error.to_be_bytes(),
            &(message.len() as u16).to_be_bytes(),
            message,
        ],
    )
}

/// An option reply.
pub fn option_reply(w: &mut impl Write, option: u32, kind: u32, data: &[u8]) -> io::Result<()> {
    let mut b = Vec::with_capacity(20 + data.len());
    b.extend_from_slice(&REPLY_MAGIC.to_be_bytes());
    b.extend_from_slice(&option.to_be_bytes());
    b.extend_from_slice(&kind.to_be_bytes());
    b.extend_from_slice(&(data.len() as u32).to_be_bytes());
    b.extend_from_slice(data);
    w.write_all(&b)
}

/// What the export looks like to a client.
#[derive(Clone, Debug)]
pub struct Export {
    pub name: String,
    pub size: u64,
    pub flags: u16,
    /// Preferred I/O size (the flash page).
    pub block_size: u32,
}

/// What a connection negotiated for its transmission phase.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Session {
    /// Structured replies (`NBD_OPT_STRUCTURED_REPLY`): reads and errors are answered with
    /// chunks.
    pub structured: bool,
    /// `base:allocation` was selected (`NBD_OPT_SET_META_CONTEXT`): BLOCK_STATUS is served.
    pub allocation: bool,
}

/// How the handshake ended.
pub enum Handshake {
    /// Transmission begins, with what was negotiated.
    Go(Session),
    /// STARTTLS was acknowledged: the TLS handshake comes next, then the options again
    /// ([`options`] with [`TlsPhase::Active`]).
    StartTls,
    /// The client left (ABORT, or closed the connection) without an error.
    Left,
}

/// TLS in the handshake.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TlsPhase {
    /// The server has no TLS: STARTTLS is not supported.
    Off,
    /// The server requires TLS and the connection is not encrypted yet: only STARTTLS (and
    /// ABORT) are served.
    Required,
    /// The connection is encrypted.
    Active,
}

/// The server side of the fixed newstyle handshake: [`greet`], then [`options`] (without
/// TLS).
pub fn handshake(
    r: &mut impl Read,
    w: &mut impl Write,
    export: &Export,
) -> Result<Handshake, String> {
    match greet(r, w)? {
        None => Ok(Handshake::Left),
        Some(no_zeroes) => options(r, w, export, no_zeroes, TlsPhase::Off),
    }
}

/// The greeting and the client's flags: whether the client asked for no zeroes after the
/// export's flags (None: it left at once).
pub fn greet(r: &mut impl Read, w: &mut impl Write) -> Result<Option<bool>, String> {
    let io = |e: io::Error| format!("handshake: {e}");
    let mut greeting = Vec::with_capacity(18);
    greeting.extend_from_slice(&NBDMAGIC.to_be_bytes());
    greeting.extend_from_slice(&IHAVEOPT.to_be_bytes());
    greeting.extend_from_slice(&(FLAG_FIXED_NEWSTYLE | FLAG_NO_ZEROES).to_be_bytes());
    w.write_all(&greeting).map_err(io)?;
    w.flush().map_err(io)?;
    let client_flags = match read_u32(r) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(io(e)),
    };
    if client_flags & !(FLAG_C_FIXED_NEWSTYLE | FLAG_C_NO_ZEROES) != 0 {
        return Err(format!("handshake: unknown client flags {client_flags:#x}"));
    }
    Ok(Some(client_flags & FLAG_C_NO_ZEROES != 0))
}

/// The options, until EXPORT_NAME or GO selects the export (or STARTTLS asks for TLS). A
/// protocol violation is an error naming it.
pub fn options(
    r: &mut impl Read,
    w: &mut impl Write,
    export: &Export,
    no_zeroes: bool,
    tls: TlsPhase,
) -> Result<Handshake, String> {
    let io = |e: io::Error| format!("handshake: {e}");
    let mut session = Session::default();
    loop {
        let magic = read_u64(r).map_err(io)?;
        if magic != IHAVEOPT {
            return Err(format!(
                "handshake: bad option magic {magic:#018x}: not an NBD client (oldstyle clients \
                 are not supported)"
            ));
        }
        let option = read_u32(r).map_err(io)?;
        let len = read_u32(r).map_err(io)?;
        if len > MAX_OPTION {
            return Err(format!(
                "handshake: option {option} of {len} bytes is too long"
            ));
        }
        let mut data = vec![0; len as usize];
        r.read_exact(&mut data).map_err(io)?;
        if tls == TlsPhase::Required && !matches!(option, OPT_STARTTLS | OPT_ABORT) {
            if option == OPT_EXPORT_NAME {
                // (No error reply exists for EXPORT_NAME: the connection is closed.)
                return Err(
                    "handshake: EXPORT_NAME before STARTTLS: this server requires \
                            TLS"
                    .into(),
                );
            }
            option_reply(
                w,
                option,
                REP_ERR_TLS_REQD,
                b"this server requires TLS (STARTTLS)",
            )
            .map_err(io)?;
            w.flush().map_err(io)?;
            continue;
        }
        match option {
            OPT_STARTTLS => {
                let (kind, message): (u32, &[u8]) = match tls {
                    _ if !data.is_empty() => (REP_ERR_INVALID, b"STARTTLS takes no data"),
                    TlsPhase::Off => (REP_ERR_UNSUP, b"this server has no TLS configured"),
                    TlsPhase::Active => (REP_ERR_INVALID, b"TLS is already in use"),
                    TlsPhase::Required => (REP_ACK, b""),
                };
                option_reply(w, option, kind, message).map_err(io)?;
                w.flush().map_err(io)?;
                if kind == REP_ACK {
                    return Ok(Handshake::StartTls);
                }
                continue;
            }
            OPT_EXPORT_NAME => {
                let name = String::from_utf8_lossy(&data);
                if !export_matches(&name, export) {
                    return Err(format!("handshake: unknown export `{name}`"));
                }
                let mut b = Vec::with_capacity(10 + 124);
                b.extend_from_slice(&export.size.to_be_bytes());
                b.extend_from_slice(&export.flags.to_be_bytes());
                if !no_zeroes {
                    b.extend_from_slice(&[0; 124]);
                }
                w.write_all(&b).map_err(io)?;
                w.flush().map_err(io)?;
                return Ok(Handshake::Go(session));
            }
            OPT_ABORT => {
                // The client may already be gone: errors do not matter here.
                let _ = option_reply(w, option, REP_ACK, &[]);
                let _ = w.flush();
                return Ok(Handshake::Left);
            }
            OPT_LIST => {
                if !data.is_empty() {
                    option_reply(w, option, REP_ERR_INVALID, b"LIST takes no data").map_err(io)?;
                } else {
                    let mut d = Vec::new();
                    d.extend_from_slice(&(export.name.len() as u32).to_be_bytes());
                    d.extend_from_slice(export.name.as_bytes());
                    option_reply(w, option, REP_SERVER, &d).map_err(io)?;
                    option_reply(w, option, REP_ACK, &[]).map_err(io)?;
                }
            }
            OPT_INFO | OPT_GO => {
                let Some(name) = parse_info_request(&data) else {
                    option_reply(w, option, REP_ERR_INVALID, b"malformed INFO/GO request")
                        .map_err(io)?;
                    w.flush().map_err(io)?;
                    continue;
                };
                if !export_matches(&name, export) {
                    let msg = format!("unknown export `{name}`");
                    option_reply(w, option, REP_ERR_UNKNOWN, msg.as_bytes()).map_err(io)?;
                    w.flush().map_err(io)?;
                    continue;
                }
                let mut info = Vec::with_capacity(12);
                info.extend_from_slice(&INFO_EXPORT.to_be_bytes());
                info.extend_from_slice(&export.size.to_be_bytes());
                info.extend_from_slice(&export.flags.to_be_bytes());
                option_reply(w, option, REP_INFO, &info).map_err(io)?;
                // Any alignment is served (partial pages are read-modify-written); the
                // flash page is the preferred size.
                let mut bs = Vec::with_capacity(14);
                bs.extend_from_slice(&INFO_BLOCK_SIZE.to_be_bytes());
                bs.extend_from_slice(&1u32.to_be_bytes());
                bs.extend_from_slice(&export.block_size.to_be_bytes());
                bs.extend_from_slice(&MAX_PAYLOAD.to_be_bytes());
                option_reply(w, option, REP_INFO, &bs).map_err(io)?;
                option_reply(w, option, REP_ACK, &[]).map_err(io)?;
                w.flush().map_err(io)?;
                if option == OPT_GO {
                    return Ok(Handshake::Go(session));
                }
            }
            OPT_STRUCTURED_REPLY => {
                if data.is_empty() {
                    session.structured = true;
                    option_reply(w, option, REP_ACK, &[]).map_err(io)?;
                } else {
                    option_reply(
                        w,
                        option,
                        REP_ERR_INVALID,
                        b"STRUCTURED_REPLY takes no data",
                    )
                    .map_err(io)?;
                }
            }
            OPT_LIST_META_CONTEXT | OPT_SET_META_CONTEXT => {
                let set = option == OPT_SET_META_CONTEXT;
                if set {
                    // Replaces the selection, even when it fails.
                    session.allocation = false;
                }
                let reply = match parse_meta_request(&data) {
                    _ if !session.structured => Err((
                        REP_ERR_INVALID,
                        "metadata contexts need structured replies first".to_string(),
                    )),
                    None => Err((REP_ERR_INVALID, "malformed metadata context request".into())),
                    Some((name, _)) if !export_matches(&name, export) => {
                        Err((REP_ERR_UNKNOWN, format!("unknown export `{name}`")))
                    }
                    // LIST with no query lists every context; `base:` lists the namespace's.
                    Some((_, queries)) => Ok(queries.is_empty() && !set
                        || queries
                            .iter()
                            .any(|q| q == BASE_ALLOCATION || (!set && q == "base:"))),
                };
                match reply {
                    Err((kind, message)) => {
                        option_reply(w, option, kind, message.as_bytes()).map_err(io)?
                    }
                    Ok(selected) => {
                        if selected {
                            let id = if set { BASE_ALLOCATION_ID } else { 0 };
                            let mut d = id.to_be_bytes().to_vec();
                            d.extend_from_slice(BASE_ALLOCATION.as_bytes());
                            option_reply(w, option, REP_META_CONTEXT, &d).map_err(io)?;
                            session.allocation |= set;
                        }
                        option_reply(w, option, REP_ACK, &[]).map_err(io)?;
                    }
                }
            }
            _ => {
                // Extended headers and the rest: not served.
                option_reply(w, option, REP_ERR_UNSUP, &[]).map_err(io)?;
            }
        }
        w.flush().map_err(io)?;
    }
}

/// The default export (empty name) is the one export.
fn export_matches(name: &str, export: &Export) -> bool {
    name.is_empty() || name == export.name
}

/// The export name of an INFO or GO request: u32 length, name, u16 count, u16 requests.
fn parse_info_request(data: &[u8]) -> Option<String> {
    let len = u32::from_be_bytes(data.get(0..4)?.try_into().ok()?) as usize;
    let name = data.get(4..4 + len)?;
    let count = u16::from_be_bytes(data.get(4 + len..6 + len)?.try_into().ok()?) as usize;
    if data.len() != 6 + len + 2 * count {
        return None;
    }
    Some(String::from_utf8_lossy(name).into_owned())
}

/// The export name and the queries of a LIST or SET_META_CONTEXT request: u32 length,
/// name, u32 count, then each query as u32 length and string.
fn parse_meta_request(data: &[u8]) -> Option<(String, Vec<String>)> {
    let mut at = 0;
    let string = |at: &mut usize| -> Option<String> {
        let len = u32::from_be_bytes(data.get(*at..*at + 4)?.try_into().ok()?) as usize;
        let s = data.get(*at + 4..(*at + 4).checked_add(len)?)?;
        *at += 4 + len;
        Some(String::from_utf8_lossy(s).into_owned())
    };
    let name = string(&mut at)?;
    let count = u32::from_be_bytes(data.get(at..at + 4)?.try_into().ok()?);
    at += 4;
    let mut queries = Vec::new();
    for _ in 0..count {
        queries.push(string(&mut at)?);
    }
    (at == data.len()).then_some((name, queries))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_header_round_trip_and_bad_magic() {
        let mut b = [0u8; 28];
        b[0..4].copy_from_slice(&REQUEST_MAGIC.to_be_bytes());
        b[4..6].copy_from_slice(&CMD_FLAG_FUA.to_be_bytes());
        b[6..8].copy_from_slice(&CMD_WRITE.to_be_bytes());
        b[8..16].copy_from_slice(&7u64.to_be_bytes());
        b[16..24].copy_from_slice(&4096u64.to_be_bytes());
        b[24..28].copy_from_slice(&512u32.to_be_bytes());
        let h = parse_request(&b).unwrap();
        assert_eq!(
            (h.flags, h.kind, h.handle, h.offset, h.length),
            (1, 1, 7, 4096, 512)
        );
        b[0] = 0;
        assert!(parse_request(&b).unwrap_err().contains("bad request magic"));
    }

    #[test]
    fn info_request_is_checked() {
        let mut d = Vec::new();
        d.extend_from_slice(&3u32.to_be_bytes());
        d.extend_from_slice(b"dev");
        d.extend_from_slice(&1u16.to_be_bytes());
        d.extend_from_slice(&INFO_BLOCK_SIZE.to_be_bytes());
        assert_eq!(parse_info_request(&d).as_deref(), Some("dev"));
        assert_eq!(parse_info_request(&d[..d.len() - 1]), None);
        assert_eq!(parse_info_request(&[0, 0, 0, 9]), None);
    }

    #[test]
    fn handshake_go_and_unknown_export() {
        let export = Export {
            name: "ftlab".into(),
            size: 1 << 20,
            flags: FLAG_HAS_FLAGS,
            block_size: 4096,
        };
        let go = |name: &str| {
            let mut input = Vec::new();
            input.extend_from_slice(&(FLAG_C_FIXED_NEWSTYLE | FLAG_C_NO_ZEROES).to_be_bytes());
            input.extend_from_slice(&IHAVEOPT.to_be_bytes());
            input.extend_from_slice(&OPT_GO.to_be_bytes());
            input.extend_from_slice(&(6 + name.len() as u32).to_be_bytes());
            input.extend_from_slice(&(name.len() as u32).to_be_bytes());
            input.extend_from_slice(name.as_bytes());
            input.extend_from_slice(&0u16.to_be_bytes());
            input
        };
        let mut out = Vec::new();
        let r = handshake(&mut &go("ftlab")[..], &mut out, &export).unwrap();
        assert!(matches!(r, Handshake::Go(s) if s == Session::default()));
        // Greeting, then INFO export (size) among the replies, then ACK.
        assert_eq!(&out[0..8], &NBDMAGIC.to_be_bytes());
        assert!(out.windows(8).any(|w| w == (1u64 << 20).to_be_bytes()));
        // An unknown name gets an error reply; the client then leaves (EOF): an error.
        let mut out = Vec::new();
        let err = handshake(&mut &go("nope")[..], &mut out, &export)
            .err()
            .unwrap();
        assert!(err.contains("handshake"), "{err}");
        assert!(out.windows(4).any(|w| w == REP_ERR_UNKNOWN.to_be_bytes()));
    }

    /// An option as a client sends it.
    fn option(code: u32, data: &[u8]) -> Vec<u8> {
        let mut b = IHAVEOPT.to_be_bytes().to_vec();
        b.extend_from_slice(&code.to_be_bytes());
        b.extend_from_slice(&(data.len() as u32).to_be_bytes());
        b.extend_from_slice(data);
        b
    }

    fn meta_request(queries: &[&str]) -> Vec<u8> {
        let mut d = 0u32.to_be_bytes().to_vec(); // the default export
        d.extend_from_slice(&(queries.len() as u32).to_be_bytes());
        for q in queries {
            d.extend_from_slice(&(q.len() as u32).to_be_bytes());
            d.extend_from_slice(q.as_bytes());
        }
        d
    }

    #[test]
    fn structured_replies_and_base_allocation_are_negotiated() {
        let export = Export {
            name: "ftlab".into(),
            size: 1 << 20,
            flags: FLAG_HAS_FLAGS,
            block_size: 4096,
        };
        let go = option(OPT_GO, &[0, 0, 0, 0, 0, 0]);
        let set = option(
            OPT_SET_META_CONTEXT,
            &meta_request(&["qemu:x", BASE_ALLOCATION]),
        );
        let start = (FLAG_C_FIXED_NEWSTYLE | FLAG_C_NO_ZEROES)
            .to_be_bytes()
            .to_vec();
        // SET_META_CONTEXT before structured replies: refused, nothing selected.
        let input = [start.clone(), set.clone(), go.clone()].concat();
        let mut out = Vec::new();
        let Ok(Handshake::Go(s)) = handshake(&mut &input[..], &mut out, &export) else {
            panic!("no GO")
        };
        assert_eq!(s, Session::default());
        assert!(out.windows(4).any(|w| w == REP_ERR_INVALID.to_be_bytes()));
        // After STRUCTURED_REPLY: base:allocation selected with its ID, the unknown
        // namespace ignored.
        let input = [start, option(OPT_STRUCTURED_REPLY, &[]), set, go].concat();
        let mut out = Vec::new();
        let Ok(Handshake::Go(s)) = handshake(&mut &input[..], &mut out, &export) else {
            panic!("no GO")
        };
        assert_eq!(
            s,
            Session {
                structured: true,
                allocation: true
            }
        );
        let mut context = REP_META_CONTEXT.to_be_bytes().to_vec();
        context.extend_from_slice(&(4 + BASE_ALLOCATION.len() as u32).to_be_bytes());
        context.extend_from_slice(&BASE_ALLOCATION_ID.to_be_bytes());
        context.extend_from_slice(BASE_ALLOCATION.as_bytes());
        assert!(out.windows(context.len()).any(|w| w == context));
        assert!(!out.windows(6).any(|w| w == b"qemu:x"));
        assert_eq!(parse_meta_request(&meta_request(&["a:"])[..9]), None);
    }

    #[test]
    fn an_error_chunk_carries_the_message() {
        let b = structured_error(9, EIO, "media error");
        assert_eq!(&b[0..4], &STRUCTURED_REPLY_MAGIC.to_be_bytes());
        assert_eq!(u16::from_be_bytes([b[4], b[5]]), REPLY_FLAG_DONE);
        assert_eq!(u16::from_be_bytes([b[6], b[7]]), REPLY_TYPE_ERROR);
        assert_eq!(
            u32::from_be_bytes(b[16..20].try_into().unwrap()),
            4 + 2 + 11
        );
        assert_eq!(&b[26..], b"media error");
    }
}
