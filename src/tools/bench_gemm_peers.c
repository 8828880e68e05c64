/* bench_gemm_peers.c — the gemm entry points of the peers of `tilec bench gemm`, found at run
 * time: cblas_sgemm (and cblas_sbgemm where the build has it) in the OpenBLAS bench_peers.c
 * opened, bli_sgemm in its BLIS (already forced to skx there), oneDNN's matmul primitive through
 * the 2.x C API (dlopen of libdnnl.so.2 again: the same library, its own engine and stream), and
 * libxsmm's parallel f32 gemm (libxsmm_xgemm_omp) through libtilec_xsmm_peer.so, which the
 * build makes from Debian's static libxsmm archives when they are installed.
 *
 * oneDNN: plain rows use weights in row-major [K, N] (format ab); pre-packed rows let the
 * primitive choose the weights' layout (format_tag_any) and reorder B into it once, outside the
 * timed region, as an inference engine does with weights. No dnnl.h is needed to build: the
 * descriptors are opaque buffers and the enum values below are those of oneDNN 2.x.
 * Invariants: nothing here prints; descs say what was found or why not.
 */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_gemm_impl.h"

enum {
  TL_GD_BF16 = 2, TL_GD_F32 = 3, TL_GD_S32 = 4, TL_GD_S8 = 5, TL_GD_U8 = 6, /* dnnl_data_type_t */
  TL_GD_TAG_ANY = 1, TL_GD_TAG_AB = 3,                                    /* dnnl_format_tag_t */
  TL_GD_CPU = 1, TL_GD_STREAM_DEFAULT = 1,
  TL_GD_QUERY_WEIGHTS_MD = 131,                                           /* dnnl_query_weights_md */
  TL_GD_ARG_SRC = 1, TL_GD_ARG_WEIGHTS = 33, TL_GD_ARG_DST = 17,
  TL_GD_MD_BYTES = 1024,   /* dnnl_memory_desc_t is 696 bytes in 2.6 */
  TL_GD_DESC_BYTES = 8192  /* dnnl_matmul_desc_t is 2800 bytes in 2.6 */
};

typedef struct tl_gd_version { int major, minor, patch; const char *hash; unsigned cpu_runtime, gpu_runtime; } tl_gd_version;
typedef struct tl_gd_arg { int arg; void *memory; } tl_gd_arg;

struct tl_gdnnl {
  void *h, *engine, *stream;
  int (*md_init)(void *md, int ndims, const int64_t *dims, int dt, int tag);
  int (*matmul_init)(void *d, const void *src, const void *wei, const void *bias, const void *dst);
  int (*pd_create)(void **pd, const void *op_desc, const void *attr, void *engine, const void *hint);
  const void *(*pd_query_md)(const void *pd, int what, int index);
  int (*reorder_pd_create)(void **pd, const void *src_md, void *src_engine, const void *dst_md, void *dst_engine, const void *attr);
  int (*pd_destroy)(void *pd);
  int (*prim_create)(void **prim, const void *pd);
  int (*prim_destroy)(void *prim);
  int (*execute)(const void *prim, void *stream, int nargs, const tl_gd_arg *args);
  int (*mem_create)(void **mem, const void *md, void *engine, void *handle);
  int (*mem_set)(void *mem, void *handle);
  int (*mem_destroy)(void *mem);
  size_t (*md_size)(const void *md);
  int (*stream_wait)(void *stream);
  int (*stream_destroy)(void *stream);
  int (*engine_destroy)(void *engine);
};

struct tl_gdnnl_op {
  void *pd, *prim, *a, *b, *c;
  const void *wmd;                                 /* the primitive's weights layout (lives with pd) */
  _Alignas(64) unsigned char plain_wmd[TL_GD_MD_BYTES]; /* row-major [K, N] weights */
};

/* ---- oneDNN ---- */

/* Opens oneDNN's matmul entry points with its own engine and stream; NULL with desc set. */
static tl_gdnnl *tl_gdnnl_load(char *desc, size_t n) {
  void *h = dlopen("libdnnl.so.2", RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    snprintf(desc, n, "onednn matmul: libdnnl.so.2 not found");
    return NULL;
  }
  const tl_gd_version *(*version)(void) = (const tl_gd_version *(*)(void))dlsym(h, "dnnl_version");
  int (*engine_create)(void **, int, size_t) = (int (*)(void **, int, size_t))dlsym(h, "dnnl_engine_create");
  int (*stream_create)(void **, void *, unsigned) = (int (*)(void **, void *, unsigned))dlsym(h, "dnnl_stream_create");
  const tl_gd_version *v = version ? version() : NULL;
  tl_gdnnl *d = calloc(1, sizeof *d);
  if (!v || v->major != 2 || !d) {
    snprintf(desc, n, "onednn matmul: %s", d ? "not the 2.x C API" : "out of memory");
    free(d);
    dlclose(h);
    return NULL;
  }
  d->h = h;
  *(void **)&d->md_init = dlsym(h, "dnnl_memory_desc_init_by_tag");
  *(void **)&d->matmul_init = dlsym(h, "dnnl_matmul_desc_init");
  *(void **)&d->pd_create = dlsym(h, "dnnl_primitive_desc_create");
  *(void **)&d->pd_query_md = dlsym(h, "dnnl_primitive_desc_query_md");
  *(void **)&d->reorder_pd_create = dlsym(h, "dnnl_reorder_primitive_desc_create");
  *(void **)&d->pd_destroy = dlsym(h, "dnnl_primitive_desc_destroy");
  *(void **)&d->prim_create = dlsym(h, "dnnl_primitive_create");
  *(void **)&d->prim_destroy = dlsym(h, "dnnl_primitive_destroy");
  *(void **)&d->execute = dlsym(h, "dnnl_primitive_execute");
  *(void **)&d->mem_create = dlsym(h, "dnnl_memory_create");
  *(void **)&d->mem_set = dlsym(h, "dnnl_memory_set_data_handle");
  *(void **)&d->mem_destroy = dlsym(h, "dnnl_memory_destroy");
  *(void **)&d->md_size = dlsym(h, "dnnl_memory_desc_get_size");
  *(void **)&d->stream_wait = dlsym(h, "dnnl_stream_wait");
  *(void **)&d->stream_destroy = dlsym(h, "dnnl_stream_destroy");
  *(void **)&d->engine_destroy = dlsym(h, "dnnl_engine_destroy");
  if (!engine_create || !stream_create || !d->md_init || !d->matmul_init || !d->pd_create || !d->pd_query_md ||
      !d->reorder_pd_create || !d->pd_destroy || !d->prim_create || !d->prim_destroy || !d->execute || !d->mem_create ||
      !d->mem_set || !d->mem_destroy || !d->md_size || !d->stream_wait || !d->stream_destroy || !d->engine_destroy) {
    snprintf(desc, n, "onednn matmul: libdnnl.so.2 lacks part of the 2.x matmul C API");
    goto fail;
  }
  if (engine_create(&d->engine, TL_GD_CPU, 0) != 0 || stream_create(&d->stream, d->engine, TL_GD_STREAM_DEFAULT) != 0) {
    snprintf(desc, n, "onednn matmul: could not create a CPU engine and stream");
    goto fail;
  }
  snprintf(desc, n, "onednn matmul: %d.%d.%d, dnnl_matmul_desc_init (f32, bf16 -> f32, u8 x s8 -> s32); plain weights and"
                    " pre-packed (format_tag_any, reordered untimed)", v->major, v->minor, v->patch);
  return d;
fail:
  if (d->stream) d->stream_destroy(d->stream);
  if (d->engine) d->engine_destroy(d->engine);
  free(d);
  dlclose(h);
  return NULL;
}

tl_gdnnl_op *tl_gdnnl_matmul(tl_gpeers *g, int dt, int64_t m, int64_t n, int64_t k, int packed, size_t *wbytes, char *err,
                             size_t errn) {
  tl_gdnnl *d = g->dnnl;
  _Alignas(64) unsigned char amd[TL_GD_MD_BYTES], wmd[TL_GD_MD_BYTES], cmd[TL_GD_MD_BYTES], desc[TL_GD_DESC_BYTES];
  int ta = dt == TL_GEMM_F32 ? TL_GD_F32 : dt == TL_GEMM_BF16 ? TL_GD_BF16 : TL_GD_U8;
  int tb = dt == TL_GEMM_F32 ? TL_GD_F32 : dt == TL_GEMM_BF16 ? TL_GD_BF16 : TL_GD_S8;
  int tc = dt == TL_GEMM_INT8 ? TL_GD_S32 : TL_GD_F32;
  int64_t da[2] = {m, k}, db[2] = {k, n}, dc[2] = {m, n};
  tl_gdnnl_op *op = calloc(1, sizeof *op);
  int e = 0;
  if (!op) {
    snprintf(err, errn, "out of memory");
    return NULL;
  }
  if ((e = d->md_init(amd, 2, da, ta, TL_GD_TAG_AB)) != 0 || (e = d->md_init(op->plain_wmd, 2, db, tb, TL_GD_TAG_AB)) != 0 ||
      (e = d->md_init(wmd, 2, db, tb, packed ? TL_GD_TAG_ANY : TL_GD_TAG_AB)) != 0 ||
      (e = d->md_init(cmd, 2, dc, tc, TL_GD_TAG_AB)) != 0 || (e = d->matmul_init(desc, amd, wmd, NULL, cmd)) != 0) {
    snprintf(err, errn, "matmul descriptor refused (dnnl status %d)", e);
    goto fail;
  }
  if ((e = d->pd_create(&op->pd, desc, NULL, d->engine, NULL)) != 0) {
    snprintf(err, errn, "no matmul implementation for this dtype (dnnl status %d)", e);
    goto fail;
  }
  op->wmd = d->pd_query_md(op->pd, TL_GD_QUERY_WEIGHTS_MD, 0);
  if (!op->wmd || (e = d->prim_create(&op->prim, op->pd)) != 0 || (e = d->mem_create(&op->a, amd, d->engine, NULL)) != 0 ||
      (e = d->mem_create(&op->b, op->wmd, d->engine, NULL)) != 0 || (e = d->mem_create(&op->c, cmd, d->engine, NULL)) != 0) {
    snprintf(err, errn, "matmul primitive or memory creation failed (dnnl status %d)", e);
    goto fail;
  }
  if (wbytes) *wbytes = d->md_size(op->wmd);
  return op;
fail:
  tl_gdnnl_op_free(g, op);
  return NULL;
}

int tl_gdnnl_pack(tl_gpeers *g, tl_gdnnl_op *op, const void *b, void *dst) {
  tl_gdnnl *d = g->dnnl;
  void *pd = NULL, *prim = NULL, *src = NULL, *out = NULL;
  int rc = -1;
  if (d->reorder_pd_create(&pd, op->plain_wmd, d->engine, op->wmd, d->engine, NULL) != 0 || d->prim_create(&prim, pd) != 0 ||
      d->mem_create(&src, op->plain_wmd, d->engine, (void *)b) != 0 || d->mem_create(&out, op->wmd, d->engine, dst) != 0)
    goto out;
  tl_gd_arg args[2] = {{TL_GD_ARG_SRC, src}, {TL_GD_ARG_DST, out}};
  if (d->execute(prim, d->stream, 2, args) == 0 && d->stream_wait(d->stream) == 0) rc = 0;
out:
  if (src) d->mem_destroy(src);
  if (out) d->mem_destroy(out);
  if (prim) d->prim_destroy(prim);
  if (pd) d->pd_destroy(pd);
  return rc;
}

int tl_gdnnl_run(tl_gpeers *g, tl_gdnnl_op *op, const void *a, const void *b, void *c) {
  tl_gdnnl *d = g->dnnl;
  if (d->mem_set(op->a, (void *)a) != 0 || d->mem_set(op->b, (void *)b) != 0 || d->mem_set(op->c, c) != 0) return -1;
  tl_gd_arg args[3] = {{TL_GD_ARG_SRC, op->a}, {TL_GD_ARG_WEIGHTS, op->b}, {TL_GD_ARG_DST, op->c}};
  if (d->execute(op->prim, d->stream, 3, args) != 0) return -1;
  return d->stream_wait(d->stream) == 0 ? 0 : -1;
}

void tl_gdnnl_op_free(tl_gpeers *g, tl_gdnnl_op *op) {
  if (!op) return;
  tl_gdnnl *d = g->dnnl;
  if (op->a) d->mem_destroy(op->a);
  if (op->b) d->mem_destroy(op->b);
  if (op->c) d->mem_destroy(op->c);
  if (op->prim) d->prim_destroy(op->prim);
  if (op->pd) d->pd_destroy(op->pd);
  free(op);
}

/* ---- loading (declared in bench_gemm_impl.h) ---- */

/* libxsmm through libtilec_xsmm_peer.so (src/tools/peers/xsmm_peer.c: the build wraps Debian's
 * static archives into it), looked for next to this binary (the build tree), in <libdir>/tilec
 * relative to it (an installed tree, wherever its prefix), where the configured prefix installs
 * it, then on the loader's path. */
static void tl_gpeers_load_xsmm(tl_gpeers *g, int threads) {
  static const char mod[] = "libtilec_xsmm_peer.so";
  static const char *const rel[2] = {"", TILEC_PEER_RELDIR "/"};
  char path[4096 + 256];
  void *h = NULL;
  ssize_t n = readlink("/proc/self/exe", path, 4096);
  char *slash = n > 0 ? (path[n] = 0, strrchr(path, '/')) : NULL;
  for (int r = 0; slash && !h && r < 2; r++) {
    snprintf(slash + 1, 256, "%s%s", rel[r], mod);
    h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  }
  if (!h) h = dlopen(TILEC_PEER_LIBDIR "/libtilec_xsmm_peer.so", RTLD_NOW | RTLD_LOCAL);
  if (!h) h = dlopen(mod, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    snprintf(g->xsmm_desc, sizeof g->xsmm_desc,
             "libxsmm: not found (no %s: Debian's libxsmm-dev ships static archives only, which a build without"
             " sanitizers wraps into it when libxsmm-dev and OpenMP are installed before CMake runs: scripts/deps.sh"
             " peers)", mod);
    return;
  }
  *(void **)&g->xsmm_sgemm = dlsym(h, "tl_xsmm_peer_sgemm");
  const char *(*version)(void) = NULL;
  *(void **)&version = dlsym(h, "tl_xsmm_peer_version");
  if (!g->xsmm_sgemm || !version) {
    g->xsmm_sgemm = NULL;
    snprintf(g->xsmm_desc, sizeof g->xsmm_desc, "libxsmm: %s lacks tl_xsmm_peer_sgemm / _version", mod);
    return;
  }
  snprintf(g->xsmm_desc, sizeof g->xsmm_desc,
           "libxsmm: %s (Debian's static archives in %s), libxsmm_xgemm_omp (f32 only) on OpenMP's threads"
           " (OMP_NUM_THREADS below; --threads %d)", version(), mod, threads);
}

void tl_gpeers_load(tl_gpeers *g, const tl_bpeers *p, int threads) {
  memset(g, 0, sizeof *g);
  if (p->openblas) {
    *(void **)&g->ob_sgemm = dlsym(p->openblas, "cblas_sgemm");
    *(void **)&g->ob_sbgemm = dlsym(p->openblas, "cblas_sbgemm");
    snprintf(g->ob_desc, sizeof g->ob_desc, "openblas gemm: %s; %s", g->ob_sgemm ? "cblas_sgemm (f32)" : "no cblas_sgemm",
             g->ob_sbgemm ? "cblas_sbgemm (bf16 -> f32)"
                          : "no cblas_sbgemm in this build (Debian's 0.3.21 has none): no bf16 row; no int8 gemm");
  } else {
    snprintf(g->ob_desc, sizeof g->ob_desc, "openblas gemm: no OpenBLAS (above)");
  }
  if (p->blis) {
    *(void **)&g->bli_sgemm = dlsym(p->blis, "bli_sgemm");
    snprintf(g->blis_desc, sizeof g->blis_desc, "blis gemm: %s, %d thread%s (bli_thread_set_num_threads); no bf16 or int8 gemm",
             g->bli_sgemm ? "bli_sgemm (f32, row-major through strides)" : "no bli_sgemm", threads, threads == 1 ? "" : "s");
  } else {
    snprintf(g->blis_desc, sizeof g->blis_desc, "blis gemm: no BLIS (above)");
  }
  if (p->dnnl) g->dnnl = tl_gdnnl_load(g->dnnl_desc, sizeof g->dnnl_desc);
  else snprintf(g->dnnl_desc, sizeof g->dnnl_desc, "onednn matmul: no oneDNN (above)");
  if (p->want & 16) tl_gpeers_load_xsmm(g, threads);
  else snprintf(g->xsmm_desc, sizeof g->xsmm_desc, "libxsmm: not asked for (--peers)");
}

void tl_gpeers_close(tl_gpeers *g) {
  /* the libraries stay loaded, as in tl_bpeers_close; only oneDNN's engine and stream go */
  if (g->dnnl) {
    g->dnnl->stream_destroy(g->dnnl->stream);
    g->dnnl->engine_destroy(g->dnnl->engine);
    free(g->dnnl);
    g->dnnl = NULL;
  }
}
