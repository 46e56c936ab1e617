/* Inside the configuration: the descriptor of a variable (one row of
 * config_table.h), the kinds that parse and print it, and the line
 * builder they print into. For config*.c and the tests that read the
 * table; the rest of the shim uses config.h. */
#ifndef P2PSHIM_CONFIG_INT_H
#define P2PSHIM_CONFIG_INT_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"

enum config_kind {
    CONFIG_KIND_SWITCH = 1, /* bool, or int where -1 means "not set" */
    CONFIG_KIND_ENUM,       /* an enum (int-sized), by its names */
    CONFIG_KIND_BYTES,      /* size_t: a byte count, written with a unit */
    CONFIG_KIND_COUNT,      /* size_t: a count, written as digits */
    CONFIG_KIND_PATH,       /* char[]: a file name, %p and %h expanded */
    CONFIG_KIND_CUSTOM,     /* the handler's own syntax */
};

/* How a value is written: in the dump (reads back as the same value), in
 * a warning's "keeping VALUE" (plain digits), or in the default column of
 * docs/CONFIGURATION.md (the shortest exact form). */
enum config_style { CONFIG_AS_DUMP, CONFIG_AS_KEPT, CONFIG_AS_DOC };

/* A line built piece by piece; once a piece does not fit the line ends
 * in "..." and later pieces are dropped. */
struct config_out {
    char *buf;
    size_t len, used;
    bool cut;
};

void config_put(struct config_out *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* n with the largest unit that divides it exactly ("64K"; "0"). */
void config_put_bytes(struct config_out *o, size_t n);

/* A variable whose syntax no kind covers. parse sets cfg from value or
 * returns false, cfg untouched, with the reason in why ("entry 2: ...").
 * print writes the value in the given style. */
struct config_handler {
    bool (*parse)(struct p2pshim_config *cfg, const char *value, char *why,
                  size_t why_len);
    void (*print)(struct config_out *o, const struct p2pshim_config *cfg,
                  enum config_style style);
};

struct config_var {
    const char *name, *help;
    enum config_kind kind;
    size_t offset, size;       /* the field in struct p2pshim_config */
    long long def;             /* switch, enum, bytes, count: the default */
    const char *def_text;      /* custom: the default, as a value */
    const char *doc;           /* documented default, where the value is not it */
    const char *expect;        /* bytes, count: "not EXPECT" */
    const char *kept;          /* after a bad value, if not "keeping VALUE" */
    const char *on_bad;        /* what a bad value stands for, where not the
                                  default: the choice that changes least */
    const char *const *names;  /* enum: the names by value */
    int nnames;
    const char *noun;          /* enum: "not a NOUN (a, b or c)" */
    size_t min, max, align;    /* bytes, count: bounds and multiple */
    const char *auto_word;     /* bytes: a word that means 0 */
    size_t pattern_offset;     /* path: the field keeping it as written, */
    size_t pattern_size;       /*   or 0 */
    const struct config_handler *handler; /* custom */
};

#define CONFIG_FIELD_(f)                                                      \
    .offset = offsetof(struct p2pshim_config, f),                            \
    .size = sizeof(((struct p2pshim_config *)0)->f)
#define CONFIG_SWITCH(f) .kind = CONFIG_KIND_SWITCH, CONFIG_FIELD_(f)
#define CONFIG_ENUM(f, names_, noun_)                                         \
    .kind = CONFIG_KIND_ENUM, CONFIG_FIELD_(f), .names = names_,             \
    .nnames = (int)(sizeof names_ / sizeof names_[0]), .noun = noun_
#define CONFIG_BYTES(f, lo, hi, mult)                                         \
    .kind = CONFIG_KIND_BYTES, CONFIG_FIELD_(f), .min = lo, .max = hi,       \
    .align = mult
#define CONFIG_COUNT(f, lo, hi)                                               \
    .kind = CONFIG_KIND_COUNT, CONFIG_FIELD_(f), .min = lo, .max = hi, .align = 1
#define CONFIG_PATH(f) .kind = CONFIG_KIND_PATH, CONFIG_FIELD_(f)
#define CONFIG_PATTERN(f)                                                     \
    .pattern_offset = offsetof(struct p2pshim_config, f),                    \
    .pattern_size = sizeof(((struct p2pshim_config *)0)->f)
#define CONFIG_CUSTOM(h) .kind = CONFIG_KIND_CUSTOM, .handler = h

/* "config.c": the table, one descriptor per row of config_table.h. */
extern const struct config_var config_vars[];
extern const int config_var_count;

/* "config_kinds.c": the generic parser, printer and default of each kind.
 * config_kind_parse returns false, cfg untouched, with the reason in why
 * ("not a mode (upgrade, observe or off)"). */
void config_kind_default(const struct config_var *v, struct p2pshim_config *cfg);
bool config_kind_parse(const struct config_var *v, struct p2pshim_config *cfg,
                       const char *value, char *why, size_t why_len);
void config_kind_print(const struct config_var *v, const struct p2pshim_config *cfg,
                       struct config_out *o, enum config_style style);

/* "config_pairs.c" and "config.c": the variables with their own syntax. */
extern const struct config_handler config_pairs_handler;
extern const struct config_handler config_budget_handler;

#endif
