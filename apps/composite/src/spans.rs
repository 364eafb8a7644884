//! Cutting an encoded span into pieces at pixel boundaries and joining pieces back: what
//! the distributed exchange sends around, and how the multithreaded encoder joins its
//! bands. Both work on the run headers; no pixel is decoded. [`Cursor`]s stand at any pixel
//! of a payload, so that large spans are cut (and composited, [`crate::cpu::blend`]) in
//! parallel parts.

use rayon::prelude::*;

use crate::ap::{runs_of, ApWriter, Encoded, PIXEL_WORDS};

/// Pixels below which spans are cut and composited on one thread.
pub(crate) const PARALLEL_PIXELS: usize = 1 << 16;

/// Splits an encoded RGBA8 span at the given pixel boundaries (`bounds` ascending, each at
/// most `encoded.pixels`): piece `k` covers `bounds[k-1]..bounds[k]`, with 0 and `pixels` as
/// the outer ends, so there are `bounds.len() + 1` pieces.
pub fn split(encoded: &Encoded, bounds: &[usize]) -> Vec<Encoded> {
    split_of(encoded, bounds, PIXEL_WORDS)
}

/// [`split`] for a payload of `stride` words per active pixel; large spans are cut into
/// their pieces in parallel.
pub fn split_of(encoded: &Encoded, bounds: &[usize], stride: usize) -> Vec<Encoded> {
    if encoded.pixels < PARALLEL_PIXELS || encoded.words.is_empty() || rayon::current_num_threads() == 1 {
        return split_serial(encoded, bounds, stride);
    }
    let starts: Vec<usize> = std::iter::once(0).chain(bounds.iter().copied()).collect();
    let ends: Vec<usize> = bounds.iter().copied().chain(std::iter::once(encoded.pixels)).collect();
    let firsts: Vec<usize> = starts.iter().zip(&ends).filter(|(s, e)| s < e).map(|(s, _)| *s).collect();
    let mut cursors = Cursor::at(&encoded.words, stride, &firsts).into_iter();
    // The writers are made here, not on the pool's threads: the caller's allocator arena
    // reuses a frame's buffers for the next frame, where other threads' arenas map fresh
    // pages (page faults) for buffers this large.
    let parts: Vec<(usize, Option<Cursor>, ApWriter)> = starts
        .iter()
        .zip(&ends)
        .map(|(&s, &e)| {
            let share = (encoded.words.len() as u64 * (e - s) as u64 / encoded.pixels as u64) as usize;
            (e - s, (s < e).then(|| cursors.next()).flatten(), ApWriter::of(share + share / 8 + 16, stride))
        })
        .collect();
    parts
        .into_par_iter()
        .map(|(pixels, cursor, mut out)| {
            if let Some(mut c) = cursor {
                c.copy_into(pixels, &mut out);
            }
            Encoded { pixels, words: out.finish() }
        })
        .collect()
}

/// [`split_of`] in one walk.
fn split_serial(encoded: &Encoded, bounds: &[usize], stride: usize) -> Vec<Encoded> {
    let mut ends: Vec<usize> = bounds.to_vec();
    ends.push(encoded.pixels);
    let mut pieces = Vec::with_capacity(ends.len());
    // Sized for an even share of the words, so a writer rarely grows (each growth copies).
    let share = encoded.words.len() / ends.len() + encoded.words.len() / (4 * ends.len()) + 4;
    let mut writer = ApWriter::of(share, stride);
    let mut start = 0usize;
    let mut k = 0usize;
    let mut pos = 0usize;
    let mut close = |writer: &mut ApWriter, start: &mut usize, end: usize| {
        pieces.push(Encoded {
            pixels: end - *start,
            words: std::mem::replace(writer, ApWriter::of(share, stride)).finish(),
        });
        *start = end;
    };
    for run in runs_of(&encoded.words, stride) {
        let mut inactive = run.inactive as usize;
        while inactive > 0 {
            while pos == ends[k] {
                close(&mut writer, &mut start, ends[k]);
                k += 1;
            }
            let n = inactive.min(ends[k] - pos);
            writer.push_inactive(n as u32);
            pos += n;
            inactive -= n;
        }
        let mut px = run.pixels;
        while !px.is_empty() {
            while pos == ends[k] {
                close(&mut writer, &mut start, ends[k]);
                k += 1;
            }
            let n = (px.len() / stride).min(ends[k] - pos);
            writer.push_active(&px[..stride * n]);
            pos += n;
            px = &px[stride * n..];
        }
    }
    while k < ends.len() {
        close(&mut writer, &mut start, ends[k]);
        k += 1;
    }
    pieces
}

/// Joins encoded RGBA8 spans that follow each other into one.
pub fn concat(pieces: Vec<Encoded>) -> Encoded {
    concat_of(pieces, PIXEL_WORDS)
}

/// [`concat`] for payloads of `stride` words per active pixel; large payloads are copied in
/// parallel ([`concat_parallel`]).
pub fn concat_of(mut pieces: Vec<Encoded>, stride: usize) -> Encoded {
    if pieces.len() == 1 {
        return pieces.remove(0);
    }
    if pieces.iter().map(|p| p.words.len()).sum::<usize>() >= PARALLEL_PIXELS {
        return concat_parallel(&pieces, stride);
    }
    let mut writer = ApWriter::of(pieces.iter().map(|p| p.words.len()).sum(), stride);
    for p in &pieces {
        writer.push_runs(&p.words);
    }
    Encoded { pixels: pieces.iter().map(|p| p.pixels).sum(), words: writer.finish() }
}

/// [`concat_of`] with every piece's words copied in parallel into their place: a walk over
/// the pieces' first and last run headers plans where each piece's words go and which
/// headers join across the seams (a piece ending inactive and the next one's first run; a
/// piece ending active and the next one starting active), then the copies run at once and
/// the joined headers' counts are written.
fn concat_parallel(pieces: &[Encoded], stride: usize) -> Encoded {
    // Per piece with active pixels, in order: the header written before its words (none
    // where its first run joins the open one), and its words but the first and a trailing
    // inactive header.
    struct Plan<'a> {
        head: Option<[u32; 2]>,
        words: &'a [u32],
    }
    let mut plans = Vec::with_capacity(pieces.len());
    let mut counts: Vec<(usize, u32)> = Vec::new();
    // Inactive pixels not yet written; the output index and active count of the run still
    // open at the end of the pieces so far.
    let (mut pending, mut open, mut at) = (0u32, None::<(usize, u32)>, 0usize);
    let mut close = |open: &mut Option<(usize, u32)>| {
        if let Some((h, count)) = open.take() {
            counts.push((h + 1, count));
        }
    };
    for p in pieces.iter().filter(|p| !p.words.is_empty()) {
        let w = &p.words[..];
        let mut last = 0;
        let mut pos = 0;
        while pos + 2 <= w.len() {
            last = pos;
            pos += 2 + stride * w[pos + 1] as usize;
        }
        let trailing = w[last + 1] == 0;
        if trailing && last == 0 {
            pending += w[0];
            close(&mut open);
            continue;
        }
        let body = &w[2..if trailing { last } else { w.len() }];
        let (inactive, active) = (w[0], w[1]);
        let head = match open.as_mut() {
            Some((_, count)) if inactive == 0 && pending == 0 => {
                *count += active;
                None
            }
            _ => {
                close(&mut open);
                open = Some((at, active));
                Some([pending + inactive, active])
            }
        };
        pending = 0;
        let head_words = if head.is_some() { 2 } else { 0 };
        if trailing {
            close(&mut open);
            pending = w[last];
        } else if last > 0 {
            close(&mut open);
            open = Some((at + head_words + last - 2, w[last + 1]));
        }
        plans.push(Plan { head, words: body });
        at += head_words + body.len();
    }
    close(&mut open);
    let tail = if pending > 0 { 2 } else { 0 };
    // Zeroed by the allocator's fresh pages: the copies touch them, in parallel.
    let mut out = vec![0u32; at + tail];
    let mut regions = Vec::with_capacity(plans.len());
    let mut rest = &mut out[..at];
    for plan in &plans {
        let len = plan.words.len() + if plan.head.is_some() { 2 } else { 0 };
        let (mine, tail) = std::mem::take(&mut rest).split_at_mut(len);
        regions.push((mine, plan));
        rest = tail;
    }
    regions.into_par_iter().for_each(|(region, plan)| {
        let body = match plan.head {
            Some(head) => {
                region[..2].copy_from_slice(&head);
                &mut region[2..]
            }
            None => region,
        };
        body.copy_from_slice(plan.words);
    });
    for (i, count) in counts {
        out[i] = count;
    }
    if pending > 0 {
        out[at..].copy_from_slice(&[pending, 0]);
    }
    Encoded { pixels: pieces.iter().map(|p| p.pixels).sum(), words: out }
}

/// Where one input stands in its run stream.
#[derive(Clone)]
pub(crate) struct Cursor<'a> {
    words: &'a [u32],
    /// Word index of the next run header.
    next: usize,
    pub(crate) inactive_left: u32,
    pub(crate) active: &'a [u32],
    /// Words per active pixel.
    stride: usize,
}

impl<'a> Cursor<'a> {
    /// Cursors at pixels `bounds` (ascending, each below the payload's pixel count) of a
    /// payload, found by one walk over its run headers.
    pub(crate) fn at(words: &'a [u32], stride: usize, bounds: &[usize]) -> Vec<Cursor<'a>> {
        let mut cursors = Vec::with_capacity(bounds.len());
        let mut bounds = bounds.iter().copied().peekable();
        let (mut p, mut next) = (0usize, 0usize);
        for run in runs_of(words, stride) {
            let (inactive, active) = (run.inactive as usize, run.active as usize);
            next += 2 + stride * active;
            while let Some(b) = bounds.next_if(|&b| b < p + inactive + active) {
                let (inactive_left, active) = match b < p + inactive {
                    true => ((p + inactive - b) as u32, run.pixels),
                    false => (0, &run.pixels[stride * (b - p - inactive)..]),
                };
                cursors.push(Cursor { words, next, inactive_left, active, stride });
            }
            p += inactive + active;
        }
        cursors
    }

    /// Makes sure the cursor holds a non-empty segment (the payload covers the pixels still
    /// to come, so a next run exists).
    pub(crate) fn refill(&mut self) {
        if self.inactive_left == 0 && self.active.is_empty() && self.next + 2 <= self.words.len() {
            let (inactive, active) = (self.words[self.next], self.words[self.next + 1] as usize);
            let start = self.next + 2;
            self.next = start + self.stride * active;
            self.inactive_left = inactive;
            self.active = &self.words[start..self.next];
        }
    }

    /// Length of the current uniform segment and whether it is active.
    pub(crate) fn segment(&self) -> (u32, bool) {
        if self.inactive_left > 0 {
            (self.inactive_left, false)
        } else {
            ((self.active.len() / self.stride) as u32, true)
        }
    }

    /// Copies the next `pixels` pixels into `out`.
    fn copy_into(&mut self, mut pixels: usize, out: &mut ApWriter) {
        while pixels > 0 {
            self.refill();
            let (n, active) = self.segment();
            let len = (n as usize).min(pixels);
            if active {
                out.push_active(&self.active[..self.stride * len]);
            } else {
                out.push_inactive(len as u32);
            }
            self.advance(len as u32);
            pixels -= len;
        }
    }

    pub(crate) fn advance(&mut self, n: u32) {
        if self.inactive_left > 0 {
            self.inactive_left -= n;
        } else {
            self.active = &self.active[self.stride * n as usize..];
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::encode::{encode_range, encode_serial};
    use crate::patterns;

    #[test]
    fn split_then_concat_is_identity() {
        for (name, frame) in patterns::at_every_size(3) {
            let e = encode_serial(&frame);
            let n = frame.pixels();
            let bounds = [0, n / 3, n / 3, n / 2, n];
            let pieces = split(&e, &bounds);
            assert_eq!(pieces.len(), bounds.len() + 1);
            let mut start = 0;
            for (k, p) in pieces.iter().enumerate() {
                let end = bounds.get(k).copied().unwrap_or(n);
                assert_eq!(p.pixels, end - start);
                crate::ap::validate(&p.words, p.pixels).unwrap();
                assert_eq!(*p, encode_range(&frame, start, end), "{name} piece {k}");
                start = end;
            }
            assert_eq!(concat(pieces), e, "{name} {}x{}", frame.width, frame.height);
        }
    }
}
