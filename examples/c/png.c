/* A minimal PNG writer (see png.h): the image rows, each after a filter byte of 0, in
 * stored deflate blocks of at most 65535 bytes inside one zlib stream, in one IDAT chunk. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "png.h"

static uint32_t crc_table[256];

static void crc_init(void)
{
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = n;
        for (int k = 0; k < 8; k++) c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
        crc_table[n] = c;
    }
}

static uint32_t crc(uint32_t c, const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++) c = crc_table[(c ^ p[i]) & 0xff] ^ (c >> 8);
    return c;
}

static void be32(unsigned char *p, uint32_t v) { p[0] = v >> 24; p[1] = v >> 16; p[2] = v >> 8; p[3] = v; }

static int chunk(FILE *f, const char *type, const unsigned char *data, size_t n)
{
    unsigned char head[8];
    be32(head, (uint32_t)n);
    memcpy(head + 4, type, 4);
    uint32_t c = crc(crc(0xffffffffu, head + 4, 4), data, n) ^ 0xffffffffu;
    unsigned char tail[4];
    be32(tail, c);
    return fwrite(head, 1, 8, f) == 8 && fwrite(data, 1, n, f) == n && fwrite(tail, 1, 4, f) == 4;
}

int png_write_rgba(const char *path, const unsigned char *rgba, int width, int height)
{
    crc_init();
    size_t row = (size_t)width * 4 + 1, raw = row * height;
    size_t blocks = raw / 65535 + 1, size = 2 + raw + 5 * blocks + 4;
    unsigned char *z = malloc(size), *filtered = malloc(raw);
    if (!z || !filtered) { free(z); free(filtered); return -1; }
    for (int y = 0; y < height; y++) {
        filtered[y * row] = 0;
        memcpy(filtered + y * row + 1, rgba + (size_t)y * width * 4, (size_t)width * 4);
    }
    size_t at = 0;
    z[at++] = 0x78; z[at++] = 0x01;
    uint32_t a = 1, b = 0;
    for (size_t left = raw, from = 0; ; ) {
        size_t n = left < 65535 ? left : 65535;
        z[at++] = left == n;
        z[at++] = n & 0xff; z[at++] = n >> 8; z[at++] = ~n & 0xff; z[at++] = (~n >> 8) & 0xff;
        memcpy(z + at, filtered + from, n);
        for (size_t i = 0; i < n; i++) { a = (a + filtered[from + i]) % 65521; b = (b + a) % 65521; }
        at += n; from += n; left -= n;
        if (!left) break;
    }
    be32(z + at, (b << 16) | a);
    at += 4;
    unsigned char ihdr[13];
    be32(ihdr, width); be32(ihdr + 4, height);
    ihdr[8] = 8; ihdr[9] = 6; ihdr[10] = 0; ihdr[11] = 0; ihdr[12] = 0;
    FILE *f = fopen(path, "wb");
    int ok = f && fwrite("\x89PNG\r\n\x1a\n", 1, 8, f) == 8 && chunk(f, "IHDR", ihdr, 13) &&
             chunk(f, "IDAT", z, at) && chunk(f, "IEND", NULL, 0);
    if (f && fclose(f) != 0) ok = 0;
    free(z); free(filtered);
    return ok ? 0 : -1;
}
