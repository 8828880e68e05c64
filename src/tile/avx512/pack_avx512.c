/* pack_avx512.c — AVX-512 staging packers for the VNNI layouts the dot paths read: 2-byte
 * elements with vnni 2 (bf16 / f16 B operands) and 1-byte elements with vnni 4 (int8 B
 * operands). Registered by src/tile/pack_register.c for TL_ISA_AVX512 and above.
 *
 * Contract: tl_pack_job (src/runtime/plan_impl.h, reference tl_pack_portable in stage.c). Every
 * destination element of every tile is written exactly once: source values inside rows x cols,
 * pad (zero when job->pad is NULL) elsewhere, tile padding included. In the interleaved layouts
 * one column of a vnni group is 4 bytes, so 16 columns of a group are one 64-byte store built
 * from 2 (or 4) source rows. Jobs this packer does not cover (source column stride != 1,
 * tile_c not a multiple of 16, other element sizes) go to tl_pack_portable.
 */
#include <immintrin.h>
#include <string.h>

#include "../../runtime/plan_impl.h"
#include "../tile_impl.h"

/* 16 columns of source row r (pad beyond the valid region) as 16 dwords of zero-extended
 * elements: es 2 -> u16 in the low half, es 1 -> u8 in the low byte. */
static inline __m512i tl_p5_row16(const tl_pack_job *j, int64_t r, int64_t c, int64_t es, __m512i padw) {
  if (r >= j->rows || c >= j->cols) return padw;
  const int64_t left = j->cols - c;
  const char *s = j->src + (r * j->src_rs + c) * es;
  if (es == 2) {
    const __mmask16 m = left >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << left) - 1u);
    const __m256i v = _mm256_mask_loadu_epi16(_mm512_cvtepi32_epi16(padw), m, s);
    return _mm512_cvtepu16_epi32(v);
  }
  const __mmask16 m = left >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << left) - 1u);
  const __m128i v = _mm_mask_loadu_epi8(_mm512_cvtepi32_epi8(padw), m, s);
  return _mm512_cvtepu8_epi32(v);
}

/* The vnni packer (see the opening comment). */
void tl_avx512_pack_vnni(const tl_pack_job *j) {
  const tl_layout l = j->layout;
  const int64_t es = (int64_t)j->esize, v = l.vnni ? l.vnni : 1;
  if (!l.tiled || es * v != 4 || l.tile_c % 16 || (j->src_cs != 1 && j->rows > 0 && j->cols > 1)) {
    tl_pack_portable(j);
    return;
  }
  uint32_t pad = 0;
  if (j->pad) memcpy(&pad, j->pad, (size_t)es);
  const __m512i padw = _mm512_set1_epi32((int)pad); /* one element, zero-extended */
  const int64_t tr = l.tile_r, tc = l.tile_c;
  const int64_t trows = TL_CDIV(j->dst_rows, tr), tcols = TL_CDIV(j->dst_cols, tc);
  const int64_t tile = tr * tc * es; /* bytes */
  const int shift = (int)(8 * es);
  for (int64_t ti = 0; ti < trows; ti++) {
    for (int64_t tj = 0; tj < tcols; tj++) {
      char *t = j->dst + (ti * tcols + tj) * tile;
      for (int64_t g = 0; g < tr / v; g++) {
        const int64_t r0 = ti * tr + g * v;
        for (int64_t cc = 0; cc < tc; cc += 16) {
          const int64_t c = tj * tc + cc;
          __m512i w = tl_p5_row16(j, r0, c, es, padw);
          for (int64_t u = 1; u < v; u++)
            w = _mm512_or_si512(w, _mm512_slli_epi32(tl_p5_row16(j, r0 + u, c, es, padw), (unsigned)(shift * u)));
          _mm512_storeu_si512(t + (g * tc + cc) * 4, w);
        }
      }
    }
  }
}
