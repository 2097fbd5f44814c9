//! The four codecs of Kafka's records sections, through well-kept crates: flate2 (gzip), snap
//! (snappy), lz4 / lz4-sys (liblz4's frame format, KIP-57) and zstd (libzstd).
//!
//! What is Kafka's own: snappy comes in two framings. The Java client writes xerial's
//! (`SnappyOutputStream`: a 16-byte header, then blocks of [int32 length][raw snappy]),
//! librdkafka writes raw snappy; both read both. A merged batch keeps the framing of the run's
//! first batch. LZ4 is written the way the Java client writes it (independent 64 KB blocks, no
//! checksums: Kafka's readers refuse linked blocks); gzip at level 6 and zstd at level 3, the
//! Java client's defaults.
//!
//! A run is many tiny batches, so the decoders that keep state (liblz4's and libzstd's
//! decompression contexts) are made once per merge and reused batch after batch.

use std::io::{Read, Write};

use zstd::zstd_safe::{DCtx, InBuffer, OutBuffer, ResetDirective};

use crate::error::Error;

pub const NONE: u16 = 0;
const GZIP: u16 = 1;
const SNAPPY: u16 = 2;
const LZ4: u16 = 3;
const ZSTD: u16 = 4;

const XERIAL_HEADER: [u8; 16] = [
    0x82, b'S', b'N', b'A', b'P', b'P', b'Y', 0, 0, 0, 0, 1, 0, 0, 0, 1,
];
const XERIAL_MAGIC_LEN: usize = 8; // the version fields after the magic may differ
const XERIAL_BLOCK: usize = 32 * 1024; // xerial's default block size
const GZIP_LEVEL: u32 = 6;
const ZSTD_LEVEL: i32 = 3;

fn codec_error(codec: u16, e: impl std::fmt::Display) -> Error {
    let name = ["none", "gzip", "snappy", "lz4", "zstd"][usize::from(codec.min(4))];
    Error::Codec(format!("{name}: {e}"))
}

/// Decompresses records sections one batch after another, reusing its state.
pub struct Decoder {
    lz4: Option<Lz4Context>,
    zstd: Option<DCtx<'static>>,
    /// The framing of the first snappy section seen: what the merged batch is written in.
    pub xerial: Option<bool>,
}

impl Decoder {
    pub fn new() -> Self {
        Decoder {
            lz4: None,
            zstd: None,
            xerial: None,
        }
    }

    /// `src` decompressed into `dst` (cleared first).
    pub fn decode(&mut self, codec: u16, src: &[u8], dst: &mut Vec<u8>) -> Result<(), Error> {
        dst.clear();
        match codec {
            GZIP => flate2::read::MultiGzDecoder::new(src)
                .read_to_end(dst)
                .map(|_| ())
                .map_err(|e| codec_error(codec, e)),
            SNAPPY => self.snappy(src, dst),
            LZ4 => {
                if self.lz4.is_none() {
                    self.lz4 = Some(Lz4Context::new()?);
                }
                self.lz4.as_mut().expect("created above").decode(src, dst)
            }
            ZSTD => self.zstd(src, dst),
            _ => Err(codec_error(codec, "unknown codec")),
        }
    }

    fn snappy(&mut self, src: &[u8], dst: &mut Vec<u8>) -> Result<(), Error> {
        let xerial = src.len() >= XERIAL_HEADER.len()
            && src[..XERIAL_MAGIC_LEN] == XERIAL_HEADER[..XERIAL_MAGIC_LEN];
        self.xerial.get_or_insert(xerial);
        if !xerial {
            return raw_snappy(src, dst);
        }
        let mut pos = XERIAL_HEADER.len();
        while pos < src.len() {
            let Some(len) = src.get(pos..pos + 4) else {
                return Err(codec_error(SNAPPY, "xerial block length cut"));
            };
            let len = usize::try_from(u32::from_be_bytes(len.try_into().expect("4 bytes")))
                .expect("u32 fits usize");
            pos += 4;
            let Some(block) = src.get(pos..pos + len) else {
                return Err(codec_error(SNAPPY, "xerial block cut"));
            };
            raw_snappy(block, dst)?;
            pos += len;
        }
        Ok(())
    }

    fn zstd(&mut self, src: &[u8], dst: &mut Vec<u8>) -> Result<(), Error> {
        if self.zstd.is_none() {
            self.zstd = Some(DCtx::try_create().ok_or_else(|| codec_error(ZSTD, "no context"))?);
        }
        let dctx = self.zstd.as_mut().expect("created above");
        dctx.reset(ResetDirective::SessionOnly)
            .map_err(|e| codec_error(ZSTD, e))?;
        let mut input = InBuffer::around(src);
        let mut finished = false;
        // Frames written by streaming (the Java client's) carry no content size: grow as needed.
        while input.pos() < src.len() || !finished {
            if dst.capacity() - dst.len() < 16 * 1024 {
                dst.reserve((src.len() * 4).max(64 * 1024));
            }
            let before = (input.pos(), dst.len());
            let pos = dst.len();
            let mut output = OutBuffer::around_pos(dst, pos);
            let hint = dctx
                .decompress_stream(&mut output, &mut input)
                .map_err(|code| codec_error(ZSTD, zstd::zstd_safe::get_error_name(code)))?;
            finished = hint == 0;
            if !finished && (input.pos(), dst.len()) == before {
                return Err(codec_error(ZSTD, "frame cut short"));
            }
        }
        Ok(())
    }
}

fn raw_snappy(src: &[u8], dst: &mut Vec<u8>) -> Result<(), Error> {
    let len = snap::raw::decompress_len(src).map_err(|e| codec_error(SNAPPY, e))?;
    let start = dst.len();
    dst.resize(start + len, 0);
    let n = snap::raw::Decoder::new()
        .decompress(src, &mut dst[start..])
        .map_err(|e| codec_error(SNAPPY, e))?;
    dst.truncate(start + n);
    Ok(())
}

/// `src` (uncompressed records) compressed with `codec`, appended to `out`.
pub fn encode(codec: u16, xerial: bool, src: &[u8], out: &mut Vec<u8>) -> Result<(), Error> {
    match codec {
        NONE => {
            out.extend_from_slice(src);
            Ok(())
        }
        GZIP => {
            let mut encoder =
                flate2::write::GzEncoder::new(&mut *out, flate2::Compression::new(GZIP_LEVEL));
            encoder.write_all(src).map_err(|e| codec_error(codec, e))?;
            encoder
                .finish()
                .map(|_| ())
                .map_err(|e| codec_error(codec, e))
        }
        SNAPPY if xerial => {
            out.extend_from_slice(&XERIAL_HEADER);
            for block in src.chunks(XERIAL_BLOCK) {
                let at = out.len();
                out.extend_from_slice(&[0; 4]);
                raw_snappy_encode(block, out)?;
                let len = u32::try_from(out.len() - at - 4).expect("a block under 4 GiB");
                out[at..at + 4].copy_from_slice(&len.to_be_bytes());
            }
            Ok(())
        }
        SNAPPY => raw_snappy_encode(src, out),
        LZ4 => {
            let mut encoder = lz4::EncoderBuilder::new()
                .block_size(lz4::BlockSize::Max64KB)
                .block_mode(lz4::BlockMode::Independent)
                .block_checksum(lz4::liblz4::BlockChecksum::NoBlockChecksum)
                .checksum(lz4::ContentChecksum::NoChecksum)
                .build(&mut *out)
                .map_err(|e| codec_error(codec, e))?;
            encoder.write_all(src).map_err(|e| codec_error(codec, e))?;
            encoder.finish().1.map_err(|e| codec_error(codec, e))
        }
        ZSTD => {
            let compressed =
                zstd::bulk::compress(src, ZSTD_LEVEL).map_err(|e| codec_error(codec, e))?;
            out.extend_from_slice(&compressed);
            Ok(())
        }
        _ => Err(codec_error(codec, "unknown codec")),
    }
}

fn raw_snappy_encode(src: &[u8], out: &mut Vec<u8>) -> Result<(), Error> {
    let start = out.len();
    out.resize(start + snap::raw::max_compress_len(src.len()), 0);
    let n = snap::raw::Encoder::new()
        .compress(src, &mut out[start..])
        .map_err(|e| codec_error(SNAPPY, e))?;
    out.truncate(start + n);
    Ok(())
}

/// A liblz4 frame decompression context, reused for every frame of a merge.
struct Lz4Context(lz4_sys::LZ4FDecompressionContext);

impl Lz4Context {
    fn new() -> Result<Self, Error> {
        let mut ctx = lz4_sys::LZ4FDecompressionContext(std::ptr::null_mut());
        // SAFETY: liblz4 fills ctx in; it is freed once, in Drop.
        let code =
            unsafe { lz4_sys::LZ4F_createDecompressionContext(&mut ctx, lz4_sys::LZ4F_VERSION) };
        lz4_check(code)?;
        Ok(Lz4Context(ctx))
    }

    /// One or more frames of `src` decompressed, appended to `dst`.
    fn decode(&mut self, src: &[u8], dst: &mut Vec<u8>) -> Result<(), Error> {
        // SAFETY: a valid context; a frame left unfinished by an error must not leak into
        // the next batch's.
        unsafe { lz4_sys::LZ4F_resetDecompressionContext(self.0) };
        let mut pos = 0;
        loop {
            if dst.capacity() - dst.len() < 64 * 1024 {
                dst.reserve((src.len() * 4).max(64 * 1024));
            }
            let mut dst_size = dst.capacity() - dst.len();
            let mut src_size = src.len() - pos;
            // SAFETY: liblz4 writes at most dst_size bytes into the spare capacity and reads at
            // most src_size bytes of src; both sizes come back as what it wrote and read.
            let hint = unsafe {
                lz4_sys::LZ4F_decompress(
                    self.0,
                    dst.as_mut_ptr().add(dst.len()),
                    &mut dst_size,
                    src.as_ptr().add(pos),
                    &mut src_size,
                    std::ptr::null(),
                )
            };
            lz4_check(hint)?;
            // SAFETY: liblz4 initialised dst_size more bytes.
            unsafe { dst.set_len(dst.len() + dst_size) };
            pos += src_size;
            if hint == 0 && pos == src.len() {
                return Ok(()); // the last frame ended where the section does
            }
            if pos == src.len() && dst_size == 0 && src_size == 0 {
                return Err(codec_error(LZ4, "frame cut short"));
            }
        }
    }
}

impl Drop for Lz4Context {
    fn drop(&mut self) {
        // SAFETY: created by LZ4F_createDecompressionContext, freed only here.
        unsafe { lz4_sys::LZ4F_freeDecompressionContext(self.0) };
    }
}

fn lz4_check(code: usize) -> Result<(), Error> {
    // SAFETY: LZ4F_isError and LZ4F_getErrorName take any code; the name is a static string.
    unsafe {
        if lz4_sys::LZ4F_isError(code) == 0 {
            return Ok(());
        }
        let name = std::ffi::CStr::from_ptr(lz4_sys::LZ4F_getErrorName(code));
        Err(codec_error(LZ4, name.to_string_lossy()))
    }
}
