/* bench_peers.c — the libraries `tilec bench` compares tilec with, found when the command runs.
 *
 * OpenBLAS, BLIS and oneDNN are optional Debian packages, so the tool has no link-time dependency
 * on them: each is opened with dlopen (RTLD_LOCAL, so their cblas_* symbols never collide) and
 * used through dlsym'd entry points; an absent or unusable library is a row that is not there and
 * a header line that says why. (DESIGN.md §6 says peers are "detected at build time"; run time is
 * our departure, so one binary serves machines with and without them.) PyTorch runs in a Python
 * subprocess when `python3 -c 'import torch'` works; it times itself with the harness's rules and
 * prints its times as one JSON object.
 *
 * The environment the peers read when they load is set here, before dlopen, only where the user
 * has not set it, and every value is stated in the header:
 *   OMP_NUM_THREADS=threads          BLIS, oneDNN and libxsmm use OpenMP (libgomp);
 *   GOMP_SPINCOUNT=30000             libgomp's idle threads spin ~0.5 ms instead of ~4 ms, so the
 *                                    harness's 1 ms pause lets them sleep before the next case;
 *                                    OMP_WAIT_POLICY stays unset (passive made small calls 8x
 *                                    slower, DESIGN §8);
 *   OPENBLAS_THREAD_TIMEOUT=20       OpenBLAS's idle threads spin 2^20 cycles, not 2^28 (~100 ms);
 *   BLIS_ARCH_TYPE=<id of skx>       when the CPU has AVX-512 and BLIS would pick an AVX2
 *                                    configuration (BLIS 0.9 picks zen3 on Zen 4, haswell-class on
 *                                    some Intel parts; DESIGN §8). What BLIS picks is found in a
 *                                    forked child, and so is whether the forced id loads (BLIS
 *                                    aborts the process on an id it was not built with).
 *   with TILEC_ISA below the CPU's best level (a context capped to stand for a CPU without the
 *   higher units), the peers are capped at the same instruction sets (tl_peer_caps): oneDNN
 *   ONEDNN_MAX_CPU_ISA, OpenBLAS OPENBLAS_CORETYPE, BLIS BLIS_ARCH_TYPE (the id of the
 *   configuration, checked in a forked child like skx), libxsmm LIBXSMM_TARGET, and for PyTorch's
 *   process ATEN_CPU_CAPABILITY and MKL_ENABLE_INSTRUCTIONS (MKL honours it on Intel CPUs only).
 * Invariants: nothing here prints to stdout; a peer's function pointers are all set or it is
 * absent (NULL handle).
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_impl.h"

/* ---- environment ---- */

/* Sets name=value unless the user set it; appends "name=value (why)" to desc. */
static void tl_peer_env(char *desc, size_t n, const char *name, const char *value, const char *why) {
  const char *cur = getenv(name);
  size_t len = strlen(desc);
  if (cur) {
    snprintf(desc + len, n - len, "%s%s=%s (yours)", len ? ", " : "", name, cur);
    return;
  }
  setenv(name, value, 1);
  snprintf(desc + len, n - len, "%s%s=%s (%s)", len ? ", " : "", name, value, why);
}

/* The file a loaded symbol comes from ("?" if unknown). */
static const char *tl_peer_file(void *sym) {
  Dl_info di;
  return sym && dladdr(sym, &di) && di.dli_fname ? di.dli_fname : "?";
}

/* ---- the ISA cap ---- */

/* The peers' ISA switches (environment variables; BLIS's is an id, set in tl_peer_blis): oneDNN,
 * OpenBLAS, libxsmm, and PyTorch's ATen and MKL. */
enum { TL_PEER_NSW = 5 };
static const char *const tl_peer_switch[TL_PEER_NSW] = {"ONEDNN_MAX_CPU_ISA", "OPENBLAS_CORETYPE", "LIBXSMM_TARGET",
                                                        "ATEN_CPU_CAPABILITY", "MKL_ENABLE_INSTRUCTIONS"};

/* Each peer's switch value for a tilec ISA level (env in tl_peer_switch's order, and BLIS's
 * configuration name): what a CPU whose best level that is would run. */
typedef struct tl_peer_cap {
  const char *env[TL_PEER_NSW], *blis;
} tl_peer_cap;

static const tl_peer_cap tl_peer_caps[TL_ISA_COUNT] = {
    [TL_ISA_SCALAR] = {{"SSE41", "Nehalem", "wsm", "default", "SSE4_2"}, "penryn"},
    [TL_ISA_AVX2] = {{"AVX2", "Haswell", "hsw", "avx2", "AVX2"}, "haswell"},
    [TL_ISA_AVX2VNNI] = {{"AVX2_VNNI", "Haswell", "hsw", "avx2", "AVX2_E1"}, "haswell"},
    [TL_ISA_AVX512] = {{"AVX512_CORE", "SkylakeX", "skx", "avx512", "AVX512"}, "skx"},
    [TL_ISA_AVX512VNNI] = {{"AVX512_CORE_VNNI", "SkylakeX", "clx", "avx512", "AVX512_E1"}, "skx"},
    [TL_ISA_AVX512BF16] = {{"AVX512_CORE_BF16", "Cooperlake", "cpx", "avx512", "AVX512_E3"}, "skx"},
    [TL_ISA_AMX] = {{NULL}, NULL},
};

/* The level tilec's contexts run when TILEC_ISA caps them below the CPU's best (as tl_ctx_new
 * reads it: an avx2vnni the CPU cannot run is avx2); -1 when there is no such cap (unset,
 * unparsable: tl_ctx_new reports that, or at or above the CPU's level). */
static int tl_peer_cap_level(void) {
  const char *e = getenv("TILEC_ISA");
  tl_isa cap;
  if (!e || !*e || tl_isa_parse(e, &cap) != TL_OK) return -1;
  tl_cpu_info cpu;
  tl_cpu_detect(&cpu);
  tl_isa eff = cap < cpu.isa_max ? cap : cpu.isa_max;
  if (eff == TL_ISA_AVX2VNNI && !(cpu.features & TL_FEAT_AVXVNNI)) eff = TL_ISA_AVX2;
  return eff < cpu.isa_max ? (int)eff : -1;
}

/* ---- OpenBLAS ---- */

/* Loads OpenBLAS, resolves scopy/sscal/saxpby and sets its threads. */
static void tl_peer_openblas(tl_bpeers *p, int threads) {
  void *h = dlopen("libopenblas.so.0", RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    snprintf(p->openblas_desc, sizeof p->openblas_desc, "openblas: not found (libopenblas.so.0: apt-get install libopenblas0)");
    return;
  }
  void (*set_threads)(int) = (void (*)(int))dlsym(h, "openblas_set_num_threads");
  char *(*config)(void) = (char *(*)(void))dlsym(h, "openblas_get_config");
  *(void **)&p->ob_scopy = dlsym(h, "cblas_scopy");
  *(void **)&p->ob_sscal = dlsym(h, "cblas_sscal");
  *(void **)&p->ob_saxpby = dlsym(h, "cblas_saxpby");
  if (!p->ob_scopy || !p->ob_sscal || !p->ob_saxpby) {
    snprintf(p->openblas_desc, sizeof p->openblas_desc, "openblas: libopenblas.so.0 lacks cblas_scopy/sscal/saxpby");
    p->ob_scopy = NULL, p->ob_sscal = NULL, p->ob_saxpby = NULL;
    dlclose(h);
    return;
  }
  if (set_threads) set_threads(threads);
  p->openblas = h;
  snprintf(p->openblas_desc, sizeof p->openblas_desc, "openblas: %s (%s), %d threads set (scopy and saxpby run on one; sscal splits n > 1M)",
           config ? config() : "version unknown", tl_peer_file((void *)p->ob_scopy), threads);
}

/* ---- BLIS ---- */

typedef const char *(*tl_blis_str_fn)(int);

/* In a forked child: sets BLIS_ARCH_TYPE=force (force >= 0), unsets it (-1) or leaves the
 * user's (-2), initialises BLIS and reports the configuration id it picked; -1 when the child
 * died (BLIS aborts on an id it lacks). */
static int tl_blis_child(void *h, int force) {
  int fd[2];
  if (pipe(fd) != 0) return -1;
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) {
    close(fd[0]), close(fd[1]);
    return -1;
  }
  if (pid == 0) {
    close(fd[0]);
    int devnull = open("/dev/null", O_WRONLY);
    if (devnull >= 0) dup2(devnull, 2); /* BLIS's abort message is ours to report */
    char buf[16];
    if (force >= 0) {
      snprintf(buf, sizeof buf, "%d", force);
      setenv("BLIS_ARCH_TYPE", buf, 1);
    } else if (force == -1) {
      unsetenv("BLIS_ARCH_TYPE");
    }
    void (*init)(void) = (void (*)(void))dlsym(h, "bli_init");
    int (*query)(void) = (int (*)(void))dlsym(h, "bli_arch_query_id");
    int id = -1;
    if (init && query) init(), id = query();
    ssize_t w = write(fd[1], &id, sizeof id);
    _exit(w == (ssize_t)sizeof id ? 0 : 1);
  }
  close(fd[1]);
  int id = -1;
  ssize_t r;
  do r = read(fd[0], &id, sizeof id);
  while (r < 0 && errno == EINTR);
  close(fd[0]);
  int st;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  return r == (ssize_t)sizeof id && WIFEXITED(st) && WEXITSTATUS(st) == 0 ? id : -1;
}

/* The id of configuration `name` in BLIS's table (-1 if absent). The table has no length to ask
 * for: it ends with "generic" in every 0.x release, so the scan stops there. */
static int tl_blis_id(tl_blis_str_fn str, const char *name) {
  for (int i = 0; i < 64; i++) {
    const char *s = str(i);
    if (!s) break;
    if (!strcmp(s, name)) return i;
    if (!strcmp(s, "generic")) break;
  }
  return -1;
}

/* Loads BLIS, decides its configuration (forcing skx where it would waste AVX-512, see the file
 * comment; or `cap`, the configuration named for the ISA cap, unless that is skx), initialises it
 * and sets its threads. */
static void tl_peer_blis(tl_bpeers *p, int threads, const char *cap) {
  const char *lib = "libblis.so.4";
  void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  if (!h) h = dlopen(lib = "libblis.so", RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    snprintf(p->blis_desc, sizeof p->blis_desc, "blis: not found (libblis.so.4: apt-get install libblis4)");
    return;
  }
  tl_blis_str_fn str = (tl_blis_str_fn)dlsym(h, "bli_arch_string");
  void (*init)(void) = (void (*)(void))dlsym(h, "bli_init");
  int (*query)(void) = (int (*)(void))dlsym(h, "bli_arch_query_id");
  const char *(*version)(void) = (const char *(*)(void))dlsym(h, "bli_info_get_version_str");
  void (*set_threads)(int64_t) = (void (*)(int64_t))dlsym(h, "bli_thread_set_num_threads");
  *(void **)&p->bli_scopyv = dlsym(h, "bli_scopyv");
  *(void **)&p->bli_sscalv = dlsym(h, "bli_sscalv");
  *(void **)&p->bli_sscal2v = dlsym(h, "bli_sscal2v");
  if (!init || !query || !p->bli_scopyv || !p->bli_sscalv || !p->bli_sscal2v) {
    snprintf(p->blis_desc, sizeof p->blis_desc, "blis: %s lacks bli_init/bli_arch_query_id/bli_scopyv/bli_sscalv/bli_sscal2v", lib);
    p->bli_scopyv = NULL, p->bli_sscalv = NULL, p->bli_sscal2v = NULL;
    dlclose(h);
    return;
  }
  char arch[160] = "";
  const char *user = getenv("BLIS_ARCH_TYPE");
  const char *ver = version ? version() : "";
  int v0 = !strncmp(ver, "0.", 2); /* bli_arch_string(id) returns the name in 0.x; later releases changed it */
  if (!v0) str = NULL;
  if (user) {
    if (tl_blis_child(h, -2) < 0) {
      snprintf(p->blis_desc, sizeof p->blis_desc, "blis: skipped: BLIS_ARCH_TYPE=%.32s (yours) makes bli_init abort", user);
      p->bli_scopyv = NULL, p->bli_sscalv = NULL, p->bli_sscal2v = NULL;
      dlclose(h);
      return;
    }
    snprintf(arch, sizeof arch, "BLIS_ARCH_TYPE=%.32s (yours)", user);
  } else if (cap && str && strcmp(cap, "skx")) {
    const int want = tl_blis_id(str, cap);
    if (want >= 0 && tl_blis_child(h, want) == want) {
      char v[16];
      snprintf(v, sizeof v, "%d", want);
      setenv("BLIS_ARCH_TYPE", v, 1);
      snprintf(arch, sizeof arch, "capped to %s for TILEC_ISA (BLIS_ARCH_TYPE=%d, set here)", cap, want);
    } else {
      snprintf(arch, sizeof arch, "capping to %s for TILEC_ISA failed (%s), kept", cap,
               want < 0 ? "no such configuration in this build" : "its initialisation failed");
    }
  } else if (!str) {
    snprintf(arch, sizeof arch, "configuration not queried (BLIS %s: only 0.x is probed), kept", ver);
  } else {
    tl_cpu_info cpu;
    tl_cpu_detect(&cpu);
    const uint32_t avx512 = TL_FEAT_AVX512F | TL_FEAT_AVX512BW | TL_FEAT_AVX512VL | TL_FEAT_AVX512DQ;
    int detected = tl_blis_child(h, -1);
    int skx = tl_blis_id(str, "skx"), knl = tl_blis_id(str, "knl");
    const char *dname = detected >= 0 ? str(detected) : "unknown (its initialisation failed)";
    if ((cpu.features & avx512) == avx512 && detected >= 0 && skx >= 0 && detected != skx && detected != knl) {
      if (tl_blis_child(h, skx) == skx) {
        char v[16];
        snprintf(v, sizeof v, "%d", skx);
        setenv("BLIS_ARCH_TYPE", v, 1);
        snprintf(arch, sizeof arch, "detected %s (AVX2 kernels) on an AVX-512 CPU: forced skx (BLIS_ARCH_TYPE=%d, set here)",
                 dname, skx);
      } else {
        snprintf(arch, sizeof arch, "detected %s; forcing skx failed, kept %s", dname, dname);
      }
    } else {
      snprintf(arch, sizeof arch, "detected %s, kept", dname);
    }
  }
  init();
  if (set_threads) set_threads(threads);
  int id = query();
  p->blis = h;
  char cfg[32];
  snprintf(cfg, sizeof cfg, "%s", str ? str(id) : "?");
  if (!str) snprintf(cfg, sizeof cfg, "id %d", id);
  snprintf(p->blis_desc, sizeof p->blis_desc, "blis: %s (%s), configuration %s; %s; level-1 routines run on one thread",
           ver[0] ? ver : "version unknown", tl_peer_file((void *)p->bli_scopyv), cfg, arch);
}

/* ---- oneDNN (2.x C API; opaque descriptors in buffers, so no dnnl.h is needed to build) ---- */

enum {
  TL_DNNL_F32 = 3,             /* dnnl_f32 */
  TL_DNNL_TAG_A = 2,           /* dnnl_a: 1-D plain */
  TL_DNNL_CPU = 1,             /* dnnl_cpu */
  TL_DNNL_STREAM_DEFAULT = 1,  /* dnnl_stream_default_flags (in order) */
  TL_DNNL_FORWARD_INFERENCE = 96,
  TL_DNNL_ELTWISE_LINEAR = 0x7f,
  TL_DNNL_ARG_SRC = 1,         /* = DNNL_ARG_FROM */
  TL_DNNL_ARG_DST = 17,        /* = DNNL_ARG_TO */
  TL_DNNL_DESC_BYTES = 8192    /* room for dnnl_memory_desc_t (696 B in 2.6) and dnnl_eltwise_desc_t (1416 B) */
};

typedef struct tl_dnnl_version { int major, minor, patch; const char *hash; unsigned cpu_runtime, gpu_runtime; } tl_dnnl_version;
typedef struct tl_dnnl_arg { int arg; void *memory; } tl_dnnl_arg;

struct tl_bdnnl {
  void *h, *engine, *stream;
  int (*md_init)(void *md, int ndims, const int64_t *dims, int dt, int tag);
  int (*eltwise_init)(void *d, int prop, int alg, const void *md, float alpha, float beta);
  int (*pd_create)(void **pd, const void *op_desc, const void *attr, void *engine, const void *hint);
  int (*reorder_pd_create)(void **pd, const void *src_md, void *src_engine, const void *dst_md, void *dst_engine, const void *attr);
  int (*pd_destroy)(void *pd);
  int (*prim_create)(void **prim, const void *pd);
  int (*prim_destroy)(void *prim);
  int (*execute)(const void *prim, void *stream, int nargs, const tl_dnnl_arg *args);
  int (*mem_create)(void **mem, const void *md, void *engine, void *handle);
  int (*mem_set)(void *mem, void *handle);
  int (*mem_destroy)(void *mem);
  int (*stream_wait)(void *stream);
  int (*stream_destroy)(void *stream);
  int (*engine_destroy)(void *engine);
};

struct tl_bdnnl_op {
  void *prim, *src, *dst;
};

/* The name of an effective ISA value of dnnl_get_effective_cpu_isa. */
static const char *tl_dnnl_isa(int v) {
  switch (v) {
  case 0x7: return "avx2";
  case 0x27: return "avx512_core";
  case 0x67: return "avx512_core_vnni";
  case 0xe7: return "avx512_core_bf16";
  case 0x3e7: return "avx512_core_amx";
  case 0x407: return "avx2_vnni";
  default: return "other";
  }
}

/* Loads oneDNN 2.x, resolves the C API entry points and makes a CPU engine and stream. */
static void tl_peer_dnnl(tl_bpeers *p) {
  void *h = dlopen("libdnnl.so.2", RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    snprintf(p->dnnl_desc, sizeof p->dnnl_desc, "onednn: not found (libdnnl.so.2: apt-get install libdnnl2)");
    return;
  }
  const tl_dnnl_version *(*version)(void) = (const tl_dnnl_version *(*)(void))dlsym(h, "dnnl_version");
  int (*isa)(void) = (int (*)(void))dlsym(h, "dnnl_get_effective_cpu_isa");
  int (*engine_create)(void **, int, size_t) = (int (*)(void **, int, size_t))dlsym(h, "dnnl_engine_create");
  int (*stream_create)(void **, void *, unsigned) = (int (*)(void **, void *, unsigned))dlsym(h, "dnnl_stream_create");
  const tl_dnnl_version *v = version ? version() : NULL;
  if (!v || v->major != 2) {
    snprintf(p->dnnl_desc, sizeof p->dnnl_desc, "onednn: libdnnl.so.2 is version %d, this tool drives the 2.x C API", v ? v->major : -1);
    dlclose(h);
    return;
  }
  tl_bdnnl *d = calloc(1, sizeof *d);
  if (!d) {
    dlclose(h);
    snprintf(p->dnnl_desc, sizeof p->dnnl_desc, "onednn: out of memory");
    return;
  }
  d->h = h;
  *(void **)&d->md_init = dlsym(h, "dnnl_memory_desc_init_by_tag");
  *(void **)&d->eltwise_init = dlsym(h, "dnnl_eltwise_forward_desc_init");
  *(void **)&d->pd_create = dlsym(h, "dnnl_primitive_desc_create");
  *(void **)&d->reorder_pd_create = dlsym(h, "dnnl_reorder_primitive_desc_create");
  *(void **)&d->pd_destroy = dlsym(h, "dnnl_primitive_desc_destroy");
  *(void **)&d->prim_create = dlsym(h, "dnnl_primitive_create");
  *(void **)&d->prim_destroy = dlsym(h, "dnnl_primitive_destroy");
  *(void **)&d->execute = dlsym(h, "dnnl_primitive_execute");
  *(void **)&d->mem_create = dlsym(h, "dnnl_memory_create");
  *(void **)&d->mem_set = dlsym(h, "dnnl_memory_set_data_handle");
  *(void **)&d->mem_destroy = dlsym(h, "dnnl_memory_destroy");
  *(void **)&d->stream_wait = dlsym(h, "dnnl_stream_wait");
  *(void **)&d->stream_destroy = dlsym(h, "dnnl_stream_destroy");
  *(void **)&d->engine_destroy = dlsym(h, "dnnl_engine_destroy");
  if (!engine_create || !stream_create || !d->md_init || !d->eltwise_init || !d->pd_create || !d->reorder_pd_create ||
      !d->pd_destroy || !d->prim_create || !d->prim_destroy || !d->execute || !d->mem_create || !d->mem_set ||
      !d->mem_destroy || !d->stream_wait || !d->stream_destroy || !d->engine_destroy) {
    snprintf(p->dnnl_desc, sizeof p->dnnl_desc, "onednn: libdnnl.so.2 lacks part of the 2.x C API");
    goto fail;
  }
  if (engine_create(&d->engine, TL_DNNL_CPU, 0) != 0 || stream_create(&d->stream, d->engine, TL_DNNL_STREAM_DEFAULT) != 0) {
    snprintf(p->dnnl_desc, sizeof p->dnnl_desc, "onednn: could not create a CPU engine and stream");
    goto fail;
  }
  p->dnnl = d;
  snprintf(p->dnnl_desc, sizeof p->dnnl_desc, "onednn: %d.%d.%d (%s), ISA %s, %s runtime", v->major, v->minor, v->patch,
           tl_peer_file((void *)d->execute), isa ? tl_dnnl_isa(isa()) : "unknown",
           v->cpu_runtime == 2 ? "OpenMP" : v->cpu_runtime == 1 ? "sequential" : v->cpu_runtime == 4 ? "TBB" : "other");
  return;
fail:
  if (d->stream) d->stream_destroy(d->stream);
  if (d->engine) d->engine_destroy(d->engine);
  free(d);
  dlclose(h);
}

/* Wraps a primitive descriptor into an op with 1-D f32 memories of n elements. */
static tl_bdnnl_op *tl_bdnnl_op_make(tl_bdnnl *d, void *pd, const void *md, char *err, size_t errn) {
  tl_bdnnl_op *op = calloc(1, sizeof *op);
  if (!op) {
    d->pd_destroy(pd);
    snprintf(err, errn, "out of memory");
    return NULL;
  }
  int e = d->prim_create(&op->prim, pd);
  d->pd_destroy(pd);
  if (e != 0 || d->mem_create(&op->src, md, d->engine, NULL) != 0 || d->mem_create(&op->dst, md, d->engine, NULL) != 0) {
    snprintf(err, errn, "dnnl_primitive_create or dnnl_memory_create failed (status %d)", e);
    if (op->src) d->mem_destroy(op->src);
    if (op->prim) d->prim_destroy(op->prim);
    free(op);
    return NULL;
  }
  return op;
}

/* The primitives and their run (declared in bench_impl.h). */
tl_bdnnl_op *tl_bdnnl_eltwise_linear(tl_bpeers *p, int64_t n, float alpha, float beta, char *err, size_t errn) {
  tl_bdnnl *d = p->dnnl;
  _Alignas(64) static unsigned char md[TL_DNNL_DESC_BYTES], ed[TL_DNNL_DESC_BYTES];
  int64_t dims[12] = {n};
  void *pd = NULL;
  int e;
  if ((e = d->md_init(md, 1, dims, TL_DNNL_F32, TL_DNNL_TAG_A)) != 0 ||
      (e = d->eltwise_init(ed, TL_DNNL_FORWARD_INFERENCE, TL_DNNL_ELTWISE_LINEAR, md, alpha, beta)) != 0 ||
      (e = d->pd_create(&pd, ed, NULL, d->engine, NULL)) != 0) {
    snprintf(err, errn, "eltwise_linear descriptor refused (dnnl status %d)", e);
    return NULL;
  }
  return tl_bdnnl_op_make(d, pd, md, err, errn);
}

tl_bdnnl_op *tl_bdnnl_reorder(tl_bpeers *p, int64_t n, char *err, size_t errn) {
  tl_bdnnl *d = p->dnnl;
  _Alignas(64) static unsigned char md[TL_DNNL_DESC_BYTES];
  int64_t dims[12] = {n};
  void *pd = NULL;
  int e;
  if ((e = d->md_init(md, 1, dims, TL_DNNL_F32, TL_DNNL_TAG_A)) != 0 ||
      (e = d->reorder_pd_create(&pd, md, d->engine, md, d->engine, NULL)) != 0) {
    snprintf(err, errn, "reorder descriptor refused (dnnl status %d)", e);
    return NULL;
  }
  return tl_bdnnl_op_make(d, pd, md, err, errn);
}

int tl_bdnnl_run(tl_bpeers *p, tl_bdnnl_op *op, const float *src, float *dst) {
  tl_bdnnl *d = p->dnnl;
  if (d->mem_set(op->src, (void *)src) != 0 || d->mem_set(op->dst, dst) != 0) return -1;
  tl_dnnl_arg args[2] = {{TL_DNNL_ARG_SRC, op->src}, {TL_DNNL_ARG_DST, op->dst}};
  if (d->execute(op->prim, d->stream, 2, args) != 0) return -1;
  return d->stream_wait(d->stream) == 0 ? 0 : -1;
}

void tl_bdnnl_op_free(tl_bpeers *p, tl_bdnnl_op *op) {
  if (!op) return;
  tl_bdnnl *d = p->dnnl;
  d->mem_destroy(op->src);
  d->mem_destroy(op->dst);
  d->prim_destroy(op->prim);
  free(op);
}

/* ---- PyTorch (tl_btorch_run) ---- */

/* The driver, run as `python3 -c DRIVER op n a threads copies inner warmup min_time max_time
 * min_reps max_reps stable pause m k dtype` (the last three for gemm, sdpa and the row ops:
 * softmax, layernorm, rmsnorm over m rows of n). It keeps the harness's rules (warm-up by time,
 * batches of `inner` calls rotating over `copies` buffer sets, a pause before each timed batch,
 * stop when the median is stable after min_reps and min_time, or at max_reps / max_time),
 * checks its output against a float64 reference first, and prints one JSON object. */
static const char tl_torch_driver[] =
    "import json, sys, time\n"
    "def main():\n"
    "    op = sys.argv[1]; n = int(sys.argv[2]); a = float(sys.argv[3]); threads = int(sys.argv[4])\n"
    "    copies = int(sys.argv[5]); inner = int(sys.argv[6])\n"
    "    warmup, min_time, max_time = float(sys.argv[7]), float(sys.argv[8]), float(sys.argv[9])\n"
    "    min_reps, max_reps = int(sys.argv[10]), int(sys.argv[11])\n"
    "    stable, pause = float(sys.argv[12]), float(sys.argv[13])\n"
    "    import torch\n"
    "    torch.set_num_threads(threads)\n"
    "    out = {'impl': 'torch', 'version': torch.__version__, 'threads': torch.get_num_threads()}\n"
    "    def pattern(s):\n"
    "        i = torch.arange(n, dtype=torch.int64)\n"
    "        return (((i + 1) * 2654435761 + s * 40503) % 65536).to(torch.float32) / 65536.0 - 0.5\n"
    "    if op == 'gemm':\n"
    "        m, k, dt = int(sys.argv[14]), int(sys.argv[15]), sys.argv[16]\n"
    "        tdt = torch.float32 if dt == 'f32' else torch.bfloat16\n"
    "        gen = torch.Generator().manual_seed(1)\n"
    "        def mat(r, c): return (torch.randint(-128, 128, (r, c), generator=gen).double() / 128).to(tdt)\n"
    "        As = [mat(m, k) for s in range(copies)]; Bs = [mat(k, n) for s in range(copies)]\n"
    "        Cs = [torch.empty(m, n, dtype=tdt) for s in range(copies)]\n"
    "        def call(s): torch.matmul(As[s], Bs[s], out=Cs[s])\n"
    "        rows = sorted(set([(m - 1) * i // 7 for i in range(8)]))\n"
    "        ref = As[0][rows].double() @ Bs[0].double()\n"
    "        Cs[0].fill_(float('nan')); call(0)\n"
    "        err = ((Cs[0][rows].double() - ref).norm() / max(ref.norm().item(), 1e-300)).item()\n"
    "        if not err <= (1e-4 if dt == 'f32' else 2e-2):\n"
    "            out['wrong'] = True; print(json.dumps(out)); return\n"
    "    elif op in ('sdpa', 'sdpa_causal'):\n"
    "        sq, d, dt, h = int(sys.argv[14]), int(sys.argv[15]), sys.argv[16], int(a)\n"
    "        tdt = torch.float32 if dt == 'f32' else torch.bfloat16\n"
    "        gen = torch.Generator().manual_seed(1)\n"
    "        def ten(r): return (torch.randint(-128, 128, (1, h, r, d), generator=gen).double() / 128).to(tdt)\n"
    "        Qs = [ten(sq) for s in range(copies)]; Ks = [ten(n) for s in range(copies)]; Vs = [ten(n) for s in range(copies)]\n"
    "        causal = op == 'sdpa_causal'\n"
    "        def call(s): return torch.nn.functional.scaled_dot_product_attention(Qs[s], Ks[s], Vs[s], is_causal=causal)\n"
    "        rows = sorted(set([(sq - 1) * i // 7 for i in range(8)]))\n"
    "        sc = (Qs[0][:, :, rows].double() @ Ks[0].double().transpose(-1, -2)) / d ** 0.5\n"
    "        if causal: sc = sc.masked_fill(torch.arange(n).view(1, -1) > torch.tensor(rows).view(-1, 1) + n - sq, float('-inf'))\n"
    "        ref = torch.softmax(sc, -1) @ Vs[0].double()\n"
    "        err = ((call(0)[:, :, rows].double() - ref).norm() / max(ref.norm().item(), 1e-300)).item()\n"
    "        if not err <= (1e-4 if dt == 'f32' else 2e-2):\n"
    "            out['wrong'] = True; print(json.dumps(out)); return\n"
    "    elif op in ('softmax', 'layernorm', 'rmsnorm'):\n"
    "        nr, dt = int(sys.argv[14]), sys.argv[16]\n"
    "        tdt = torch.float32 if dt == 'f32' else torch.bfloat16\n"
    "        gen = torch.Generator().manual_seed(1)\n"
    "        def ten(r, c): return (torch.randint(-512, 512, (r, c), generator=gen).double() / 128).to(tdt)\n"
    "        Xs = [ten(nr, n) for s in range(copies)]; Ys = [torch.empty(nr, n, dtype=tdt) for s in range(copies)]\n"
    "        g = (1 + ten(1, n).view(-1) / 8).to(tdt); b = (ten(1, n).view(-1) / 8).to(tdt)\n"
    "        A = torch.ops.aten\n"
    "        def call(s):\n"
    "            if op == 'softmax': A._softmax.out(Xs[s], -1, False, out=Ys[s])\n"
    "            elif op == 'layernorm': Ys[s] = torch.nn.functional.layer_norm(Xs[s], [n], g, b, 1e-5)\n"
    "            else: Ys[s] = torch.nn.functional.rms_norm(Xs[s], [n], g, 1e-5)\n"
    "        rows = sorted(set([(nr - 1) * i // 7 for i in range(8)]))\n"
    "        x = Xs[0][rows].double()\n"
    "        if op == 'softmax': ref = torch.softmax(x, -1)\n"
    "        elif op == 'layernorm':\n"
    "            c = x - x.mean(-1, keepdim=True)\n"
    "            ref = c / torch.sqrt((c * c).mean(-1, keepdim=True) + 1e-5) * g.double() + b.double()\n"
    "        else: ref = x / torch.sqrt((x * x).mean(-1, keepdim=True) + 1e-5) * g.double()\n"
    "        Ys[0].fill_(float('nan')); call(0)\n"
    "        err = ((Ys[0][rows].double() - ref).norm() / max(ref.norm().item(), 1e-300)).item()\n"
    "        if not err <= (2e-5 if dt == 'f32' else 1e-2):\n"
    "            out['wrong'] = True; print(json.dumps(out)); return\n"
    "    else:\n"
    "        xs = [pattern(s) for s in range(copies)]\n"
    "        ys = [torch.zeros(n, dtype=torch.float32) for s in range(copies)] if op != 'scale_inplace' else xs\n"
    "        def call(s):\n"
    "            if op == 'copy': ys[s].copy_(xs[s])\n"
    "            elif op == 'scale': torch.mul(xs[s], a, out=ys[s])\n"
    "            else: xs[s].mul_(a)\n"
    "        ref = pattern(0).double() * (1.0 if op == 'copy' else a)\n"
    "        ys[0].fill_(float('nan'))\n"
    "        if op == 'scale_inplace': xs[0].copy_(pattern(0))\n"
    "        call(0)\n"
    "        if not torch.equal(ys[0].double(), ref.float().double()):\n"
    "            out['wrong'] = True; print(json.dumps(out)); return\n"
    "    nxt = [0]\n"
    "    def batch():\n"
    "        for k in range(inner):\n"
    "            call(nxt[0] % copies); nxt[0] += 1\n"
    "    w = 0.0\n"
    "    while w < warmup:\n"
    "        t = time.perf_counter(); batch(); w += time.perf_counter() - t\n"
    "    ts = []; total = 0.0; prev = 0.0\n"
    "    while True:\n"
    "        if pause > 0: time.sleep(pause)\n"
    "        t = time.perf_counter(); batch(); dt = time.perf_counter() - t\n"
    "        ts.append(dt); total += dt; ts.sort()\n"
    "        k = len(ts); med = ts[k // 2] if k % 2 else 0.5 * (ts[k // 2 - 1] + ts[k // 2])\n"
    "        ok = prev > 0 and abs(med - prev) <= stable * prev\n"
    "        prev = med\n"
    "        if k >= max_reps or total >= max_time: break\n"
    "        if k >= min_reps and total >= min_time and ok: break\n"
    "    out.update({'wrong': False, 'median_s': med / inner, 'min_s': ts[0] / inner, 'max_s': ts[-1] / inner, 'reps': len(ts)})\n"
    "    print(json.dumps(out))\n"
    "main()\n";

/* Runs argv (argv[0] looked up in PATH) with stdout into out (NUL-terminated, truncated to n-1)
 * and stderr discarded; returns the exit status, or -1 when it could not run or was killed. */
static int tl_peer_spawn(char *const argv[], char *out, size_t n) {
  int fd[2];
  if (pipe(fd) != 0) return -1;
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) {
    close(fd[0]), close(fd[1]);
    return -1;
  }
  if (pid == 0) {
    close(fd[0]);
    dup2(fd[1], 1);
    int devnull = open("/dev/null", O_WRONLY);
    if (devnull >= 0) dup2(devnull, 2);
    execvp(argv[0], argv);
    _exit(127);
  }
  close(fd[1]);
  size_t len = 0;
  for (;;) {
    char tmp[4096];
    ssize_t r = read(fd[0], tmp, sizeof tmp);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    size_t k = (size_t)r;
    if (len + 1 < n) {
      size_t c = k < n - 1 - len ? k : n - 1 - len;
      memcpy(out + len, tmp, c);
      len += c;
    }
  }
  if (n) out[len] = 0;
  close(fd[0]);
  int st;
  while (waitpid(pid, &st, 0) < 0)
    if (errno != EINTR) return -1;
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Looks for a python3 that imports torch (its version goes to the header). */
static void tl_peer_torch(tl_bpeers *p) {
  char out[256];
  char *argv[] = {"python3", "-c", "import sys, torch; sys.stdout.write(torch.__version__)", NULL};
  int rc = tl_peer_spawn(argv, out, sizeof out);
  if (rc != 0) {
    snprintf(p->torch_desc, sizeof p->torch_desc, "torch: not found (%s)",
             rc == 127 ? "no python3" : "python3 -c 'import torch' failed; pip install torch for this row");
    return;
  }
  p->torch = 1;
  snprintf(p->torch_version, sizeof p->torch_version, "%.31s", out);
  snprintf(p->torch_desc, sizeof p->torch_desc, "torch: %s (python3 subprocess; timed in its own process with the same rules, not interleaved)", p->torch_version);
}

/* The number after "key": in a flat JSON object (0 if absent). */
static double tl_json_num(const char *s, const char *key) {
  char pat[48];
  snprintf(pat, sizeof pat, "\"%s\":", key);
  const char *at = strstr(s, pat);
  return at ? strtod(at + strlen(pat), NULL) : 0;
}

int tl_btorch_run(const tl_bpeers *p, const tl_btorch_req *q, tl_bench_result *r, char *note, size_t noten) {
  memset(r, 0, sizeof *r);
  if (!p->torch) {
    snprintf(note, noten, "torch not found");
    return -1;
  }
  char a[16][40];
  snprintf(a[0], 40, "%s", q->op);
  snprintf(a[1], 40, "%lld", (long long)q->n);
  snprintf(a[2], 40, "%.9g", (double)q->a);
  snprintf(a[3], 40, "%d", q->threads);
  snprintf(a[4], 40, "%lld", (long long)q->copies);
  snprintf(a[5], 40, "%d", q->inner);
  snprintf(a[6], 40, "%g", q->opts.warmup_s);
  snprintf(a[7], 40, "%g", q->opts.min_time_s);
  snprintf(a[8], 40, "%g", q->opts.max_time_s);
  snprintf(a[9], 40, "%d", q->opts.min_reps);
  snprintf(a[10], 40, "%d", q->opts.max_reps);
  snprintf(a[11], 40, "%g", q->opts.stable);
  snprintf(a[12], 40, "%g", q->opts.pause_s);
  snprintf(a[13], 40, "%lld", (long long)q->m);
  snprintf(a[14], 40, "%lld", (long long)q->k);
  snprintf(a[15], 40, "%s", q->dtype ? q->dtype : "f32");
  char *argv[20] = {"python3", "-c", (char *)tl_torch_driver};
  for (int i = 0; i < 16; i++) argv[3 + i] = a[i];
  argv[19] = NULL;
  char out[1024];
  int rc = tl_peer_spawn(argv, out, sizeof out);
  if (rc != 0 || !strstr(out, "\"impl\"")) {
    snprintf(note, noten, "the torch driver failed (exit %d)", rc);
    return -1;
  }
  if (strstr(out, "\"wrong\": true")) {
    snprintf(note, noten, "output differs from the float64 reference (not timed)");
    return 1;
  }
  r->median_s = tl_json_num(out, "median_s");
  r->min_s = tl_json_num(out, "min_s");
  r->max_s = tl_json_num(out, "max_s");
  r->reps = (int)tl_json_num(out, "reps");
  snprintf(note, noten, "own process, not interleaved");
  return r->median_s > 0 ? 0 : -1;
}

/* ---- loading and closing (declared in bench_impl.h) ---- */

void tl_bpeers_load(tl_bpeers *p, int threads, unsigned want) {
  memset(p, 0, sizeof *p);
  p->want = want;
  char v[16];
  snprintf(v, sizeof v, "%d", threads);
  tl_peer_env(p->env_desc, sizeof p->env_desc, "OMP_NUM_THREADS", v, "set here");
  const char *wait = getenv("OMP_WAIT_POLICY");
  size_t len = strlen(p->env_desc);
  snprintf(p->env_desc + len, sizeof p->env_desc - len, ", OMP_WAIT_POLICY=%s", wait ? wait : "unset (libgomp: spin, then sleep)");
  tl_peer_env(p->env_desc, sizeof p->env_desc, "GOMP_SPINCOUNT", "30000", "set here: idle spin ~0.5 ms, not ~4 ms");
  tl_peer_env(p->env_desc, sizeof p->env_desc, "OPENBLAS_THREAD_TIMEOUT", "20", "set here: idle spin 2^20 cycles, not 2^28");
  const int level = tl_peer_cap_level();
  const tl_peer_cap *cap = level >= 0 ? &tl_peer_caps[level] : NULL;
  p->cap_level = level;
  /* before any peer loads (each reads its switch once): under a cap, each switch the user has not
   * set; without one, the user's own switches are listed (they make a peer run below the CPU's
   * best). oneDNN also reads its older name, DNNL_MAX_CPU_ISA, which counts as the user's. */
  const int dnnl_old = getenv("DNNL_MAX_CPU_ISA") && !getenv("ONEDNN_MAX_CPU_ISA");
  char *d = cap ? p->cap_desc : p->env_desc;
  const size_t n = cap ? sizeof p->cap_desc : sizeof p->env_desc;
  for (int i = 0; i < TL_PEER_NSW; i++) {
    const char *name = i == 0 && dnnl_old ? "DNNL_MAX_CPU_ISA" : tl_peer_switch[i];
    if (cap) tl_peer_env(d, n, name, cap->env[i], i == TL_PEER_NSW - 1 ? "set here; MKL honours it on Intel CPUs only" : "set here");
    else if (getenv(name)) tl_peer_env(d, n, name, "", "");
  }
  if (cap) {
    const size_t used = strlen(d);
    snprintf(d + used, n - used, ", BLIS: %s (see its line)", cap->blis);
  }
  /* BLIS first: its configuration is probed in forked children, best done before threads exist */
  if (want & 2) tl_peer_blis(p, threads, cap ? cap->blis : NULL);
  else snprintf(p->blis_desc, sizeof p->blis_desc, "blis: not asked for (--peers)");
  if (want & 1) tl_peer_openblas(p, threads);
  else snprintf(p->openblas_desc, sizeof p->openblas_desc, "openblas: not asked for (--peers)");
  if (want & 4) tl_peer_dnnl(p);
  else snprintf(p->dnnl_desc, sizeof p->dnnl_desc, "onednn: not asked for (--peers)");
  if (want & 8) tl_peer_torch(p);
  else snprintf(p->torch_desc, sizeof p->torch_desc, "torch: not asked for (--peers)");
}

void tl_bpeers_print_env(const tl_bpeers *p) {
  printf("  environment: %s\n", p->env_desc);
  if (p->cap_level >= 0)
    printf("  ISA cap: TILEC_ISA=%s is below this CPU's best level, so the peers are capped alike: %s\n",
           tl_isa_name((tl_isa)p->cap_level), p->cap_desc);
}

void tl_bpeers_close(tl_bpeers *p) {
  /* The libraries stay loaded: OpenBLAS and libgomp keep threads that must not lose their code
   * under them; the process ends soon after. Only oneDNN's objects are released. */
  if (p->dnnl) {
    p->dnnl->stream_destroy(p->dnnl->stream);
    p->dnnl->engine_destroy(p->dnnl->engine);
    free(p->dnnl);
    p->dnnl = NULL;
  }
}
