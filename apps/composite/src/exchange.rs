//! The exchange: the ranks composite their partial images with a [`Strategy`] in rounds
//! of span swaps (`schedule`), then the root rank gathers the final spans. One round skeleton
//! (`exchange`) serves both places a rank's image can live, through the stage functions
//! of the `Held` trait: on the host as a [`Piece`], split and composited on the CPU
//! ([`composite_frame`]), or raw on the GPU, its spans encoded and merged there
//! ([`composite_frame_gpu`]).

use std::time::Instant;

use engine::Buffer;

use crate::ap::Encoded;
use crate::comm::Comm;
use crate::error::{CompositeError, Result};
use crate::gpu::blend::GpuBlender;
use crate::piece::{Gathered, Kind, Piece};
use crate::schedule::{cut, rounds, Strategy};
use kit::stats::ms_since;

use crate::timing::time_ms;
use crate::types::Op;

/// Time and traffic of one rank's compositing.
#[derive(Clone, Copy, Debug, Default)]
pub struct ExchangeStats {
    /// Waiting for every rank before each round and before the gather: the ranks' skew, kept
    /// out of `exchange_ms`, which is then the messages' own time.
    pub wait_ms: f64,
    pub exchange_ms: f64,
    pub composite_ms: f64,
    /// Sending the final spans to the root and checking them there.
    pub gather_ms: f64,
    pub bytes_sent: usize,
    /// GPU ROI passes, encodings and copies to the host made while compositing
    /// ([`composite_frame_gpu`]).
    pub roi_ms: f64,
    pub encode_ms: f64,
    pub d2h_ms: f64,
    pub bytes_d2h: usize,
}

/// Waits for every rank (one barrier, which every rank reaches as often: once per round and
/// once before the gather), timed into `stats.wait_ms`.
fn wait_for_all(comm: &dyn Comm, stats: &mut ExchangeStats) {
    let t = Instant::now();
    comm.barrier();
    stats.wait_ms += ms_since(t);
}

/// What the round skeleton asks of the place a rank's image lives. The image held is the
/// span `lo..hi` of the frame that the skeleton tracks; payloads are what travels (an encoded
/// or raw piece's words).
trait Held {
    /// The payload of the whole held span `span`, for the rank it folds into; nothing is
    /// held after.
    fn hand_over(&mut self, span: (usize, usize), stats: &mut ExchangeStats) -> Result<Vec<u32>>;
    /// Cuts the held span at `ends` (its first pixel, the inner bounds, its end): returns
    /// the payloads of every part but part `keep`, in order, and holds part `keep` after.
    fn cut(&mut self, ends: &[usize], keep: usize, stats: &mut ExchangeStats) -> Result<Vec<Vec<u32>>>;
    /// Composites the payloads received for the held `span` into it, the held image at
    /// position `own` of the inputs' order.
    fn merge(&mut self, span: (usize, usize), received: Vec<Vec<u32>>, own: usize) -> Result<()>;
    /// The held `span` as the root gathers it.
    fn finish(self, span: (usize, usize), stats: &mut ExchangeStats) -> Result<Piece>;
}

/// The round skeleton: every round of `strategy`, then the gather of the final spans on rank
/// `root` (`Some` there, `None` elsewhere), for a frame of `total` pixels held by `held`.
fn exchange(
    comm: &dyn Comm,
    strategy: Strategy,
    total: usize,
    mut held: impl Held,
    root: usize,
) -> Result<(Option<Gathered>, ExchangeStats)> {
    let me = comm.rank();
    let mut stats = ExchangeStats::default();
    let (mut lo, mut hi) = (0usize, total);
    for round in rounds(strategy, comm.size()) {
        wait_for_all(comm, &mut stats);
        let Some(group) = round.iter().find(|g| g.members.contains(&me)) else { continue };
        let j = group.members.iter().position(|&m| m == me).unwrap();
        if group.fold {
            if j == 1 {
                let words = held.hand_over((lo, hi), &mut stats)?;
                let t = Instant::now();
                comm.exchange(&[(group.members[0], &words)], &[])?;
                stats.exchange_ms += ms_since(t);
                stats.bytes_sent += 4 * words.len();
                lo = hi;
            } else {
                let t = Instant::now();
                let received = comm.exchange(&[], &[group.members[1]])?;
                stats.exchange_ms += ms_since(t);
                merge(&mut held, (lo, hi), received, 0, &mut stats)?;
            }
            continue;
        }
        let k = group.members.len();
        let ends: Vec<usize> = std::iter::once(lo).chain(cut(lo, hi, k)).chain(std::iter::once(hi)).collect();
        let parts = held.cut(&ends, j, &mut stats)?;
        let others: Vec<usize> = (0..k).filter(|&m| m != j).map(|m| group.members[m]).collect();
        let sends: Vec<(usize, &[u32])> = others.iter().copied().zip(parts.iter().map(Vec::as_slice)).collect();
        stats.bytes_sent += sends.iter().map(|s| 4 * s.1.len()).sum::<usize>();
        let t = Instant::now();
        let received = comm.exchange(&sends, &others)?;
        stats.exchange_ms += ms_since(t);
        (lo, hi) = (ends[j], ends[j + 1]);
        merge(&mut held, (lo, hi), received, j, &mut stats)?;
    }
    let piece = held.finish((lo, hi), &mut stats)?;
    let result = gather(comm, (lo, hi), piece, total, root, &mut stats)?;
    Ok((result, stats))
}

/// [`Held::merge`], timed into `stats.composite_ms` alike for both places: checking what
/// arrived and merging it.
fn merge(
    held: &mut impl Held,
    span: (usize, usize),
    received: Vec<Vec<u32>>,
    own: usize,
    stats: &mut ExchangeStats,
) -> Result<()> {
    let (merged, ms) = time_ms(|| held.merge(span, received, own));
    stats.composite_ms += ms;
    merged
}

/// A rank's image on the host, as one piece of its span.
struct HostSpan {
    piece: Piece,
    kind: Kind,
    op: Op,
}

impl Held for HostSpan {
    fn hand_over(&mut self, _: (usize, usize), _: &mut ExchangeStats) -> Result<Vec<u32>> {
        Ok(std::mem::replace(&mut self.piece, Piece::empty(self.kind)).into_words())
    }

    fn cut(&mut self, ends: &[usize], keep: usize, stats: &mut ExchangeStats) -> Result<Vec<Vec<u32>>> {
        let bounds: Vec<usize> = ends[1..ends.len() - 1].iter().map(|b| b - ends[0]).collect();
        let (parts, ms) = time_ms(|| self.piece.split(&bounds));
        stats.composite_ms += ms;
        let mut others = Vec::with_capacity(parts.len() - 1);
        for (m, part) in parts.into_iter().enumerate() {
            if m == keep {
                self.piece = part;
            } else {
                others.push(part.into_words());
            }
        }
        Ok(others)
    }

    fn merge(&mut self, _: (usize, usize), received: Vec<Vec<u32>>, own: usize) -> Result<()> {
        let pixels = self.piece.pixels();
        let theirs: Vec<Piece> =
            received.into_iter().map(|words| Piece::received(self.kind, pixels, words)).collect::<Result<_>>()?;
        let mut ordered: Vec<&Piece> = theirs.iter().collect();
        ordered.insert(own, &self.piece);
        self.piece = Piece::composite(&ordered, self.op)?;
        Ok(())
    }

    fn finish(self, _: (usize, usize), _: &mut ExchangeStats) -> Result<Piece> {
        Ok(self.piece)
    }
}

/// Composites every rank's full-size `piece` with `strategy` and gathers the result on rank
/// `root` (`Some` there, `None` elsewhere), compositing on the CPU.
pub fn composite_frame(
    comm: &dyn Comm,
    piece: Piece,
    strategy: Strategy,
    op: Op,
    root: usize,
) -> Result<(Option<Gathered>, ExchangeStats)> {
    let (total, kind) = (piece.pixels(), piece.kind());
    exchange(comm, strategy, total, HostSpan { piece, kind, op }, root)
}

/// A rank's rendered partial image, raw on the GPU.
pub struct GpuFrame<'a> {
    pub color: &'a Buffer<u32>,
    pub depth: &'a Buffer<f32>,
    pub pixels: usize,
}

/// A rank's image raw on the GPU: spans leave it Active Pixel encoded there, and what
/// arrives is z-buffered into it in place.
struct DeviceSpan<'a, 'b> {
    frame: GpuFrame<'a>,
    blender: &'b mut GpuBlender,
}

impl DeviceSpan<'_, '_> {
    /// Encodes and downloads the span start..end (an empty span is an empty payload).
    fn encode(&mut self, (start, end): (usize, usize), stats: &mut ExchangeStats) -> Result<Vec<u32>> {
        if start == end {
            return Ok(Vec::new());
        }
        let encoder = self.blender.encoder();
        let (encoded, times) = encoder.encode_span(self.frame.color, self.frame.depth, start, end - start)?;
        stats.roi_ms += times.roi_ms;
        stats.encode_ms += times.encode_ms;
        stats.d2h_ms += times.d2h_ms;
        stats.bytes_d2h += 4 * encoded.words.len();
        Ok(encoded.words)
    }
}

impl Held for DeviceSpan<'_, '_> {
    fn hand_over(&mut self, span: (usize, usize), stats: &mut ExchangeStats) -> Result<Vec<u32>> {
        self.encode(span, stats)
    }

    fn cut(&mut self, ends: &[usize], keep: usize, stats: &mut ExchangeStats) -> Result<Vec<Vec<u32>>> {
        (0..ends.len() - 1).filter(|&m| m != keep).map(|m| self.encode((ends[m], ends[m + 1]), stats)).collect()
    }

    fn merge(&mut self, (lo, hi): (usize, usize), received: Vec<Vec<u32>>, own: usize) -> Result<()> {
        let theirs: Vec<Encoded> =
            received.into_iter().map(|words| Encoded::checked(hi - lo, words)).collect::<Result<_>>()?;
        let theirs: Vec<&Encoded> = theirs.iter().collect();
        self.blender.merge_into(self.frame.color, self.frame.depth, (lo, hi - lo), &theirs, own)
    }

    fn finish(mut self, span: (usize, usize), stats: &mut ExchangeStats) -> Result<Piece> {
        let words = self.encode(span, stats)?;
        Ok(Piece::Encoded(Encoded { pixels: span.1 - span.0, words }))
    }
}

/// [`composite_frame`] with the z-buffer for partial images that stay raw on the GPU (the
/// paper's method carried through the exchange): per round, the spans the other members
/// keep are Active Pixel encoded on the GPU and only their payloads are copied to the host
/// and sent; the payloads received for the span this rank keeps are uploaded and z-buffered
/// into its raw frame in place (`ap_zmerge`). No pixel is encoded, split or composited on
/// the CPU; the final span is encoded on the GPU for the gather (to rank `root`). Ranks that
/// hold their image on the host as an encoded [`Piece`] ([`composite_frame`]) take part in
/// the same exchange: both send the same payloads. Overwrites the frame.
pub fn composite_frame_gpu(
    comm: &dyn Comm,
    frame: GpuFrame,
    strategy: Strategy,
    blender: &mut GpuBlender,
    root: usize,
) -> Result<(Option<Gathered>, ExchangeStats)> {
    exchange(comm, strategy, frame.pixels, DeviceSpan { frame, blender }, root)
}

/// Sends this rank's final span `lo..hi` to rank `root`; there, collects every rank's and
/// checks that they cover the image of `total` pixels (`Some` there, `None` elsewhere).
fn gather(
    comm: &dyn Comm,
    (lo, hi): (usize, usize),
    piece: Piece,
    total: usize,
    root: usize,
    stats: &mut ExchangeStats,
) -> Result<Option<Gathered>> {
    let kind = piece.kind();
    let me = comm.rank();
    wait_for_all(comm, stats);
    // Every rank's pixel range, then its final span, as two messages (in order between two
    // ranks): the span is sent from where it is, not copied into a message with its range.
    let t = Instant::now();
    if me != root {
        let range = [lo as u32, hi as u32];
        stats.bytes_sent += 4 * (range.len() + piece.words().len());
        comm.exchange(&[(root, &range), (root, piece.words())], &[])?;
        stats.gather_ms += ms_since(t);
        return Ok(None);
    }
    let others: Vec<usize> = (0..comm.size()).filter(|&r| r != root).flat_map(|r| [r, r]).collect();
    let mut messages = comm.exchange(&[], &others)?.into_iter();
    let result = (|| -> Result<Gathered> {
        let mut spans = vec![(lo, piece)];
        while let (Some(range), Some(m)) = (messages.next(), messages.next()) {
            let [a, b] = range[..] else {
                return Err(CompositeError::Corrupt("gathered span without its pixel range".into()));
            };
            let (a, b) = (a as usize, b as usize);
            if a > b || b > total {
                return Err(CompositeError::Corrupt("gathered span's pixel range is out of the image".into()));
            }
            spans.push((a, Piece::received(kind, b - a, m)?));
        }
        spans.sort_by_key(|s| s.0);
        let mut next = 0;
        for (a, p) in &spans {
            if *a != next && p.pixels() > 0 {
                return Err(CompositeError::Corrupt(format!("gathered spans leave a gap at pixel {next}")));
            }
            next = a + p.pixels();
        }
        if next != total {
            return Err(CompositeError::Corrupt(format!("gathered {next} of {total} pixels")));
        }
        Ok(Gathered { spans })
    })();
    stats.gather_ms += ms_since(t);
    Ok(Some(result?))
}

#[cfg(test)]
mod tests {
    use engine::testing;

    use super::*;
    use crate::comm::testing::threads;
    use crate::cpu::encode::encode_serial;
    use crate::frame::{raw_words, Frame};
    use crate::patterns;

    /// Where the ranks hold their images.
    #[derive(Clone, Copy, Debug)]
    enum Place {
        HostEncoded,
        HostRaw,
        Device,
    }

    /// Every rank's image at `place` through the exchange: the image rank 0 gathers.
    fn run(place: Place, strategy: Strategy, frames: &[Frame], blenders: &mut [GpuBlender]) -> Frame {
        let ctx = testing::context();
        let (w, h) = (frames[0].width, frames[0].height);
        let gathered = std::thread::scope(|scope| {
            let ranks = threads(frames.len()).into_iter().zip(frames).zip(blenders.iter_mut());
            let handles: Vec<_> = ranks
                .map(|((comm, frame), blender)| {
                    scope.spawn(move || match place {
                        Place::HostEncoded => {
                            let piece = Piece::Encoded(encode_serial(frame));
                            composite_frame(&comm, piece, strategy, Op::ZBuffer, 0)
                        }
                        Place::HostRaw => {
                            let piece =
                                Piece::Raw { pixels: frame.pixels(), words: raw_words(&frame.color, &frame.depth) };
                            composite_frame(&comm, piece, strategy, Op::ZBuffer, 0)
                        }
                        Place::Device => {
                            let color = ctx.upload(&frame.color, "colour").unwrap();
                            let depth = ctx.upload(&frame.depth, "depth").unwrap();
                            let frame = GpuFrame { color: &color, depth: &depth, pixels: frame.pixels() };
                            composite_frame_gpu(&comm, frame, strategy, blender, 0)
                        }
                    })
                })
                .collect();
            let mut results = handles.into_iter().map(|h| h.join().unwrap().unwrap().0);
            results.next().unwrap().unwrap()
        });
        gathered.to_frame(w, h)
    }

    /// The skeleton's rounds, cuts, folds and gather, on the host (encoded and raw) and on
    /// the GPU, against compositing every rank's image in rank order at once, for every
    /// strategy and 1 to 5 ranks on an image whose spans are no multiple of a workgroup.
    #[test]
    fn every_place_and_strategy_gathers_the_rank_order_composite() {
        let ctx = testing::context();
        let (w, h) = (97, 13);
        let mut blenders: Vec<GpuBlender> = (0..5).map(|_| GpuBlender::new(ctx).unwrap()).collect();
        for ranks in 1..=5 {
            let mut frames: Vec<Frame> =
                (0..ranks).map(|r| patterns::all(w, h, 40 + r as u64).pop().unwrap().1).collect();
            let (front, rest) = frames.split_first_mut().unwrap();
            for f in rest {
                patterns::tie(front, f, 3);
            }
            let encoded: Vec<Encoded> = frames.iter().map(encode_serial).collect();
            let all = crate::cpu::blend::composite(&encoded.iter().collect::<Vec<_>>(), Op::ZBuffer).unwrap();
            let want = Frame::decode(&all, w, h);
            for strategy in [Strategy::BinarySwap, Strategy::RadixK, Strategy::DirectSend] {
                for place in [Place::HostEncoded, Place::HostRaw, Place::Device] {
                    let got = run(place, strategy, &frames, &mut blenders[..ranks]);
                    assert!(got == want, "{ranks} ranks, {strategy:?}, {place:?}");
                }
            }
        }
        testing::assert_no_validation_messages();
    }
}
