// The seams' ramped lines on the GPU (apps/mad/src/gpu/seam_lines.rs, the twin of
// mad::seams::Seams::lines_into): whole rows (P) or whole columns (Q) of one gray image less
// its mean, a chunk of lines at a time, transformed along their length, multiplied by the
// ramp, transformed back and cut to the tile window's columns (rows).
#ifndef TESSERA_SEAM_COMMON_GLSL
#define TESSERA_SEAM_COMMON_GLSL

// width, height: the image; len: a line's length (width for rows, height for columns);
// lines: lines in this chunk; first: the window line of the chunk's first; window_w,
// window_h: the window; origin_x, origin_y: the image pixel of the window's first, modulo
// the image's sides; rows: 1 for P (rows), 0 for Q (columns); out_offset: the element of the
// output where this image's P or Q starts; mean: the image's mean.
layout(push_constant) uniform Push {
    uint width;
    uint height;
    uint len;
    uint lines;
    uint first;
    uint window_w;
    uint window_h;
    uint origin_x;
    uint origin_y;
    uint rows;
    uint out_offset;
    float mean;
};

#endif
