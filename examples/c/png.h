/* A minimal PNG writer: 8-bit RGBA, uncompressed ("stored") deflate blocks. */
#ifndef RENDER_PNG_H
#define RENDER_PNG_H
int png_write_rgba(const char *path, const unsigned char *rgba, int width, int height);
#endif
