//! The records `mad score` and `mad batch` print through [`kit::emit`]: a text line (their
//! `Display`) or, under `--json`, one envelope per record (docs/cli.md, docs/formats.md).

use std::fmt;

use serde::Serialize;

use crate::gpu::StageTimes;
use crate::Scores;

/// The scores of one pair and its size.
#[derive(Clone, Debug, Serialize)]
pub struct ScoreReport {
    #[serde(flatten)]
    pub scores: Scores,
    pub width: usize,
    pub height: usize,
    /// Each device's GPU time under `mad score --split-stages` (absent otherwise).
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub stages: Option<StageTimes>,
}

impl fmt::Display for ScoreReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = &self.scores;
        write!(
            f,
            "MAD {:.4} (detection {:.4}, appearance {:.4}, alpha {:.4}) {}x{}",
            s.mad, s.detection, s.appearance, s.alpha, self.width, self.height
        )
    }
}

/// One line of `mad batch`: the pair as written in the CSV, and its scores or its error.
#[derive(Clone, Debug, Serialize)]
pub struct BatchLine {
    #[serde(rename = "ref")]
    pub reference: String,
    #[serde(rename = "dist")]
    pub distorted: String,
    #[serde(flatten)]
    pub outcome: Outcome,
}

/// What became of one pair.
#[derive(Clone, Debug, Serialize)]
#[serde(untagged)]
pub enum Outcome {
    Scored(ScoreReport),
    Failed { error: String },
}

impl BatchLine {
    pub fn failed(&self) -> bool {
        matches!(self.outcome, Outcome::Failed { .. })
    }
}

impl fmt::Display for BatchLine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.outcome {
            Outcome::Scored(r) => write!(f, "{} {}: MAD {:.4}", self.reference, self.distorted, r.scores.mad),
            Outcome::Failed { error } => write!(f, "{} {}: error: {error}", self.reference, self.distorted),
        }
    }
}
