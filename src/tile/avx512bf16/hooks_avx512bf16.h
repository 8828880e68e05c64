/* hooks_avx512bf16.h — the AVX512-BF16 row-code hooks: the AVX-512 ones (../avx512/
 * hooks_avx512.h) with bf16 outputs converted by vcvtneps2bf16, one instruction instead of the
 * nine of tl_vf32_to_bf16 (bf16 layernorm's output sweep was 2.5x the f32 one without it). The
 * instruction rounds to nearest even and keeps NaN quiet like tl_vf32_to_bf16, but treats f32
 * denormal inputs as zero: an output below 2^-126 in magnitude becomes +-0 instead of a bf16
 * denormal (as the AVX512-BF16 and AMX dot instructions treat bf16 denormals, DESIGN.md
 * "Numerics"). */
#ifndef TL_HOOKS_AVX512BF16_H
#define TL_HOOKS_AVX512BF16_H

#include "../avx512/hooks_avx512.h"

#define TL_RK_TO_BF16(v) ((tl_rkh)_mm512_cvtneps_pbh((__m512)(v)))
/* 32 outputs as one 64-byte streaming store (vcvtne2ps2bf16 puts v1 in the upper half): a whole
 * line per store instead of two halves */
#define TL_RK_NT_BF16X2(p, v0, v1) \
  _mm512_stream_si512((void *)(p), (__m512i)_mm512_cvtne2ps_pbh((__m512)(v1), (__m512)(v0)))

#endif /* TL_HOOKS_AVX512BF16_H */
