//! Fitting to a target quality (`smoe fit --psnr`): the smallest kernel count whose fit
//! reaches a PSNR, by doubling K from a small start until a fit reaches the target, then
//! halving the gap between the largest K that missed and the smallest that reached it
//! until the gap is within a tenth. The PSNR of a fit rises with K on natural images, so
//! this finds the smallest K to within 10% in about log2(K / start) + 4 fits.

/// How close the search brackets the smallest K: the last K that missed is within this
/// fraction of the K returned.
pub const RESOLUTION: f64 = 0.1;

/// One fit of the search.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct Trial {
    pub kernels: usize,
    pub psnr_db: f64,
}

/// What the search found: the fit (`F`, whatever `trial` returns beside its PSNR) of the
/// smallest K that reached the target, and every trial in order.
pub struct Found<F> {
    pub kernels: usize,
    pub fit: F,
    pub trials: Vec<Trial>,
}

/// The first K to try for `samples` samples: one kernel per 400 samples (about 20 dB on
/// photographs), at least 16, at most `max`.
pub fn start_kernels(samples: usize, max: usize) -> usize {
    (samples / 400).clamp(16.min(max), max)
}

/// Searches K in `start..=max` for the smallest whose fit reaches `target_db`; `trial(k)`
/// fits k kernels and returns the PSNR and the fit. Returns None (with the trials) when
/// even `max` kernels miss the target.
pub fn smallest_kernels<F, E>(
    start: usize,
    max: usize,
    target_db: f64,
    mut trial: impl FnMut(usize) -> Result<(f64, F), E>,
) -> Result<Result<Found<F>, Vec<Trial>>, E> {
    let mut trials = Vec::new();
    let (mut missed, mut reached): (usize, Option<(usize, F)>) = (0, None);
    let mut k = start.clamp(1, max.max(1));
    loop {
        let (psnr_db, fit) = trial(k)?;
        trials.push(Trial { kernels: k, psnr_db });
        if psnr_db >= target_db {
            reached = Some((k, fit));
        } else {
            missed = k;
        }
        k = match &reached {
            None if k >= max => return Ok(Err(trials)),
            None => (k * 2).min(max),
            Some((hi, _)) => {
                let gap = hi - missed;
                if gap as f64 <= RESOLUTION * *hi as f64 || gap <= 1 {
                    break;
                }
                missed + gap / 2
            }
        };
    }
    let (kernels, fit) = reached.expect("the loop ends only once a fit reached the target");
    Ok(Ok(Found { kernels, fit, trials }))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A PSNR that rises with K like a photograph's (about 6 dB per quadrupling).
    fn psnr(k: usize) -> f64 {
        20.0 + 10.0 * (k as f64 / 100.0).log10()
    }

    #[test]
    fn finds_the_smallest_k_within_the_resolution() {
        for target in [20.0, 25.5, 31.0, 34.0] {
            let smallest = (100.0 * 10f64.powf((target - 20.0) / 10.0)).ceil() as usize;
            let found = smallest_kernels(100, 1 << 20, target, |k| Ok::<_, ()>((psnr(k), k))).unwrap().unwrap();
            assert!(psnr(found.kernels) >= target && found.fit == found.kernels);
            assert!(found.kernels >= smallest, "{} < {smallest}", found.kernels);
            assert!(
                found.kernels as f64 <= smallest as f64 / (1.0 - RESOLUTION) + 1.0,
                "{} for {smallest}",
                found.kernels
            );
            assert!(found.trials.len() <= 16, "{:?}", found.trials);
        }
    }

    #[test]
    fn reports_a_target_beyond_the_largest_k() {
        let trials = smallest_kernels(10, 1000, 60.0, |k| Ok::<_, ()>((psnr(k), ()))).unwrap().err().unwrap();
        assert_eq!(trials.last().unwrap().kernels, 1000);
        assert_eq!(trials.iter().map(|t| t.kernels).collect::<Vec<_>>(), [10, 20, 40, 80, 160, 320, 640, 1000]);
    }

    #[test]
    fn start_is_clamped() {
        assert_eq!(start_kernels(100, 5000), 16);
        assert_eq!(start_kernels(4_000_000, 5000), 5000);
        assert_eq!(start_kernels(100, 4), 4);
    }
}
