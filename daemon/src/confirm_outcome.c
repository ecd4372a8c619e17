/* confirm_outcome.c - parsing holdfast.outcome rows. */
#include "confirm_outcome.h"

#include <stdlib.h>
#include <string.h>

void hf_outcome_clear(struct hf_outcome *o) {
    for (size_t i = 0; i < o->n; i++) {
        free(o->rows[i].resource);
        free(o->rows[i].reference);
    }
    free(o->rows);
    memset(o, 0, sizeof *o);
}

bool hf_outcome_parse(const PGresult *res, struct hf_outcome *o) {
    hf_outcome_clear(o);
    int n = PQntuples(res);
    if (n < 1 || PQnfields(res) < 6) return false;
    static const struct {
        const char *name;
        enum hf_outcome_code code;
    } codes[] = {{"OK", HF_OUT_OK},         {"CONFLICT", HF_OUT_CONFLICT},
                 {"STALE", HF_OUT_STALE},   {"IDEMPOTENCY_MISMATCH", HF_OUT_MISMATCH},
                 {"HOLD_LOST", HF_OUT_HOLD_LOST}, {"CONFIRMED", HF_OUT_CONFIRMED},
                 {"NOT_CLAIMED", HF_OUT_NOT_CLAIMED},
                 {"OTHER_REFERENCE", HF_OUT_OTHER_REFERENCE},
                 {"SOLD_OUT", HF_OUT_SOLD_OUT},
                 {"ABSENT", HF_OUT_ABSENT}, {"UNKNOWN", HF_OUT_UNKNOWN}};
    const char *code = PQgetvalue(res, 0, 0);
    size_t k = 0;
    while (k < sizeof codes / sizeof codes[0] && strcmp(codes[k].name, code) != 0) k++;
    if (k == sizeof codes / sizeof codes[0]) return false;
    o->code = codes[k].code;
    o->replayed = PQgetvalue(res, 0, 1)[0] == 't';
    o->rows = calloc((size_t)n, sizeof *o->rows);
    if (!o->rows) return false;
    for (int i = 0; i < n; i++) {
        if (PQgetisnull(res, i, 2)) continue;
        struct hf_outcome_row *row = &o->rows[o->n++];
        row->resource = strdup(PQgetvalue(res, i, 2));
        row->fence = PQgetisnull(res, i, 3) ? 0 : strtoll(PQgetvalue(res, i, 3), NULL, 10);
        row->reference = PQgetisnull(res, i, 4) ? NULL : strdup(PQgetvalue(res, i, 4));
        row->at_ms = PQgetisnull(res, i, 5) ? 0 : strtoll(PQgetvalue(res, i, 5), NULL, 10);
        if (PQnfields(res) >= 10 && !PQgetisnull(res, i, 9)) {
            row->has_state = true;
            row->own = PQgetvalue(res, i, 6)[0] == 't';
            row->capacity =
                PQgetisnull(res, i, 7) ? 0 : strtoll(PQgetvalue(res, i, 7), NULL, 10);
            row->sold = PQgetisnull(res, i, 8) ? 0 : strtoll(PQgetvalue(res, i, 8), NULL, 10);
            row->version = strtoll(PQgetvalue(res, i, 9), NULL, 10);
        }
        if (!row->resource) return false;
    }
    return true;
}

/* Ids are validated names; they are quoted anyway. */
char *hf_pg_text_array(char *const *ids, size_t n) {
    size_t cap = 3;
    for (size_t i = 0; i < n; i++) cap += 2 * strlen(ids[i]) + 3;
    char *out = malloc(cap), *p = out;
    if (!out) return NULL;
    *p++ = '{';
    for (size_t i = 0; i < n; i++) {
        if (i) *p++ = ',';
        *p++ = '"';
        for (const char *s = ids[i]; *s; s++) {
            if (*s == '"' || *s == '\\') *p++ = '\\';
            *p++ = *s;
        }
        *p++ = '"';
    }
    *p++ = '}';
    *p = '\0';
    return out;
}
