/*
 * tessera_composite.h: sort-last compositing of a renderer's colour and depth buffers
 * across the ranks of an MPI communicator (libtessera_composite.so; docs/compositing.md).
 *
 * Buffers are always the full image, rows top to bottom. RGBA8 colour is 4 bytes a pixel,
 * RGBA32F 16; blending takes premultiplied alpha. A pixel with depth 1.0 (or +inf) is
 * background (with TC_DEPTH_NONE: a pixel whose colour is all zero), and the background
 * colour replaces whatever colour it holds. The viewport (x, y from the top-left, w, h)
 * says which pixels hold anything; pixels outside it are ignored.
 *
 * Every function but tc_create returns 0 on success and a negative code on failure, with
 * tc_last_error(ctx) saying why; tc_create returns NULL only for an unusable communicator
 * (tc_last_error(NULL) then says why). tc_create and tc_composite are collective over the
 * communicator: a bad argument on one rank fails the call on every rank. Nothing aborts or
 * exits the caller's process, and MPI is never finalised by the library.
 */
#ifndef TESSERA_COMPOSITE_H
#define TESSERA_COMPOSITE_H

#include <mpi.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tc_context tc_context;

enum { TC_RGBA8 = 1, TC_RGBA32F = 2 };            /* colour formats */
enum { TC_DEPTH_NONE = 0, TC_DEPTH_F32 = 1 };     /* depth formats */
enum { TC_ZBUFFER = 1, TC_BLEND_OVER = 2 };       /* modes; blending takes premultiplied alpha */
enum { TC_AUTO = 0, TC_BINARY_SWAP = 1, TC_RADIX_K = 2, TC_DIRECT_SEND = 3 };

/* Error codes. */
#define TC_ERR_ARGUMENT (-1) /* a null pointer, a size, a format, a rank, an order */
#define TC_ERR_FAILED (-2)   /* MPI or the device failed */
#define TC_ERR_INTERNAL (-3) /* a bug in the library, caught */

tc_context *tc_create(MPI_Comm comm, int width, int height,
                      int color_format, int depth_format, int mode);
int tc_set_strategy(tc_context *ctx, int strategy);
int tc_set_order(tc_context *ctx, const int *ranks_front_to_back, int n);
int tc_set_root(tc_context *ctx, int root);
int tc_set_background(tc_context *ctx, const float rgba[4]);
int tc_composite(tc_context *ctx, const void *color, const float *depth,
                 const int viewport[4],   /* x, y, w, h of the valid pixels, or NULL */
                 void *out_color,         /* root: width*height pixels; others may pass NULL */
                 float *out_depth);       /* root, or NULL */
double tc_last_time_ms(const tc_context *ctx, const char *phase); /* "total", "encode", "exchange", "composite", "gather" */
long long tc_last_bytes_sent(const tc_context *ctx);
const char *tc_last_error(const tc_context *ctx);
void tc_destroy(tc_context *ctx);

#ifdef __cplusplus
}
#endif

#endif
