//! `mad batch`: scores every pair of a CSV on the CPU or on one or several GPUs, printing
//! one line per pair in CSV order as soon as it and the pairs before it are done, with a
//! progress bar that follows completed pairs.
//!
//! Workers (one per GPU, or one for the CPU) claim groups of pairs from a shared counter and
//! decode each group in parallel, lazily, so decoding overlaps GPU work; a GPU worker streams
//! its pairs through [`GpuMad::score_stream`], which hands back each chunk as soon as the GPU
//! has finished it.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;

use rayon::prelude::*;

use crate::gpu::{GpuMad, KEPT_SLOTS};
use crate::input::load_pair;
use crate::pairs::Pair;
use crate::report::{BatchLine, Outcome, ScoreReport};
use crate::results::Results;
use crate::{GrayImage, MadError, Scores};

/// Chunks each GPU gets at least, when no `--chunk` is given, so that the progress bar moves
/// through a small batch instead of jumping at its end.
const CHUNKS_PER_DEVICE: usize = 8;

/// Puts batch lines in CSV order as they become ready.
struct Ordered<'a> {
    pairs: &'a [Pair],
    next: usize,
    ready: BTreeMap<usize, BatchLine>,
    failed: usize,
}

impl Ordered<'_> {
    /// Takes pair `index`'s line and passes every line now due, in order, to `print`.
    fn put(&mut self, index: usize, line: BatchLine, print: &mut impl FnMut(&BatchLine)) {
        self.failed += line.failed() as usize;
        self.ready.insert(index, line);
        while let Some(line) = self.ready.remove(&self.next) {
            print(&line);
            self.next += 1;
        }
    }

    /// The pairs no worker reported (their worker failed), with an error line each.
    fn missing(&self, why: &str) -> Vec<(usize, BatchLine)> {
        (self.next..self.pairs.len())
            .filter(|i| !self.ready.contains_key(i))
            .map(|i| (i, line(&self.pairs[i], Err(format!("not scored: {why}")))))
            .collect()
    }
}

fn line(pair: &Pair, outcome: Result<(Scores, usize, usize), String>) -> BatchLine {
    BatchLine {
        reference: pair.ref_name.clone(),
        distorted: pair.dist_name.clone(),
        outcome: match outcome {
            Ok((scores, width, height)) => Outcome::Scored(ScoreReport { scores, width, height, stages: None }),
            Err(error) => Outcome::Failed { error },
        },
    }
}

/// The pairs a worker claims from the shared counter `next`, `group` at a time, each group
/// decoded in parallel when the worker reaches it; a pair that cannot be loaded (or whose
/// scoring would not fit the memory budget: `fits`) is reported on `tx` at once and skipped.
fn claims<'a>(
    pairs: &'a [Pair],
    next: &'a AtomicUsize,
    group: usize,
    tx: mpsc::Sender<(usize, BatchLine)>,
    fits: impl Fn(u64, u64) -> Result<(), MadError> + Sync + 'a,
) -> impl Iterator<Item = (usize, GrayImage, GrayImage)> + 'a {
    std::iter::from_fn(move || {
        let start = next.fetch_add(group, Ordering::Relaxed);
        (start < pairs.len()).then(|| start..(start + group).min(pairs.len()))
    })
    .flat_map(move |range| {
        let decoded: Vec<_> =
            range.into_par_iter().map(|i| (i, load_pair(&pairs[i].reference, &pairs[i].distorted, &fits))).collect();
        decoded
    })
    .filter_map(move |(i, loaded)| match loaded {
        Ok((r, d)) => Some((i, r, d)),
        Err(e) => {
            let _ = tx.send((i, line(&pairs[i], Err(e.to_string()))));
            None
        }
    })
}

/// Scores `pairs` with `gpus` (one worker each), or on the CPU when `gpus` is empty; `chunk`
/// is the GPU chunk size (default: [`GpuMad::default_chunk`], at most the share that gives
/// each GPU [`CHUNKS_PER_DEVICE`] chunks). With a results file, the pairs it already holds
/// are skipped and every new line is appended to it. Fails, after every line is printed,
/// when any pair failed.
pub fn run(
    pairs: Vec<Pair>,
    chunk: Option<usize>,
    mut gpus: Vec<GpuMad>,
    mut results: Option<Results>,
) -> Result<(), MadError> {
    let pairs: Vec<Pair> = match &results {
        Some(r) => pairs.into_iter().filter(|p| !r.has(&p.ref_name, &p.dist_name)).collect(),
        None => pairs,
    };
    let pairs = &pairs[..];
    let out_path = results.as_ref().map(|r| r.path().to_path_buf());
    let outs: Vec<&Path> = out_path.iter().map(|p| p.as_path()).collect();
    let mut write_error: Option<MadError> = None;
    if chunk.is_none() {
        let share = pairs.len().div_ceil(gpus.len().max(1) * CHUNKS_PER_DEVICE).max(1);
        gpus.iter_mut().for_each(|gpu| gpu.set_chunk_cap(share));
    }
    let group = rayon::current_num_threads().max(4) * 2;
    let next = &AtomicUsize::new(0);
    let bar = kit::progress::bar(pairs.len() as u64, "mad batch");
    let mut out = Ordered { pairs, next: 0, ready: BTreeMap::new(), failed: 0 };
    let mut print = |line: &BatchLine| {
        bar.suspend(|| kit::emit(line, &outs));
        if let Some(r) = results.as_mut() {
            if let Err(e) = r.append(line) {
                write_error.get_or_insert(e);
            }
        }
    };
    let worker_errors: Vec<MadError> = std::thread::scope(|scope| {
        let (tx, rx) = mpsc::channel::<(usize, BatchLine)>();
        let mut workers = Vec::new();
        if gpus.is_empty() {
            let tx = tx.clone();
            workers.push(scope.spawn(move || -> Result<(), MadError> {
                for (i, r, d) in claims(pairs, next, group, tx.clone(), crate::cpu::check_budget) {
                    // No maps: a batch writes none, and in tiles they would be assembled for nothing.
                    let outcome = crate::cpu::score_with(&r, &d, false).map(|(s, _)| (s, r.width, r.height));
                    let _ = tx.send((i, line(&pairs[i], outcome.map_err(|e| e.to_string()))));
                }
                Ok(())
            }));
        }
        for gpu in gpus {
            let tx = tx.clone();
            workers.push(scope.spawn(move || -> Result<(), MadError> {
                let gpu = &gpu;
                // A stream has up to KEPT_SLOTS chunks in flight.
                let fits = |w: u64, h: u64| {
                    gpu.check_budget(w, h, 1, KEPT_SLOTS as u64, false)?;
                    let chunk = chunk.unwrap_or_else(|| gpu.default_chunk(w as usize, h as usize));
                    gpu.check_budget(w, h, chunk as u64, KEPT_SLOTS as u64, false)
                };
                let stream = claims(pairs, next, group, tx.clone(), fits);
                gpu.score_stream(stream, chunk, false, |s| {
                    let _ = tx.send((s.tag, line(&pairs[s.tag], Ok((s.scores, s.width, s.height)))));
                })?;
                Ok(())
            }));
        }
        drop(tx);
        for (i, l) in rx {
            bar.inc(1);
            out.put(i, l, &mut print);
        }
        workers.into_iter().filter_map(|w| w.join().unwrap_or(Err(MadError::WorkerPanicked)).err()).collect()
    });
    if let Some(first) = worker_errors.first() {
        for (i, l) in out.missing(&first.to_string()) {
            out.put(i, l, &mut print);
        }
    }
    bar.finish_and_clear();
    if let Some(e) = write_error {
        return Err(e);
    }
    match out.failed {
        0 => Ok(()),
        failed => Err(MadError::PairsFailed { failed, total: pairs.len() }),
    }
}
