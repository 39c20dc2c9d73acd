/* account_mech.c -- the mechanisms of 'dpgd account' and 'dpgd calibrate' from their
 * command-line specifications "key=value,key=value" (--gaussian, --laplace, --rr,
 * --discrete, --subsampled, --wor-gaussian, --wor-laplace, --discrete-gaussian,
 * --subsampled-discrete-gaussian), added to an accountant, and
 * their help text. cmd_account.c prints. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "account_mech.h"
#include "cli.h"

/* Largest number of outcomes of one --discrete pair. */
#define MAX_OUTCOMES 1024

const char dpgd_cli_mech_help[] =
    "mechanisms (each flag may repeat; count defaults to 1; sensitivity to 1):\n"
    "  --gaussian sigma=S[,sensitivity=D][,count=N]   Gaussian, noise std S (mu = D/S)\n"
    "  --gaussian mu=M[,count=N]                     Gaussian given by its GDP mu\n"
    "  --laplace b=B[,sensitivity=D][,count=N]       Laplace, scale B (a = D/B)\n"
    "  --laplace a=A[,count=N]                       Laplace given by a = sensitivity/scale\n"
    "  --rr eps0=E[,count=N]                         binary randomized response\n"
    "  --discrete-gaussian sigma=S[,sensitivity=D][,count=N]  (or mu=M)\n"
    "      multivariate discrete Gaussian: an integer vector of L2 sensitivity D plus\n"
    "      N_Z(0, S^2) on each coordinate (dpgd's exact sampler); proven rho-zCDP with\n"
    "      rho = D^2/(2 S^2) (Canonne, Kamath & Steinke 2020): zcdp and rdp_* rows only;\n"
    "      the continuous Gaussian of the same S is printed beside them\n"
    "  --discrete p=P1:P2:..,q=Q1:Q2:..[,count=N]    a dominating pair of discrete\n"
    "                                                distributions (removal direction;\n"
    "                                                the reversed pair is also accounted)\n"
    "  --subsampled q=Q,sigma=S[,count=N]            Poisson-subsampled Gaussian,\n"
    "                                                rate Q, noise multiplier S\n"
    "  --subsampled-discrete-gaussian q=Q,sigma=S[,count=N]\n"
    "      Poisson-subsampled multivariate discrete Gaussian (secure DP-SGD): rate Q,\n"
    "      N_Z(0, (S D)^2) per coordinate on an integer sum of sensitivity D; an RDP\n"
    "      bound proven for add and remove (docs/MATH.md 18.1): rdp_* rows only; the\n"
    "      continuous subsampled Gaussian of the same Q, S is printed beside them\n"
    "  --wor-gaussian m=M,n=N,sigma=S,sensitivity=D,relation=R[,count=K]\n"
    "  --wor-laplace m=M,n=N,b=B[,sensitivity=D][,relation=R][,count=K]  (or a=A)\n"
    "      sampling without replacement: each release sees a fresh uniformly random\n"
    "      subset of exactly M of the N points; sigma, b, a and D are relative to the\n"
    "      base query's replace-one sensitivity (2C for a sum of gradients clipped to C).\n"
    "      --wor-gaussian needs both (gradients clipped to C: sigma = noise std / C,\n"
    "      sensitivity=2); --wor-laplace defaults to sensitivity=1, add-remove.\n"
    "      relation=add-remove: neighbours differ by one point added or\n"
    "        removed, datasets of N and N-1 points; exact (Zhu, Dong & Wang 2022, add\n"
    "        and remove accounted separately; the Gaussian equals Poisson at q = M/N).\n"
    "      relation=replace-one: neighbours have N points and differ in one point's\n"
    "        value; only an upper bound is known (RDP of Wang, Balle & Kasiviswanathan\n"
    "        2019, Theorems 9 and 27): the rdp_* rows, never exact.\n";

/* Which neighbouring relations the without-replacement flags asked for (bit 0
 * add-remove, bit 1 replace-one), for the relation line of the output. */
static unsigned wor_relations;

unsigned dpgd_cli_wor_relations(void) { return wor_relations; }

/* ---- parsing of mechanism specifications "key=value,key=value" ---- */

typedef struct {
  const char *key;
  const char *val; /* NULL if absent */
} kv;

/* Splits spec (modified in place) into at most n pairs whose keys must be among
 * kvs[].key; fills kvs[].val. Prints an error naming flag and returns non-zero. */
static int parse_kv(const char *flag, char *spec, kv *kvs, size_t n)
{
  if (!*spec) {
    dpgd_cli_error("%s: empty specification", flag);
    return 1;
  }
  for (char *tok = strtok(spec, ","); tok; tok = strtok(NULL, ",")) {
    char *eq = strchr(tok, '=');
    if (!eq) {
      dpgd_cli_error("%s: '%s' is not key=value", flag, tok);
      return 1;
    }
    *eq = '\0';
    while (*tok == ' ') tok++; /* "sigma=1, count=2": a space after the comma is fine */
    if (strchr(eq + 1, ' ') && strchr(eq + 1, '=')) {
      dpgd_cli_error("%s: '%s=%s': keys are separated by commas, not spaces "
                     "(sigma=1,count=2)",
                     flag, tok, eq + 1);
      return 1;
    }
    size_t i = 0;
    while (i < n && strcmp(kvs[i].key, tok)) i++;
    if (i == n) {
      dpgd_cli_error("%s: unknown key '%s'", flag, tok);
      return 1;
    }
    if (kvs[i].val) {
      dpgd_cli_error("%s: key '%s' given twice", flag, tok);
      return 1;
    }
    kvs[i].val = eq + 1;
  }
  return 0;
}

/* A double from key `key` of flag, or dflt if absent (error if required and absent). */
static int kv_double(const char *flag, const kv *x, int required, double dflt, double *out)
{
  char name[64];
  snprintf(name, sizeof name, "%s %s", flag, x->key);
  if (!x->val) {
    if (required) {
      dpgd_cli_error("%s: missing %s=", flag, x->key);
      return 1;
    }
    *out = dflt;
    return 0;
  }
  return dpgd_cli_parse_double(name, x->val, out);
}

static int kv_count(const char *flag, const kv *x, uint64_t *count)
{
  size_t c = 1;
  char name[64];
  snprintf(name, sizeof name, "%s count", flag);
  if (x->val && dpgd_cli_parse_size(name, x->val, &c)) return 1;
  if (c < 1) {
    dpgd_cli_error("%s: count must be >= 1", flag);
    return 1;
  }
  *count = c;
  return 0;
}

/* "0.5:0.25:0.25" -> v[k]. */
static int parse_probs(const char *flag, const char *key, const char *text, double *v,
                       size_t *k)
{
  char name[64], buf[64];
  snprintf(name, sizeof name, "%s %s", flag, key);
  *k = 0;
  for (const char *s = text;;) {
    const char *colon = strchr(s, ':');
    size_t len = colon ? (size_t)(colon - s) : strlen(s);
    if (*k == MAX_OUTCOMES) {
      dpgd_cli_error("%s: more than %d outcomes", name, MAX_OUTCOMES);
      return 1;
    }
    if (len >= sizeof buf) len = sizeof buf - 1;
    memcpy(buf, s, len);
    buf[len] = '\0';
    if (dpgd_cli_parse_double(name, buf, &v[(*k)++])) return 1;
    if (!colon) break;
    s = colon + 1;
  }
  return 0;
}

static int add_status(const char *flag, int st)
{
  if (!st) return 0;
  dpgd_cli_status_error(st, flag);
  return 1;
}

/* The Gaussian and Laplace specifications: either scale=S[,sensitivity=D] (the
 * mechanism's ratio is D/S) or ratio=R directly, plus count=N. *ratio gets the ratio
 * (mu of a Gaussian, a of a Laplace). Returns 0, or 1 after printing an error. */
static int scale_or_ratio(const char *flag, char *spec, const char *scale, const char *ratio,
                          double *out, uint64_t *count)
{
  kv k[] = {{scale, NULL}, {ratio, NULL}, {"sensitivity", NULL}, {"count", NULL}};
  double x, d;
  if (parse_kv(flag, spec, k, 4) || kv_count(flag, &k[3], count)) return 1;
  if (!k[0].val == !k[1].val) {
    dpgd_cli_error("%s: give exactly one of %s= and %s=", flag, scale, ratio);
    return 1;
  }
  if (k[1].val) {
    if (k[2].val) {
      dpgd_cli_error("%s: sensitivity= goes with %s=, not %s=", flag, scale, ratio);
      return 1;
    }
    return kv_double(flag, &k[1], 1, 0, out);
  }
  if (kv_double(flag, &k[0], 1, 0, &x) || kv_double(flag, &k[2], 0, 1, &d)) return 1;
  if (!(x > 0) || !(d > 0)) {
    dpgd_cli_error("%s: %s and sensitivity must be > 0", flag, scale);
    return 1;
  }
  *out = d / x;
  return 0;
}

/* --wor-gaussian / --wor-laplace (laplace = 1): m, n, the base's ratio, relation,
 * count. */
static int add_wor(dpgd_accountant *a, const char *flag, char *spec, int laplace)
{
  kv k[] = {{"m", NULL},    {"n", NULL},           {laplace ? "b" : "sigma", NULL},
            {"a", NULL},    {"sensitivity", NULL}, {"relation", NULL},
            {"count", NULL}};
  size_t m = 0, n = 0;
  uint64_t count = 1;
  double x = 0, d = 1;
  char name[64];
  if (parse_kv(flag, spec, k, 7) || kv_count(flag, &k[6], &count)) return 1;
  if (!k[0].val || !k[1].val || (!laplace && !k[2].val) || (!laplace && k[3].val) ||
      (laplace && !k[2].val == !k[3].val) || (k[3].val && k[4].val)) {
    dpgd_cli_error("%s: give m=, n= and %s (see 'dpgd account --help')", flag,
                   laplace ? "one of b= (with optional sensitivity=) and a=" : "sigma=");
    return 1;
  }
  /* A default would silently halve a clipped sum's sensitivity (2C, not C): the
   * Gaussian's units and relation are stated by the caller. */
  if (!laplace && (!k[4].val || !k[5].val)) {
    dpgd_cli_error("%s: give relation=add-remove|replace-one and sensitivity=D, the base "
                   "sum's replace-one sensitivity in sigma's units (2 for gradients "
                   "clipped to 1)",
                   flag);
    return 1;
  }
  snprintf(name, sizeof name, "%s m", flag);
  if (dpgd_cli_parse_size(name, k[0].val, &m)) return 1;
  snprintf(name, sizeof name, "%s n", flag);
  if (dpgd_cli_parse_size(name, k[1].val, &n)) return 1;
  if (kv_double(flag, k[2].val ? &k[2] : &k[3], 1, 0, &x) || kv_double(flag, &k[4], 0, 1, &d))
    return 1;
  if (k[2].val && laplace) x = d > 0 && x > 0 ? d / x : -1; /* a = sensitivity / b */
  else if (k[2].val) x /= d; /* sigma relative to the sensitivity */
  dpgd_acct_relation rel = DPGD_ACCT_ADD_REMOVE;
  if (k[5].val && !strcmp(k[5].val, "replace-one")) rel = DPGD_ACCT_REPLACE_ONE;
  else if (k[5].val && strcmp(k[5].val, "add-remove")) {
    dpgd_cli_error("%s: relation must be add-remove or replace-one", flag);
    return 1;
  }
  wor_relations |= 1u << rel;
  return add_status(flag, laplace ? dpgd_acct_add_wor_laplace(a, m, n, x, rel, count)
                                  : dpgd_acct_add_wor_gaussian(a, m, n, x, rel, count));
}

/* --discrete p=..,q=..[,count=N]. */
static int add_discrete(dpgd_accountant *a, const char *flag, char *spec)
{
  kv k[] = {{"p", NULL}, {"q", NULL}, {"count", NULL}};
  static double p[MAX_OUTCOMES], q[MAX_OUTCOMES];
  size_t kp, kq;
  uint64_t count = 1;
  if (parse_kv(flag, spec, k, 3) || kv_count(flag, &k[2], &count)) return 1;
  if (!k[0].val || !k[1].val) {
    dpgd_cli_error("%s: missing %s=", flag, k[0].val ? "q" : "p");
    return 1;
  }
  if (parse_probs(flag, "p", k[0].val, p, &kp) || parse_probs(flag, "q", k[1].val, q, &kq))
    return 1;
  if (kp != kq) {
    dpgd_cli_error("%s: p has %zu outcomes but q has %zu", flag, kp, kq);
    return 1;
  }
  return add_status(flag, dpgd_acct_add_discrete(a, p, q, kp, count));
}

/* Adds the mechanism of one flag (--gaussian etc.) with its specification to a.
 * Returns 0, 1 after printing an error, or -1 if flag is not a mechanism flag. */
int dpgd_cli_add_mechanism(dpgd_accountant *a, const char *flag, const char *spec_in)
{
  static const char *flags[] = {
      "--gaussian",    "--laplace",           "--rr",
      "--discrete",    "--subsampled",        "--wor-gaussian",
      "--wor-laplace", "--discrete-gaussian", "--subsampled-discrete-gaussian"};
  size_t which = 0;
  while (which < 9 && strcmp(flag, flags[which])) which++;
  if (which == 9) return -1;
  if (!spec_in) {
    dpgd_cli_error("%s needs a specification (see 'dpgd account --help')", flag);
    return 1;
  }
  char spec[4096];
  if (strlen(spec_in) >= sizeof spec) {
    dpgd_cli_error("%s: specification too long", flag);
    return 1;
  }
  strcpy(spec, spec_in);
  uint64_t count = 1;
  double x, y;
  if (which == 5 || which == 6) return add_wor(a, flag, spec, which == 6);
  switch (which) {
  case 7: /* discrete Gaussian: sigma or mu */
    if (scale_or_ratio(flag, spec, "sigma", "mu", &x, &count)) return 1;
    return add_status(flag, dpgd_acct_add_discrete_gaussian(a, x, count));
  case 0: /* gaussian: sigma or mu */
  case 1: /* laplace: b or a */
    if (scale_or_ratio(flag, spec, which ? "b" : "sigma", which ? "a" : "mu", &x, &count))
      return 1;
    return add_status(flag, which ? dpgd_acct_add_laplace(a, x, count)
                                  : dpgd_acct_add_gaussian(a, x, count));
  case 2: { /* rr */
    kv k[] = {{"eps0", NULL}, {"count", NULL}};
    if (parse_kv(flag, spec, k, 2) || kv_count(flag, &k[1], &count) ||
        kv_double(flag, &k[0], 1, 0, &x))
      return 1;
    return add_status(flag, dpgd_acct_add_rr(a, x, count));
  }
  case 3: return add_discrete(a, flag, spec);
  default: { /* subsampled (which 4) or subsampled discrete Gaussian (8): q and sigma */
    kv k[] = {{"q", NULL}, {"sigma", NULL}, {"count", NULL}};
    if (parse_kv(flag, spec, k, 3) || kv_count(flag, &k[2], &count) ||
        kv_double(flag, &k[0], 1, 0, &x) || kv_double(flag, &k[1], 1, 0, &y))
      return 1;
    return add_status(flag, which == 8
                                ? dpgd_acct_add_subsampled_discrete_gaussian(a, x, y, count)
                                : dpgd_acct_add_subsampled_gaussian(a, x, y, count));
  }
  }
}
