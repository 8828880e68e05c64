/* tile_impl.h — how ISA paths plug into the tile operations.
 *
 * Each ISA folder (src/tile/<isa>/) defines one tl_tile_impl and registry.c lists them in one
 * table indexed by tl_isa. A public tile op checks its arguments once (misuse goes to
 * tl_prog_fail on the current program), then tries the implementations from the program's ISA
 * level downwards: the first whose function is non-NULL and returns 1 handles the call; the
 * scalar reference handles everything. */
#ifndef TL_TILE_IMPL_H
#define TL_TILE_IMPL_H

#include "../runtime/runtime_impl.h"

typedef struct tl_tile_impl {
  tl_isa isa;
  const char *name;
  /* Arguments are checked before these are called. Return 1: handled; 0: not for this path. */
  int (*dot)(tl_ref *acc, const tl_ref *a, const tl_ref *b, unsigned flags);
  int (*fill)(tl_ref *r, double v);
  int (*cast)(tl_ref *dst, const tl_ref *src);
  int (*unary)(tl_ref *dst, const tl_ref *src, tl_unary op);
  int (*binary)(tl_ref *dst, const tl_ref *a, const tl_ref *b, tl_binary op);
  int (*reduce)(tl_ref *dst, const tl_ref *src, int axis, tl_reduce op); /* axis in 0..ndim-1 */
} tl_tile_impl;

extern const tl_tile_impl tl_tile_scalar_impl;
/* Defined by src/tile/<isa>/ when CMake builds that folder (TILEC_HAVE_<ISA>=1); registry.c
 * lists only the ones built. */
extern const tl_tile_impl tl_tile_avx2_impl;
extern const tl_tile_impl tl_tile_avx2vnni_impl;
extern const tl_tile_impl tl_tile_avx512_impl;
extern const tl_tile_impl tl_tile_avx512vnni_impl;
extern const tl_tile_impl tl_tile_avx512bf16_impl;
extern const tl_tile_impl tl_tile_amx_impl;

/* The implementation registered for exactly this level, or NULL (registry.c). */
const tl_tile_impl *tl_tile_impl_at(tl_isa isa);

/* ---- probe microkernels: what tl_machine_probe (src/roofline/probe*.c) times ----
 *
 * Each ISA folder may define one tl_probe_impl (src/tile/<isa>/probe_<isa>.c) listed in the probe
 * table of registry.c, beside the tile-operation table and under the same guards; the scalar entry
 * (src/tile/scalar/probe_scalar.c) is always present. The probe never names an ISA: it takes the
 * compute units of every level up to the context's ISA, and the bandwidth kernels of the highest
 * level at or below it that has them. */

/* One compute unit's peak kernel: `iters` iterations of enough independent chains to cover the
 * instruction's latency, operands in registers only. Returns the ops performed (a multiply-add
 * counts 2). Runs on the calling thread; an AMX kernel loads its tile configuration and releases
 * the tiles itself, and needs AMX permission first (tl_ctx_need_amx). iters >= 1. */
typedef struct tl_probe_unit {
  const char *name; /* the unit's name in tl_machine ("avx512-fma") */
  tl_dtype dtype;   /* operand dtype the peak is for */
  double (*run)(int64_t iters);
} tl_probe_unit;

/* Byte granularity of the bandwidth kernels: their `bytes` is a positive multiple of this. */
#define TL_PROBE_CHUNK 512

/* Bandwidth kernels over buffers 64-byte aligned, bytes a multiple of TL_PROBE_CHUNK, passes >= 1
 * (the whole buffer is swept `passes` times). A NULL kernel is not on this path. */
typedef struct tl_probe_impl {
  tl_isa isa;
  int nunits;
  const tl_probe_unit *units;
  /* Loads every byte; returns a value that depends on each load (keep it, or the loads die). */
  double (*read)(const void *buf, size_t bytes, int64_t passes);
  /* Stores every byte. */
  void (*write)(void *buf, size_t bytes, int64_t passes);
  /* dst[0..bytes) = src[0..bytes); the two do not overlap. */
  void (*copy)(void *dst, const void *src, size_t bytes, int64_t passes);
  /* The same with non-temporal (streaming) stores, fenced before it returns. */
  void (*nt_copy)(void *dst, const void *src, size_t bytes, int64_t passes);
} tl_probe_impl;

extern const tl_probe_impl tl_probe_scalar_impl;
extern const tl_probe_impl tl_probe_avx2_impl;
extern const tl_probe_impl tl_probe_avx2vnni_impl;
extern const tl_probe_impl tl_probe_avx512_impl;
extern const tl_probe_impl tl_probe_avx512vnni_impl;
extern const tl_probe_impl tl_probe_avx512bf16_impl;
extern const tl_probe_impl tl_probe_amx_impl;

/* The probe kernels registered for exactly this level, or NULL (registry.c). */
const tl_probe_impl *tl_probe_impl_at(tl_isa isa);
/* Tests only, with tl_amx_emulate (core_impl.h): the AMX entries of the tile and probe tables
 * become tile / probe (compiled over an emulation of the tile registers, tests/tile/amx_emu.h)
 * for the rest of the process. Call before any context exists. */
void tl_tile_amx_override(const tl_tile_impl *tile, const tl_probe_impl *probe);

/* For the dot microkernels: asks for the lines of a register block of the accumulator (rows
 * rows of nv 64-byte vectors, row stride ldcb bytes) to be brought in for writing (prefetchw;
 * nothing for rows <= 0), one micro-call ahead of its loads and stores. A block of acc that is
 * only stored would otherwise wait at its stores for lines from L3 or DRAM: measured int8
 * 1024^3 +7% (2048^3, 2 threads: 741 -> 805 GOP/s). */
static inline __attribute__((always_inline)) void tl_tile_prefetch_c(const void *c, int64_t ldcb, int64_t rows, int nv) {
  for (int64_t r = 0; r < rows; r++)
    for (int v = 0; v < nv; v++) __builtin_prefetch((const char *)c + r * ldcb + 64 * v, 1, 3);
}


/* A bf16 dot operand as f32: denormals (zero exponent) read as zero of the same sign, the rule of
 * every level (AVX512-BF16 and AMX do so in hardware). */
static inline float tl_tile_bf16_daz(uint16_t h) {
  if (!(h & 0x7F80u)) h &= 0x8000u;
  return tl_bf16_to_f32(h);
}

/* Where the dots' streams of b are prefetched (the one-pass tile kernels' lines TL_TILE_STREAM_PF
 * ahead, the streaming walks' next sweep, tl_sweep_pf): into L1 (prefetcht0) on a CPU whose L1d
 * has at least TL_TILE_PF_L1_MIN bytes (or whose L1d size is unknown: as before), else into L2
 * only (prefetcht1). Beside the stream a 3-16-row kernel keeps its packed a in L1 (bf16 / int8 up
 * to 32 KiB) and a walk the sweep it reads (bf16 / int8 8 rows of b, f32 4: 32-64 KiB at N =
 * 4096): with a 32 KiB L1 the lines prefetched into it evict them. On a Zen 4 VM (L1d 32 KiB;
 * `tilec bench gemm --threads 2 --dtype D --peers none`, an environment toggle in one build, 5
 * rounds alternating, medians, ms), into L1 against into L2: pre-packed int8 16x4096x4096 0.88 ->
 * 0.75, 8 rows 0.73 -> 0.56, 16x11008x4096 2.24 -> 1.92; bf16 1.69 -> 1.44, 1.41 -> 1.08, 4.60 ->
 * 3.89; f32 2.99 -> 2.69, 2.43 -> 2.06, 8.01 -> 7.12; the walks (plain b) int8 1x4096x4096 0.79 ->
 * 0.58, 2 rows 0.87 -> 0.59, 1x11008x4096 2.14 -> 1.52; bf16 1.26 -> 0.99, 1.44 -> 1.14, 3.32 ->
 * 3.07; f32 2.71 -> 2.11, 2.83 -> 2.11, 7.34 -> 6.14; the AVX2 walk (TILEC_ISA=avx2): see
 * docs/matmul.md "Where the streams are prefetched". The Zen 5 VM (L1d 48 KiB), where the L1 hint
 * was chosen, keeps it (the L2 hint was not measured there). The answer is the process's, as the
 * CPU detection it comes from (tl_cpu_detect), not a context's. */
#define TL_TILE_PF_L1_MIN (48 * 1024)
/* 1: prefetch the streams into L1; 0: into L2 (the CPU's L1d, detected once; registry.c). */
int tl_tile_pf_l1_init(void);
extern int tl_tile_pf_l1_v; /* -1 until tl_tile_pf_l1_init has run */
static inline int tl_tile_pf_l1(void) {
  const int v = __atomic_load_n(&tl_tile_pf_l1_v, __ATOMIC_RELAXED);
  return v >= 0 ? v : tl_tile_pf_l1_init();
}
/* One line of a stream prefetched into L1 (l1, from tl_tile_pf_l1 read once per call) or L2. */
static inline __attribute__((always_inline)) void tl_tile_pf_stream(const void *p, int l1) {
  if (l1) __builtin_prefetch(p, 0, 3);
  else __builtin_prefetch(p, 0, 2);
}

/* How far ahead, in bytes, the dots' one-pass kernels over tiled b (f32 tl_a5_kern16 for 5-16
 * rows, bf16 / int8 tl_bf_tile16 for 3-16) prefetch the tile stream they read (into L1 or L2:
 * tl_tile_pf_l1): on the Zen 5 VM, into L1, f32 16x4096x4096 with b pre-packed ran 1.65-1.70 ms
 * at 4 KiB, 1.52-1.63 at 8, 1.52-1.58 at 12 and 1.54-1.57 at 16 (docs/matmul.md, "Dot paths"); on
 * the Zen 4 VM, into L2, 24 and 48 KiB measured no faster than 12 (int8 / bf16 3-16 rows, 4
 * rounds). */
#define TL_TILE_STREAM_PF 12288

/* The most rows of acc the dots' walks take (bf16 tl_bf_walk, f32 tl_a5_walk: a row-major b
 * block from memory read in place, whole rows a sweep at a time; past 8 rows their wide kernels,
 * every row in registers over a panel); tl_matmul's K split hands them their blocks up to as
 * many rows (TL_MM_WALK_M, src/kernels/matmul_impl.h). */
#define TL_TILE_WALK_M 16

/* A row-major b block of at most this many bytes whose panels stay in L1 (tl_tile_b_fits_l1) is
 * read in place by the f32 dots at any row count (AVX-512 stages b from TL_A5_PACK_M rows, AVX2
 * from two row blocks). Larger ones, which come from L3 or memory, are staged (AVX-512: in place
 * measured 7-9% slower cold at 100x500x256 and 200x1000x200). */
#define TL_TILE_SMALL_B ((int64_t)64 << 10)

/* 1 when a panel (16 or 32 columns) of a row-major b (kk rows, row stride ldb floats) read in
 * place stays in L1 across the row blocks: its rows spread over the L1 sets (a 4 KiB way: 64 sets
 * of 64-byte lines) with at most 4 rows per set, so the panel never evicts itself. Rows a
 * multiple of 4 KiB apart share one set (the reason b is staged); 64 rows 256 bytes apart use
 * each set 4 times. Then staging b per call only costs (AVX-512, packing a too: f32 64x64x64 in
 * L1, tilec_bench_tile_dot: 83 -> 104-108 GFLOP/s). */
static inline int tl_tile_b_fits_l1(int64_t kk, int64_t ldb) {
  int64_t s = (ldb * 4) % 4096, g = 4096;
  if (s) /* gcd(s, 4096): the spacing of the rows' positions within a 4 KiB way */
    for (int64_t x = s, y = 4096; y;) {
      const int64_t t = x % y;
      x = y, y = t, g = x;
    }
  const int64_t positions = 4096 / (g > 64 ? g : 64); /* distinct sets the rows start in */
  return kk <= 4 * positions;
}

/* Element offset of b(k, j) for any b tl_tile_dot accepts: TL_DOT_TRANS_B (tb: [N, K] with its
 * strides), row-major [K, N] with any strides, or tiled (any vnni honoured). For the dots'
 * element-by-element staging. */
static inline int64_t tl_tile_b_offset(const tl_ref *b, int tb, int64_t k, int64_t j) {
  if (tb) return j * b->stride[0] + k * b->stride[1];
  if (!b->layout.tiled) return k * b->stride[0] + j * b->stride[1];
  const int64_t tr = b->layout.tile_r, tc = b->layout.tile_c, tcols = TL_CDIV(b->shape[1], tc);
  return ((k / tr) * tcols + j / tc) * tr * tc + tl_layout_tile_offset(b->layout, k % tr, j % tc);
}

/* For the int8 dots that widen pairs of k to 16 bits (avx2, avx512): pair rows p0.. of a staged
 * panel of nw columns (row p at buf + p * nw): word j of row p holds b(k, j0 + j) in its low 16
 * bits and b(k + 1, j0 + j) in its high 16 (k = k0 + 2p; u8 zero-extended, i8 sign-extended),
 * zero past kc rows and nr columns; element by element, for any accepted b. */
static inline void tl_tile_i8_pairs(int32_t *buf, int64_t nw, const tl_ref *b, int tb, int64_t k0, int64_t kc,
                                    int64_t j0, int64_t nr, int64_t p0) {
  const int sgn = b->dtype == TL_I8;
  for (int64_t p = p0; p < TL_CDIV(kc, 2); p++)
    for (int64_t j = 0; j < nw; j++) {
      int32_t w[2] = {0, 0};
      for (int h = 0; h < 2; h++)
        if (j < nr && 2 * p + h < kc) {
          const uint8_t e = ((const uint8_t *)b->data)[tl_tile_b_offset(b, tb, k0 + 2 * p + h, j0 + j)];
          w[h] = sgn ? (int32_t)(int8_t)e : (int32_t)e;
        }
      buf[p * nw + j] = (int32_t)((uint32_t)(uint16_t)w[0] | (uint32_t)w[1] << 16);
    }
}

/* For the streaming walks of 1-2 rows of a (b row-major in place, read from memory a few rows
 * per sweep over all columns): a cursor over the next sweep's rows of b, seen as one run of
 * rows x rowb bytes (rows row stride ld bytes apart; one contiguous run when ld == rowb, as when
 * tl_matmul's K split gives each thread whole rows). A sweep advances it by as many bytes as it
 * reads, so memory sees one stream a sweep ahead of the loads rather than one per row of the
 * sweep. */
typedef struct tl_sweep_pf {
  const char *row; /* the row the cursor is in, NULL when done */
  int64_t col, rowb, ld, rows;
  int l1; /* into L1 (tl_tile_pf_l1) or L2 */
} tl_sweep_pf;

/* A cursor at the start of rows rows of rowb bytes (row stride ld) at p; none when rows <= 0. */
static inline tl_sweep_pf tl_sweep_pf_at(const void *p, int64_t rows, int64_t rowb, int64_t ld) {
  const int on = rows > 0 && rowb > 0;
  return (tl_sweep_pf){.row = on ? (const char *)p : NULL, .col = 0, .rowb = rowb, .ld = ld, .rows = rows,
                       .l1 = on && tl_tile_pf_l1()};
}

/* Prefetches (into L1 or L2: tl_tile_pf_l1) the next bytes bytes of the cursor's run and advances
 * it; nothing past its last row. */
static inline __attribute__((always_inline)) void tl_sweep_pf_issue(tl_sweep_pf *c, int64_t bytes) {
  for (int64_t x = 0; x < bytes && c->row; x += 64) {
    tl_tile_pf_stream(c->row + c->col, c->l1);
    if ((c->col += 64) >= c->rowb) {
      c->col -= c->rowb, c->row += c->ld;
      if (--c->rows == 0) c->row = NULL;
    }
  }
}
#ifdef __AVX512F__
#include <immintrin.h>
/* For the AVX-512 folders: 4 x 4 transpose of the 128-bit lanes of v[0..3], in place (lane L of
 * v[i] becomes lane i of v[L]). The VNNI packer and the row-major int8 dot put the columns that
 * byte / word unpacks spread over lanes back in order with it. */
static inline __attribute__((always_inline)) void tl_x512_lanes_t(__m512i *v) {
  const __m512i t0 = _mm512_shuffle_i32x4(v[0], v[1], 0x44), t1 = _mm512_shuffle_i32x4(v[0], v[1], 0xEE);
  const __m512i t2 = _mm512_shuffle_i32x4(v[2], v[3], 0x44), t3 = _mm512_shuffle_i32x4(v[2], v[3], 0xEE);
  v[0] = _mm512_shuffle_i32x4(t0, t2, 0x88), v[1] = _mm512_shuffle_i32x4(t0, t2, 0xDD);
  v[2] = _mm512_shuffle_i32x4(t1, t3, 0x88), v[3] = _mm512_shuffle_i32x4(t1, t3, 0xDD);
}
/* Four rows of 64 bytes r[0..3] interleaved into vnni-4 quads (byte t of dword j: row t, column
 * j) by byte then word unpacks, which work within 128-bit lanes: q[x] holds columns 16L + 4x ..
 * 16L + 4x + 3 of each lane L (tl_x512_lanes_t puts them in column order). The VNNI packer and
 * the row-major int8 dot build their quads with it. */
static inline __attribute__((always_inline)) void tl_x512_quads(const __m512i *r, __m512i *q) {
  const __m512i t0 = _mm512_unpacklo_epi8(r[0], r[1]), t1 = _mm512_unpackhi_epi8(r[0], r[1]);
  const __m512i t2 = _mm512_unpacklo_epi8(r[2], r[3]), t3 = _mm512_unpackhi_epi8(r[2], r[3]);
  q[0] = _mm512_unpacklo_epi16(t0, t2), q[1] = _mm512_unpackhi_epi16(t0, t2);
  q[2] = _mm512_unpacklo_epi16(t1, t3), q[3] = _mm512_unpackhi_epi16(t1, t3);
}
#endif

#endif /* TL_TILE_IMPL_H */
