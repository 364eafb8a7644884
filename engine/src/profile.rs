//! GPU timestamps turned into named per-pass milliseconds.
//!
//! A [`crate::Recorder`] with profiling on writes a timestamp at the start and one at each
//! [`crate::Recorder::mark`]; after the submission completes, each mark's time is the GPU
//! time since the previous mark.

use std::sync::Arc;

use ash::vk;

use crate::context::Shared;
use crate::error::{Result, VkContext};

/// GPU time of one named pass.
#[derive(Clone, Debug, serde::Serialize)]
pub struct PassTime {
    pub name: String,
    pub ms: f64,
}

/// Sums pass times by name (a pass marked several times, e.g. once per iteration).
pub fn total_by_name(passes: &[PassTime]) -> Vec<PassTime> {
    let mut out: Vec<PassTime> = Vec::new();
    for p in passes {
        match out.iter_mut().find(|o| o.name == p.name) {
            Some(o) => o.ms += p.ms,
            None => out.push(p.clone()),
        }
    }
    out
}

pub(crate) struct Timestamps {
    shared: Arc<Shared>,
    pub pool: vk::QueryPool,
    pub capacity: u32,
    pub names: Vec<String>,
}

impl Timestamps {
    pub fn new(shared: Arc<Shared>, capacity: u32) -> Result<Timestamps> {
        let pool = unsafe {
            shared.device.create_query_pool(
                &vk::QueryPoolCreateInfo::default().query_type(vk::QueryType::TIMESTAMP).query_count(capacity),
                None,
            )
        }
        .vk("vkCreateQueryPool")?;
        Ok(Timestamps { shared, pool, capacity, names: Vec::new() })
    }

    /// Reads the written timestamps (the submission has completed) as pass times.
    pub fn read(&self) -> Result<Vec<PassTime>> {
        let n = self.names.len();
        if n < 2 {
            return Ok(Vec::new());
        }
        let mut ticks = vec![0u64; n];
        unsafe {
            self.shared.device.get_query_pool_results(
                self.pool,
                0,
                &mut ticks,
                vk::QueryResultFlags::TYPE_64 | vk::QueryResultFlags::WAIT,
            )
        }
        .vk("vkGetQueryPoolResults")?;
        let period = self.shared.info.timestamp_period_ns as f64;
        Ok((1..n)
            .map(|i| PassTime {
                name: self.names[i].clone(),
                ms: ticks[i].wrapping_sub(ticks[i - 1]) as f64 * period * 1e-6,
            })
            .collect())
    }
}

impl Drop for Timestamps {
    fn drop(&mut self) {
        unsafe { self.shared.device.destroy_query_pool(self.pool, None) };
    }
}
