/* The run log's string text (json_text.h): which bytes are characters,
 * where a value may be cut, and what the writer puts in the JSON. */
#include <stdio.h>
#include <string.h>

#include "../check.h"
#include "json_text.h"



struct seq {
    const char *bytes;
    size_t n, len;   /* len: utf8_char_len of the first character */
};

static void check_lengths(void)
{
    static const struct seq rows[] = {
        {"a", 1, 1},
        {"\xc3\xa9", 2, 2},              /* é */
        {"\xe2\x82\xac", 3, 3},          /* € */
        {"\xf0\x9f\x98\x80", 4, 4},      /* U+1F600 */
        {"\xf4\x8f\xbf\xbf", 4, 4},      /* U+10FFFF, the last */
        {"\xc0\x80", 2, 0},              /* overlong NUL */
        {"\xc1\xbf", 2, 0},              /* overlong */
        {"\xe0\x9f\xbf", 3, 0},          /* overlong three-byte */
        {"\xed\xa0\x80", 3, 0},          /* a surrogate */
        {"\xf0\x8f\xbf\xbf", 4, 0},      /* overlong four-byte */
        {"\xf4\x90\x80\x80", 4, 0},      /* past U+10FFFF */
        {"\xf5\x80\x80\x80", 4, 0},
        {"\x80", 1, 0},                  /* a stray continuation byte */
        {"\xff", 1, 0},
        {"\xe2\x82", 2, 0},              /* cut short */
        {"\xe2\x82" "a", 3, 0},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        size_t got = utf8_char_len((const unsigned char *)rows[i].bytes, rows[i].n);
        if (got != rows[i].len) {
            fprintf(stderr, "FAIL row %zu: length %zu, want %zu\n", i, got, rows[i].len);
            check_failures++;
        }
    }
    CHECK(utf8_valid("caf\xc3\xa9", 5));
    CHECK(!utf8_valid("caf\xc3", 4));
    CHECK(utf8_valid("", 0));
}

static void check_cuts(void)
{
    const char *s = "ab\xe2\x82\xac" "c";   /* a b € c */
    CHECK(utf8_whole_prefix(s, 6, 6) == 6);
    CHECK(utf8_whole_prefix(s, 6, 5) == 5);
    CHECK(utf8_whole_prefix(s, 6, 4) == 2);   /* not inside the € */
    CHECK(utf8_whole_prefix(s, 6, 3) == 2);
    CHECK(utf8_whole_prefix("a\xff\xff", 3, 2) == 2);   /* stray bytes count singly */
    char out[5];
    copy_whole_chars(out, sizeof out, s);
    CHECK(strcmp(out, "ab") == 0);
    copy_whole_chars(out, sizeof out, "abcdef");
    CHECK(strcmp(out, "abcd") == 0);
}

static void check_escape(void)
{
    char out[JSON_ESCAPED_MAX(32)];
    const char *in = "q\"b\\\n\x7f\xc3\xa9\xff\xe2\x82!";
    size_t n = json_escape(out, in, strlen(in));
    const char *want = "q\\\"b\\\\\\u000a\\u007f\xc3\xa9\\ufffd\\ufffd\\ufffd!";
    CHECK(n == strlen(want) && memcmp(out, want, n) == 0);
    char hex[8];
    json_hex(hex, "\x00\xff\x10z", 4);
    CHECK(memcmp(hex, "00ff107a", 8) == 0);
}

int main(void)
{
    check_lengths();
    check_cuts();
    check_escape();
    if (check_failures == 0)
        printf("test_json_text: ok\n");
    return check_failures ? 1 : 0;
}
