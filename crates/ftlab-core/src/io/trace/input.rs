//! Opening a trace file: compression detected from the first bytes (gzip, bzip2, xz,
//! zstd), a sample of the decompressed start for format detection, and a byte counter
//! for progress.

use crate::error::{Error, Result};
use std::fs::File;
use std::io::{BufRead, BufReader, Cursor, Read};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Bytes of the decompressed start kept for format detection.
pub(crate) const SAMPLE: usize = 64 << 10;

/// How far through its file a reader is.
#[derive(Clone, Debug)]
pub struct InputProgress {
    read: Arc<AtomicU64>,
    /// Size of the file in bytes (compressed, if it is).
    pub total: u64,
}

impl InputProgress {
    /// Share of the file read so far, in [0, 1].
    pub fn fraction(&self) -> f64 {
        if self.total == 0 {
            return 1.0;
        }
        (self.read.load(Ordering::Relaxed) as f64 / self.total as f64).min(1.0)
    }
}

struct Counting<R> {
    inner: R,
    read: Arc<AtomicU64>,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

pub(crate) struct Input {
    pub reader: Box<dyn Read + Send>,
    pub compression: &'static str,
    /// The first bytes of the decompressed content (also still in `reader`).
    pub sample: Vec<u8>,
    pub progress: InputProgress,
}

fn io_error(path: &Path, message: String) -> Error {
    Error::Io {
        file: path.to_path_buf(),
        message,
    }
}

/// Compression named by a file's first bytes.
fn compression(magic: &[u8]) -> &'static str {
    if magic.starts_with(&[0x1f, 0x8b]) {
        "gzip"
    } else if magic.starts_with(b"BZh") {
        "bzip2"
    } else if magic.starts_with(&[0xfd, b'7', b'z', b'X', b'Z', 0x00]) {
        "xz"
    } else if magic.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
        "zstd"
    } else {
        "none"
    }
}

pub(crate) fn open(path: &Path) -> Result<Input> {
    let file = File::open(path).map_err(|e| io_error(path, format!("cannot open trace: {e}")))?;
    let meta = file
        .metadata()
        .map_err(|e| io_error(path, format!("cannot open trace: {e}")))?;
    if meta.is_dir() {
        return Err(io_error(
            path,
            "cannot open trace: it is a directory".into(),
        ));
    }
    from_reader(Box::new(file), path, meta.len())
}

/// Like [`open`], from any byte stream of `total` bytes (named `label` in messages).
pub(crate) fn from_reader(raw: Box<dyn Read + Send>, label: &Path, total: u64) -> Result<Input> {
    let read = Arc::new(AtomicU64::new(0));
    let progress = InputProgress {
        read: read.clone(),
        total,
    };
    let mut raw = BufReader::with_capacity(1 << 16, Counting { inner: raw, read });
    let magic = raw
        .fill_buf()
        .map_err(|e| io_error(label, format!("cannot read trace: {e}")))?;
    let compression = compression(magic);
    let mut reader: Box<dyn Read + Send> = match compression {
        "gzip" => Box::new(flate2::read::MultiGzDecoder::new(raw)),
        "bzip2" => Box::new(bzip2::read::MultiBzDecoder::new(raw)),
        "xz" => Box::new(xz2::read::XzDecoder::new_multi_decoder(raw)),
        "zstd" => Box::new(
            zstd::stream::read::Decoder::with_buffer(raw)
                .map_err(|e| io_error(label, format!("cannot read zstd trace: {e}")))?,
        ),
        _ => Box::new(raw),
    };
    let mut sample = Vec::with_capacity(SAMPLE);
    (&mut reader)
        .take(SAMPLE as u64)
        .read_to_end(&mut sample)
        .map_err(|e| {
            let what = if compression == "none" {
                String::new()
            } else {
                format!(" ({compression} data)")
            };
            io_error(label, format!("cannot read trace{what}: {e}"))
        })?;
    let reader = Box::new(Cursor::new(sample.clone()).chain(reader));
    Ok(Input {
        reader,
        compression,
        sample,
        progress,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn roundtrip(compression: &str, text: &[u8]) -> Vec<u8> {
        let dir = std::env::temp_dir().join(format!("ftlab-input-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(format!("t.{compression}"));
        let bytes = match compression {
            "gzip" => {
                let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
                e.write_all(text).unwrap();
                e.finish().unwrap()
            }
            "bzip2" => {
                let mut e = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::fast());
                e.write_all(text).unwrap();
                e.finish().unwrap()
            }
            "xz" => {
                let mut e = xz2::write::XzEncoder::new(Vec::new(), 1);
                e.write_all(text).unwrap();
                e.finish().unwrap()
            }
            "zstd" => zstd::encode_all(text, 1).unwrap(),
            _ => text.to_vec(),
        };
        std::fs::write(&path, &bytes).unwrap();
        let mut input = open(&path).unwrap();
        assert_eq!(input.compression, compression);
        let mut out = Vec::new();
        input.reader.read_to_end(&mut out).unwrap();
        assert_eq!(input.progress.fraction(), 1.0);
        std::fs::remove_file(&path).unwrap();
        out
    }

    #[test]
    fn every_compression_reads_back() {
        let text: Vec<u8> = (0..100_000u32)
            .flat_map(|i| format!("{i} 0 {} 8 1\n", i * 8).into_bytes())
            .collect();
        for c in ["none", "gzip", "bzip2", "xz", "zstd"] {
            assert_eq!(roundtrip(c, &text), text, "{c}");
        }
    }

    #[test]
    fn corrupt_compressed_data_is_an_error() {
        let dir = std::env::temp_dir().join(format!("ftlab-input-bad-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.gz");
        std::fs::write(&path, [0x1f, 0x8b, 8, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]).unwrap();
        let err = match open(&path) {
            Ok(mut input) => {
                let mut out = Vec::new();
                input.reader.read_to_end(&mut out).unwrap_err().to_string()
            }
            Err(e) => e.to_string(),
        };
        assert!(!err.is_empty());
        std::fs::remove_file(&path).unwrap();
    }
}
