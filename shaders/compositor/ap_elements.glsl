// The sequence Algorithm 1 runs over when the encoding is limited to the region of interest
// (the paper's Section 4.2: only ROI pixels are encoded, the rest is inactive). Element e of
// the sequence walks the ROI box row by row; where the box is narrower than the image, each
// box row is followed by one "gap" element standing for the inactive pixels between the end
// of this box row and the start of the next one. Gap elements keep inactive and active runs
// alternating (an active run cannot continue across a gap), and run lengths are measured in
// image pixels, so the payload is that of the whole image.
#ifndef TESSERA_AP_ELEMENTS_GLSL
#define TESSERA_AP_ELEMENTS_GLSL

uint el_width;   // image width
uint el_total;   // image pixels
uint el_x0;      // ROI box origin
uint el_y0;
uint el_box_w;   // ROI box width
uint el_stride;  // elements per box row: box_w, plus 1 for the gap when box_w < width
uint el_n;       // number of elements (0: no active pixel at all)
uint el_end;     // image index one past the box's last pixel

// Sets the sequence up for the inclusive box (x0, y0, x1, y1) of a width x height image;
// x0 = 0xFFFFFFFF means the image has no active pixel.
void elements_init(uint width, uint height, uvec4 box) {
    el_width = width;
    el_total = width * height;
    el_n = 0u;
    el_end = 0u;
    if (box.x == 0xFFFFFFFFu) return;
    el_x0 = box.x;
    el_y0 = box.y;
    el_box_w = box.z - box.x + 1u;
    el_stride = el_box_w < width ? el_box_w + 1u : el_box_w;
    el_n = (box.w - box.y + 1u) * el_stride - (el_stride - el_box_w);
    el_end = box.w * width + box.z + 1u;
}

// Whether element e is a gap element.
bool is_gap(uint e) {
    return e % el_stride >= el_box_w;
}

// Image index of element e's first pixel (for a gap: the pixel after its box row); n maps to
// `end`.
uint element_pixel(uint e) {
    if (e >= el_n) return el_end;
    uint row = e / el_stride;
    return (el_y0 + row) * el_width + el_x0 + (e - row * el_stride);
}

// Walks elements e, e + step, e + 2 step, ... with one division at the start: element
// e = row * stride + col, and a step is step_rows whole box rows plus step_cols elements.
struct ElementWalk {
    uint row;
    uint col;
    uint step_rows;
    uint step_cols;
};

ElementWalk walk_start(uint e, uint step) {
    ElementWalk w;
    w.row = e / el_stride;
    w.col = e - w.row * el_stride;
    w.step_rows = step / el_stride;
    w.step_cols = step - w.step_rows * el_stride;
    return w;
}

// Image index of the walk's current element (as element_pixel, for e < n).
uint walk_pixel(ElementWalk w) {
    return (el_y0 + w.row) * el_width + el_x0 + w.col;
}

bool walk_is_gap(ElementWalk w) {
    return w.col >= el_box_w;
}

// Selects, not a branch: a branch between the loads of an unrolled loop made NVIDIA's
// compiler wait for each load before issuing the next.
void walk_next(inout ElementWalk w) {
    w.col += w.step_cols;
    uint wrap = w.col >= el_stride ? 1u : 0u;
    w.col -= wrap * el_stride;
    w.row += w.step_rows + wrap;
}

#endif
