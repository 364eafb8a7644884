// The sequence Algorithm 1 runs over when the encoding is limited to the region of interest
// (the paper's Section 4.2: only ROI pixels are encoded, the rest is inactive). Element e of
// the sequence walks the ROI box row by row; where the box is narrower than the image, each
// box row is followed by one "gap" element standing for the inactive pixels between the end
// of this box row and the start of the next one. Gap elements keep inactive and active runs
// alternating (an active run cannot continue across a gap), and run lengths are measured in
// image pixels, so the payload is that of the whole image.
#ifndef TESSERA_AP_ELEMENTS_GLSL
#define TESSERA_AP_ELEMENTS_GLSL

layout(push_constant) uniform Push {
    uint width;   // image width
    uint x0;      // ROI box origin
    uint y0;
    uint box_w;   // ROI box width
    uint n;       // number of elements
    uint stride;  // elements per box row: box_w, plus 1 for the gap when box_w < width
    uint total;   // image pixels
    uint end;     // image index one past the box's last pixel
};

// Whether element e is a gap element.
bool is_gap(uint e) {
    return e % stride >= box_w;
}

// Image index of element e's first pixel (for a gap: the pixel after its box row); n maps to
// `end`.
uint element_pixel(uint e) {
    if (e >= n) return end;
    uint row = e / stride;
    return (y0 + row) * width + x0 + (e - row * stride);
}

#endif
