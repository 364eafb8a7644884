/*
 * render: an example renderer on the compositing library (include/tessera_composite.h).
 * Each rank ray-casts its share of a scene of spheres on the CPU into full-size colour and
 * depth buffers, hands them to tc_composite with the viewport of the pixels it drew, and
 * the root writes the composited image as a PNG.
 *
 *   mpirun -n 3 render --size 160x120 --out frame.png [--mode zbuffer|over]
 *          [--empty-rank R] [--order reverse] [--root R] [--float] [--partials DIR]
 *          [--spheres N] [--frames N] [--strategy auto|bswap|radixk|direct] [--check-errors]
 *
 * --mode over gives every sphere alpha 0.6 (premultiplied) and blends the ranks front to
 * back in rank order (or reversed with --order reverse). --empty-rank R leaves rank R with
 * nothing to draw (an empty viewport). --float composites RGBA32F colour instead of RGBA8.
 * --partials DIR writes each rank's buffers as DIR/rank{r}.rgba (RGBA8) and
 * DIR/rank{r}.depth (little-endian f32), the layout `composite merge` and the IceT driver
 * read. --check-errors calls the library with bad arguments first and checks that each
 * call fails with a negative code and a message. --frames N composites the same buffers N
 * times (for timing); --strategy picks the library's strategy (TC_AUTO by default). The
 * root prints one JSON line of the library's per-phase times per frame.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tessera_composite.h>

#include "png.h"

static int rank, nranks;

/* A sphere's centre (x, y in pixels, z in [0, 1]), radius in pixels and colour. */
typedef struct { float x, y, z, r; float rgb[3]; } sphere;

/* A small linear congruential generator: the same scene on every rank. */
static uint32_t seed = 12345;
static float rnd(void) { seed = seed * 1664525u + 1013904223u; return (seed >> 8) / 16777216.0f; }

static int fail(const char *what, const tc_context *ctx)
{
    fprintf(stderr, "render[rank %d]: %s: %s\n", rank, what, tc_last_error(ctx));
    return 1;
}

/* Calls that must fail with a negative code and a message; returns the number that did not. */
static int check_errors(int w, int h)
{
    int bad = 0;
    tc_context *ctx = tc_create(MPI_COMM_WORLD, 0, h, TC_RGBA8, TC_DEPTH_F32, TC_ZBUFFER);
    float pixel[4] = {0};
    int rc;
#define EXPECT(call, c) do { rc = (call); const char *m = tc_last_error(c); \
    if (rc >= 0 || !m || !*m) { bad++; fprintf(stderr, "render[rank %d]: %s returned %d\n", rank, #call, rc); } \
    else if (rank == 0) printf("refused as expected: %s -> %d: %s\n", #call, rc, m); } while (0)
    if (!ctx) {
        bad++;
        fprintf(stderr, "render: tc_create with width 0 returned NULL: %s\n", tc_last_error(NULL));
    } else {
        EXPECT(tc_composite(ctx, pixel, pixel, NULL, pixel, NULL), ctx);
        tc_destroy(ctx);
    }
    ctx = tc_create(MPI_COMM_WORLD, w, h, 7, TC_DEPTH_F32, TC_ZBUFFER);
    if (ctx) { EXPECT(tc_set_root(ctx, 0), ctx); tc_destroy(ctx); } else bad++;
    ctx = tc_create(MPI_COMM_WORLD, w, h, TC_RGBA8, TC_DEPTH_NONE, TC_ZBUFFER);
    if (ctx) { EXPECT(tc_set_root(ctx, 0), ctx); tc_destroy(ctx); } else bad++;
    if (tc_create(MPI_COMM_NULL, w, h, TC_RGBA8, TC_DEPTH_F32, TC_ZBUFFER) != NULL) bad++;
    else if (rank == 0) printf("refused as expected: MPI_COMM_NULL -> NULL: %s\n", tc_last_error(NULL));
    ctx = tc_create(MPI_COMM_WORLD, w, h, TC_RGBA8, TC_DEPTH_F32, TC_ZBUFFER);
    if (!ctx) return bad + 1 + fail("tc_create", NULL);
    int order[2] = {0, 1};
    EXPECT(tc_set_order(ctx, order, nranks + 1), ctx);
    EXPECT(tc_set_order(ctx, NULL, nranks), ctx);
    EXPECT(tc_set_root(ctx, nranks), ctx);
    EXPECT(tc_set_strategy(ctx, 9), ctx);
    EXPECT(tc_set_background(ctx, NULL), ctx);
    float nan_bg[4] = {NAN, 0, 0, 0};
    EXPECT(tc_set_background(ctx, nan_bg), ctx);
    /* Rank 1 (or 0 alone) passes a null colour buffer: every rank's call fails. */
    size_t n = (size_t)w * h;
    unsigned char *c = calloc(n, 4), *o = calloc(n, 4);
    float *d = malloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++) d[i] = 1.0f;
    int viewport[4] = {0, 0, w + 1, h};
    EXPECT(tc_composite(ctx, rank == (nranks > 1) ? NULL : c, d, NULL, o, NULL), ctx);
    EXPECT(tc_composite(ctx, c, d, viewport, o, NULL), ctx);
    d[0] = NAN;
    EXPECT(tc_composite(ctx, c, d, NULL, o, NULL), ctx);
    d[0] = 1.0f;
    /* The root without an output buffer. */
    EXPECT(tc_composite(ctx, c, d, NULL, NULL, NULL), ctx);
    /* After all that the context still works. */
    rc = tc_composite(ctx, c, d, NULL, o, NULL);
    if (rc != 0) bad += fail("tc_composite after refused calls", ctx);
    tc_destroy(ctx);
    tc_destroy(NULL);
    free(c); free(o); free(d);
#undef EXPECT
    return bad;
}

static int write_file(const char *path, const void *data, size_t size)
{
    FILE *f = fopen(path, "wb");
    int ok = f && fwrite(data, 1, size, f) == size;
    if (f && fclose(f) != 0) ok = 0;
    if (!ok) fprintf(stderr, "render[rank %d]: cannot write %s\n", rank, path);
    return ok ? 0 : 1;
}

int main(int argc, char **argv)
{
    int w = 160, h = 120, over = 0, empty = -1, reverse = 0, root = 0, use_float = 0, nspheres = 24, errors = 0;
    int frames = 1, strategy = TC_AUTO;
    const char *out = NULL, *partials = NULL;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--size") && v && sscanf(v, "%dx%d", &w, &h) == 2) i++;
        else if (!strcmp(a, "--out") && v) out = argv[++i];
        else if (!strcmp(a, "--mode") && v) { over = !strcmp(v, "over"); i++; }
        else if (!strcmp(a, "--empty-rank") && v) empty = atoi(argv[++i]);
        else if (!strcmp(a, "--order") && v) { reverse = !strcmp(v, "reverse"); i++; }
        else if (!strcmp(a, "--root") && v) root = atoi(argv[++i]);
        else if (!strcmp(a, "--partials") && v) partials = argv[++i];
        else if (!strcmp(a, "--spheres") && v) nspheres = atoi(argv[++i]);
        else if (!strcmp(a, "--frames") && v) frames = atoi(argv[++i]);
        else if (!strcmp(a, "--strategy") && v) {
            i++;
            strategy = !strcmp(v, "bswap") ? TC_BINARY_SWAP : !strcmp(v, "radixk") ? TC_RADIX_K
                     : !strcmp(v, "direct") ? TC_DIRECT_SEND : !strcmp(v, "auto") ? TC_AUTO : -1;
            if (strategy < 0) {
                if (rank == 0) fprintf(stderr, "render: --strategy is auto, bswap, radixk or direct\n");
                MPI_Finalize();
                return 2;
            }
        }
        else if (!strcmp(a, "--float")) use_float = 1;
        else if (!strcmp(a, "--check-errors")) errors = 1;
        else {
            if (rank == 0) fprintf(stderr, "render: bad argument %s\n", a);
            MPI_Finalize();
            return 2;
        }
    }
    if (w <= 0 || h <= 0 || w > 16384 || h > 16384 || nspheres < 0 || frames < 1) {
        if (rank == 0) fprintf(stderr, "render: --size must be WxH within 1..16384\n");
        MPI_Finalize();
        return 2;
    }
    if (errors) {
        int bad = check_errors(w, h), all = 0;
        MPI_Allreduce(&bad, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        if (all) {
            if (rank == 0) fprintf(stderr, "render: %d bad-argument checks failed\n", all);
            MPI_Finalize();
            return 1;
        }
    }

    /* The scene, the same on every rank; sphere k goes to the k-th drawing rank in turn. */
    sphere *s = malloc(sizeof(sphere) * (size_t)(nspheres ? nspheres : 1));
    for (int k = 0; k < nspheres; k++) {
        s[k].x = rnd() * w; s[k].y = rnd() * h; s[k].z = 0.1f + 0.8f * rnd();
        s[k].r = (0.08f + 0.15f * rnd()) * (w < h ? w : h);
        for (int c = 0; c < 3; c++) s[k].rgb[c] = 0.2f + 0.8f * rnd();
    }
    int drawing = nranks - (empty >= 0 && empty < nranks), me = rank - (empty >= 0 && rank > empty);
    size_t n = (size_t)w * h;
    float *depth = malloc(n * sizeof(float)), *rgba = calloc(n * 4, sizeof(float));
    for (size_t i = 0; i < n; i++) depth[i] = 1.0f;
    int x0 = w, y0 = h, x1 = -1, y1 = -1;
    for (int k = 0; rank != empty && k < nspheres; k++) {
        if (k % drawing != me) continue;
        const sphere *q = &s[k];
        for (int y = (int)fmaxf(0, q->y - q->r); y < h && y <= q->y + q->r; y++) {
            for (int x = (int)fmaxf(0, q->x - q->r); x < w && x <= q->x + q->r; x++) {
                float dx = (x + 0.5f - q->x) / q->r, dy = (y + 0.5f - q->y) / q->r, rr = dx * dx + dy * dy;
                if (rr >= 1.0f) continue;
                float nz = sqrtf(1.0f - rr), z = q->z - 0.1f * nz;
                size_t i = (size_t)y * w + x;
                if (z >= depth[i]) continue;
                float shade = 0.25f + 0.75f * fmaxf(0.0f, 0.4f * -dx + 0.4f * -dy + 0.8f * nz);
                float alpha = over ? 0.6f : 1.0f;
                depth[i] = z;
                for (int c = 0; c < 3; c++) rgba[4 * i + c] = fminf(1.0f, q->rgb[c] * shade) * alpha;
                rgba[4 * i + 3] = alpha;
                if (x < x0) x0 = x;
                if (x > x1) x1 = x;
                if (y < y0) y0 = y;
                if (y > y1) y1 = y;
            }
        }
    }
    int viewport[4] = {0, 0, 0, 0};
    if (x1 >= 0) { viewport[0] = x0; viewport[1] = y0; viewport[2] = x1 - x0 + 1; viewport[3] = y1 - y0 + 1; }
    /* RGBA8 buffers (premultiplied, rounded); the 8-bit colour is what --float composites too. */
    unsigned char *rgba8 = malloc(n * 4);
    for (size_t i = 0; i < 4 * n; i++) {
        rgba8[i] = (unsigned char)lrintf(rgba[i] * 255.0f);
        rgba[i] = rgba8[i] / 255.0f;
    }
    int status = 0;
    if (partials) {
        char path[4096];
        snprintf(path, sizeof path, "%s/rank%d.rgba", partials, rank);
        status |= write_file(path, rgba8, n * 4);
        snprintf(path, sizeof path, "%s/rank%d.depth", partials, rank);
        status |= write_file(path, depth, n * sizeof(float));
    }

    tc_context *ctx = tc_create(MPI_COMM_WORLD, w, h, use_float ? TC_RGBA32F : TC_RGBA8,
                                TC_DEPTH_F32, over ? TC_BLEND_OVER : TC_ZBUFFER);
    if (!ctx) { fail("tc_create", NULL); MPI_Abort(MPI_COMM_WORLD, 1); }
    int *order = malloc(sizeof(int) * (size_t)nranks);
    for (int r = 0; r < nranks; r++) order[r] = reverse ? nranks - 1 - r : r;
    if (tc_set_order(ctx, order, nranks) || tc_set_root(ctx, root) || tc_set_strategy(ctx, strategy))
        status |= fail("settings", ctx);
    unsigned char *out8 = rank == root ? malloc(n * 4) : NULL;
    float *out32 = rank == root && use_float ? malloc(n * 16) : NULL;
    int rc = 0;
    for (int f = 0; rc == 0 && f < frames; f++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        rc = tc_composite(ctx, use_float ? (const void *)rgba : rgba8, depth, viewport,
                          use_float ? (void *)out32 : out8, NULL);
        double wall = (MPI_Wtime() - t0) * 1e3, wall_max = 0;
        MPI_Reduce(&wall, &wall_max, 1, MPI_DOUBLE, MPI_MAX, root, MPI_COMM_WORLD);
        if (rc == 0 && rank == root)
            printf("{\"tool\":\"tessera\",\"frame\":%d,\"ranks\":%d,\"width\":%d,\"height\":%d,\"mode\":\"%s\","
                   "\"strategy\":%d,\"wall_ms\":%.3f,\"total_ms\":%.3f,\"encode_ms\":%.3f,\"exchange_ms\":%.3f,\"composite_ms\":%.3f,"
                   "\"gather_ms\":%.3f,\"bytes_sent\":%lld}\n",
                   f, nranks, w, h, over ? "over" : "zbuffer", strategy, wall_max, tc_last_time_ms(ctx, "total"),
                   tc_last_time_ms(ctx, "encode"), tc_last_time_ms(ctx, "exchange"),
                   tc_last_time_ms(ctx, "composite"), tc_last_time_ms(ctx, "gather"), tc_last_bytes_sent(ctx));
    }
    if (rc) status |= fail("tc_composite", ctx);
    if (rc == 0 && rank == root) {
        if (use_float)
            for (size_t i = 0; i < 4 * n; i++) out8[i] = (unsigned char)lrintf(fminf(1.0f, fmaxf(0.0f, out32[i])) * 255.0f);
        if (out && png_write_rgba(out, out8, w, h) != 0) {
            fprintf(stderr, "render: cannot write %s\n", out);
            status = 1;
        }
    }
    tc_destroy(ctx);
    free(s); free(depth); free(rgba); free(rgba8); free(order); free(out8); free(out32);
    int all = 0;
    MPI_Allreduce(&status, &all, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Finalize();
    return all;
}
