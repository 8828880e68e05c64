/* pack_avx2.c — the AVX2 staging packer for the VNNI layouts (bf16 vnni 2, int8 vnni 4), so that
 * the avx2 and avx2vnni levels stage a b block for tl_matmul without the portable element loop
 * (`TILEC_ISA=avx2vnni tilec bench gemm --dtype int8 --threads 2 --sizes 128x4096x11008` on the
 * Zen 5 VM: 58.7 ms with the element loop, 16.9 with this packer, 14.9 with b pre-packed;
 * docs/matmul.md). Registered by src/tile/pack_register.c for TL_ISA_AVX2 and above (the AVX-512 packer,
 * registered after it, wins from the avx512 level on).
 *
 * Contract: tl_pack_job (src/runtime/plan_impl.h, reference tl_pack_portable in stage.c). Every
 * destination element of every tile is written exactly once: source values inside rows x cols,
 * pad (zero when job->pad is NULL) elsewhere, tile padding included. One column of a vnni group is
 * 4 bytes, so 16 columns of a group are one 64-byte row of a tile, built from 2 (bf16) or 4 (int8)
 * source rows of 16 columns by byte / word unpacks on xmm registers; groups at the edges (rows or
 * columns past the source) go element by element. Jobs this packer does not cover (source column
 * stride != 1, tile_c not a multiple of 16, other element sizes) go to tl_pack_portable.
 */
#include <immintrin.h>
#include <string.h>

#include "../../runtime/plan_impl.h"
#include "../tile_impl.h"

/* One 64-byte group row (16 columns) from v source rows s[0..v-1] of 16 whole columns: int8 (v 4)
 * quads, bf16 (v 2) pairs, in column order. */
static inline void tl_p2_group(char *d, const char *const *s, int64_t es) {
  if (es == 1) {
    const __m128i x0 = _mm_loadu_si128((const __m128i *)s[0]), x1 = _mm_loadu_si128((const __m128i *)s[1]);
    const __m128i x2 = _mm_loadu_si128((const __m128i *)s[2]), x3 = _mm_loadu_si128((const __m128i *)s[3]);
    const __m128i t0 = _mm_unpacklo_epi8(x0, x1), t1 = _mm_unpackhi_epi8(x0, x1);
    const __m128i t2 = _mm_unpacklo_epi8(x2, x3), t3 = _mm_unpackhi_epi8(x2, x3);
    _mm_storeu_si128((__m128i *)d, _mm_unpacklo_epi16(t0, t2));
    _mm_storeu_si128((__m128i *)(d + 16), _mm_unpackhi_epi16(t0, t2));
    _mm_storeu_si128((__m128i *)(d + 32), _mm_unpacklo_epi16(t1, t3));
    _mm_storeu_si128((__m128i *)(d + 48), _mm_unpackhi_epi16(t1, t3));
    return;
  }
  const __m128i a0 = _mm_loadu_si128((const __m128i *)s[0]), a1 = _mm_loadu_si128((const __m128i *)(s[0] + 16));
  const __m128i b0 = _mm_loadu_si128((const __m128i *)s[1]), b1 = _mm_loadu_si128((const __m128i *)(s[1] + 16));
  _mm_storeu_si128((__m128i *)d, _mm_unpacklo_epi16(a0, b0));
  _mm_storeu_si128((__m128i *)(d + 16), _mm_unpackhi_epi16(a0, b0));
  _mm_storeu_si128((__m128i *)(d + 32), _mm_unpacklo_epi16(a1, b1));
  _mm_storeu_si128((__m128i *)(d + 48), _mm_unpackhi_epi16(a1, b1));
}

/* The vnni packer (see the opening comment). */
void tl_avx2_pack_vnni(const tl_pack_job *j) {
  tl_vnni_geom gm;
  if (!tl_vnni_geom_of(j, &gm)) {
    tl_pack_portable(j);
    return;
  }
  const int64_t es = gm.es, v = gm.v, tr = gm.tr, tc = gm.tc, trows = gm.trows, tcols = gm.tcols, tile = gm.tile;
  const uint32_t pad = gm.pad;
  for (int64_t ti = 0; ti < trows; ti++)
    for (int64_t g = 0; g < tr / v; g++) {
      const int64_t r0 = ti * tr + g * v; /* the group's first source row */
      const char *s[4] = {NULL, NULL, NULL, NULL}; /* rows inside the source only (src may be NULL) */
      for (int64_t t = 0; t < v; t++)
        if (r0 + t < j->rows) s[t] = j->src + (r0 + t) * j->src_rs * es;
      for (int64_t c = 0; c < tcols * tc; c += 16) {
        char *d = j->dst + (c / tc) * tile + ti * tcols * tile + (g * tc + c % tc) * v * es;
        if (r0 + v <= j->rows && c + 16 <= j->cols) {
          const char *sc[4];
          for (int64_t t = 0; t < v; t++) sc[t] = s[t] + c * es;
          tl_p2_group(d, sc, es);
          continue;
        }
        for (int64_t x = 0; x < 16; x++) /* an edge: element by element, pad outside the source */
          for (int64_t t = 0; t < v; t++) {
            const int in = r0 + t < j->rows && c + x < j->cols;
            memcpy(d + (x * v + t) * es, in ? s[t] + (c + x) * j->src_cs * es : (const char *)&pad, (size_t)es);
          }
      }
    }
}
