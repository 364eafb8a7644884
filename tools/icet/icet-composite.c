/*
 * icet-composite: benchmark driver that composites pre-rendered per-rank
 * partial frames (RGBA8 premultiplied colour + float depth) with IceT's
 * icetCompositeImage (z-buffer mode) and reports per-frame timings as JSON.
 *
 *   mpirun -n P icet-composite --partials DIR --size WxH --frames N
 *          --strategy bswap|radixk|radixkr|bswap_folding|tree|automatic
 *          [--outer sequential|reduce] [--roi] [--no-interlace]
 *          [--out FILE.rgba] [--blend [--reverse]]
 *
 * --blend composites premultiplied colour with IceT's ordered "over" instead (depth
 * ignored, ICET_ORDERED_COMPOSITE in rank order, or back-to-front rank order with
 * --reverse), for comparison with the Tessera library's TC_BLEND_OVER.
 *
 * Inputs: DIR/rank{r}.rgba (W*H*4 bytes) and DIR/rank{r}.depth (W*H LE f32),
 * row-major, row 0 = top of the image; depth 1.0 == nothing drawn.
 *
 * Row order: IceT interprets the first scan-line of a buffer as the bottom
 * of the image. We never flip: buffers are passed through unchanged, so the
 * output has the same memory row order as the inputs (row 0 = top). The only
 * place the convention matters is valid_pixels_viewport (--roi): its y is
 * counted from IceT's "bottom", i.e. from memory row 0, so y = first memory
 * row of the bounding box. No culling happens otherwise: no geometry bounds
 * are given and the projection/modelview matrices are NULL, in which case
 * IceT assumes every rank covers the whole (single) tile.
 *
 * IceT settings chosen (and why):
 *  - one tile (0,0,W,H) displayed on rank 0; ICET_COLLECT_IMAGES enabled
 *    (the default): the fully composited image must end up on rank 0, which
 *    is what the Tessera compositor produces. Disabling it would leave the
 *    result scattered over ranks and skip IceT's gather step (unfair).
 *  - ICET_INTERLACE_IMAGES enabled (IceT's default, what ParaView uses): it
 *    shuffles pixel rows/blocks before the single-image strategy for load
 *    balance and un-shuffles during collection. --no-interlace turns it off
 *    for comparison.
 *  - ICET_COMPOSITE_ONE_BUFFER left at its default (enabled): only colour is
 *    needed in the final image, so IceT may drop depth in late stages/gather.
 *  - ICET_ORDERED_COMPOSITE disabled (z-buffer compositing is order free).
 *  - background colour (0,0,0,0).
 *  IceT internally compresses every partial image with its run-length
 *  "active pixel" encoding (inactive = depth >= 1.0) before sending; that
 *  cost is reported by ICET_COMPRESS_TIME.
 */
#include <mpi.h>
#include <IceT.h>
#include <IceTMPI.h>

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int g_rank = 0;

static void usage(void)
{
    if (g_rank == 0)
        fprintf(stderr,
            "usage: icet-composite --partials DIR --size WxH [--frames N]\n"
            "         [--strategy bswap|radixk|radixkr|bswap_folding|tree|automatic]\n"
            "         [--outer sequential|reduce] [--roi] [--no-interlace]\n"
            "         [--out FILE.rgba]\n");
}

/* Read exactly `size` bytes from path into buf. Returns 0 on success. */
static int read_exact(const char *path, void *buf, size_t size)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "icet-composite[rank %d]: cannot open %s: %s\n",
                g_rank, path, strerror(errno));
        return -1;
    }
    if (fseek(f, 0, SEEK_END) != 0) {
        fprintf(stderr, "icet-composite[rank %d]: cannot seek %s\n", g_rank, path);
        fclose(f);
        return -1;
    }
    long fsz = ftell(f);
    rewind(f);
    if (fsz < 0 || (size_t)fsz != size) {
        fprintf(stderr,
                "icet-composite[rank %d]: %s has %ld bytes, expected %zu "
                "(wrong --size?)\n", g_rank, path, fsz, size);
        fclose(f);
        return -1;
    }
    if (fread(buf, 1, size, f) != size) {
        fprintf(stderr, "icet-composite[rank %d]: short read on %s\n", g_rank, path);
        fclose(f);
        return -1;
    }
    fclose(f);
    return 0;
}

/* Bounding box of pixels with depth < 1.0, in IceT viewport form
 * {x, y, w, h} where y counts memory rows from row 0. Empty -> {0,0,0,0}. */
static void compute_bbox(const float *depth, int W, int H, IceTInt vp[4])
{
    int x0 = W, x1 = -1, y0 = H, y1 = -1;
    for (int y = 0; y < H; y++) {
        const float *row = depth + (size_t)y * W;
        int first = -1, last = -1;
        for (int x = 0; x < W; x++) {
            if (row[x] < 1.0f) { first = x; break; }
        }
        if (first < 0) continue;
        for (int x = W - 1; x >= first; x--) {
            if (row[x] < 1.0f) { last = x; break; }
        }
        if (first < x0) x0 = first;
        if (last > x1) x1 = last;
        if (y < y0) y0 = y;
        y1 = y;
    }
    if (x1 < 0) {
        vp[0] = vp[1] = vp[2] = vp[3] = 0;
    } else {
        vp[0] = x0; vp[1] = y0; vp[2] = x1 - x0 + 1; vp[3] = y1 - y0 + 1;
    }
}

enum {
    T_RENDER, T_BUF_READ, T_BUF_WRITE, T_COMPRESS, T_INTERLACE, T_BLEND,
    T_COMPOSITE, T_COLLECT, T_TOTAL_DRAW, T_WALL, T_BBOX, T_WALL_PLUS_BBOX,
    T_COUNT
};

int main(int argc, char **argv)
{
    const char *dir = NULL, *out = NULL, *strategy = "bswap", *outer = "sequential";
    int W = 0, H = 0, frames = 10, roi = 0, interlace = 1, blend = 0, reverse = 0;
    int nprocs;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int has_next = (i + 1 < argc);
        if (!strcmp(a, "--partials") && has_next) dir = argv[++i];
        else if (!strcmp(a, "--size") && has_next) {
            if (sscanf(argv[++i], "%dx%d", &W, &H) != 2) W = H = 0;
        }
        else if (!strcmp(a, "--frames") && has_next) frames = atoi(argv[++i]);
        else if (!strcmp(a, "--strategy") && has_next) strategy = argv[++i];
        else if (!strcmp(a, "--outer") && has_next) outer = argv[++i];
        else if (!strcmp(a, "--out") && has_next) out = argv[++i];
        else if (!strcmp(a, "--roi")) roi = 1;
        else if (!strcmp(a, "--blend")) blend = 1;
        else if (!strcmp(a, "--reverse")) reverse = 1;
        else if (!strcmp(a, "--no-interlace")) interlace = 0;
        else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(); MPI_Finalize(); return 0;
        } else {
            if (g_rank == 0) fprintf(stderr, "icet-composite: bad argument '%s'\n", a);
            usage(); MPI_Finalize(); return 2;
        }
    }
    if (!dir || W <= 0 || H <= 0 || frames <= 0 ||
        (long long)W * H * 4 > 0x7fffffffLL) {
        if (g_rank == 0) fprintf(stderr, "icet-composite: need --partials DIR, --size WxH (positive), --frames N>0\n");
        usage(); MPI_Finalize(); return 2;
    }

    IceTEnum si_strategy;
    if (!strcmp(strategy, "bswap")) si_strategy = ICET_SINGLE_IMAGE_STRATEGY_BSWAP;
    else if (!strcmp(strategy, "radixk")) si_strategy = ICET_SINGLE_IMAGE_STRATEGY_RADIXK;
    else if (!strcmp(strategy, "radixkr")) si_strategy = ICET_SINGLE_IMAGE_STRATEGY_RADIXKR;
    else if (!strcmp(strategy, "bswap_folding")) si_strategy = ICET_SINGLE_IMAGE_STRATEGY_BSWAP_FOLDING;
    else if (!strcmp(strategy, "tree")) si_strategy = ICET_SINGLE_IMAGE_STRATEGY_TREE;
    else if (!strcmp(strategy, "automatic")) si_strategy = ICET_SINGLE_IMAGE_STRATEGY_AUTOMATIC;
    else {
        if (g_rank == 0) fprintf(stderr, "icet-composite: unknown --strategy '%s'\n", strategy);
        usage(); MPI_Finalize(); return 2;
    }
    IceTEnum outer_strategy;
    if (!strcmp(outer, "sequential")) outer_strategy = ICET_STRATEGY_SEQUENTIAL;
    else if (!strcmp(outer, "reduce")) outer_strategy = ICET_STRATEGY_REDUCE;
    else {
        if (g_rank == 0) fprintf(stderr, "icet-composite: unknown --outer '%s'\n", outer);
        usage(); MPI_Finalize(); return 2;
    }

    /* ---- load this rank's partial (untimed) ---- */
    size_t npix = (size_t)W * H;
    unsigned char *color = malloc(npix * 4);
    float *depth = malloc(npix * sizeof(float));
    int ok = (color && depth);
    if (!ok) fprintf(stderr, "icet-composite[rank %d]: out of memory\n", g_rank);
    char path[4096];
    if (ok) {
        snprintf(path, sizeof path, "%s/rank%d.rgba", dir, g_rank);
        ok = (read_exact(path, color, npix * 4) == 0);
    }
    if (ok) {
        snprintf(path, sizeof path, "%s/rank%d.depth", dir, g_rank);
        ok = (read_exact(path, depth, npix * sizeof(float)) == 0);
    }
    int all_ok = 0;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    if (!all_ok) {
        if (g_rank == 0) fprintf(stderr, "icet-composite: failed to load partials, aborting\n");
        MPI_Finalize();
        return 1;
    }
    long long active_local = 0, active_total = 0;
    for (size_t i = 0; i < npix; i++) active_local += (depth[i] < 1.0f);
    MPI_Reduce(&active_local, &active_total, 1, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);

    /* ---- IceT setup ---- */
    IceTCommunicator comm = icetCreateMPICommunicator(MPI_COMM_WORLD);
    IceTContext ctx = icetCreateContext(comm);
    icetDestroyMPICommunicator(comm);
    (void)ctx;

    icetDiagnostics(ICET_DIAG_WARNINGS | ICET_DIAG_ALL_NODES);
    icetResetTiles();
    icetAddTile(0, 0, W, H, 0);                 /* one tile, shown on rank 0 */
    icetSetColorFormat(ICET_IMAGE_COLOR_RGBA_UBYTE);
    IceTInt *order = malloc(sizeof(IceTInt) * (size_t)nprocs);
    if (blend) {
        icetSetDepthFormat(ICET_IMAGE_DEPTH_NONE);
        icetCompositeMode(ICET_COMPOSITE_MODE_BLEND);
        icetEnable(ICET_ORDERED_COMPOSITE);
        for (int r = 0; r < nprocs; r++) order[r] = reverse ? nprocs - 1 - r : r;
        icetCompositeOrder(order);
    } else {
        icetSetDepthFormat(ICET_IMAGE_DEPTH_FLOAT);
        icetCompositeMode(ICET_COMPOSITE_MODE_Z_BUFFER);
        icetDisable(ICET_ORDERED_COMPOSITE);
    }
    icetEnable(ICET_COLLECT_IMAGES);            /* full image gathered on rank 0 */
    if (interlace) icetEnable(ICET_INTERLACE_IMAGES);
    else icetDisable(ICET_INTERLACE_IMAGES);
    icetStrategy(outer_strategy);
    icetSingleImageStrategy(si_strategy);
    /* No icetBoundingBox and NULL matrices below: IceT does not cull. */

    IceTInt magic_k = 0;
    icetGetIntegerv(ICET_MAGIC_K, &magic_k);
    const char *si_name = icetGetSingleImageStrategyName();
    const char *outer_name = icetGetStrategyName();
    if (icetGetError() != ICET_NO_ERROR) {
        fprintf(stderr, "icet-composite[rank %d]: IceT setup error\n", g_rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }

    const IceTFloat background[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    IceTInt vp[4] = {0, 0, W, H};
    IceTImage image = icetImageNull();
    int exit_code = 0;

    for (int f = 0; f < frames; f++) {
        double t[T_COUNT], tmax[T_COUNT];
        memset(t, 0, sizeof t);

        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        if (roi) compute_bbox(depth, W, H, vp);
        double t1 = MPI_Wtime();
        image = icetCompositeImage(color, blend ? NULL : depth, roi ? vp : NULL,
                                   NULL, NULL, background);
        double t2 = MPI_Wtime();

        int err = (icetGetError() != ICET_NO_ERROR);
        IceTDouble d;
        icetGetDoublev(ICET_RENDER_TIME, &d);       t[T_RENDER] = d;
        icetGetDoublev(ICET_BUFFER_READ_TIME, &d);  t[T_BUF_READ] = d;
        icetGetDoublev(ICET_BUFFER_WRITE_TIME, &d); t[T_BUF_WRITE] = d;
        icetGetDoublev(ICET_COMPRESS_TIME, &d);     t[T_COMPRESS] = d;
        icetGetDoublev(ICET_INTERLACE_TIME, &d);    t[T_INTERLACE] = d;
        icetGetDoublev(ICET_BLEND_TIME, &d);        t[T_BLEND] = d;
        icetGetDoublev(ICET_COMPOSITE_TIME, &d);    t[T_COMPOSITE] = d;
        icetGetDoublev(ICET_COLLECT_TIME, &d);      t[T_COLLECT] = d;
        icetGetDoublev(ICET_TOTAL_DRAW_TIME, &d);   t[T_TOTAL_DRAW] = d;
        IceTInt bytes_i = 0;
        icetGetIntegerv(ICET_BYTES_SENT, &bytes_i);
        t[T_WALL] = t2 - t1;
        t[T_BBOX] = t1 - t0;
        t[T_WALL_PLUS_BBOX] = t2 - t0;

        MPI_Reduce(t, tmax, T_COUNT, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        long long bytes = (long long)bytes_i, bytes_sum = 0, bytes_max = 0;
        MPI_Reduce(&bytes, &bytes_sum, 1, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
        MPI_Reduce(&bytes, &bytes_max, 1, MPI_LONG_LONG, MPI_MAX, 0, MPI_COMM_WORLD);
        int any_err = 0;
        MPI_Allreduce(&err, &any_err, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);

        if (g_rank == 0) {
            printf("{\"tool\":\"icet\",\"frame\":%d,\"ranks\":%d,\"width\":%d,\"height\":%d,"
                   "\"strategy\":\"%s\",\"single_image_strategy\":\"%s\",\"outer_strategy\":\"%s\","
                   "\"magic_k\":%d,\"interlace\":%s,\"roi\":%s,"
                   "\"wall_ms\":%.4f,\"bbox_ms\":%.4f,\"wall_plus_bbox_ms\":%.4f,"
                   "\"render_ms\":%.4f,\"buffer_read_ms\":%.4f,\"buffer_write_ms\":%.4f,"
                   "\"compress_ms\":%.4f,\"interlace_ms\":%.4f,\"blend_ms\":%.4f,"
                   "\"composite_ms\":%.4f,\"collect_ms\":%.4f,\"total_draw_ms\":%.4f,"
                   "\"bytes_sent\":%lld,\"bytes_sent_max_rank\":%lld,"
                   "\"active_pixels_total\":%lld,\"icet_error\":%s,\"icet_version\":\"%s\"}\n",
                   f, nprocs, W, H, strategy, si_name, outer_name, (int)magic_k,
                   interlace ? "true" : "false", roi ? "true" : "false",
                   tmax[T_WALL] * 1e3, tmax[T_BBOX] * 1e3, tmax[T_WALL_PLUS_BBOX] * 1e3,
                   tmax[T_RENDER] * 1e3, tmax[T_BUF_READ] * 1e3, tmax[T_BUF_WRITE] * 1e3,
                   tmax[T_COMPRESS] * 1e3, tmax[T_INTERLACE] * 1e3, tmax[T_BLEND] * 1e3,
                   tmax[T_COMPOSITE] * 1e3, tmax[T_COLLECT] * 1e3, tmax[T_TOTAL_DRAW] * 1e3,
                   bytes_sum, bytes_max, active_total,
                   any_err ? "true" : "false", ICET_VERSION);
            fflush(stdout);
        }
        if (any_err) {
            if (g_rank == 0) fprintf(stderr, "icet-composite: IceT reported an error in frame %d\n", f);
            exit_code = 1;
            break;
        }
    }

    /* ---- write rank 0's final image (from the last frame; untimed) ---- */
    if (out && exit_code == 0 && g_rank == 0) {
        if (icetImageIsNull(image) || icetImageGetWidth(image) != W ||
            icetImageGetHeight(image) != H) {
            fprintf(stderr, "icet-composite: unexpected result image on rank 0\n");
            exit_code = 1;
        } else {
            unsigned char *res = malloc(npix * 4);
            icetImageCopyColorub(image, res, ICET_IMAGE_COLOR_RGBA_UBYTE);
            FILE *fo = fopen(out, "wb");
            if (!fo || fwrite(res, 1, npix * 4, fo) != npix * 4 || fclose(fo) != 0) {
                fprintf(stderr, "icet-composite: cannot write %s: %s\n", out, strerror(errno));
                exit_code = 1;
            }
            free(res);
        }
    }
    MPI_Bcast(&exit_code, 1, MPI_INT, 0, MPI_COMM_WORLD);

    icetDestroyContext(ctx);
    free(order);
    free(color);
    free(depth);
    MPI_Finalize();
    return exit_code;
}
