//! D's upload to the device, converted on the way (to the f32 or i32 a solver works on): in
//! chunks of rows through two staging buffers, each converted on all cores while the other's
//! copy runs on the transfer queue. No converted copy of the whole matrix is made on the
//! host, which cost more than the copy itself (a fresh allocation's page faults, then a
//! second pass over it into the staging memory).

use engine::{Buffer, Context, Location, Submission};
use rayon::prelude::*;

use crate::error::Result;
use crate::matrix::DistanceMatrix;

/// Entries per chunk (16 MiB of 32-bit values).
const CHUNK: usize = 1 << 22;

/// Writes `convert(d's row, the device row)` for every row of `d` into `dst` (d.rows x d.cols
/// entries, row-major). Should `convert` return false for a row (a value the solver cannot
/// take), the upload stops there and the result is false.
pub fn upload_rows<T: bytemuck::Pod + Send + Sync>(
    ctx: &Context,
    d: &DistanceMatrix,
    dst: &Buffer<T>,
    what: &str,
    convert: impl Fn(&[f64], &mut [T]) -> bool + Sync,
) -> Result<bool> {
    let n = d.cols;
    let chunk = (CHUNK / n).max(1) * n;
    let staging = |k| ctx.buffer::<T>(chunk.min(d.data.len()), Location::Upload, &format!("{what} (staging {k})"));
    let mut slots = [(staging(0)?, None), (staging(1)?, None)];
    for (k, from) in d.data.chunks(chunk).enumerate() {
        let (buffer, copy): &mut (Buffer<T>, Option<Submission>) = &mut slots[k % 2];
        if let Some(copy) = copy.take() {
            copy.wait()?;
        }
        let to = &mut buffer.mapped_mut()?[..from.len()];
        if !to.par_chunks_mut(n).zip(from.par_chunks(n)).all(|(to, from)| convert(from, to)) {
            return Ok(false);
        }
        let mut rec = ctx.transfer_recorder()?;
        rec.copy_region(buffer, 0, dst, k * chunk, from.len());
        *copy = Some(rec.submit()?);
    }
    for (_, copy) in slots {
        if let Some(copy) = copy {
            copy.wait()?;
        }
    }
    Ok(true)
}
