/* Text for the run log's JSON strings (docs/LOG_FORMAT.md "Strings"): any
 * byte sequence is written losslessly. JSON strings hold Unicode text, so a
 * value that is not valid UTF-8 is written twice: as text with each invalid
 * byte shown as U+FFFD, and, in a member of the same name plus "_hex", as
 * its exact bytes in lowercase hex. Values are never cut inside a
 * character. Pure functions: no allocation, no system call. */
#ifndef P2PSHIM_JSON_TEXT_H
#define P2PSHIM_JSON_TEXT_H

#include <stdbool.h>
#include <stddef.h>

/* Length (1 to 4) of the well-formed UTF-8 character at s[0..n), or 0 when
 * the bytes there are not one (a stray continuation byte, an overlong form,
 * a surrogate, past U+10FFFF, or cut short by n). */
size_t utf8_char_len(const unsigned char *s, size_t n);

/* True when s[0..n) is well-formed UTF-8. */
bool utf8_valid(const char *s, size_t n);

/* The longest prefix of s[0..n) of at most max bytes that does not end
 * inside a well-formed character (bytes of ill-formed ones count singly). */
size_t utf8_whole_prefix(const char *s, size_t n, size_t max);

/* Copies src into dst (cap > 0 bytes with the NUL), cut at a character
 * boundary when it does not fit. */
void copy_whole_chars(char *dst, size_t cap, const char *src);

/* Writes s[0..n) as JSON string content (no quotes) into out: '"', '\\'
 * and control characters escaped, each byte outside a well-formed
 * character as \ufffd. out needs JSON_ESCAPED_MAX(n) bytes; no NUL is
 * written. Returns the bytes written. */
#define JSON_ESCAPED_MAX(n) (6 * (n))
size_t json_escape(char *out, const char *s, size_t n);

/* Writes s[0..n) as 2n lowercase hex digits into out (no NUL). */
void json_hex(char *out, const char *s, size_t n);

#endif
