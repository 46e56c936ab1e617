/* Text for the run log's JSON strings: see json_text.h. */
#include "json_text.h"

#include <string.h>

size_t utf8_char_len(const unsigned char *s, size_t n)
{
    if (n == 0)
        return 0;
    unsigned c = s[0];
    if (c < 0x80)
        return 1;
    size_t len;
    unsigned lo = 0x80, hi = 0xBF;  /* the second byte's range (RFC 3629) */
    if (c >= 0xC2 && c <= 0xDF) {
        len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        if (c == 0xE0)
            lo = 0xA0;              /* no overlong forms */
        else if (c == 0xED)
            hi = 0x9F;              /* no surrogates */
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        if (c == 0xF0)
            lo = 0x90;
        else if (c == 0xF4)
            hi = 0x8F;              /* nothing past U+10FFFF */
    } else {
        return 0;
    }
    if (n < len || s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < len; i++)
        if ((s[i] & 0xC0) != 0x80)
            return 0;
    return len;
}

bool utf8_valid(const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        size_t k = utf8_char_len(u + i, n - i);
        if (k == 0)
            return false;
        i += k;
    }
    return true;
}

size_t utf8_whole_prefix(const char *s, size_t n, size_t max)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0;
    while (i < n) {
        size_t k = utf8_char_len(u + i, n - i);
        if (k == 0)
            k = 1;
        if (i + k > max)
            break;
        i += k;
    }
    return i;
}

void copy_whole_chars(char *dst, size_t cap, const char *src)
{
    size_t n = utf8_whole_prefix(src, strlen(src), cap - 1);
    memcpy(dst, src, n);
    dst[n] = '\0';
}

size_t json_escape(char *out, const char *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *u = (const unsigned char *)s;
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        size_t k = utf8_char_len(u + i, n - i);
        if (k == 0) {
            memcpy(out + o, "\\ufffd", 6);
            o += 6;
            i++;
        } else if (u[i] == '"' || u[i] == '\\') {
            out[o++] = '\\';
            out[o++] = (char)u[i++];
        } else if (u[i] < 0x20 || u[i] == 0x7F) {
            memcpy(out + o, "\\u00", 4);
            out[o + 4] = hex[u[i] >> 4];
            out[o + 5] = hex[u[i] & 15];
            o += 6;
            i++;
        } else {
            memcpy(out + o, u + i, k);
            o += k;
            i += k;
        }
    }
    return o;
}

void json_hex(char *out, const char *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = hex[u[i] >> 4];
        out[2 * i + 1] = hex[u[i] & 15];
    }
}
