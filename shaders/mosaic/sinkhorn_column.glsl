// SoftAssign's column normalisation with the outlier row (an unused tile costs 0): the
// column's row-normalised sum plus O[j] = exp(clamp(g[j] / t)) is scaled to the tile's
// capacity N (the uses it may have, --repeat): g[j] -= t (ln(colsum + O[j]) - ln N).
#ifndef TESSERA_SINKHORN_COLUMN_GLSL
#define TESSERA_SINKHORN_COLUMN_GLSL

float normalised_column(float gj, float colsum, float t, float clamp_, float log_capacity) {
    return gj - t * (log(colsum + exp(clamp(gj / t, -clamp_, clamp_))) - log_capacity);
}

#endif
