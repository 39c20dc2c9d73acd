/* queries_csv.h -- the input of 'dpgd queries' (queries_csv.c): the columns of a
 * checked CSV of users x queries laid out as queries. */
#ifndef DPGD_QUERIES_CSV_H
#define DPGD_QUERIES_CSV_H

#include <stddef.h>

#include "plot.h"

/* Query k is columns col[k] .. col[k] + dim - 1, named by the first len[k] bytes of
 * its first column's name. */
typedef struct dpgd_qlayout {
  size_t n, dim;     /* queries, and the dim of each */
  size_t *col, *len; /* (n) each, one slab */
} dpgd_qlayout;

/* Checks t (at least one row and column, every value in [0, 1], no empty field) and
 * lays its columns out as queries. DPGD_EFORMAT with a one-line message naming file,
 * the row or the column otherwise (L then holds nothing to free). */
int dpgd_qlayout_build(dpgd_qlayout *L, const dpgd_csv *t, const char *file);
void dpgd_qlayout_free(dpgd_qlayout *L);

/* One query of a table: its first column and dim. */
typedef struct dpgd_qcolumn {
  const dpgd_csv *t;
  size_t col, dim;
} dpgd_qcolumn;
/* dpgd_query_fn over a dpgd_qcolumn (ctx): user's row of the query's columns. */
int dpgd_qcolumn_value(size_t user, double *value, void *ctx);

#endif /* DPGD_QUERIES_CSV_H */
