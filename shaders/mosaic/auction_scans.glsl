// The scans of one auction round that the Jacobi kernels and the tail kernels share, so a
// tail round computes exactly what a Jacobi round does. The includer defines
// AUCTION_BID_SCAN (with buffers d and price and push constants n and eps) or
// AUCTION_OFFER_SCAN (buffers dt, w and price; push constants m and eps), and includes
// auction_select.glsl first. Every invocation of the workgroup calls a scan; it returns true
// on invocation 0 only.
#ifndef AUCTION_SCANS_GLSL
#define AUCTION_SCANS_GLSL

#ifdef AUCTION_BID_SCAN
// Row i's bid: the column of its smallest d + price, and the bid's bits.
bool bid_scan(uint i, out uint column, out uint bid_bits) {
    float best = INF;
    float second = INF;
    uint index = NONE;
    uint base = i * n;
    for (uint j = gl_LocalInvocationID.x; j < n; j += gl_WorkGroupSize.x) {
        precise float x = d[base + j] + price[j];
        select_fold(x, j, best, second, index);
    }
    float b, s;
    uint w;
    bool lead = select_combine(best, second, index, b, s, w);
    // The shared slots are read before the next scan writes them.
    barrier();
    if (!lead) return false;
    float p = price[w];
    // A single column has no second best: the bid is then just eps above the price.
    precise float gap = s == INF ? 0.0 : s - b;
    precise float bid = (p + gap) + eps;
    // Rounding must never leave the price where it is (the auction would not end).
    if (!(bid > p)) bid = uintBitsToFloat(floatBitsToUint(p) + 1u);
    column = w;
    bid_bits = floatBitsToUint(bid);
    return true;
}
#endif

#ifdef AUCTION_OFFER_SCAN
// Column j's offer at lambda `l`: the row, the row's value with the offer and the offered
// price; or row NONE, and j comes down to l.
bool offer_scan(uint j, float l, out uint row, out uint value_bits, out float offer) {
    float best = INF;
    float second = INF;
    uint index = NONE;
    for (uint i = gl_LocalInvocationID.x; i < m; i += gl_WorkGroupSize.x) {
        precise float y = dt[j * m + i] - w[i];
        select_fold(y, i, best, second, index);
    }
    float b, s;
    uint i;
    bool lead = select_combine(best, second, index, b, s, i);
    // The shared slots are read before the next scan writes them.
    barrier();
    if (!lead) return false;
    precise float top = -b - eps;
    // A single row has no second: -INF - eps stays below lambda.
    precise float low = -s - eps;
    offer = low > l ? low : l;
    precise float value = dt[j * m + i] + offer;
    if (!(top > l) || !(value < w[i])) {
        price[j] = l;
        row = NONE;
    } else {
        row = i;
        value_bits = floatBitsToUint(value);
    }
    return true;
}
#endif

#endif
