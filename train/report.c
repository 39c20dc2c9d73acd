/* report.c -- the number formats of the files a private release leaves behind (the run
 * directory of dpgd train, the output of dpgd queries): privacy numbers rounded up,
 * JSON numbers, and the per-point odometer columns of points.csv and users.csv
 * (train/RUN_FORMAT.md "points.csv"). */
#include <math.h>
#include <stdio.h>

#include "dpgd_train.h"

void dpgd_report_num(FILE *f, double v)
{
  if (isfinite(v)) fprintf(f, "%.10g", v);
}

/* A privacy number (eps, mu, delta share): 10 digits, rounded up (the private direction). */
void dpgd_report_up(FILE *f, double v) { dpgd_report_num(f, dpgd_round_digits(v, 10, 1)); }

void dpgd_report_json_num(FILE *f, double v)
{
  if (isfinite(v)) fprintf(f, "%.10g", v);
  else fputs("null", f);
}

void dpgd_report_json_dgauss(FILE *f, const char *theorem, int grid_bits,
                             unsigned long long sigma2_grid, const char *extra,
                             double eps_continuous)
{
  fprintf(f,
          " \"noise\": {\"mechanism\": \"discrete_gaussian\", \"sum\": \"int64, exact\", "
          "\"grid_bits\": %d, \"sigma2_grid\": %llu, %s,\n  \"theorem\": \"%s\",\n  "
          "\"eps_continuous\": ",
          grid_bits, sigma2_grid, extra, theorem);
  dpgd_report_json_num(f, dpgd_round_digits(eps_continuous, 10, 1));
  fprintf(f, ", \"eps_continuous_note\": \"exact eps of the same releases as continuous "
             "Gaussians (not what ran): the cost of the proof\"},\n");
}

void dpgd_report_json_seed(FILE *f, const dpgd_seed *s)
{
  uint64_t v;
  if (dpgd_seed_to_u64(s, &v)) fprintf(f, "%llu", (unsigned long long)v);
  else fputs("null", f);
}

int dpgd_report_odometer_cols(FILE *f, const dpgd_odometer *o, double mu2)
{
  size_t level = 0;
  double mu = 0, eps = 0;
  int rc = dpgd_odometer_report(o, mu2, &level, &mu, &eps);
  if (rc) return rc;
  fprintf(f, "%zu,", level);
  dpgd_report_up(f, dpgd_odometer_delta(o, level));
  fputc(',', f);
  dpgd_report_up(f, mu);
  fputc(',', f);
  dpgd_report_up(f, eps);
  return DPGD_OK;
}

void dpgd_report_json_odometer(FILE *f, const dpgd_odometer *o)
{
  fprintf(f, "{\"level_mu2\": %.17g, \"levels\": %zu, \"delta_split\": [", o->level_mu2,
          o->levels);
  for (size_t m = 1; m <= o->levels; m++)
    fprintf(f, "%s%.17g", m > 1 ? ", " : "", dpgd_odometer_delta(o, m));
  fputs("]}", f);
}
